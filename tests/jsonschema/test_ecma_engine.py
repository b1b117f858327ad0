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
engine without the ``u`` flag, which has them. A third test draws string
schemas (patterns, length bounds, listed strings under ``not``, ``allOf``,
``anyOf``, ``oneOf``) and judges them with the engine: there the lowering
asks the ``jsonschema`` validator which listed strings the rest accepts,
and it read ``pattern`` with Python's ``re`` until ``judging``.

``regress`` 2026.9.1 loses matches when backtracking into a capturing group
inside a quantified group (``^([^]([^]\\W|\\D)+[^]){2}$`` misses a string of
six characters that ``^(?:[^](?:[^]\\W|\\D)+[^]){2}$`` and Python find) and
behind a ``{0}`` repetition; the engine is given every group non-capturing,
which changes no language, and no ``{0}`` is drawn. Its memory grows without
bound on an unbounded loop of a group that holds a nullable loop
(``(?:(?:b{0,2}|)+a)*$`` searched in ``a_0`` took 24 GB): groups take
bounded quantifiers only.
"""

from __future__ import annotations

import contextlib
import json
import random
import unicodedata

import regress
from hypothesis import given
from hypothesis import strategies as st
from jsonschema_harness import recognizer, same_examples

from constrain_api import JsonSchema
from constrain_api.automata import ByteDFA
from constrain_api.errors import CompileLimitExceeded, ConstraintError, UnsupportedConstraint
from constrain_api.jsonschema import lower_json_schema_ir
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
#: The quantifiers of groups and lookarounds: no unbounded loop (see above).
BOUNDED = ["?", "{2}", "{0,2}", "{1,3}", "??", "{1,2}?"]
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
                piece += draw(st.sampled_from(QUANTIFIERS if kind == "atom" else BOUNDED))
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
        if "\\p" in pattern.lower() and any(unicodedata.category(c) == "Cn" for c in s):
            continue  # (unassigned in Python's Unicode, maybe assigned in the engine's)
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


@st.composite
def string_schemas(draw: st.DrawFn, depth: int = 0) -> dict:
    """Schemas of strings: patterns, length bounds and listed strings,
    under ``not``, ``allOf``, ``anyOf`` and ``oneOf``."""
    kind = draw(st.sampled_from(["leaf"] * 3 + ([] if depth >= 2 else ["not", "union"])))
    if kind == "not":
        return {"not": draw(string_schemas(depth + 1))}
    if kind == "union":
        key = draw(st.sampled_from(["allOf", "anyOf", "oneOf"]))
        return {key: draw(st.lists(string_schemas(depth + 1), min_size=1, max_size=3))}
    leaf: dict = {}
    if draw(st.integers(0, 4)):
        leaf["pattern"] = draw(st.one_of(st.sampled_from(TELLING), patterns()))
    if not draw(st.integers(0, 3)):
        leaf["minLength"] = draw(st.integers(0, 3))
    if not draw(st.integers(0, 3)):
        leaf["maxLength"] = draw(st.integers(0, 6))
    if not draw(st.integers(0, 2)):
        pairs = st.lists(st.sampled_from(LISTED), min_size=2, max_size=3).map("".join)
        words = st.one_of(st.sampled_from(LISTED), pairs, st.just(""))
        leaf["enum"] = draw(st.lists(words, min_size=1, max_size=3))
    return leaf


#: Patterns that Python's ``re`` reads otherwise on those characters.
TELLING = ["^\\w+$", "\\d", "^a$", "^.$", "\\s", "\\W", "^\\S*$", "\\p{L}", "^[\\w-]+$"]
#: The characters of listed strings: those Python's ``re`` reads otherwise
#: (a Unicode letter, digit and space, newline, line separator, Kelvin sign).
LISTED = ["a", "é", "٣", "1", "_", " ", "\xa0", "\n", "\u2028", "\u212a", "-"]


def _holds(s: dict, text: str) -> bool:
    """``text`` is valid under the string schema ``s``, patterns by the engine."""
    pattern = s.get("pattern")
    return (
        (pattern is None or _engine(pattern, "u").find(text) is not None)
        and len(text) >= s.get("minLength", 0)
        and len(text) <= s.get("maxLength", len(text))
        and text in s.get("enum", [text])
        and not ("not" in s and _holds(s["not"], text))
        and all(_holds(b, text) for b in s.get("allOf", []))
        and ("anyOf" not in s or any(_holds(b, text) for b in s["anyOf"]))
        and ("oneOf" not in s or sum(_holds(b, text) for b in s["oneOf"]) == 1)
    )


def _listed(s: dict) -> list[str]:
    """The strings ``s`` lists anywhere (samples the random ones rarely hit)."""
    found = list(s.get("enum", []))
    for v in s.values():
        for b in v if isinstance(v, list) else [v]:
            if isinstance(b, dict):
                found += _listed(b)
    return found


@same_examples(300)
@given(string_schemas())
def test_string_schemas_mean_what_an_ecma_engine_finds(schema: dict) -> None:
    """A schema combining patterns (as above), length bounds and listed
    strings with ``not``, ``allOf``, ``anyOf``, ``oneOf``: a string is in the
    lowered language iff the engine's patterns and the bounds make it valid.
    This is where the lowering asks the ``jsonschema`` validator about listed
    values; it once judged ``pattern`` with Python's ``re``, so ``"é"`` beside
    ``^\\w$`` was kept (``judging``)."""
    patterns_used = json.dumps(schema)
    if any(_engine(p, "u") is None for p in _patterns(schema)):
        return  # (malformed for the engine: the lowering's refusal is checked above)
    try:
        accepts = recognizer(lower_json_schema_ir(JsonSchema({"type": "string", **schema})))
    except (UnsupportedConstraint, CompileLimitExceeded):
        return
    except ConstraintError as e:
        assert "no JSON value" in str(e), (patterns_used, e)
        accepts = None
    rng = random.Random(patterns_used)
    samples = ["".join(rng.choices(ALPHABET, k=rng.randint(0, 7))) for _ in range(120)]
    for text in [*samples, *_listed(schema)]:
        expected = _holds(schema, text)
        got = accepts is not None and accepts(json.dumps(text, ensure_ascii=False).encode())
        assert got == expected, (schema, text)


def _patterns(s: dict) -> list[str]:
    found = [s["pattern"]] if "pattern" in s else []
    for v in s.values():
        for b in v if isinstance(v, list) else [v]:
            if isinstance(b, dict):
                found += _patterns(b)
    return found
