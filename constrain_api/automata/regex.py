"""Regex patterns → a small public AST (the supported subset of Python ``re``).

``parse_regex(pattern)`` gives the language of ``re.fullmatch(pattern, text)``
(str patterns, default flags) over Unicode scalar values, as a tree of eight
node kinds:

* ``CharSet(ranges)`` — one character from a set of code points (sorted,
  merged, inclusive ranges; surrogates U+D800–U+DFFF never included, they
  have no UTF-8 encoding). ``CharSet(())`` matches nothing.
* ``Literal(text)`` — exactly ``text`` (non-empty, no surrogates). Runs of
  case-sensitive literal characters become one ``Literal``; a character that
  IGNORECASE makes match several code points becomes a ``CharSet`` instead.
* ``Seq(parts)`` — concatenation; ``Alt(options)`` — alternation;
  ``Repeat(node, min, max)`` — ``min`` to ``max`` copies (``max=None``:
  unbounded); ``Empty()`` — the empty string.
* ``Intersect(left, right)`` — the strings both match; ``Difference(left,
  right)`` — the strings ``left`` matches and ``right`` does not. Only
  lookarounds produce these two (see below); they are plain set operations
  on the languages (a finite-state toolkit translates them to its own
  intersection and difference).

The trees ``parse_regex`` returns are normalized by ``seq``/``alt``/``repeat``:
no nested ``Seq`` in ``Seq`` or ``Alt`` in ``Alt``, no one-part ``Seq``/``Alt``,
no ``Empty`` inside a ``Seq``, adjacent literals merged, no ``Repeat`` with
``max == 0`` or ``min == max == 1``.

Semantics, decided to match ``re.fullmatch`` exactly:

* ``\\d`` = ``str.isdecimal``, ``\\w`` = ``str.isalnum`` or ``_``, ``\\s`` =
  ``str.isspace`` (what sre uses for str patterns); ``(?a)`` gives the ASCII
  classes. ``.`` is any character but ``\\n`` (any character under ``(?s)``).
* ``^``/``\\A`` at the very start and ``$``/``\\Z`` at the very end are accepted
  and add nothing. (Python's ``$`` also matches before a final ``\\n``, but
  under a *full* match nothing can follow it, so ``re.fullmatch("a$", "a\\n")``
  is ``None`` too: there is no difference.) Anchors anywhere else raise
  ``UnsupportedConstraint``. ``(?m)`` is therefore harmless and accepted.
  Lookarounds are zero-width, so an anchor next to one still counts as at
  the start/end.
* Lazy quantifiers are their greedy forms (same language); groups of every
  kind only group. A literal lone surrogate (``"\\ud800"``) matches nothing:
  no valid UTF-8 text contains one. (Which quantifiers are lazy matters to a
  lexer, which takes ``re.match``'s match, not the full-match language:
  ``quantifier_modes`` reports it, and ``ByteDFA.shortest`` gives the
  shortest-match reading of an all-lazy pattern.)
* IGNORECASE (``(?i)``, ``(?i:...)``) reproduces sre exactly, quirks
  included: a character matches a literal when its simple lowercase is the
  literal's (plus sre's extra equivalences such as ``ſ``/``s``, ``K``/``k``);
  a class with a cased member is tested on the lowercase of the character
  (so categories inside such a class are too). One sre quirk is kept on
  purpose: a non-BMP *uppercase* literal inside a multi-member class, e.g.
  ``(?i)[𐐀x]``, matches neither 𐐀 nor 𐐨, exactly as ``re`` does. Large
  classes cost nothing extra (the case tables are scanned once per process).
* Not supported (``UnsupportedConstraint``, the construct named):
  backreferences, conditional groups, ``\\b``/``\\B``, possessive quantifiers
  and atomic groups (they can change the language, e.g. ``a*+a`` matches
  nothing), and the lookarounds the next section excludes.

Lookarounds ``(?=X)``, ``(?!X)``, ``(?<=X)``, ``(?<!X)`` are supported, exactly,
when ``X`` has a fixed width ``w`` (every string of ``X`` has ``w``
characters; Python itself demands it of lookbehinds) and contains no
lookaround, and when the text the assertion inspects is guaranteed to lie
inside the pattern's own match. The rule, on the *sequence* the assertion
sits in (its enclosing concatenation with nested groups flattened; the
option of an alternation, or the body of a repetition, is a sequence of its
own — nothing outside it counts, whatever follows it in the pattern):

* a lookbehind needs the part of the sequence before it to be at least ``w``
  characters long in every string (its minimum length ≥ ``w``), else
  ``UnsupportedConstraint`` "lookbehind at the start of a pattern (it
  inspects text before the match)";
* a lookahead needs the part of the sequence after it to have minimum
  length ≥ ``w``, else "lookahead at the end of a pattern (it inspects text
  after the match)".

A lookaround outside that rule would inspect text before or after the match
— in a lexer, the neighbouring token (``[?](?![a-z])``) — which no language
of the match alone expresses. ``whole_text=True`` (for a pattern matched
against a whole text, like ``re.fullmatch``) relaxes the rule where the
sequence starts at the very start (lookbehind) or ends at the very end
(lookahead) of the pattern, as for ``^``/``$``: the assertion then sees the
start/end of the text, exactly as ``re.fullmatch`` does (so
``a(?!b)`` is ``a`` and ``(?<=a)b`` matches nothing).

Translation: in the sequence ``A (?<!X) B``, with ``a`` ∈ ``A`` the text
before the assertion and ``b`` ∈ ``B`` the text after it, the assertion holds
when ``a`` does not end with a string of ``X`` (positive: does end with one);
``(?!X)`` when ``b`` does not start with one. Only the ``w`` characters next to
the assertion matter, so the assertion constrains a *window*: the shortest
run of the sequence's parts next to it that is surely ``w`` characters long,
or a shorter run when the parts beyond it spell fixed text (the window then
meets the assertion's condition together with that text, by Brzozowski
derivatives of ``X``). The window becomes ``Intersect(window, C)`` (positive)
or ``Difference(window, C)`` (negative) with ``C`` = ``Σ*·X`` for a lookbehind
(``X·Σ*`` for a lookahead), ``Σ`` = any character, plus the short strings the
fixed neighbouring text completes. Windows of several assertions must nest
(a window is widened where that helps); a lookahead and a later lookbehind
whose windows overlap without one containing the other, as in
``.(?=..).(?<=..).``, raise ``UnsupportedConstraint`` ("crossing
lookarounds"). A window of length 0 is decided while parsing.

Patterns are parsed by Python's own parser (``re._parser``), the reference
for exactly the dialect the ``Regex`` spec validates with; malformed patterns
raise ``ConstraintError("regex", message, where=position)``.
"""

