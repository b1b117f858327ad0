"""The ECMA-262 reading of ``pattern`` against an ECMA-262 engine.

``strings`` parses JSON Schema's patterns itself (its own ``\\d \\w \\s .``,
escapes, classes, Unicode properties, search semantics, lookarounds at the
top level); the other tests compare it with Python translations written by
hand. Here hypothesis draws patterns in ECMA-262 syntax (atoms of every kind
the parser reads, groups, alternations, quantifiers lazy and greedy,
anchors and lookarounds anywhere), and every string of a sample (random
strings over characters the atoms tell apart, and strings of the lowered
language itself) is in the lowered language iff ``regress`` (the Rust
ECMA-262 engine behind JSON Schema validators, ``u`` flag) finds a match,
with the length bounds drawn beside. A pattern the lowering refuses must be
refused for a documented reason, and one it calls malformed must be
malformed for the engine too; the Annex B leniencies the lowering accepts
(a lone ``{`` or ``]``, ``\\-`` outside a class) are checked against the
engine without the ``u`` flag, which has them.

``regress`` 2026.9.1 loses matches when backtracking into a capturing group
inside a quantified group (``^([^]([^]\\W|\\D)+[^]){2}$`` misses a string of
six characters that ``^(?:[^](?:[^]\\W|\\D)+[^]){2}$`` and Python find) and
behind a ``{0}`` repetition; the engine is given every group non-capturing,
which changes no language, and no ``{0}`` is drawn.
"""

from __future__ import annotations

import contextlib
import json
import random

import regress
from hypothesis import given
from hypothesis import strategies as st
from jsonschema_harness import same_examples

from constrain_api.automata import ByteDFA
from constrain_api.errors import CompileLimitExceeded, ConstraintError, UnsupportedConstraint
from constrain_api.jsonschema.strings import pattern_node, pattern_piece, quoted_node

LITERALS = ["a", "b", "c", "A", "é", "😀", " ", "-", "_", "0", "9", "/", "\n", ",", "ß", "K"]
ESCAPES = [r"\.", r"\/", r"\\", r"\$", r"\^", r"\(", r"\)", r"\[", r"\]", r"\{", r"\}", r"\|",
           r"\*", r"\+", r"\?", r"\t", r"\n", r"\v", r"\f", r"\r", r"\0", r"\cJ", r"\cj", r"\x41",
           r"\u00e9", r"\ud83d\ude00", r"\u2028", r"\uD83D\uDE00", r"\x2d", r"\u0000"]  # fmt: skip
CLASSES = [".", r"\d", r"\D", r"\w", r"\W", r"\s", r"\S", "[abc]", "[^a]", "[a-c]", r"[\d\s]",
           r"[^\w]", r"[\w\-]", "[-a]", "[a-]", "[]", "[^]", r"[\b]", r"[\s\S]", r"[^\s\d]",
           "[à-ö]", r"[\u00e0-\u00f6]", r"[\x00-\x1f]", r"[^\x20-\x7e]", "[.]", "[$^]", r"[\^a]",
           r"[a\]]", r"[\D]", r"[^\D]", r"[\W\d]", "[😀-😂]", r"[\ud83d\ude00-\ud83d\ude02]",
           "[^😀]", r"[\p{Lu}\d]", r"[^\p{L}]", r"[\cJ]", r"[\t-\r]", r"[\-]", "[a-a]", r"[\/]",
           r"\p{L}", r"\P{L}", r"\p{Lu}", r"\p{Ll}", r"\p{Nd}", r"\p{ASCII}", r"\p{Any}",
           r"\p{gc=Zs}", r"\p{General_Category=Lu}", r"\p{Letter}", r"\P{Nd}", r"\p{So}",
           r"\p{P}"]  # fmt: skip
QUANTIFIERS = ["*", "+", "?", "{2}", "{0,2}", "{1,3}", "{2,}", "*?", "+?", "??", "{1,2}?", "{0,1}"]
#: The characters the samples are made of: what the atoms tell apart
#: (line terminators, ECMA white space, a Kelvin sign and long s that case
#: folding would mix with K and s, astral characters, controls).
ALPHABET = ["a", "b", "c", "A", "K", "é", "à", "É", "😀", "😁", "0", "9", "_", "-", " ", "\n",
            "\r", "\t", "\v", "\f", "\x00", "\x08", "\x1f", "\u2028", "\u2029", "\xa0", "\ufeff",
            "\u3000", ".", "/", "$", "^", "\\", ",", "ß", "\u212a", "ſ", "\x7f", "\U0010ffff",
            "中", "٣"]  # fmt: skip
#: Why the lowering may refuse a pattern (docs/jsonschema.md).
REFUSALS = (
    "inside a lookaround", "inside a lookahead", "inside a lookbehind", "inside a quantified group",
    "inside a group or after $", "after a lookaround", "a lookaround after $",
    "a lookbehind after a lookahead", "legacy octal escape",
)  # fmt: skip


@st.composite
def patterns(draw: st.DrawFn, atoms: list[str] = LITERALS + ESCAPES + CLASSES) -> str:
    names = iter(range(1000))

    def sequence(depth: int) -> str:
        parts = []
        for _ in range(draw(st.integers(0, 4))):
            kind = draw(st.sampled_from(["atom"] * 5 + ["group", "look", "anchor"]))
            if kind == "anchor":
                parts.append(draw(st.sampled_from(["^", "$"])))
                continue
            if kind == "atom" or depth >= 2:
                piece = draw(st.sampled_from(atoms))
            elif kind == "group":
                opener = draw(st.sampled_from(["(?:", "(", "(?<name>"]))
                opener = opener.replace("name", f"n{next(names)}")
                piece = opener + alternatives(depth + 1) + ")"
            else:
                look = draw(st.sampled_from(["?=", "?!", "?<=", "?<!"]))
                piece = "(" + look + alternatives(depth + 1) + ")"
            if draw(st.integers(0, 2)) == 0:
                piece += draw(st.sampled_from(QUANTIFIERS))
            parts.append(piece)
        return "".join(parts)

    def alternatives(depth: int) -> str:
        return "|".join(sequence(depth) for _ in range(draw(st.integers(1, 3))))

    return alternatives(0)


