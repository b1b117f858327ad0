"""JSON Schema → regex / Lark grammar lowering, shared by every backend.

``lower_json_schema(spec)`` turns a ``JsonSchema`` spec into a ``Regex`` when
the schema describes a regular language, and into a ``Grammar`` otherwise
(recursive ``$ref``, schema-free values such as ``additionalProperties``
left open). A backend that supports regexes or grammars thereby supports JSON
Schema. What cannot be expressed exactly raises ``UnsupportedConstraint``
naming the keyword and its JSON pointer; see ``docs/jsonschema.md`` for the
language a schema stands for.

``instance_text(schema, instance)`` serialises a JSON instance as that
language spells it (compact, members in the lowering's order).

Modules: ``refs`` (``$ref`` resolution), ``lower`` (the schema walker),
``keywords`` (which keywords validate, which are refused, which draft has
which), ``values`` (listed values and JSON types as schemas give them),
``exclusive`` (how ``oneOf`` branches are told apart, and the ways a value
fails a schema), ``instances`` (instances as text), ``judging`` (the
``jsonschema`` validator reading patterns and formats as the lowering does),
``ir`` (the expression language and its regex/Lark printers), ``strings``,
``numbers``, ``formats`` (the regexes of JSON strings, numbers and formats).
"""

from __future__ import annotations

import functools

from ..automata import Node
from ..caching import SPEC_GRAPHS, core_cache
from ..errors import CompileLimitExceeded, ConstraintError
from ..grammar import GrammarIR
from ..specs import Grammar, JsonSchema, Regex
from .formats import formats_as_patterns
from .instances import instance_text
from .ir import Expr, Rx, has_opaque, is_nothing, to_grammar_ir, to_lark, unguarded_cycle
from .lower import Lowerer, NotRegular, Options, rewrite_refs
from .numbers import integers_with_zero_fraction
from .refs import index_schema

__all__ = [
    "Options",
    "formats_as_patterns",
    "instance_text",
    "lower_json_schema",
    "lower_json_schema_ir",
    "options_of",
]


def options_of(spec: JsonSchema) -> Options:
    """The lowering options a spec asks for."""
    return Options(
        whitespace=spec.whitespace,
        max_whitespace=spec.max_whitespace,
        additional_properties=spec.additional_properties,
        one_of=spec.one_of,
        format_assertion=spec.format_assertion,
    )


@functools.lru_cache(maxsize=256)
def lower_json_schema(spec: JsonSchema) -> Regex | Grammar:
    """The ``Regex`` or ``Grammar`` whose language is the schema's documents.

    Raises ``UnsupportedConstraint`` (keyword and JSON pointer named),
    ``ConstraintError`` (a malformed ``pattern`` or reference, or a schema no
    JSON value satisfies: the pointers of the sub-schemas that admit none
    are named) and ``CompileLimitExceeded`` (the result would exceed the
    size bounds, or holds a piece with no regex text: an intersection of a
    format and a pattern, a length bound or difference too big to print,
    which :func:`lower_json_schema_ir`'s automata forms hold).
    """
    lowered = _lowered(spec)
    text = lowered.text if isinstance(lowered, Rx) else to_lark("start", lowered)
    if has_opaque(text):
        raise CompileLimitExceeded(
            "regex_size",
            options_of(spec).max_regex_chars,
            None,
            "a piece of the schema has no regex text (an intersection or difference of "
            "languages): only lower_json_schema_ir's automata forms hold it",
        )
    if isinstance(lowered, Rx):
        return Regex(text)
    return Grammar(text, start="start")


def lower_json_schema_ir(spec: JsonSchema) -> Node | GrammarIR:
    """The language of :func:`lower_json_schema` as the core's own forms,
    built directly from the lowering: a regex AST (the ``Regex``'s
    language) or a ``GrammarIR`` whose terminals carry their ASTs. No text
    is printed and parsed back (neither Lark's nor the regexes'): this is
    what ``constrain_api.lower`` uses. Raises as :func:`lower_json_schema`."""
    lowered = _lowered(spec)
    if isinstance(lowered, Rx):
        return lowered.ast()
    return to_grammar_ir("start", lowered)


@functools.lru_cache(maxsize=SPEC_GRAPHS)
def _lowered(spec: JsonSchema) -> Rx | dict[str, Expr]:
    """The schema as one ``Rx`` (a regular language) or as rules, ``start`` first."""
    options = options_of(spec)
    index = index_schema(spec.schema)
    root = rewrite_refs(index)
    with integers_with_zero_fraction(not _draft_3_or_4(spec.schema)):
        regular = Lowerer(index, root, options, grammar=False)
        try:
            expr = regular.lower_document()
            _refuse_nothing(expr, regular)
            if isinstance(expr, Rx):
                return expr
        except NotRegular:
            pass
        # the sub-schemas regex mode lowered are not lowered again
        lowerer = Lowerer(
            index,
            root,
            options,
            grammar=True,
            known=regular.reusable(),
            strings_not_in=regular.strings_not_in,
            trie_nodes=regular.trie_nodes,
        )
        start = lowerer.lower_document()
        _refuse_unfounded(lowerer)
        _refuse_nothing(start, lowerer)
    return {"start": start, **lowerer.rules}


def _draft_3_or_4(schema) -> bool:
    """Whether ``$schema`` names draft 3 or 4, where an integer has no
    fraction at all (``3.0`` is a number, not an integer)."""
    meta = schema.get("$schema") if isinstance(schema, dict) else None
    return isinstance(meta, str) and ("draft-03" in meta or "draft-04" in meta)


def _refuse_unfounded(lowerer: Lowerer) -> None:
    """``ConstraintError`` where a schema refers back to itself without
    descending into the instance (``{"$defs": {"a": {"anyOf": [{"$ref":
    "#/$defs/a"}, ...]}}}``): validating it never ends, and JSON Schema
    leaves its meaning undefined (2020-12 Core §9.4.1), so no language is
    taken for it."""
    cycle = unguarded_cycle(lowerer.rules, sorted(lowerer.recursive_rules))
    if cycle is None:
        return
    at = [f"#{lowerer.rule_at[name]}" for name in cycle if name in lowerer.rule_at]
    where = at[0] if at else "#"
    at = list(dict.fromkeys(at))
    loop = " -> ".join([*at, at[0]]) if at else "through its rules"
    raise ConstraintError(
        "json_schema",
        f"no JSON value satisfies the schema: a reference cycle never descends into the "
        f"instance ({loop}), so validating it never ends (JSON Schema leaves such "
        "recursion undefined)",
        where,
    )


def _refuse_nothing(expr, lowerer: Lowerer) -> None:
    """``ConstraintError`` when the document admits no value at all."""
    if is_nothing(expr):
        parts = [p for p in lowerer.nothing_at if p != "#"]
        detail = f" (sub-schemas that admit no value: {', '.join(parts)})" if parts else ""
        raise ConstraintError("json_schema", f"no JSON value satisfies the schema{detail}", "#")


core_cache("lowered json schemas", _lowered)
core_cache("json schema specs", lower_json_schema)
