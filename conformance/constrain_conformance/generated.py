"""Generated constraints: Hypothesis strategies for small regexes, grammars
and JSON schemas, and the vocabulary they are checked on.

The corpus holds constraints somebody wrote down; these are the ones nobody
did: combinations of lookarounds and lazy quantifiers, grammars with rules
that derive nothing, keywords that are also names, ``%ignore`` between any
two terminals, schemas nesting ``oneOf``, ``not`` and formats. The suite's
``test_generated.py`` compiles each with the backend under test and with
the oracle and compares their masks along random paths of the oracle. Its
first runs found four faults: llguidance's own date and time formats (wider
than the formats), rules deriving no string kept by the production engines'
grammar compilers, ``domino`` ignoring a terminal a rule also uses, and a
bare ``RuntimeError`` from ``fst`` on an ambiguous grammar.

The alphabet is small on purpose (``a``, ``b``, digits, JSON punctuation, a
space, ``é``, ``€``, an emoji), so that the vocabulary of
:func:`generated_vocabulary` holds, besides every byte, the tokens that cross
the constraints' boundaries: two characters of the alphabet, and pieces such
as ``":"`` or ``},{``, UTF-8 characters cut in two.
"""

from __future__ import annotations

import functools
import itertools

from hypothesis import strategies as st

import constrain_api as ca

#: The characters the tokens are made of (besides every single byte).
TOKEN_ALPHABET = ("a", "b", "0", "1", "-", ",", '"', "é", " ", "{", "}", ":", "[", "]", "\\")
#: Longer tokens: pieces of JSON, of the grammars' terminals, of UTF-8 characters.
_PIECES = (
    "aab", "abab", "bba", "if", "iff", "then", "-1", '":', '":"', '"}', "},{", '{"a":', "true",
    "null", "false", "tr", "ue", "nu", "fal", "1,", "0]", '["', '"]', 'é"', "aé", "éé", '\\"',
    "\\u", "\\u00", "u00e9", '"a"', '"b"', 'a":', "1.", ".5", "e1", "E-", "1e", "  ", "\n",
    " {", ' "', "/*", "*/", "//", "€", "😀", "\U0001f600a",
)  # fmt: skip


@functools.lru_cache(maxsize=1)
def generated_vocabulary() -> ca.Vocabulary:
    """Every byte, every two characters of :data:`TOKEN_ALPHABET`, the
    pieces above, the first two bytes of ``€`` and of the emoji, and an EOS
    (about 500 tokens: the oracle scans them all at every step)."""
    tokens: list[bytes] = [bytes([b]) for b in range(256)]
    more = ["".join(p).encode() for p in itertools.product(TOKEN_ALPHABET, repeat=2)]
    more += [p.encode() for p in _PIECES] + ["€".encode()[:2], "😀".encode()[:2]]
    seen = set(tokens)
    for token in more:
        if token not in seen:
            seen.add(token)
            tokens.append(token)
    tokens.append(b"<eos>")
    return ca.Vocabulary(tokens, eos_ids=[len(tokens) - 1], name="generated")


# ----------------------------------------------------------------- regexes

_REGEX_ATOMS = (
    "a", "b", "0", "1", "-", ",", "é", " ", "ab", "ba", "aa", '\\"', "\\.", "\\d", "\\w", "\\W",
    "\\s", "\\S", ".", "[ab]", "[^a]", "[a-c]", "[0-1é]", '[^"]', "[à-ÿ]", "[^\\x00-\\x7f]",
    "(?i:a)", "(?i:é)", "€", "😀", "[😀-😂]", "\\u00e9",
)  # fmt: skip
_QUANTIFIERS = ("?", "*", "+", "{2}", "{0,2}", "{1,3}", "{2,}", "{3,5}", "*?", "+?", "??")


