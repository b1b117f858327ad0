"""constrain_api.automata: regex AST, UTF-8 sequences, ByteDFA (against Python's ``re``)."""

from __future__ import annotations

import functools
import itertools
import re
import time

import numpy as np
import pytest
from automata_support import shortest_completion
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from constrain_api.automata import (
    Alt,
    ByteDFA,
    CharSet,
    Empty,
    LazyDFA,
    Literal,
    Repeat,
    Seq,
    alt,
    byte_segments,
    parse_regex,
    repeat,
    seq,
    utf8_sequences,
)
from constrain_api.errors import CompileLimitExceeded, ConstraintError, UnsupportedConstraint

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# ------------------------------------------------------------------ helpers


def assert_trimmed(dfa: ByteDFA) -> None:
    """Every state reachable from the start and able to reach acceptance."""
    n = dfa.num_states
    assert dfa.table.shape == (n, 256) and dfa.table.dtype == np.int32
    assert dfa.accepting.shape == (n,) and dfa.accepting.dtype == bool
    if n == 0:
        assert dfa.start == -1
        return
    reach = {dfa.start}
    todo = [dfa.start]
    while todo:
        s = todo.pop()
        for t in set(dfa.rows[s]) - {-1} - reach:
            reach.add(t)
            todo.append(t)
    assert reach == set(range(n))
    live = {s for s in range(n) if dfa.accept[s]}
    changed = True
    while changed:
        changed = False
        for s in range(n):
            if s not in live and any(t in live for t in dfa.rows[s] if t >= 0):
                live.add(s)
                changed = True
    assert live == set(range(n))


def naive_equivalent_pairs(dfa: ByteDFA) -> int:
    """Number of blocks of Moore's partition refinement (computed naively)."""
    n = dfa.num_states
    block = dfa.accepting.astype(np.int64)
    while True:
        ext = np.append(block, -1)
        sig = np.concatenate([block[:, None], ext[dfa.table]], axis=1)
        _, new = np.unique(sig, axis=0, return_inverse=True)
        new = new.reshape(-1)
        if len(set(new.tolist())) == len(set(block.tolist())):
            return len(set(new.tolist())) if n else 0
        block = new


@functools.cache
def all_code_points() -> tuple[np.ndarray, str, np.ndarray, np.ndarray]:
    """(code points, the string of them all, UTF-8 bytes as an (N, 4) matrix, lengths)."""
    cps = np.arange(0x110000, dtype=np.int64)
    cps = cps[(cps < 0xD800) | (cps > 0xDFFF)]
    text = cps.astype("<u4").tobytes().decode("utf-32-le")
    lens = 1 + (cps >= 0x80) + (cps >= 0x800) + (cps >= 0x10000)
    raw = np.frombuffer(text.encode(), dtype=np.uint8)
    offsets = np.concatenate([[0], np.cumsum(lens)[:-1]])
    mat = np.zeros((cps.size, 4), dtype=np.uint8)
    for i in range(4):
        sel = lens > i
        mat[sel, i] = raw[offsets[sel] + i]
    return cps, text, mat, lens


def dfa_accepts_each_char(dfa: ByteDFA) -> np.ndarray:
    """For every scalar value c: dfa.matches(chr(c).encode()), vectorized."""
    cps, _, mat, lens = all_code_points()
    state = np.full(cps.size, dfa.start, dtype=np.int64)
    for i in range(4):
        sel = (lens > i) & (state >= 0)
        state[sel] = dfa.table[state[sel], mat[sel, i]]
    out = np.zeros(cps.size, dtype=bool)
    ok = state >= 0
    out[ok] = dfa.accepting[state[ok]]
    return out


def charset_mask(cs: CharSet) -> np.ndarray:
    cps = all_code_points()[0]
    if not cs.ranges:
        return np.zeros(cps.size, dtype=bool)
    los = np.array([r[0] for r in cs.ranges])
    his = np.array([r[1] for r in cs.ranges])
    idx = np.searchsorted(los, cps, side="right") - 1
    return (idx >= 0) & (cps <= his[np.maximum(idx, 0)])


def re_mask(pattern: str) -> np.ndarray:
    """For every scalar value c: bool(re.fullmatch(pattern, chr(c))) (pattern: one char)."""
    cps, text, _, _ = all_code_points()
    found = "".join(re.findall(pattern, text))
    hits = np.frombuffer(found.encode("utf-32-le"), dtype="<u4").astype(np.int64)
    return np.isin(cps, hits)


# --------------------------------------------------------------- AST


@pytest.mark.parametrize(
    "pattern, expected",
    [
        ("abc", Literal("abc")),
        ("", Empty()),
        ("(?:)", Empty()),
        ("[a-c]", CharSet(((97, 99),))),
        ("[^a]", CharSet.of("a").complement()),
        (".", CharSet.any(dotall=False)),
        ("(?s).", CharSet.any()),
        ("ab|cd", Alt((Literal("ab"), Literal("cd")))),
        ("a|b", CharSet.of("ab")),
        ("a*", Repeat(Literal("a"), 0, None)),
        ("a+", Repeat(Literal("a"), 1, None)),
        ("a?", Repeat(Literal("a"), 0, 1)),
        ("a{2,5}", Repeat(Literal("a"), 2, 5)),
        ("a{3}", Repeat(Literal("a"), 3, 3)),
        ("a{2,}", Repeat(Literal("a"), 2, None)),
        ("a*?", Repeat(Literal("a"), 0, None)),
        ("a+?", Repeat(Literal("a"), 1, None)),
        ("a??", Repeat(Literal("a"), 0, 1)),
        ("a{2,3}?", Repeat(Literal("a"), 2, 3)),
        ("a{0}", Empty()),
        ("(ab)", Literal("ab")),
        ("(?:ab)c", Literal("abc")),
        ("(?P<name>ab)", Literal("ab")),
        ("(ab)*", Repeat(Literal("ab"), 0, None)),
        ("a[bc]d", Seq((Literal("a"), CharSet.of("bc"), Literal("d")))),
        ("^ab$", Literal("ab")),
        (r"\Aab\Z", Literal("ab")),
        ("^^a$$", Literal("a")),
        ("^a|^b", CharSet.of("ab")),
        ("(^ab|cd$)", Alt((Literal("ab"), Literal("cd")))),
        ("(?m)^a$", Literal("a")),
        ("(?x) a b  # comment", Literal("ab")),
        ("(?i)k", CharSet.of("kK\u212a")),
        ("(?i)1", Literal("1")),
        ("(?i:a)b", Seq((CharSet.of("aA"), Literal("b")))),
        ("(?i)a(?-i:b)", Seq((CharSet.of("aA"), Literal("b")))),
        (
            r"(?a)\w",
            CharSet.of("_").union(
                CharSet.range("0", "9"), CharSet.range("a", "z"), CharSet.range("A", "Z")
            ),
        ),
        (r"(?a)\d", CharSet.range("0", "9")),
        (r"(?a)\s", CharSet.of(" \t\n\r\x0b\x0c")),
        ("\ud800", CharSet(())),
        ("a\udfffb", Seq((Literal("a"), CharSet(()), Literal("b")))),
        ("é中😀", Literal("é中😀")),
    ],
)
def test_parse_regex_ast(pattern: str, expected: object) -> None:
    assert parse_regex(pattern) == expected


