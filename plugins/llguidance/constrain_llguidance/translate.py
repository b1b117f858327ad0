"""Constraints → the grammar text llguidance's ``LLMatcher`` compiles.

* ``Regex``, ``Choice`` and regular JSON schemas: the core's AST
  (``Regular.node``) printed in the core's portable dialect (``to_regex``),
  which llguidance's Rust regex syntax reads as Python ``re`` does, then
  ``LLMatcher.grammar_from_regex``.
* ``Grammar``: the core's ``GrammarIR`` (lark's own loader already expanded
  EBNF, templates and imports) written back as llguidance's Lark dialect,
  every terminal a ``/regex/`` in the portable dialect, with renamed symbols
  (``start``, ``r1``…, ``T0``…) so no lark naming convention (``_inline``,
  ``__ANON``) can change the meaning. A terminal whose strings are its
  shortest matches (``Terminal.shortest``) is written as the regex of exactly
  those strings.
* ``JsonSchema``: by default the schema goes to llguidance's own JSON
  compiler (``json_schema="engine"``), with the spec's whitespace and
  ``oneOf`` policies mapped onto its options; ``json_schema="lowering"``
  compiles the core's lowering (a regex or a grammar) instead.
"""

from __future__ import annotations

import json
import re
from typing import Any

from constrain_api import GrammarIR, UnsupportedConstraint
from constrain_api.automata import Node, dfa_to_regex, to_regex
from constrain_api.jsonschema import formats_as_patterns

NAME = "llguidance"


#: Grammar options for every constraint. ``no_forcing``: without it, where the
#: grammar forces a text, llguidance's mask keeps only the first token of that
#: text's canonical tokenization (a narrower mask than the language allows).
#: ``allow_initial_skip``: ``%ignore``d text may come first, as in the core's
#: grammar language.
OPTIONS = '%llguidance {"no_forcing": true, "allow_initial_skip": true}\n'


def regex_text(node: Node) -> str:
    """A regular language's AST as an llguidance grammar."""
    return OPTIONS + f"start: /{_slashed(to_regex(node))}/\n"


def grammar_text(ir: GrammarIR) -> str:
    """A grammar IR as an llguidance grammar."""
    return OPTIONS + lark_text(ir)


def engine_json_text(spec: Any) -> str:
    """A JSON schema for llguidance's own JSON compiler, as a grammar."""
    return OPTIONS + f"start: %json {_engine_json(spec)}\n"


def _engine_json(spec: Any) -> str:
    """The schema for llguidance's JSON compiler, with the spec's policies in
    its ``x-guidance`` options (ours win over the schema's own)."""
    if not spec.additional_properties:
        raise UnsupportedConstraint(
            NAME,
            "additional_properties=False",
            "llguidance's JSON compiler has no such default; use json_schema='lowering'",
        )
    if _unspellable_strings(spec.schema):
        raise UnsupportedConstraint(
            NAME,
            "control characters in const, enum or property names",
            "the engine's strings spell them only as \\u escapes, which the adapter turns "
            "off (an engine once dropped a NUL from a const); use json_schema='lowering'",
        )
    options: dict[str, Any] = {
        "item_separator": ",",
        "key_separator": ":",
        "coerce_one_of": spec.one_of == "any_of",
        "lenient": False,
        # The core's strings are canonical: no "\/" and "\u" only for control
        # characters; the engine would allow any "\uXXXX" (more than the
        # language), so "\u" goes, and with it the rarer control characters.
        "json_allowed_escapes": '"\\bfnrt',
        "json_allow_general_unicode_escapes": False,
    }
    if spec.whitespace == "compact":
        options["whitespace_flexible"] = False
    else:
        options["whitespace_flexible"] = False
        options["whitespace_pattern"] = f"[\\x20\\x0A\\x0D\\x09]{{0,{spec.max_whitespace}}}"
    # the engine's formats are its own (a leap second at any minute, 29
    # February in any year): each is sent as the core's format, a pattern
    schema = formats_as_patterns(spec.schema, assert_formats=spec.format_assertion)
    if isinstance(schema, bool):
        schema = {} if schema else {"not": {}}
    schema["x-guidance"] = {**schema.get("x-guidance", {}), **options}
    return json.dumps(schema, ensure_ascii=False)


def lark_text(ir: GrammarIR) -> str:
    """``ir`` in llguidance's Lark dialect (see the module docstring)."""
    rules: dict[str, list[tuple[str, ...]]] = {}
    for rule in ir.rules:
        rules.setdefault(rule.lhs, []).append(rule.rhs)
    names = {ir.start: "r0" if ir.ignore else "start"}
    for i, lhs in enumerate(n for n in rules if n != ir.start):
        names[lhs] = f"r{i + 1}"
    for i, terminal in enumerate(ir.terminals):
        names[terminal] = f"T{i}"
    lines = []
    if ir.ignore:
        # llguidance skips one match of the ignored regex, and only before a
        # lexeme: ignore a run of them, and allow a run at the end.
        run = "(?:" + "|".join(_terminal_regex(ir.terminals[n]) for n in ir.ignore) + ")+"
        lines += [
            "start: r0 | r0 TRAILING",
            f"TRAILING: /{_slashed(run)}/",
            f"IGNORED: /{_slashed(run)}/",
            "%ignore IGNORED",
        ]
    for lhs, options in rules.items():
        bodies = [" ".join(names[s] for s in rhs) for rhs in options if rhs]
        body = " | ".join(bodies)
        if len(bodies) < len(options):  # an empty alternative
            body = f"({body})?" if bodies else '""'
        lines.append(f"{names[lhs]}: {body}")
    for name, terminal in ir.terminals.items():
        lines.append(f"{names[name]}: /{_slashed(_terminal_regex(terminal))}/")
    return "\n".join(lines) + "\n"


def _terminal_regex(terminal: Any) -> str:
    if terminal.shortest:
        return dfa_to_regex(terminal.dfa())
    return to_regex(terminal.regex_ast())


def _slashed(pattern: str) -> str:
    """``pattern`` with ``/`` escaped, to sit between Lark's slashes."""
    out, escaped = [], False
    for ch in pattern:
        if ch == "/" and not escaped:
            out.append("\\/")
        else:
            out.append(ch)
        escaped = ch == "\\" and not escaped
    return "".join(out)


#: Control characters a JSON string spells only as ``\uXXXX`` (not ``\b\f\n\r\t``).
_UNSPELLABLE = re.compile("[\x00-\x07\x0b\x0e-\x1f]")
#: Keywords whose object keys are property names.
_NAME_KEYS = ("properties", "patternProperties", "dependentRequired", "dependentSchemas")


def _unspellable_strings(schema: Any) -> bool:
    """Whether a ``const``/``enum`` value or a property name of ``schema``
    holds a control character the engine's strings cannot spell."""

    def data(value: Any) -> bool:  # a JSON value under const/enum: keys and strings
        if isinstance(value, str):
            return bool(_UNSPELLABLE.search(value))
        if isinstance(value, list):
            return any(data(v) for v in value)
        if isinstance(value, dict):
            return any(data(k) or data(v) for k, v in value.items())
        return False

    def walk(node: Any) -> bool:
        if isinstance(node, list):
            return any(walk(v) for v in node)
        if not isinstance(node, dict):
            return False
        for key, value in node.items():
            if key in ("const", "enum") and data(value):
                return True
            if key == "required" and data(value):
                return True
            if key in _NAME_KEYS and isinstance(value, dict) and data(list(value)):
                return True
            if walk(value):
                return True
        return False

    return walk(schema)