def _regex_text(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    atom = st.sampled_from(_REGEX_ATOMS)  # (fixed width: what a negative lookahead may hold)
    return st.one_of(
        st.builds(lambda a, b: a + b, inner, inner),
        st.builds(lambda a, b: f"(?:{a}|{b})", inner, inner),
        st.builds(lambda a, q: f"(?:{a}){q}", inner, st.sampled_from(_QUANTIFIERS)),
        st.builds(lambda sign, a, b: f"(?{sign}{a}){b}", st.sampled_from("=!"), atom, inner),
    )


def regexes() -> st.SearchStrategy[str]:
    """Regex texts over the alphabet: classes, alternations, counted and
    lazy repetitions, lookaheads of one atom before the rest of the match."""
    return st.recursive(st.sampled_from(_REGEX_ATOMS), _regex_text, max_leaves=8)


# ----------------------------------------------------------------- grammars

#: Terminals a grammar draws from: literals, case-insensitive ones, keywords
#: that are also names, lazy comments, and terminals that overlap.
GRAMMAR_TERMINALS = {
    "A": '"a"',
    "B": '"b"i',
    "AB": '"ab"',
    "BA": "/ba|b/",
    "E": "/a?b/",
    "IF": '"if"',
    "ID": "/[a-z]+/",
    "N": "/[0-9]+/",
    "Q": r'/"[^"]*"/',
    "C": '","',
    "D": '"-"',
    "LP": '"("',
    "RP": '")"',
    "SP": '" "',
    "CM": r"/\/\*(.|\n)*?\*\//",
    "WORD": "/é+|€/",
    "NEVER": "/(?!a)a/",  # no string at all
    "FI": "/ab/i",
    "NL": r'"\n"',
    "QQ": r'"\""',
    "OPT": "/(ab)?c/",
    "LAZY": "/a+?/",  # its shortest matches
    "STAR": "/a*/",  # the empty string too (some scanners refuse it)
}
#: Terminals imported from lark's ``common`` grammar (``ESCAPED_STRING``: lazy).
IMPORTED_TERMINALS = {
    "ES": "%import common.ESCAPED_STRING -> ES",
    "SN": "%import common.SIGNED_NUMBER -> SN",
}
#: The rules of every generated grammar (``_r3`` inlined, ``?r4`` inlined when it has one child).
_RULES = ("r1", "r2", "_r3", "r4")
_IGNORES = (
    "",
    '%ignore " "',
    "%import common.WS\n%ignore WS",
    r"%ignore /\/\/[^\n]*/",
    "%import common.WS\n%ignore WS\n%ignore /\\/\\*(.|\\n)*?\\*\\//",
)


def _expression(symbols: list[str]) -> st.SearchStrategy[str]:
    leaf = st.sampled_from(symbols)
    return st.recursive(
        leaf,
        lambda inner: st.one_of(
            st.builds(lambda a, b: f"{a} {b}", inner, inner),
            st.builds(lambda a, b: f"({a} | {b})", inner, inner),
            st.builds(lambda a: f"[{a}]", inner),
            st.builds(lambda a, n: f"({a})~{n}", inner, st.sampled_from(["2", "1..2", "0..3"])),
            st.builds(lambda a, q: f"({a}){q}", inner, st.sampled_from(["?", "*", "+"])),
        ),
        max_leaves=5,
    )


@st.composite
def grammars(draw: st.DrawFn) -> str:
    """Lark grammars of a start rule and four more (recursive, left-recursive,
    inlined, with no base case at times) over a few of
    :data:`GRAMMAR_TERMINALS` and :data:`IMPORTED_TERMINALS`, with or
    without something ``%ignore``d."""
    every = sorted(GRAMMAR_TERMINALS) + sorted(IMPORTED_TERMINALS)
    names = draw(st.lists(st.sampled_from(every), min_size=2, max_size=5, unique=True))
    literals = [GRAMMAR_TERMINALS[n] for n in names if n in GRAMMAR_TERMINALS]
    symbols = names + literals + list(_RULES)
    body = _expression(symbols)
    name = st.sampled_from(names)
    lines = [
        f"start: {draw(body)}" + (f" | {draw(body)}" if draw(st.booleans()) else ""),
        f"r1: {draw(body)} | {draw(name)}" + (f" | r1 {draw(name)}" if draw(st.booleans()) else ""),
        f'r2: {draw(name)} | "[" r1 "]"' + (' | r2 "+" r1' if draw(st.booleans()) else ""),
        # (at times with no base case: a rule that derives no string)
        f"_r3: {draw(st.one_of(body, name.map('_r3 {}'.format), body.map('{} _r3'.format)))}",
        f"?r4: {draw(name)} | {draw(body)}",
        *(IMPORTED_TERMINALS.get(n) or f"{n}: {GRAMMAR_TERMINALS[n]}" for n in names),
    ]
    ignore = draw(st.sampled_from(_IGNORES))
    return "\n".join(lines + ([ignore] if ignore else []))


# ------------------------------------------------------------- JSON schemas

_SCHEMA_LEAVES = (
    True, {}, {"type": "integer"}, {"type": "string"}, {"type": "boolean"}, {"type": "number"},
    {"type": ["integer", "null"]}, {"enum": ["a", 1, None]}, {"const": "ab"}, {"const": {"a": 1}},
    {"enum": ['a"b', "é", "\n", 1.5, -0.0, True]}, {"type": "string", "maxLength": 2},
    {"type": "string", "minLength": 2}, {"type": "string", "pattern": "^a"},
    {"type": "string", "pattern": "^[ab]{1,2}$"}, {"type": "string", "pattern": "a|é"},
    {"type": "string", "minLength": 1, "maxLength": 3, "pattern": "b"},
    {"type": "string", "format": "date"}, {"type": "string", "format": "time"},
    {"type": "string", "format": "email", "maxLength": 6}, {"type": "string", "format": "ipv4"},
    {"type": "string", "format": "uuid"}, {"type": "integer", "minimum": 0, "maximum": 12},
    {"type": "integer", "maximum": -2}, {"type": "integer", "multipleOf": 3},
    {"type": "number", "exclusiveMinimum": 0, "maximum": 1.5},
    {"type": "number", "multipleOf": 0.5}, {"not": {"type": "string"}},
    {"type": "array", "uniqueItems": True, "items": {"type": "boolean"}},
    {"type": "array", "prefixItems": [{"type": "integer"}], "items": False},
    {"type": "array", "contains": {"const": 1}},
    {"type": "object", "minProperties": 1, "maxProperties": 2},
    {"type": "object", "patternProperties": {"^a": {"type": "integer"}},
     "additionalProperties": False},
    {"type": "object", "propertyNames": {"maxLength": 1}},
)  # fmt: skip
_MEMBERS = ("a", "b", "ab")


@st.composite
def _object(draw: st.DrawFn, inner: st.SearchStrategy) -> dict:
    names = draw(st.lists(st.sampled_from(_MEMBERS), min_size=1, max_size=3, unique=True))
    schema: dict = {"type": "object", "properties": {n: draw(inner) for n in names}}
    if draw(st.booleans()):
        schema["required"] = draw(st.lists(st.sampled_from(names), min_size=1, unique=True))
    if draw(st.booleans()):
        schema["additionalProperties"] = draw(st.sampled_from([False, {"type": "integer"}]))
    return schema


@st.composite
def _array(draw: st.DrawFn, inner: st.SearchStrategy) -> dict:
    schema: dict = {"type": "array", "items": draw(inner)}
    if draw(st.booleans()):
        schema["maxItems"] = draw(st.integers(1, 3))
    if draw(st.booleans()):
        schema["minItems"] = 1
    return schema


def json_schemas() -> st.SearchStrategy:
    """Schemas of objects (required members, closed or typed extra members),
    arrays (bounded), ``anyOf``/``oneOf``/``allOf`` pairs, over leaves of
    scalars with bounds, patterns, formats, enums, ``not`` and object and
    array keywords."""
    return st.recursive(
        st.sampled_from(_SCHEMA_LEAVES),
        lambda inner: st.one_of(
            _object(inner),
            _array(inner),
            st.builds(
                lambda k, a, b: {k: [a, b]},
                st.sampled_from(["anyOf", "oneOf", "allOf"]),
                inner,
                inner,
            ),
        ),
        max_leaves=6,
    )


#: Per kind, the strategy of its constraints' text (a regex, a grammar, a
#: schema) and the spec made of it (which may raise ``ConstraintError``:
#: a generated text need not be well formed).
GENERATED: dict[str, tuple[st.SearchStrategy, type[ca.Constraint]]] = {
    "regex": (regexes(), ca.Regex),
    "grammar": (grammars(), ca.Grammar),
    "json_schema": (json_schemas(), ca.JsonSchema),
}
