"""The language a schema is lowered to: member order, commas, additional
members, recursion, oneOf, whitespace, errors that name keyword and pointer."""

from __future__ import annotations

import itertools
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema_harness import recognizer

from constrain_api import JsonSchema, Regex, clear_caches, get, lower_json_schema
from constrain_api.automata import ByteDFA, Node
from constrain_api.errors import CompileLimitExceeded, ConstraintError, UnsupportedConstraint
from constrain_api.grammar import GrammarIR
from constrain_api.jsonschema import instance_text, lower_json_schema_ir


def language(schema, **options):
    lowered = lower_json_schema_ir(JsonSchema(schema, **options))
    accepts = recognizer(lowered)
    return lowered, lambda text: accepts(text.encode())


def judged_by_the_validator(schema, instances) -> list[bool]:
    """Assert that the lowered language takes each instance (spelled by
    ``instance_text``) iff the ``jsonschema`` validator of the schema's draft
    finds it valid; returns the validator's verdicts."""
    import jsonschema

    from constrain_api.jsonschema import instance_text

    _, accepts = language(schema)
    validator = jsonschema.validators.validator_for(schema)(schema)
    verdicts = []
    for instance in instances:
        want = validator.is_valid(instance)
        assert accepts(instance_text(schema, instance)) == want, (instance, want)
        verdicts.append(want)
    return verdicts


CLOSED = {
    "type": "object",
    "properties": {"a": {"type": "integer"}, "b": {"type": "string"}, "c": {"type": "boolean"}},
    "required": ["b"],
    "additionalProperties": False,
}


def test_closed_object_is_a_regex_with_exact_commas_and_order():
    lowered, ok = language(CLOSED)
    assert isinstance(lowered, Node)  # a regular language: a regex AST
    for text in ['{"b":"x"}', '{"a":1,"b":"x"}', '{"b":"","c":true}', '{"a":-3,"b":"x","c":false}']:
        assert ok(text), text
    for text in [
        "{}",  # b is required
        '{"a":1}',
        '{"b":"x","a":1}',  # order follows "properties"
        '{,"b":"x"}',
        '{"b":"x",}',
        '{"a":1,,"b":"x"}',
        '{"b":"x","d":1}',  # no additional members
        '{"a":1.5,"b":"x"}',
    ]:
        assert not ok(text), text


def test_all_optional_members_any_subset_in_order():
    schema = dict(CLOSED, required=[])
    _, ok = language(schema)
    members = ['"a":1', '"b":"x"', '"c":true']
    for mask in range(8):
        chosen = [m for i, m in enumerate(members) if mask >> i & 1]
        assert ok("{" + ",".join(chosen) + "}")
        if len(chosen) > 1:
            assert not ok("{" + ",".join(reversed(chosen)) + "}")


def test_additional_properties_default_true_is_a_grammar():
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}}
    lowered, ok = language(schema)
    assert isinstance(lowered, GrammarIR)
    assert ok('{"a":1,"zz":[1,{"q":null}],"y":"s"}')
    assert ok('{"zz":{}}')
    assert not ok('{"a":1,"a":2}')  # a declared name is not an additional member
    assert not ok('{"zz":1,"a":1}')  # declared members first
    assert not ok('{"a":"x"}')
    closed, ok2 = language(schema, additional_properties=False)
    assert isinstance(closed, Node)
    assert ok2('{"a":1}') and not ok2('{"a":1,"zz":1}')


def test_recursive_ref_is_a_grammar():
    tree = {
        "$defs": {
            "node": {
                "type": "object",
                "properties": {
                    "v": {"type": "integer"},
                    "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}},
                },
                "required": ["v"],
                "additionalProperties": False,
            }
        },
        "$ref": "#/$defs/node",
    }
    lowered, ok = language(tree)
    assert isinstance(lowered, GrammarIR)
    assert ok('{"v":1,"kids":[{"v":2},{"v":3,"kids":[{"v":4,"kids":[]}]}]}')
    assert not ok('{"v":1,"kids":[{"v":"2"}]}')
    assert not ok('{"v":1,"kids":[{}]}')