from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, TypeAlias

import numpy as np

from ..caching import ContentCache, core_cache
from ..errors import ConstraintError, UnsupportedConstraint

__all__ = [
    "MAX_CODE_POINT",
    "Alt",
    "CharSet",
    "Difference",
    "Empty",
    "Intersect",
    "Literal",
    "Node",
    "Repeat",
    "Seq",
    "alt",
    "has_surrogate",
    "parse_regex",
    "quantifier_modes",
    "repeat",
    "seq",
]

#: The largest Unicode code point.
MAX_CODE_POINT = 0x10FFFF
_SUR_LO, _SUR_HI = 0xD800, 0xDFFF
#: a surrogate code point (no UTF-8 encoding)
_SURROGATE = re.compile("[\ud800-\udfff]")


def has_surrogate(text: str) -> bool:
    """Whether ``text`` holds a surrogate code point (it has no UTF-8)."""
    return _SURROGATE.search(text) is not None


_BACKEND = "automata"


# ------------------------------------------------------------------ CharSet


def _normalize(ranges: Iterable[tuple[int, int]]) -> tuple[tuple[int, int], ...]:
    """Sorted, merged, clipped to Unicode, surrogates cut out."""
    items = sorted((int(lo), int(hi)) for lo, hi in ranges)
    merged: list[list[int]] = []
    for lo, hi in items:
        lo = max(lo, 0)
        hi = min(hi, MAX_CODE_POINT)
        if lo > hi:
            continue
        if merged and lo <= merged[-1][1] + 1:
            if hi > merged[-1][1]:
                merged[-1][1] = hi
        else:
            merged.append([lo, hi])
    out: list[tuple[int, int]] = []
    for lo, hi in merged:
        if hi < _SUR_LO or lo > _SUR_HI:
            out.append((lo, hi))
            continue
        if lo < _SUR_LO:
            out.append((lo, _SUR_LO - 1))
        if hi > _SUR_HI:
            out.append((_SUR_HI + 1, hi))
    return tuple(out)


def _code(ch: str | int) -> int:
    if isinstance(ch, str):
        if len(ch) != 1:
            raise ValueError(f"expected one character, got {ch!r}")
        return ord(ch)
    return int(ch)


@dataclass(frozen=True, slots=True)
class CharSet:
    """One character from a set of Unicode scalar values.

    ``ranges`` are inclusive code-point ranges; any iterable of pairs is
    accepted and stored normalized (sorted, merged, clipped to
    0..U+10FFFF, surrogates removed), so equal sets compare equal.
    """

    ranges: tuple[tuple[int, int], ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "ranges", _normalize(self.ranges))

    @classmethod
    def of(cls, chars: Iterable[str | int]) -> CharSet:
        """The set of the given characters (a str, or characters/code points)."""
        codes = [_code(c) for c in chars]
        return cls(tuple((c, c) for c in codes))

    @classmethod
    def range(cls, lo: str | int, hi: str | int) -> CharSet:
        """The characters ``lo`` to ``hi`` inclusive (characters or code points)."""
        return cls(((_code(lo), _code(hi)),))

    @classmethod
    def any(cls, dotall: bool = True) -> CharSet:
        """Every scalar value (``dotall=False``: every one except ``\\n``, like ``.``)."""
        if dotall:
            return cls(((0, MAX_CODE_POINT),))
        return cls(((0, 9), (11, MAX_CODE_POINT)))

    def complement(self) -> CharSet:
        """Every scalar value not in this set."""
        out = []
        prev = 0
        for lo, hi in self.ranges:
            if lo > prev:
                out.append((prev, lo - 1))
            prev = hi + 1
        if prev <= MAX_CODE_POINT:
            out.append((prev, MAX_CODE_POINT))
        return CharSet(tuple(out))

    def union(self, *others: CharSet) -> CharSet:
        """The characters in this set or any of ``others``."""
        return CharSet(self.ranges + tuple(r for o in others for r in o.ranges))

    def intersection(self, other: CharSet) -> CharSet:
        """The characters in both sets."""
        return self.complement().union(other.complement()).complement()

    def difference(self, other: CharSet) -> CharSet:
        """The characters in this set and not in ``other``."""
        return self.intersection(other.complement())

    def is_empty(self) -> bool:
        """Whether the set has no character (the node then matches nothing)."""
        return not self.ranges

    def size(self) -> int:
        """The number of code points in the set."""
        return sum(hi - lo + 1 for lo, hi in self.ranges)

    def __contains__(self, ch: object) -> bool:
        if not isinstance(ch, str | int):
            return False
        c = _code(ch)
        i = bisect.bisect_right(self.ranges, (c, MAX_CODE_POINT + 1)) - 1
        return i >= 0 and self.ranges[i][0] <= c <= self.ranges[i][1]


@dataclass(frozen=True, slots=True)
class Literal:
    """Exactly the string ``text`` (non-empty, no surrogates)."""

    text: str

    def __post_init__(self) -> None:
        if not isinstance(self.text, str) or not self.text:
            raise ValueError("Literal needs a non-empty string")
        if has_surrogate(self.text):
            raise ValueError("Literal text contains a surrogate (no UTF-8 encoding)")


def _cached_hash(node: Any) -> int:
    """A composite node's hash, computed once: nodes are immutable, and
    constructors dedupe options by hashing whole subtrees (recomputed each
    time, that was quadratic in a big schema's regex)."""
    h = node._hash
    if h is None:
        h = hash((type(node), *(getattr(node, f) for f in node.__match_args__)))
        object.__setattr__(node, "_hash", h)
    return h


def _cached_hash_of(node: Any, value: Any) -> int:
    """``_cached_hash`` of a node whose one field holds ``value`` (the commonest
    composites: no generic walk over the fields)."""
    h = node._hash
    if h is None:
        h = hash((type(node), value))
        object.__setattr__(node, "_hash", h)
    return h


@dataclass(frozen=True, slots=True)
class Seq:
    """The concatenation of ``parts`` (a tuple of nodes)."""

    parts: tuple[Node, ...]

    _hash: int | None = field(default=None, init=False, repr=False, compare=False)
    _traits: int | None = field(default=None, init=False, repr=False, compare=False)
    _printed: tuple[str, str] | None = field(default=None, init=False, repr=False, compare=False)

    def __hash__(self) -> int:
        return _cached_hash_of(self, self.parts)

    def __post_init__(self) -> None:
        if type(self.parts) is not tuple:  # (most callers pass one: no copy)
            object.__setattr__(self, "parts", tuple(self.parts))


