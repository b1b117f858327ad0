"""Regexes of JSON strings: any string, length bounds, ``pattern``, "none of these".

Every regex here matches JSON string *literals* (quotes included) in their
**canonical form**, the one ``json.dumps(s, ensure_ascii=False)`` writes:

* ``"`` is written ``\\"`` and ``\\`` is written ``\\\\``;
* the control characters U+0000–U+001F are escaped, with JSON's short
  escapes where there is one (``\\b \\f \\n \\r \\t``) and ``\\u00xx`` otherwise,
  in lowercase hexadecimal as Python writes it (``\\u001f``);
* every other character — U+007F, all of non-ASCII, astral characters — is
  written raw (as its UTF-8 bytes), never as a ``\\u`` escape.

So the language holds exactly one spelling of each string: ``"\\u0041"`` (an
``A``) or ``"\\/"`` are valid JSON but not canonical, and no regex here
matches them. One decoded character is one encoded *unit* (a raw character
or one escape); lengths (``minLength``/``maxLength``) count units, which are
code points, as JSON Schema counts them. ``CHAR`` is the regex of one unit;
``encode_node`` maps a regex AST over decoded characters to the AST of their
canonical spellings (a homomorphism: it maps every node, lookaround
intersections included, since the code is uniquely decodable).

``pattern_regex`` reads ``pattern`` as ECMA-262 (JSON Schema's dialect) with
the ``u`` flag, as the JSON Schema Test Suite expects, and with JSON Schema's
*search* semantics (the pattern may match anywhere unless anchored). The
pattern is parsed here into the automata AST directly — no detour through
Python's regex dialect — with these meanings:

* ``\\d`` = ``[0-9]``, ``\\w`` = ``[A-Za-z0-9_]``, ``\\s`` = ECMA white space and
  line terminators (``[\\t\\n\\x0b\\x0c\\r \\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f
  \\u205f\\u3000\\ufeff]``), and their complements ``\\D \\W \\S``, also inside
  classes and mixed with other members; ``.`` is any character but ``\\n \\r
  \\u2028 \\u2029``; ``[^]`` is any character and ``[]`` none;
* escapes ``\\t \\n \\v \\f \\r \\0 \\cX \\xHH \\uHHHH`` (a ``\\uHHHH\\uHHHH`` surrogate pair
  is one character, a lone surrogate matches nothing), ``\\b`` in a class
  (backspace), identity escapes of punctuation (``\\/``, ``\\-``, ``\\@``, ...);
* ``\\p{..}``/``\\P{..}`` with a General_Category value or alias (``L``,
  ``Letter``, ``Nd``, ``digit``, ``General_Category=Lu``, ``gc=P``, ...) or
  ``Any``, ``ASCII``, ``Assigned`` (categories from Python's ``unicodedata``,
  whose Unicode version may differ from a JavaScript engine's);
* groups ``(...)``, ``(?:...)``, ``(?<name>...)`` (all only group), greedy and
  lazy quantifiers (same language); Annex B leniencies that have a single
  meaning are accepted: a ``{`` or ``}`` that is no quantifier, a lone ``]``,
  and ``-`` next to a class escape in a class (``[\\w-.]``) are literal.

Lookarounds ``(?=X)``, ``(?!X)``, ``(?<=X)``, ``(?<!X)`` at the top level of a
top-level alternative see all the text after (before) their point, as a
search does: the parts after a lookahead, with the text after the match,
are intersected with ``X·Σ*`` (positive) or have it taken away (negative);
the text before a lookbehind likewise with ``Σ*·X``. An option of X that
ends with ``$`` (a lookahead's) or starts with ``^`` (a lookbehind's) asks
for X alone: ``^(?!\\s)(?!.*\\s$)`` (no blank at either end), ``^(?=.{1,9}$)``.
At the anchored start (end) a lookahead (lookbehind) sees the whole string:
it applies to the whole alternative, so ``^(?=.{1,9}$)[a-z-]*(?<!-)$`` is no
crossing. Anchors of the other kind and lookarounds inside X are refused.
Such a pattern has no
regex text: :func:`pattern_node` gives its AST (``Intersect``/``Difference``),
:func:`pattern_regex` raises ``CompileLimitExceeded("regex_size")``.

An unquantified group whose options hold anchors or lookarounds at their
own level is distributed over its alternative (``^([^,]|$)`` is
``^[^,]|^$``: the same strings, each assertion seeing the same text), up to
64 top-level alternatives.

Unsupported (``UnsupportedConstraint``, backend ``"json_schema"``, construct
``pattern '...'``, the reason naming the construct): anchors and lookarounds
inside quantified groups, lookarounds inside lookarounds, lookarounds after ``$`` or
before ``^``, a lookbehind after a lookahead (crossing), ``\\b``/``\\B``,
backreferences (``\\1``, ``\\k<name>``), ``\\u{...}`` (its meaning depends on the ``u``
flag), legacy octal escapes, identity escapes of letters (``\\a``; also
flag-dependent), Unicode properties other than the above (scripts, other
binary properties), inline modifiers ``(?i:...)``. A malformed pattern raises
``ConstraintError("json schema", "invalid pattern ...", where)``.

Search semantics: the pattern is split at its top-level ``|``; an
alternative starting with ``^`` is anchored at the start, else preceded by
any text, one ending with ``$`` anchored at the end, else followed by any text
(ECMA's ``$`` never matches before a final newline). Inside a top-level
alternative (there is no multiline flag) ``^`` holds only where the text
before it is empty and ``$`` only where the text after it is: text that may
be empty there is dropped, text that must not be makes the alternative match
nothing (``/^[0-9]{4}$/`` with its slashes matches no string); anchors inside
quantified groups are refused. The free ends are then trimmed without changing the
language (``a+`` unanchored is ``…a…``).

Lengths: ``minLength``/``maxLength`` combine with a pattern exactly, by
restricting the pattern's AST by length: the bounds are dropped when the
pattern's own lengths already lie within them; a repetition of fixed-width
items gets its counts adjusted (``^[a-z]+$`` with ``maxLength: 4`` is
``[a-z]{1,4}``); a repetition of variable-width items (each at least one
character) is split over its number of copies; a sequence with several
variable parts is split over the lengths of its first one (an unanchored
``@`` with ``maxLength: n`` becomes ``n`` branches). A restriction that
cuts through a repetition whose item may be empty and varies in width
(``(?:a?b?)*``) raises ``UnsupportedConstraint("json_schema", "pattern with
minLength/maxLength")``; one that grows past its budget (``max_size / 8``
branches) or any result longer than ``max_size`` characters raises
``CompileLimitExceeded("regex_size", ...)``.

Regexes that match nothing are returned as ``NOTHING_TEXT`` (unquoted,
spelled like ``jsonschema.ir.NOTHING``).
"""

from __future__ import annotations

import functools
import itertools
import json
import re
import unicodedata
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from ..automata.printer import NOTHING_TEXT, is_atom, to_regex
from ..automata.regex import (
    MAX_CODE_POINT,
    Alt,
    CharSet,
    Difference,
    Empty,
    Intersect,
    Literal,
    Node,
    Repeat,
    Seq,
    alt,
    has_lookaround,
    has_surrogate,
    is_void,
    nullable,
    repeat,
    seq,
)
from ..errors import CompileLimitExceeded, ConstraintError, UnsupportedConstraint

__all__ = [
    "CHAR",
    "encode_node",
    "length_restricted",
    "pattern_node",
    "pattern_piece",
    "pattern_regex",
    "quote",
    "quoted_node",
    "restricted_piece",
    "string_not_in",
    "string_not_in_piece",
    "string_regex",
]

_BACKEND = "json_schema"
_VOID = CharSet(())
_EMPTY = Empty()
_ANY = CharSet.any()
_SIGMA_STAR = Repeat(_ANY, 0, None)
_QUOTE = Literal('"')
#: Python ``re`` counts must stay below its MAXREPEAT; ECMA's may be larger.
_MAX_COUNT = 1_000_000_000

# ------------------------------------------------------------ canonical encoding

#: The characters JSON escapes, and the letter of their short escape.
_SHORT = {0x22: '"', 0x5C: "\\", 0x08: "b", 0x0C: "f", 0x0A: "n", 0x0D: "r", 0x09: "t"}
#: The characters written escaped: ``"``, ``\\`` and the controls.
_SPECIAL = CharSet(((0x00, 0x1F), (0x22, 0x22), (0x5C, 0x5C)))
#: Finds such a character in a string.
_SPECIAL_CHARACTER = re.compile(to_regex(_SPECIAL))
#: The characters outside ASCII (several UTF-8 bytes each).
_NON_ASCII = CharSet(((0x80, MAX_CODE_POINT),))
_HEX = "0123456789abcdef"