UNFOUNDED = [
    ({"$defs": {"a": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"}, "#/$defs/a"),
    (
        {
            "$defs": {"a": {"anyOf": [{"$ref": "#/$defs/a"}, {"type": "string"}]}},
            "$ref": "#/$defs/a",
        },
        "#/$defs/a",
    ),
    # a cycle of two, one through allOf (a merge: named by its content's place)
    (
        {
            "$defs": {
                "a": {"anyOf": [{"$ref": "#/$defs/b"}, {"type": "string"}]},
                "b": {"allOf": [{"$ref": "#/$defs/a"}], "minProperties": 1},
            },
            "$ref": "#/$defs/a",
        },
        "#/$defs/a/anyOf/0",
    ),
    ({"$defs": {"a": {"not": {"$ref": "#/$defs/a"}}}, "$ref": "#/$defs/a"}, "#/$defs/a"),
    # through if/then beside listed values, which the validator judges first:
    # its recursion came out of the reference registry's Rust maps as pyo3's
    # PanicException, a BaseException past every `except Exception` (found by
    # a longer run of test_differential's references)
    (
        {
            "$defs": {
                "a": {
                    "anyOf": [{"enum": [1]}, {"const": "a"}],
                    "if": {"type": "string"},
                    "then": {"$ref": "#/$defs/a"},
                }
            },
            "$ref": "#/$defs/a",
        },
        "#/$defs/a",
    ),
]


@pytest.mark.parametrize(("schema", "where"), UNFOUNDED)
def test_a_reference_cycle_through_no_instance_keyword_is_an_error(schema, where):
    """A schema that refers back to itself without descending into the
    instance: the validator recurses forever on it and JSON Schema leaves
    it undefined, so the lowering names the cycle (it once took the least
    language of its rules: the strings for the second, and nothing for
    the first, reported as an empty schema)."""
    import jsonschema

    with pytest.raises(
        ConstraintError, match="reference cycle never descends into the instance"
    ) as info:
        lower_json_schema_ir(JsonSchema(schema))
    assert info.value.where.startswith(where)
    instance_text(schema, "a")  # (spelling an instance judges branches too: no panic)
    for value in (1, "a"):  # (the validator's own verdict: on some value it never ends)
        try:
            jsonschema.Draft202012Validator(schema).is_valid(value)
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException:  # RecursionError, or referencing's Rust core panicking on one
            break
    else:
        pytest.fail("the validator decided the schema")


def test_recursion_through_items_or_members_is_not_such_a_cycle():
    """The same references, each under an instance keyword, define a language."""
    schema = {
        "$defs": {
            "a": {
                "anyOf": [
                    {"type": "array", "items": {"$ref": "#/$defs/a"}},
                    {"properties": {"k": {"$ref": "#/$defs/a"}}, "required": ["k"]},
                    {"type": "string"},
                ]
            }
        },
        "$ref": "#/$defs/a",
    }
    judged_by_the_validator(schema, [[], ["x", []], {"k": "x"}, {"k": [1]}, {"j": 1}, 1])


def test_unguarded_cycle_takes_only_what_can_be_empty_as_nothing():
    """The rule-level search: a call beside parts that can be empty is
    alone (a cycle), one beside a part that cannot is guarded; whether a
    rule can be empty is its least fixed point (``b`` below)."""
    from constrain_api.jsonschema.ir import EMPTY, Call, Cat, Rep, Rx, either, unguarded_cycle

    x = Rx("x")
    assert unguarded_cycle({"a": either(Call("a"), x)}) == ["a", "a"]
    assert unguarded_cycle({"a": Cat((x, Call("a")))}) is None
    assert unguarded_cycle({"a": Cat((Call("b"), Call("a"))), "b": either(x, EMPTY)}) == ["a", "a"]
    assert unguarded_cycle({"a": Cat((Call("b"), Call("a"))), "b": Cat((x, Call("b")))}) is None
    assert unguarded_cycle({"a": Rep(Call("a"), 2, None)}) is None  # (two copies, neither empty)
    assert unguarded_cycle({"a": either(Call("b"), x), "b": Call("a")}) in (
        ["a", "b", "a"],
        ["b", "a", "b"],
    )
    # the search starts at the roots given: a cycle away from them is not met
    assert unguarded_cycle({"a": x, "b": Call("b")}, roots=["a"]) is None


DRAFT4 = "http://json-schema.org/draft-04/schema#"
NOT_URIS = [
    ({"$schema": "http://schema[^].org/draft-04/schema#"}, "$schema .* is not a URI", "/"),
    ({"$schema": 1, "type": "string"}, "$schema must be a string .*, got int", "/"),
    ({"$schema": {"type": "string"}}, "$schema must be a string .*, got dict", "/"),
    ({"$id": "http://[x/", "type": "string"}, "$id .* is not a URI", "/"),
    ({"properties": {"a": {"$ref": "http://[x/#/a"}}}, "$ref .* is not a URI", "/properties/a"),
    ({"$schema": DRAFT4, "items": {"$ref": ["#"]}}, "$ref must be a string, got list", "/items"),
    (
        {"$schema": "http://json-schema.org/draft-07/schema#", "items": {"id": "http://a[/b"}},
        "id .* is not a URI",
        "/items",
    ),
]


@pytest.mark.parametrize(("schema", "message", "where"), NOT_URIS)
def test_a_reference_that_is_no_uri_is_a_constraint_error(schema, message, where):
    """``$schema``, ``$id`` (draft 4-7 ``id``) and ``$ref`` that are no
    string (drafts 4-7 leave ``$ref`` out of their meta-schemas) or that
    Python's URL parser refuses (a bracket that is no IPv6 host): the spec
    or the lowering names the keyword and where; they raised a bare
    ``ValueError``, ``TypeError`` or ``AttributeError`` (found by a
    mutation fuzz of the corpus's and MaskBench's schemas)."""
    with pytest.raises(ConstraintError, match=message.replace("$", r"\$")) as info:
        lower_json_schema_ir(JsonSchema(schema))
    assert info.value.where == where


UNREAD_TARGETS = [
    (
        {"$schema": DRAFT4, "x": {"required": [[]]}, "properties": {"a": {"$ref": "#/x"}}},
        "is not of type 'string'",
        "/x/required/0",
    ),
    ({"$schema": DRAFT4, "x": {"enum": True}, "$ref": "#/x"}, "is not of type 'array'", "/x/enum"),
    (
        {"x-types": {"a": {"minimum": "z"}}, "properties": {"a": {"$ref": "#/x-types/a"}}},
        "is not of type 'number'",
        "/x-types/a/minimum",
    ),
]


@pytest.mark.parametrize(("schema", "message", "where"), UNREAD_TARGETS)
def test_a_reference_to_a_malformed_schema_the_meta_check_never_read_is_an_error(
    schema, message, where
):
    """A ``$ref`` into an unknown keyword's value reaches a schema the
    meta-schema check did not read (it validates keywords it knows): one
    that is malformed there is a ``ConstraintError`` at its place, where it
    raised bare ``TypeError``s and ``ValueError``s in the lowering (found
    by the mutation fuzz, seeded with every MaskBench schema). A valid one
    there lowers as before."""
    with pytest.raises(ConstraintError, match=message) as info:
        lower_json_schema_ir(JsonSchema(schema))
    assert info.value.where == where
    fine = {"x-types": {"a": {"type": "integer"}}, "properties": {"a": {"$ref": "#/x-types/a"}}}
    assert judged_by_the_validator(fine, [{"a": 1}, {"a": "1"}, {}]) == [True, False, True]


@pytest.mark.parametrize(
    "inner",
    [
        "#foo",  # an anchor
        "#/$defs/a%20b",  # a percent-encoded pointer
        "#/x-types/b",  # another schema under the unknown keyword, itself a reference
    ],
)
def test_references_inside_a_schema_only_a_reference_reaches_are_resolved(inner):
    """A schema under an unknown keyword, reached by a ``$ref``, is read as a
    schema: its own references are resolved as every other one (they
    reached the lowering as written: a bare ``ValueError`` for the anchor,
    a ``KeyError`` for the encoded pointer)."""
    schema = {
        "x-types": {"a": {"$ref": inner}, "b": {"$ref": "#/$defs/a%20b"}},
        "properties": {"p": {"$ref": "#/x-types/a"}},
        "$defs": {"a b": {"$anchor": "foo", "type": "string"}},
    }
    assert judged_by_the_validator(schema, [{"p": "x"}, {"p": 1}, {}]) == [True, False, True]
    assert schema["x-types"]["a"] == {"$ref": inner}  # (the document is left as it was)


def test_recursion_through_a_ref_merged_with_its_siblings_is_a_rule():
    """A ``$ref`` with sibling keywords (draft 2020-12 applies both) is
    merged into one schema; when that schema holds itself again (the
    reference is inside its target) no pointer names the cycle: the same
    content met inside itself becomes a rule (it was refused as nested
    more than 150 deep). The language against the validator."""
    schema = {
        "$defs": {
            "t": {
                "type": "object",
                "properties": {"a": {"$ref": "#/$defs/t", "maxProperties": 1}},
                "additionalProperties": {"type": "integer"},
            }
        },
        "$ref": "#/$defs/t",
        "maxProperties": 1,
    }
    lowered, _ = language(schema)
    assert isinstance(lowered, GrammarIR)
    instances = [
        {},
        {"a": {}},
        {"a": {"a": {"a": {}}}},
        {"a": {"b": 1}},
        {"b": 2},
        {"a": {"a": {}, "b": 1}},  # two members one level down
        {"a": {}, "b": 1},
        {"a": {"a": 1}},
        {"a": {"a": {"a": "x"}}},
        {"b": "x"},
    ]
    verdicts = judged_by_the_validator(schema, instances)
    assert any(verdicts) and not all(verdicts)


def test_many_declared_names_beside_other_members():
    """The regex of "any other member name" grows with the declared names
    (linearly: a trie of them); past 20,000 characters it is bounded as the
    whole lowering is (``max_regex_chars``), not refused as a pattern's
    expansion would be. 70 names of 8-16 letters: a 22,000-character piece."""
    import random

    rng = random.Random(3)
    letters = "abcdefghijklmnopqrstuvwxyz"
    names = sorted(
        {"".join(rng.choice(letters) for _ in range(rng.randint(8, 16))) for _ in range(70)}
    )
    schema = {
        "type": "object",
        "properties": {n: {"type": "integer"} for n in names},
        "additionalProperties": {"type": "string"},
    }
    from constrain_api.jsonschema.strings import string_not_in

    assert len(string_not_in(names, max_size=10**6)) > 20_000
    a, b = names[0], names[-1]
    instances = [
        {a: 1},
        {a: "x"},  # a declared name takes its own schema, not the others'
        {a: 1, "zz": "y"},
        {"zz": 2},
        {a[:-1]: "prefix of a name"},
        {a + "q": "longer than a name"},
        {a[:-1]: 3},
        {b: 1, a: 2},
    ]
    verdicts = judged_by_the_validator(schema, instances)
    assert any(verdicts) and not all(verdicts)


CONDITIONALS = {
    "one if with else": {
        "type": "object",
        "properties": {"kind": {"type": "string"}, "a": {"type": "integer"}},
        "if": {"properties": {"kind": {"const": "num"}}},
        "then": {"required": ["a"]},
        "else": {"properties": {"a": False}},
    },
    "allOf of ifs on one member": {
        "allOf": [
            {"if": {"properties": {"kind": {"enum": ["x", "y"]}}}, "then": {"required": ["a"]}},
            {
                "if": {"properties": {"kind": {"const": "z"}}, "required": ["kind"]},
                "then": {"required": ["b"]},
                "else": {"properties": {"b": {"type": "string"}}},
            },
            {
                "if": {"type": "object", "properties": {"kind": {"type": "string", "const": 3}}},
                "then": False,
            },
        ],
        "properties": {"kind": {"type": "string"}, "a": {"type": "integer"}, "b": {}},
    },
    "a boolean discriminator": {
        "type": "object",
        "properties": {"on": {"type": "boolean"}, "n": {"type": "integer"}},
        "allOf": [
            {"if": {"properties": {"on": {"const": True}}}, "then": {"required": ["n"]}},
            {"if": {"properties": {"on": {"const": False}}}, "then": {"not": {"required": ["n"]}}},
        ],
    },
}
CONDITIONAL_INSTANCES = [
    {}, {"kind": "num"}, {"kind": "num", "a": 1}, {"kind": "str"}, {"kind": "str", "a": 1},
    {"a": 1}, {"kind": "x"}, {"kind": "x", "a": 2}, {"kind": "y", "a": 2, "b": 1},
    {"kind": "z"}, {"kind": "z", "b": 1}, {"kind": "z", "b": "s", "a": 1}, {"kind": 3},
    {"kind": "w", "b": 1}, {"kind": "w", "b": "s"}, {"b": "s"}, {"b": 1}, {"a": 1, "b": "s"},
    {"on": True}, {"on": True, "n": 1}, {"on": False}, {"on": False, "n": 1}, {"n": 1},
    {"on": None}, 1, "s", None, [1], True,
]  # fmt: skip


@pytest.mark.parametrize("name", list(CONDITIONALS))
def test_conditionals_on_one_member_are_cases_of_its_value(name):
    """``if``/``then``/``else`` whose conditions test one member against
    listed values (alone, or several in ``allOf``: refused before) become
    cases of that member — a listed value, none of them, absent, not an
    object — judged against the validator on members present, absent,
    matching each list and none, and on values that are not objects."""
    schema = CONDITIONALS[name]
    verdicts = judged_by_the_validator(schema, CONDITIONAL_INSTANCES)
    assert any(verdicts) and not all(verdicts)


NEGATED_CONDITIONALS = [
    (
        {
            "allOf": [
                {"if": {"properties": {"a": {"const": 1}}}, "then": {"required": ["x"]}},
                {"if": {"properties": {"b": {"const": 1}}}, "then": {"required": ["y"]}},
            ]
        },
        [{}, {"a": 1}, {"a": 1, "x": 0}, {"a": 2}, {"b": 1, "y": 0}, {"a": 1, "b": 1, "x": 0},
         {"a": 1, "b": 1, "x": 0, "y": 0}, 3],
    ),
    (
        {
            "allOf": [
                {"if": {"properties": {"a": {"enum": [1, 2]}}}, "then": {"required": ["x"]}},
                {"if": {"properties": {"a": {"enum": [2, 3]}}}, "then": {"required": ["y"]}},
            ]
        },
        [{"a": 1, "x": 0}, {"a": 2, "x": 0}, {"a": 2, "x": 0, "y": 0}, {"a": 3}, {"a": 4}, {}],
    ),
    (
        {"if": {"minItems": 1}, "then": {"maxItems": 3}, "else": {"const": []}},
        [[], [1], [1, 2, 3], [1, 2, 3, 4], "x"],
    ),
    (
        {
            "type": "object",
            "properties": {"country": {"type": "string"}, "zip": {"type": "string"}},
            "if": {"properties": {"country": {"const": "US"}}, "required": ["country"]},
            "then": {"properties": {"zip": {"pattern": "^[0-9]{5}$"}}},
            "else": {"properties": {"zip": {"maxLength": 3}}},
        },
        [{"country": "US", "zip": "12345"}, {"country": "US", "zip": "1234"},
         {"country": "FR", "zip": "750"}, {"country": "FR", "zip": "75001"}, {"zip": "123"},
         {"zip": "12345"}],
    ),
    (  # a then or else in another allOf member than the if does nothing
        {"type": ["number", "string"],
         "allOf": [{"if": {"exclusiveMaximum": 0}}, {"then": {"minimum": -10}},
                   {"else": {"multipleOf": 2}}]},
        [-100, 3, 0, "x", None],
    ),
]  # fmt: skip


@pytest.mark.parametrize(("schema", "instances"), NEGATED_CONDITIONALS)
def test_conditionals_are_if_and_then_or_not_if_and_else(schema, instances):
    """Other conditions (on several members, on overlapping lists, on
    anything whose negation is expressible): the cases ``if`` and ``then``
    or ``not if`` and ``else``, one per combination; judged by the
    validator."""
    verdicts = judged_by_the_validator(schema, instances)
    assert any(verdicts) and not all(verdicts)


def test_conditionals_whose_if_has_no_negation_are_refused():
    five = {"allOf": [{"if": {"minimum": i}, "then": {"multipleOf": 1}} for i in range(5)]}
    for schema, match in (
        ({"if": {"multipleOf": 2}, "then": {"minimum": 3}}, "if/then/else"),
        (five, "several if keywords"),
    ):
        with pytest.raises(UnsupportedConstraint, match=match):
            lower_json_schema_ir(JsonSchema(schema))


def test_many_pattern_properties_split_only_where_they_meet():
    """Eight patterns (literal names, each with its own value type, beside
    a catch-all): the names are split one pattern at a time and a region
    found empty is not split further, so the regions are a handful, not
    2 ** 8 (refused past 4 patterns before); past 32 patterns refused by name."""
    literal = {f"^k{i}$": {"type": ["integer", "string", "boolean"][i % 3]} for i in range(7)}
    schema = {
        "type": "object",
        "properties": {"k0": {"const": 0}},
        "patternProperties": {**literal, "^k": {"not": {"type": "boolean"}}},
        "additionalProperties": {"type": "null"},
    }
    instances = [
        {}, {"k0": 0}, {"k0": 1}, {"k1": "s"}, {"k1": 1}, {"k2": True}, {"k2": "s"},
        {"k3": 4}, {"k9": 1}, {"k9": True}, {"kx": None}, {"z": None}, {"z": 1},
        {"k1": "s", "k3": 3, "z": None}, {"k5": False}, {"k4": "x"},
    ]  # fmt: skip
    verdicts = judged_by_the_validator(schema, instances)
    assert any(verdicts) and not all(verdicts)
    many = {"type": "object", "patternProperties": {f"^p{i}$": {} for i in range(33)}}
    with pytest.raises(UnsupportedConstraint, match="more than 32 patterns"):
        lower_json_schema_ir(JsonSchema(many))


@pytest.mark.parametrize(
    "names",
    [
        {"pattern": "^v", "maxLength": 4},
        {"type": "string"},  # every name: nothing to bound
        {"enum": ["a", "vx", "vy", "zz"]},
    ],
)
def test_property_names_bound_the_other_members(names):
    """``propertyNames`` beside open members (refused before): a declared
    name it refuses cannot appear; the other names are those of its string
    language, on automata, beside ``patternProperties`` and
    ``additionalProperties``. Judged by the validator."""
    schema = {
        "type": "object",
        "properties": {"a": {"type": "string"}, "vx": {"type": "boolean"}},
        "patternProperties": {"^vy": {"type": "string"}},
        "additionalProperties": {"type": "integer"},
        "propertyNames": names,
    }
    instances = [
        {}, {"a": "s"}, {"vx": True}, {"vx": 1}, {"vy": "s"}, {"vy": 1}, {"vz": 1},
        {"vz": "s"}, {"vvvvv": 1}, {"zz": 1}, {"b": 1}, {"a": "s", "vz": 2}, {"vyy": "t"},
    ]  # fmt: skip
    verdicts = judged_by_the_validator(schema, instances)
    assert any(verdicts) and not all(verdicts)


def test_one_of_exact_or_as_any_of():
    disjoint = {"oneOf": [{"type": "string"}, {"type": "integer"}]}
    _, ok = language(disjoint)
    assert ok('"x"') and ok("3") and not ok("null")
    overlapping = {"oneOf": [{"type": "integer"}, {"minimum": 2}]}
    with pytest.raises(UnsupportedConstraint, match="oneOf at /"):
        lower_json_schema(JsonSchema(overlapping))
    _, ok = language(overlapping, one_of="any_of")
    assert ok("5") and ok("2.5") and ok("-1")
    # proven disjoint by the automata: two string patterns that never meet
    _, ok = language(
        {"oneOf": [{"type": "string", "pattern": "^a"}, {"type": "string", "pattern": "^b"}]}
    )
    assert ok('"ab"') and ok('"b"') and not ok('"c"')


SHAPES = {  # (no type at the top: a number matches every branch, so none is valid)
    "properties": {
        "shape": {"type": "string", "enum": ["circle", "square"]},
        "r": {"type": "number"},
        "side": {"type": "number"},
    },
    "oneOf": [
        {"properties": {"shape": {"enum": ["circle"]}}, "required": ["shape", "r"]},
        {"properties": {"shape": {"const": "square"}}, "required": ["shape", "side"]},
    ],
}
EXACTLY_ONE_MEMBER = {
    "type": "object",
    "properties": {"a": {"type": "string"}, "b": {"type": "integer"}, "c": {"type": "string"}},
    "oneOf": [{"required": ["a"]}, {"required": ["b"]}, {"required": ["c"]}],
    "additionalProperties": False,
}
ONE_OF_BY_TYPE_CASES = [
    (
        SHAPES,
        [{"shape": "circle", "r": 1}, {"shape": "square", "side": 2}, {"shape": "circle"},
         {"shape": "circle", "r": 1, "side": 2}, {"shape": "square", "r": 1},
         {"shape": "triangle", "r": 1}, 5, "circle", None, [], True, {}],
    ),
    (
        {  # the discriminator's type and requirement at the top, its value in the branches
            "type": "object",
            "properties": {"kind": {"type": "string"}},
            "required": ["kind"],
            "oneOf": [
                {"properties": {"kind": {"const": "phone"}, "screen": {"type": "string"}}},
                {"properties": {"kind": {"const": "laptop"}, "ram": {"type": "integer"}}},
            ],
        },
        [{"kind": "phone"}, {"kind": "laptop", "ram": 8}, {"kind": "phone", "ram": 8},
         {"kind": "laptop", "ram": "8"}, {"kind": "tv"}, {}, "phone"],
    ),
    (
        EXACTLY_ONE_MEMBER,
        [{}, {"a": "x"}, {"b": 1}, {"c": "z"}, {"a": "x", "b": 1}, {"a": "x", "c": "z"},
         {"b": 1, "c": "z"}, {"a": "x", "b": 1, "c": "z"}, {"b": "1"}, {"d": 1}, 3],
    ),
    (
        {  # a branch whose values all match another: only the other's remainder is left
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "oneOf": [{"required": ["a"]}, {"required": ["a", "b"]}],
        },
        [{"a": 1}, {"a": 1, "b": 2}, {"b": 2}, {}, {"a": 1, "c": 3}],
    ),
    (
        {"oneOf": [{"type": ["string", "null"]}, {"type": ["null", "integer"]}]},
        ["x", 3, None, 2.5, True, [], {}],
    ),
    (
        {  # groups of members: exactly one group present in full
            "type": "object",
            "properties": {"r": {"type": "number"}, "l": {}, "w": {}, "b": {}, "h": {}},
            "oneOf": [
                {"required": ["r"], "title": "circle"},  # (annotations may differ)
                {"required": ["l", "w"], "title": "rectangle"},
                {"required": ["b", "h"]},
            ],
        },
        [{"r": 1}, {"l": 1, "w": 2}, {"b": 1, "h": 2}, {"r": 1, "l": 1}, {"r": 1, "l": 1, "w": 2},
         {"l": 1, "w": 2, "b": 1}, {"l": 1, "w": 2, "b": 1, "h": 2}, {"l": 1}, {}, {"r": "1"},
         {"r": 1, "b": 1, "h": 2}, {"w": 1, "h": 2}, []],
    ),
    (
        {  # branches with members of their own: another branch's member may be
            # present with a value that branch rejects
            "type": "object",
            "oneOf": [
                {"properties": {"city": {"type": "string"}}, "required": ["city"]},
                {"properties": {"region": {"type": "string"}}, "required": ["region"]},
                {"properties": {"hotel": {"enum": ["a", "b"]}}, "required": ["hotel"]},
            ],
        },
        [{"city": "x"}, {"region": "y"}, {"hotel": "a"}, {"city": "x", "region": "y"},
         {"city": "x", "region": 5}, {"region": 5, "city": "x", "hotel": "c"},
         {"hotel": "a", "city": 1, "z": 0}, {"hotel": "c"}, {"city": 1}, {}, "x"],
    ),
    (
        {  # closed branches: the empty object matches both, so neither
            "oneOf": [
                {"properties": {"value": {"type": "string"}, "unit": {"type": "string"}},
                 "additionalProperties": False},
                {"properties": {"text": {"type": "string"}}, "additionalProperties": False},
            ],
        },
        [{}, {"value": "1"}, {"unit": "$"}, {"text": "x"}, {"value": "1", "text": "x"},
         {"value": 1}, {"other": 1}, 3],
    ),
    (
        {  # a required member of one branch, another member with a type in the other
            "type": "object",
            "oneOf": [
                {"required": ["a"], "properties": {"a": {"type": "string"}}},
                {"required": ["b"]},
            ],
        },
        [{"a": "x"}, {"b": 1}, {"a": "x", "b": 1}, {"a": 1, "b": 1}, {"a": 1}, {}],
    ),
    (
        {  # listed values: those valid under exactly one branch
            "oneOf": [
                {"enum": ["red", "orange", 6, 9.0, None]},
                {"enum": ["blue", "orange", 6, 3]},
                {"const": 3, "type": "string"},
            ],
        },
        ["red", "orange", "blue", 6, 9, 9.0, 3, None, "x", True],
    ),
    (
        {  # a branch taking every object: the objects failing the other
            "oneOf": [{"type": "object"}, {"properties": {"a": {"type": "integer"}}}],
        },
        [{}, {"a": 1}, {"a": "x"}, {"a": 1.5, "b": 0}, {"b": 0, "a": None}, 3, "s"],
    ),
    (
        {  # ... failing it in several ways (made disjoint, each still of its type)
            "oneOf": [{"type": "object"},
                      {"required": ["a"], "properties": {"b": {"type": "integer"}}}],
        },
        [{}, {"a": 1}, {"a": 1, "b": 2}, {"a": 1, "b": "x"}, {"b": "x"}, {"b": 2}, 3],
    ),
    (
        {  # members whose values fail by type and bound (integers: the fractions too)
            "type": "object",
            "oneOf": [
                {"required": ["a"], "properties": {"a": {"type": "integer", "minimum": 3}}},
                {"required": ["b"]},
            ],
        },
        [{"a": 3}, {"b": 0}, {"a": 3, "b": 0}, {"a": 2, "b": 0}, {"a": 3.5, "b": 0},
         {"a": "x", "b": 0}, {"a": 2}, {}],
    ),
    (
        {  # arrays: the empty array matches both
            "oneOf": [
                {"type": "array", "items": {"type": "number"}},
                {"type": "array", "items": {"type": "string"}, "maxItems": 2},
            ],
        },
        [[], [1], ["a"], [1, "a"], ["a", "b", "c"], [1, 2, 3], "x"],
    ),
    ({"oneOf": [{"type": "number"}, {"type": "integer"}]}, [1, 1.0, 1.5, -2, "x"]),
    (  # a listed branch and the strings failing a pattern (the lowering's marker, judged)
        {"oneOf": [{"enum": ["a", "b"]}, {"pattern": "a"}]},
        ["a", "b", "ca", "c", 1],
    ),
    (
        {  # open branches sharing a member whose schema (the same but for its
           # annotations) has no negation here: no value fails one and not the other
            "oneOf": [
                {"type": "object", "required": ["command"],
                 "properties": {"command": {"type": "string"},
                                "title": {"description": "A", "oneOf": [{"type": "string"}]}}},
                {"type": "object", "required": ["run"],
                 "properties": {"run": {"type": "array", "items": {"type": "string"}},
                                "title": {"title": "B", "oneOf": [{"type": "string"}]}}},
            ],
        },
        [{"command": "a"}, {"run": ["a"]}, {"command": "a", "run": ["b"]},
         {"command": "a", "run": 3}, {"command": "a", "title": "t"}, {"command": "a", "title": 3},
         {"run": ["a"], "command": 1}, {"run": [], "title": "t", "command": None}, {}, "s"],
    ),
    (
        {  # a branch's type and members come from its allOf's reference: merged first
            "$defs": {"ref": {"type": "object", "properties": {"ref": {"type": "string"}},
                              "required": ["ref"], "additionalProperties": False}},
            "oneOf": [
                {"type": "object", "additionalProperties": False,
                 "properties": {"name": {"type": "string"}, "ref": {"type": "string"}}},
                {"allOf": [{"$ref": "#/$defs/ref"}, {"properties": {"ref": {"minLength": 1}}}]},
            ],
        },
        [{}, {"name": "x"}, {"ref": "a"}, {"ref": ""}, {"name": "x", "ref": "a"}, {"ref": 1},
         {"ref": "a", "other": 0}, "s", 3, None],
    ),
    (
        {  # a required member's listed values, as its other keywords filter them, apart
            "type": "object",
            "oneOf": [
                {"required": ["kind"], "properties": {  # (x's negation: not expressible)
                    "x": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
                    "kind": {"enum": ["a", "b"], "pattern": "a"}}},
                {"required": ["kind"], "properties": {
                    "x": {"anyOf": [{"type": "string"}, {"type": "boolean"}]},
                    "kind": {"allOf": [{"enum": ["a", "b"]}, {"pattern": "b"}]}}},
            ],
        },
        [{"kind": "a", "x": 3}, {"kind": "b", "x": True}, {"kind": "a", "x": True},
         {"kind": "b", "x": 3}, {"kind": "a", "x": "s"}, {"kind": "b", "x": "s"}, {"kind": "a"},
         {"kind": "c"}, {"kind": "ab"}, {"x": 1}, {}],
    ),
    (
        {  # a member named like an annotation keyword, with different schemas: compared
            "type": "object",
            "oneOf": [
                {"required": ["a"], "properties": {"description": {"type": "string"}}},
                {"required": ["b"], "properties": {"description": {"type": "number"}}},
            ],
        },
        [{"a": 1}, {"b": 1}, {"a": 1, "b": 1}, {"a": 1, "b": 1, "description": "x"},
         {"a": 1, "b": 1, "description": 2}, {"a": 1, "description": 2}, {"b": 1, "description": 2},
         {"a": 1, "b": 1, "description": None}],
    ),
    (
        {  # an open branch requiring a member a closed branch excludes: apart
            "oneOf": [
                {"properties": {"src": {"type": "string"}}, "required": ["src"]},
                {"type": "string"},
                {"properties": {"from": {"type": "string"}, "n": {"type": "number"}},
                 "required": ["from"], "additionalProperties": False},
            ],
        },
        [{"src": "a"}, {"from": "b"}, {"from": "b", "n": 1}, {"src": "a", "from": "b"},
         {"src": 1, "from": "b"}, {"from": "b", "x": 0}, {"src": "a", "n": "x"}, {}, "s", 3],
    ),
]  # fmt: skip


@pytest.mark.parametrize(("schema", "instances"), ONE_OF_BY_TYPE_CASES)
def test_one_of_one_json_type_at_a_time(schema, instances):
    """``oneOf`` whose branches overlap as schemas but not within each JSON
    type: branches that take every value of a type (two of them: none of
    that type is valid), branches told apart by a required member's listed
    values (also through ``allOf`` merges), branches that differ only in
    ``required`` (exactly one of some members), object branches with members
    of their own, branches that list their values. Judged by the
    ``jsonschema`` validator on values inside, outside and next to each
    branch."""
    verdicts = judged_by_the_validator(schema, instances)
    assert any(verdicts) and not all(verdicts)


def test_one_of_still_refused_where_a_type_is_shared_unresolved():
    """Branches in so many names that the choices of absent ones multiply
    past 64, a closed branch beside an open one that requires only names
    the closed one declares (the names it excludes are any), a member
    value whose negation is not expressible (a multiple), non-integral
    numbers within a bound."""
    many = [{"required": [f"{g}{i}" for i in range(3)]} for g in "abcde"]
    for schema in (
        {"oneOf": [{"type": "number", "minimum": 2}, {"type": "integer"}]},
        {"type": "object", "oneOf": many},
        {
            "type": "object",
            "oneOf": [
                {"properties": {"a": {"type": "string"}}, "additionalProperties": False},
                {"required": ["a"]},
            ],
        },
        {
            "type": "object",
            "oneOf": [
                {"required": ["a"], "properties": {"a": {"multipleOf": 3}}},
                {"required": ["b"]},
            ],
        },
    ):
        with pytest.raises(UnsupportedConstraint, match="oneOf at /"):
            lower_json_schema(JsonSchema(schema))


DEPENDENCY_CASES = [
    {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "properties": {"card": {"type": "string"}, "address": {"type": "string"}, "n": {}},
        "dependencies": {"card": ["address"], "n": {"required": ["card"]}},
    },
    {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "dependentRequired": {"a": ["b"]},
        "dependentSchemas": {"b": {"properties": {"a": {"minimum": 5}}}},
    },
    {  # members only the dependencies name (declared after the schema's own)
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "properties": {"a": {"type": "integer"}},
        "dependentRequired": {"a": ["b"]},
        "dependentSchemas": {"c": {"properties": {"a": {"minimum": 5}}, "maxProperties": 2}},
    },
]


@pytest.mark.parametrize("schema", DEPENDENCY_CASES)
def test_dependencies_as_choices_of_presence(schema):
    """``dependencies`` (drafts 4-7), ``dependentRequired`` and
    ``dependentSchemas``: a member is absent, or present with what it asks.
    Judged by the ``jsonschema`` validator of the schema's draft on every
    subset of the members, with values inside and outside their schemas."""
    import itertools

    named = [
        n
        for key in ("dependencies", "dependentRequired", "dependentSchemas")
        for name, dep in schema.get(key, {}).items()
        for n in [name, *(dep if isinstance(dep, list) else dep.get("required", []))]
    ]
    names = list(dict.fromkeys([*schema["properties"], *named]))
    values = [1, 7, "x"]
    instances = [
        dict(zip(members, chosen, strict=True))
        for k in range(len(names) + 1)
        for members in itertools.combinations(names, k)
        for chosen in itertools.product(values, repeat=k)
    ]
    verdicts = judged_by_the_validator(schema, [*instances, 3])  # (3: objects only)
    assert any(verdicts) and not all(verdicts)


DRAFT_7 = "http://json-schema.org/draft-07/schema#"


@pytest.mark.parametrize(
    "schema",
    [
        {"$schema": DRAFT_7, "items": [False], "anyOf": [{"enum": [[1], []]}]},
        {
            "$schema": DRAFT_7,
            "items": [{"type": "string"}],
            "additionalItems": False,
            "anyOf": [{"items": [True, {"type": "integer"}]}, {"type": "null"}],
        },
        {"$schema": DRAFT_7, "items": {"type": "string"}, "allOf": [{"items": [True, True]}]},
    ],
)
def test_positional_items_merged_in_the_draft_s_own_spelling(schema):
    """Draft 7's list form of ``items`` merged into a union's branches: the
    merge wrote ``prefixItems``, which draft 7's validator ignores when it
    judges the branch's listed values, so ``[1]`` was let through beside
    ``items: [false]``. Judged by the validator, element by element."""
    judged_by_the_validator(schema, [[], [1], ["a"], ["a", 1], ["a", "b"], [1, 1], None, 3])


def test_prefix_items_is_refused_in_drafts_without_it():
    """``prefixItems`` before 2020-12 is no keyword (the validator ignores
    it): refused by name rather than ignored, as ``dependencies`` under
    2020-12 is (it was applied as 2020-12 does)."""
    for meta in (DRAFT_7, "https://json-schema.org/draft/2019-09/schema"):
        schema = {"$schema": meta, "prefixItems": [False]}
        with pytest.raises(UnsupportedConstraint, match="prefixItems at /: not a keyword"):
            lower_json_schema(JsonSchema(schema))
    _, accepts = language({"prefixItems": [False]})  # (2020-12: its keyword)
    assert accepts("[]") and not accepts("[1]")


DRAFT_4 = "http://json-schema.org/draft-04/schema#"


@pytest.mark.parametrize(
    ("meta", "body", "keyword"),
    [
        (DRAFT_4, {"if": {"type": "string"}, "then": {"type": "integer"}}, "if"),
        ("http://json-schema.org/draft-06/schema#", {"if": {"type": "string"}, "else": {}}, "if"),
        (DRAFT_4, {"const": 1}, "const"),
        (DRAFT_4, {"items": {"contains": {"type": "string"}}}, "contains"),
        (DRAFT_4, {"propertyNames": {"maxLength": 1}}, "propertyNames"),
        (DRAFT_7, {"unevaluatedProperties": False}, "unevaluatedProperties"),
        (DRAFT_7, {"contains": {"type": "string"}, "minContains": 2}, "minContains"),
        (None, {"$defs": {"x": {"dependencies": {"a": ["b"]}}}}, "dependencies"),
        # (inside a dependency's schema too: the index once skipped those)
        (
            DRAFT_7,
            {"dependencies": {"a": {"properties": {"a": {"unevaluatedProperties": False}}}}},
            "unevaluatedProperties",
        ),
        # (in the definitions beside a root $ref, which up to draft 7 the
        # reference index does not walk: applied, so {"a": 1} was refused,
        # found by a longer run of test_differential's draft-7 schemas)
        (
            DRAFT_7,
            {
                "definitions": {"x": {"anyOf": [{"unevaluatedProperties": False}]}},
                "$ref": "#/definitions/x",
            },
            "unevaluatedProperties",
        ),
        (
            DRAFT_7,
            {"definitions": {"x": {"prefixItems": [{}]}}, "$ref": "#/definitions/x"},
            "prefixItems",
        ),
        # (a schema reached only by a reference, under an unknown keyword)
        (DRAFT_4, {"x-types": {"a": {"const": 1}}, "items": {"$ref": "#/x-types/a"}}, "const"),
    ],
)
def test_a_keyword_of_another_draft_is_refused_by_name(meta, body, keyword):
    """The draft's validator ignores a keyword its draft lacks, and the
    lowering applied it (draft 4's ``const: 1`` was the one value 1 where
    every value is valid): refused wherever it stands, naming it."""
    import jsonschema

    schema = {**({"$schema": meta} if meta else {}), **body}
    with pytest.raises(UnsupportedConstraint, match=f"{keyword} at .*not a keyword"):
        lower_json_schema_ir(JsonSchema(schema))
    if keyword == "const":
        assert jsonschema.Draft4Validator(schema).is_valid(2)  # (what applying it got wrong)


DRAFT_2019 = "https://json-schema.org/draft/2019-09/schema"


@pytest.mark.parametrize(
    "schema",
    [
        # (2019-09's tuple form of items: the elements past it are unevaluated)
        {"$schema": DRAFT_2019, "items": [{"type": "string"}], "unevaluatedItems": False},
        # (additionalItems applies beside a tuple form only: ignored here)
        {"$schema": DRAFT_2019, "additionalItems": {"type": "number"},
         "unevaluatedItems": {"type": "string"}},
        {"additionalItems": False, "unevaluatedItems": {"type": "string"}},
        # (where something evaluates every element, unevaluatedItems is moot)
        {"$schema": DRAFT_2019, "items": [{"type": "string"}], "additionalItems": True,
         "unevaluatedItems": False},
        {"$schema": DRAFT_2019, "items": {"type": "string"}, "unevaluatedItems": False},
        {"prefixItems": [{"type": "string"}], "unevaluatedItems": {"type": "number"}},
    ],
)  # fmt: skip
def test_unevaluated_items_are_those_no_items_keyword_evaluates(schema):
    """``unevaluatedItems`` applies to the elements past ``prefixItems`` or
    a tuple form of ``items`` where no ``additionalItems`` takes them, and
    to every element where neither evaluates any: it was dropped beside a
    tuple form of ``items`` and beside an ``additionalItems`` that applies
    to nothing, so ``["foo", "bar"]`` passed the first schema (found by
    the JSON Schema Test Suite's 2019-09 cases, which ``jsonschema``'s
    source distribution carries)."""
    judged_by_the_validator(
        schema, [[], ["foo"], ["foo", "bar"], ["foo", 1], [1], [1, 2], ["a", "b", 3]]
    )


ANNOTATED = {"title": "t", "x-schemas": [{"type": "null"}]}


@pytest.mark.parametrize(
    "schema",
    [
        {"anyOf": [{"not": ANNOTATED}, {"type": "null"}]},
        {"properties": {"a": {"not": {"examples": [1]}}}},
        {"oneOf": [{"not": {"description": "d"}}, {"type": "string"}]},
        {"$defs": {"x": ANNOTATED}, "anyOf": [{"not": {"$ref": "#/$defs/x"}}, {"enum": [1]}]},
        # (the JSON Schema Test Suite's optional unknownKeyword case: an
        # $id inside an unknown keyword is no identifier)
        {
            "$defs": {
                "unknown": {"not": {"array_of_schemas": [{"$id": "https://h/x.json",
                                                          "type": "null"}]}},
                "real": {"$id": "https://h/x.json", "type": "string"},
            },
            "anyOf": [{"$ref": "#/$defs/unknown"}, {"$ref": "https://h/x.json"}],
        },
    ],
)  # fmt: skip
def test_not_of_annotations_admits_no_value(schema):
    """A ``not`` of a schema with annotations or unknown keywords only (which
    takes every value, as ``{}`` does) admits none: only ``{}`` itself was
    read so, the others were dropped, so ``{"not": {"description": "x"}}``
    took every value (found by the JSON Schema Test Suite's optional cases,
    from ``jsonschema``'s source distribution)."""
    judged_by_the_validator(schema, [None, 1, 1.5, "a", [], {}, {"a": 1}, {"a": None}, True])
    for alone in ({"not": ANNOTATED}, {"type": "integer", "not": {"title": "t"}}):
        with pytest.raises(ConstraintError, match="no JSON value satisfies"):
            lower_json_schema_ir(JsonSchema(alone))


def test_keywords_of_the_draft_and_those_ignored_alike_still_lower():
    """``minContains`` is 2019-09's (the validator reads it inside
    ``contains``), ``const`` draft 6's; ``additionalItems`` in 2020-12 is
    ignored by the validator and the lowering alike."""
    judged_by_the_validator(
        {
            "$schema": "https://json-schema.org/draft/2019-09/schema",
            "contains": {"const": 1},
            "minContains": 2,
        },
        [[1], [1, 1], [1, 2, 1], []],
    )
    judged_by_the_validator(
        {"$schema": "http://json-schema.org/draft-06/schema#", "const": 1}, [1, 2, "a"]
    )
    judged_by_the_validator(
        {"additionalItems": False, "items": {"type": "integer"}}, [[1, 2], ["a"]]
    )


def test_draft_4_s_exclusive_flags_are_its_keywords():
    """Draft 4's ``exclusiveMinimum``/``exclusiveMaximum`` are flags its
    validator reads inside ``minimum``/``maximum`` (not keywords of its own
    in ``jsonschema``'s table): they were refused as another draft's."""
    judged_by_the_validator(
        {"$schema": DRAFT_4, "type": "number", "minimum": 5, "exclusiveMinimum": True,
         "maximum": 7, "exclusiveMaximum": False},
        [4, 5, 5.5, 7, 7.5, "a"],
    )  # fmt: skip
    judged_by_the_validator(
        {"$schema": DRAFT_4, "items": {"maximum": 0, "exclusiveMaximum": True}}, [[-1], [0], []]
    )


@pytest.mark.parametrize(
    "body",
    [
        {"allOf": [{"minimum": 1.0}, {"minimum": 0.5, "exclusiveMinimum": True}]},
        {"allOf": [{"minimum": 1, "exclusiveMinimum": True}, {"minimum": 1}]},
        {"allOf": [{"minimum": 1, "exclusiveMinimum": False},
                   {"minimum": 0.5, "exclusiveMinimum": True}]},
        {"allOf": [{"maximum": 2}, {"maximum": 3, "exclusiveMaximum": True},
                   {"minimum": 0.5, "exclusiveMinimum": True}]},
        {"minimum": 1, "allOf": [{"maximum": 2, "exclusiveMaximum": True}]},
    ],
)  # fmt: skip
def test_draft_4_s_flagged_bounds_merge_with_their_own_bound(body):
    """An ``allOf`` merges keyword by keyword: ``{"minimum": 1}`` and
    ``{"minimum": 0.5, "exclusiveMinimum": true}`` became ``minimum: 1``
    with the other's flag, so ``1`` was refused (found by an unseeded run
    of test_differential's draft-4 schemas). Such bounds are merged as
    numbers now."""
    judged_by_the_validator({"$schema": DRAFT_4, **body}, [0, 0.5, 0.7, 1, 1.5, 2, 3, None])


@pytest.mark.parametrize(
    "body",
    [
        {"oneOf": [{"enum": [0]}, {"anyOf": [{"enum": [0]}, {"type": "null"}]}]},
        {"oneOf": [{"enum": [0, 2]}, {"anyOf": [{"enum": [2, 3]}, {"type": "boolean"}]}]},
        {"oneOf": [{"enum": [1, 4]}, {"anyOf": [{"minimum": 2, "maximum": 5}, {"type": "null"}]}]},
    ],
)
def test_a_draft_4_oneof_judged_with_its_own_bounds(body):
    """The ways a number fails listed values or bounds are the lowering's
    own schemas, with exclusive bounds as numbers (draft 6 on); a draft-4
    validator judging the listed values beside them read those numbers as
    flags and no bound, so in draft 4 ``0`` passed both branches' ``enum``
    and was taken (found by an unseeded run of the differential test in
    draft 4's words). The validator now gets them as draft 4 writes them."""
    judged_by_the_validator({"$schema": DRAFT_4, **body}, [0, 1, 1.5, 2, 3, 4, 5, None, True])


def test_dependencies_still_refused():
    """``dependencies`` under draft 2020-12 (no ``$schema``) is not a
    keyword there: refused by name rather than ignored. More than six
    members with dependencies, dependent schemas that name members through
    a reference, and undeclared members beside ``patternProperties`` are
    refused too."""
    schema = {"properties": {"a": {}}, "dependencies": {"a": ["b"]}}
    with pytest.raises(UnsupportedConstraint, match="dependencies at /: not a keyword"):
        lower_json_schema(JsonSchema(schema))
    draft7 = "http://json-schema.org/draft-07/schema#"
    many = {
        "$schema": draft7,
        "properties": {name: {} for name in "abcdefgz"},
        "dependencies": {name: ["z"] for name in "abcdefg"},
    }
    with pytest.raises(UnsupportedConstraint, match="more than 6 members"):
        lower_json_schema(JsonSchema(many))
    applicator = {  # (a reference in a branch: the members it names are not read)
        "$schema": draft7,
        "definitions": {"x": {"properties": {"y": {"type": "integer"}}}},
        "properties": {"a": {}},
        "dependencies": {"a": {"anyOf": [{"$ref": "#/definitions/x"}, {"required": ["z"]}]}},
    }
    with pytest.raises(UnsupportedConstraint, match="name other members"):
        lower_json_schema(JsonSchema(applicator))
    patterned = {
        "$schema": draft7,
        "properties": {"a": {}},
        "patternProperties": {"^x": {"type": "integer"}},
        "dependencies": {"a": ["b"]},
    }
    with pytest.raises(UnsupportedConstraint, match="patternProperties"):
        lower_json_schema(JsonSchema(patterned))


NOT_REQUIRED_CASES = [
    {"not": {"required": ["a"]}},
    {"type": ["object", "integer"], "not": {"required": ["a"]}},
    {"required": ["a"], "not": {"required": ["a"]}},
    {"properties": {"a": {}, "b": {}}, "not": {"required": ["a", "b"]}},
    {"required": ["a"], "not": {"allOf": [{"required": ["a"]}, {"required": ["b"]}]}},
    {"type": "integer", "not": {"required": ["a"]}},
]


@pytest.mark.parametrize("schema", NOT_REQUIRED_CASES)
def test_not_required_is_the_objects_lacking_a_name(schema):
    """``required`` holds for every value that is not an object, so ``not``
    of it rejects them all (the lowering once kept them) and takes the
    objects lacking one of the names. Judged by the validator on objects
    with every subset of the names and on values of the other types."""
    import itertools

    import jsonschema

    instances = [5, "x", None, [], True]
    instances += [dict.fromkeys(m, 1) for k in range(3) for m in itertools.combinations("ab", k)]
    if not any(map(jsonschema.Draft202012Validator(schema).is_valid, instances)):
        with pytest.raises(ConstraintError, match="no JSON value"):
            lower_json_schema(JsonSchema(schema))
        return
    judged_by_the_validator(schema, instances)


def test_flexible_whitespace_is_bounded():
    schema = {"type": "array", "items": {"type": "integer"}}
    _, ok = language(schema, whitespace="flexible", max_whitespace=2)
    assert ok("[ 1 ,  2 ]") and ok(" [1,2] ") and ok("[\n\t1]")
    assert not ok("[   1]")
    _, compact = language(schema)
    assert compact("[1,2]") and not compact("[1, 2]")


def test_enum_and_const_values_in_their_equal_spellings():
    _, ok = language({"enum": [1, "a", {"x": 1.5}, [None, True]]})
    for text in ["1", "1.0", '"a"', '{"x":1.5}', '{"x":1.50}', "[null,true]"]:
        assert ok(text), text
    for text in ["2", '"b"', '{"x":1.6}', "[true,null]", "true"]:
        assert not ok(text), text
    _, ok = language({"type": "string", "enum": ["a", 1, "b"], "maxLength": 1})
    assert ok('"a"') and not ok("1")


def test_all_of_merges_and_respects_each_sides_additional_properties():
    schema = {
        "allOf": [
            {"properties": {"a": {"type": "integer"}}, "additionalProperties": False},
            {"properties": {"b": {"type": "integer"}}, "required": ["a"]},
        ]
    }
    _, ok = language(schema)
    assert ok('{"a":1}')
    assert not ok('{"a":1,"b":2}')  # b is additional for the first branch
    schema = {"allOf": [{"type": "integer"}, {"minimum": 3}, {"maximum": 5}]}
    _, ok = language(schema)
    assert [ok(str(i)) for i in range(1, 8)] == [False, False, True, True, True, False, False]


def test_arrays_prefix_items_and_counts():
    schema = {
        "type": "array",
        "prefixItems": [{"type": "string"}, {"type": "integer"}],
        "items": False,
        "minItems": 1,
    }
    _, ok = language(schema)
    assert ok('["a"]') and ok('["a",1]')
    assert not ok("[]") and not ok('["a",1,2]') and not ok("[1]")
    _, ok = language({"type": "array", "items": {"type": "null"}, "minItems": 2, "maxItems": 3})
    assert [ok("[" + ",".join(["null"] * n) + "]") for n in range(5)] == [
        False,
        False,
        True,
        True,
        False,
    ]


def test_unsupported_names_keyword_and_pointer():
    cases = {
        "uniqueItems at /properties/x": {
            "properties": {"x": {"type": "array", "uniqueItems": True}}
        },
        "dependentSchemas at /": {
            "patternProperties": {"^x": {}},
            "dependentSchemas": {"a": {"required": ["b"]}},
        },
        "$ref 'http://example.com/s.json' at /properties/r": {
            "properties": {"r": {"$ref": "http://example.com/s.json"}}
        },
    }
    for construct, schema in cases.items():
        with pytest.raises(UnsupportedConstraint) as info:
            lower_json_schema(JsonSchema(schema))
        assert info.value.construct == construct


def test_false_and_impossible_schemas_are_refused_as_the_empty_language():
    for schema in [False, {"allOf": [{"type": "string"}, {"type": "integer"}]}, {"not": {}}]:
        with pytest.raises(ConstraintError, match="no JSON value satisfies") as info:
            lower_json_schema(JsonSchema(schema))
        assert info.value.where == "#"


def test_a_ref_to_false_with_siblings_admits_nothing():
    """A 2020-12 ``$ref`` whose target admits nothing, with keywords beside
    it: the merge is ``false`` (an AttributeError once, reading it as a
    dict), so the whole schema is refused as empty and, as a branch, drops
    out of its union."""
    empty = {"$defs": {"x": False}, "type": "null", "$ref": "#/$defs/x"}
    with pytest.raises(ConstraintError, match="no JSON value satisfies"):
        lower_json_schema(JsonSchema(empty))
    union = {
        "$defs": {"x": False},
        "anyOf": [{"type": "null", "$ref": "#/$defs/x"}, {"const": 1}],
    }
    _, accepts = language(union)
    assert accepts("1") and not accepts("null")


NOT_STRING_CASES = [
    ({"not": {"pattern": "a"}}, ["bcd", "", "xa", 1, None, "é", [], {"a": 1}]),
    ({"type": "string", "not": {"pattern": "^a*$"}}, ["", "aa", "ab", "b", "ba"]),
    (
        {"type": ["string", "integer"], "not": {"type": "string", "maxLength": 2}},
        ["abc", "ab", 5, "", True],
    ),
    ({"type": "string", "maxLength": 5, "not": {"minLength": 3}}, ["ab", "abc", "", "abcdef"]),
    (
        {"allOf": [{"not": {"pattern": "^a"}}, {"not": {"pattern": "b$"}}]},
        ["c", "ab", "cb", "ca", 2],
    ),
    (
        {"type": "object", "properties": {"x": {"not": {"pattern": "ghlint|plugin"}}}},
        [{"x": "abc"}, {"x": "myplugin"}, {}, {"x": 3}],
    ),
    # a list of strings: every other value is outside it, typed or not
    ({"not": {"enum": ["a", "b"]}}, ["a", "b", "c", "", 1, None, True, [], ["a"], {"a": 1}]),
    ({"type": ["string", "integer"], "not": {"const": "x"}}, ["x", "y", 3, None]),
]


@pytest.mark.parametrize(("schema", "instances"), NOT_STRING_CASES)
def test_not_of_string_keywords_is_the_strings_that_fail_them(schema, instances):
    """``not`` of a schema of ``pattern``/``minLength``/``maxLength`` alone (or
    with ``type: string``): its strings fail them, and without a type no
    other value passes (every non-string satisfies those keywords); ``not``
    of a list of strings: the other strings and every other value. Both
    directions judged by the ``jsonschema`` validator."""
    import json

    import jsonschema

    _, accepts = language(schema)
    validator = jsonschema.Draft202012Validator(schema)
    for instance in instances:
        text = json.dumps(instance, ensure_ascii=False, separators=(",", ":"))
        assert accepts(text) == validator.is_valid(instance), (schema, text)


FINITE_CASES = [
    (
        {
            "allOf": [
                {"enum": [1, 2, 3, "a", [1], {"a": 1}]},
                {"not": {"type": "integer", "minimum": 2}},
            ]
        },
        [1, 2, 3, "a", [1], {"a": 1}, 4, "b", 1.0],
    ),
    (
        {"enum": [{"a": 1}, {"a": 1, "b": 2}, {"b": 2}, {}], "dependentRequired": {"a": ["b"]}},
        [{"a": 1}, {"a": 1, "b": 2}, {"b": 2}, {}, {"a": 2, "b": 2}],
    ),
    (
        {"enum": ["x", "yy", 3, None], "if": {"type": "string"}, "then": {"minLength": 2}},
        ["x", "yy", 3, None, "zz", 4],
    ),
    (
        {"enum": [[1, 1], [1, 2], [], [True, 1]], "uniqueItems": True},
        [[1, 1], [1, 2], [], [True, 1], [2, 2], [1]],
    ),
    (
        {
            "type": "object",
            "properties": {"p": {"allOf": [{"const": 1}, {"not": {"multipleOf": 2}}]}},
            "additionalProperties": {"allOf": [{"enum": [1, 2]}, {"not": {"const": 1}}]},
        },
        [{"p": 1}, {"p": 2}, {"q": 2}, {"q": 1}, {}, {"p": 1, "q": 2}],
    ),
    (
        {
            "$defs": {"small": {"maximum": 1}},
            "enum": [0, 1, 2, "s"],
            "not": {"$ref": "#/$defs/small"},
        },
        [0, 1, 2, "s", 3],
    ),
]


@pytest.mark.parametrize(("schema", "instances"), FINITE_CASES)
def test_a_schema_that_lists_its_values_is_decided_value_by_value(schema, instances):
    """``enum``/``const`` beside (or in an ``allOf`` branch with) keywords the
    lowering cannot express otherwise (``not``, ``if``, ``dependentRequired``,
    ``uniqueItems``): the language is the listed values the whole schema
    accepts. Judged by the ``jsonschema`` validator on the listed values and
    on values next to them."""
    import json

    import jsonschema

    _, accepts = language(schema)
    validator = jsonschema.Draft202012Validator(schema)
    verdicts = []
    for instance in instances:
        text = json.dumps(instance, ensure_ascii=False, separators=(",", ":"))
        assert accepts(text) == validator.is_valid(instance), (schema, text)
        verdicts.append(validator.is_valid(instance))
    assert any(verdicts) and not all(verdicts)  # (each case has both kinds)


def test_a_list_beside_a_ref_that_the_draft_ignores_lists_nothing():
    """Drafts up to 7 ignore the keywords beside ``$ref``: an ``enum`` there
    does not make the schema finite (a MaskBench schema's valid document
    was rejected when it did)."""
    import json

    import jsonschema

    schema = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "definitions": {"secret": {"type": "object", "properties": {"key": {"type": "string"}}}},
        "type": "object",
        "properties": {
            "s": {"$ref": "#/definitions/secret", "enum": ["key", "sas"]},
            "t": {"$ref": "#/definitions/secret", "allOf": [{"enum": [{}]}]},
        },
    }
    _, accepts = language(schema)
    validator = jsonschema.Draft7Validator(schema)
    for instance in [{"s": {"key": "k"}}, {"s": {}}, {"s": "key"}, {"t": {"key": "k"}}, {"t": {}}]:
        text = json.dumps(instance, separators=(",", ":"))
        assert accepts(text) == validator.is_valid(instance), text


def test_listed_values_none_of_which_pass_are_the_empty_language():
    schema = {"allOf": [{"enum": [1, 2]}, {"not": {"type": "integer"}}]}
    with pytest.raises(ConstraintError, match="no JSON value satisfies"):
        lower_json_schema(JsonSchema(schema))


NOT_BY_TYPE_CASES = [
    ({"not": {"type": ["string", "null"], "pattern": "a"}}, ["a", "b", None, 1, [], {}]),
    ({"not": {"pattern": "a", "minimum": 3}}, ["a", "b", 2, 3, 4.5, -1, None, ["a"]]),
    ({"not": {"minimum": 1, "exclusiveMaximum": 5}}, [0, 1, 4.99, 5, 7, "a"]),
    ({"not": {"enum": [1, 2.5, "x", None]}}, [1, 1.0, 2.5, 2, -3, 0.5, "x", "y", None, True]),
    (
        {"not": {"type": "array", "items": {"type": "string"}, "minItems": 1}},
        [[], ["a"], ["a", 1], [1], [None, "b"], "x", None],
    ),
    (
        {
            "not": {
                "type": "object",
                "required": ["a"],
                "properties": {"a": {"type": "string"}, "b": {"enum": [1, 2.5]}},
                "maxProperties": 2,
            }
        },
        [{}, {"a": 1}, {"a": "x"}, {"a": "x", "b": 2.5}, {"a": "x", "b": 3},
         {"a": "x", "b": 1, "c": 0}, {"b": 1}, 5, []],
    ),
    (
        {"type": "object", "properties": {"x": {"not": {"type": "number", "minimum": 0}}}},
        [{"x": -1}, {"x": 0}, {"x": 2.5}, {"x": "s"}, {}],
    ),
    # integers: the other numbers are those with a non-zero fraction digit
    ({"not": {"type": "integer", "minimum": 0}}, [-1, 0, 3, 2.5, -0.5, 1.0, "s", None]),
    ({"type": "number", "not": {"type": "integer"}}, [1, 1.0, 1.5, -0.25, 0, "x"]),
    (
        {"$schema": "http://json-schema.org/draft-04/schema#", "not": {"type": "integer"}},
        [1, 1.0, 1.5, -2, 0, "x"],
    ),
    # found by test_differential: strings outside a list beside other keywords
    # (once lowered as no string at all), a double negation, merged members
    ({"pattern": "a", "not": {"const": "ab"}}, ["a", "ab", "b", "cab", 2]),
    ({"minimum": 0, "not": {"const": ""}}, ["a", "", 1, -1, None]),
    ({"not": {"not": {"required": ["b"]}}}, [{"a": 1, "b": 2}, {"a": 1}, {}, 3]),
    ({"not": {"allOf": [{"type": "null"}, {"required": ["b"]}]}}, [{"a": 1, "b": 2}, None, 1]),
    # unions: the values failing every branch (and those failing the keywords beside them)
    (
        {"not": {"anyOf": [{"type": "string"}, {"minimum": 2}]}},
        ["a", 2, 3.5, 1, -1.5, None, [], {}],
    ),
    (
        {"$defs": {"pos": {"type": "integer", "minimum": 1}},
         "not": {"oneOf": [{"$ref": "#/$defs/pos"}, {"type": "string", "maxLength": 2}]}},
        [1, 7, 0, -1, 1.5, "ab", "abc", "", None, [1]],
    ),
    (
        {"not": {"type": "object", "required": ["a"],
                 "anyOf": [{"properties": {"a": {"type": "string"}}},
                           {"allOf": [{"properties": {"a": {"type": "number", "maximum": 0}}}]}]}},
        [{"a": "x"}, {"a": -1}, {"a": 1}, {"a": None}, {}, {"b": 1}, {"b": 1, "a": 2}, 3, "s"],
    ),
    (
        {"type": "object", "properties": {"id": {"type": "integer"}},
         "not": {"anyOf": [{"required": ["b"], "properties": {"b": {"type": "string"}}},
                           {"required": ["c"], "properties": {"c": {"const": 1}}}]}},
        [{}, {"id": 1}, {"b": "s"}, {"b": 2}, {"c": 1}, {"c": 2}, {"z": 0, "c": 2},
         {"z": 0, "b": 1, "c": 2}, {"id": 1, "z": 0, "c": 1}],
    ),
]  # fmt: skip


@pytest.mark.parametrize(("schema", "instances"), NOT_BY_TYPE_CASES)
def test_not_is_the_values_failing_one_keyword_of_their_type(schema, instances):
    """``not`` of type-wise keywords: every value of a type the schema does
    not take, strings failing its string keywords, numbers outside its
    bounds or between its listed numbers, arrays too short or holding an
    element that fails ``items``, objects lacking a required member or with
    a member that fails its subschema. Judged by the ``jsonschema``
    validator."""
    verdicts = judged_by_the_validator(schema, instances)
    assert any(verdicts) and not all(verdicts)


CONTAINS_CASES = [
    ({"type": "array", "contains": {"const": "a"}, "minItems": 3},
     [["a"], ["a", 1, 2], [1, 2, 3], [1, "a", 2, 3], []]),
    ({"type": "array", "items": {"type": "integer"}, "contains": {"minimum": 5},
      "minItems": 2, "maxItems": 3},
     [[5], [5, 1], [1, 5], [1, 2], [1, 2, 5], [1, 2, 3, 5], [6, 7, 8], [5, "x"]]),
    ({"contains": {"type": "string"}, "minContains": 2, "maxContains": 3},
     [["a"], ["a", "b"], ["a", 1, "b"], ["a", "b", "c", "d"], [1, "a", 2, "b", 3], 5]),
    ({"contains": {"type": "null"}, "minContains": 0, "maxContains": 1},
     [[], [None], [None, None], [1, 2], [1, None, 2, None], "x"]),
]  # fmt: skip


@pytest.mark.parametrize(("schema", "instances"), CONTAINS_CASES)
def test_contains_counts_matching_elements(schema, instances):
    """``contains`` with ``minContains``/``maxContains`` and item counts,
    judged by the ``jsonschema`` validator."""
    verdicts = judged_by_the_validator(schema, instances)
    assert any(verdicts) and not all(verdicts)


def test_contains_beside_positional_items_is_refused():
    for schema in [
        {"prefixItems": [{"type": "string"}], "contains": {"type": "integer"}},
        {"contains": {"type": "integer"}, "minContains": 2, "maxItems": 4},
    ]:
        with pytest.raises(UnsupportedConstraint, match="contains"):
            lower_json_schema(JsonSchema(schema))


def test_a_double_negation_of_a_boolean_schema():
    """``not: {not: true}`` is every value, ``not: {not: false}`` none (it
    once raised an AttributeError)."""
    _, accepts = language({"not": {"not": True}})
    assert accepts("1") and accepts('"a"') and accepts("{}")
    with pytest.raises(ConstraintError, match="no JSON value"):
        lower_json_schema(JsonSchema({"not": {"not": False}}))
    with pytest.raises(UnsupportedConstraint, match="not"):  # (a way that is a bool: no type)
        lower_json_schema(JsonSchema({"not": {"anyOf": [{"not": True}]}}))


def test_a_decided_condition_applies_all_of_its_branch():
    """``if: true`` picks ``then``, whose ``allOf`` (or ``$ref``) is lowered
    too: it was merged in past the step that handles them, and ignored."""
    schema = {"if": True, "then": {"allOf": [{"additionalProperties": False}]}}
    assert judged_by_the_validator(schema, [{}, {"a": 1}, 1, "s"]) == [True, False, True, True]


def test_patterns_beside_another_member_s_additional_properties_are_refused():
    """In ``allOf``, one member's ``additionalProperties`` holds for the names
    the other's ``patternProperties`` match; merged into one schema, the
    patterns would exempt them (``{"a": 1}`` accepted). Refused, not merged."""
    schema = {"allOf": [{"patternProperties": {"^a": {}}}, {"additionalProperties": False}]}
    with pytest.raises(UnsupportedConstraint, match="patternProperties"):
        lower_json_schema(JsonSchema(schema))


def test_a_negated_union_of_a_double_negation_is_not_split_by_type():
    """``not: {not: {type: [...]}}`` fails in one way that lists types; split
    by JSON type it matched none, and the union's negation lost the nulls
    (``null`` refused here). Refused now: no way of one type."""
    schema = {"if": {"anyOf": [{"not": {"type": ["null"]}}]}, "then": {"type": "boolean"}}
    with pytest.raises(UnsupportedConstraint, match="if/then/else"):
        lower_json_schema(JsonSchema(schema))


def test_not_of_a_union_is_an_unambiguous_grammar():
    """The ways a value fails ``{..., "anyOf": [...]}`` are disjoint: those
    failing the keywords beside the union, and those passing them that fail
    every branch. So LR parsers take the grammar (ways that overlapped, an
    object of two members lacking both names here, are an LALR conflict)."""
    from constrain_api import lalr_table, lower

    schema = {"not": {"type": "object", "maxProperties": 1,
                      "anyOf": [{"required": ["a"]}, {"required": ["b"]}]}}  # fmt: skip
    reduced = lower(JsonSchema(schema)).reduce()
    lalr_table(reduced.rules, reduced.names, reduced.start, backend="test")  # no conflict
    judged_by_the_validator(schema, [{}, {"c": 1}, {"a": 1}, {"b": 1}, {"c": 1, "d": 2}, 5])


def test_not_of_other_schemas_is_still_refused():
    """Negations with no type-wise form: a multiple, a closed object's other
    names, a ``oneOf`` whose branches overlap (a value matching both fails
    it), non-integral numbers within bounds."""
    for schema in [
        {"not": {"multipleOf": 3}},
        {"not": {"type": "object", "additionalProperties": False}},
        {"not": {"oneOf": [{"type": "number"}, {"type": "integer"}]}},
        {"minimum": 0, "not": {"type": "integer"}},
    ]:
        with pytest.raises(UnsupportedConstraint) as info:
            lower_json_schema(JsonSchema(schema))
        assert info.value.construct.startswith("not"), info.value.construct


def test_naive_backend_compiles_json_schema_through_the_lowering():
    from constrain_conformance.corpus import small_vocabulary

    vocab = small_vocabulary()
    compiled = get("naive").compile(JsonSchema(CLOSED), vocab)
    assert compiled.spec == JsonSchema(CLOSED)
    checker = compiled.checker()
    ids = vocab.encode('{"a":7,"b":"ok"}')
    checker.update(ids)
    assert checker.is_accepting()


def test_huge_bounds_hit_a_limit_not_a_hang():
    spec = JsonSchema({"type": "string", "maxLength": 10_000_000})
    with pytest.raises(CompileLimitExceeded):
        get("naive").compile(spec, _tiny_vocab())


def _tiny_vocab():
    from constrain_api import Vocabulary

    return Vocabulary.from_list([bytes([b]) for b in range(256)] + [b"<eos>"], eos=[256])


def test_one_of_over_strings_is_exact_by_automata():
    schema = {"type": "string", "oneOf": [{"pattern": "^[0-9a-f]+$"}, {"pattern": "^[0-9A-F]+$"}]}
    lowered, ok = language(schema)
    assert isinstance(lowered, Node)
    assert ok('"ab12"') and ok('"AB12"') and ok('"f"')
    assert not ok('"1234"')  # matches both branches: not exactly one
    assert not ok('"aB"') and not ok('""')


def test_pattern_properties_regions_and_open_additional_members():
    schema = {
        "type": "object",
        "properties": {"id": {"type": "integer"}},
        "patternProperties": {"^x-": {"type": "string"}, "y$": {"type": "boolean"}},
    }
    lowered, ok = language(schema)
    assert isinstance(lowered, GrammarIR)  # other names take any JSON value
    assert ok('{"id":1,"x-a":"s","by":true,"other":[1]}')
    assert ok('{"x-y":"s"}') is False  # both patterns: string and boolean at once
    assert not ok('{"x-a":1}') and not ok('{"by":"s"}')
    assert not ok('{"id":1,"id":2}')  # a declared name never counts as additional
    _, ok = language(dict(schema, additionalProperties=False))
    assert ok('{"x-a":"s"}') and not ok('{"other":1}')


def test_member_counts_with_optional_members():
    schema = {
        "type": "object",
        "properties": {"a": {}, "b": {}, "c": {}},
        "minProperties": 1,
        "maxProperties": 2,
        "additionalProperties": False,
    }
    _, ok = language(schema)
    assert not ok("{}") and ok('{"a":1}') and ok('{"b":[],"c":{}}')
    assert not ok('{"a":1,"b":1,"c":2}')
    _, ok = language(
        {"type": "object", "properties": {"a": {}}, "required": ["a"], "minProperties": 2}
    )
    assert not ok('{"a":1}') and ok('{"a":1,"x":2}') and ok('{"a":1,"x":2,"y":3}')


def test_enum_deduplication_keys_agree_with_json_equality():
    """``values.enum_values`` dedups by a hashable key (linear, was quadratic): the
    key must be equal exactly when the values are JSON-equal."""
    import itertools
    import random

    from constrain_api.jsonschema.values import json_equal, json_key

    rng = random.Random(7)
    atoms = [0, 1, 1.0, -0.0, 2.5, True, False, None, "1", "", "a"]

    def value(depth):
        r = rng.random()
        if depth > 2 or r < 0.5:
            return rng.choice(atoms)
        if r < 0.75:
            return [value(depth + 1) for _ in range(rng.randrange(3))]
        return {rng.choice("ab"): value(depth + 1) for _ in range(rng.randrange(3))}

    values = [value(0) for _ in range(300)] + atoms
    for a, b in itertools.product(values[:120], values[:120]):
        assert (json_key(a) == json_key(b)) == json_equal(a, b), (a, b)
    duplicated = {"enum": [1, 1.0, True, [1], [1.0], {"a": 1}, {"a": 1.0}, "x", "x"]}
    once = {"enum": [1, True, [1], {"a": 1}, "x"]}
    assert lower_json_schema(JsonSchema(duplicated)) == lower_json_schema(JsonSchema(once))


def _canonical(ir: GrammarIR):
    """The reduced rules with each terminal replaced by its minimal DFA
    (canonically numbered): equal for grammars that differ only in names.
    The DFAs are built from each terminal's own AST (``Terminal.ast``: the
    lowering's composed one, or the pattern parsed), not read from the
    cache keyed by pattern text."""
    import hashlib

    from constrain_api.lowering import reduce_grammar

    reduced = reduce_grammar(ir)
    sig = {}
    for name in reduced.dfas:
        dfa = ByteDFA.from_node(reduced.terminals[name].ast())
        data = dfa.table.tobytes() + dfa.accepting.tobytes()
        sig[name] = f"<{hashlib.sha256(data).hexdigest()} {reduced.terminals[name].shortest}>"
    return sorted((lhs, tuple(sig.get(s, s) for s in rhs)) for lhs, rhs in reduced.rules)


def _ir_cases():
    import json

    from constrain_api.shared import shared_dir

    schemas = [
        {"type": "object", "properties": {"a": {"type": "integer"}}},  # open: any JSON value
        {"type": "array", "items": {"$ref": "#"}, "minItems": 0, "maxItems": 4},
        {
            "$defs": {"t": {"type": "object", "properties": {"k": {"$ref": "#/$defs/t"}}}},
            "$ref": "#/$defs/t",
        },
        {
            "type": "object",
            "additionalProperties": {"type": ["string", "null"]},
            "maxProperties": 3,
        },
    ]
    base = shared_dir()
    folder = None if base is None else base / "maskbench" / "data"
    if folder is not None and folder.is_dir():
        for f in sorted(folder.glob("*.json"))[::40]:
            schemas.append(json.loads(f.read_text(encoding="utf-8"))["schema"])
    return schemas


def test_grammar_ir_is_the_lark_texts_language():
    """``lower_json_schema_ir`` builds the ``GrammarIR`` directly; lark reading
    ``lower_json_schema``'s text back must give the same reduced grammar
    (terminal for terminal, by minimal automaton), so engines fed the text
    and backends fed the IR compile one language."""
    from constrain_api.grammar import lower_grammar

    compared = 0
    for schema in _ir_cases():
        try:
            spec = JsonSchema(schema)
            text = lower_json_schema(spec)
        except (UnsupportedConstraint, CompileLimitExceeded, ConstraintError):
            continue
        ir = lower_json_schema_ir(spec)
        if isinstance(text, Regex):  # the AST composed from the pieces: the text's language
            assert ByteDFA.from_node(ir).same_language(ByteDFA.from_regex(text.pattern))
            continue
        try:
            assert _canonical(ir) == _canonical(lower_grammar(text)), schema
        except CompileLimitExceeded:
            continue
        compared += 1
    assert compared >= 4


COLON_PATTERN = "^([a-z0-9-]+):([a-z0-9\\.-]+):([a-z0-9-]+)?:([a-z0-9-]+)$"


def test_a_length_bound_too_big_to_print_is_an_intersection_of_automata():
    """Four variable-width parts under ``maxLength: 146``: the regex of the
    bounded strings is too big to print (the bound is split over the parts),
    so the piece is the intersection itself, known by its AST: the automata
    form holds it, exact; the text form refuses it."""
    from constrain_api.automata.regex import has_lookaround

    schema = {"type": "string", "pattern": COLON_PATTERN, "maxLength": 146}
    lowered = lower_json_schema_ir(JsonSchema(schema))
    assert has_lookaround(lowered)  # (an Intersect node)
    with pytest.raises(CompileLimitExceeded, match="no regex text"):
        lower_json_schema(JsonSchema(schema))
    edge = "a:b:c:" + "d" * 140
    verdicts = judged_by_the_validator(
        schema, ["a:b:c:d", "a:b::d", "a:b:c", edge, edge + "d", "A:b:c:d", 3]
    )
    assert verdicts[3] and not verdicts[4]


def test_an_email_under_a_long_length_bound_is_an_intersection_of_automata():
    """``format: email`` under ``maxLength: 1024`` (four MaskBench schemas):
    the local part and the domain share the bound, so the cut's regex is
    past its budget (found out before the cut is built) and the piece is the
    intersection; its strings are the e-mails of at most 1,024 characters."""
    import json
    import re

    from constrain_api.automata.regex import has_lookaround
    from constrain_api.jsonschema.formats import format_source

    schema = {"type": "string", "format": "email", "maxLength": 1024}
    assert has_lookaround(lower_json_schema_ir(JsonSchema(schema)))
    _, accepts = language(schema)
    email = re.compile(format_source("email"))  # (the validator's own check is '@' in it)
    edge = "a" * 1000 + "@" + "b" * 20 + ".cd"  # 1,024 characters
    values = ["a@b.c", "a.b@c", edge, edge + "e", "a@", "@b", "a b@c", '"a b"@c', "a@[1.2.3.4]"]
    verdicts = [email.fullmatch(v) is not None and len(v) <= 1024 for v in values]
    assert verdicts == [True, True, True, False, False, False, False, True, True]
    for value, want in zip(values, verdicts, strict=True):
        assert accepts(json.dumps(value)) == want, value


def test_a_pattern_beside_a_format_is_their_intersection():
    import json

    import jsonschema

    schema = {"type": "string", "format": "date", "pattern": "^2024-"}
    _, accepts = language(schema)
    check = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker())
    for value in ["2024-02-29", "2024-12-31", "2023-02-28", "2024-02-30", "2024-1-01", "x"]:
        assert accepts(json.dumps(value)) == check.is_valid(value), value
    assert accepts('"2024-02-29"') and not accepts('"2024-02-30"')


def test_patterns_of_an_allof_are_their_intersection():
    """Two or three ``pattern``s met in one schema through ``allOf`` (before,
    refused): a string must match each of them, also beside a format, a
    length bound, a nested ``allOf``, under ``not`` and in a ``oneOf``
    whose branches they keep apart; judged by the validator. The text form
    has no spelling of an intersection and refuses it."""
    both = {"type": "string", "allOf": [{"pattern": "^a"}, {"pattern": "b$"}]}
    strings_ = ["ab", "axb", "a", "b", "ba", "", "aab", "abc", 3, None]
    verdicts = judged_by_the_validator(both, strings_)
    assert verdicts[:6] == [True, True, False, False, False, False]
    with pytest.raises(CompileLimitExceeded, match="no regex text"):
        lower_json_schema(JsonSchema(both))
    three = {"pattern": "c", "allOf": [{"pattern": "^a"}, {"allOf": [{"pattern": "b$"}]}]}
    verdicts = judged_by_the_validator(three, ["acb", "ab", "cab", "acbc", "c", 7, [1]])
    assert verdicts == [True, False, False, False, False, True, True]
    bounded = {**both, "maxLength": 3, "minLength": 3}
    assert judged_by_the_validator(bounded, ["axb", "ab", "axxb", "xab"]) == [
        True, False, False, False]  # fmt: skip
    dated = {"type": "string", "format": "date", "allOf": [{"pattern": "^2"}, {"pattern": "9$"}]}
    _, accepts = language(dated)
    assert accepts('"2024-02-29"') and not accepts('"2023-02-29"')
    assert not accepts('"2024-02-28"') and not accepts('"1999-01-09"')
    negated = {"type": "string", "not": both}
    verdicts = judged_by_the_validator(negated, strings_)
    assert verdicts[:6] == [False, False, True, True, True, True]
    apart = {"oneOf": [both, {"type": "string", "pattern": "^ab$"}]}
    assert judged_by_the_validator(apart, ["ab", "axb", "x"]) == [False, True, False]


def test_a_pattern_with_lookaheads_is_an_intersection():
    """A password rule (lookaheads at the start of an anchored pattern),
    alone and under a length bound, in an object: judged by the validator
    (Python's ``re`` reads the pattern the same way on these strings); and
    as ``patternProperties`` beside declared names (matched by automata)."""
    rule = r"^(?=.*[A-Z])(?=.*\d)(?!.*\s)"
    schema = {
        "type": "object",
        "properties": {
            "password": {"type": "string", "pattern": rule, "maxLength": 8},
            "hint": {"type": "string", "pattern": r"^(?!.*pass)[a-z]*$"},
            "name": {"type": "string", "pattern": r"^(?!\s)(?!.*\s$)"},  # (trimmed)
        },
        "required": ["password"],
        "additionalProperties": False,
    }
    verdicts = judged_by_the_validator(
        schema,
        [{"password": "Secret12"}, {"password": "secret12"}, {"password": "SECRET"},
         {"password": "Sec ret1"}, {"password": "Secret123"}, {"password": "A1"},
         {"password": "A1", "hint": "word"}, {"password": "A1", "hint": "mypass"},
         {"password": "A1", "hint": "Word"}, {"password": "A1", "name": "Ann Lee"},
         {"password": "A1", "name": " Ann"}, {"password": "A1", "name": "Ann "},
         {"password": "A1", "name": ""}, {}],
    )  # fmt: skip
    assert verdicts[9] and not verdicts[10] and not verdicts[11] and verdicts[12]
    assert verdicts[0] and not verdicts[1] and not verdicts[4] and verdicts[6]
    names = {
        "properties": {"@@id": {"type": "string"}, "ok": {"type": "boolean"}},
        "patternProperties": {r"^(?!@@)[\w@]+$": {"type": "integer"}},
        "additionalProperties": False,
    }
    verdicts = judged_by_the_validator(
        names,
        [{"a": 1}, {"a": "x"}, {"@@id": "x"}, {"@@x": 1}, {"a@@": 1}, {"ok": 1}, {"ok": True},
         {"@@id": 3}, {"a b": 1}, {}],
    )  # fmt: skip
    assert verdicts[0] and not verdicts[3] and verdicts[4] and not verdicts[5]


def test_opaque_pieces_are_keyed_by_their_language():
    """The text of a piece with no regex text is a digest of its AST: the
    same AST, the same key (caches by text are shared); another AST,
    another key; no regex engine reads it as a pattern."""
    import re as std_re

    from constrain_api.automata import Intersect, parse_regex
    from constrain_api.jsonschema.ir import has_opaque, opaque

    a = Intersect(parse_regex("[a-z]+"), parse_regex(".{0,5}"))
    b = Intersect(parse_regex("[a-z]+"), parse_regex(".{0,6}"))
    assert opaque(a).text == opaque(Intersect(parse_regex("[a-z]+"), parse_regex(".{0,5}"))).text
    assert opaque(a).text != opaque(b).text
    assert has_opaque(opaque(a).text) and not has_opaque("[a-z]+")
    with pytest.raises(std_re.error):
        std_re.compile(opaque(a).text)


UNEVALUATED_CASES = [
    (
        {"type": "object", "properties": {"a": {}}, "allOf": [{"properties": {"b": {}}}],
         "unevaluatedProperties": False},
        [{"a": 1}, {"b": 1}, {"a": 1, "b": 2}, {"c": 1}, {"a": 1, "c": 1}],
    ),
    (  # a member's own unevaluatedProperties cannot see its cousins' names
        {"allOf": [{"properties": {"foo": {}}}, {"unevaluatedProperties": False}]},
        [{}, {"foo": 1}, {"bar": 1}, 3],
    ),
    (  # the names a $ref beside it evaluates count
        {"$defs": {"b": {"properties": {"b": {"type": "string"}}}}, "$ref": "#/$defs/b",
         "type": "object", "properties": {"a": {}}, "unevaluatedProperties": {"type": "integer"}},
        [{"a": 1, "b": "x"}, {"b": 1}, {"c": 1}, {"c": "x"}, {"a": [], "c": 2}],
    ),
    (  # an inner unevaluatedProperties: true evaluates every name
        {"type": "object", "allOf": [{"unevaluatedProperties": True}],
         "unevaluatedProperties": False},
        [{}, {"x": 1}, []],
    ),
]  # fmt: skip


@pytest.mark.parametrize(("schema", "instances"), UNEVALUATED_CASES)
def test_unevaluated_properties_beside_all_of_and_ref(schema, instances):
    """``unevaluatedProperties`` where the names evaluated are the schema's
    own once its ``allOf`` members (each with its own unevaluated names
    settled first) and a ``$ref`` beside it are merged in; judged by the
    validator."""
    verdicts = judged_by_the_validator(schema, instances)
    assert any(verdicts) and not all(verdicts)


def test_unevaluated_properties_across_choices_is_refused():
    for schema in (
        {"anyOf": [{"properties": {"a": {}}}], "unevaluatedProperties": False},
        {"allOf": [{"oneOf": [{"required": ["x"]}, {"required": ["y"]}]}],
         "unevaluatedProperties": False},
    ):  # fmt: skip
        with pytest.raises(UnsupportedConstraint, match="unevaluatedProperties"):
            lower_json_schema(JsonSchema(schema))


def test_grammar_mode_takes_the_sub_schemas_regex_mode_lowered_as_it_would_write_them(
    monkeypatch,
):
    """A schema regex mode gives up on (an open object among its members)
    is lowered again in grammar mode, which takes the sub-schemas regex mode lowered already
    (``Lowerer.reusable``) instead of lowering them again: each one it
    takes is what grammar mode writes for it, a reference whose body grammar
    mode makes a rule of (over ``_INLINE_CHARS``) is not taken, and the
    grammar is the one a grammar-mode lowering alone gives."""
    from constrain_api.jsonschema import _lowered, options_of
    from constrain_api.jsonschema.ir import Call, Cat, Or, Rep, Rx
    from constrain_api.jsonschema.lower import Lowerer, NotRegular, rewrite_refs
    from constrain_api.jsonschema.refs import index_schema

    big = {"enum": [f"value-{i:04d}" for i in range(300)]}  # a regex of ~3,900 characters
    schema = {
        "definitions": {"big": big, "small": {"type": "integer", "minimum": 3}},
        "type": "object",
        "properties": {
            "a": {"$ref": "#/definitions/big"},
            "b": {"$ref": "#/definitions/small"},
            "c": {"type": "string", "maxLength": 4},
            "d": {"type": "array", "items": {"$ref": "#/definitions/small"}},
            "e": {"type": "object"},  # open: regex mode gives up here, after a to d
        },
        "additionalProperties": False,
    }
    spec = JsonSchema(schema)
    index = index_schema(spec.schema)
    root = rewrite_refs(index)
    regular = Lowerer(index, root, options_of(spec), grammar=False)
    with pytest.raises(NotRegular):  # (the open object: its other members are any value)
        regular.lower_document()
    alone = Lowerer(index, root, options_of(spec), grammar=True)
    alone_start = alone.lower_document()
    known = regular.reusable()
    assert len(known) >= 4
    for key, expr in known.items():
        assert alone._memo[key] == expr, key
    assert '{"$ref": "#/definitions/big"}' not in known
    assert isinstance(alone._memo['{"$ref": "#/definitions/big"}'], Call)

    def shape(e, rules):  # the grammar with its rules inlined, but any JSON value's
        if isinstance(e, Call):
            inline = not e.name.startswith("json_")
            return shape(rules[e.name], rules) if inline else ("call", e.name)
        if isinstance(e, Rx):
            return e.text, e.nullable
        if isinstance(e, Cat):
            return ("cat", *(shape(p, rules) for p in e.parts))
        if isinstance(e, Or):
            return ("or", *(shape(p, rules) for p in e.options))
        assert isinstance(e, Rep)
        return "rep", shape(e.item, rules), e.min, e.max

    lowered = {False: 0, True: 0}  # sub-schemas lowered (not from the memo), by mode
    lower_one = Lowerer._lower

    def counted(self, s, where):
        lowered[self.grammar] += 1
        return lower_one(self, s, where)

    monkeypatch.setattr(Lowerer, "_lower", counted)
    _lowered.cache_clear()
    rules = _lowered(spec)
    assert isinstance(rules, dict)
    monkeypatch.undo()
    alone_count = {False: 0, True: 0}
    monkeypatch.setattr(
        Lowerer,
        "_lower",
        lambda self, s, where: (
            alone_count.__setitem__(self.grammar, alone_count[self.grammar] + 1)
            or lower_one(self, s, where)
        ),
    )
    Lowerer(index, root, options_of(spec), grammar=True).lower_document()
    assert lowered[True] <= alone_count[True] - len(known) + 1, (lowered, alone_count)
    assert shape(rules["start"], rules) == shape(alone_start, alone.rules)
    assert any(len(e.text) > 2000 for e in rules.values() if isinstance(e, Rx))  # the big rule


def test_regex_mode_gives_up_on_an_open_object_before_lowering_its_properties(monkeypatch):
    """An object whose other members may hold any JSON value is not regular:
    regex mode gives up on it before lowering its properties (grammar mode
    lowers them), and the lowering is grammar mode's all the same."""
    from constrain_api.jsonschema import _lowered, options_of
    from constrain_api.jsonschema.lower import Lowerer, NotRegular, rewrite_refs
    from constrain_api.jsonschema.refs import index_schema

    member = {"type": "object", "properties": {"x": {"type": "integer"}}}
    schema = {"type": "object", "properties": {"a": member, "b": {"type": "string"}}}
    spec = JsonSchema(schema)
    index = index_schema(spec.schema)
    lowered: list[str] = []
    lower_one = Lowerer._lower
    monkeypatch.setattr(
        Lowerer, "_lower", lambda self, s, where: lowered.append(where) or lower_one(self, s, where)
    )
    regular = Lowerer(index, rewrite_refs(index), options_of(spec), grammar=False)
    with pytest.raises(NotRegular):
        regular.lower_document()
    assert lowered == [""]  # the root only, not its members
    # closed, it is regular, its open member is not: given up on there
    lowered.clear()
    closed = {**schema, "additionalProperties": False}
    index = index_schema(JsonSchema(closed).schema)
    regular = Lowerer(index, rewrite_refs(index), options_of(spec), grammar=False)
    with pytest.raises(NotRegular):
        regular.lower_document()
    assert lowered == ["", "/properties/a"]
    monkeypatch.undo()
    _lowered.cache_clear()
    rules = _lowered(spec)
    assert isinstance(rules, dict) and "json_value" in rules  # grammar mode's


def test_the_strings_other_than_an_objects_names_are_built_once_per_lowering_and_not_kept(
    monkeypatch,
):
    """An object whose other members are any value but its declared names is
    lowered by both of the lowering's passes (regex mode gives up on the
    recursion): the strings other than its names are built once for the
    lowering (the passes share ``Lowerer.strings_not_in``), and once the
    spec's caches are cleared no piece of them is alive (a process-wide
    cache of these graphs of AST nodes made every full pass of the garbage
    collector walk them: 21 ms a collection after 100 MaskBench schemas)."""
    import gc

    from constrain_api import clear_caches
    from constrain_api.caching import SPEC_CACHES
    from constrain_api.jsonschema import strings

    names = [f"member_{i}" for i in range(80)]
    inner = {
        "type": "object",
        "properties": {name: {"type": "integer"} for name in names},
        "additionalProperties": {"type": "boolean"},
    }
    # regex mode lowers "a" (its regex too long for grammar mode to take it
    # over), then gives up on "z"
    schema = {
        "type": "object",
        "properties": {"a": inner, "z": {"$ref": "#"}},
        "additionalProperties": False,
    }
    built = []
    piece = strings.string_not_in_piece

    def counted(excluded, *, max_size=20000, shared=None):
        built.append(frozenset(excluded))
        return piece(excluded, max_size=max_size, shared=shared)

    monkeypatch.setattr(strings, "string_not_in_piece", counted)
    lowered, accepts = language(schema)
    assert isinstance(lowered, GrammarIR)  # (both passes ran)
    assert built == [frozenset(names)]
    instances = [
        {"a": {"member_3": 1, "other": True}, "z": {"a": {"x": False}}},
        {"a": {"member_3": True}},
        {"a": {"other": 1}},
    ]
    assert judged_by_the_validator(schema, instances) == [True, False, False]
    text = strings.string_not_in(names)
    clear_caches(*SPEC_CACHES)
    del lowered, accepts
    gc.collect()
    alive = [o for o in gc.get_objects() if type(o) is tuple and o and o[0] == text]
    assert alive == []


# ---------------------------------------------------------------- the IR's flat rules


def _unshared(e):
    """A copy of an IR expression with no sub-expression object used twice."""
    from constrain_api.jsonschema.ir import Cat, Or, Rep

    if isinstance(e, Cat):
        return Cat(tuple(_unshared(p) for p in e.parts))
    if isinstance(e, Or):
        return Or(tuple(_unshared(o) for o in e.options))
    if isinstance(e, Rep):
        return Rep(_unshared(e.item), e.min, e.max)
    return e


def test_flat_rules_of_shared_sub_expressions_are_those_of_their_copies():
    """``flatten`` flattens a sub-expression the lowering shares once: the
    rules must be the very rules of an expression whose parts are all copies."""
    from constrain_api.jsonschema.ir import Call, Rx, cat, either, flatten, rep

    member = either(cat(Rx(","), Call("v")), Rx("x"))
    shared = rep(member, 0, 3)
    start = either(cat(Rx("a"), shared, member), cat(Rx("b"), shared, Call("v")))
    rules = {"start": start, "v": either(cat(Rx(r"\["), shared, Rx(r"\]")), Rx("1"))}
    copies = {name: _unshared(e) for name, e in rules.items()}
    assert copies["start"] is not start and copies["start"] == start
    assert flatten("start", rules) == flatten("start", copies)


def test_equal_ir_expressions_hash_alike():
    from constrain_api.jsonschema.ir import Call, Cat, Or, Rep, Rx

    a = Or((Cat((Rx("a"), Call("r"))), Rep(Rx("b"), 0, None)))
    b = Or((Cat((Rx("a"), Call("r"))), Rep(Rx("b"), 0, None)))
    assert a == b and hash(a) == hash(b) and {a: 1}[b] == 1
    assert a != Or((Cat((Rx("a"), Call("r"))), Rep(Rx("b"), 1, None)))


_WORDS = [b"".join(p) for n in range(5) for p in itertools.product([b"a", b"b", b"c"], repeat=n)]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.sampled_from(["a", "b", "ab", "a*b", "(ab|c)+", "c?a", "b.*", ".*c", "..."]), max_size=4
    ),
    st.lists(st.sampled_from(_WORDS), max_size=4),
    st.booleans(),
)
def test_name_regions_cut_the_names_by_the_patterns_that_match(patterns, declared, rest):
    """Every undeclared name lies in exactly the region of the patterns that
    match it (the names no pattern matches: the last region, with
    ``rest``), in depth-first order, each pattern in before out."""
    from constrain_api.jsonschema.lower import _name_regions

    keys = [ByteDFA.from_regex(p) for p in patterns]
    names = ByteDFA.from_regex("[abc]*").difference(ByteDFA.from_strings(declared))
    regions = _name_regions(names, keys, rest, 10_000, "#")
    chosen_list = [chosen for _, chosen in regions]
    assert chosen_list == sorted(chosen_list, key=lambda c: [i not in c for i in range(len(keys))])
    assert len(set(chosen_list)) == len(chosen_list)
    for word in _WORDS:
        matching = tuple(i for i, k in enumerate(keys) if k.matches(word))
        holding = [chosen for dfa, chosen in regions if dfa.matches(word)]
        if word in declared or (not matching and not rest):
            assert holding == []
        else:
            assert holding == [matching]