@dataclass(frozen=True, slots=True)
class Alt:
    """Any one of ``options`` (a non-empty tuple of nodes)."""

    options: tuple[Node, ...]

    _hash: int | None = field(default=None, init=False, repr=False, compare=False)
    _traits: int | None = field(default=None, init=False, repr=False, compare=False)
    _printed: tuple[str, str] | None = field(default=None, init=False, repr=False, compare=False)

    def __hash__(self) -> int:
        return _cached_hash_of(self, self.options)

    def __post_init__(self) -> None:
        if type(self.options) is not tuple:
            object.__setattr__(self, "options", tuple(self.options))
        if not self.options:
            raise ValueError("Alt needs at least one option (CharSet(()) matches nothing)")


@dataclass(frozen=True, slots=True)
class Repeat:
    """``min`` to ``max`` copies of ``node`` (``max=None``: no upper bound)."""

    node: Node
    min: int
    max: int | None

    _hash: int | None = field(default=None, init=False, repr=False, compare=False)
    _traits: int | None = field(default=None, init=False, repr=False, compare=False)
    _printed: tuple[str, str] | None = field(default=None, init=False, repr=False, compare=False)

    def __hash__(self) -> int:
        return _cached_hash(self)

    def __post_init__(self) -> None:
        if self.min < 0 or (self.max is not None and self.max < self.min):
            raise ValueError(f"bad repeat bounds {{{self.min},{self.max}}}")


@dataclass(frozen=True, slots=True)
class Empty:
    """The empty string."""


@dataclass(frozen=True, slots=True)
class Intersect:
    """The strings both ``left`` and ``right`` match (from a positive lookaround)."""

    left: Node
    right: Node

    _hash: int | None = field(default=None, init=False, repr=False, compare=False)
    _traits: int | None = field(default=None, init=False, repr=False, compare=False)

    def __hash__(self) -> int:
        return _cached_hash(self)


@dataclass(frozen=True, slots=True)
class Difference:
    """The strings ``left`` matches and ``right`` does not (from a negative lookaround)."""

    left: Node
    right: Node

    _hash: int | None = field(default=None, init=False, repr=False, compare=False)
    _traits: int | None = field(default=None, init=False, repr=False, compare=False)

    def __hash__(self) -> int:
        return _cached_hash(self)


#: A node of the regex AST.
Node: TypeAlias = CharSet | Literal | Seq | Alt | Repeat | Empty | Intersect | Difference


def seq(*parts: Node) -> Node:
    """Normalized concatenation: flattened, ``Empty`` dropped, literals merged."""
    out: list[Node] = []
    run: list[Literal] = []  # the literals met last, merged when their run ends
    for part in parts:
        for p in part.parts if isinstance(part, Seq) else (part,):
            if isinstance(p, Literal):
                run.append(p)
            elif not isinstance(p, Empty):
                if run:
                    out.append(_merged(run))
                    run = []
                out.append(p)
    if run:
        out.append(_merged(run))
    if not out:
        return Empty()
    return out[0] if len(out) == 1 else Seq(tuple(out))


def _merged(run: list[Literal]) -> Literal:
    """One ``Literal`` of a run of literals (their texts are checked already)."""
    if len(run) == 1:
        return run[0]
    merged = object.__new__(Literal)
    object.__setattr__(merged, "text", "".join(p.text for p in run))
    return merged


def alt(*options: Node) -> Node:
    """Normalized alternation: flattened, exact duplicates dropped (order kept)."""
    out: dict[Node, None] = {}
    for option in options:
        for o in option.options if isinstance(option, Alt) else (option,):
            out.setdefault(o)
    if not out:
        return CharSet(())
    items = tuple(out)
    return items[0] if len(items) == 1 else Alt(items)


def repeat(node: Node, min: int, max: int | None) -> Node:
    """Normalized ``Repeat``: ``{0,0}`` is ``Empty()``, ``{1,1}`` the node itself."""
    if max == 0 or isinstance(node, Empty):
        return Empty()
    if min == 1 and max == 1:
        return node
    return Repeat(node, min, max)


# ------------------------------------------------- language helpers (lookarounds)

_VOID = CharSet(())
#: Any string: ``Σ*`` (Σ = every scalar value).
_SIGMA_STAR = Repeat(CharSet(((0, MAX_CODE_POINT),)), 0, None)


#: ``_traits`` bits (``_PRUNABLE``: an empty class or a ``{0}`` repeat is inside).
_IS_VOID, _HAS_LOOKAROUND, _NULLABLE, _PRUNABLE = 1, 2, 4, 8


def _traits(node: Node) -> int:
    """``is_void``, ``has_lookaround``, ``nullable`` and ``needs_pruning`` of ``node`` as bits,
    decided once per composite node and kept on it (nodes are immutable; a
    subtree shared by many trees, or many times by one, is decided once)."""
    kind = type(node)
    if kind is CharSet:
        return 0 if node.ranges else _IS_VOID | _PRUNABLE
    if kind is Literal:
        return 0
    if kind is Empty:
        return _NULLABLE
    found = node._traits
    if found is not None:
        return found
    if kind is Seq:
        bits = _NULLABLE
        for part in node.parts:
            t = _traits(part)
            bits = (bits | (t & (_IS_VOID | _HAS_LOOKAROUND | _PRUNABLE))) & (t | ~_NULLABLE)
    elif kind is Alt:
        bits = _IS_VOID
        for option in node.options:
            t = _traits(option)
            bits = (bits | (t & (_HAS_LOOKAROUND | _NULLABLE | _PRUNABLE))) & (t | ~_IS_VOID)
    elif kind is Repeat:
        t = _traits(node.node)
        bits = t & (_HAS_LOOKAROUND | _PRUNABLE) | (_PRUNABLE if node.max == 0 else 0)
        if node.min == 0:
            bits |= _NULLABLE
        else:
            bits |= t & (_IS_VOID | _NULLABLE)
    elif kind is Intersect:
        left, right = _traits(node.left), _traits(node.right)
        bits = _HAS_LOOKAROUND | ((left | right) & _IS_VOID) | (left & right & _NULLABLE)
    elif kind is Difference:
        left, right = _traits(node.left), _traits(node.right)
        bits = _HAS_LOOKAROUND | (left & _IS_VOID) | (left & ~right & _NULLABLE)
    else:
        raise TypeError(f"not a regex AST node: {node!r}")
    object.__setattr__(node, "_traits", bits)
    return bits


