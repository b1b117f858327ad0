"""constrain_api.jsonschema.strings: canonical JSON strings, lengths, ECMA patterns, exclusions.

Oracles are plain Python: ``json.dumps(s, ensure_ascii=False)`` for the
spelling, ``len(s)`` for lengths, ``re.search`` with a hand-translated Python
pattern (or a predicate) for ``pattern``, set membership for ``string_not_in``.
Every regex is checked through ``ByteDFA`` (the automata) and through Python's
``re`` (portability) on the same strings.
"""

from __future__ import annotations

import functools
import itertools
import json
import random
import re
import unicodedata
from collections.abc import Callable, Iterable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from constrain_api.automata import ByteDFA, LazyDFA, parse_regex
from constrain_api.automata.printer import NOTHING_TEXT, concatenable
from constrain_api.errors import CompileLimitExceeded, ConstraintError, UnsupportedConstraint
from constrain_api.jsonschema.strings import (
    CHAR,
    encode_node,
    pattern_piece,
    pattern_regex,
    quote,
    string_not_in,
    string_not_in_piece,
    string_regex,
)
from constrain_api.shared import shared_file

SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])

INTERESTING = [
    "a", "b", "c", "x", "@", "-", "0", "7", "_", " ", '"', "\\", "/", "\n", "\r", "\t",
    "\b", "\f", "\x00", "\x01", "\x1f", "\x7f", "\x85", "\xa0", "é", "É", "ß", "π", "৪",
    "߀", "中", "\u2028", "\u2029", "\ufeff", "\u3000", "😀", "𐐀", "\U0010ffff",
]  # fmt: skip

SAMPLES = [
    "", "a", "aa", "aaa", "ab", "abc", "abcabc", "aXb", "cba", "foo", "bar", "fo", "foobar",
    "f", "o", "0", "42", "007", "৪২", "߀", "école", "l'école", "L'ÉCOLE", "ecole", "xcole",
    '"', "\\", 'a"b', "a\\b", '\\"', "\n", "\r\n", "abc\n", "\x00", "\x1f", "\x7f", "\t",
    "\b\f", "é", "😀", "a😀b", "中文", "\u2028", "\xa0", "\ufeff", " ", "  a ", "a@b.c",
    "@", "x@", "@@", "ab@cd", "Hello", "π", "123", "a_b", "A-Z", "-", "/", "//", "a/b",
]  # fmt: skip


def corpus(extra: Iterable[str] = (), seed: int = 0, n: int = 300) -> list[str]:
    rng = random.Random(seed)
    out = list(SAMPLES) + list(extra)
    for _ in range(n):
        out.append("".join(rng.choice(INTERESTING) for _ in range(rng.randint(0, 6))))
    return out


def encoded(s: str) -> bytes:
    return json.dumps(s, ensure_ascii=False).encode()


@functools.cache
def dfa(rx: str) -> ByteDFA:
    return ByteDFA.from_regex(rx)


def assert_language(rx: str, oracle: Callable[[str], bool], strings: Iterable[str]) -> None:
    """The regex matches exactly the canonical spellings of the strings the oracle accepts."""
    d = dfa(rx)
    py = re.compile(rx)
    for s in strings:
        expect = bool(oracle(s))
        got = d.matches(encoded(s))
        assert got == expect, (rx[:200], s, expect)
        assert bool(py.fullmatch(encoded(s).decode())) == expect, ("re", rx[:200], s)
        ascii_form = json.dumps(s)  # \\u escapes: a non-canonical spelling when it differs
        if ascii_form != encoded(s).decode():
            assert not d.matches(ascii_form.encode()), (rx[:200], ascii_form)


# ---------------------------------------------------------------- canonical form


def test_char_matches_exactly_one_canonical_unit() -> None:
    d = dfa(CHAR)
    # every code point up to U+3000, the rest sampled (the classes are ranges)
    for c in itertools.chain(range(0x3000), range(0x3000, 0x110000, 97), [0x10FFFF]):
        if 0xD800 <= c <= 0xDFFF:
            continue
        assert d.matches(json.dumps(chr(c), ensure_ascii=False)[1:-1].encode()), hex(c)
    for bad in ["\\u0041", "\\/", "\\u001F", "\\u00e9", "\\ud83d\\ude00", "\x01", '"', "\\",
                "\\u000a", "\\u0022", "\\x41", "\\U", "ab", ""]:  # fmt: skip
        assert not d.matches(bad.encode()), bad


def test_char_is_self_contained() -> None:
    assert CHAR.startswith("(?:")
    assert dfa(f'"{CHAR}*"').same_language(dfa(string_regex()))


@pytest.mark.parametrize("s", [*SAMPLES, "\x00\x01\x02\x03\x04\x05\x06\x07\x08\x0b\x0e\x1e"])
def test_quote(s: str) -> None:
    rx = quote(s)
    assert dfa(rx).same_language(ByteDFA.literal(encoded(s)))
    assert re.fullmatch(rx, encoded(s).decode())


def test_lone_surrogates_have_no_spelling() -> None:
    assert quote("a\ud800") == NOTHING_TEXT
    assert dfa(string_not_in(["a\ud800"])).same_language(dfa(string_regex()))
    assert dfa(string_not_in(["a\ud800", "b"])).same_language(dfa(string_not_in(["b"])))


