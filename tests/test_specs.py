"""Tests of the constraint specs (constrain_api.specs)."""

from __future__ import annotations

import dataclasses
import importlib.resources
import json
import pickle

import lark
import pytest

from constrain_api import where as W
from constrain_api.errors import ConstraintError
from constrain_api.specs import (
    Choice,
    Constraint,
    Grammar,
    JsonSchema,
    Regex,
    Where,
    spec_kinds,
)

JSON_GRAMMAR = r"""
?start: value

?value: object
      | array
      | STRING
      | NUMBER
      | "true" -> true
      | "false" -> false
      | "null" -> null

array: "[" [value ("," value)*] "]"
object: "{" [member ("," member)*] "}"
member: STRING ":" value

STRING: /"(?:[^"\\\x00-\x1f]|\\["\\\/bfnrt]|\\u[0-9a-fA-F]{4})*"/
NUMBER: /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/

%import common.WS
%ignore WS
"""


def _lark_grammar(name: str) -> str:
    return (importlib.resources.files("lark") / "grammars" / name).read_text(encoding="utf-8")


# -------------------------------------------------------------- all specs


def _examples() -> list[Constraint]:
    return [
        Regex("[a-z]+"),
        Grammar('start: "a"+'),
        JsonSchema({"type": "string"}),
        Choice(["yes", "no"]),
        Where('stops_at(x, ".")'),
    ]


def test_spec_kinds():
    kinds = spec_kinds()
    assert kinds == {
        "regex": Regex,
        "grammar": Grammar,
        "json_schema": JsonSchema,
        "choice": Choice,
        "where": Where,
    }
    kinds["extra"] = Regex
    assert "extra" not in spec_kinds()  # a fresh dict each time


@pytest.mark.parametrize("spec", _examples(), ids=lambda s: s.kind)
def test_specs_are_frozen_hashable_picklable_values(spec):
    assert isinstance(spec, Constraint)
    assert spec_kinds()[spec.kind] is type(spec)
    twin = pickle.loads(pickle.dumps(spec))
    assert twin == spec
    assert hash(twin) == hash(spec)
    assert {spec: 1}[twin] == 1
    field = dataclasses.fields(spec)[0].name
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(spec, field, "changed")


def test_specs_of_different_kinds_differ():
    assert Regex("a") != Choice(["a"])
    assert len(set(_examples())) == 5


@pytest.mark.parametrize("spec", _examples(), ids=lambda s: s.kind)
def test_describe_is_one_short_line(spec):
    text = spec.describe()
    assert text and "\n" not in text and len(text) < 120


@pytest.mark.parametrize(
    "spec",
    [
        Regex("a" * 500 + "\n"),
        Grammar("start: " + " ".join(['"x"'] * 300) + "\n" * 50),
        JsonSchema({"enum": [str(i) for i in range(300)]}),
        Choice([str(i) * 10 for i in range(300)]),
        Where(" or ".join(f'"{i}" in x' for i in range(300))),
    ],
    ids=lambda s: s.kind,
)
def test_describe_truncates_long_inputs(spec):
    text = spec.describe()
    assert "\n" not in text and len(text) < 120 and "…" in text


def test_constraint_is_abstract():
    with pytest.raises(TypeError):
        Constraint()  # type: ignore[abstract]


# ------------------------------------------------------------------ Regex


def test_regex_value_semantics():
    assert Regex("a+") == Regex("a+")
    assert Regex("a+") != Regex("a*")
    assert Regex("a+").kind == "regex"
    assert Regex("").pattern == ""
    assert Regex("a+").compiled().fullmatch("aaa")
    assert Regex("a+").describe() == "regex /a+/"


@pytest.mark.parametrize(
    ("pattern", "where"),
    [("a(b", 1), ("ab)", 2), ("[a-", 0), ("a**", 2), ("(?P<1>a)", 4), ("x{2,1}", 2)],
)
def test_regex_errors_carry_position(pattern, where):
    with pytest.raises(ConstraintError) as info:
        Regex(pattern)
    assert info.value.what == "regex"
    assert info.value.where == where
    assert info.value.message


def test_regex_backend_specific_constructs_are_valid():
    # Lookarounds and backreferences are valid Python regexes: a backend that
    # cannot express them says so itself (UnsupportedConstraint).
    assert Regex(r"(a)\1(?=b)b").pattern == r"(a)\1(?=b)b"