def is_void(node: Node) -> bool:
    """Whether the node surely matches nothing (a sound, syntactic test;
    exact for a node with no ``Intersect``/``Difference``, see ``has_lookaround``)."""
    return bool(_traits(node) & _IS_VOID)


def has_lookaround(node: Node) -> bool:
    """Whether ``Intersect`` or ``Difference`` occurs in the node (where
    ``is_void`` is only sound: the language may be empty all the same)."""
    return bool(_traits(node) & _HAS_LOOKAROUND)


def nullable(node: Node) -> bool:
    """Whether the empty string is in the node's language."""
    return bool(_traits(node) & _NULLABLE)


def needs_pruning(node: Node) -> bool:
    """Whether an empty class, a ``{0}`` repeat or a lookaround is inside
    (else the printer prints the node as it is)."""
    return bool(_traits(node) & (_PRUNABLE | _HAS_LOOKAROUND))


def _lengths(node: Node) -> tuple[int, int | None]:
    """Bounds ``(min, max)`` on the lengths in characters (``None``: unbounded).

    Exact for the nodes lookarounds contain; for ``Intersect``/``Difference``
    a sound approximation (the minimum never overestimated).
    """
    if isinstance(node, CharSet):
        return 1, 1
    if isinstance(node, Literal):
        return len(node.text), len(node.text)
    if isinstance(node, Empty):
        return 0, 0
    if isinstance(node, Seq):
        lo, hi = 0, 0
        for p in node.parts:
            a, b = _lengths(p)
            lo += a
            hi = None if hi is None or b is None else hi + b
        return lo, hi
    if isinstance(node, Alt):
        bounds = [_lengths(o) for o in node.options]
        tops = [b for _, b in bounds]
        return min(a for a, _ in bounds), None if None in tops else max(tops)  # type: ignore[type-var]
    if isinstance(node, Repeat):
        if node.max == 0:
            return 0, 0
        a, b = _lengths(node.node)
        if b == 0:
            return 0, 0
        return a * node.min, None if b is None or node.max is None else b * node.max
    if isinstance(node, Intersect):
        (a1, b1), (a2, b2) = _lengths(node.left), _lengths(node.right)
        return max(a1, a2), b2 if b1 is None else b1 if b2 is None else min(b1, b2)
    if isinstance(node, Difference):
        return _lengths(node.left)
    raise TypeError(f"not a regex AST node: {node!r}")


def _fixed_text(node: Node) -> str | None:
    """The one string the node matches when it is syntactically fixed, else None."""
    if isinstance(node, Literal):
        return node.text
    if isinstance(node, Empty):
        return ""
    if isinstance(node, CharSet):
        if node.size() == 1:
            return chr(node.ranges[0][0])
        return None
    if isinstance(node, Seq):
        texts = [_fixed_text(p) for p in node.parts]
        return None if None in texts else "".join(texts)  # type: ignore[arg-type]
    if isinstance(node, Repeat) and node.min == node.max:
        text = _fixed_text(node.node)
        return None if text is None else text * node.min
    return None


def _derive(node: Node, ch: str, at_end: bool) -> Node:
    """Brzozowski derivative: ``{t : ch·t ∈ L}`` (``at_end``: ``{t : t·ch ∈ L}``)."""
    if isinstance(node, Empty):
        return _VOID
    if isinstance(node, CharSet):
        return Empty() if ch in node else _VOID
    if isinstance(node, Literal):
        text = node.text
        if (text[-1] if at_end else text[0]) != ch:
            return _VOID
        rest = text[:-1] if at_end else text[1:]
        return Literal(rest) if rest else Empty()
    if isinstance(node, Seq):
        if not node.parts:
            return _VOID
        if at_end:
            head, rest = node.parts[-1], seq(*node.parts[:-1])
        else:
            head, rest = node.parts[0], seq(*node.parts[1:])
        d = _derive(head, ch, at_end)
        options = [seq(rest, d) if at_end else seq(d, rest)]
        if nullable(head):
            options.append(_derive(rest, ch, at_end))
        return alt(*(o for o in options if not is_void(o)))
    if isinstance(node, Alt):
        ds = (_derive(o, ch, at_end) for o in node.options)
        return alt(*(d for d in ds if not is_void(d)))
    if isinstance(node, Repeat):
        if node.max == 0:
            return _VOID
        d = _derive(node.node, ch, at_end)
        if is_void(d):
            return _VOID
        rest = repeat(node.node, max(node.min - 1, 0), None if node.max is None else node.max - 1)
        return seq(rest, d) if at_end else seq(d, rest)
    if isinstance(node, Intersect):
        left, right = _derive(node.left, ch, at_end), _derive(node.right, ch, at_end)
        return _VOID if is_void(left) or is_void(right) else Intersect(left, right)
    if isinstance(node, Difference):
        left, right = _derive(node.left, ch, at_end), _derive(node.right, ch, at_end)
        if is_void(left) or is_void(right):
            return left
        return Difference(left, right)
    raise TypeError(f"not a regex AST node: {node!r}")


# ------------------------------------------- the only uses of CPython internals

_FLAG_I, _FLAG_M, _FLAG_S = re.IGNORECASE.value, re.MULTILINE.value, re.DOTALL.value
_FLAG_A, _FLAG_U = re.ASCII.value, re.UNICODE.value
_TYPE_FLAGS = _FLAG_A | _FLAG_U | re.LOCALE.value


def _sre_parse(pattern: str) -> tuple[list[Any], int]:
    """Parse with CPython's own regex parser; returns (items, global flags).

    ``re._parser`` is private, but it *is* the reference parser of the dialect
    the ``Regex`` spec validates with (``re.compile``), so using it means no
    second parser that could disagree with ``re``. This function is the only
    place that touches it; the tree comes back neutral: lists of ``[opname,
    value]`` with opcode names as strings and ``MAXREPEAT`` as ``None``.
    """
    import re._constants as sre_constants
    import re._parser as sre_parser

    named, maxrepeat = sre_constants._NamedIntConstant, sre_constants.MAXREPEAT
    sequences = (tuple, list, sre_parser.SubPattern)

    def neutral(value: Any) -> Any:
        kind = type(value)  # (exact types: a named constant is an int)
        if kind is int or kind is str:
            return value
        if kind is named:
            return None if value is maxrepeat else str(value)
        if kind in sequences:
            return [neutral(v) for v in value]
        return value

    try:
        tree = sre_parser.parse(pattern, 0)
    except re.error as e:
        raise ConstraintError("regex", e.msg, where=e.pos) from None
    except (OverflowError, ValueError) as e:
        raise ConstraintError("regex", str(e)) from None
    except RecursionError:
        raise ConstraintError("regex", "pattern is nested too deeply") from None
    try:
        return neutral(list(tree)), int(tree.state.flags)
    except RecursionError:
        raise ConstraintError("regex", "pattern is nested too deeply") from None