def test_json_escapes_are_lowercase_and_short() -> None:
    assert json.dumps("\x1f\n\b", ensure_ascii=False) == '"\\u001f\\n\\b"'
    assert dfa(string_regex()).matches(b'"\\u001f"')
    assert not dfa(string_regex()).matches(b'"\\u001F"')
    assert not dfa(string_regex()).matches(b'"\\u0008"')  # \b is the canonical spelling


@pytest.mark.parametrize(
    "lo, hi", [(0, None), (0, 0), (1, 1), (0, 1), (2, 5), (3, None), (1, None), (4, 4), (5, 2)]
)
def test_string_regex_lengths(lo: int, hi: int | None) -> None:
    rx = string_regex(lo, hi)
    if hi is not None and hi < lo:
        assert rx == NOTHING_TEXT
        return
    assert_language(rx, lambda s: lo <= len(s) and (hi is None or len(s) <= hi), corpus())


def test_string_regex_bad_bounds() -> None:
    with pytest.raises(ConstraintError):
        string_regex(-1)
    with pytest.raises(ConstraintError):
        string_regex(0, -2)
    with pytest.raises(CompileLimitExceeded):
        string_regex(10**12)


@pytest.mark.parametrize(
    "pattern",
    ["a", "[a-z]+", "(?s).*", ".", r'"|\\', "[\x00-\x1f]", "a\nb|\t", "é+|😀", r"[^a\n]{2}"],
)
def test_encode_node(pattern: str) -> None:
    node = encode_node(parse_regex(pattern))
    d = ByteDFA.from_node(node)
    for s in corpus(n=150):
        inner = json.dumps(s, ensure_ascii=False)[1:-1].encode()
        assert d.matches(inner) == bool(re.fullmatch(pattern, s)), (pattern, s)


# ---------------------------------------------------------------- patterns

ECMA_SPACE = "[\t\n\x0b\x0c\r \xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]"
ECMA_NOT_SPACE = ECMA_SPACE.replace("[", "[^", 1)


def category_search(pattern: str, cats: str, negate: bool = False) -> Callable[[str], bool]:
    del pattern

    def member(c: str) -> bool:
        return (unicodedata.category(c)[: len(cats)] == cats) != negate

    return member


# (ECMA pattern, Python pattern for re.search with the same meaning)
TRANSLATED = [
    ("a", "a"),
    ("a+", "a+"),
    ("^a*$", r"\Aa*\Z"),
    ("^abc$", r"\Aabc\Z"),
    ("^abc$|x", r"\Aabc\Z|x"),
    ("^a|b$", r"\Aa|b\Z"),
    # anchors inside a top-level alternative (no multiline flag): ^ holds only
    # where the text before it is empty, $ only where the text after it is
    ("a^b", r"a\Ab"),
    ("a$b", r"a\Zb"),
    ("a*^b", r"a*\Ab"),
    ("a$b*", r"a\Zb*"),
    ("(?:a|)^b$c?", r"(?:a|)\Ab\Zc?"),
    ("x|/^[0-9]{4}$/", r"x|/\A[0-9]{4}\Z/"),
    ("a$$", r"a\Z"),
    # anchors inside unquantified groups: the group distributed over the alternative
    ("^([^,]|$)", r"\A(?:[^,]|\Z)"),
    ("(^a|b$)", r"(?:\Aa|b\Z)"),
    ("x(a$|b)c?", r"x(?:a\Z|b)c?"),
    ("(?:(^a|b)c|d$)", r"(?:(?:\Aa|b)c|d\Z)"),
    ("", ""),
    ("^$", r"\A\Z"),
    ("^", ""),
    ("$", ""),
    ("a|", ""),
    ("f.*o", "f[^\n\r\u2028\u2029]*o"),
    (".", "[^\n\r\u2028\u2029]"),
    ("^.$", "\\A[^\n\r\u2028\u2029]\\Z"),
    ("[^]", "(?s:.)"),
    ("^[^]$", r"\A(?s:.)\Z"),
    ("[]", "(?!)"),
    ("a[]|b", "b"),
    (r"\d", "[0-9]"),
    (r"^\d+$", r"\A[0-9]+\Z"),
    (r"\D", "[^0-9]"),
    (r"\w", "[A-Za-z0-9_]"),
    (r"^\W$", r"\A[^A-Za-z0-9_]\Z"),
    (r"\s", ECMA_SPACE),
    (r"^\S+$", rf"\A{ECMA_NOT_SPACE}+\Z"),
    (r"[\d\s]", ECMA_SPACE[:-1] + "0-9]"),
    (r"^[^\d\s]$", "\\A" + ECMA_NOT_SPACE[:-1] + "0-9]\\Z"),
    (r"[\D]", "[^0-9]"),
    (r"^[\S\d]$", rf"\A{ECMA_NOT_SPACE}\Z"),
    (r"[\w-.]", r"[A-Za-z0-9_\-.]"),
    (r"[a-c-e]", r"[a-c\-e]"),
    (r"[-a]", r"[\-a]"),
    (r"[a-]", r"[a\-]"),
    (r"[\-]", r"\-"),
    (r"[\b]", "\b"),
    (r"[\]a]", r"[\]a]"),
    (r"[[a]", r"[\[a]"),
    (r"\cC", "\x03"),
    (r"\cc", "\x03"),
    (r"^\t$", "\\A\t\\Z"),
    (r"\n|\r|\v|\f", "[\n\r\x0b\x0c]"),
    (r"\0", "\x00"),
    (r"\x41\x7f", "A\x7f"),
    (r"\u00e9", "é"),
    (r"\uD83D\uDE00", "😀"),
    (r"[\uD83D\uDE00-\uD83D\uDE4F]", "[\U0001f600-\U0001f64f]"),
    (r"\ud800", "(?!)"),
    (r"\/\-\@\:\#\"\ ", '/\\-@:#" '),
    (r"\.\*\+\?\(\)\[\]\{\}\|\^\$\\", r"\.\*\+\?\(\)\[\]\{\}\|\^\$\\"),
    ("a{,3}", r"a\{,3\}"),
    ("a{2}", "a{2}"),
    ("^a{2,}$", r"\Aa{2,}\Z"),
    ("^a{1,2}$", r"\Aa{1,2}\Z"),
    ("^a{1,2}?$", r"\Aa{1,2}\Z"),
    ("x{", r"x\{"),
    ("x}", r"x\}"),
    ("]", r"\]"),
    ("a{1", r"a\{1"),
    ("^(?:ab|c)+$", r"\A(?:ab|c)+\Z"),
    ("^(ab|c)*?d$", r"\A(?:ab|c)*d\Z"),
    ("(?<name>ab)+c", "(?:ab)+c"),
    ("(a)(b)", "ab"),
    ("^[a-z]{2,4}$", r"\A[a-z]{2,4}\Z"),
    ("[0-9]{2,}", "[0-9]{2,}"),
    ("X_", "X_"),
    ("^.*bar$", "\\A[^\n\r\u2028\u2029]*bar\\Z"),
    ("^a+b+$", r"\Aa+b+\Z"),
    ("é+", "é+"),
    ("^(?:|a)$", r"\A(?:|a)\Z"),
    ("@", "@"),
    ('"', '"'),
    (r"\\", r"\\"),
]