def test_patterns_that_overlap_in_too_many_ways_are_refused():
    schema = {"type": "object", "patternProperties": {c: {} for c in "abcdefghij"}}
    with pytest.raises(UnsupportedConstraint, match="overlap in too many ways"):
        lower_json_schema_ir(JsonSchema(schema))


def test_one_of_branches_meet_or_not_the_same_way_past_the_lazy_search_s_bound(monkeypatch):
    """Whether two ``oneOf`` branches share a text is searched lazily
    (``has_string`` of their intersection); where that search meets its
    bound, their minimal automata decide, alike."""
    import constrain_api.jsonschema.lower as lowering

    def member(pattern):
        return {
            "type": "object",
            "properties": {"k": {"type": "string", "pattern": pattern}},
            "required": ["k"],
            "additionalProperties": False,
        }

    disjoint = {"oneOf": [member("^a$"), member("^b$")]}
    overlapping = {
        "oneOf": [{"type": "string", "maxLength": 3}, {"type": "string", "pattern": "^a"}]
    }
    searched = [repr(lower_json_schema_ir(JsonSchema(s))) for s in (disjoint, overlapping)]
    calls = []

    def bounded(node, *, max_states):
        calls.append(node)
        raise CompileLimitExceeded("states", max_states, None, "a product too big to search")

    monkeypatch.setattr(lowering, "has_string", bounded)
    clear_caches()
    assert [repr(lower_json_schema_ir(JsonSchema(s))) for s in (disjoint, overlapping)] == searched
    assert len(calls) == 2
    _, ok = language(disjoint)
    assert ok('{"k":"a"}') and ok('{"k":"b"}') and not ok('{"k":"c"}')
    _, ok = language(overlapping)
    assert ok('"b"') and ok('"abcd"') and not ok('"ab"')