@dataclass(frozen=True)
class _Casing:
    """sre's case tables: simple lowercase, ``iscased``, extra equivalences."""

    lower_from: tuple[int, ...]  # sorted code points whose lowercase differs
    lower_to: tuple[int, ...]  # their lowercase
    cased: tuple[int, ...]  # sorted code points that are cased
    fixes: dict[int, tuple[int, ...]]
    upper_pairs: tuple[tuple[int, int], ...]  # (c, simple uppercase) where it differs

    def lower(self, c: int) -> int:
        i = bisect.bisect_left(self.lower_from, c)
        if i < len(self.lower_from) and self.lower_from[i] == c:
            return self.lower_to[i]
        return c

    def iscased(self, c: int) -> bool:
        i = bisect.bisect_left(self.cased, c)
        return i < len(self.cased) and self.cased[i] == c

    def any_cased(self, lo: int, hi: int) -> bool:
        i = bisect.bisect_left(self.cased, lo)
        return i < len(self.cased) and self.cased[i] <= hi


@functools.cache
def _sre_casing(ascii_only: bool) -> _Casing:
    """The case tables sre uses for IGNORECASE (unicode or ASCII mode).

    Like ``_sre_parse``, the only place that reads CPython internals for case
    folding (``_sre.unicode_tolower``/``unicode_iscased`` and
    ``re._casefix._EXTRA_CASES``): IGNORECASE is defined as whatever ``re``
    matches, and these are the exact tables ``re`` matches with.
    """
    if ascii_only:
        cased = tuple(list(range(65, 91)) + list(range(97, 123)))
        return _Casing(
            tuple(range(65, 91)), tuple(range(97, 123)), cased, {}, _simple_uppers(cased)
        )
    import _sre
    from re._casefix import _EXTRA_CASES

    cased = tuple(filter(_sre.unicode_iscased, range(MAX_CODE_POINT + 1)))
    pairs = [(c, _sre.unicode_tolower(c)) for c in cased]
    pairs = [(c, lo) for c, lo in pairs if lo != c]
    return _Casing(
        tuple(c for c, _ in pairs),
        tuple(lo for _, lo in pairs),
        cased,
        {k: tuple(v) for k, v in _EXTRA_CASES.items()},
        _simple_uppers(cased),
    )


def _simple_uppers(cased: tuple[int, ...]) -> tuple[tuple[int, int], ...]:
    # The simple (one-character) uppercase mapping sre's RANGE_UNI_IGNORE uses.
    # str.upper() is the full mapping; where that has several characters the
    # simple mapping is the titlecase when that is one character (Greek with
    # ypogegrammeni), else none (ß, ligatures).
    out = []
    for c in cased:
        ch = chr(c)
        up = ch.upper()
        if len(up) != 1:
            up = ch.title()
            if len(up) != 1:
                continue
        if ord(up) != c:
            out.append((c, ord(up)))
    return tuple(out)


# ------------------------------------------------------------ categories


@functools.cache
def _all_chars() -> str:
    cps = np.arange(MAX_CODE_POINT + 1, dtype="<u4")
    cps = cps[(cps < _SUR_LO) | (cps > _SUR_HI)]
    return cps.tobytes().decode("utf-32-le")


def _charset_of_str(chars: str) -> CharSet:
    cps = np.frombuffer(chars.encode("utf-32-le"), dtype="<u4").astype(np.int64)
    if cps.size == 0:
        return CharSet(())
    breaks = np.flatnonzero(np.diff(cps) != 1)
    starts = np.concatenate([[0], breaks + 1])
    ends = np.concatenate([breaks, [cps.size - 1]])
    return CharSet(tuple(zip(cps[starts].tolist(), cps[ends].tolist(), strict=True)))


@functools.cache
def _unicode_category(name: str) -> CharSet:
    if name == "DIGIT":
        return _charset_of_str("".join(filter(str.isdecimal, _all_chars())))
    if name == "WORD":
        return _charset_of_str("".join(filter(str.isalnum, _all_chars()))).union(CharSet.of("_"))
    if name == "SPACE":
        return _charset_of_str("".join(filter(str.isspace, _all_chars())))
    if name == "LINEBREAK":
        return CharSet.of("\n\x0b\x0c\r\x1c\x1d\x1e\x85\u2028\u2029")
    raise AssertionError(name)


_ASCII_CATEGORIES = {
    "DIGIT": CharSet.range("0", "9"),
    "WORD": CharSet(((48, 57), (65, 90), (95, 95), (97, 122))),
    "SPACE": CharSet.of(" \t\n\r\x0b\x0c"),
    "LINEBREAK": CharSet.of("\n"),
}


def _category(name: str, flags: int) -> CharSet:
    # name like "CATEGORY_NOT_DIGIT"
    base = name.removeprefix("CATEGORY_")
    negated = base.startswith("NOT_")
    base = base.removeprefix("NOT_")
    if base not in _ASCII_CATEGORIES:
        raise UnsupportedConstraint(_BACKEND, f"character category {name}")
    cs = _unicode_category(base) if flags & _FLAG_U else _ASCII_CATEGORIES[base]
    return cs.complement() if negated else cs


# ------------------------------------------------------------- conversion

_BEGIN = frozenset({"AT_BEGINNING", "AT_BEGINNING_STRING"})
_END = frozenset({"AT_END", "AT_END_STRING"})
_ANCHOR_NAMES = {
    "AT_BEGINNING": "^",
    "AT_BEGINNING_STRING": "\\A",
    "AT_END": "$",
    "AT_END_STRING": "\\Z",
}


def _combine_flags(flags: int, add: int, remove: int) -> int:
    # as sre's compiler: a type flag (a/u/L) added in a group replaces the others
    if add & _TYPE_FLAGS:
        flags &= ~_TYPE_FLAGS
    return (flags | add) & ~remove


def _is_begin(item: list[Any]) -> bool:
    return item[0] == "AT" and item[1] in _BEGIN