@pytest.mark.parametrize("ecma, python", TRANSLATED)
def test_pattern_against_python(ecma: str, python: str) -> None:
    py = re.compile(python)
    assert_language(pattern_regex(ecma), lambda s: py.search(s) is not None, corpus())


PROPERTY_CASES = [
    (r"\p{Lu}", "Lu", False, False),
    (r"\p{Letter}", "L", False, False),
    (r"\p{L}", "L", False, False),
    (r"\p{General_Category=Nd}", "Nd", False, False),
    (r"\p{gc=P}", "P", False, False),
    (r"\p{digit}", "Nd", False, False),
    (r"\P{L}", "L", True, False),
    (r"[^\p{L}]", "L", True, False),
    (r"^\p{Letter}+$", "L", False, True),
    (r"^\P{N}+$", "N", True, True),
]


@pytest.mark.parametrize("ecma, cat, negate, whole", PROPERTY_CASES)
def test_unicode_properties(ecma: str, cat: str, negate: bool, whole: bool) -> None:
    member = category_search(ecma, cat, negate)

    def oracle(s: str) -> bool:
        return all(map(member, s)) and bool(s) if whole else any(map(member, s))

    assert_language(pattern_regex(ecma), oracle, corpus())


def test_property_any_ascii_assigned() -> None:
    assert_language(pattern_regex(r"^\p{Any}$"), lambda s: len(s) == 1, corpus())
    assert_language(pattern_regex(r"^\p{ASCII}*$"), lambda s: s.isascii(), corpus())
    assigned = pattern_regex(r"^\p{Assigned}+$")
    unassigned = "\u0378"
    assert_language(
        assigned, lambda s: bool(s) and all(unicodedata.category(c) != "Cn" for c in s),
        corpus([unassigned, "a" + unassigned]),
    )  # fmt: skip


# (ECMA pattern, min_length, max_length, Python search pattern)
LENGTHS = [
    ("^[a-z]+$", 2, 4, r"\A[a-z]+\Z"),
    ("a", 3, None, "a"),
    ("a", 0, 4, "a"),
    ("@", 2, 6, "@"),
    ("^ab", 0, 3, r"\Aab"),
    ("x$", 2, 2, r"x\Z"),
    ("^(?:ab|c)*$", 1, 5, r"\A(?:ab|c)*\Z"),
    ("^(?:ab|c)+$", 3, None, r"\A(?:ab|c)+\Z"),
    ("[0-9]{2,}", 3, 6, "[0-9]{2,}"),
    ("^a+b+$", 3, 5, r"\Aa+b+\Z"),
    ("", 2, 3, ""),
    ("^$", 0, 0, r"\A\Z"),
    ("^$", 1, 3, r"\A\Z"),
    ("^abc$", 1, 5, r"\Aabc\Z"),  # the pattern's own lengths fit: bounds dropped
    ("a|^bb$", 2, 3, r"a|\Abb\Z"),
    ("a.b", 3, 4, "a[^\n\r\u2028\u2029]b"),
    ("^a{2,3}b{0,2}$", 4, 4, r"\Aa{2,3}b{0,2}\Z"),
    ("ab|ba", 0, 5, "ab|ba"),
]


@pytest.mark.parametrize("ecma, lo, hi, python", LENGTHS)
def test_pattern_with_lengths(ecma: str, lo: int, hi: int | None, python: str) -> None:
    py = re.compile(python)

    def oracle(s: str) -> bool:
        return py.search(s) is not None and lo <= len(s) and (hi is None or len(s) <= hi)

    small = ["".join(t) for n in range(8) for t in itertools.product("ab@x0c", repeat=n) if n < 5]
    small += ["".join(t) for t in itertools.product("abc", repeat=6)]
    assert_language(pattern_regex(ecma, min_length=lo, max_length=hi), oracle, corpus(small))