@pytest.mark.parametrize("pattern", [b"ab", 3, None])
def test_regex_must_be_str(pattern):
    with pytest.raises(ConstraintError) as info:
        Regex(pattern)  # type: ignore[arg-type]
    assert info.value.what == "regex"
    assert "str" in info.value.message


def test_regex_repetition_overflow_is_a_constraint_error():
    with pytest.raises(ConstraintError) as info:
        Regex("a{99999999999}")
    assert info.value.what == "regex"


# ---------------------------------------------------------------- Grammar


def test_grammar_value_semantics():
    g = Grammar('start: "a"')
    assert g == Grammar('start: "a"', start="start")
    assert g != Grammar('start: "a"\n')
    assert g != Grammar('start: "a"\nother: "b"', start="other")
    assert g.kind == "grammar"
    assert hash(g) == hash(Grammar('start: "a"'))
    assert "start=start" in g.describe()


def test_json_grammar_loads_and_parses():
    g = Grammar(JSON_GRAMMAR)
    tree = g.lark().parse('{"a": [1, -2.5e3, true, null], "b": {}}')
    assert tree.data == "object"
    with pytest.raises(lark.exceptions.UnexpectedInput):
        g.lark().parse('{"a": }')


def test_ignore_grammar_loads():
    g = Grammar("start: WORD+\n%import common.WORD\n%import common.WS\n%ignore WS\n")
    assert len(g.lark().parse("hello   big\nworld").children) == 3


def test_lark_python_grammar_loads():
    g = Grammar(_lark_grammar("python.lark"), start="file_input")
    assert g.start == "file_input"
    # python.lark uses %declare _INDENT _DEDENT; the Earley construction accepts it
    assert isinstance(g.lark(), lark.Lark)


def test_lark_meta_grammar_loads():
    assert Grammar(_lark_grammar("lark.lark")).text.startswith("#")


def test_grammar_lark_is_cached_and_not_part_of_the_value():
    g = Grammar(JSON_GRAMMAR)
    assert g.lark() is Grammar(JSON_GRAMMAR).lark()
    assert g.lark(parser="lalr") is not g.lark()
    assert g.lark(parser="lalr").parse("[1, 2]").data == "array"
    assert pickle.loads(pickle.dumps(g)) == g
    with pytest.raises(TypeError):
        g.lark(start="value")


@pytest.mark.parametrize(
    "text",
    [
        '_sep{x, sep}: x (sep x)*\nstart: _sep{"a", ","}\n',  # templates
        'start: A\nA.2: "a"\n',  # terminal priority
        'start: A B\n%declare B\nA: "a"\n',  # %declare
        '%import common.WS\n%override WS: " "\nstart: WS\n',  # %override
        'start: "a" unused\nunused: "b"\nnever: "c"\n',  # unreachable rules
        "start: A\nA: /a*/\n",  # zero-width terminal (refused by dynamic Earley only)
        'start: "a"i ("b".."d")~2..3\n',  # case-insensitive literal, range, repeat
        '?start: item+\n!item: "x" -> x_item\n',  # rule modifiers, alias
    ],
)
def test_valid_grammars_load(text):
    assert Grammar(text).text == text


def test_zero_width_terminal_is_valid_but_dynamic_earley_refuses_it():
    g = Grammar("start: A\nA: /a*/\n")
    with pytest.raises(lark.exceptions.GrammarError):
        g.lark()


@pytest.mark.parametrize(
    ("text", "where", "fragment"),
    [
        ('start: "a"\nfoo: ( "b" \n', "2:12", "unexpected"),
        ('start: "a"\n  ???\n', "2:3", "Expecting"),
        ('start: "a" $ \n', "1:12", "Unexpected input"),
        ('start: "a\n', "1:8", "Unexpected input"),
        ("start: foo\n", "1:8", "'foo' used but not defined"),
        ('start: "x" FOO\nfoo: "y"\n', "1:12", "'FOO' used but not defined"),
        ('start: foo\nfoo: "x" bar\n', "2:10", "'bar' used but not defined"),
        ("%import common.NOPE\nstart: NOPE\n", "2:8", "'NOPE' used but not defined"),
        ('start: "a"\nstart: "b"\n', "2:1", "defined more than once"),
        ('start: "x" /a(/\n', "1:12", "bad regular expression /a(/"),
        ("start: A\nA: /[z-a]/\n", "2:4", "in terminal A"),
        ("start: X\n  %import .other.X\n", "2:3", "relative %import"),
        ("%import nosuch.X\nstart: X\n", None, "cannot %import"),
        ('start: ""\n', None, "Empty terminals"),
        ('start: A\nA: "a" A\n', None, "Recursion in terminal"),
        ('start: "a"\n%ignore WS\n', None, "marked to ignore"),
        ('_s{x, y}: x y\nstart: _s{"a"}\n', None, "Wrong number of template arguments"),
    ],
)
def test_grammar_errors(text, where, fragment):
    with pytest.raises(ConstraintError) as info:
        Grammar(text)
    assert info.value.what == "grammar"
    assert info.value.where == where
    assert fragment in info.value.message
    assert "\n" not in info.value.message