def _is_end(item: list[Any]) -> bool:
    return item[0] == "AT" and item[1] in _END


_ASSERTS = frozenset({"ASSERT", "ASSERT_NOT"})


def _look_name(behind: bool, negative: bool) -> str:
    if behind:
        return "negative lookbehind (?<!...)" if negative else "lookbehind (?<=...)"
    return "negative lookahead (?!...)" if negative else "lookahead (?=...)"


@dataclass
class _Look:
    """One lookaround of a sequence, and the window of parts it constrains."""

    behind: bool
    negative: bool
    x: Node  # the asserted pattern, all of its strings ``width`` characters long
    width: int
    boundary: int  # index (in the sequence's parts) of the first part after it
    lo: int = 0  # window: parts[lo:hi] (lookbehind: hi == boundary; lookahead: lo == boundary)
    hi: int = 0
    context: str | None = None  # fixed text next to the window, when the window is short

    @property
    def name(self) -> str:
        return _look_name(self.behind, self.negative)

    def condition(self) -> Node:
        """The window's strings that satisfy the positive assertion (see the module docstring)."""
        w, x = self.width, self.x
        options = [seq(_SIGMA_STAR, x) if self.behind else seq(x, _SIGMA_STAR)]
        ctx = self.context
        if ctx is not None:
            for k in range(w):  # window strings of k < w characters
                need = w - k
                if need > len(ctx):
                    continue  # (only at the start/end of the text: the assertion sees it)
                part = ctx[-need:] if self.behind else ctx[:need]
                d = x
                for ch in part if self.behind else reversed(part):
                    d = _derive(d, ch, at_end=not self.behind)
                options.append(d)
        return alt(*(o for o in options if not is_void(o)))

    def apply(self, node: Node) -> Node:
        """The window's node restricted by the assertion."""
        cond = self.condition()
        if is_void(cond):
            return node if self.negative else _VOID
        return Difference(node, cond) if self.negative else Intersect(node, cond)


class _Window:
    """Window placement for the lookarounds of one sequence of parts."""

    def __init__(self, parts: list[Node], at_start: bool, at_end: bool) -> None:
        self.parts = parts
        self.mins = [_lengths(p)[0] for p in parts]
        self.fixed = [_fixed_text(p) for p in parts]
        self.at_start, self.at_end = at_start, at_end

    def place(self, look: _Look, bound: int) -> bool:
        """Give ``look`` the smallest valid window reaching ``bound``; False if none.

        The window ``parts[j:b]`` of a lookbehind at ``b`` is valid when its
        minimum length plus the fixed text just before it covers the width
        (or that fixed text is everything before it and the sequence starts
        the text); mirrored for a lookahead. Validity is monotone in the
        window, so widening a valid window never fails.
        """
        w, b, n, fixed = look.width, look.boundary, len(self.parts), self.fixed
        if look.behind:
            for j in range(min(bound, b), -1, -1):
                m = sum(self.mins[j:b])
                tail, i = "", j - 1
                while i >= 0 and len(tail) < w and fixed[i] is not None:
                    tail = fixed[i] + tail  # type: ignore[operator]
                    i -= 1
                if m + len(tail) >= w or (i < 0 and self.at_start):
                    look.lo, look.hi = j, b
                    look.context = None if m >= w else tail[max(len(tail) - w, 0) :]
                    return True
            return False
        for j in range(max(bound, b), n + 1):
            m = sum(self.mins[b:j])
            head, i = "", j
            while i < n and len(head) < w and fixed[i] is not None:
                head += fixed[i]  # type: ignore[operator]
                i += 1
            if m + len(head) >= w or (i >= n and self.at_end):
                look.lo, look.hi = b, j
                look.context = None if m >= w else head[:w]
                return True
        return False