@pytest.mark.parametrize(
    "schema",
    [
        {"enum": [1, 2, 3, 4], "allOf": [{"enum": [2, 3, 5, 6, 7]}], "not": {"const": 3}},
        {"enum": [1, 2, 3, 4, 5, 6], "allOf": [{"enum": [2, 3, 9]}, {"minimum": 3}]},
        {"const": 2, "enum": [1, 2], "allOf": [{"enum": [2, 3]}], "multipleOf": 2},
        {"enum": [[1], [2], "a", {"b": 1}], "not": {"type": "string"}, "minItems": 1},
    ],
)
def test_listed_values_are_those_the_whole_schema_accepts(schema):
    """Values listed beside other keywords are each judged by the validator
    (without the list they are taken from, which holds them; the other
    lists still count): exactly those of the shortest list it accepts."""
    import jsonschema

    from constrain_api.jsonschema import instance_text

    _, ok = language(schema)
    validator = jsonschema.Draft202012Validator(schema)
    candidates = [1, 2, 3, 4, 5, 6, 7, 9, [1], [2], "a", {"b": 1}, [], None]
    accepted = [v for v in candidates if ok(instance_text(schema, v))]
    assert accepted == [v for v in candidates if validator.is_valid(v)]
    assert accepted  # (each schema admits some value)