@pytest.mark.parametrize(
    ("text", "start", "fragment"),
    [
        ('start: "a"', "foo", "start rule 'foo' is not defined"),
        ('start: "a"\nA: "b"', "A", "start rule 'A' is not defined"),
        ("", "start", "start rule 'start' is not defined"),
        ('_t{x}: x\nstart: _t{"a"}', "_t", "is a template"),
        ('start: "a"', "", "empty"),
    ],
)
def test_grammar_unknown_start_rule(text, start, fragment):
    with pytest.raises(ConstraintError) as info:
        Grammar(text, start=start)
    assert info.value.what == "grammar"
    assert fragment in info.value.message


@pytest.mark.parametrize(("text", "start"), [(b'start: "a"', "start"), ('start: "a"', None)])
def test_grammar_types(text, start):
    with pytest.raises(ConstraintError) as info:
        Grammar(text, start=start)  # type: ignore[arg-type]
    assert info.value.what == "grammar"


# ------------------------------------------------------------- JsonSchema


def test_json_schema_canonical_text_keeps_key_order():
    schema = {"type": "object", "properties": {"z": {"type": "string"}, "a": {"type": "integer"}}}
    s = JsonSchema(schema)
    assert s.schema_json == (
        '{"type":"object","properties":{"z":{"type":"string"},"a":{"type":"integer"}}}'
    )
    assert list(s.schema["properties"]) == ["z", "a"]
    assert s.kind == "json_schema"


def test_json_schema_equal_across_input_forms():
    schema = {"properties": {"b": {"const": "é"}, "a": {"minimum": 1.5}}}
    a = JsonSchema(schema)
    b = JsonSchema(json.dumps(schema, indent=4))
    c = JsonSchema(json.dumps(schema, ensure_ascii=True))
    assert a == b == c
    assert hash(a) == hash(b) == hash(c)
    assert "é" in a.schema_json  # not ascii-escaped
    assert JsonSchema({"properties": {"a": {}, "b": {}}}) != JsonSchema(
        {"properties": {"b": {}, "a": {}}}
    )


def test_json_schema_property_is_a_fresh_copy():
    s = JsonSchema({"type": "object", "required": ["a"]})
    got = s.schema
    got["required"].append("b")
    assert s.schema == {"type": "object", "required": ["a"]}
    assert got is not s.schema


def test_json_schema_booleans_and_options():
    assert JsonSchema(True).schema is True
    assert JsonSchema("false").schema is False
    assert JsonSchema(True).schema_json == "true"
    flexible = JsonSchema({}, whitespace="flexible", max_whitespace=4)
    assert (flexible.whitespace, flexible.max_whitespace) == ("flexible", 4)
    assert flexible != JsonSchema({}, whitespace="flexible", max_whitespace=3)
    assert JsonSchema({}).whitespace == "compact"
    assert JsonSchema({}, whitespace="flexible", max_whitespace=0).max_whitespace == 0
    assert "flexible<=4" in flexible.describe()


def test_json_schema_older_draft_is_checked_against_its_metaschema():
    draft7 = "http://json-schema.org/draft-07/schema#"
    # exclusiveMinimum is a number since draft 6, a boolean in draft 4.
    assert JsonSchema({"$schema": draft7, "exclusiveMinimum": 3}).schema["exclusiveMinimum"] == 3
    draft4 = "http://json-schema.org/draft-04/schema#"
    assert JsonSchema({"$schema": draft4, "minimum": 1, "exclusiveMinimum": True})
    with pytest.raises(ConstraintError) as info:
        JsonSchema({"$schema": draft7, "exclusiveMinimum": True})
    assert info.value.where == "/exclusiveMinimum"