class _Converter:
    def __init__(self, whole_text: bool = False) -> None:
        self.whole_text = whole_text
        self.in_lookaround = False

    def flatten(self, items: list[Any], flags: int, out: list[Any]) -> list[Any]:
        """``(op, value, flags)`` of the items, groups opened (sequences flattened)."""
        for op, av in items:
            if op == "SUBPATTERN":
                _group, add, remove, sub = av
                self.flatten(sub, _combine_flags(flags, add, remove), out)
            else:
                out.append((op, av, flags))
        return out

    def seq(self, items: list[Any], flags: int, at_start: bool, at_end: bool) -> Node:
        flat = self.flatten(items, flags, [])
        n = len(flat)
        last_ok = [False] * n
        ok = at_end
        for i in range(n - 1, -1, -1):
            last_ok[i] = ok
            op, av, _ = flat[i]
            ok = ok and (op in _ASSERTS or _is_end([op, av]))
        parts: list[Node] = []
        looks: list[_Look] = []
        first_ok = at_start
        for i, (op, av, fl) in enumerate(flat):
            if op in _ASSERTS:
                looks.append(self.lookaround(op, av, fl, len(parts)))
            else:
                parts.append(self.item(op, av, fl, first_ok, last_ok[i]))
            first_ok = first_ok and (op in _ASSERTS or _is_begin([op, av]))
        if not looks:
            return seq(*parts)
        return self.resolve(parts, looks, at_start, at_end)

    def lookaround(self, op: str, av: Any, flags: int, boundary: int) -> _Look:
        direction, sub = av
        behind, negative = direction < 0, op == "ASSERT_NOT"
        name = _look_name(behind, negative)
        if self.in_lookaround:
            raise UnsupportedConstraint(_BACKEND, f"{name} inside a lookaround")
        self.in_lookaround = True
        try:
            x = self.seq(sub, flags, False, False)
        finally:
            self.in_lookaround = False
        lo, hi = _lengths(x)
        if hi != lo and behind:  # (re.compile says so too)
            raise ConstraintError("regex", "look-behind requires fixed-width pattern")
        if hi != lo:
            raise UnsupportedConstraint(
                _BACKEND,
                f"variable-width {name}",
                "every string of a lookaround's pattern must have the same length",
            )
        return _Look(behind, negative, x, lo, boundary)

    def resolve(self, parts: list[Node], looks: list[_Look], at_start: bool, at_end: bool) -> Node:
        """The sequence ``parts`` under the lookarounds (see the module docstring)."""
        win = _Window(parts, self.whole_text and at_start, self.whole_text and at_end)
        for look in looks:
            b, w = look.boundary, look.width
            if look.behind and not win.place(look, b):
                raise UnsupportedConstraint(
                    _BACKEND,
                    "lookbehind at the start of a pattern (it inspects text before the match)",
                    f"{look.name} of width {w} needs {w} character(s) before it inside "
                    f"the match, but the part before it can be {sum(win.mins[:b])} long",
                )
            if not look.behind and not win.place(look, b):
                raise UnsupportedConstraint(
                    _BACKEND,
                    "lookahead at the end of a pattern (it inspects text after the match)",
                    f"{look.name} of width {w} needs {w} character(s) after it inside "
                    f"the match, but the part after it can be {sum(win.mins[b:])} long",
                )
        active = []
        for look in looks:
            if look.lo < look.hi:
                active.append(look)
            elif nullable(look.condition()) == look.negative:
                return _VOID  # decided by fixed text: never holds
            # else: always holds, nothing to add
        # make the windows nest: widen one of two crossing windows
        changed = True
        while changed:
            changed = False
            for a in active:
                for c in active:
                    if not a.lo < c.lo < a.hi < c.hi:
                        continue
                    if c.behind:
                        placed = win.place(c, a.lo)
                    elif not a.behind:
                        placed = win.place(a, c.hi)
                    else:
                        raise UnsupportedConstraint(
                            _BACKEND,
                            "crossing lookarounds",
                            f"the {a.name} and the {c.name} inspect overlapping parts "
                            "of the pattern in a way this backend cannot combine",
                        )
                    assert placed  # widening a valid window keeps it valid
                    changed = True
                    break
                if changed:
                    break
        active.sort(key=lambda look: (look.lo, -look.hi))
        return self.nest(parts, 0, len(parts), active)

    def nest(self, parts: list[Node], lo: int, hi: int, looks: list[_Look]) -> Node:
        out: list[Node] = []
        pos, k = lo, 0
        while k < len(looks):
            top = looks[k]
            m = k + 1
            while m < len(looks) and looks[m].hi <= top.hi:
                m += 1
            same = [x for x in looks[k:m] if (x.lo, x.hi) == (top.lo, top.hi)]
            inner = [x for x in looks[k:m] if (x.lo, x.hi) != (top.lo, top.hi)]
            node = self.nest(parts, top.lo, top.hi, inner)
            for look in same:
                node = look.apply(node)
            out.extend(parts[pos : top.lo])
            out.append(node)
            pos, k = top.hi, m
        out.extend(parts[pos:hi])
        return seq(*out)

    def item(self, op: str, av: Any, flags: int, first: bool, last: bool) -> Node:
        if op == "LITERAL":
            cs = self.literal_set(av, flags)
            if cs.size() == 1 and cs.ranges[0][0] == av:
                return Literal(chr(av))
            return cs
        if op == "NOT_LITERAL":
            return self.literal_set(av, flags).complement()
        if op == "ANY":
            return CharSet.any(dotall=bool(flags & _FLAG_S))
        if op == "IN":
            return self.char_class(av, flags)
        if op == "CATEGORY":
            return self.char_class([["CATEGORY", av]], flags)
        if op == "BRANCH":
            return alt(*(self.seq(sub, flags, first, last) for sub in av[1]))
        if op == "SUBPATTERN":
            _group, add, remove, sub = av
            return self.seq(sub, _combine_flags(flags, add, remove), first, last)
        if op in ("MAX_REPEAT", "MIN_REPEAT"):
            lo, hi, sub = av
            return repeat(self.seq(sub, flags, False, False), lo, hi)
        if op == "POSSESSIVE_REPEAT":
            raise UnsupportedConstraint(
                _BACKEND,
                "possessive/atomic quantifier (*+, ++, ?+, {m,n}+)",
                "possessive repetition can change the language (a*+a matches nothing)",
            )
        if op == "ATOMIC_GROUP":
            raise UnsupportedConstraint(
                _BACKEND,
                "possessive/atomic group (?>...)",
                "an atomic group can change the language",
            )
        if op == "AT":
            return self.anchor(av, first, last)
        if op == "GROUPREF":
            raise UnsupportedConstraint(_BACKEND, f"backreference \\{av}", "not a regular language")
        if op == "GROUPREF_EXISTS":
            raise UnsupportedConstraint(_BACKEND, "conditional group (?(group)yes|no)")
        if op in _ASSERTS:  # (sequences take them out before; kept as a guard)
            raise UnsupportedConstraint(_BACKEND, _look_name(av[0] < 0, op == "ASSERT_NOT"))
        raise UnsupportedConstraint(_BACKEND, f"regex construct {op}")

    def anchor(self, at: str, first: bool, last: bool) -> Node:
        if at in _BEGIN:
            if first:
                return Empty()
            raise UnsupportedConstraint(
                _BACKEND, f"anchor {_ANCHOR_NAMES[at]} not at the start of the pattern"
            )
        if at in _END:
            if last:
                return Empty()
            raise UnsupportedConstraint(
                _BACKEND, f"anchor {_ANCHOR_NAMES[at]} not at the end of the pattern"
            )
        if at in ("AT_BOUNDARY", "AT_LOC_BOUNDARY", "AT_UNI_BOUNDARY"):
            raise UnsupportedConstraint(_BACKEND, "word boundary \\b")
        if at in ("AT_NON_BOUNDARY", "AT_LOC_NON_BOUNDARY", "AT_UNI_NON_BOUNDARY"):
            raise UnsupportedConstraint(_BACKEND, "non-boundary \\B")
        raise UnsupportedConstraint(_BACKEND, f"anchor {at}")

    # -- characters (sre's IGNORECASE semantics, see the module docstring)

    def literal_set(self, c: int, flags: int) -> CharSet:
        if not flags & _FLAG_I:
            return CharSet(((c, c),))
        casing = _sre_casing(not flags & _FLAG_U)
        if not casing.iscased(c):
            return CharSet(((c, c),))
        lo = casing.lower(c)
        ys = [(lo, lo)] + [(f, f) for f in casing.fixes.get(lo, ())]
        return _lower_preimage(CharSet(tuple(ys)), casing)

    def char_class(self, items: list[Any], flags: int) -> CharSet:
        if len(items) == 1 and items[0][0] == "CATEGORY":  # ``\d`` alone: its set as it is
            return _category(items[0][1], flags)
        casing = _sre_casing(not flags & _FLAG_U) if flags & _FLAG_I else None
        negate = False
        hascased = False
        parts: list[tuple[int, int]] = []
        for op, av in items:
            if op == "NEGATE":
                negate = True
            elif op == "CATEGORY":
                parts.extend(_category(av, flags).ranges)
            elif op in ("LITERAL", "RANGE"):
                a, b = (av, av) if op == "LITERAL" else av
                if casing is None:
                    parts.append((a, b))
                    continue
                # sre lowers the BMP part into its charmap (plus the extra
                # equivalences); a literal whose lowercase is outside the BMP
                # is kept as is, a range reaching past the BMP is also kept
                # whole and matched as "lower(ch) or upper(lower(ch)) in range".
                if op == "LITERAL":
                    if casing.iscased(a):
                        hascased = True
                    lo = casing.lower(a)
                    if lo <= 0xFFFF:
                        parts.append((lo, lo))
                        parts.extend((f, f) for f in casing.fixes.get(lo, ()))
                    else:
                        hascased = True
                        parts.append((a, a))
                    continue
                if a <= 0xFFFF:
                    top = min(b, 0xFFFF)
                    parts.extend(_lowered_range(a, top, casing))
                    if casing.any_cased(a, top):
                        hascased = True
                if b > 0xFFFF:
                    hascased = True
                    parts.append((a, b))
                    parts.extend((c, c) for c, up in casing.upper_pairs if a <= up <= b)
            else:
                raise UnsupportedConstraint(_BACKEND, f"character class item {op}")
        ys = CharSet(tuple(parts))
        result = _lower_preimage(ys, casing) if hascased and casing is not None else ys
        return result.complement() if negate else result