def test_categories_ast() -> None:
    d = parse_regex(r"\d")
    assert isinstance(d, CharSet) and "7" in d and "٣" in d and "a" not in d
    assert parse_regex(r"\D") == d.complement()
    assert parse_regex(r"[^\d]") == d.complement()
    assert parse_regex(r"[\d\s]") == d.union(parse_regex(r"\s"))
    w = parse_regex(r"\w")
    assert "_" in w and "é" in w and "中" in w and "-" not in w


def test_charset_constructors() -> None:
    assert CharSet(((5, 3),)).is_empty()
    assert CharSet(((3, 5), (6, 8), (1, 2))).ranges == ((1, 8),)
    assert CharSet(((0xD000, 0xE100),)).ranges == ((0xD000, 0xD7FF), (0xE000, 0xE100))
    assert CharSet(((0xD800, 0xDFFF),)).is_empty()
    assert CharSet.of("cab").ranges == ((97, 99),)
    assert CharSet.of([0x61, "b"]) == CharSet.range("a", "b")
    assert CharSet.any().size() == 0x110000 - 0x800
    assert CharSet.any(dotall=False) == CharSet.any().difference(CharSet.of("\n"))
    assert CharSet.any().complement().is_empty()
    assert CharSet(()).complement() == CharSet.any()
    ab = CharSet.of("ab")
    assert ab.complement().complement() == ab
    assert ab.intersection(CharSet.of("bc")) == CharSet.of("b")
    assert ab.union(CharSet.of("é")) == CharSet.of("abé")
    assert "a" in ab and 98 in ab and "c" not in ab and None not in ab
    assert 0xD800 not in CharSet.any()


def test_normalizing_builders() -> None:
    assert seq() == Empty()
    assert seq(Literal("a"), Empty(), Literal("b")) == Literal("ab")
    assert seq(Seq((Literal("a"), CharSet.of("x"))), Literal("b")) == Seq(
        (Literal("a"), CharSet.of("x"), Literal("b"))
    )
    assert alt(Literal("a")) == Literal("a")
    assert alt(Alt((Literal("a"), Literal("b"))), Literal("a")) == Alt((Literal("a"), Literal("b")))
    assert alt() == CharSet(())
    assert repeat(Literal("a"), 1, 1) == Literal("a")
    assert repeat(Literal("a"), 0, 0) == Empty()
    with pytest.raises(ValueError):
        Repeat(Literal("a"), 3, 2)
    with pytest.raises(ValueError):
        Literal("")


@pytest.mark.parametrize(
    "pattern, construct",
    [
        (r"(a)\1", "backreference \\1"),
        (r"(?P<x>a)(?P=x)", "backreference \\1"),
        # lookarounds are supported when they see only the match (test_automata_lookaround)
        ("a(?=b)", "lookahead at the end of a pattern"),
        ("a(?!b)", "lookahead at the end of a pattern"),
        ("(?<=a)b", "lookbehind at the start of a pattern"),
        ("(?<!a)b", "lookbehind at the start of a pattern"),
        ("(a)?(?(1)b|c)", "conditional group"),
        (r"\bfoo", "word boundary \\b"),
        (r"a\Bb", "non-boundary \\B"),
        ("a*+a", "possessive/atomic"),
        ("a{1,2}+", "possessive/atomic"),
        ("(?>a)", "possessive/atomic"),
        ("a^b", "anchor ^"),
        ("(?:^a)*", "anchor ^"),
        ("a$b", "anchor $"),
        ("(a$)b", "anchor $"),
        (r"a\Zb", "anchor \\Z"),
        (r"a\Ab", "anchor \\A"),
        ("(?m)a$\nb", "anchor $"),
    ],
)
def test_unsupported_constructs_are_named(pattern: str, construct: str) -> None:
    re.compile(pattern)  # valid Python regex
    with pytest.raises(UnsupportedConstraint) as info:
        parse_regex(pattern)
    assert info.value.backend == "automata"
    assert construct in info.value.construct
    assert construct in str(info.value)
    with pytest.raises(UnsupportedConstraint):
        ByteDFA.from_regex(pattern)


@pytest.mark.parametrize(
    "pattern",
    [
        "(",
        "a)",
        "a{2,1}",
        "[b-a]",
        "*a",
        "a**",
        "(?P<n>a)(?P<n>b)",
        "[a",
        r"\p{L}",
        "(?L)a",
        "(?z)a",
    ],
)
def test_malformed_patterns(pattern: str) -> None:
    with pytest.raises(re.error) as ref:
        re.compile(pattern)
    with pytest.raises(ConstraintError) as info:
        parse_regex(pattern)
    assert info.value.what == "regex"
    assert info.value.where == ref.value.pos
    assert info.value.where is not None


def test_dollar_at_the_end_is_end_of_text_like_fullmatch() -> None:
    # Python's $ also matches before a final newline, but a full match must
    # consume that newline too, so re.fullmatch rejects it as well: no difference
    for pattern in ["a$", "(?m)a$", r"a\Z", "a$$", "(a$|b)"]:
        dfa = ByteDFA.from_regex(pattern)
        for text in ["a", "a\n", "b", "b\n", ""]:
            assert dfa.matches(text.encode()) == bool(re.fullmatch(pattern, text)), (pattern, text)
    assert not re.fullmatch("a$", "a\n") and re.match("a$", "a\n")


@SETTINGS
@given(
    st.lists(
        st.sampled_from(
            [
                "a",
                "Z",
                "0",
                ":",
                ",",
                '"',
                "é",
                "-",
                "#",
                " ",
                "\n",
                "\\{",
                "\\[",
                "\\]",
                "\\.",
                "\\-",
                "\\\\",
                "\\<",
                "\\~",
                "\\ ",
                "{",
                "]",
                "}",
                "\\d",
                "\\n",
                "*",
                "|",
                "(",
            ]
        ),
        max_size=8,
    )
)
def test_a_literal_pattern_parses_as_the_full_parser_reads_it(parts: list[str]) -> None:
    """Literal text (a lowering's punctuation, quoted names) skips the
    parser: its node is the one the full parse gives, and the patterns with
    any metacharacter or letter escape still take the full parse."""
    from constrain_api.automata import regex

    pattern = "".join(parts)
    try:
        full = regex._Converter(False).seq(*regex._sre_parse(pattern), True, True)
    except (ConstraintError, UnsupportedConstraint):
        with pytest.raises((ConstraintError, UnsupportedConstraint)):
            parse_regex(pattern)
        return
    assert parse_regex(pattern) == full
    if isinstance(full, Literal):
        assert re.fullmatch(pattern, full.text)


