"""Tests of the LMQL-style predicate language (constrain_api.where)."""

from __future__ import annotations

import dataclasses
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from constrain_api import where as W
from constrain_api.errors import ConstraintError
from constrain_api.where import (
    And,
    Contains,
    LenChars,
    LenWords,
    NotContains,
    OneOf,
    Or,
    StopsAt,
    parse,
)

# ------------------------------------------------------------------ parsing


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ('stops_at(x, ".")', StopsAt(".")),
        ('STOPS_AT(ANSWER, "\\n")', StopsAt("\n")),
        ('x in ["a", "b"]', OneOf(("a", "b"))),
        ("x in ('a', '')", OneOf(("a", ""))),
        ('x in ["a", "b", "a"]', OneOf(("a", "b"))),
        ('"s" in x', Contains("s")),
        ('"s" not in x', NotContains("s")),
        ('not "s" in x', NotContains("s")),
        ('not "s" not in x', Contains("s")),
        ("len(x) < 5", LenChars("<", 5)),
        ("len(x) <= 5", LenChars("<=", 5)),
        ("len(x) == 0", LenChars("==", 0)),
        ("len(x) >= 5", LenChars(">=", 5)),
        ("len(x) > 5", LenChars(">", 5)),
        ("len(words(x)) <= 3", LenWords("<=", 3)),
        ("5 >= len(x)", LenChars("<=", 5)),
        ("5 < len(words(x))", LenWords(">", 5)),
        ("7 == len(x)", LenChars("==", 7)),
        ("3 < len(x) <= 10", And((LenChars(">", 3), LenChars("<=", 10)))),
        ("not len(x) < 5", LenChars(">=", 5)),
        ("not len(words(x)) >= 2", LenWords("<", 2)),
        ('  "a" in x  ', Contains("a")),
        ('("a" in x)', Contains("a")),
        ('(\n  "a" in x and\n  "b" in x\n)', And((Contains("a"), Contains("b")))),
        ('"a" "b" in x', Contains("ab")),
        ('"\\x00\\ud800\\U0001f600" in x', Contains("\x00\ud800\U0001f600")),
        ('"a" in answer and len(answer) > 1', And((Contains("a"), LenChars(">", 1)))),
    ],
)
def test_parse_forms(source, expected):
    assert parse(source) == expected


def test_and_binds_tighter_than_or():
    p = parse('"a" in x or "b" in x and "c" in x')
    assert p == Or((Contains("a"), And((Contains("b"), Contains("c")))))
    q = parse('"a" in x and "b" in x or "c" in x')
    assert q == Or((And((Contains("a"), Contains("b"))), Contains("c")))


def test_parentheses_override_precedence():
    p = parse('("a" in x or "b" in x) and "c" in x')
    assert p == And((Or((Contains("a"), Contains("b"))), Contains("c")))
    assert str(p) == '("a" in x or "b" in x) and "c" in x'


def test_nested_and_or_are_flattened():
    assert parse('"a" in x and ("b" in x and "c" in x)') == And(
        (Contains("a"), Contains("b"), Contains("c"))
    )
    assert And((And((Contains("a"), Contains("b"))), Contains("c"))) == And(
        (Contains("a"), Contains("b"), Contains("c"))
    )
    assert parse('("a" in x or "b" in x) or "c" in x') == Or(
        (Contains("a"), Contains("b"), Contains("c"))
    )


def test_not_pushes_through_and_or():
    p = parse('not ("a" in x or len(x) < 3)')
    assert p == And((NotContains("a"), LenChars(">=", 3)))
    q = parse('not ("a" in x and "b" not in x)')
    assert q == Or((NotContains("a"), Contains("b")))


def test_variable_name_is_not_part_of_the_predicate():
    assert parse('"a" in y') == parse('"a" in x')


def test_str_renders_lmql_form():
    p = parse('stops_at(x, "\\n") and x in ["a", "b\\"c"] or 3 >= len(words(x))')
    assert str(p) == 'stops_at(x, "\\n") and x in ["a", "b\\"c"] or len(words(x)) <= 3'
    assert p.render("out") == (
        'stops_at(out, "\\n") and out in ["a", "b\\"c"] or len(words(out)) <= 3'
    )