def _lowered_range(a: int, b: int, casing: _Casing) -> list[tuple[int, int]]:
    """{lower(x) : a <= x <= b} plus the extra equivalences of those."""
    i = bisect.bisect_left(casing.lower_from, a)
    j = bisect.bisect_right(casing.lower_from, b)
    out: list[tuple[int, int]] = []
    prev = a
    for k in range(i, j):
        x = casing.lower_from[k]
        if x > prev:
            out.append((prev, x - 1))
        out.append((casing.lower_to[k], casing.lower_to[k]))
        prev = x + 1
    if prev <= b:
        out.append((prev, b))
    lowered = CharSet(tuple(out))
    for key, values in casing.fixes.items():
        if key in lowered:
            out.extend((v, v) for v in values)
    return out


def _lower_preimage(ys: CharSet, casing: _Casing) -> CharSet:
    """{x : lower(x) in ys}."""
    moved = CharSet(tuple((x, x) for x in casing.lower_from))
    extra = [(x, x) for x, lo in zip(casing.lower_from, casing.lower_to, strict=True) if lo in ys]
    return ys.difference(moved).union(CharSet(tuple(extra)))


def parse_regex(pattern: str, *, whole_text: bool = False) -> Node:
    """The AST of ``pattern`` (full-match semantics of Python ``re``, str pattern, no flags).

    ``whole_text=True``: the pattern is matched against a whole text, never
    as a token among others, so a lookaround may also inspect the start/end
    of the match (it sees the start/end of the text, as in ``re.fullmatch``);
    see the module docstring.

    Raises ``ConstraintError`` for a malformed pattern (``where`` = position)
    and ``UnsupportedConstraint`` (backend ``"automata"``) for a construct
    outside the supported subset, naming it. Results are cached by the
    pattern (the core cache ``"parsed regexes"``; ASTs are immutable).
    """
    if not isinstance(pattern, str):
        raise ConstraintError("regex", f"pattern must be a str, got {type(pattern).__name__}")
    if _PLAIN_LITERAL.fullmatch(pattern):  # (a lowering's punctuation: ``\{``, ``:``, ``"name"``)
        return Literal(_ESCAPE.sub(r"\1", pattern))
    key = (pattern, whole_text)
    node = _PARSED.get(key)
    if node is None:
        items, flags = _sre_parse(pattern)
        try:
            node = _Converter(whole_text).seq(items, flags, True, True)
        except RecursionError:
            raise ConstraintError("regex", "pattern is nested too deeply") from None
        node = _PARSED.put(key, node)
    return node


#: A pattern that is one literal string: characters other than the
#: metacharacters and surrogates, and escaped ASCII punctuation, which
#: ``re`` reads as itself.
_PLAIN_LITERAL = re.compile(r"(?:[^\\.^$*+?{}\[\]|()\ud800-\udfff]|\\[!-/:-@\[-`{-~])+")
_ESCAPE = re.compile(r"\\(.)")

#: ``parse_regex`` results by (pattern, whole_text); bounded. 256: the
#: patterns schemas share are a few dozen, and every AST kept is objects each
#: full garbage collection walks (after 1,053 MaskBench schemas, 4096 held
#: 564 ASTs; with the non-empty pieces, a full collection 17 ms against 9 ms
#: at 256, hits the same).
_PARSED: ContentCache[Node] = core_cache("parsed regexes", ContentCache(256))


def quantifier_modes(pattern: str) -> frozenset[str]:
    """Which kinds of variable-count quantifiers ``pattern`` uses: a subset of
    ``{"lazy", "greedy"}``.

    ``*? +? ?? {m,n}?`` are ``"lazy"``, ``* + ? {m,n}`` ``"greedy"``
    (possessive ones too: they take the longest run); a fixed count ``{n}``
    or ``{n}?`` is neither. Read from Python's own parse tree, so escapes and
    classes are never mistaken for quantifiers. Quantifiers inside a
    lookaround are not counted (they do not decide where a match ends).
    Both kinds define the same full-match language; they matter to a lexer,
    which takes ``re.match``'s match: for an all-lazy pattern the shortest one
    (``ByteDFA.shortest``). Raises ``ConstraintError`` for a malformed pattern.
    """
    if not isinstance(pattern, str):
        raise ConstraintError("regex", f"pattern must be a str, got {type(pattern).__name__}")
    items, _flags = _sre_parse(pattern)
    modes: set[str] = set()

    def walk(items: list[Any]) -> None:
        for op, av in items:
            if op in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
                lo, hi, sub = av
                if lo != hi:
                    modes.add("lazy" if op == "MIN_REPEAT" else "greedy")
                walk(sub)
            elif op == "SUBPATTERN":
                walk(av[3])
            elif op == "BRANCH":
                for sub in av[1]:
                    walk(sub)
            elif op == "ATOMIC_GROUP":
                walk(av)
            elif op == "GROUPREF_EXISTS":
                walk(av[1])
                if av[2]:
                    walk(av[2])

    try:
        walk(items)
    except RecursionError:
        raise ConstraintError("regex", "pattern is nested too deeply") from None
    return frozenset(modes)
