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

import itertools
import json

import jsonschema
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema_harness import recognizer

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

leaf = st.one_of(
    st.builds(lambda t: {"type": t}, st.sampled_from(TYPES)),
    st.builds(lambda ts: {"type": ts}, st.lists(st.sampled_from(TYPES), min_size=1, max_size=3,
                                                 unique=True)),
    st.builds(lambda v: {"enum": v}, st.lists(st.sampled_from(LISTED), min_size=1, max_size=3)),
    st.builds(lambda v: {"const": v}, st.sampled_from(LISTED)),
    st.builds(lambda k, n: {k: n}, st.sampled_from(["minimum", "maximum", "exclusiveMinimum",
                                                     "exclusiveMaximum"]),
              st.sampled_from([0, 1, 2])),
    st.builds(lambda k, n: {k: n}, st.sampled_from(["minLength", "maxLength", "minItems",
                                                     "maxItems", "minProperties",
                                                     "maxProperties"]),
              st.integers(0, 2)),
    st.builds(lambda p: {"pattern": p}, st.sampled_from(["a", "^a", "b$", "^$"])),
    st.builds(lambda m: {"multipleOf": m}, st.sampled_from([1, 2, 0.5])),
    st.builds(lambda r: {"required": r}, st.lists(st.sampled_from(NAMES), min_size=1,
                                                  max_size=2, unique=True)),
    st.just({"additionalProperties": False}),
    st.just(True),
    st.just(False),
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
    st.builds(lambda p: {"propertyNames": {"pattern": p}}, st.sampled_from(["^a", "b$", "^.$"])),
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
            st.dictionaries(st.sampled_from(NAMES), children, min_size=1, max_size=2),
            st.sampled_from([{}, {"type": "object"}, {"additionalProperties": False}]),
        ),
        st.builds(lambda s: {"prefixItems": [s]}, children),
        st.builds(lambda s, n: {"contains": s, **n}, children,
                  st.sampled_from([{}, {"minContains": 2}, {"maxContains": 1}])),
        st.builds(lambda p, s: {"patternProperties": {p: s}}, st.sampled_from(["^a", "b"]),
                  children),
        st.builds(lambda s: {"propertyNames": s}, children),
        st.builds(lambda s: {"additionalProperties": s}, children),
        st.builds(lambda i, t, e: {"if": i, "then": t, "else": e}, children, children, children),
        st.builds(lambda i, t: {"if": i, "then": t}, children, children),
        st.builds(lambda d: {"dependentRequired": d},
                  st.dictionaries(st.sampled_from(NAMES), st.lists(st.sampled_from(NAMES),
                                                                    max_size=2, unique=True),
                                  min_size=1, max_size=2)),
        st.builds(lambda d: {"dependentSchemas": d},
                  st.dictionaries(st.sampled_from(NAMES), children, min_size=1, max_size=1)),
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
            st.dictionaries(st.sampled_from(NAMES), children, max_size=2),
            st.lists(st.sampled_from(NAMES), max_size=1),
        ),
        st.builds(lambda n: {"properties": {n: False}}, st.sampled_from(NAMES)),
        st.builds(lambda n, s: {"type": "object", "minProperties": n, "maxProperties": n,
                                "additionalProperties": s},
                  st.integers(0, 2), children),
        st.builds(lambda a, b: {"oneOf": [a, {"anyOf": [b, {"type": "null"}]}]}, children,
                  children),
        st.builds(lambda lists, i, t: {"oneOf": [{"enum": v} for v in lists], "if": i, "then": t},
                  st.lists(st.lists(st.sampled_from(LISTED), min_size=1, max_size=3), min_size=1,
                           max_size=3),
                  children, children),
    )  # fmt: skip


schemas = st.recursive(leaf, _extend, max_leaves=6)

#: Schemas with two definitions, ``x`` and ``y``, that they and the schema
#: itself reference (recursion included; 2020-12 ``$ref`` beside keywords).
_with_refs = st.recursive(
    st.one_of(leaf, st.sampled_from([{"$ref": "#/$defs/x"}, {"$ref": "#/$defs/y"}])),
    _extend,
    max_leaves=5,
)
referring = st.builds(
    lambda x, y, top: {"$defs": {"x": x, "y": y},
                       **(top if isinstance(top, dict) else {"allOf": [top]})},
    _with_refs, _with_refs, _with_refs,
)  # fmt: skip


def _spellings(value) -> list[str]:
    """Every compact JSON text of ``value``, members in every order: the
    language fixes one order (``instance_text`` knows it for the schemas the
    other tests write; a generated nesting may spell it otherwise), and what
    this test judges is which values the language holds."""
    if isinstance(value, dict):
        out = []
        for order in itertools.permutations(value):
            parts = [[json.dumps(k) + ":" + t for t in _spellings(value[k])] for k in order]
            out += ["{" + ",".join(p) + "}" for p in itertools.product(*parts)]
        return out
    if isinstance(value, list):
        return ["[" + ",".join(p) + "]" for p in itertools.product(*map(_spellings, value))]
    return [json.dumps(value)]


def _language(schema):
    """The lowered language's membership test, or ``None`` where the
    lowering refuses the schema (a construct, a limit, no value at all)."""
    try:
        return recognizer(lower_json_schema_ir(JsonSchema(schema)))
    except (UnsupportedConstraint, CompileLimitExceeded, ConstraintError):
        return None


def _examples(n: int):
    """Hypothesis settings for ``n`` examples, the same ones every run."""
    return settings(
        max_examples=n,
        deadline=None,
        derandomize=True,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )


@_examples(2000)
@given(schemas)
def test_the_lowered_language_is_the_validator_s(schema):
    _judge(schema)


@_examples(600)
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


@_examples(600)
@given(st.one_of(schemas, referring))
def test_the_lowered_language_is_the_validator_s_in_draft_7(schema):
    """The same in draft 7, whose references ignore the keywords beside
    them and whose positional items are a list (a merge once spelled them
    ``prefixItems``, which draft 7's validator ignores: pinned in
    test_lowering)."""
    if isinstance(schema, dict):
        schema = {"$schema": DRAFT_7, **_as_draft_7(schema)}
    _judge(schema)


def _judge(schema) -> None:
    """Every value of ``POOL`` in the lowered language iff the validator of
    the schema's draft accepts it; nothing judged where the lowering refuses
    the schema."""
    accepts = _language(schema)
    if accepts is None:
        return
    validator = jsonschema.validators.validator_for(
        schema, default=jsonschema.Draft202012Validator
    )(schema)
    for value in POOL:
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
