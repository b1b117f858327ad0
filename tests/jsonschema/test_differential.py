"""The lowering against the ``jsonschema`` validator on generated schemas.

Hypothesis draws small schemas that combine the keywords the lowering
rewrites the most (``oneOf``, ``anyOf``, ``allOf``, ``not``, ``enum``,
bounds, members, items) over a few names and values, and a fixed pool of
small JSON values; every value the validator accepts must be in the lowered
language, spelled by ``instance_text``, and every value it rejects must be
out of it. A schema the lowering refuses (``UnsupportedConstraint``, a
limit) or finds empty is skipped, so what is checked is that nothing is
silently wrong: a language too strict (a valid document refused, as
``oneOf`` once was for objects failing a branch in two ways) or too loose.
Other tests judge hand-picked and real schemas; this one finds the
combinations nobody wrote down. ``derandomize``: CI runs the same examples.
"""

from __future__ import annotations

import functools
import itertools
import json

import jsonschema
import regress
from hypothesis import given
from hypothesis import strategies as st
from jsonschema_harness import recognizer, same_examples

from constrain_api import JsonSchema
from constrain_api.errors import CompileLimitExceeded, ConstraintError, UnsupportedConstraint
from constrain_api.jsonschema import instance_text, lower_json_schema_ir

NAMES = ["a", "b", "c"]
SCALARS = [None, True, False, 0, 1, 2, -1, 2.5, "", "a", "ab", "b"]
#: The values every schema is judged on: scalars, short arrays, small objects.
POOL = [
    *SCALARS,
    [],
    [1],
    ["a"],
    [1, "a"],
    [None, None],
    [2, 2],
    {},
    {"a": 1},
    {"a": "a"},
    {"b": 2},
    {"a": 1, "b": 2},
    {"a": "ab", "b": None},
    {"c": True},
    {"a": 1, "c": "a"},
    {"b": [1], "c": 0},
    {"a": {"a": 1}},
    {"a": 2.5, "b": "b", "c": False},
    0.5,
    3,
    "abc",
    "ba",
    [[]],
    [{}],
    [1, 2, 3],
    ["a", "a"],
    {"a": None},
    {"b": "a", "c": 1},
    {"c": {"b": 1}},
    {"a": [], "b": {}},
    {"a": 1, "b": 2, "c": 3},
    # integers spelled as floats, fractions, strings and names the patterns read
    1.0,
    -2.5,
    12,
    "aa",
    [1, 1.0],
    [True, 1],
    {"a": 1.0},
    {"a": True, "b": False},
    {"ab": 1},
    {"a": 1, "ba": 2},
]
#: Listed values: the scalars and a few composite ones.
LISTED = [*SCALARS, [1], [], {"a": 1}, {"a": 1, "b": 2}]

TYPES = ["null", "boolean", "integer", "number", "string", "array", "object"]