def non_capturing(pattern: str) -> str:
    """``pattern`` with every group (named too) non-capturing: the same language."""
    out, i, in_class = [], 0, False
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            out.append(pattern[i : i + 2])
            i += 2
            continue
        if in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
        elif c == "(" and pattern.startswith("(?<", i) and pattern[i + 3] not in "=!":
            out.append("(?:")
            i = pattern.index(">", i) + 1
            continue
        elif c == "(" and not pattern.startswith("(?", i):
            out.append("(?:")
            i += 1
            continue
        out.append(c)
        i += 1
    return "".join(out)


def _walk(dfa: ByteDFA, rng: random.Random) -> str | None:
    """A random string of the lowered language (``None``: the walk got stuck)."""
    out, state = bytearray(), dfa.start
    while len(out) < 40:
        if dfa.accept[state] and rng.random() < 0.2:
            return json.loads(bytes(out))
        live = [b for b in range(256) if dfa.rows[state][b] >= 0]
        if not live:
            return None
        out.append(rng.choice(live))
        state = dfa.rows[state][out[-1]]
    return json.loads(bytes(out)) if dfa.accept[state] else None


def _engine(pattern: str, flags: str) -> regress.Regex | None:
    try:
        return regress.Regex(non_capturing(pattern), flags)
    except regress.RegressError:
        return None


def _agree(
    pattern: str, flags: str, lo: int = 0, hi: int | None = None, alphabet: list[str] = ALPHABET
) -> None:
    """The lowered language of ``pattern`` (with ``lo`` to ``hi``
    characters) on samples, against the engine with ``flags``; malformed
    only where it is with the ``u`` flag."""
    engine = _engine(pattern, flags)
    try:
        node = pattern_node(pattern)
    except UnsupportedConstraint as e:
        assert any(r in e.reason for r in REFUSALS), (pattern, e.reason)
        return
    except ConstraintError:
        assert _engine(pattern, "u") is None, f"{pattern!r} is a valid ECMA-262 pattern"
        return
    assert engine is not None, f"{pattern!r} is no ECMA-262 pattern with flags {flags!r}"
    try:
        dfa = ByteDFA.from_node(quoted_node(node, lo, hi))
    except CompileLimitExceeded:
        return
    try:
        text, intersection = pattern_piece(pattern, min_length=lo, max_length=hi)
    except (CompileLimitExceeded, UnsupportedConstraint):
        pass  # (no text: a lookaround, or a cut too big or through a repetition)
    else:  # (the text's automaton may be too big: why an intersection is given beside it)
        with contextlib.suppress(CompileLimitExceeded):
            assert ByteDFA.from_regex(text, max_states=20_000).same_language(dfa), (pattern, lo, hi)
        if intersection is not None:
            assert ByteDFA.from_node(intersection).same_language(dfa), (pattern, lo, hi)
    rng = random.Random(pattern)
    samples = ["".join(rng.choices(alphabet, k=rng.randint(0, 8))) for _ in range(80)]
    if not dfa.is_empty():
        samples += [s for s in (_walk(dfa, rng) for _ in range(20)) if s is not None]
    for s in samples:
        expected = engine.find(s) is not None and lo <= len(s) and (hi is None or len(s) <= hi)
        got = dfa.matches(json.dumps(s, ensure_ascii=False).encode())
        assert got == expected, (pattern, lo, hi, s)


#: No length bound, or ``minLength`` 0-4 with ``maxLength`` none or 0-5 above it.
BOUNDS = st.one_of(
    st.just((0, None)),
    st.tuples(st.integers(0, 4), st.one_of(st.none(), st.integers(0, 5))).map(
        lambda b: (b[0], None if b[1] is None else b[0] + b[1])
    ),
)


@same_examples(400)
@given(patterns(), BOUNDS)
def test_patterns_mean_what_an_ecma_engine_finds(pattern: str, bounds: tuple) -> None:
    """Every sampled string is in the lowered language iff ``regress`` (the
    ``u`` flag) finds a match in it and its length is within the bounds;
    a length-bounded text and the intersection beside it have the language
    of the automata's form."""
    _agree(pattern, "u", *bounds)


LENIENT = ["a", "b", "{", "}", "a{", "{1", "a{,2}", "a{1,", "]", r"[\w-.]", r"[.-\d]", r"[\s-a]",
           r"\@", r"\/", r"\-", r"\#", r"\%", r"\=", r"\,", r"\:", r"\!", r"\'", r"\<", r"\~",
           r"\`", r"\&", r"\;", ".", r"\d", "x{2}", "{}", "}{", "{a}", "[]a]", r"[\]]", "-",
           "a{2,1"]  # fmt: skip


@same_examples(200)
@given(patterns(atoms=LENIENT))
def test_annex_b_leniencies_mean_what_an_ecma_engine_finds(pattern: str) -> None:
    """The Annex B forms the lowering accepts (literal braces and brackets,
    identity escapes of punctuation, ``-`` beside a class escape in a class)
    mean what the engine without the ``u`` flag (where Annex B applies)
    finds; the rest of the syntax means the same with or without it on these
    atoms (strings of the Basic Multilingual Plane: without the flag, the
    engine reads code units)."""
    _agree(pattern, "", alphabet=[c for c in ALPHABET if ord(c) < 0x10000])