def test_a_pattern_s_own_names_take_its_own_regex():
    """A ``patternProperties`` region that is all the names of one pattern
    (no declared name, no other pattern among them) is spelled by the
    pattern's own regex, counted repeats and all, not printed back from
    its automaton; a region that is not (a declared name matches the
    pattern) is printed from the automaton. Both exact."""
    from constrain_api.jsonschema import strings

    tag = "^t_[a-z]{2,3}(-[A-Z]{4})?(-[a-z0-9]{5,8})*$"
    schema = {
        "type": "object",
        "properties": {"id": {"type": "integer"}},
        "patternProperties": {tag: {"type": "string"}},
        "additionalProperties": False,
    }
    own = strings.pattern_regex(tag)
    assert own in lower_json_schema(JsonSchema(schema)).pattern
    instances = [
        {}, {"id": 1}, {"t_en": "x"}, {"t_eng-Latn-abcde": "x"}, {"t_en": 1},
        {"t_e": "x"}, {"t_en-latn": "x"}, {"id": 1, "t_fr-abcdefgh": "y"}, {"x": 1},
    ]  # fmt: skip
    verdicts = judged_by_the_validator(schema, instances)
    assert any(verdicts) and not all(verdicts)
    overlapping = dict(schema, properties={"t_en": {"type": "integer"}})
    assert own not in lower_json_schema(JsonSchema(overlapping)).pattern
    verdicts = judged_by_the_validator(overlapping, [{"t_en": 1}, {"t_en": "x"}, {"t_de": "x"}])
    assert verdicts == [False, False, True]  # (t_en: an integer and a string at once)