def schema_strategies(
    names: list[str],
    listed: list,
    patterns: list[str],
    name_patterns: list[str],
    member_patterns: list[str],
) -> tuple[st.SearchStrategy, st.SearchStrategy]:
    """``(schemas, referring)`` over these member names, listed values and
    patterns (``pattern``; ``propertyNames``' patterns; ``patternProperties``'):
    small schemas, and schemas with two definitions, ``x`` and ``y``, that
    they and the schema itself reference (recursion included; 2020-12
    ``$ref`` beside keywords)."""
    leaf = st.one_of(
        st.builds(lambda t: {"type": t}, st.sampled_from(TYPES)),
        st.builds(lambda ts: {"type": ts}, st.lists(st.sampled_from(TYPES), min_size=1, max_size=3,
                                                     unique=True)),
        st.builds(lambda v: {"enum": v}, st.lists(st.sampled_from(listed), min_size=1, max_size=3)),
        st.builds(lambda v: {"const": v}, st.sampled_from(listed)),
        st.builds(lambda k, n: {k: n}, st.sampled_from(["minimum", "maximum", "exclusiveMinimum",
                                                         "exclusiveMaximum"]),
                  st.sampled_from([0, 1, 2])),
        st.builds(lambda k, n: {k: n}, st.sampled_from(["minLength", "maxLength", "minItems",
                                                         "maxItems", "minProperties",
                                                         "maxProperties"]),
                  st.integers(0, 2)),
        st.builds(lambda p: {"pattern": p}, st.sampled_from(patterns)),
        st.builds(lambda m: {"multipleOf": m}, st.sampled_from([1, 2, 0.5])),
        st.builds(lambda r: {"required": r}, st.lists(st.sampled_from(names), min_size=1,
                                                      max_size=2, unique=True)),
        st.just({"additionalProperties": False}),
        st.just(True),
        st.just(False),
        # (annotations and an unknown keyword: every value, as true is)
        st.just({"description": "any", "x-schemas": [{"type": "null"}]}),
        # bounds at fractions, multiples within bounds, what the object keywords
        # evaluate, distinct items, names by pattern, counted contains
        st.builds(lambda k, v: {k: v}, st.sampled_from(["minimum", "maximum", "exclusiveMinimum",
                                                         "exclusiveMaximum"]),
                  st.sampled_from([0.5, -1.5, 1.0])),
        st.builds(lambda m, lo, hi: {"type": "integer", "multipleOf": m, "minimum": lo,
                                     "maximum": hi},
                  st.sampled_from([2, 3]), st.integers(-3, 3), st.integers(3, 12)),
        st.just({"unevaluatedProperties": False}),
        st.just({"uniqueItems": True}),
        st.builds(lambda p: {"propertyNames": {"pattern": p}}, st.sampled_from(name_patterns)),
        st.builds(lambda k, n: {"contains": {"type": "integer"}, k: n},
                  st.sampled_from(["minContains", "maxContains"]), st.integers(0, 2)),
    )  # fmt: skip

    def _extend(children: st.SearchStrategy) -> st.SearchStrategy:
        """Schemas built from smaller ones: applicators, members, items, and
        two keywords side by side."""
        branches = st.lists(children, min_size=1, max_size=3)
        return st.one_of(
            st.builds(lambda bs: {"anyOf": bs}, branches),
            st.builds(lambda bs: {"oneOf": bs}, branches),
            st.builds(lambda bs: {"allOf": bs}, branches),
            st.builds(lambda s: {"not": s}, children),
            st.builds(lambda s: {"items": s}, children),
            st.builds(
                lambda props, extra: {"properties": props, **extra},
                st.dictionaries(st.sampled_from(names), children, min_size=1, max_size=2),
                st.sampled_from([{}, {"type": "object"}, {"additionalProperties": False}]),
            ),
            st.builds(lambda s: {"prefixItems": [s]}, children),
            st.builds(lambda s, n: {"contains": s, **n}, children,
                      st.sampled_from([{}, {"minContains": 2}, {"maxContains": 1}])),
            st.builds(lambda p, s: {"patternProperties": {p: s}}, st.sampled_from(member_patterns),
                      children),
            st.builds(lambda s: {"propertyNames": s}, children),
            st.builds(lambda s: {"additionalProperties": s}, children),
            st.builds(lambda i, t, e: {"if": i, "then": t, "else": e},
                      children, children, children),
            st.builds(lambda i, t: {"if": i, "then": t}, children, children),
            st.builds(lambda d: {"dependentRequired": d},
                      st.dictionaries(st.sampled_from(names), st.lists(st.sampled_from(names),
                                                                        max_size=2, unique=True),
                                      min_size=1, max_size=2)),
            st.builds(lambda d: {"dependentSchemas": d},
                      st.dictionaries(st.sampled_from(names), children, min_size=1, max_size=1)),
            st.builds(
                lambda a, b: {**a, **b} if isinstance(a, dict) and isinstance(b, dict) else a,
                children,
                children,
            ),
            # the shapes the oneOf rules read: closed objects, forbidden members,
            # exact member counts, a branch that is a union with null, listed
            # branches beside a conditional
            st.builds(
                lambda props, req: {"type": "object", "properties": props,
                                    "additionalProperties": False,
                                    **({"required": req} if req else {})},
                st.dictionaries(st.sampled_from(names), children, max_size=2),
                st.lists(st.sampled_from(names), max_size=1),
            ),
            st.builds(lambda n: {"properties": {n: False}}, st.sampled_from(names)),
            st.builds(lambda n, s: {"type": "object", "minProperties": n, "maxProperties": n,
                                    "additionalProperties": s},
                      st.integers(0, 2), children),
            st.builds(lambda a, b: {"oneOf": [a, {"anyOf": [b, {"type": "null"}]}]}, children,
                      children),
            st.builds(lambda lists, i, t: {"oneOf": [{"enum": v} for v in lists], "if": i,
                                           "then": t},
                      st.lists(st.lists(st.sampled_from(listed), min_size=1, max_size=3),
                               min_size=1, max_size=3),
                      children, children),
        )  # fmt: skip

    schemas = st.recursive(leaf, _extend, max_leaves=6)
    with_refs = st.recursive(
        st.one_of(leaf, st.sampled_from([{"$ref": "#/$defs/x"}, {"$ref": "#/$defs/y"}])),
        _extend,
        max_leaves=5,
    )
    referring = st.builds(
        lambda x, y, top: {"$defs": {"x": x, "y": y},
                           **(top if isinstance(top, dict) else {"allOf": [top]})},
        with_refs, with_refs, with_refs,
    )  # fmt: skip
    return schemas, referring