def test_lengths_out_of_reach() -> None:
    # a bound cutting through a repetition whose item may be empty and varies in width
    with pytest.raises(UnsupportedConstraint) as e:
        pattern_regex("^(?:a?b?)*$", max_length=3)
    assert e.value.construct == "pattern '^(?:a?b?)*$' with minLength/maxLength"
    # unanchored patterns with a large maxLength: the split regex grows past max_size
    with pytest.raises(CompileLimitExceeded) as c:
        pattern_regex("a.*b.*c", max_length=400)
    assert c.value.limit == "regex_size"
    assert pattern_regex("^[a-z]+$", max_length=10**6).endswith('{1,1000000}"')
    assert pattern_regex("^[a-z]+$", min_length=5, max_length=3) == NOTHING_TEXT


# (pattern, min_length, max_length): cuts whose nested sequences ask the same
# sub-cut many times (the memo answers), some past the default budget
MEMO_CUTS = [
    ("^(?:ab|c)*$", 1, 9),
    ("^a+b+$", 3, 12),
    ("^[a-z]+(?:-[a-z]+)*$", 0, 14),
    ("^(?:a|bc)+(?:d|ef)*$", 2, 11),
    ("^([a-z0-9-]+):([a-z0-9\\.-]+):([a-z0-9-]+)?:([a-z0-9-]+)$", 0, 12),
    ("^[a-z]+(\\s[a-z]+)*$", 1, 16),
    ("^x(?:ab|c)*y(?:d|ef)+$", 4, None),
]


@pytest.mark.parametrize("ecma, lo, hi", MEMO_CUTS)
def test_memoized_cuts_spend_and_give_what_computed_ones_do(
    ecma: str, lo: int, hi: int | None
) -> None:
    """The restrictor answers a repeated sub-cut from its memo and pays a
    loop's lengths before it runs: the cut and the units it spends must be
    those of a restrictor that computes every sub-cut, so that a cut fits
    its budget exactly when it did (one unit less and it stops)."""
    from constrain_api.jsonschema import strings

    class Computing(strings._Restrictor):
        def _memoized(self, key, compute):
            return compute()

    node = strings.pattern_node(ecma)
    plain, memo = Computing(10**9), strings._Restrictor(10**9)
    expected = plain.cut(node, lo, hi)
    assert memo.cut(node, lo, hi) == expected
    spent = 10**9 - plain.budget
    assert 10**9 - memo.budget == spent > 0
    assert strings._Restrictor(spent).cut(node, lo, hi) == expected
    with pytest.raises(strings._TooBig):
        strings._Restrictor(spent - 1).cut(node, lo, hi)
    with pytest.raises(strings._TooBig):
        Computing(spent - 1).cut(node, lo, hi)


UNSUPPORTED = [
    ("(a(?=b))*", "lookahead inside a quantified group"),
    ("(?:x|a(?!b))+", "negative lookahead inside a quantified group"),
    ("x((?<=a)b){2}", "lookbehind inside a quantified group"),
    ("((?<!a)b)?", "negative lookbehind inside a quantified group"),
    ("(?=a(?=b))a", "a lookaround inside a lookaround"),
    ("(?!(?<=a))a", "a lookaround inside a lookaround"),
    ("(?=a^)a", "anchor ^ inside a lookahead"),
    ("a(?<=a$)", "anchor $ inside a lookbehind"),
    ("(^a|b)" * 7, "more than 64 alternatives"),
    ("(?=a)b(?<=b)", "crossing lookarounds"),
    ("a$(?!b)", "lookaround after $"),
    ("(?=a)^a", "anchor ^ after a lookaround"),
    (r"\bword", "word boundary"),
    (r"a\B", "word boundary"),
    (r"(a)\1", "backreference"),
    (r"(?<n>a)\k<n>", "named backreference"),
    ("a$^b", "anchor ^"),
    ("(^a)*", "anchor ^ inside a quantified group"),
    ("(a$)+", "anchor $ inside a quantified group"),
    (r"\u{1F600}", "\\u{...}"),
    (r"\01", "octal"),
    (r"\a", "identity escape"),
    (r"\z", "identity escape"),
    (r"\c1", "\\c"),
    (r"\xZZ", "\\x"),
    (r"\u12", "\\u"),
    (r"\p{Script=Greek}", "Script=Greek"),
    (r"\p{Alphabetic}", "Alphabetic"),
    (r"\p{gc=Nope}", "gc=Nope"),
    ("(?i:a)", "modifiers"),
    (r"[\1]", "class"),
]