@functools.lru_cache(maxsize=4096)
def _encode_charset(cs: CharSet) -> Node:
    raw = cs.difference(_SPECIAL)
    options: list[Node] = [] if raw.is_empty() else [raw]
    short = "".join(letter for c, letter in _SHORT.items() if c in cs)
    if short:
        options.append(seq(Literal("\\"), _one_of(short)))
    long_options = []
    for high in (0, 1):
        lows = [c & 0xF for c in range(high * 16, high * 16 + 16) if c in cs and c not in _SHORT]
        if lows:
            long_options.append(seq(Literal(str(high)), _one_of(_HEX[v] for v in lows)))
    if long_options:
        options.append(seq(Literal("\\u00"), alt(*long_options)))
    return alt(*options)


def _one_of(chars: Iterable[str]) -> Node:
    cs = CharSet.of(chars)
    return Literal(chr(cs.ranges[0][0])) if cs.size() == 1 else cs


def _encode_text(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)[1:-1]


def encode_node(node: Node) -> Node:
    """The AST of the canonical JSON spellings of ``node``'s strings (quotes not included).

    Maps characters to their escapes (``"`` → ``\\"``, ``\\`` → ``\\\\``, controls →
    ``\\n``/``\\u001f``/...) and every other node structurally.
    """
    if isinstance(node, CharSet):
        return _encode_charset(node)
    if isinstance(node, Literal):
        return Literal(_encode_text(node.text))
    if isinstance(node, Empty):
        return node
    if isinstance(node, Seq):
        return seq(*(encode_node(p) for p in node.parts))
    if isinstance(node, Alt):
        return alt(*(encode_node(o) for o in node.options))
    if isinstance(node, Repeat):
        return repeat(encode_node(node.node), node.min, node.max)
    if isinstance(node, Intersect):
        return Intersect(encode_node(node.left), encode_node(node.right))
    if isinstance(node, Difference):
        return Difference(encode_node(node.left), encode_node(node.right))
    raise TypeError(f"not a regex AST node: {node!r}")


#: The spelled forms of the escaped characters and of any string (for
#: pieces built directly in their spelling, like ``_not_in``'s).
_SPECIAL_SPELLED = encode_node(_SPECIAL)
_SIGMA_STAR_SPELLED = encode_node(_SIGMA_STAR)


#: One encoded unit: any character in its canonical spelling.
CHAR: str = to_regex(encode_node(_ANY))
_CHAR_ATOM = CHAR if CHAR.startswith("(?:") else f"(?:{CHAR})"


def _check_size(text: str, max_size: int, what: str) -> str:
    if len(text) > max_size:
        raise CompileLimitExceeded(
            "regex_size", max_size, len(text), f"the regex of {what} is too long"
        )
    return text


def _quoted(node: Node, max_size: int, what: str) -> str:
    """``"`` + the encoded node + ``"`` (the empty language as ``NOTHING_TEXT``)."""
    return _quoted_piece(node, max_size, what)[0]


def _quoted_piece(node: Node, max_size: int, what: str) -> tuple[str, Node]:
    """:func:`_quoted`'s text and its AST (so a caller need not parse the text back)."""
    return _quoted_encoded(encode_node(node), max_size, what)


def _quoted_encoded(encoded: Node, max_size: int, what: str) -> tuple[str, Node]:
    """:func:`_quoted_piece` of a node already in its canonical JSON spelling."""
    body = to_regex(encoded)
    if body == NOTHING_TEXT:
        return NOTHING_TEXT, CharSet(())
    text = _check_size(f'"{body}"', max_size, what)
    return text, seq(_QUOTE, encoded, _QUOTE)


def quote(s: str) -> str:
    """The regex of exactly ``json.dumps(s, ensure_ascii=False)``.

    A string with a lone surrogate has no UTF-8 (so no canonical) spelling:
    ``NOTHING_TEXT``.
    """
    if has_surrogate(s):
        return NOTHING_TEXT
    return to_regex(Literal(json.dumps(s, ensure_ascii=False)))


def _check_counts(min_length: int, max_length: int | None, where: str = "") -> None:
    for name, value in (("minLength", min_length), ("maxLength", max_length)):
        if value is None and name == "maxLength":
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ConstraintError(
                "json schema",
                f"{name} must be a non-negative integer, got {value!r}",
                where or None,
            )
        if value >= _MAX_COUNT:
            raise CompileLimitExceeded("regex_size", _MAX_COUNT, value, f"{name} is too large")


def string_regex(
    min_length: int = 0, max_length: int | None = None, *, max_size: int = 20000
) -> str:
    """Quoted canonical strings of ``min_length`` to ``max_length`` characters (code points)."""
    _check_counts(min_length, max_length)
    if max_length is not None and max_length < min_length:
        return NOTHING_TEXT
    if max_length == 0:
        return '""'
    if max_length is None:
        q = "*" if min_length == 0 else "+" if min_length == 1 else f"{{{min_length},}}"
    elif min_length == max_length:
        q = "" if min_length == 1 else f"{{{min_length}}}"
    else:
        q = "?" if (min_length, max_length) == (0, 1) else f"{{{min_length},{max_length}}}"
    return _check_size(f'"{_CHAR_ATOM}{q}"', max_size, "a string")


# ------------------------------------------------------------- "none of these"


def string_not_in(excluded: Iterable[str], *, max_size: int = 20000) -> str:
    """Quoted canonical strings (any length) other than the ``excluded`` ones.

    Built from the trie of the excluded strings: a string is allowed when it
    leaves the trie (a character no excluded string has there, then anything)
    or ends at a trie node that is no excluded string. Escaped characters
    leaving the trie are gathered in one branch (any trie path, then any
    escaped character, then anything), which keeps the regex about half as
    long; so are non-ASCII ones, so that their multi-byte UTF-8 automaton is
    one piece, not a copy per trie node (the subset construction of the
    property names of a Kubernetes object went from 1,160 states to 150).
    Where no excluded string has an escaped (or a non-ASCII) character,
    a string with one is never excluded, wherever it has it: that branch
    is then "anything, such a character, anything", not a copy of the
    trie (most property names: a quarter off the regex of 60 names, and
    off the time to make it).
    """
    return string_not_in_piece(excluded, max_size=max_size)[0]


def string_not_in_piece(
    excluded: Iterable[str], *, max_size: int = 20000, shared: dict[Node, Node] | None = None
) -> tuple[str, Node]:
    """:func:`string_not_in`'s regex and its AST (the same language; a caller
    that keeps the AST spares parsing the text back). ``shared``: the AST
    nodes of earlier pieces, by value: a part of the AST equal to one of
    them is that node (added if new), so the pieces of many name sets
    that share names share their nodes (a lowering's objects: half the
    nodes of a schema with hundreds of objects were equal to another,
    each an object the garbage collector walks)."""
    excluded = frozenset(excluded)
    for s in excluded:
        if not isinstance(s, str):
            raise TypeError(f"excluded strings must be str, got {type(s).__name__}")
    return _string_not_in(excluded, max_size, shared)


def _string_not_in(
    excluded: frozenset[str], max_size: int, shared: dict[Node, Node] | None = None
) -> tuple[str, Node]:
    """:func:`string_not_in_piece` of a checked set (not cached here: the
    JSON Schema lowering keeps the pieces of one schema, see
    ``Lowerer.strings_not_in``)."""
    root: dict = {}
    special = wide = False  # whether some excluded string has such a character
    for s in excluded:
        if has_surrogate(s):
            continue  # no canonical spelling: excluded anyway
        special = special or _SPECIAL_CHARACTER.search(s) is not None
        wide = wide or not s.isascii()
        node = root
        for ch in s:
            node = node.setdefault(ch, {})
        node[None] = True  # an excluded word ends here
    if not root:
        any_string = seq(_QUOTE, repeat(encode_node(_ANY), 0, None), _QUOTE)
        return string_regex(max_size=max_size), any_string
    try:
        return _not_in_regex(
            root, max_size, gather_wide=True, special=special, wide=wide, shared=shared
        )
    except CompileLimitExceeded as e:
        if e.limit != "regex_size":
            raise
    # gathering the non-ASCII characters makes the text longer where some
    # excluded strings have one (an ASCII class per node instead of a
    # negated one): without it, the same language fits more often (3
    # MaskBench schemas of 94-odd names)
    return _not_in_regex(
        root, max_size, gather_wide=False, special=special, wide=wide, shared=shared
    )