def test_the_validator_reads_the_lowering_s_markers_as_standard_keywords():
    """Listed values are judged by the validator, which ignores the
    lowering's markers: ``_standard`` writes them as the keywords they stand
    for, in subschemas too, and leaves member names (a property called
    ``enum``) and values alone."""
    import jsonschema

    from constrain_api.jsonschema.lower import _standard

    marked = {
        "type": "object",
        "properties": {"enum": {"type": "string", "__not_strings__": ["x"]}},
        "required": ["enum"],
    }
    validator = jsonschema.Draft202012Validator(_standard(marked))
    assert validator.is_valid({"enum": "y"}) and not validator.is_valid({"enum": "x"})
    strings = _standard({"enum": ["a", "b"], "__not_string__": [{"pattern": "a"}]})
    assert [v for v in ["a", "b"] if jsonschema.Draft202012Validator(strings).is_valid(v)] == ["b"]
    assert _standard({"type": "__none__"}) is False


def test_a_oneof_told_apart_by_a_member_no_branch_requires():
    """Open object branches that list the values of a member none of them
    requires (a ``type``/``kind`` tag): a value of one fails each other by
    that member's value, so the ways meet as two negated lists in one
    schema, merged into one (before, refused: "allOf merging
    __not_strings__"). Judged by the validator: a tag picks its branch, no
    tag leaves every branch matching (invalid), an unlisted tag none."""
    tagged = {
        "type": "object",
        "oneOf": [
            {"properties": {"kind": {"type": "string", "enum": [k]}, k: {"type": "integer"}}}
            for k in "abc"
        ],
    }
    verdicts = judged_by_the_validator(
        tagged,
        [{"kind": "a"}, {"kind": "b", "b": 1}, {"kind": "c", "a": "x"}, {"kind": "a", "a": "x"},
         {}, {"a": 1}, {"kind": "d"}, {"kind": 1}, {"kind": "b", "c": 2.5}],
    )  # fmt: skip
    assert verdicts == [True, True, True, False, False, False, False, False, True]