def test_parse_regex_rejects_non_str() -> None:
    with pytest.raises(ConstraintError):
        parse_regex(b"abc")  # type: ignore[arg-type]


# ------------------------------------------------------------ utf8


def test_utf8_sequences_examples() -> None:
    assert utf8_sequences(CharSet(((0, 0x7F),))) == [((0x00, 0x7F),)]
    assert utf8_sequences([(0x80, 0x7FF)]) == [((0xC2, 0xDF), (0x80, 0xBF))]
    assert utf8_sequences([(0x800, 0xFFFF)]) == [
        ((0xE0, 0xE0), (0xA0, 0xBF), (0x80, 0xBF)),
        ((0xE1, 0xEC), (0x80, 0xBF), (0x80, 0xBF)),
        ((0xED, 0xED), (0x80, 0x9F), (0x80, 0xBF)),
        ((0xEE, 0xEF), (0x80, 0xBF), (0x80, 0xBF)),
    ]
    assert utf8_sequences([(0x10000, 0x10FFFF)]) == [
        ((0xF0, 0xF0), (0x90, 0xBF), (0x80, 0xBF), (0x80, 0xBF)),
        ((0xF1, 0xF3), (0x80, 0xBF), (0x80, 0xBF), (0x80, 0xBF)),
        ((0xF4, 0xF4), (0x80, 0x8F), (0x80, 0xBF), (0x80, 0xBF)),
    ]
    assert utf8_sequences(CharSet(())) == []
    assert utf8_sequences([(0xD800, 0xDFFF)]) == []
    assert utf8_sequences(CharSet.of("é")) == [((0xC3, 0xC3), (0xA9, 0xA9))]


def _seq_strings(sq: tuple[tuple[int, int], ...]) -> list[bytes]:
    return [bytes(p) for p in itertools.product(*(range(lo, hi + 1) for lo, hi in sq))]


def _check_sequences(ranges: list[tuple[int, int]]) -> None:
    cs = CharSet(tuple(ranges))
    seqs = utf8_sequences(cs)
    covered: list[bytes] = []
    for sq in seqs:
        covered.extend(_seq_strings(sq))
    # disjoint, and exactly the encodings of the set
    assert len(covered) == len(set(covered))
    expected = {chr(c).encode() for lo, hi in cs.ranges for c in range(lo, hi + 1)}
    assert set(covered) == expected


code_points = st.integers(0, 0x10FFFF)
boundaries = st.sampled_from(
    [0, 0x7F, 0x80, 0x7FF, 0x800, 0xFFF, 0x1000, 0xD7FF, 0xE000, 0xFFFF, 0x10000, 0x10FFFF]
)


@SETTINGS
@given(
    st.lists(
        st.tuples(st.one_of(code_points, boundaries), st.integers(0, 3000)), min_size=1, max_size=3
    )
)
def test_utf8_sequences_exact(specs: list[tuple[int, int]]) -> None:
    _check_sequences([(lo, min(lo + width, 0x10FFFF)) for lo, width in specs])


def test_utf8_sequences_big_sets() -> None:
    # whole-range sets: check through the code-point intervals each rectangle spans
    for cs in [parse_regex(r"\w"), parse_regex(r"\S"), CharSet.any(), parse_regex("[^a-zé]")]:
        seqs = utf8_sequences(cs)
        spans = []
        for sq in seqs:
            lo = bytes(r[0] for r in sq).decode()
            hi = bytes(r[1] for r in sq).decode()
            size = int(np.prod([h - lo_ + 1 for lo_, h in sq]))
            assert ord(hi) - ord(lo) + 1 == size
            spans.append((ord(lo), ord(hi)))
        assert spans == sorted(spans)
        assert CharSet(tuple(spans)) == cs
        assert sum(h - lo + 1 for lo, h in spans) == cs.size()


# ------------------------------------------------------- categories vs re


@pytest.mark.parametrize(
    "pattern",
    [
        r"\d",
        r"\w",
        r"\s",
        r"\D",
        r"\W",
        r"\S",
        ".",
        "(?s).",
        r"[^\w\s]",
        r"(?a)\w",
        r"(?a)\D",
        r"(?a)\s",
    ],
)
def test_categories_every_code_point(pattern: str) -> None:
    expected = re_mask(pattern)
    node = parse_regex(pattern)
    assert isinstance(node, CharSet)
    assert np.array_equal(charset_mask(node), expected)
    dfa = ByteDFA.from_regex(pattern)
    assert np.array_equal(dfa_accepts_each_char(dfa), expected)


@pytest.mark.parametrize(
    "pattern",
    [
        "(?i)k",
        "(?i)s",
        "(?i)i",
        "(?i)ß",
        "(?i)\u0130",
        "(?i)\u00b5",
        "(?i)\u0345",
        "(?i)\U00010400",
        "(?i)[a-z]",
        "(?i)[^a-z]",
        r"(?i)[\wä]",
        r"(?i)[^\d\sK]",
        r"(?i)\W",
        "(?i)[\u0100-\u017f]",
        "(?i)[\u1f80-\U00010428]",
        "(?i)[\U00010400x]",
        "(?i)[\U00010428x]",
        "(?i)[\u0130\u0131]",
        "(?i)[^k]",
        "(?ai)[a-z\u212a]",
        "(?ai)k",
        "(?ai)[^s]",
        r"(?a:\w)",
        "(?i:[a-z])",
        "(?i)(?-i:k)",
        "(?i)(?a:[k\u212a])",
        "(?i)[\u03d0-\u03d1]",
        "(?i)[\x00-\uffff]",
        "(?i)[\u2160-\U00010000]",
    ],
)
def test_ignorecase_every_code_point(pattern: str) -> None:
    expected = re_mask(pattern)
    node = parse_regex(pattern)
    mask = (
        charset_mask(node)
        if isinstance(node, CharSet)
        else charset_mask(
            CharSet.of(node.text)  # type: ignore[union-attr]
        )
    )
    assert np.array_equal(mask, expected), [
        hex(c) for c in all_code_points()[0][mask != expected][:10]
    ]
    assert np.array_equal(dfa_accepts_each_char(ByteDFA.from_regex(pattern)), expected)


# ------------------------------------------------------ random regexes

ALPHABET = ["a", "b", "é", "中"]
ATOMS = [
    "a",
    "b",
    "é",
    "中",
    ".",
    "[ab]",
    "[^a]",
    "[a-é]",
    "[é中]",
    "[^é中]",
    r"\w",
    r"\W",
    r"\s",
    r"\d",
    "(?:)",
    "[^\\w\\s]",
    "A",
    "[b-中]",
]
QUANTIFIERS = ["*", "+", "?", "{2}", "{0,2}", "{1,3}", "{2,}", "*?", "+?", "??", "{1,2}?"]