@functools.lru_cache(maxsize=4)
def _anywhere(special: bool, wide: bool) -> tuple[Node, str] | None:
    """Any spelled string, then an escaped (with ``special``) or a
    non-ASCII (with ``wide``) character, as AST and text; ``None`` for
    neither. No excluded string has such a character, so a string that
    has one is never excluded. (Any string before it, not the characters
    before the first one: a state past the trie then stays itself on
    every character, as the subterminal trees' slices need.)"""
    ranges = (_SPECIAL.ranges if special else ()) + (_NON_ASCII.ranges if wide else ())
    if not ranges:
        return None
    node = seq(_SIGMA_STAR_SPELLED, _encode_charset(CharSet(ranges)))
    return node, to_regex(node)


def _not_in_regex(
    root: dict,
    max_size: int,
    *,
    gather_wide: bool,
    special: bool,
    wide: bool,
    shared: dict[Node, Node] | None = None,
) -> tuple[str, Node]:
    """The quoted strings that leave the trie ``root`` or end off its words
    (regex and AST: the AST from ``_not_in``, the text straight from the
    trie by ``_not_in_text``, the same language in the same shape).
    ``special``/``wide``: whether some excluded string has an escaped / a
    non-ASCII character; where none has, those characters leave through
    one branch of their own, anywhere in the string (see ``string_not_in``)."""
    paths, wide_paths = special, gather_wide and wide  # (the pieces the trie must spell)
    try:
        if not paths and not wide_paths:  # (most name sets: one walk for AST and text)
            diverge, ends, diverge_text, ends_text = _not_in_plain(
                root, gather_wide, {} if shared is None else shared
            )
            path_node = wide_node = _VOID
            texts = (diverge_text, None, None, ends_text)
        else:
            diverge, path_node, wide_node, ends = _not_in(
                root, gather_wide, paths, wide_paths, {} if shared is None else shared
            )
            texts = _not_in_text(root, gather_wide, paths, wide_paths)
    except RecursionError:
        raise CompileLimitExceeded(
            "regex_size", max_size, None, "the excluded strings are too long"
        ) from None
    # the characters no excluded string has leave wherever they come
    anywhere = _anywhere(not paths, gather_wide and not wide)
    leaving_nodes = [diverge]
    for piece, then in ((path_node, _SPECIAL_SPELLED), (wide_node, _NON_ASCII)):
        if not _is_empty_class(piece):
            leaving_nodes.append(seq(piece, then))
    if anywhere is not None:
        leaving_nodes.append(anywhere[0])
    leave = _alt_distinct(leaving_nodes)
    node = _alt_distinct([seq(leave, _SIGMA_STAR_SPELLED), ends])
    (diverge_options, paths_text, wide_text, (ends_options, ends_optional)) = texts
    leaving = list(diverge_options)
    for piece, then in ((paths_text, _SPECIAL_TEXT), (wide_text, _NON_ASCII_TEXT)):
        if piece is not None:
            leaving.append((piece[0] + then, False))
    if anywhere is not None:
        leaving.append((anywhere[1], False))
    leave_text = _render(leaving, False)
    options = [] if leave_text is None else [(leave_text[0] + _SIGMA_STAR_TEXT, False)]
    body = _render(options + ends_options, ends_optional)
    if body is None:
        return NOTHING_TEXT, CharSet(())
    text = _check_size(f'"{body[0]}"', max_size, "the strings other than the excluded ones")
    return text, seq(_QUOTE, node, _QUOTE)


#: A piece of regex text: ``(text, atom)`` (``atom``: a quantifier may follow it).
_Text = tuple[str, bool]
_SPECIAL_TEXT = to_regex(_SPECIAL_SPELLED)
_NON_ASCII_TEXT = to_regex(_NON_ASCII)
_SIGMA_STAR_TEXT = to_regex(_SIGMA_STAR_SPELLED)


def _render(options: list[_Text], optional: bool) -> _Text | None:
    """The alternation of ``options`` (and of the empty string if
    ``optional``) as text; ``None`` if it matches nothing."""
    if not options:
        return ("", True) if optional else None
    if len(options) == 1:
        text, atom = options[0]
    else:
        text, atom = "(?:" + "|".join(t for t, _ in options) + ")", True
    if optional:
        return (text if atom else f"(?:{text})") + "?", False
    return text, atom


def _not_in_text(trie: dict, gather_wide: bool, paths: bool = True, wide: bool = True) -> tuple:
    """``_not_in``'s four pieces as text, printed straight from the trie
    (the AST printer spent half the time of the whole piece): ``diverge``
    as its options (for the caller to join into its own alternation),
    ``paths`` and ``wide_paths`` as ``_Text`` or ``None`` (nothing, as
    when not asked for), and ``ends`` as ``(options, optional)``."""
    kids = tuple(sorted(c for c in trie if c is not None))
    here, here_path, wide_path = _leaving_text(kids, gather_wide)
    lists: list[list[_Text]] = [[here] if here is not None else [], [], [], []]
    for c in kids:
        lit = _spelled_text(c)
        child = _not_in_text(trie[c], gather_wide, paths, wide)
        rests = (_render(child[0], False), child[1], child[2], _render(*child[3]))
        for options, rest in zip(lists, rests, strict=True):
            if rest is None:
                continue
            options.append(lit if not rest[0] else (lit[0] + rest[0], False))
    path_text = _render(lists[1], here_path) if paths else None
    wide_text = _render(lists[2], wide_path) if wide else None
    return lists[0], path_text, wide_text, (lists[3], None not in trie)


@functools.lru_cache(maxsize=4096)
def _leaving_text(kids: tuple[str, ...], gather_wide: bool) -> tuple[_Text | None, bool, bool]:
    """:func:`_leaving` as text: the class's ``_Text`` (``None``: none leaves
    here), and whether the gathered escaped and non-ASCII branches may leave here."""
    here, here_path, wide_path = _leaving(kids, gather_wide)
    text = None if _is_empty_class(here) else to_regex(here)
    return (
        None if text is None else (text, is_atom(text)),
        isinstance(here_path, Empty),
        isinstance(wide_path, Empty),
    )


@functools.lru_cache(maxsize=4096)
def _spelled_text(c: str) -> _Text:
    text = to_regex(_spelled_char(c))
    return text, is_atom(text)


def _not_in(
    trie: dict,
    gather_wide: bool = True,
    paths: bool = True,
    wide: bool = True,
    shared: dict[Node, Node] | None = None,
) -> tuple[Node, Node, Node, Node]:
    """``(diverge, paths, wide_paths, ends)`` of a trie node, as suffixes after its path:

    * ``diverge``: one step off the trie (a character that is no child here;
      escaped ones only where a child is escaped, non-ASCII ones only where
      a child is non-ASCII) after a trie path;
    * ``paths``: the trie paths from here to the nodes with no escaped child;
    * ``wide_paths``: the trie paths from here to the nodes with no non-ASCII child;
    * ``ends``: the trie paths from here to nodes that are no excluded string.

    Without ``gather_wide``, non-ASCII characters leave in ``diverge`` at
    each node (``wide_paths`` is void): the same language, a shorter text.
    Without ``paths`` (``wide``), that piece is not made (void): the
    caller's branch for those characters needs no trie path. ``shared``:
    nodes by value, which the pieces and their options are taken from
    (equal subtries, of this trie or an earlier one, give one node).
    All four are built in the canonical JSON spelling (``encode_node`` of
    the characters' language, one character and one class at a time: the
    trie's characters are few, its classes repeat).
    """
    kids = tuple(sorted(c for c in trie if c is not None))
    here, here_path, wide_path = _leaving(kids, gather_wide)
    rests = [(_spelled_char(c), _not_in(trie[c], gather_wide, paths, wide, shared)) for c in kids]
    diverge = _options(_VOID if _is_empty_class(here) else here, rests, 0, shared)
    path_node = _options(here_path, rests, 1, shared) if paths else _VOID
    ends = _options(_VOID if None in trie else _EMPTY, rests, 3, shared)
    if not wide:
        return diverge, path_node, _VOID, ends
    # names with no escaped character have the same paths and wide paths
    # below every node without a non-ASCII child: one subtree serves both
    if paths and wide_path is here_path and all(r[2] is r[1] for _, r in rests):
        return diverge, path_node, path_node, ends
    return diverge, path_node, _options(wide_path, rests, 2, shared), ends


