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
``instances`` (instances as text),
``ir`` (the expression language and its regex/Lark printers), ``strings``,
``numbers``, ``formats`` (the regexes of JSON strings, numbers and formats).
"""

from __future__ import annotations

import functools

from ..caching import core_cache
from ..specs import Grammar, JsonSchema, Regex
from .instances import instance_text
from .ir import Rx, to_lark
from .lower import Lowerer, NotRegular, Options, rewrite_refs
from .refs import index_schema

__all__ = ["Options", "instance_text", "lower_json_schema", "options_of"]


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
    ``ConstraintError`` (a malformed ``pattern`` or reference) and
    ``CompileLimitExceeded`` (the result would exceed the size bounds).
    """
    options = options_of(spec)
    index = index_schema(spec.schema)
    root = rewrite_refs(index)
    try:
        expr = Lowerer(index, root, options, grammar=False).lower_document()
        if isinstance(expr, Rx):
            return Regex(expr.text)
    except NotRegular:
        pass
    lowerer = Lowerer(index, root, options, grammar=True)
    start = lowerer.lower_document()
    rules = {"start": start, **lowerer.rules}
    return Grammar(to_lark("start", rules), start="start")


core_cache("lowered json schemas", lower_json_schema)