# (ECMA pattern with lookarounds at the top level of a top-level
# alternative, Python search pattern: the same meaning, ``\Z`` for ``$``)
LOOKAROUNDS = [
    (r"^(?!@@)[\w@]+$", r"\A(?!@@)[A-Za-z0-9_@]+\Z"),
    (r"^(?=.*[A-Z])(?=.*\d)[^\n]{4,}$", r"\A(?=.*[A-Z])(?=.*[0-9])[^\n]{4,}\Z"),
    ("(?=a)ab", "(?=a)ab"),
    ("a(?!b)", "a(?!b)"),
    ("a(?=b)", "a(?=b)"),
    ("(?<=a)b", "(?<=a)b"),
    ("(?<!a)b", "(?<!a)b"),
    ("^(?<!a)b", "\\A(?<!a)b"),
    ("x(?<=x)y(?=z)", "x(?<=x)y(?=z)"),
    ("foo(?!bar)$", "foo(?!bar)\\Z"),
    ("(?!a)|b", "(?!a)|b"),
    ("^(?!.*ab)", "\\A(?!.*ab)"),
    ("(?<!a|bc)c", "(?:(?<!a)(?<!bc))c"),
    ("^(?=a|b)(?!ab)..$", "\\A(?=a|b)(?!ab)..\\Z"),
    ("(?:a(?!b)|c)d?", "(?:a(?!b)|c)d?"),
    ("x((?<=x)y|z)(?=c)", "x(?:(?<=x)y|z)(?=c)"),
    # anchors inside lookarounds: no leading or trailing blank, a length rule
    ("^(?![ \\t])(?!.*[ \\t]$)", "^(?![ \\t])(?!.*[ \\t]\\Z)"),
    ("^(?=.{2,4}$)[a-c]*b", "^(?=.{2,4}\\Z)[a-c]*b"),
    ("a(?=c|$)", "a(?=c|\\Z)"),
    ("a(?=(b|$))", "a(?=(?:b|\\Z))"),
    ("x(?<=^x)y?", "x(?<=^x)y?"),
    ("(?<!^a)b", "(?<!^a)b"),
    ("a(?=$b)", "a(?=\\Zb)"),
    # at the anchored ends: lookarounds that see the whole string (no crossing)
    ("^(?=.{2,5}$)(?!b)[abc]*(?<!c)$", "^(?=.{2,5}\\Z)(?!b)[abc]*(?<!c)\\Z"),
    ("^(?=a)(?<=b)", "^(?=a)(?<=b)"),
    ("^a(?=b)c?(?<!c)$", "^a(?=b)c?(?<!c)\\Z"),
]


@pytest.mark.parametrize("ecma, python", LOOKAROUNDS)
def test_top_level_lookarounds(ecma: str, python: str) -> None:
    """A lookaround at the top level of a top-level alternative sees the
    whole text after (or before) its point, as in a search: the language
    (an intersection or difference of automata, no regex text) against
    Python's ``re.search``, on strings without line terminators (where
    ``.`` and ``$`` differ between the dialects)."""
    from constrain_api.automata import has_lookaround
    from constrain_api.jsonschema.strings import pattern_node, quoted_node

    py = re.compile(python)
    d = ByteDFA.from_node(quoted_node(pattern_node(ecma)))
    texts = [t for t in corpus(["@@x", "x@@", "ab", "aab", "Ab1x", "AAA1", "xyz", "foobar", "bc c"])
             if not any(c in t for c in "\n\r\u2028\u2029")]  # fmt: skip
    for t in texts:
        assert d.matches(encoded(t)) == bool(py.search(t)), (ecma, t)
    if has_lookaround(pattern_node(ecma)):
        with pytest.raises(CompileLimitExceeded, match="lookaround"):
            pattern_regex(ecma)  # (no regex text: the lowering keeps the AST)
    else:  # (a lookaround that sees the empty string is decided while parsing)
        assert_language(pattern_regex(ecma), lambda t: py.search(t) is not None, texts)


_LOOK_ATOMS = ["a", "b", "[ab]", "[^a]", ".", "(?:a|bc)", "(?:a|)"]
#: lookahead bodies; the first four (fixed width) are also lookbehind bodies (Python's rule)
_LOOK_BODIES = ["a", "b", "ab", "[ab]c", ".*a", "[^c]*b", "a$", "b*$", "(?:a|$)"]
_BEHIND_BODIES = ["a", "b", "ab", "[ab]c", "^a", "^b", "(?:^a|b)"]
#: the refusals a random pattern may meet (the rest must be the language)
_LOOK_REFUSALS = (
    "inside a quantified group",
    "crossing lookarounds",
    "a lookaround after $",
    "anchor ^ after a lookaround",
    "anchor ^ inside a group or after $",
)


@st.composite
def _looked_patterns(draw) -> str:
    def part(depth: int = 0) -> str:
        kind = draw(st.sampled_from(["atom", "atom", "look", "anchor", "group"][: 5 - depth]))
        if kind == "group":  # (quantified or not, so distributed or refused)
            options = ["".join(part(1) for _ in range(draw(st.integers(0, 2)))) for _ in "ab"]
            return "(?:" + "|".join(options) + ")" + draw(st.sampled_from(["", "", "*", "?"]))
        if kind == "look":
            k = draw(st.sampled_from(["?=", "?!", "?<=", "?<!"]))
            body = draw(st.sampled_from(_LOOK_BODIES if k in ("?=", "?!") else _BEHIND_BODIES))
            return f"({k}{body})"
        if kind == "anchor":
            return draw(st.sampled_from(["^", "$"]))
        quantifier = draw(st.sampled_from(["", "*", "+", "?", "{2}"]))
        return draw(st.sampled_from(_LOOK_ATOMS)) + quantifier

    options = draw(st.integers(1, 2))
    return "|".join("".join(part() for _ in range(draw(st.integers(0, 4)))) for _ in range(options))