def _not_in_plain(
    trie: dict, gather_wide: bool, shared: dict[Node, Node]
) -> tuple[Node, Node, list[_Text], tuple[list[_Text], bool]]:
    """``_not_in``'s ``diverge`` and ``ends`` and ``_not_in_text``'s, in one
    walk, where neither the escaped nor the gathered non-ASCII branches need
    a trie path (``paths`` and ``wide`` false: no excluded string has such a
    character, as for nearly every object's member names). The same nodes
    (from ``shared`` alike) and the same text as the two walks give, in a
    fifth less time (the commonest piece of a schema's lowering)."""
    kids = sorted(c for c in trie if c is not None)
    here = _leaving(tuple(kids), gather_wide)[0]
    here_text = _leaving_text(tuple(kids), gather_wide)[0]
    word = None in trie
    diverge_nodes: list[Node] = [] if _is_empty_class(here) else [here]
    ends_nodes: list[Node] = [] if word else [_EMPTY]
    diverge_texts: list[_Text] = [] if here_text is None else [here_text]
    ends_texts: list[_Text] = []
    for c in kids:
        lit = _spelled_char(c)
        lit_text = _spelled_text(c)
        child_diverge, child_ends, child_diverge_text, child_ends_text = _not_in_plain(
            trie[c], gather_wide, shared
        )
        if child_diverge is not _VOID:
            diverge_nodes.append(_one(_prefixed(lit, child_diverge), shared))
        if child_ends is not _VOID:
            ends_nodes.append(_one(_prefixed(lit, child_ends), shared))
        for texts, rest in (
            (diverge_texts, _render(child_diverge_text, False)),
            (ends_texts, _render(*child_ends_text)),
        ):
            if rest is not None:
                texts.append(lit_text if not rest[0] else (lit_text[0] + rest[0], False))
    diverge = (
        diverge_nodes[0] if len(diverge_nodes) == 1 else _one(_alt_distinct(diverge_nodes), shared)
    )
    ends = ends_nodes[0] if len(ends_nodes) == 1 else _one(_alt_distinct(ends_nodes), shared)
    return diverge, ends, diverge_texts, (ends_texts, not word)


def _one(node: Node, shared: dict[Node, Node] | None) -> Node:
    """``node``, or the node equal to it in ``shared`` (``node`` added if
    none is); ``_VOID`` and ``_EMPTY``, which callers test by identity,
    as they are."""
    if shared is None or node is _VOID or node is _EMPTY:
        return node
    return shared.setdefault(node, node)


def _options(
    head: Node, rests: list[tuple[Literal, tuple]], k: int, shared: dict[Node, Node] | None = None
) -> Node:
    """The alternation of ``head`` and each child's character before its
    ``k``-th piece (a void piece is ``_VOID`` itself, as ``_alt_distinct``
    and ``_leaving`` return it, and is left out as it comes; most trie
    nodes have one child: one option, no alternation)."""
    options = [] if head is _VOID else [head]
    for lit, pieces in rests:
        rest = pieces[k]
        if rest is not _VOID:
            options.append(_one(_prefixed(lit, rest), shared))
    return options[0] if len(options) == 1 else _one(_alt_distinct(options), shared)


def _prefixed(lit: Literal, rest: Node) -> Node:
    """``seq(lit, rest)`` for a ``rest`` that ``seq``/``alt`` made (its
    parts flat, no ``Empty`` among them, no two literals side by side),
    without ``seq``'s general search: a trie's pieces are many and small."""
    kind = type(rest)
    if kind is Empty:
        return lit
    if kind is Literal:
        return seq(lit, rest)
    if kind is Seq:
        first = rest.parts[0]
        if type(first) is Literal:
            return Seq((seq(lit, first), *rest.parts[1:]))
        return Seq((lit, *rest.parts))
    return Seq((lit, rest))


def _alt_distinct(options: list[Node]) -> Node:
    """``alt(*options)`` without its search for duplicates (which hashes
    every new subtree): for options that differ (a trie node's each start
    with their own child's character, and have at most one head), or where
    a duplicate would only repeat a branch. Void options are left out."""
    if len(options) <= 1:
        if not options:
            return _VOID
        return _VOID if _is_empty_class(options[0]) else options[0]
    flat: list[Node] = []
    for o in options:
        kind = type(o)
        if kind is Alt:
            flat.extend(o.options)
        elif kind is not CharSet or o.ranges:
            flat.append(o)
    if len(flat) <= 1:
        return flat[0] if flat else _VOID
    return Alt(tuple(flat))


def _is_empty_class(node: Node) -> bool:
    return isinstance(node, CharSet) and node.is_empty()


@functools.lru_cache(maxsize=4096)
def _leaving(kids: tuple[str, ...], gather_wide: bool) -> tuple[Node, Node, Node]:
    """For a trie node with children ``kids``: the spelled class of the
    characters that leave the trie there, and whether the gathered escaped
    (``paths``) and non-ASCII (``wide_paths``) branches may leave there
    (``Empty()``) or not (void)."""
    gone = [(ord(c), ord(c)) for c in kids]  # the characters that do not leave here
    here_path: Node = _VOID
    wide_path: Node = _VOID
    if _SPECIAL_CHARACTER.search("".join(kids)) is None:  # no escaped child
        gone += _SPECIAL.ranges
        here_path = _EMPTY
    if gather_wide and not any(ord(c) >= 0x80 for c in kids):  # no non-ASCII child
        gone += _NON_ASCII.ranges
        wide_path = _EMPTY
    return _encode_charset(CharSet(tuple(gone)).complement()), here_path, wide_path


@functools.lru_cache(maxsize=4096)
def _spelled_char(c: str) -> Literal:
    return Literal(_encode_text(c))


def _alt_nonvoid(options: Iterable[Node]) -> Node:
    return alt(*(o for o in options if not is_void(o)))


# ------------------------------------------------------------------- lengths


@functools.lru_cache(maxsize=16384)
def _length_range(node: Node) -> tuple[int, int | None]:
    """``(min, max)`` lengths of the node's strings (``None``: unbounded); ``(1, 0)`` if void
    (cached: the restrictor asks it of the same parts at every length it tries)."""
    if isinstance(node, CharSet):
        return (1, 0) if node.is_empty() else (1, 1)
    if isinstance(node, Literal):
        return len(node.text), len(node.text)
    if isinstance(node, Empty):
        return 0, 0
    if isinstance(node, Seq):
        lo, hi = 0, 0
        for p in node.parts:
            a, b = _length_range(p)
            if b is not None and b < a:
                return 1, 0
            lo += a
            hi = None if hi is None or b is None else hi + b
        return lo, hi
    if isinstance(node, Alt):
        bounds = [r for r in map(_length_range, node.options) if r[1] is None or r[1] >= r[0]]
        if not bounds:
            return 1, 0
        tops = [b for _, b in bounds]
        return min(a for a, _ in bounds), None if None in tops else max(tops)  # type: ignore[type-var]
    if isinstance(node, Repeat):
        a, b = _length_range(node.node)
        if b is not None and b < a:
            return (0, 0) if node.min == 0 else (1, 0)
        if b == 0:
            return 0, 0
        top = None if b is None or node.max is None else b * node.max
        return a * node.min, top
    raise TypeError(f"unexpected node {node!r}")


class _NotExpressible(Exception):
    """The length restriction has no construction here."""