def _regexes() -> st.SearchStrategy[str]:
    atoms = st.sampled_from(ATOMS)

    def extend(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        return st.one_of(
            st.tuples(inner, inner).map("".join),
            st.tuples(inner, inner).map(lambda t: f"{t[0]}|{t[1]}"),
            inner.map(lambda r: f"({r})"),
            st.tuples(inner, st.sampled_from(QUANTIFIERS)).map(lambda t: f"(?:{t[0]}){t[1]}"),
        )

    body = st.recursive(atoms, extend, max_leaves=8)
    flags = st.sampled_from(["", "", "(?i)", "(?s)", "(?is)", "(?m)"])
    begin = st.sampled_from(["", "", "^", r"\A"])
    end = st.sampled_from(["", "", "$", r"\Z"])
    return st.tuples(flags, begin, body, end).map(
        lambda t: f"{t[0]}{t[1]}(?:{t[2]}){t[3]}" if t[1] or t[3] else t[0] + t[2]
    )


TEXT_CHARS = ["a", "b", "é", "中", "A", "É", "\n", " ", "😀", "1", "_"]
texts = st.text(alphabet=st.sampled_from(TEXT_CHARS), max_size=6)
any_texts = st.text(alphabet=st.characters(exclude_categories=("Cs",)), max_size=4)


@functools.lru_cache(maxsize=512)
def _dfa(pattern: str) -> ByteDFA:
    return ByteDFA.from_regex(pattern)


@SETTINGS
@given(_regexes(), st.lists(st.one_of(texts, any_texts), min_size=1, max_size=12))
def test_random_regex_matches_like_re(pattern: str, samples: list[str]) -> None:
    compiled = re.compile(pattern)
    dfa = _dfa(pattern)
    assert dfa.accepts_empty() == bool(compiled.fullmatch(""))
    for s in samples:
        assert dfa.matches(s.encode()) == bool(compiled.fullmatch(s)), (pattern, s)
    # the automaton's own shortest string is accepted by re too
    witness = shortest_completion(dfa, dfa.start)
    assert (witness is None) == dfa.is_empty()
    if witness is not None:
        assert compiled.fullmatch(witness.decode())


def _completions(k: int) -> list[str]:
    return ["".join(t) for n in range(k + 1) for t in itertools.product(ALPHABET, repeat=n)]


COMPLETIONS = _completions(3)


def _check_viability(pattern: str, dfa: ByteDFA, prefix: bytes) -> None:
    compiled = re.compile(pattern)
    state = dfa.run(prefix)
    assert (state >= 0) == dfa.is_viable(prefix)
    if state >= 0:
        # viable ⇒ a completion exists: the automaton names one, re confirms it
        rest = shortest_completion(dfa, state)
        assert rest is not None
        assert compiled.fullmatch((prefix + rest).decode()), (pattern, prefix, rest)
    try:
        head = prefix.decode()
        tails = [head + c for c in COMPLETIONS]
    except UnicodeDecodeError:  # cut inside a character: finish it first
        tails = []
        for c in [*ALPHABET, "😀"]:
            enc = c.encode()
            for cut in range(1, len(enc)):
                if prefix.endswith(enc[:cut]):
                    try:
                        head = (prefix + enc[cut:]).decode()
                    except UnicodeDecodeError:
                        continue
                    tails += [head + t for t in COMPLETIONS]
    # a completion found by brute force ⇒ viable
    if any(compiled.fullmatch(t) for t in tails):
        assert state >= 0, (pattern, prefix)


@SETTINGS
@given(_regexes(), st.lists(st.text(alphabet=st.sampled_from(ALPHABET), max_size=4), max_size=4))
def test_random_regex_viability(pattern: str, prefixes: list[str]) -> None:
    dfa = _dfa(pattern)
    for p in prefixes:
        enc = p.encode()
        _check_viability(pattern, dfa, enc)
        if p and len(p[-1].encode()) > 1:
            # cut inside the last (multi-byte) character
            for cut in range(1, len(p[-1].encode())):
                _check_viability(pattern, dfa, enc[:-cut])


@SETTINGS
@given(_regexes(), st.lists(st.binary(max_size=8), max_size=10))
def test_random_regex_bytes(pattern: str, blobs: list[bytes]) -> None:
    dfa = _dfa(pattern)
    compiled = re.compile(pattern)
    for b in blobs:
        try:
            text = b.decode()
        except UnicodeDecodeError:
            assert not dfa.matches(b), (pattern, b)
            continue
        assert dfa.matches(b) == bool(compiled.fullmatch(text))


def test_invalid_utf8_never_matched() -> None:
    for pattern in ["(?s).*", r"[^a]*", r"\W*", r"\D+", "(?s).{0,4}"]:
        dfa = ByteDFA.from_regex(pattern)
        for bad in [
            b"\x80",
            b"\xc0\x80",
            b"\xc1\xbf",
            b"\xed\xa0\x80",
            b"\xf4\x90\x80\x80",
            b"\xf5\x80\x80\x80",
            b"\xff",
            b"\xe0\x80\xaf",
            b"\xc3",
            b"a\xc3",
        ]:
            assert not dfa.matches(bad), (pattern, bad)
        assert dfa.is_viable(b"\xc3") and not dfa.is_viable(b"\xc3a")
        assert not dfa.is_viable(b"\xed\xa0")  # a surrogate can never be completed
        assert dfa.is_viable(b"\xed\x9f")


def test_any_utf8() -> None:
    d = ByteDFA.any_utf8()
    for s in ["", "a", "é中😀\n", "\U0010ffff", "\x00"]:
        assert d.matches(s.encode())
    for bad in [b"\x80", b"\xc3", b"\xed\xa0\x80", b"\xf8"]:
        assert not d.matches(bad)
    assert d.num_states == 8 and ByteDFA.from_regex("(?s).*").same_language(d)


@SETTINGS
@given(st.lists(st.binary(max_size=6), max_size=6))
def test_any_utf8_is_valid_utf8(blobs: list[bytes]) -> None:
    d = ByteDFA.any_utf8()
    for b in blobs:
        try:
            b.decode()
            valid = True
        except UnicodeDecodeError:
            valid = False
        assert d.matches(b) == valid


# -------------------------------------------------------- named patterns

ISO = r"\d{4}-[01]\d-[0-3]\dT[0-2]\d:[0-5]\d:[0-5]\d([+-][0-2]\d:[0-5]\d|Z)"
JSON_STRING = r'"([^"\\\x00-\x1f]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*"'
EMAIL = r"[\w.-]+@[\w-]+\.\w+"


@pytest.mark.parametrize(
    "pattern, good, bad",
    [
        (
            ISO,
            ["2024-01-31T12:34:56Z", "1999-12-01T00:00:00+05:30", "٢٠٢٤-01-31T12:34:56Z"],
            ["2024-1-31T12:34:56Z", "2024-01-31 12:34:56Z", "2024-01-31T12:34:56"],
        ),
        (
            JSON_STRING,
            ['""', '"a\\"b"', '"\\u00e9é中"', '"\\n"'],
            ['"', '"\\x"', '"a"b"', '"\n"', '"\\u00g0"'],
        ),
        (EMAIL, ["a.b-c@d-e.fr", "é@中.x"], ["@a.b", "a@b", "a b@c.d"]),
        (r'[^"\\]*', ["", "abc é", "'"], ['"', "\\"]),
        (".{0,500}", ["", "x" * 500, "é" * 500], ["x" * 501, "\n"]),
        (r"\w+", ["abc", "é中_1"], ["", "a b", "-"]),
        ("(a|b)*abb", ["abb", "babb", "aabb"], ["ab", "abba", ""]),
    ],
)
def test_named_patterns(pattern: str, good: list[str], bad: list[str]) -> None:
    dfa = ByteDFA.from_regex(pattern)
    if dfa.num_states < 2000:
        assert_trimmed(dfa)
    for s in good:
        assert re.fullmatch(pattern, s) and dfa.matches(s.encode()), s
    for s in bad:
        assert not re.fullmatch(pattern, s) and not dfa.matches(s.encode()), s


def test_word_list() -> None:
    words = sorted({"".join(t) for t in itertools.product("abcé中", repeat=4)})[:200]
    pattern = "(" + "|".join(words) + ")"
    dfa = ByteDFA.from_regex(pattern)
    for w in words:
        assert dfa.matches(w.encode())
    assert not dfa.matches(b"abc") and not dfa.matches(b"zzzz")
    assert dfa.same_language(ByteDFA.from_strings(w.encode() for w in words))
    assert dfa.num_states == naive_equivalent_pairs(dfa)


# -------------------------------------------------- DFA operations


def test_abb_is_minimal_with_four_states() -> None:
    d = ByteDFA.from_regex("(a|b)*abb")
    assert d.num_states == 4
    assert d.minimize() is d
    assert d.start == 0 and d.accepting.tolist() == [False, False, False, True]
    assert_trimmed(d)


@pytest.mark.parametrize(
    "p, q",
    [
        ("(a|b)*", "[ab]*"),
        ("(a*b*)*", "[ab]*"),
        ("a{2,3}", "aa|aaa"),
        ("(?i)ab", "[aA][bB]"),
        ("x?x?", "x{0,2}"),
        ("(a|ab)(c|bcd)", "ac|abc|abb?cd"),
        ("[^\\s\\S]", "[^\\w\\W]"),
    ],
)
def test_equivalent_regexes_give_identical_tables(p: str, q: str) -> None:
    a, b = ByteDFA.from_regex(p), ByteDFA.from_regex(q)
    assert a.same_language(b)
    assert np.array_equal(a.table, b.table) and np.array_equal(a.accepting, b.accepting)
    assert not a.same_language(ByteDFA.from_regex(f"(?:{q})|c"))


def test_from_node_unnormalized_trees() -> None:
    a = Literal("a")
    cases = [
        (Repeat(a, 0, 0), {""}),
        (Repeat(a, 1, 1), {"a"}),
        (Repeat(a, 2, 2), {"aa"}),
        (Repeat(Empty(), 0, None), {""}),
        (Seq(()), {""}),
        (Seq((a, Empty(), Seq((a,)))), {"aa"}),
        (Alt((a,)), {"a"}),
        (Alt((a, a, Empty())), {"", "a"}),
        (Repeat(Repeat(a, 0, 1), 2, 3), {"", "a", "aa", "aaa"}),
        (Repeat(Alt((Empty(), Literal("ab"))), 0, None), {"", "ab", "abab", "ababab"}),
        (Seq((CharSet(()), a)), set()),
    ]
    universe = {"".join(t) for n in range(7) for t in itertools.product("ab", repeat=n)}
    for node, language in cases:
        dfa = ByteDFA.from_node(node)
        accepted = {u for u in universe if dfa.matches(u.encode())}
        assert accepted == {u for u in language if u in universe}, node
    with pytest.raises(TypeError):
        ByteDFA.from_node("a")  # type: ignore[arg-type]


def test_empty_language() -> None:
    for d in [
        ByteDFA.from_regex(r"[^\s\S]"),
        ByteDFA.from_regex("a\ud800"),
        ByteDFA.empty(),
        ByteDFA.from_regex("a").intersect(ByteDFA.from_regex("b")),
    ]:
        assert d.is_empty() and d.num_states == 0 and d.start == -1
        assert not d.matches(b"") and not d.is_viable(b"") and not d.accepts_empty()
        assert d.run(b"abc") == -1 and d.step(-1, 0) == -1
        assert d.table.shape == (0, 256)
    e = ByteDFA.from_regex("")
    assert e.accepts_empty() and e.num_states == 1 and not e.is_viable(b"a")


def test_stepping_api() -> None:
    d = ByteDFA.from_regex("é+")
    enc = "é".encode()
    s = d.step(d.start, enc[0])
    assert s >= 0 and not d.accept[s] and d.rows[s] == d.table[s].tolist()
    s = d.step(s, enc[1])
    assert d.accept[s] and d.run(enc * 3) == s and d.run(enc, state=s) == s
    assert d.run(b"x") == -1 and d.step(d.start, ord("x")) == -1
    assert d.matches(enc * 2) and d.is_viable(enc[:1]) and not d.is_viable(b"\xc3\xaa")
    classmap, k = d.byte_classes()
    assert classmap.shape == (256,) and k == len(set(classmap.tolist()))
    for b in range(256):
        assert np.array_equal(
            d.table[:, b], d.table[:, int(np.flatnonzero(classmap == classmap[b])[0])]
        )
    assert d.table.flags.writeable is False


def test_constructor_trims_and_minimize_preserves_language() -> None:
    # a redundant automaton for (ab)* with duplicated states and a dead branch
    t = np.full((6, 256), -1, dtype=np.int32)
    t[0, ord("a")] = 1
    t[1, ord("b")] = 2
    t[2, ord("a")] = 3
    t[3, ord("b")] = 0
    t[0, ord("c")] = 4  # 4 -> 5, never accepting: dead
    t[4, ord("c")] = 5
    acc = np.array([True, False, True, False, False, False])
    d = ByteDFA(t, acc, 0)
    assert d.num_states == 4
    assert_trimmed(d)
    m = d.minimize()
    assert m.num_states == 2
    assert m.same_language(ByteDFA.from_regex("(ab)*"))
    for s in ["", "ab", "abab", "a", "aba", "c", "cc"]:
        assert d.matches(s.encode()) == m.matches(s.encode()) == bool(re.fullmatch("(ab)*", s))
    with pytest.raises(ValueError):
        ByteDFA(np.zeros((2, 255), np.int32), np.zeros(2, bool), 0)
    with pytest.raises(ValueError):
        ByteDFA(np.full((2, 256), 5, np.int32), np.zeros(2, bool), 0)


@SETTINGS
@given(_regexes())
def test_minimal_and_trimmed(pattern: str) -> None:
    d = _dfa(pattern)
    assert_trimmed(d)
    assert naive_equivalent_pairs(d) == d.num_states


@st.composite
def _random_tables(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray]:
    n = draw(st.integers(1, 9))
    table = np.full((n, 256), -1, dtype=np.int32)
    for s in range(n):
        for b in b"abc":
            table[s, b] = draw(st.integers(-1, n - 1))
    accepting = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)))
    return table, accepting