def test_a_negated_oneof_of_a_draft_without_boolean_schemas():
    """Draft 4 has no boolean schemas, and the validator of that draft
    refuses one; the lowering's own ``False`` (a member's types merged to
    none) is judged as ``{"not": {}}`` there. Before, the ways a value fails
    this recursive ``oneOf`` met such a schema and the lowering refused the
    ``oneOf`` ("cannot check values"). Judged by the validator."""
    tag = {"enum": ["void", "list", "map", "union"]}
    schema = {
        "$schema": "http://json-schema.org/draft-04/schema#",
        "definitions": {
            "tag": tag,
            "base": {"type": "object", "properties": {"t": {"enum": ["void"]}}, "required": ["t"]},
            "list": {
                "type": "object",
                "properties": {"t": {"enum": ["list"]}, "of": {"$ref": "#/definitions/tag"},
                               "elem": {"$ref": "#/definitions/spec"}},
                "required": ["t", "of", "elem"],
            },
            "map": {
                "type": "object",
                "properties": {"t": {"enum": ["map"]}, "key": {"$ref": "#/definitions/tag"},
                               "value": {"$ref": "#/definitions/spec"}},
                "required": ["t", "key"],
            },
            "struct": {
                "type": "object",
                "properties": {"t": {"enum": ["union"]}, "class": {"type": "string"}},
                "required": ["t", "class"],
            },
            "spec": {"allOf": [{"type": "object"}, {"oneOf": [
                {"$ref": "#/definitions/base"}, {"$ref": "#/definitions/list"},
                {"$ref": "#/definitions/map"}, {"$ref": "#/definitions/struct"}]}]},
        },
        "type": "object",
        "properties": {"oneway": {"type": "boolean"}},
        "required": ["oneway"],
        "oneOf": [
            {"required": ["oneway"]},
            {"properties": {"returns": {"$ref": "#/definitions/spec"}}, "required": ["returns"]},
        ],
    }  # fmt: skip
    verdicts = judged_by_the_validator(
        schema,
        [{"oneway": True}, {"oneway": True, "returns": {"t": "void"}},
         {"oneway": False, "returns": {"t": "map"}}, {"oneway": False, "returns": 3},
         {"oneway": True, "returns": {"t": "map", "key": "void", "value": {"t": "void"}}},
         {"oneway": True, "returns": {"t": "map", "key": "void", "value": {"t": "x"}}},
         {"oneway": True, "returns": {"t": "union"}}, {"returns": {"t": "void"}}],
    )  # fmt: skip
    assert verdicts == [True, False, True, True, False, True, True, False]


def test_a_oneof_of_many_branches_split_by_a_tag():
    """Eight open object branches tagged by a ``country`` no branch requires,
    each listing ``state``s that overlap its neighbour's: the ways each
    fails the other seven multiply to 2^7 (before, refused). Split by the
    tag (each country; none of the listed ones; absent) and, absent, told
    apart by ``state``; then with a branch that names neither member but
    requires its own (it takes every tag, listed or not: a second split, by
    ``state``) and a closed one. Judged by the validator over every
    combination of the members."""
    branches = [
        {
            "properties": {
                "country": {"type": "string", "enum": [f"c{i}"]},
                "state": {"enum": [f"s{i}", f"s{i + 1}", "shared"]},
                "postalCode": {"type": "string", "maxLength": 4},
            }
        }
        for i in range(8)
    ]
    schema = {"type": "object", "oneOf": branches}
    countries = [None, "c0", "c3", "c7", "zz", 1]
    states = [None, "s0", "s1", "s4", "s8", "shared", "q"]
    postcodes = [None, "x", 3]

    def objects(**members):
        names = list(members)
        for values in itertools.product(*members.values()):
            yield {n: v for n, v in zip(names, values, strict=True) if v is not None}

    instances = list(objects(country=countries, state=states, postalCode=postcodes))
    verdicts = judged_by_the_validator(schema, instances)
    valid = {json.dumps(x) for x, ok in zip(instances, verdicts, strict=True) if ok}
    assert '{"state": "s0"}' in valid and '{"state": "s8"}' in valid  # (one branch lists it)
    assert '{"state": "s1"}' not in valid and "{}" not in valid  # (two, and all eight)
    assert '{"country": "c3", "state": "s4"}' in valid and '{"country": "c3"}' in valid
    assert '{"country": "c3", "state": "s0"}' not in valid and '{"country": "zz"}' not in valid
    assert 20 < len(valid) < len(instances) - 20
    closed = {
        "properties": {"country": {"const": "c9"}, "state": {"enum": ["s0"]}},
        "required": ["country"],
        "additionalProperties": False,
    }
    ninth = {"properties": {"other": {"type": "integer"}}, "required": ["other"]}
    mixed = {"type": "object", "oneOf": [*branches, ninth, closed]}
    instances = list(objects(country=[*countries, "c9"], state=states[:3], other=[None, 1, "y"]))
    verdicts = judged_by_the_validator(mixed, instances)
    verdicts = dict(zip(map(json.dumps, instances), verdicts, strict=True))
    assert verdicts['{"country": "zz", "other": 1}']  # (only the ninth)
    assert not verdicts['{"country": "c3", "other": 1}']  # (c3's and the ninth)
    assert (
        verdicts['{"country": "c9", "state": "s0"}'] and verdicts['{"country": "c9", "other": 1}']
    )
    assert not verdicts['{"country": "c9", "state": "s1"}']
    assert verdicts['{"state": "s0", "other": "y"}'] and not verdicts['{"state": "s0", "other": 1}']
    assert 10 < sum(verdicts.values()) < len(instances) - 10


def test_member_counts_past_64_without_declared_members():
    """An object of pattern-named members only, between 66 and 70 of them
    (before, refused: "counts above 64"), is one counted repetition of a
    member: judged by the validator at the bounds. Beside declared members,
    whose places multiply with the counts, such bounds stay refused."""
    counted = {
        "type": "object",
        "patternProperties": {"^k": {"type": "integer"}},
        "additionalProperties": False,
        "minProperties": 66,
        "maxProperties": 70,
    }
    sizes = [0, 1, 65, 66, 70, 71]
    instances = [{f"k{i}": i for i in range(n)} for n in sizes]
    instances += [{**instances[3], "x": 1}, {**instances[3], "k0": "a"}]
    verdicts = judged_by_the_validator(counted, instances)
    assert verdicts == [False, False, False, True, True, False, False, False]
    declared = {**counted, "properties": {"a": {"type": "string"}}}
    with pytest.raises(UnsupportedConstraint, match="counts above 64"):
        lower_json_schema_ir(JsonSchema(declared))


def test_a_oneof_told_apart_by_the_types_of_its_branches_unions():
    """JSON:API's resource linkage: ``oneOf`` a to-one reference (``anyOf``
    null or a linkage object, through references) and a to-many one (an
    array): no value takes both, since an ``anyOf`` takes only its
    branches' types. Before, refused ("its branches overlap"), as each
    branch's own ``type`` said nothing. Judged by the validator, beside an
    open ``meta`` (grammar mode); branches whose unions share a type
    (numbers) are still refused, not taken as disjoint."""
    linkage = {
        "type": "object",
        "properties": {"type": {"type": "string"}, "id": {"type": "string"},
                       "meta": {"type": "object"}},
        "required": ["type", "id"],
        "additionalProperties": False,
    }  # fmt: skip
    schema = {
        "definitions": {
            "linkage": linkage,
            "empty": {"type": "null"},
            "toOne": {
                "anyOf": [{"$ref": "#/definitions/empty"}, {"$ref": "#/definitions/linkage"}]
            },
            "toMany": {"type": "array", "items": {"$ref": "#/definitions/linkage"}},
        },
        "type": "object",
        "properties": {
            "data": {"oneOf": [{"$ref": "#/definitions/toOne"}, {"$ref": "#/definitions/toMany"}]}
        },
        "required": ["data"],
    }
    verdicts = judged_by_the_validator(
        schema,
        [{"data": None}, {"data": {"type": "a", "id": "1"}}, {"data": []},
         {"data": [{"type": "a", "id": "1", "meta": {"x": [1]}}]}, {"data": {"type": "a"}},
         {"data": [None]}, {"data": "a"}, {"data": 1}, {"data": True}, {}],
    )  # fmt: skip
    assert verdicts == [True, True, True, True, False, False, False, False, False, False]
    nested = {
        "oneOf": [
            {"oneOf": [{"type": "string"}, {"type": "integer", "minimum": 5}]},
            {"anyOf": [{"type": "boolean"}, {"type": "number", "maximum": 7}]},
        ]
    }
    with pytest.raises(UnsupportedConstraint, match="oneOf at /: its branches overlap"):
        lower_json_schema_ir(JsonSchema(nested))  # (numbers in both: not told apart by type)


def test_the_types_of_a_recursive_union_are_read_within_a_bound():
    """An ``anyOf`` that refers to itself in several branches (the same
    value again, with no schema between): reading the types its branches
    take stops after ``_MAX_SHAPE_VISITS`` schemas, the types then unknown,
    so the ``oneOf`` beside it is refused by name (without the bound, the
    reading recursed until the lowering gave up on the nesting instead)."""
    schema = {
        "$defs": {
            "t": {"anyOf": [{"$ref": "#/$defs/t"}, {"$ref": "#/$defs/t"}, {"type": "string"}]}
        },
        "oneOf": [{"$ref": "#/$defs/t"}, {"type": "array", "items": {"type": "null"}}],
    }
    with pytest.raises(UnsupportedConstraint, match="oneOf at /: its branches overlap"):
        lower_json_schema_ir(JsonSchema(schema))


def test_a_dependent_schema_whose_branches_name_the_members():
    """Swagger 1.2's data types: ``format`` depends on a ``oneOf`` of
    ``properties`` branches pairing each ``type`` with its formats. The
    members a dependent schema names are also its ``allOf``/``anyOf``/
    ``oneOf``/``not``/conditional branches' (before, any applicator there
    refused it: "name other members"); a member only a branch names is
    declared after the schema's own. Judged by the validator."""
    pairs = {"integer": ["int32", "int64"], "number": ["float", "double"], "string": ["byte"]}
    schema = {
        "$schema": "http://json-schema.org/draft-04/schema#",
        "type": "object",
        "required": ["type"],
        "properties": {"type": {"enum": [*pairs, "boolean"]}, "format": {"type": "string"}},
        "dependencies": {
            "format": {
                "oneOf": [
                    {"properties": {"type": {"enum": [t]}, "format": {"enum": f}}}
                    for t, f in pairs.items()
                ]
            },
            "unit": {"anyOf": [{"required": ["scale"]}, {"not": {"required": ["type"]}}]},
        },
    }
    instances = [{"type": t, "format": f} for t in [*pairs, "boolean"] for f in ["int32", "byte"]]
    instances += [{"type": "boolean"}, {"type": "number", "unit": 1},
                  {"type": "number", "unit": 1, "scale": 2}, {"format": "byte"}, {}]  # fmt: skip
    verdicts = judged_by_the_validator(schema, instances)
    assert verdicts == [True, False, False, False, False, True, False, False,
                        True, False, True, False, False]  # fmt: skip


@pytest.mark.parametrize(
    "schema, instances, valid",
    [
        (
            {"if": {"pattern": "a"}, "then": {"dependentRequired": {"a": []}}},
            [{'q"': None, "a": "é"}],
            [True],
        ),
        (
            {"if": {"type": "object"},
             "then": {"properties": {"b": {}}, "dependentRequired": {"a": ["c"]}}},
            [{"q": 1, "c": 2, "a": 3, "b": 4}, {"q": 1, "a": 3}],
            [True, False],
        ),
        (
            {"if": {"required": ["z"]}, "then": {"dependentRequired": {"a": []}},
             "else": {"dependentRequired": {"b": ["c"]}}},
            [{"q": 1, "a": 2, "z": 3}, {"q": 1, "c": 0, "b": 2}, {"q": 1, "b": 2}],
            [True, True, False],
        ),
    ],
)  # fmt: skip
def test_instance_text_orders_the_members_a_conditional_case_s_dependencies_name(
    schema, instances, valid
):
    """The case a conditional takes declares the members its parts'
    dependency keywords name (after the conditional's own members), so
    ``instance_text`` writes them there; it wrote them in the instance's
    order, which the language refuses (found by an unseeded strict-order run
    of the differential test)."""
    assert judged_by_the_validator(schema, instances) == valid


def test_instance_text_orders_the_members_a_dependent_schema_s_branches_name():
    """``instance_text`` puts the members a dependent schema's branches name
    where the lowering declares them (after the schema's own, in the order
    the dependency names them), not in the instance's order: it read the
    dependent schema's own ``properties``/``required`` only, so these valid
    instances, spelled with an undeclared member first, were refused (found
    by an unseeded run of the differential test with non-ASCII names)."""
    schema = {
        "properties": {"id": {"type": "integer"}},
        "dependentSchemas": {
            "é": {"oneOf": [{"type": "null"},
                            {"anyOf": [{"required": ["a"]}, {"required": ["b"]}]}]},
            "c": {"allOf": [{"properties": {"d": {"type": "string"}}}]},
        },
    }  # fmt: skip
    instances = [
        {'q"': None, "a": "é"},
        {"x": 1, "b": 2, "a": 1, "id": 3},
        {"x": 1, "é": 0, "b": 2},
        {"x": 1, "é": 0},
        {"x": 1, "d": "s", "c": 0, "é": 0, "a": 1},
        {"x": 1, "d": 2, "c": 0},
    ]
    verdicts = judged_by_the_validator(schema, instances)
    assert verdicts == [True, True, True, False, True, False]
    assert instance_text(schema, instances[4]) == '{"é":0,"a":1,"c":0,"d":"s","x":1}'


def test_a_oneof_beside_dependencies_still_pending_in_an_untyped_schema():
    """A dependent ``oneOf`` listed before another dependency, in a schema
    with no ``type``: when the ``oneOf`` is lowered, its branches hold the
    other dependency's choice (an ``anyOf`` of object keywords), which takes
    every string, number, ... A conjunct or union is read for the types it
    constrains (before, any such part counted as constraining every type,
    and the ``oneOf`` was refused). Judged by the validator (a non-object
    has no members, so no dependency applies to it: all valid)."""
    schema = {
        "$schema": "http://json-schema.org/draft-04/schema#",
        "properties": {"t": {"enum": ["x", "y"]}, "f": {}, "m": {}},
        "required": ["t"],
        "dependencies": {
            "f": {"oneOf": [{"properties": {"t": {"enum": ["x"]}}},
                            {"properties": {"t": {"enum": ["y"]}}}]},
            "m": ["t"],
        },
    }  # fmt: skip
    verdicts = judged_by_the_validator(
        schema,
        [{"f": 1, "t": "x"}, {"f": 1, "t": "y", "m": 2}, {"f": 1}, {"m": 1}, {"t": "y"}, {},
         "s", 1, None, [], {"f": 1, "t": "z"}],
    )  # fmt: skip
    assert verdicts == [True, True, False, False, True, False, True, True, True, True, False]