class _Restrictor:
    """``cut(node, lo, hi)``: the node's strings of ``lo`` to ``hi`` characters.

    Each length tried costs one unit of ``budget`` (:class:`_TooBig` past it);
    a loop over lengths pays for all of them before it starts, so a cut that
    will not fit stops early (whether it fits is the same: any stop ends the
    whole cut). A cut asked again (the same node and bounds, as nested
    sequences ask at every length of their heads) is answered from a memo
    that charges the units its first computation spent: the result and
    whether the budget runs out are what computing it again would give,
    without the work."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self._memo: dict[tuple, tuple[Node, int]] = {}
        #: Whether a cut split the length between variable-width items
        #: (several items or counts, one option per split).
        self.split = False

    def spend(self, units: int = 1) -> None:
        self.budget -= units
        if self.budget < 0:
            raise _TooBig

    def _memoized(self, key: tuple, compute: Callable[[], Node]) -> Node:
        known = self._memo.get(key)
        if known is not None:
            self.spend(known[1])
            return known[0]
        before = self.budget
        result = compute()
        self._memo[key] = (result, before - self.budget)
        return result

    def cut(self, node: Node, lo: int, hi: int | None) -> Node:
        lo = max(lo, 0)
        return self._memoized((node, lo, hi), lambda: self._cut(node, lo, hi))

    def _cut(self, node: Node, lo: int, hi: int | None) -> Node:
        if hi is not None and hi < lo:
            return _VOID
        nlo, nhi = _length_range(node)
        if nhi is not None and nhi < nlo:
            return _VOID
        if (hi is not None and nlo > hi) or (nhi is not None and nhi < lo):
            return _VOID
        if nlo >= lo and (hi is None or (nhi is not None and nhi <= hi)):
            return node
        if isinstance(node, Alt):
            return _alt_nonvoid(self.cut(o, lo, hi) for o in node.options)
        if isinstance(node, Repeat):
            return self.cut_repeat(node, lo, hi)
        if isinstance(node, Seq):
            return self.cut_seq(node.parts, lo, hi)
        raise _NotExpressible  # (fixed-length nodes never get here)

    def cut_repeat(self, node: Repeat, lo: int, hi: int | None) -> Node:
        item, a, b = node.node, node.min, node.max
        wlo, whi = _length_range(item)
        if wlo == whi and wlo > 0:
            w = wlo
            k1 = max(a, -(-lo // w))
            k2 = None if hi is None else hi // w
            if b is not None:
                k2 = b if k2 is None else min(k2, b)
            if k2 is not None and k2 < k1:
                return _VOID
            return repeat(item, k1, k2)
        if wlo == 0:
            raise _NotExpressible
        # variable-width items, each at least one character: split on the count
        top = -(-lo // wlo)  # from this many copies on, the minimum length is met
        last = b if hi is None else (hi // wlo if b is None else min(b, hi // wlo))
        end = last if hi is not None else (top - 1 if last is None else min(last, top - 1))
        counts = range(a, end + 1)
        self.spend(len(counts))  # (all at once: a cut past the budget stops sooner)
        self.split = True
        options = [self.cut(seq(*([item] * k)), lo, hi) for k in counts]
        if hi is None and (b is None or top <= b):
            options.append(repeat(item, max(a, top), b))
        return _alt_nonvoid(options)

    def cut_seq(self, parts: tuple[Node, ...], lo: int, hi: int | None) -> Node:
        lo = max(lo, 0)
        return self._memoized((parts, lo, hi), lambda: self._cut_seq(parts, lo, hi))

    def _cut_seq(self, parts: tuple[Node, ...], lo: int, hi: int | None) -> Node:
        if hi is not None and hi < lo:
            return _VOID
        ranges = [_length_range(p) for p in parts]
        if any(b is not None and b < a for a, b in ranges):
            return _VOID
        var = [i for i, (a, b) in enumerate(ranges) if a != b]
        fixed = sum(a for a, b in ranges if a == b)
        if not var:
            ok = fixed >= lo and (hi is None or fixed <= hi)
            return seq(*parts) if ok else _VOID
        if len(var) == 1:
            i = var[0]
            sub = self.cut(parts[i], lo - fixed, None if hi is None else hi - fixed)
            return _VOID if is_void(sub) else seq(*parts[:i], sub, *parts[i + 1 :])
        i = var[0]
        pre = sum(ranges[j][0] for j in range(i))
        head, rest = parts[i], parts[i + 1 :]
        lo2, hi2 = lo - pre, None if hi is None else hi - pre
        rlo = sum(a for a, _ in ranges[i + 1 :])
        vlo, vhi = ranges[i]
        options: list[Node] = []
        top: int | None = None
        if vhi is not None:
            last = vhi if hi2 is None else min(vhi, hi2 - rlo)
        elif hi2 is not None:
            last = hi2 - rlo
        else:
            top = max(vlo, lo2 - rlo)  # from this head length on, the rest is free
            last = top - 1
        head_lengths = range(vlo, last + 1)
        self.spend(len(head_lengths))
        self.split = True
        for k in head_lengths:
            hk = self.cut(head, k, k)
            if is_void(hk):
                continue
            rk = self.cut_seq(rest, lo2 - k, None if hi2 is None else hi2 - k)
            if not is_void(rk):
                options.append(seq(hk, rk))
        if top is not None:
            hk = self.cut(head, top, None)
            if not is_void(hk):
                options.append(seq(hk, *rest))
        if not options:
            return _VOID
        return seq(*parts[:i], _alt_nonvoid(options))


#: The longest bound :func:`restricted_piece` gives an intersection for: its
#: automaton counts every character up to the bound (``any{0,32767}`` is
#: past the NFA's limit), where the text's cut may well be small.
_INTERSECTED_LENGTHS = 1024


class _TooBig(Exception):
    """The length restriction grew past its budget."""


# ------------------------------------------------------------------- ECMA-262

_DIGIT = CharSet.range("0", "9")
_WORD = CharSet(((0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A)))
_SPACE = CharSet(
    (
        (0x09, 0x0D),
        (0x20, 0x20),
        (0xA0, 0xA0),
        (0x1680, 0x1680),
        (0x2000, 0x200A),
        (0x2028, 0x2029),
        (0x202F, 0x202F),
        (0x205F, 0x205F),
        (0x3000, 0x3000),
        (0xFEFF, 0xFEFF),
    )
)
_DOT = _ANY.difference(CharSet.of("\n\r\u2028\u2029"))
_CLASS_ESCAPES = {
    "d": _DIGIT,
    "D": _DIGIT.complement(),
    "w": _WORD,
    "W": _WORD.complement(),
    "s": _SPACE,
    "S": _SPACE.complement(),
}
_CONTROL_ESCAPES = {"t": 0x09, "n": 0x0A, "v": 0x0B, "f": 0x0C, "r": 0x0D}
_SYNTAX = frozenset("^$\\.*+?()[]{}|/")

# General_Category values: short name → (long names and aliases), members
_GC_NAMES = {
    "C": ("Other",),
    "Cc": ("Control", "cntrl"),
    "Cf": ("Format",),
    "Cn": ("Unassigned",),
    "Co": ("Private_Use",),
    "Cs": ("Surrogate",),
    "L": ("Letter",),
    "LC": ("Cased_Letter",),
    "Ll": ("Lowercase_Letter",),
    "Lm": ("Modifier_Letter",),
    "Lo": ("Other_Letter",),
    "Lt": ("Titlecase_Letter",),
    "Lu": ("Uppercase_Letter",),
    "M": ("Mark", "Combining_Mark"),
    "Mc": ("Spacing_Mark",),
    "Me": ("Enclosing_Mark",),
    "Mn": ("Nonspacing_Mark",),
    "N": ("Number",),
    "Nd": ("Decimal_Number", "digit"),
    "Nl": ("Letter_Number",),
    "No": ("Other_Number",),
    "P": ("Punctuation", "punct"),
    "Pc": ("Connector_Punctuation",),
    "Pd": ("Dash_Punctuation",),
    "Pe": ("Close_Punctuation",),
    "Pf": ("Final_Punctuation",),
    "Pi": ("Initial_Punctuation",),
    "Po": ("Other_Punctuation",),
    "Ps": ("Open_Punctuation",),
    "S": ("Symbol",),
    "Sc": ("Currency_Symbol",),
    "Sk": ("Modifier_Symbol",),
    "Sm": ("Math_Symbol",),
    "So": ("Other_Symbol",),
    "Z": ("Separator",),
    "Zl": ("Line_Separator",),
    "Zp": ("Paragraph_Separator",),
    "Zs": ("Space_Separator",),
}
_GC_ALIAS = {alias: short for short, names in _GC_NAMES.items() for alias in (short, *names)}


@functools.cache
def _categories() -> dict[str, CharSet]:
    """Two-letter General_Category → its characters (from ``unicodedata``)."""
    runs: dict[str, list[tuple[int, int]]] = {}
    cats = map(unicodedata.category, map(chr, range(MAX_CODE_POINT + 1)))
    pos = 0
    for k, group in itertools.groupby(cats):
        n = sum(1 for _ in group)
        runs.setdefault(k, []).append((pos, pos + n - 1))
        pos += n
    return {k: CharSet(tuple(v)) for k, v in runs.items()}


def _general_category(short: str) -> CharSet:
    cats = _categories()
    if short == "LC":
        members = ["Lu", "Ll", "Lt"]
    elif len(short) == 1:
        members = [k for k in cats if k[0] == short]
    else:
        members = [short]
    return CharSet(()).union(*(cats.get(k, _VOID) for k in members))


class _Unsupported(Exception):
    def __init__(self, construct: str, reason: str = "") -> None:
        super().__init__(construct)
        self.construct = construct
        self.reason = reason


@dataclass(frozen=True)
class _Look:
    """A lookaround at the top level of a top-level alternative: the
    language the text after (``ahead``) or before the point must be in
    (``negative``: must not): ``X·Σ*`` (``Σ*·X``), or ``X`` alone for an
    option of X that ends with ``$`` (starts with ``^``)."""

    ahead: bool
    negative: bool
    condition: Node


#: An item of a top-level alternative: a node, an anchor (``"^"``, ``"$"``)
#: or a lookaround.
_Item = Node | str | _Look

#: The most top-level alternatives that distributing groups may make.
_MAX_DISTRIBUTED = 64


def _is_node(item: _Item) -> bool:
    return not isinstance(item, str | _Look)


def _assertion_name(item: _Item) -> str:
    if isinstance(item, str):
        return f"anchor {item}"
    kind = "lookahead" if item.ahead else "lookbehind"
    return f"negative {kind}" if item.negative else kind


def _condition(items: list[_Item], ahead: bool) -> Node:
    """The language one option of a lookaround's body asks of the text
    after (``ahead``) or before its point: the option then any text, or,
    past ``$`` (before ``^``, behind), nothing more (what follows the
    anchor must match the empty string there, else the option matches
    nothing)."""
    edge, other = ("$", "^") if ahead else ("^", "$")
    if not ahead:
        items = items[::-1]  # (read from the point outwards)
    for item in items:
        if isinstance(item, _Look):
            raise _Unsupported("a lookaround inside a lookaround")
        if item == other:
            raise _Unsupported(f"anchor {other} inside a look{'ahead' if ahead else 'behind'}")
    at = items.index(edge) if edge in items else len(items)
    text = [item for item in items[:at] if _is_node(item)]
    after = [item for item in items[at:] if _is_node(item)]
    if at == len(items):
        text.append(_SIGMA_STAR)  # (no anchor: any text may follow)
    elif after and not nullable(seq(*after)):
        return _VOID
    return seq(*text) if ahead else seq(*text[::-1])


def _settled(items: list[_Item]) -> tuple[Node, bool, bool]:
    """A top-level alternative's node and whether it is anchored at the
    start and the end. ``^`` after text that must be non-empty, or ``$``
    before it, never holds (no multiline flag): the alternative matches
    nothing; after or before text that may be empty, that text must be
    empty there, so it is dropped. With lookarounds the alternative comes
    back whole (:func:`_looked_around`), marked anchored at both ends."""
    parts: list[Node | _Look] = []
    start = end = void = False
    end_at: int | None = None  # how many parts came before the first $
    for item in items:
        if isinstance(item, _Look):
            if end_at is not None:
                raise _Unsupported("a lookaround after $")
            parts.append(item)
        elif item == "^":
            if end_at is not None:
                raise _Unsupported("anchor ^ inside a group or after $")
            if any(isinstance(p, _Look) for p in parts):
                raise _Unsupported("anchor ^ after a lookaround")
            void = void or (bool(parts) and not nullable(seq(*parts)))
            parts, start = [], True
        elif item == "$":
            end = True
            end_at = len(parts) if end_at is None else end_at
        else:
            parts.append(item)
    if end_at is not None:
        after, parts = parts[end_at:], parts[:end_at]
        void = void or (bool(after) and not nullable(seq(*after)))
    if void:
        return _VOID, False, False
    if any(isinstance(p, _Look) for p in parts):
        return _looked_around(parts, start, end), True, True
    return seq(*parts), start, end


class _Malformed(Exception):
    def __init__(self, message: str, pos: int) -> None:
        super().__init__(message)
        self.message = message
        self.pos = pos


class _EcmaParser:
    """ECMA-262 (``u`` flag) pattern → top-level alternatives with their anchors."""

    def __init__(self, pattern: str) -> None:
        self.p = pattern
        self.i = 0

    # -- helpers

    def peek(self, k: int = 0) -> str | None:
        j = self.i + k
        return self.p[j] if j < len(self.p) else None

    def at_end(self) -> bool:
        return self.i >= len(self.p)

    def malformed(self, message: str, pos: int | None = None) -> _Malformed:
        return _Malformed(message, self.i if pos is None else pos)

    # -- structure

    def parse(self) -> list[tuple[Node, bool, bool]]:
        """The top-level alternatives, each with whether it is anchored at
        the start and the end (:func:`_settled`)."""
        alternatives = self.raw_disjunction()
        if not self.at_end():
            raise self.malformed("unmatched ')'")
        return [_settled(items) for items in alternatives]

    def raw_disjunction(self) -> list[list[_Item]]:
        """The alternatives at the top level, as lists of items: nodes,
        anchors and lookarounds. An unquantified group whose options hold
        anchors or lookarounds at their own level is distributed over the
        alternative (``P(A|B)R`` is ``PAR|PBR``, assertions included, since
        each sees the same text either way)."""
        alternatives: list[list[_Item]] = []
        while True:
            alternatives += self.raw_alternative()
            if self.peek() != "|":
                return alternatives
            self.i += 1

    def raw_alternative(self) -> list[list[_Item]]:
        lists: list[list[_Item]] = [[]]
        while not self.at_end() and self.peek() not in "|)":
            c = self.peek()
            if self.at_lookaround():
                item: _Item = self.lookaround()
            elif c in "^$":
                self.i += 1
                item = c
            elif c == "(":
                options = self.raw_group()
                asserting = [x for o in options for x in o if not _is_node(x)]
                if asserting and not self.at_quantifier():
                    if len(lists) * len(options) > _MAX_DISTRIBUTED:
                        raise _Unsupported(
                            "anchors or lookarounds inside groups",
                            f"more than {_MAX_DISTRIBUTED} alternatives once distributed",
                        )
                    lists = [mine + option for mine in lists for option in options]
                    continue
                if asserting:
                    raise _Unsupported(_assertion_name(asserting[0]) + " inside a quantified group")
                item = self.quantified(alt(*(seq(*o) for o in options)))
            else:
                item = self.quantified(self.atom())
            for mine in lists:
                mine.append(item)
        return lists

    def raw_group(self) -> list[list[_Item]]:
        """A group at the top level of a top-level alternative: its options
        as item lists (``raw_disjunction``)."""
        start = self.i
        self.open_group()
        options = self.raw_disjunction()
        self.close_group(start)
        return options

    def at_lookaround(self) -> bool:
        return (
            self.peek() == "("
            and self.peek(1) == "?"
            and (self.peek(2) in ("=", "!") or (self.peek(2) == "<" and self.peek(3) in ("=", "!")))
        )

    def lookaround(self) -> _Look:
        """``(?=X)``, ``(?!X)``, ``(?<=X)``, ``(?<!X)`` at the position
        (``at_lookaround``); with the ``u`` flag no quantifier may follow.
        X may hold ``$`` (a lookahead: the text after ends there) or ``^``
        (a lookbehind: the text before starts there), not lookarounds."""
        start = self.i
        ahead = self.peek(2) != "<"
        self.i += 3 if ahead else 4
        negative = self.p[self.i - 1] == "!"
        options = self.raw_disjunction()
        self.close_group(start)
        if self.at_quantifier():
            raise self.malformed("nothing to repeat")
        return _Look(ahead, negative, alt(*(_condition(o, ahead) for o in options)))

    def at_quantifier(self) -> bool:
        return self.peek() in ("*", "+", "?") or (
            self.peek() == "{" and self.brace_quantifier(False) is not None
        )

    def quantified(self, node: Node) -> Node:
        q = self.quantifier()
        if q is None:
            return node
        lo, hi = q
        if self.peek() == "?":
            self.i += 1  # lazy: same language
        if self.at_quantifier():
            raise self.malformed("nothing to repeat")
        return repeat(node, lo, hi)

    def quantifier(self) -> tuple[int, int | None] | None:
        c = self.peek()
        if c == "*":
            self.i += 1
            return 0, None
        if c == "+":
            self.i += 1
            return 1, None
        if c == "?":
            self.i += 1
            return 0, 1
        if c == "{":
            return self.brace_quantifier(True)
        return None

    def brace_quantifier(self, consume: bool) -> tuple[int, int | None] | None:
        """``{n}``, ``{n,}``, ``{n,m}`` at the position (else ``None``: a literal ``{``)."""
        p, j = self.p, self.i + 1
        k = j
        while k < len(p) and p[k].isascii() and p[k].isdigit():
            k += 1
        if k == j:
            return None
        lo = int(p[j:k])
        hi: int | None = lo
        if k < len(p) and p[k] == ",":
            k += 1
            m = k
            while k < len(p) and p[k].isascii() and p[k].isdigit():
                k += 1
            hi = int(p[m:k]) if k > m else None
        if k >= len(p) or p[k] != "}":
            return None
        if consume:
            if hi is not None and hi < lo:
                raise self.malformed("numbers out of order in {} quantifier")
            if lo >= _MAX_COUNT or (hi is not None and hi >= _MAX_COUNT):
                raise CompileLimitExceeded(
                    "regex_size", _MAX_COUNT, max(lo, hi or 0), "a repetition count is too large"
                )
            self.i = k + 1
        return lo, hi

    def atom(self) -> Node:
        """An atom other than a group (``raw_alternative`` reads groups)."""
        c = self.peek()
        assert c is not None and c != "("
        if c == "[":
            return self.char_class()
        if c == ".":
            self.i += 1
            return _DOT
        if c == "\\":
            return self.atom_escape()
        if c in "*+?":
            raise self.malformed("nothing to repeat")
        if c == "{" and self.brace_quantifier(False) is not None:
            raise self.malformed("nothing to repeat")
        self.i += 1
        return _char_node(ord(c))  # (Annex B: a lone ] { } is literal)

    def close_group(self, start: int) -> None:
        """Past the ``)`` of the group opened at ``start``."""
        if self.peek() != ")":
            raise self.malformed("missing ')'", start)
        self.i += 1

    def open_group(self) -> None:
        """Past a group's opening (``(``, ``(?:``, ``(?<name>``); inline
        modifiers are refused (lookarounds are read by ``lookaround``)."""
        self.i += 1
        if self.peek() == "?":
            nxt = self.peek(1)
            if nxt == ":":
                self.i += 2
            elif nxt == "<":
                end = self.p.find(">", self.i + 2)
                name = self.p[self.i + 2 : end] if end >= 0 else ""
                if end < 0 or not name or not _is_group_name(name):
                    raise self.malformed("invalid group name")
                self.i = end + 1
            elif nxt is not None and (nxt.isalpha() or nxt == "-"):
                raise _Unsupported("inline modifiers (?flags:...)")
            else:
                raise self.malformed("invalid group")

    # -- escapes

    def atom_escape(self) -> Node:
        start = self.i
        self.i += 1
        c = self.peek()
        if c is None:
            raise self.malformed("\\ at end of pattern", start)
        if c in ("b", "B"):
            raise _Unsupported(f"word boundary \\{c}")
        if c in _CLASS_ESCAPES:
            self.i += 1
            return _CLASS_ESCAPES[c]
        if c in ("p", "P"):
            return self.property_escape()
        if c == "k":
            raise _Unsupported("named backreference \\k<...>", "not a regular language")
        if c in "123456789":
            raise _Unsupported(f"backreference \\{c}", "not a regular language")
        return _char_node(self.character_escape(in_class=False))

    def character_escape(self, in_class: bool) -> int:
        """The code point of a character escape (``self.i`` after the backslash); -1: a
        lone surrogate (matches nothing)."""
        start = self.i - 1
        c = self.peek()
        if c is None:
            raise self.malformed("\\ at end of pattern", start)
        if c in _CONTROL_ESCAPES:
            self.i += 1
            return _CONTROL_ESCAPES[c]
        if c == "0":
            if (self.peek(1) or "").isdigit():
                raise _Unsupported("legacy octal escape \\0N", "ECMA-262 only allows it without u")
            self.i += 1
            return 0
        if c == "c":
            x = self.peek(1)
            if x is not None and x.isascii() and x.isalpha():
                self.i += 2
                return ord(x) % 32
            raise _Unsupported("\\c not followed by a letter", "Annex B reads it as text")
        if c == "x":
            h = self.p[self.i + 1 : self.i + 3]
            if len(h) == 2 and _is_hex(h):
                self.i += 3
                return int(h, 16)
            raise _Unsupported("\\x not followed by two hex digits", "its meaning depends on flags")
        if c == "u":
            return self.unicode_escape()
        if c == "-" and in_class:
            self.i += 1
            return ord("-")
        if c.isascii() and c.isalnum():
            raise _Unsupported(
                f"identity escape \\{c}",
                "ECMA-262 reads it as the letter without the u flag and rejects it with it",
            )
        self.i += 1
        return ord(c)  # identity escape: punctuation, space, non-ASCII

    def unicode_escape(self) -> int:
        if self.peek(1) == "{":
            raise _Unsupported("\\u{...} escape", "its meaning depends on the u flag")
        h = self.p[self.i + 1 : self.i + 5]
        if len(h) != 4 or not _is_hex(h):
            raise _Unsupported(
                "\\u not followed by four hex digits", "its meaning depends on flags"
            )
        self.i += 5
        cp = int(h, 16)
        if 0xD800 <= cp <= 0xDBFF and self.p[self.i : self.i + 2] == "\\u":
            low = self.p[self.i + 2 : self.i + 6]
            if len(low) == 4 and _is_hex(low) and 0xDC00 <= int(low, 16) <= 0xDFFF:
                self.i += 6
                return 0x10000 + ((cp - 0xD800) << 10) + (int(low, 16) - 0xDC00)
        if 0xD800 <= cp <= 0xDFFF:
            return -1
        return cp

    def property_escape(self) -> CharSet:
        negate = self.peek() == "P"
        if self.peek(1) != "{":
            raise self.malformed("\\p must be followed by {...}")
        end = self.p.find("}", self.i)
        if end < 0:
            raise self.malformed("unterminated \\p{...}")
        body = self.p[self.i + 2 : end]
        self.i = end + 1
        cs = _property(body)
        return cs.complement() if negate else cs

    # -- classes

    def char_class(self) -> CharSet:
        start = self.i
        self.i += 1
        negate = False
        if self.peek() == "^":
            negate = True
            self.i += 1
        members: list[CharSet] = []
        while True:
            c = self.peek()
            if c is None:
                raise self.malformed("unterminated character class", start)
            if c == "]":
                self.i += 1
                break
            a = self.class_atom()
            if self.peek() == "-" and self.peek(1) not in (None, "]"):
                self.i += 1
                b = self.class_atom()
                if isinstance(a, int) and isinstance(b, int):
                    if a == -1 or b == -1:
                        raise _Unsupported("lone surrogate as a class range end")
                    if a > b:
                        raise self.malformed("range out of order in character class")
                    members.append(CharSet(((a, b),)))
                    continue
                # Annex B: a class escape next to '-' makes the '-' literal
                members.extend((_as_set(a), CharSet.of("-"), _as_set(b)))
                continue
            members.append(_as_set(a))
        cs = CharSet(()).union(*members)
        return cs.complement() if negate else cs

    def class_atom(self) -> int | CharSet:
        c = self.peek()
        assert c is not None
        if c != "\\":
            self.i += 1
            return ord(c)
        start = self.i
        self.i += 1
        e = self.peek()
        if e is None:
            raise self.malformed("\\ at end of pattern", start)
        if e == "b":
            self.i += 1
            return 0x08
        if e in _CLASS_ESCAPES:
            self.i += 1
            return _CLASS_ESCAPES[e]
        if e in ("p", "P"):
            return self.property_escape()
        if e in "123456789":
            raise _Unsupported(f"escape \\{e} in a class", "a legacy octal escape in Annex B")
        if e == "B":
            raise _Unsupported("escape \\B in a class", "its meaning depends on flags")
        return self.character_escape(in_class=True)


def _is_hex(s: str) -> bool:
    return all(ch in "0123456789abcdefABCDEF" for ch in s)


def _is_group_name(name: str) -> bool:
    return (name[0].isalpha() or name[0] in "$_") and all(
        ch.isalnum() or ch in "$_\u200c\u200d" for ch in name
    )


def _char_node(cp: int) -> Node:
    return _VOID if cp == -1 or 0xD800 <= cp <= 0xDFFF else Literal(chr(cp))


def _as_set(atom: int | CharSet) -> CharSet:
    if isinstance(atom, CharSet):
        return atom
    return _VOID if atom == -1 else CharSet(((atom, atom),))


def _property(body: str) -> CharSet:
    name, _, value = body.partition("=")
    if value:
        if name not in ("General_Category", "gc"):
            raise _Unsupported(
                f"Unicode property \\p{{{body}}}", "only General_Category properties are supported"
            )
        if value not in _GC_ALIAS:
            raise _Unsupported(f"Unicode property \\p{{{body}}}", "unknown General_Category value")
        return _general_category(_GC_ALIAS[value])
    if body in _GC_ALIAS:
        return _general_category(_GC_ALIAS[body])
    if body == "Any":
        return _ANY
    if body == "ASCII":
        return CharSet(((0, 0x7F),))
    if body == "Assigned":
        return _general_category("Cn").complement()
    raise _Unsupported(
        f"Unicode property \\p{{{body}}}",
        "only General_Category values, Any, ASCII and Assigned are supported",
    )


# ------------------------------------------------------------ search semantics


def _looked_around(parts: list[Node | _Look], start: bool, end: bool) -> Node:
    """The strings in which a top-level alternative with lookarounds at its
    own level finds a match (search semantics: text before it unless
    ``start``, after it unless ``end``). A lookahead sees all the text after
    its point, to the end of the string, so the parts after it and that
    text must (``(?=X)``) or must not (``(?!X)``) be in its condition
    (``X·Σ*``): their intersection with it, or difference from it; a
    lookbehind likewise sees all the text before. At the anchored start
    (end) a lookahead (lookbehind) sees the whole string, so it applies to
    the whole alternative; a lookaround there facing the other way sees
    nothing. Of the others, each lookbehind must come before every
    lookahead (else each would see text the other constrains: refused as
    crossing)."""
    parts = list(parts)
    whole: list[_Look] = []  # lookarounds that see the whole string
    empty: list[_Look] = []  # lookarounds that see the empty string
    while start and parts and isinstance(parts[0], _Look):
        look = parts.pop(0)
        (whole if look.ahead else empty).append(look)
    while end and parts and isinstance(parts[-1], _Look):
        look = parts.pop()
        (empty if look.ahead else whole).append(look)
    if any(nullable(look.condition) == look.negative for look in empty):
        return _VOID
    looks = [i for i, p in enumerate(parts) if isinstance(p, _Look)]
    first_ahead = next((i for i in looks if parts[i].ahead), len(parts))
    if any(not parts[i].ahead for i in looks if i > first_ahead):
        raise _Unsupported("a lookbehind after a lookahead", "crossing lookarounds")
    items: list[Node | _Look] = [_EMPTY if start else _SIGMA_STAR, *parts]
    items.append(_EMPTY if end else _SIGMA_STAR)
    split = first_ahead + 1  # (items are parts shifted by one)
    left: Node = _EMPTY
    for item in items[:split]:  # lookbehinds: the text so far must end with X
        left = _asserted(left, item) if isinstance(item, _Look) else seq(left, item)
    right: Node = _EMPTY
    for item in reversed(items[split:]):  # lookaheads: the rest must start with X
        right = _asserted(right, item) if isinstance(item, _Look) else seq(item, right)
    node = seq(left, right)
    for look in whole:
        node = _asserted(node, look)
    return node


def _asserted(node: Node, look: _Look) -> Node:
    """The strings of ``node`` in (not in, if negative) the lookaround's condition."""
    if look.negative:
        return Difference(node, look.condition)
    return Intersect(node, look.condition)