def test_render_rejects_non_identifier():
    with pytest.raises(ValueError):
        Contains("a").render("not a name")
    with pytest.raises(ValueError):
        Contains("a").render("in")


# --------------------------------------------------------------- rejections


@pytest.mark.parametrize(
    ("source", "where", "fragment"),
    [
        ("foo(x)", 0, "unsupported call foo()"),
        ('"a" in x and foo(x)', 13, "unsupported call foo()"),
        ("len(tokens(x)) < 3", 4, "unsupported call tokens()"),
        ('x.upper() in ["A"]', 0, "attribute access .upper"),
        ('x[0] in ["a"]', 0, "subscript"),
        ("len(x) < -1", 9, "non-negative integer literal"),
        ("len(x) < 1.5", 9, "non-negative integer literal"),
        ("len(x) < True", 9, "non-negative integer literal"),
        ("len(x) < n", 9, "non-negative integer literal"),
        ('x in ["a"] and "b" in y', 22, "mixed variables x and y"),
        ('"é" in x and len(z) < 3', 17, "mixed variables x and z"),
        ("len(x) != 3", 0, "unsupported comparison !="),
        ("x is None", 0, "unsupported comparison is"),
        ('x == "a"', 0, "unsupported comparison =="),
        ("len(x) < len(words(x))", 9, "cannot compare two lengths"),
        ("1 < 2", 0, "unsupported comparison <"),
        ('"a" in x in ["b"]', 7, "only length bounds can be chained"),
        ("x", 0, "bare variable"),
        ('"a"', 0, "not a predicate"),
        ("len(x)", 0, "must be compared"),
        ("len(x, x) < 3", 0, "len() takes 1 argument"),
        ("len < 3", 0, "len is a function"),
        ('stops_at(x, "")', 12, "non-empty"),
        ('stops_at(x, s=".")', 14, "keyword"),
        ("stops_at(x, 3)", 12, "string literal"),
        ('stops_at("a", x)', 9, "expected the variable"),
        ('"" in x', 0, "non-empty"),
        ("x in []", 5, "at least one option"),
        ("x in [1]", 6, "string literal"),
        ('x in "abc"', 5, "list of string literals"),
        ('x not in ["a"]', 0, "not supported"),
        ('b"a" in x', 0, "string literal"),
        ('f"a" in x', 0, "f-string"),
        ('not stops_at(x, "a")', 0, "cannot negate"),
        ('not x in ["a"]', 0, "cannot negate"),
        ("not len(x) == 3", 0, "cannot negate"),
        ("-len(x) < 3", 0, "unsupported operator -"),
        ('~"a" in x', 0, "unsupported operator ~"),
        ("len(x) + 1 < 3", 0, "arithmetic"),
        ("lambda: 1", 0, "lambda"),
        ('"a" in x )', 9, "syntax error: unmatched ')'"),
        ('"a" in x and (', 13, "syntax error"),
        ("len(x) <<< 3", 9, "syntax error"),
        ("", 0, "empty predicate"),
    ],
)
def test_rejected(source, where, fragment):
    with pytest.raises(ConstraintError) as info:
        parse(source)
    assert info.value.what == "where"
    assert info.value.where == where
    assert fragment in info.value.message


def test_offsets_are_characters_not_bytes_and_count_leading_space():
    with pytest.raises(ConstraintError) as info:
        parse('  "ééé" in x and foo(x)')
    assert info.value.where == 17
    assert '  "ééé" in x and foo(x)'[17:].startswith("foo")


def test_offset_on_a_later_line():
    source = '(\n  "a" in x and\n  foo(x))'
    with pytest.raises(ConstraintError) as info:
        parse(source)
    assert source[info.value.where :].startswith("foo(x)")