schemas, referring = schema_strategies(
    NAMES, LISTED, ["a", "^a", "b$", "^$"], ["^a", "b$", "^.$"], ["^a", "b"]
)

#: Names, strings and patterns a JSON text spells with escapes or several
#: bytes (the lowering's other path for member names, strings' lengths in
#: characters, a pattern's ``.`` over them).
WIDE_NAMES = ["a", "é", 'q"', "\n", "😀"]
WIDE_SCALARS = [None, True, 0, "", "a", "é", "😀", "\n", 'q"', "\\", "\u0000", "aé",
                "😀😀", "\u007f", "\u2028", "٣", "\xa0"]  # fmt: skip
WIDE_POOL = [
    *WIDE_SCALARS,
    {"é": 1},
    {"😀": "😀"},
    {'q"': None, "a": "é"},
    {"\n": 1, "é": "\n"},
    {"é": 1, "😀": 2, "\n": 3},
    ["é", "😀"],
    {"a": "\u2028"},
    {"\u00e9": 1, "e\u0301": 2},
    "e\u0301",
    "\ud7ff",
    "\ue000",
    "\uffff",
    {},
    [],
]
wide_schemas, _ = schema_strategies(
    WIDE_NAMES,
    [*WIDE_SCALARS, {"é": 1}, ["😀"]],
    [
        "a",
        "^a",
        "^$",
        "^.$",
        "é",
        "\\n",
        "^[^a]*$",
        "😀",
        "^.{2}$",
        "\\\\",
        "^\\w+$",
        "\\d",
        "\\s",
        "\\p{L}",
    ],
    ["^a", "^.$", "é", "^[a-z]+$"],
    ["^a", "é", "^.$", "\\n"],
)


def _spellings(value) -> list[str]:
    """Every compact JSON text of ``value``, members in every order: the
    language fixes one order (``instance_text`` knows it for the schemas the
    other tests write; a generated nesting may spell it otherwise), and what
    this test judges is which values the language holds; non-ASCII
    characters as themselves, as the language spells them)."""
    if isinstance(value, dict):
        out = []
        for order in itertools.permutations(value):
            parts = [[_dumps(k) + ":" + t for t in _spellings(value[k])] for k in order]
            out += ["{" + ",".join(p) + "}" for p in itertools.product(*parts)]
        return out
    if isinstance(value, list):
        return ["[" + ",".join(p) + "]" for p in itertools.product(*map(_spellings, value))]
    return [_dumps(value)]