def _trim(node: Node, front: bool) -> Node:
    """A node ``m`` with ``Σ*·m == Σ*·node`` (``front``) or ``m·Σ* == node·Σ*``."""
    if nullable(node):
        return Empty()
    if isinstance(node, Seq):
        parts = list(node.parts)
        idx = 0 if front else len(parts) - 1
        while nullable(parts[idx]):
            parts.pop(idx)
            idx = 0 if front else len(parts) - 1
        parts[idx] = _trim(parts[idx], front)
        return seq(*parts)
    if isinstance(node, Alt):
        return alt(*(_trim(o, front) for o in node.options))
    if isinstance(node, Repeat):
        # node.min >= 1 (not nullable): X^min is X^(min-1)·X, and only one X needs trimming
        rest = repeat(node.node, node.min - 1, node.min - 1)
        last = _trim(node.node, front)
        return seq(last, rest) if front else seq(rest, last)
    return node


def pattern_node(pattern: str, *, where: str = "") -> Node:
    """The AST (over decoded characters) of the strings in which the ECMA-262
    ``pattern`` finds a match (JSON Schema's search semantics)."""
    if not isinstance(pattern, str):
        raise ConstraintError(
            "json schema", f"pattern must be a string, got {pattern!r}", where or None
        )
    parser = _EcmaParser(pattern)
    try:
        alternatives = parser.parse()
    except _Unsupported as e:
        reason = e.construct + (f" ({e.reason})" if e.reason else "") + " is not supported"
        raise UnsupportedConstraint(_BACKEND, f"pattern {pattern!r}", reason) from None
    except _Malformed as e:
        raise ConstraintError(
            "json schema",
            f"invalid pattern {pattern!r}: {e.message} at position {e.pos}",
            where or None,
        ) from None
    except RecursionError:
        raise CompileLimitExceeded(
            "nesting", 0, None, f"pattern {pattern!r} is nested too deeply"
        ) from None
    options = []
    for node, start, end in alternatives:
        if not start:
            node = _trim(node, front=True)
        if not end:
            node = _trim(node, front=False)
        if isinstance(node, Empty) and not (start and end):
            return _SIGMA_STAR
        options.append(
            seq(Empty() if start else _SIGMA_STAR, node, Empty() if end else _SIGMA_STAR)
        )
    return _alt_nonvoid(options)