def test_a_oneof_of_closed_objects_requiring_what_the_other_forbids():
    """Branches without ``type``: one requires ``r`` and allows no other
    member (``additionalProperties: false``), the other requires ``t``: an
    object of both would hold ``t``, which the first forbids, so no object
    takes both (before, refused: "its branches overlap"). Non-objects
    match both branches (no keyword of theirs applies): none is valid.
    Judged by the validator."""
    schema = {
        "oneOf": [
            {"required": ["r"], "properties": {"r": {"type": "string"}},
             "additionalProperties": False},
            {"required": ["t"], "properties": {"t": {"type": "string"}, "x": {}},
             "additionalProperties": {"type": "object"}},
        ]
    }  # fmt: skip
    verdicts = judged_by_the_validator(
        schema,
        [{"r": "a"}, {"t": "a"}, {"t": "a", "r": {}}, {"r": "a", "t": "b"}, {"t": "a", "x": 1},
         {"t": "a", "y": 1}, {}, "s", 1, None],
    )  # fmt: skip
    assert verdicts == [True, True, True, False, True, False, False, False, False, False]


def test_a_oneof_told_apart_by_how_many_members_its_objects_have():
    """Composer's repositories: ``oneOf`` a repository (itself a ``oneOf`` of
    kinds, each requiring two members) and an object of exactly one member
    whose value is ``false`` (``{"packagist.org": false}``): an object of
    both would have two members and at most one, so none takes both; an
    object's counts are read through the union (the fewest members of its
    object branches, the most; a branch of no objects sets none). Before,
    refused ("its branches overlap"). Judged by the validator; with room
    for two members the counts no longer tell the branches apart, and the
    ``oneOf`` is refused, not taken as disjoint."""
    kinds = [
        {"type": "object", "required": ["type", key],
         "properties": {"type": {"enum": [kind]}, key: {"type": "string"}}}
        for kind, key in (("composer", "url"), ("vcs", "url"), ("package", "package"))
    ]  # fmt: skip
    disabled = {
        "type": "object",
        "additionalProperties": {"type": "boolean", "enum": [False]},
        "minProperties": 1,
        "maxProperties": 1,
    }
    schema = {
        "$defs": {"repository": {"type": "object", "oneOf": kinds}},
        "type": "array",
        "items": {"oneOf": [{"$ref": "#/$defs/repository"}, disabled]},
    }
    verdicts = judged_by_the_validator(
        schema,
        [[{"type": "vcs", "url": "u"}], [{"packagist.org": False}], [{"packagist.org": True}],
         [{"type": "package", "package": "p", "x": False}], [{"type": False}],
         [{"type": "composer"}], [{}], ["s"], [{"a": False, "b": False}]],
    )  # fmt: skip
    assert verdicts == [True, True, False, True, True, False, False, False, False]
    # (a branch of no objects leaves the union's counts as its object branches set them)
    schema["items"]["oneOf"][0] = {"anyOf": [{"type": "null"}, {"$ref": "#/$defs/repository"}]}
    verdicts = judged_by_the_validator(schema, [[None], [{"packagist.org": False}], [{}], [1]])
    assert verdicts == [True, True, False, False]
    schema["items"]["oneOf"][1] = disabled | {"maxProperties": 2}
    with pytest.raises(UnsupportedConstraint, match="oneOf at /items: its branches overlap"):
        lower_json_schema_ir(JsonSchema(schema))


def test_a_oneof_of_closed_objects_that_share_only_the_empty_object():
    """Bitbucket Pipelines' items: ``oneOf`` a closed object of optional
    ``variables``, and a ``oneOf`` of closed objects of one optional member
    each (``step``, ``stage``, ``parallel``), whose values no regex spells
    (arrays of any values). Their names share nothing, so
    an object of both can only be ``{}``, and the validator finds ``{}``
    fails the inner ``oneOf`` (it matches all three): no value takes both
    branches (before, refused). Judged by the validator; where no branch
    refuses ``{}``, still refused, not taken as disjoint."""

    def closed(name: str) -> dict:  # (a member of any value: grammar mode, no automata)
        return {"type": "object", "properties": {name: {"type": ["integer", "array"]}},
                "additionalProperties": False}  # fmt: skip

    inner = {"oneOf": [closed("step"), closed("stage"), closed("parallel")]}
    schema = {"$defs": {"item": inner}, "oneOf": [closed("variables"), {"$ref": "#/$defs/item"}]}
    verdicts = judged_by_the_validator(
        schema,
        [{}, {"variables": 1}, {"step": 1}, {"parallel": 2}, {"step": 1, "stage": 2},
         {"variables": 1, "step": 1}, {"step": "x"}, {"stage": [{"a": []}]}, [], 1],
    )  # fmt: skip
    assert verdicts == [True, True, True, True, False, False, False, True, False, False]
    schema["$defs"]["item"] = {"anyOf": inner["oneOf"]}  # ({} in both now)
    with pytest.raises(UnsupportedConstraint, match="oneOf at /: its branches overlap"):
        lower_json_schema_ir(JsonSchema(schema))


def test_a_union_of_listed_values_beside_a_conditional():
    """``oneOf`` branches that each list their values (through references),
    beside an ``if``/``then``/``else`` on the whole array: the values are
    among the lists, each kept where the validator accepts it under the
    whole schema (before, refused: the conditional merged into each branch
    left an overlap the lowering could not tell apart). Judged by the
    validator over every listed value and a few others; a union with a
    branch that lists none is left to the usual path."""
    schema = {
        "type": "array",
        "$defs": {"x": {"enum": [[1], [2, 4], [5]]}, "y": {"enum": [[1], [1, 2]]},
                  "z": {"enum": [[1], [2, 4], [4, 6], [5]]}},
        "oneOf": [{"$ref": "#/$defs/x"}, {"$ref": "#/$defs/y"}, {"$ref": "#/$defs/z"}],
        "if": {"minItems": 1},
        "then": {"minItems": 2, "items": {"exclusiveMaximum": 5}},
        "else": {"minItems": 1},
    }  # fmt: skip
    verdicts = judged_by_the_validator(schema, [[1], [2, 4], [5], [1, 2], [4, 6], [], [2], 1])
    assert verdicts == [False, False, False, True, False, False, False, False]
    schema["anyOf"] = schema.pop("oneOf")  # (anyOf: [2, 4] too)
    verdicts = judged_by_the_validator(schema, [[1], [2, 4], [5], [1, 2], [4, 6], [], [2], 1])
    assert verdicts == [False, True, False, True, False, False, False, False]
    schema["anyOf"].append({"type": "array", "items": {"const": 7}})  # (lists no values)
    verdicts = judged_by_the_validator(schema, [[1, 2], [2, 4], [7], [7, 7], [7, 7, 7], [1, 7]])
    assert verdicts == [True, True, False, False, False, False]


ALL_OF_VALUES_PYTHON_CONFLATES = [
    {"not": {"allOf": [{"const": True}, {"const": 1}]}},
    {"not": {"allOf": [{"const": 0}, {"const": False}]}},
    {"not": {"allOf": [{"const": [1]}, {"const": [True]}]}},
    {"properties": {"a": {"allOf": [{"const": True}, {"enum": [1]}]}}},
    {"allOf": [{"properties": {"a": {"const": True}}}, {"properties": {"a": {"const": 1}}}]},
    {"allOf": [{"items": {"const": False}}, {"items": {"const": 0}}]},
]


@pytest.mark.parametrize("schema", ALL_OF_VALUES_PYTHON_CONFLATES)
def test_all_of_tells_booleans_from_numbers(schema):
    """Two ``allOf`` members whose keyword values Python finds equal (``True
    == 1``, ``[1] == [True]``) but JSON does not are merged as two values:
    the merge once kept the first and dropped the other, so ``not`` of
    ``const: true`` and ``const: 1`` (no value) left out ``true`` (found by a
    longer run of test_differential)."""
    values = [True, False, 1, 0, [1], [True], {"a": True}, {"a": 1}, {}, [], [False], [0], None]
    judged_by_the_validator(schema, values)


NEGATED_INTEGER_CASES = [
    {"not": {"anyOf": [{"not": {"type": "integer"}}, {"type": "null"}]}},
    {"not": {"anyOf": [{"not": {"type": "integer", "minimum": 2}}, {"type": "null"}]}},
    {"oneOf": [{"items": False}, {"anyOf": [{"not": {"type": "integer"}}, {"type": "null"}]}]},
    {"oneOf": [{}, {"anyOf": [{"not": {"type": "integer"}}, {"type": "null"}]}]},
]


@pytest.mark.parametrize("schema", NEGATED_INTEGER_CASES)
def test_the_ways_to_fail_a_negated_integer_are_numbers(schema):
    """A value fails ``not: {type: integer}`` when it is an integer: a way
    of type ``integer``, which splitting the ways by JSON type once filed
    under no type, so the numbers failing a union with such a branch were
    lost (``not`` of it found no value at all; a ``oneOf`` beside it
    refused 0 and 1). Found by a longer random run of test_differential."""
    values = [0, 1, 2, 3, -1, 2.5, 1.0, 4.0, None, "a", [], [1], {}, True]
    assert any(judged_by_the_validator(schema, values))


UNEVALUATED_BESIDE_DEPENDENT_REQUIRED = [
    {"unevaluatedProperties": False, "dependentRequired": {"a": []}},
    {"unevaluatedProperties": False, "dependentRequired": {"a": ["b"]}},
    {"unevaluatedProperties": {"type": "string"}, "properties": {"b": {}},
     "dependentRequired": {"b": ["a"]}},
]  # fmt: skip


@pytest.mark.parametrize("schema", UNEVALUATED_BESIDE_DEPENDENT_REQUIRED)
def test_members_named_by_dependent_required_are_not_evaluated(schema):
    """``dependentRequired`` evaluates no member: the members it names are
    unevaluated unless the schema's own keywords evaluate them. Lowering the
    dependencies declared them first, and ``unevaluatedProperties`` then
    took them for evaluated (``{"a": 1}`` passed ``unevaluatedProperties:
    false``). Found by a longer random run of test_differential."""
    values = [{}, {"a": 1}, {"a": "x"}, {"b": 1}, {"a": 1, "b": 2}, {"a": "y", "b": "x"}, 1]
    assert judged_by_the_validator(schema, values).count(True) >= 2


CONTAINS_COUNTS_MERGED = [
    {"allOf": [{"contains": {"type": "integer"}, "minContains": 0},
               {"contains": {"type": "integer"}, "maxContains": 0}]},
    {"allOf": [{"contains": {"type": "integer"}}, {"maxContains": 0}]},
    {"allOf": [{"contains": {"type": "integer"}, "maxContains": 1}, {"minContains": 2}]},
    {"allOf": [{"contains": {"type": "integer"}, "minContains": 2},
               {"contains": {"type": "integer"}, "minContains": 0}]},
    {"contains": {"type": "integer"}, "minContains": 0,
     "allOf": [{"contains": {"type": "integer"}, "maxContains": 1}]},
]  # fmt: skip


@pytest.mark.parametrize("schema", CONTAINS_COUNTS_MERGED)
def test_merged_contains_counts_keep_each_side_s_bounds(schema):
    """``allOf`` of two schemas with the same ``contains``: each side's
    ``minContains`` (1 where unset) and ``maxContains`` bound the matches,
    and a count beside no ``contains`` does nothing. The merge once kept one
    side's ``minContains: 0`` beside the other's ``maxContains: 0`` (``[]``
    passed, though the second side needs a match and allows none). Found by
    a longer random run of test_differential."""
    values = [[], [1], [1, 2], [1, 2, 3], ["a"], ["a", 1], 1]
    judged_by_the_validator(schema, values)


@pytest.mark.parametrize("required", [True, False])
def test_a_length_bounded_search_pattern_is_built_from_its_intersection(required):
    """A password of 8 to 32 characters with a digit somewhere: the text cut
    to those lengths is one option per split around the digit, whose
    automaton passed 100,000 states (naive, fst and fsm refused the schema
    after 3 s); the automata forms build the intersection's instead, as a
    regular schema and as an optional member's terminal in a grammar. The
    text forms keep the text."""
    password = {"type": "string", "pattern": "[0-9]", "minLength": 8, "maxLength": 32}
    schema = {"type": "object", "properties": {"password": password}}
    if required:
        schema |= {"required": ["password"], "additionalProperties": False}
    spec = JsonSchema(schema)
    lowered = lower_json_schema_ir(spec)
    if required:
        dfa = ByteDFA.from_node(lowered)
        assert dfa.num_states < 5000
    else:
        assert isinstance(lowered, GrammarIR)
        assert all(t.dfa() for t in lowered.terminals.values())
    accepts = recognizer(lowered)
    assert accepts(b'{"password":"abcdefg1"}') and accepts(b'{"password":"' + b"9" * 32 + b'"}')
    assert not accepts(b'{"password":"abcdefgh"}') and not accepts(b'{"password":"abcdef1"}')
    assert not accepts(b'{"password":"' + b"9" * 33 + b'"}')
    text = lower_json_schema(spec)
    assert "(?P=" not in (text.pattern if isinstance(text, Regex) else text.text)


UUID = "bb192a34-7a7f-41fd-87a4-97bcb1a0c6ff"


@pytest.mark.parametrize(
    "schema, values, kept",
    [  # (values the validator judged with Python's re or jsonschema's formats: wrong)
        ({"enum": ["é", "a"], "pattern": "^\\w$"}, ["é", "a"], ["a"]),  # \w: ASCII
        ({"enum": ["٣", "3"], "pattern": "^\\d$"}, ["٣", "3"], ["3"]),  # \d: ASCII
        ({"enum": ["a\n", "a"], "pattern": "^a$"}, ["a\n", "a"], ["a"]),  # $: the end only
        ({"enum": ["a\u2028", "ab"], "pattern": "^a.$"}, ["a\u2028", "ab"], ["ab"]),
        ({"enum": ["1", "a"], "pattern": "\\p{L}"}, ["1", "a"], ["a"]),  # (was refused)
        ({"enum": ["x@", "a@b.c"], "format": "email"}, ["x@", "a@b.c"], ["a@b.c"]),
        (
            {"enum": [UUID[:14] + "_" + UUID[15:], UUID], "format": "uuid"},
            [UUID[:14] + "_" + UUID[15:], UUID],
            [UUID],
        ),
        (
            {"enum": [{"é": 1}, {"a": 1}], "patternProperties": {"^\\w$": {"type": "string"}}},
            [{"é": 1}, {"a": 1}],
            [{"é": 1}],
        ),
        ({"oneOf": [{"enum": ["é", "b"]}, {"pattern": "^\\w$"}]}, ["é", "b", "c"], ["é", "c"]),
        (
            {"properties": {"é": {}, "a": {}}, "propertyNames": {"pattern": "^\\w$"}},
            [{"é": 1}, {"a": 1}, {}],
            [{"a": 1}, {}],
        ),
    ],
)
def test_values_are_judged_with_ecma_patterns_and_this_package_s_formats(schema, values, kept):
    """The lowering asks the ``jsonschema`` validator which listed values
    (declared names, union branches) the rest of a schema accepts; it read
    ``pattern`` with Python's ``re`` and ``format`` with its own checkers,
    where the language reads ECMA-262 and this package's formats, so values
    were kept that the schema refuses (``"é"`` beside ``^\\w$``). The
    judge now reads them as the lowering does (``judging``)."""
    accepts = recognizer(lower_json_schema_ir(JsonSchema(schema)))
    assert [v for v in values if accepts(instance_text(schema, v).encode())] == kept


@pytest.mark.parametrize(
    "strings",
    [
        {"pattern": "a", "format": "date"},
        {"allOf": [{"pattern": "a"}, {"pattern": "b"}]},
        {"pattern": "(?=a)"},
        {"pattern": "a"},
        {"format": "hostname"},
    ],
)
def test_a_length_range_that_is_empty_leaves_no_string(strings):
    """``minLength`` above ``maxLength`` admits no string, whatever else the
    schema says of strings: beside a format and a pattern, two patterns or a
    lookaround it raised a bare ``ValueError`` (an empty repetition bound)."""
    schema = {"type": ["string", "null"], "minLength": 2, "maxLength": 1, **strings}
    lowered = lower_json_schema_ir(JsonSchema(schema))
    assert recognizer(lowered)(b"null") and not recognizer(lowered)(b'"ab"')
    with pytest.raises(ConstraintError, match="no JSON value"):
        lower_json_schema_ir(JsonSchema({**schema, "type": "string"}))


def test_pattern_properties_of_one_language_are_judged_together():
    """Two ``patternProperties`` of the same strings (``^a`` and ``^(?:a)``)
    are one Python regex for the judge: both schemas must apply to the names
    they match, not the last one alone."""
    from constrain_api.jsonschema.judging import judged_schema, python_pattern

    schema = {"patternProperties": {"^a": {"type": "string"}, "^(?:a)": {"minLength": 2}}}
    judged = judged_schema(schema)["patternProperties"]
    assert list(judged) == [python_pattern("^a")]
    assert judged[python_pattern("^a")] == {"allOf": [{"type": "string"}, {"minLength": 2}]}
    listed = {**schema, "enum": [{"a": "x"}, {"a": "xy"}, {"a": 1}]}
    accepts = recognizer(lower_json_schema_ir(JsonSchema(listed)))
    assert [v for v in listed["enum"] if accepts(instance_text(listed, v).encode())] == [
        {"a": "xy"}
    ]