def _dumps(value) -> str:
    return json.dumps(value, ensure_ascii=False)


def _language(schema):
    """The lowered language's membership test, or ``None`` where the
    lowering refuses the schema (a construct, a limit, no value at all)."""
    try:
        return recognizer(lower_json_schema_ir(JsonSchema(schema)))
    except (UnsupportedConstraint, CompileLimitExceeded, ConstraintError):
        return None


@same_examples(2000)
@given(schemas)
def test_the_lowered_language_is_the_validator_s(schema):
    _judge(schema)


@same_examples(600)
@given(referring)
def test_the_lowered_language_is_the_validator_s_through_references(schema):
    """The same, with definitions referenced from anywhere, themselves
    included: grammars where a reference recurses, merges of a target
    with the keywords beside its ``$ref`` (the case of a target ``false``
    there, and the cycles through no instance keyword, found by longer
    runs of this, are pinned in test_lowering)."""
    _judge(schema)


DRAFT_7 = "http://json-schema.org/draft-07/schema#"


def _as_draft_7(s):
    """A generated 2020-12 schema in draft 7's words: ``prefixItems`` as the
    list form of ``items`` (the rest in ``additionalItems``), the dependent
    keywords as ``dependencies``, ``$defs`` as ``definitions``; the
    keywords draft 7 lacks (``minContains``...) dropped."""
    if isinstance(s, list):
        return [_as_draft_7(x) for x in s]
    if not isinstance(s, dict):
        return s
    out: dict = {}
    for key, value in s.items():
        value = _as_draft_7(value)
        if key == "prefixItems":
            out["items"] = value
            out.setdefault("additionalItems", True)
        elif key == "items" and "prefixItems" in s:
            out["additionalItems"] = value
        elif key in ("dependentRequired", "dependentSchemas"):
            out.setdefault("dependencies", {}).update(value)
        elif key == "$defs":
            out["definitions"] = value
        elif key == "$ref":
            out["$ref"] = value.replace("$defs", "definitions")
        elif key not in ("minContains", "maxContains"):
            out[key] = value
    return out


@same_examples(600)
@given(st.one_of(schemas, referring))
def test_the_lowered_language_is_the_validator_s_in_draft_7(schema):
    """The same in draft 7, whose references ignore the keywords beside
    them and whose positional items are a list (a merge once spelled them
    ``prefixItems``, which draft 7's validator ignores: pinned in
    test_lowering)."""
    if isinstance(schema, dict):
        schema = {"$schema": DRAFT_7, **_as_draft_7(schema)}
    _judge(schema)


@same_examples(600)
@given(wide_schemas)
def test_the_lowered_language_is_the_validator_s_with_escaped_and_wide_characters(schema):
    """The same over member names, strings and patterns with characters a
    JSON text escapes (``"``, a newline, NUL) or spells in several
    bytes (``é``, ``😀``, a line separator), judged on values of them:
    the other-names piece's path for such names, lengths in characters,
    a pattern's ``.``. The validator reads patterns as Python's ``re``,
    whose ``$`` matches before a final newline and whose ``.`` takes a
    line separator; it is given them with ECMA-262's meaning (``_ecma``)."""
    _judge(schema, WIDE_POOL)


DRAFT_4 = "http://json-schema.org/draft-04/schema#"