STRINGS_ABC = [bytes(t) for n in range(6) for t in itertools.product(b"abc", repeat=n)]


@settings(max_examples=200, deadline=None)
@given(_random_tables())
def test_minimize_random_automata(data: tuple[np.ndarray, np.ndarray]) -> None:
    table, accepting = data
    n = len(accepting)
    live = set(np.flatnonzero(accepting).tolist())
    for _ in range(n):
        live |= {s for s in range(n) if any(int(table[s, b]) in live for b in b"abc")}

    def reference(word: bytes) -> tuple[bool, bool]:
        s = 0
        for b in word:
            s = int(table[s, b])
            if s < 0:
                return False, False
        return bool(accepting[s]), s in live

    d = ByteDFA(table, accepting, 0)
    assert_trimmed(d)
    m = d.minimize()
    assert_trimmed(m)
    assert m.num_states == naive_equivalent_pairs(d) == naive_equivalent_pairs(m)
    for w in STRINGS_ABC:
        ok, viable = reference(w)
        assert d.matches(w) == m.matches(w) == ok
        assert d.is_viable(w) == m.is_viable(w) == viable
    assert m.minimize() is m and m.same_language(d)


@SETTINGS
@given(_regexes(), _regexes(), st.lists(texts, min_size=1, max_size=10))
def test_intersect_union_brute_force(p: str, q: str, samples: list[str]) -> None:
    a, b = _dfa(p), _dfa(q)
    inter, uni = a.intersect(b), a.union(b)
    assert_trimmed(inter)
    assert_trimmed(uni)
    for s in samples:
        x, y = bool(re.fullmatch(p, s)), bool(re.fullmatch(q, s))
        assert inter.matches(s.encode()) == (x and y)
        assert uni.matches(s.encode()) == (x or y)
    w = shortest_completion(inter, inter.start)
    if w is not None:
        assert re.fullmatch(p, w.decode()) and re.fullmatch(q, w.decode())
    assert inter.is_empty() == (w is None)
    assert uni.intersect(a).same_language(a)
    assert inter.union(a).same_language(a)