def test_parse_never_evaluates():
    # A predicate that would have a side effect if evaluated is only rejected.
    with pytest.raises(ConstraintError, match=r"attribute access \.system"):
        parse('__import__("os").system("true")')
    with pytest.raises(ConstraintError, match="unsupported call __import__"):
        parse('__import__("os") and "a" in x')


def test_non_string_source_rejected():
    with pytest.raises(ConstraintError) as info:
        parse(42)  # type: ignore[arg-type]
    assert info.value.what == "where"


# ------------------------------------------------------------------- holds


@pytest.mark.parametrize(
    ("predicate", "text", "expected"),
    [
        (StopsAt("."), "Hi.", True),
        (StopsAt("."), "Hi", False),
        (StopsAt("."), "Hi. Yo.", False),
        (StopsAt("."), ".", True),
        (StopsAt("."), "", False),
        (StopsAt("aa"), "aa", True),
        (StopsAt("aa"), "baa", True),
        (StopsAt("aa"), "aaa", False),  # the first "aa" ends at offset 2
        (StopsAt("ab"), "aab", True),
        (StopsAt("\n\n"), "a\n\n", True),
        (OneOf(("yes", "no")), "yes", True),
        (OneOf(("yes", "no")), "yes ", False),
        (OneOf(("",)), "", True),
        (Contains("cat"), "concatenate", True),
        (Contains("cat"), "dog", False),
        (NotContains("cat"), "dog", True),
        (NotContains("cat"), "a cat", False),
        (LenChars("<=", 3), "abc", True),
        (LenChars("<=", 3), "abcd", False),
        (LenChars("==", 2), "é😀", True),  # code points, not bytes
        (LenWords("==", 3), "  one two\tthree\n", True),
        (LenWords("<", 1), " \n\t", True),
        (LenWords(">=", 2), "one", False),
        (LenWords("==", 2), "a\u2003b", True),  # em space is whitespace for str.split
        (And((Contains("a"), LenChars("<", 3))), "ab", True),
        (And((Contains("a"), LenChars("<", 3))), "abc", False),
        (Or((Contains("z"), LenChars("<", 3))), "abc", False),
        (Or((Contains("z"), LenChars("<", 3))), "abz", True),
    ],
)
def test_holds(predicate, text, expected):
    assert predicate.holds(text) is expected


# ------------------------------------------------------------------ builders


def test_builders():
    assert W.stops_at(".") == StopsAt(".")
    assert W.one_of(["a", "b"]) == OneOf(("a", "b"))
    assert W.one_of(iter(["a"])) == OneOf(("a",))
    assert W.contains("a") == Contains("a")
    assert W.not_contains("a") == NotContains("a")
    assert W.len_words(le=5) == LenWords("<=", 5)
    assert W.len_chars(gt=1) == LenChars(">", 1)
    assert W.len_chars(ge=1, le=5) == And((LenChars("<=", 5), LenChars(">=", 1)))
    assert W.len_words(lt=9, eq=2) == And((LenWords("<", 9), LenWords("==", 2)))


def test_operators_build_and_or_not():
    a, b, c = W.contains("a"), W.contains("b"), W.len_chars(lt=4)
    assert a & b & c == And((a, b, c))
    assert a | b | c == Or((a, b, c))
    assert (a | b) & c == And((Or((a, b)), c))
    assert ~a == NotContains("a")
    assert ~(a | c) == And((NotContains("a"), LenChars(">=", 4)))
    with pytest.raises(ConstraintError):
        ~W.stops_at(".")
    assert a.__and__("a") is NotImplemented


@pytest.mark.parametrize(
    "build",
    [
        lambda: W.len_words(),
        lambda: W.len_chars(le=-1),
        lambda: W.len_chars(le=2.0),
        lambda: W.len_chars(le=True),
        lambda: LenChars("!=", 1),
        lambda: W.stops_at(""),
        lambda: W.contains(""),
        lambda: W.not_contains(3),
        lambda: W.one_of([]),
        lambda: W.one_of("ab"),
        lambda: W.one_of(["a", 1]),
        lambda: And((W.contains("a"),)),
        lambda: Or((W.contains("a"), "b")),
    ],
)
def test_builder_rejections(build):
    with pytest.raises(ConstraintError) as info:
        build()
    assert info.value.what == "where"