@SETTINGS
@given(_looked_patterns())
def test_random_lookaround_patterns_against_python(pattern: str) -> None:
    """Random patterns of lookarounds, anchors, classes, quantifiers and
    groups holding them (distributed, or refused when quantified):
    the language of every string over ``abc`` up to four characters is
    Python's ``re.search`` (``$`` read as ``\\Z``), or the pattern is refused
    for one of the documented reasons."""
    from constrain_api.jsonschema.strings import pattern_node, quoted_node

    py = re.compile(pattern.replace("$", r"\Z"))
    try:
        node = pattern_node(pattern)
    except UnsupportedConstraint as e:
        assert any(r in e.reason for r in _LOOK_REFUSALS), (pattern, e.reason)
        return
    d = ByteDFA.from_node(quoted_node(node))
    for n in range(5):
        for t in map("".join, itertools.product("abc", repeat=n)):
            assert d.matches(encoded(t)) == bool(py.search(t)), (pattern, t)


@pytest.mark.parametrize("pattern, named", UNSUPPORTED)
def test_unsupported_constructs(pattern: str, named: str) -> None:
    with pytest.raises(UnsupportedConstraint) as e:
        pattern_regex(pattern, where="/properties/x")
    assert e.value.backend == "json_schema"
    assert e.value.construct == f"pattern {pattern!r}"
    assert named in e.value.reason


MALFORMED = ["(", "(a", "a)", "[a", "*a", "a**", "a{3,2}", "[z-a]", "\\", "(?<>a)", "a|+", "{2}",
             "(?", "(?<1a>x)", r"\p{L", r"\pL", "(?=a", "(?=a)*b", "x(?<!a){2}"]  # fmt: skip


@pytest.mark.parametrize("pattern", MALFORMED)
def test_malformed_patterns(pattern: str) -> None:
    with pytest.raises(ConstraintError) as e:
        pattern_regex(pattern, where="/properties/x/pattern")
    assert e.value.what == "json schema"
    assert e.value.where == "/properties/x/pattern"
    assert "invalid pattern" in e.value.message


@SETTINGS
@given(st.text(alphabet=st.sampled_from(INTERESTING), max_size=8))
def test_random_strings(s: str) -> None:
    cases = [
        ("^[a-c]+$", r"\A[a-c]+\Z"),
        (r"\s|\d", ECMA_SPACE + "|[0-9]"),
        (".$", "[^\n\r\u2028\u2029]\\Z"),
        ("^\\W", r"\A[^A-Za-z0-9_]"),
    ]
    for ecma, python in cases:
        got = dfa(pattern_regex(ecma)).matches(encoded(s))
        assert got == bool(re.search(python, s)), (ecma, s)


# ---------------------------------------------------------------- the test suite


def suite_groups(name: str) -> list[dict]:
    try:
        path = shared_file(f"json-schema-test-suite/tests/draft2020-12/{name}")
    except FileNotFoundError as e:
        pytest.skip(str(e))
    with open(path, encoding="utf-8") as f:
        return json.load(f)


@pytest.mark.shared
@pytest.mark.parametrize(
    "name", ["pattern.json", "optional/ecmascript-regex.json", "patternProperties.json"]
)
def test_suite_patterns(name: str) -> None:
    checked = 0
    for group in suite_groups(name):
        schema = group["schema"]
        if "pattern" in schema:
            rx = pattern_regex(schema["pattern"])
            for t in group["tests"]:
                if isinstance(t["data"], str):
                    assert dfa(rx).matches(encoded(t["data"])) == t["valid"], t["description"]
                    checked += 1
        props = schema.get("patternProperties", {})
        if props and schema.get("additionalProperties") is False:
            keys = [pattern_regex(p) for p in props]
            for t in group["tests"]:
                if isinstance(t["data"], dict):
                    ok = all(any(dfa(k).matches(encoded(n)) for k in keys) for n in t["data"])
                    assert ok == t["valid"], t["description"]
                    checked += 1
        elif props:
            # each key's pattern decides which members it applies to: compare with re.search
            for p in props:
                rx = pattern_regex(p)
                python = p.replace("\\p{Letter}", "[^\\W\\d_]").replace("$", r"\Z")
                for t in group["tests"]:
                    if isinstance(t["data"], dict):
                        for n in t["data"]:
                            expect = re.search(python, n) is not None
                            assert dfa(rx).matches(encoded(n)) == expect, (p, n)
                            checked += 1
    assert checked > 0


# ---------------------------------------------------------------- string_not_in

NAMES = ["name", "age", "email", "e", "emails", "address", "a\"b", "a\\b", "tab\there", "\x00",
         "école", "😀", "", "x" * 12, "id", "i"]  # fmt: skip