def test_from_strings_and_literal() -> None:
    opts = [b"", b"ab", b"abc", b"\xff\x00", "é".encode()]
    d = ByteDFA.from_strings(opts)
    for o in opts:
        assert d.matches(o)
    for o in [b"a", b"abcd", b"\xff", b"b"]:
        assert not d.matches(o)
    lit = ByteDFA.literal(b"hello")
    assert lit.num_states == 6 and lit.matches(b"hello") and not lit.matches(b"hell")
    assert ByteDFA.from_strings([]).is_empty()
    with pytest.raises(CompileLimitExceeded):
        ByteDFA.from_strings([bytes([i % 256]) * 50 for i in range(100)], max_states=1000)


# --------------------------------------------------------- limits


def test_exponential_pattern_hits_the_state_limit_promptly() -> None:
    t0 = time.perf_counter()
    with pytest.raises(CompileLimitExceeded) as info:
        ByteDFA.from_regex("(a|b)*a(a|b){20}", max_states=2000)
    assert time.perf_counter() - t0 < 5
    assert info.value.limit == "states" and info.value.bound == 2000
    assert info.value.value is not None and info.value.value > 2000
    # a bound that is large enough works
    d = ByteDFA.from_regex("(a|b)*a(a|b){3}", max_states=2000)
    assert d.num_states == 16


def test_huge_repeat_hits_the_nfa_limit() -> None:
    t0 = time.perf_counter()
    with pytest.raises(CompileLimitExceeded) as info:
        ByteDFA.from_regex("(?:a{1000}){1000}", max_states=1000)
    assert info.value.limit == "nfa_states"
    assert time.perf_counter() - t0 < 5


def test_product_limit() -> None:
    a = ByteDFA.from_regex("(?:[ab]{0,60})")
    b = ByteDFA.from_regex("(?:[bc]{0,60})")
    with pytest.raises(CompileLimitExceeded):
        a.intersect(b, max_states=10)
    assert a.intersect(b).same_language(ByteDFA.from_regex("b{0,60}"))


@pytest.mark.parametrize(
    "pattern",
    ["abc", "[a-z]+", "(ab|c){3,7}", "é{2}x*", "((a|b){2,5}c)+", '[^"\\\\]{0,40}', "a(?=b)b"],
)
def test_the_nfa_count_bounds_the_construction(pattern):
    """``check_nfa_size`` counts on the AST at least the states the core's
    construction builds, so an engine refused by it is refused no later
    than the core would be (and nothing is built to count)."""
    from constrain_api.automata import check_nfa_size, parse_regex
    from constrain_api.automata.dfa import _NFA

    node = parse_regex(pattern)
    built = _NFA(10**7)
    built.build(node, built.state(), built.state())
    assert check_nfa_size(node) >= len(built.eps)


def test_the_nfa_count_refuses_before_building():
    from constrain_api.automata import check_nfa_size, nfa_limit, parse_regex

    with pytest.raises(CompileLimitExceeded) as info:
        check_nfa_size(parse_regex("(a[b-z]{1000}){1000}"), what="an engine")
    assert info.value.limit == "nfa_states" and info.value.bound == nfa_limit(100_000)
    assert info.value.value > 10**6 and "an engine" in str(info.value)
    assert 10 < check_nfa_size(parse_regex("a{10}"), limit=30) <= 30


# ------------------------------------------------------------------ LazyDFA


@SETTINGS
@given(_regexes())
def test_lazy_dfa_has_the_language_of_the_minimal_one(pattern: str) -> None:
    """Found state by state, the automaton has the minimal DFA's language,
    every state it finds is live (nothing for the trimming to drop), and
    ``without_empty`` removes exactly the empty string."""
    node = parse_regex(pattern)
    eager = ByteDFA.from_node(node)
    lazy = LazyDFA(node)
    assert lazy.is_empty() == eager.is_empty()
    assert lazy.accepts_empty() == eager.accepts_empty()
    whole = lazy.to_dfa()
    assert whole.num_states == lazy.num_states  # all reachable and live
    assert whole.same_language(eager)
    without = LazyDFA(node, without_empty=True)
    assert without.nullable == eager.accepts_empty()
    assert not without.accepts_empty()
    assert without.to_dfa().same_language(eager.difference(ByteDFA.literal(b"")))