def test_predicates_are_frozen_hashable_values():
    p = parse('"a" in x and len(x) < 3')
    q = W.contains("a") & W.len_chars(lt=3)
    assert p == q
    assert hash(p) == hash(q)
    assert len({p, q, W.contains("b")}) == 2
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.parts = ()  # type: ignore[misc]
    assert OneOf(["a", "b"]).options == ("a", "b")


# ---------------------------------------------------------------- properties

_chars = st.characters(exclude_categories=())  # includes lone surrogates
_strings = st.text(_chars, min_size=1, max_size=6)
_leaves = st.one_of(
    st.builds(StopsAt, _strings),
    st.builds(OneOf, st.lists(st.text(_chars, max_size=4), min_size=1, max_size=4).map(tuple)),
    st.builds(Contains, _strings),
    st.builds(NotContains, _strings),
    st.builds(LenWords, st.sampled_from(W.OPS), st.integers(0, 10**12)),
    st.builds(LenChars, st.sampled_from(W.OPS), st.integers(0, 10**12)),
)
predicates = st.recursive(
    _leaves,
    lambda kids: st.one_of(
        st.builds(And, st.lists(kids, min_size=2, max_size=3).map(tuple)),
        st.builds(Or, st.lists(kids, min_size=2, max_size=3).map(tuple)),
    ),
    max_leaves=10,
)


@settings(max_examples=300, deadline=None)
@given(predicates)
def test_round_trip(p):
    assert parse(str(p)) == p
    assert parse(p.render("answer")) == p


def _negatable(p):
    if isinstance(p, And | Or):
        return all(_negatable(q) for q in p.parts)
    if isinstance(p, LenChars | LenWords):
        return p.op != "=="
    return isinstance(p, Contains | NotContains)


_small_texts = st.text(st.sampled_from("ab .\n"), max_size=8)
_small_leaves = st.one_of(
    st.builds(Contains, st.text(st.sampled_from("ab ."), min_size=1, max_size=2)),
    st.builds(NotContains, st.text(st.sampled_from("ab ."), min_size=1, max_size=2)),
    st.builds(LenWords, st.sampled_from(["<", "<=", ">=", ">"]), st.integers(0, 4)),
    st.builds(LenChars, st.sampled_from(["<", "<=", ">=", ">"]), st.integers(0, 8)),
)
_negatable_predicates = st.recursive(
    _small_leaves,
    lambda kids: st.one_of(
        st.builds(And, st.lists(kids, min_size=2, max_size=3).map(tuple)),
        st.builds(Or, st.lists(kids, min_size=2, max_size=3).map(tuple)),
    ),
    max_leaves=6,
)


@settings(max_examples=300, deadline=None)
@given(_negatable_predicates, _small_texts)
def test_negation_is_the_complement(p, text):
    assert _negatable(p)
    assert (~p).holds(text) is (not p.holds(text))
    assert parse(f"not ({p})").holds(text) is (not p.holds(text))


@settings(max_examples=500, deadline=None)
@given(st.text(st.sampled_from("ab"), min_size=1, max_size=3), st.text(st.sampled_from("ab")))
def test_stops_at_matches_independent_definition(stop, text):
    # ends with the stop string, and no occurrence ends before the end
    expected = text.endswith(stop) and stop not in text[:-1]
    assert StopsAt(stop).holds(text) is expected


@settings(max_examples=300, deadline=None)
@given(st.text(st.sampled_from("ab \t\n\u00a0\u2028\x1c")), st.integers(0, 4))
def test_len_words_counts_non_whitespace_runs(text, n):
    words = len(re.findall(r"\S+", text))
    assert LenWords("==", n).holds(text) is (words == n)
    assert parse(f"len(words(x)) <= {n}").holds(text) is (words <= n)