@pytest.mark.parametrize(
    "excluded",
    [[], [""], ["a"], ["foo", "bar", "fo"], ['a"', "a\\", "a\n", "\x00", "é", "😀x"], NAMES],
)
def test_string_not_in(excluded: list[str]) -> None:
    rx = string_not_in(excluded)
    near = [s[:i] + c + s[i + 1 :] for s in excluded for i in range(len(s)) for c in 'a"\\\x01é']
    near += [s + c for s in excluded for c in 'a"\\\n😀'] + [s[:-1] for s in excluded]
    near += [s[1:] for s in excluded] + excluded
    assert_language(rx, lambda s: s not in excluded, corpus(near))
    # exactly: every canonical string but the excluded ones' spellings
    spelled = ByteDFA.from_strings(json.dumps(s, ensure_ascii=False).encode() for s in excluded)
    assert dfa(rx).same_language(dfa(string_regex()).difference(spelled))
    # the AST handed to the lowering (which then skips parsing the text) is the same language
    text, node = string_not_in_piece(excluded)
    assert text == rx and ByteDFA.from_node(node).same_language(dfa(rx))
    # and the lowering joins it to other pieces as it is (no top-level "|")
    assert concatenable(text) == text


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.text(alphabet='ab"\\\x01\x7fé😀', max_size=4), max_size=6))
def test_string_not_in_text_and_ast_agree(excluded: list[str]) -> None:
    """The text is printed straight from the names' trie, apart from the
    AST: both are exactly the canonical strings but the excluded ones, on
    random sets (prefixes of each other, escaped, control, non-ASCII
    characters, the empty name), and the text joins as it is."""
    text, node = string_not_in_piece(excluded)
    spelled = ByteDFA.from_strings(json.dumps(s, ensure_ascii=False).encode() for s in excluded)
    assert dfa(text).same_language(dfa(string_regex()).difference(spelled))
    assert ByteDFA.from_node(node).same_language(dfa(text))
    assert concatenable(text) == text


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.text(alphabet="abcz_0", max_size=5), max_size=7), st.booleans())
def test_plain_names_in_one_walk_are_the_two_walks_pieces(
    excluded: list[str], gather_wide: bool
) -> None:
    """Names with no escaped and no non-ASCII character (nearly every
    object's) take one walk of their trie for AST and text together; it
    gives what the general walks give: ``diverge`` and ``ends`` equal node
    for node, and the same text pieces."""
    from constrain_api.jsonschema import strings

    trie: dict = {}
    for name in excluded:
        node = trie
        for ch in name:
            node = node.setdefault(ch, {})
        node[None] = True
    diverge, path, wide, ends = strings._not_in(trie, gather_wide, False, False, {})
    one_walk = strings._not_in_plain(trie, gather_wide, {})
    assert (path, wide) == (strings._VOID, strings._VOID)
    assert (one_walk[0], one_walk[1]) == (diverge, ends)
    assert repr(one_walk[:2]) == repr((diverge, ends))
    assert (one_walk[2], None, None, one_walk[3]) == strings._not_in_text(
        trie, gather_wide, False, False
    )


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.text(alphabet='ab"\\é', max_size=4), max_size=6),
    st.lists(st.text(alphabet='ab"\\é', max_size=4), max_size=6),
)
def test_string_not_in_pieces_sharing_nodes_keep_their_languages(
    first: list[str], second: list[str]
) -> None:
    """Two name sets' pieces built with one table of nodes (a lowering's
    objects: equal parts taken from it) are the pieces built alone: the
    same text and, node for node, the same AST by value."""
    shared: dict = {}
    pieces = [string_not_in_piece(n, shared=shared) for n in (first, second)]
    assert pieces == [string_not_in_piece(n) for n in (first, second)]


def test_string_not_in_pieces_of_overlapping_names_share_nodes() -> None:
    """Objects whose declared names overlap (a schema's many objects)
    have pieces whose equal parts are one node when built with one table."""
    from constrain_api.automata.lazy import _node_parts

    def objects(*roots):
        found, todo = {}, list(roots)
        while todo:
            node = todo.pop()
            if id(node) not in found:
                found[id(node)] = node
                todo.extend(_node_parts(node))
        return found

    names = [f"name_{i}" for i in range(40)]
    other = [*names[:30], "other", "name_77"]
    shared: dict = {}
    together = [string_not_in_piece(n, shared=shared)[1] for n in (names, other)]
    apart = [string_not_in_piece(n)[1] for n in (names, other)]
    assert together == apart
    assert len(objects(*together)) < len(objects(*apart)) - 15


@pytest.mark.parametrize(
    "excluded", [["name", "age"], ["name", 'a"b'], ["name", "école"], ["a\\b", "😀"]]
)
def test_string_not_in_past_the_names_stays_put(excluded: list[str]) -> None:
    """Once a string has left the names' trie, its lazy automaton (what
    ``domino``'s scanner walks) stays in one state on every unescaped
    character, ASCII or not, and on escapes: the subterminal trees skip
    the plain tokens of such a state (their slices) only then. A branch
    for the characters no name has that read "the characters before the
    first one" made the state change at that character, and the trees
    inside keys walk every token (MaskBench's TBM p99 3.0 → 4.5 ms)."""
    _, node = string_not_in_piece(excluded)
    lazy = LazyDFA(node)
    gone = lazy.run(b'"zz')
    assert gone >= 0
    for ch in ["a", " ", "é", "😀", "\\n", '\\"', "\\u0001"]:
        assert lazy.run(ch.encode(), gone) == gone, ch


def test_string_not_in_falls_back_to_the_shorter_spelling() -> None:
    """Gathering the non-ASCII characters that leave the name trie (one
    branch, a smaller automaton) lengthens the text; past ``max_size`` the
    per-node spelling of the same language is used (3 MaskBench schemas
    were refused for the longer text)."""
    rng = random.Random(7)
    names = sorted(
        {
            "".join(rng.choice("abcdefghmnoprstu") for _ in range(rng.randint(4, 12)))
            for _ in range(90)
        }
    )
    gathered = string_not_in(names, max_size=10**6)
    fits = len(gathered) - 1
    shorter = string_not_in(names, max_size=fits)
    assert len(shorter) <= fits < len(gathered)
    assert dfa(shorter).same_language(dfa(gathered))
    text, node = string_not_in_piece(names, max_size=fits)
    assert text == shorter and ByteDFA.from_node(node).same_language(dfa(shorter))
    with pytest.raises(CompileLimitExceeded):
        string_not_in(names, max_size=len(shorter) - 1)