@SETTINGS
@given(_regexes(), st.lists(st.binary(max_size=6), max_size=8))
def test_lazy_dfa_runs_and_matches_as_the_minimal_one(pattern: str, texts: list[bytes]) -> None:
    """``run``/``matches``/``is_viable`` on a lazy automaton give the
    minimal DFA's verdicts (on its strings and on arbitrary bytes)."""
    node = parse_regex(pattern)
    eager, lazy = ByteDFA.from_node(node), LazyDFA(node)
    for text in texts + _some_strings(eager):
        assert lazy.matches(text) == eager.matches(text), text
        assert lazy.is_viable(text) == eager.is_viable(text), text
        assert (lazy.run(text) < 0) == (eager.run(text) < 0), text


def _some_strings(dfa: ByteDFA, limit: int = 8) -> list[bytes]:
    """Up to ``limit`` accepted strings, shortest first (breadth first)."""
    found, frontier, seen = [], [(dfa.start, b"")], {dfa.start}
    while frontier and len(found) < limit and dfa.start >= 0:
        state, text = frontier.pop(0)
        if dfa.accept[state]:
            found.append(text)
        for byte in range(256):
            nxt = dfa.rows[state][byte]
            if nxt >= 0 and nxt not in seen:
                seen.add(nxt)
                frontier.append((nxt, text + bytes([byte])))
    return found


def test_lazy_dfa_states_are_found_on_demand_and_dead_branches_are_dead() -> None:
    # "ab" then a class with no character: no string continues it
    node = Alt((Seq((Literal("ab"), CharSet(()))), Literal("ac"), Literal("x" * 50)))
    lazy = LazyDFA(node)
    assert lazy.num_states == 1  # only the start, before any row is read
    after_a = lazy.rows[lazy.start][ord("a")]
    assert after_a >= 0 and lazy.num_states < 10
    assert lazy.rows[after_a][ord("b")] == -1  # a dead NFA branch is a dead byte
    assert lazy.accept[lazy.rows[after_a][ord("c")]]
    assert lazy.to_dfa().same_language(ByteDFA.from_strings([b"ac", b"x" * 50]))


def test_lazy_dfa_rows_are_made_from_runs_only_when_read() -> None:
    """A walk that reads a state's runs makes no 256-entry row; a row read
    later holds what the runs say, byte by byte."""
    node = parse_regex('"(?:[^"\\\\]|\\\\["\\\\/bfnrt])*"')
    lazy = LazyDFA(node)
    q = lazy.start
    for byte in b'"ab\\n':
        q = next(target for lo, hi, target in lazy.runs_of(q) if lo <= byte <= hi)
    assert lazy.num_states >= 3 and len(lazy.rows) == 0  # runs found, no row made
    for state in range(lazy.num_states):
        if state in lazy.runs:
            row = lazy.rows[state]
            want = [-1] * 256
            for lo, hi, target in lazy.runs[state]:
                want[lo : hi + 1] = [target] * (hi + 1 - lo)
            assert list(row) == want
    assert lazy.to_dfa().same_language(ByteDFA.from_node(node))


@pytest.mark.parametrize(
    "pattern",
    [
        '(?:"circle"|"square"|"triangle")(?:,[0-9]+)*',  # alternatives that end alike
        "(?:ab|cb)(?:x(?:ab|cb))*",
        '\\{(?:"a":1(?:,"b":2)?(?:,"c":3)?|"b":2(?:,"c":3)?|"c":3)?\\}',  # optional members
    ],
)
def test_lazy_dfa_merges_what_remains_alike(pattern: str) -> None:
    """States are sets of interned remainders, so the copies of a shared
    continuation are one state: as many states as the minimal DFA here."""
    node = parse_regex(pattern)
    assert LazyDFA(node).complete().num_states == ByteDFA.from_node(node).num_states


@pytest.mark.parametrize(("pattern", "sequences"), [(r"\w", 886), (r"\d+", 62), (r"[^a]", 10)])
def test_a_unicode_class_is_taken_apart_one_lead_byte_at_a_time(
    pattern: str, sequences: int
) -> None:
    """A character class's UTF-8 sequences (``\\w``: 886) are one term
    whose linear form has an item per distinct leading byte range; the
    rests behind a lead byte are made when a walk reaches them. The first
    row makes a few dozen terms, not one per sequence, and the whole
    automaton is still the minimal one's language with as many states."""
    from constrain_api.automata.utf8 import utf8_sequences

    node = parse_regex(pattern)
    assert len(utf8_sequences(parse_regex(pattern.rstrip("+")))) == sequences
    lazy = LazyDFA(node)
    lazy.rows[lazy.start]
    assert lazy.nfa_states < 40
    eager = ByteDFA.from_node(node)
    assert lazy.complete().to_dfa().same_language(eager)
    assert lazy.num_states == eager.num_states


@pytest.mark.parametrize(
    "pattern",
    ['"description":(?:true|false),"name":"[a-z]*"', "(?:abcdefgh|abcdxyz|bcdefgh)+q", "é€x𝄞y"],
)
def test_a_literal_is_taken_apart_as_walks_read_it(pattern: str) -> None:
    """A literal is one term until a walk reads its first byte (its rest is
    made then): making the automaton costs nothing per byte of a property
    name, and the whole automaton is still the minimal one's language with
    as many states (literals that end alike share their rests)."""
    node = parse_regex(pattern)
    lazy = LazyDFA(node)
    bytes_in_literals = len(pattern.encode())
    assert lazy.nfa_states < bytes_in_literals / 2
    eager = ByteDFA.from_node(node)
    assert lazy.complete().to_dfa().same_language(eager)
    assert lazy.num_states == eager.num_states


def test_lazy_dfa_keeps_counts_instead_of_copies() -> None:
    """A counted repetition is one term with its counts: making the automaton
    costs nothing per count, only the states a walk finds do."""
    lazy = LazyDFA(parse_regex("(?:[a-z]+,){0,100000}"))
    assert lazy.nfa_states < 50 and lazy.num_states == 1
    q = lazy.start
    for b in b"ab,cd,":
        q = lazy.rows[q][b]
    assert q >= 0 and lazy.accept[q] and lazy.num_states <= 6


def test_lazy_dfa_of_a_long_literal_in_a_repetition() -> None:
    """Sequences are re-nested without recursion: a 3,000-byte literal
    under a counted repetition (a long enum value in an array) works."""
    node = parse_regex("(?:" + "x" * 3000 + "|y){0,3}z")
    assert LazyDFA(node).complete().to_dfa().same_language(ByteDFA.from_node(node))


def test_a_lazy_dfa_nobody_holds_is_freed_without_a_collection() -> None:
    import gc
    import weakref

    lazy = LazyDFA(parse_regex("[a-z]+@[a-z]+"))
    lazy.rows[lazy.start]
    ref = weakref.ref(lazy)
    gc.disable()
    try:
        del lazy
        assert ref() is None  # (no reference cycle: freed by its count)
    finally:
        gc.enable()