def test_json_schema_ecma_patterns_are_not_judged_by_python_re():
    # Valid ECMA-262 patterns that Python's re rejects: the lowering decides.
    s = JsonSchema({"pattern": "^\\p{Letter}+$", "patternProperties": {"(?<y>a)": {}}})
    assert s.schema["pattern"] == "^\\p{Letter}+$"


@pytest.mark.parametrize(
    ("schema", "where", "fragment"),
    [
        ('{"a": 1,}', "1:9", "not valid JSON"),
        ('{\n  "type": "string"\n  "x": 1}', "3:3", "not valid JSON"),
        (
            '{"type": "object", "properties": {"age": {"type": "integr"}}}',
            "/properties/age/type",
            "",
        ),
        ({"properties": {"a/b~": {"minLength": -1}}}, "/properties/a~1b~0/minLength", "minimum"),
        ({"required": "a"}, "/required", "not of type 'array'"),
        ("[1]", "", "JSON object or boolean"),
        ('"string"', "", "JSON object or boolean"),
        ('{"a": 1, "a": 2}', None, "duplicate object key 'a'"),
        ('{"minimum": NaN}', None, "NaN is not a JSON number"),
        ({"minimum": float("inf")}, "/minimum", "not a JSON number"),
        ({"enum": [{1: 2}]}, "/enum/0", "not a string"),
        ({"enum": [{1, 2}]}, "/enum/0", "not JSON data"),
        ([1], None, "a dict, a bool or JSON text"),
        (None, None, "a dict, a bool or JSON text"),
    ],
)
def test_json_schema_errors(schema, where, fragment):
    with pytest.raises(ConstraintError) as info:
        JsonSchema(schema)
    assert info.value.what == "json schema"
    assert info.value.where == where
    assert fragment in info.value.message


@pytest.mark.parametrize(
    ("whitespace", "max_whitespace"),
    [
        ("loose", 1),
        ("COMPACT", 1),
        (None, 1),
        ("flexible", -1),
        ("flexible", 1.0),
        ("compact", True),
    ],
)
def test_json_schema_whitespace_options_rejected(whitespace, max_whitespace):
    with pytest.raises(ConstraintError) as info:
        JsonSchema({}, whitespace=whitespace, max_whitespace=max_whitespace)
    assert info.value.what == "json schema"


# ----------------------------------------------------------------- Choice


def test_choice_normalizes_to_tuple_without_duplicates():
    c = Choice(["b", "a", "b", "", "a"])
    assert c.options == ("b", "a", "")
    assert c == Choice(("b", "a", ""))
    assert c != Choice(["a", "b", ""])  # order is kept
    assert hash(c) == hash(Choice(iter(["b", "a", ""])))
    assert c.kind == "choice"
    assert Choice([""]).options == ("",)


@pytest.mark.parametrize(
    ("options", "where"),
    [([], None), ("abc", None), (b"abc", None), ({"a": 1}, None), (3, None), (["a", 1], 1)],
)
def test_choice_errors(options, where):
    with pytest.raises(ConstraintError) as info:
        Choice(options)
    assert info.value.what == "choice"
    assert info.value.where == where


# ------------------------------------------------------------------ Where


def test_where_from_string_or_predicate():
    a = Where('"a" in x and len(words(x)) <= 3')
    b = Where(W.contains("a") & W.len_words(le=3))
    c = Where('"a" in answer and 3 >= len(words(answer))')
    assert a == b == c
    assert hash(a) == hash(c)
    assert a.predicate == W.And((W.Contains("a"), W.LenWords("<=", 3)))
    assert a.kind == "where"
    assert a.holds("a b c") and not a.holds("a b c d") and not a.holds("b")
    assert a.describe() == 'where "a" in x and len(words(x)) <= 3'


def test_where_errors():
    with pytest.raises(ConstraintError) as info:
        Where("len(x) < -1")
    assert (info.value.what, info.value.where) == ("where", 9)
    with pytest.raises(ConstraintError) as info:
        Where(3)  # type: ignore[arg-type]
    assert info.value.what == "where"


def _all_meta_cases() -> list:
    """Every MaskBench schema and every JSON Schema Test Suite schema (all
    drafts), as JSON data; empty when the shared data is absent."""
    from constrain_api.shared import shared_dir

    base = shared_dir()
    cases = []
    for path in sorted((base / "maskbench" / "data").glob("*.json")):
        cases.append(json.loads(path.read_text(encoding="utf-8"))["schema"])
    for path in sorted((base / "json-schema-test-suite" / "tests").rglob("*.json")):
        cases.extend(group["schema"] for group in json.loads(path.read_text(encoding="utf-8")))
    return cases