def _as_draft_4(s):
    """A generated 2020-12 schema in draft 4's words: draft 7's (above),
    ``const`` as a one-value ``enum``, a numeric exclusive bound as
    ``minimum``/``maximum`` with the flag (dropped beside a bound of the
    other kind), boolean schemas as ``{}`` and ``{"not": {}}``; the
    keywords draft 4 lacks (``if``, ``contains``, ``propertyNames``,
    ``unevaluatedProperties``) dropped."""
    if s is True or s is False:
        return {} if s else {"not": {}}
    s = _as_draft_7(s)
    if isinstance(s, list):
        return [_as_draft_4(x) for x in s]
    if not isinstance(s, dict):
        return s
    out: dict = {}
    for key, value in s.items():
        if key in ("if", "then", "else", "contains", "propertyNames", "unevaluatedProperties"):
            continue
        if key == "const":
            out["enum"] = [value]
        elif key in ("enum", "required"):
            out[key] = value
        elif key in ("properties", "patternProperties", "definitions", "dependencies"):
            out[key] = {k: v if isinstance(v, list) else _as_draft_4(v) for k, v in value.items()}
        elif key in ("exclusiveMinimum", "exclusiveMaximum"):
            bound = "minimum" if key == "exclusiveMinimum" else "maximum"
            if bound not in s:
                out[bound], out[key] = value, True
        elif key in ("additionalProperties", "additionalItems") and isinstance(value, bool):
            out[key] = value
        else:
            out[key] = _as_draft_4(value)
    return out


@same_examples(600)
@given(st.one_of(schemas, referring))
def test_the_lowered_language_is_the_validator_s_in_draft_4(schema):
    """The same in draft 4, whose exclusive bounds are flags on ``minimum``/
    ``maximum`` (the lowering's own, numbers, were judged by draft 4's
    validator as no bound: pinned in test_lowering) and which has no
    boolean schemas."""
    if not isinstance(schema, dict):
        return
    _judge({"$schema": DRAFT_4, **_as_draft_4(schema)})


def _ecma_pattern(pattern: str) -> str:
    """One of this test's patterns in Python's ``re`` with ECMA-262's
    meaning: ``$`` at the end only, ``.`` any character but a line
    terminator."""
    return pattern.replace("$", "\\Z").replace(".", "[^\\n\\r\\u2028\\u2029]")


def _ecma(s):
    """``s`` with its ``patternProperties``' names as :func:`_ecma_pattern`
    writes them (``pattern`` itself goes to an ECMA-262 engine: ``_VALIDATORS``);
    listed values left as they are."""
    if isinstance(s, list):
        return [_ecma(x) for x in s]
    if not isinstance(s, dict):
        return s
    out = {}
    for key, value in s.items():
        if key == "patternProperties" and isinstance(value, dict):
            out[key] = {_ecma_pattern(p): _ecma(v) for p, v in value.items()}
        elif key in ("enum", "const"):
            out[key] = value
        else:
            out[key] = _ecma(value)
    return out


@functools.cache
def _ecma_validator(draft: type) -> type:
    """``draft``'s validator with ``pattern`` found by ``regress``, an
    ECMA-262 engine (``u`` flag): Python's ``re`` takes Unicode letters for
    ``\\w``, digits for ``\\d``, spaces for ``\\s``, and has no ``\\p{L}``."""

    def pattern(validator, patrn, instance, schema):
        if validator.is_type(instance, "string") and not regress.Regex(patrn, "u").find(instance):
            yield jsonschema.ValidationError(f"{instance!r} does not match {patrn!r}")

    return jsonschema.validators.extend(draft, {"pattern": pattern})


def _judge(schema, pool=POOL) -> None:
    """Every value of ``pool`` in the lowered language iff the validator of
    the schema's draft accepts it (its patterns read as ECMA-262 reads
    them); nothing judged where the lowering refuses the schema."""
    accepts = _language(schema)
    if accepts is None:
        return
    draft = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    validator = _ecma_validator(draft)(_ecma(schema))
    for value in pool:
        texts = [instance_text(schema, value), *_spellings(value)]
        try:
            got = any(accepts(text.encode()) for text in texts)
        except CompileLimitExceeded:
            return  # (the recognizer's lazy automaton past its bound: not judged)
        try:
            valid = validator.is_valid(value)
        except RecursionError:
            continue  # (a reference cycle the validator never leaves: undefined)
        assert got == valid, (schema, value, texts[0])