def test_lazy_dfa_stops_at_max_states_when_it_finds_one_too_many() -> None:
    node = parse_regex("(a|b)*a(a|b){16}")  # minimal DFA: 2**17 states
    lazy = LazyDFA(node, max_states=1000)
    with pytest.raises(CompileLimitExceeded, match="states=1000"):
        lazy.complete()
    assert lazy.num_states == 1000


def _walk_in_threads(work: list[tuple[LazyDFA, list[bytes]]]) -> None:
    """Walk each automaton over its texts, one thread per pair, at once."""
    import threading

    def walk(dfa: LazyDFA, texts: list[bytes]) -> None:
        for text in texts:
            q = dfa.start
            for b in text:
                q = dfa.rows[q][b]
                if q < 0:
                    break

    threads = [threading.Thread(target=walk, args=pair) for pair in work]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def test_lazy_dfa_found_by_two_threads_at_once_is_one_automaton() -> None:
    node = parse_regex("[a-f]{0,6}(?:x[0-9]+|y(?:ab|ac)*)")
    shared, alone = LazyDFA(node), LazyDFA(node).complete()
    walks = [bytes(c) for c in itertools.product(b"abxy09", repeat=5)]
    _walk_in_threads([(shared, walks[0::2]), (shared, walks[1::2])])
    assert shared.to_dfa().same_language(alone.to_dfa())
    assert shared.num_states == alone.num_states


def test_lazy_dfas_sharing_a_term_table() -> None:
    """Automata sharing a ``TermTable`` (a grammar's terminals) take a
    common piece apart once: the second automaton's walk into the piece
    makes less than half the terms it makes alone, and each keeps its own
    language; walks of two sharing
    automata in two threads at once (the table's lock) give the automata
    built alone; the table's bound is the sum of its automata's."""
    from constrain_api.automata import TermTable, nfa_limit

    piece = "(?:[a-f]{0,4}(?:x[0-9]+|y(?:ab|ac)*))"
    patterns = [f"A{piece},{piece}", f"B{piece};{piece}"]
    table = TermTable()
    shared = [LazyDFA(parse_regex(p), max_states=500, terms=table) for p in patterns]
    assert table.limit == 2 * nfa_limit(500)
    first, second = shared
    q = first.start
    for b in b"Aab":
        q = first.rows[q][b]
    before = first.nfa_states  # (of the table: both automata's)
    alone = LazyDFA(parse_regex(patterns[1]), max_states=500)
    for dfa in (second, alone):
        q = dfa.start
        for b in b"Bab":
            q = dfa.rows[q][b]
        assert q >= 0
    # the piece was taken apart for the first: the second makes only its own continuations
    assert second.nfa_states - before < alone.nfa_states / 2
    walks = [bytes(c) for c in itertools.product(b"ABab,;xy09", repeat=5)]
    table = TermTable()
    fresh = [LazyDFA(parse_regex(p), max_states=500, terms=table) for p in patterns]
    _walk_in_threads([(dfa, walks) for dfa in fresh])
    for pattern, dfa, other in zip(patterns, shared, fresh, strict=True):
        minimal = ByteDFA.from_regex(pattern)
        assert dfa.complete().to_dfa().same_language(minimal)
        assert other.complete().to_dfa().same_language(minimal)


def test_lazy_dfa_takes_the_regex_apart_only_where_walks_go() -> None:
    """An alternation is one term until a row needs its first bytes, and
    then only its options are made, down to their own alternations: a regex
    of 500 long options costs a handful of terms to make, a walk down one
    option its options' keys, and the whole automaton still has the minimal
    DFA's language."""
    options = [
        Seq((Literal(f"k{i:03d}="), Alt((Literal("x" * 40), Literal(f"y{i}"))))) for i in range(500)
    ]
    node = Seq((Literal("{"), Alt(tuple(options)), Literal("}")))
    lazy = LazyDFA(node)
    made = lazy.nfa_states
    assert made < 10  # "{", the alternation (one term), "}"
    q = lazy.start
    for b in b"{k042=":
        q = lazy.rows[q][b]
    # each option's key is made (the alternation's first bytes), not its 40 x's
    assert q >= 0 and lazy.nfa_states < 500 * 20 < 500 * 40
    assert lazy.complete().to_dfa().same_language(ByteDFA.from_node(node))
    # a void option is no term at all: its dead byte is dead at once
    dead = LazyDFA(Alt((Seq((Literal("a"), CharSet(()))), Literal("b"))))
    assert dead.rows[dead.start][ord("a")] == -1 and dead.rows[dead.start][ord("b")] >= 0


def test_lazy_dfa_of_a_regex_nested_too_deeply_is_a_compile_limit() -> None:
    """Alternations nested past Python's recursion limit: a
    ``CompileLimitExceeded`` naming the nesting, not a ``RecursionError``."""
    import sys

    node = Alt((Literal("x"), Literal("y")))
    for i in range(sys.getrecursionlimit() + 100):
        node = Alt((node, Literal(f"y{i}")))
    with pytest.raises(CompileLimitExceeded) as info:
        LazyDFA(node).complete()
    assert info.value.limit == "nesting"


def test_byte_segments_cut_the_byte_line_where_edges_begin_and_end() -> None:
    """Public: each piece some edge covers, in byte order, with every
    target whose range holds it (bytes no edge covers are left out)."""
    edges = [(97, 122, "lower"), (100, 100, "d"), (48, 57, "digit"), (100, 102, ("hex", 1))]
    assert byte_segments(edges) == [
        (48, 57, frozenset({"digit"})),
        (97, 99, frozenset({"lower"})),
        (100, 100, frozenset({"lower", "d", ("hex", 1)})),
        (101, 102, frozenset({"lower", ("hex", 1)})),
        (103, 122, frozenset({"lower"})),
    ]
    assert byte_segments([(0, 255, 7)]) == [(0, 255, frozenset({7}))]
    assert byte_segments([]) == []


def test_composite_nodes_compare_and_hash_by_structure():
    """Sequences and alternations built apart (from lists or tuples, from
    equal parts) are equal, hash alike (a dict finds one by the other) and
    keep their parts as tuples; different ones differ."""
    a, b = Literal("ab"), CharSet(((48, 57),))
    seqs = [Seq([a, b]), Seq((Literal("ab"), CharSet(((48, 57),))))]
    alts = [Alt([a, b]), Alt((Literal("ab"), CharSet(((48, 57),))))]
    for one, other in (seqs, alts):
        assert one == other and hash(one) == hash(other) and {one: 1}[other] == 1
    assert Seq((a, b)) != Seq((b, a)) and Seq((a, b)) != Alt((a, b))
    assert type(seqs[0].parts) is tuple and type(alts[0].options) is tuple
    with pytest.raises(ValueError):
        Alt(())