def pattern_regex(
    pattern: str,
    *,
    min_length: int = 0,
    max_length: int | None = None,
    where: str = "",
    max_size: int = 20000,
) -> str:
    """Quoted canonical strings whose decoded content contains a match of the ECMA-262
    ``pattern`` (JSON Schema's unanchored search) and has ``min_length`` to
    ``max_length`` characters. See the module docstring for the dialect."""
    return pattern_piece(
        pattern, min_length=min_length, max_length=max_length, where=where, max_size=max_size
    )[0]


def pattern_piece(
    pattern: str,
    *,
    min_length: int = 0,
    max_length: int | None = None,
    where: str = "",
    max_size: int = 20000,
) -> tuple[str, Node | None]:
    """:func:`pattern_regex`'s text, and the AST automata should build for it
    where the text's is costly (:func:`restricted_piece`)."""
    _check_counts(min_length, max_length, where)
    node = pattern_node(pattern, where=where)
    if has_lookaround(node):
        raise CompileLimitExceeded(
            "regex_size",
            max_size,
            None,
            f"pattern {pattern!r} has a lookaround: an intersection or difference of "
            "languages, with no regex text (pattern_node's AST holds it)",
        )
    return restricted_piece(
        node, min_length, max_length, what=f"pattern {pattern!r}", max_size=max_size
    )