def test_json_schema_meta_check_fast_path_never_accepts_what_jsonschema_rejects():
    """The compiled meta-schema check (``jsonschema-rs``) only ever accepts:
    on every shared schema it finds valid, python-jsonschema, which decides
    and words the errors, finds it valid too. So a schema is accepted or
    refused as before; only the time to say so changed."""
    import jsonschema

    from constrain_api import specs

    cases = _all_meta_cases()
    if not cases:
        pytest.skip(
            "the shared data (MaskBench, the JSON Schema Test Suite) is absent: "
            "set $CONSTRAIN_SHARED"
        )
    fast = 0
    for schema in cases:
        if not specs._meta_valid_fast(schema):
            continue
        fast += 1
        cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        errors = cls(cls.META_SCHEMA, format_checker=specs._meta_format_checker(cls))
        assert next(errors.iter_errors(schema), None) is None, schema
    assert fast > 0.9 * len([s for s in cases if isinstance(s, dict)])  # (it does take them)


def test_json_schema_meta_check_takes_the_fast_path_and_keeps_the_errors(monkeypatch):
    """A valid schema is accepted without python-jsonschema's check (made to
    fail here); an invalid one still gets its error, where and wording,
    from python-jsonschema; a ``$schema`` neither knows is never fetched:
    python-jsonschema judges it by the default draft, as before."""
    import jsonschema

    from constrain_api import specs

    assert specs._meta_valid_fast({"type": "object", "properties": {"a": {"type": "string"}}})
    assert not specs._meta_valid_fast({"type": "integr"})
    assert not specs._meta_valid_fast(True)
    assert not specs._meta_valid_fast({"$schema": "http://example.com/no-such-draft", "type": 1})
    # draft 3: python-jsonschema knows it, jsonschema-rs would fetch its
    # meta-schema: it is never asked
    draft3 = {"$schema": "http://json-schema.org/draft-03/schema#", "type": "object"}
    asked = []
    with monkeypatch.context() as m:
        m.setattr(specs._jsonschema_rs.meta, "is_valid", lambda s: asked.append(s) or True)
        assert not specs._meta_valid_fast(draft3)
        assert not specs._meta_valid_fast({"$schema": "http://example.com/x", "type": 1})
        assert asked == []
    assert JsonSchema(draft3).schema == draft3
    for uri in (
        "http://json-schema.org/draft-07/schema",
        "https://json-schema.org/draft/2019-09/schema",
    ):
        assert specs._meta_valid_fast({"$schema": uri, "type": "object"})

    def refuse(*args, **kwargs):
        raise AssertionError("python-jsonschema was asked")

    with monkeypatch.context() as m:
        m.setattr(jsonschema.Draft202012Validator, "check_schema", refuse)
        assert JsonSchema({"type": "object", "required": ["a"]}).schema["required"] == ["a"]
    with pytest.raises(ConstraintError) as info:
        JsonSchema({"properties": {"a": {"minLength": -1}}})
    assert info.value.where == "/properties/a/minLength" and "minimum" in info.value.message
    custom = {"$schema": "http://example.com/no-such-draft", "type": "object"}
    assert JsonSchema(custom).schema == custom


@pytest.mark.parametrize("form", ["data", "text"])
def test_json_schema_nested_past_the_recursion_limit_is_a_constraint_error(form):
    """A schema nested deeper than Python recurses is refused with a
    ``ConstraintError`` (as data, it escaped as a ``RecursionError`` from
    the check of a dict's values); one a few hundred deep is checked as any
    other."""

    def nested(depth):
        text = '{"items":' * depth + "{}" + "}" * depth
        return json.loads(text) if form == "data" and depth < 500 else text

    assert JsonSchema(nested(300)) == JsonSchema(json.loads('{"items":' * 300 + "{}" + "}" * 300))
    deep = nested(5000)
    if form == "data":  # (built by hand: json.loads itself refuses this depth)
        deep = inner = {}
        for _ in range(5000):
            inner["items"] = {}
            inner = inner["items"]
    with pytest.raises(ConstraintError) as info:
        JsonSchema(deep)
    assert "nested too deeply" in info.value.message