def test_string_not_in_size() -> None:
    rng = random.Random(7)
    names = [
        "".join(rng.choice("abcdefghij_") for _ in range(rng.randint(3, 12))) for _ in range(40)
    ]
    rx = string_not_in(names)
    assert len(rx) < 20000
    assert_language(rx, lambda s: s not in names, corpus(names + [n + "x" for n in names], n=50))
    with pytest.raises(CompileLimitExceeded):
        string_not_in(names, max_size=500)


# ------------------------------------------- random patterns (ECMA == Python subset)

ATOMS = [
    ("a", "a"),
    ("b", "b"),
    ("c", "c"),
    ("[ab]", "[ab]"),
    ("[^a]", "[^a]"),
    (".", "[^\n\r\u2028\u2029]"),
    (r"\d", "[0-9]"),
    (r"\s", ECMA_SPACE),
    ("é", "é"),
]
QUANTIFIERS = ["*", "+", "?", "{2}", "{0,2}", "{1,3}", "{2,}"]


def _pair_tree(children: st.SearchStrategy[tuple[str, str]]) -> st.SearchStrategy[tuple[str, str]]:
    def cat(xs: list[tuple[str, str]]) -> tuple[str, str]:
        return "".join(x for x, _ in xs), "".join(y for _, y in xs)

    def either(xs: list[tuple[str, str]]) -> tuple[str, str]:
        return "(?:" + "|".join(x for x, _ in xs) + ")", "(?:" + "|".join(y for _, y in xs) + ")"

    def quantify(t: tuple[tuple[str, str], str]) -> tuple[str, str]:
        (x, y), q = t
        return f"(?:{x}){q}", f"(?:{y}){q}"

    return st.one_of(
        st.lists(children, min_size=2, max_size=3).map(cat),
        st.lists(children, min_size=2, max_size=3).map(either),
        st.tuples(children, st.sampled_from(QUANTIFIERS)).map(quantify),
    )


pattern_pairs = st.recursive(st.sampled_from(ATOMS), _pair_tree, max_leaves=5)


@st.composite
def top_patterns(draw: st.DrawFn) -> tuple[str, str]:
    alternatives = draw(st.lists(pattern_pairs, min_size=1, max_size=2))
    ecma, python = [], []
    for x, y in alternatives:
        start, end = draw(st.booleans()), draw(st.booleans())
        ecma.append(("^" if start else "") + x + ("$" if end else ""))
        python.append(("\\A" if start else "") + f"(?:{y})" + ("\\Z" if end else ""))
    return "|".join(ecma), "|".join(python)


RANDOM_STRINGS = sorted(
    {"".join(t) for n in range(5) for t in itertools.product("abc1\n", repeat=n)}
    | {"".join(random.Random(i).choice("abc1 é\n\u2028") for _ in range(i % 9)) for i in range(200)}
)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    top_patterns(),
    st.integers(0, 4),
    st.one_of(st.none(), st.integers(0, 6)),
)
def test_random_patterns_with_lengths(pair: tuple[str, str], lo: int, hi: int | None) -> None:
    """The length-bounded text has Python's language, and so has the
    intersection given beside it where the bound splits the length."""
    ecma, python = pair
    py = re.compile(python)
    try:
        rx, intersection = pattern_piece(ecma, min_length=lo, max_length=hi)
    except UnsupportedConstraint as e:
        assert e.construct == f"pattern {ecma!r} with minLength/maxLength"
        return
    assert rx == pattern_regex(ecma, min_length=lo, max_length=hi)
    d = dfa(rx)
    for s in RANDOM_STRINGS:
        expect = py.search(s) is not None and lo <= len(s) and (hi is None or len(s) <= hi)
        assert d.matches(encoded(s)) == expect, (ecma, lo, hi, s)
    if intersection is not None:
        assert ByteDFA.from_node(intersection).same_language(d), (ecma, lo, hi)


def test_a_bound_split_around_a_match_gives_the_intersection_beside_the_text() -> None:
    """``[A-Z]`` searched in 8 to 64 characters: the text is one option per
    split of the length around the match, whose automaton the subset
    construction cannot build under 100,000 states (7 s to find out); the
    intersection beside it has 1,768 states (0.1 s). A cut that only bounds
    a repetition, or a bound past ``_INTERSECTED_LENGTHS``, gives none."""
    text, intersection = pattern_piece("[A-Z]", min_length=8, max_length=64)
    assert text == pattern_regex("[A-Z]", min_length=8, max_length=64)
    assert intersection is not None
    d = ByteDFA.from_node(intersection)
    assert d.num_states < 2000
    assert d.matches(encoded("abcdefgH")) and d.matches(encoded("Q" * 64))
    assert not d.matches(encoded("abcdefgh")) and not d.matches(encoded("abcdeGH"))
    assert not d.matches(encoded("Q" * 65))
    small_text, small = pattern_piece("[A-Z]", min_length=2, max_length=4)
    assert small is not None and ByteDFA.from_node(small).same_language(dfa(small_text))
    assert pattern_piece("^[a-z]+$", min_length=3, max_length=30)[1] is None
    assert pattern_piece("^a+b+$", max_length=1000)[1] is not None  # (a split)
    assert pattern_piece("^a+b+$", max_length=1100)[1] is None  # (past the bound)
    assert pattern_piece("[A-Z]")[1] is None