def quoted_node(node: Node, min_length: int = 0, max_length: int | None = None) -> Node:
    """The AST of :func:`length_restricted`'s language, the length bound an
    intersection (no regex text: for pieces whose text is too big)."""
    if max_length is not None and max_length < min_length:
        return _VOID
    if min_length or max_length is not None:
        node = Intersect(node, repeat(_ANY, min_length, max_length))
    return seq(_QUOTE, encode_node(node), _QUOTE)


def length_restricted(
    node: Node,
    min_length: int = 0,
    max_length: int | None = None,
    *,
    what: str = "pattern",
    max_size: int = 20000,
) -> str:
    """Quoted canonical strings whose decoded content is in ``node``'s language
    and has ``min_length`` to ``max_length`` characters (``what`` names the
    source in errors: ``"pattern '...'"``, ``"format 'email'"``)."""
    return restricted_piece(node, min_length, max_length, what=what, max_size=max_size)[0]


def restricted_piece(
    node: Node,
    min_length: int = 0,
    max_length: int | None = None,
    *,
    what: str = "pattern",
    max_size: int = 20000,
) -> tuple[str, Node | None]:
    """:func:`length_restricted`'s text, and :func:`quoted_node`'s AST of the
    same language where the bound splits the length between variable-width
    items (``Σ*[A-Z]Σ*`` in 8 to 64 characters: one option per split, whose
    automaton the subset construction builds from exponentially many sets of
    options, past 100,000 states, where the intersection's has 1,768) and
    the bound counts up to ``_INTERSECTED_LENGTHS`` characters, else ``None``.
    The text is for engines that read regexes; the AST for the automata
    forms, which build the intersection's product."""
    if max_length is not None and max_length < min_length:
        return NOTHING_TEXT, None
    cut, intersection = node, None
    if min_length or max_length is not None:
        restrictor = _Restrictor(max(max_size // 8, 16))
        try:
            cut = restrictor.cut(node, min_length, max_length)
        except _NotExpressible:
            raise UnsupportedConstraint(
                _BACKEND,
                f"{what} with minLength/maxLength",
                f"its strings with {min_length} to "
                f"{max_length if max_length is not None else 'any'} characters: the length bound "
                "cuts through a repetition of variable-width items",
            ) from None
        except _TooBig:
            raise CompileLimitExceeded(
                "regex_size",
                max_size,
                None,
                f"{what} restricted to {min_length}..{max_length} characters",
            ) from None
        counted = min_length if max_length is None else max_length
        if restrictor.split and counted <= _INTERSECTED_LENGTHS:
            intersection = quoted_node(node, min_length, max_length)
    try:
        return _quoted(cut, max_size, what), intersection
    except RecursionError:
        raise CompileLimitExceeded("nesting", 0, None, f"{what} is nested too deeply") from None
