"""Regex AST → portable regex text (the inverse of ``parse_regex``).

``to_regex(node)`` prints a tree of ``CharSet``/``Literal``/``Seq``/``Alt``/
``Repeat``/``Empty`` nodes as pattern text with exactly the node's language,
in the *portable dialect*: text that Python ``re`` (``re.fullmatch``) and
``parse_regex`` read the same way, and that stays correct when concatenated
with other such texts. The dialect:

* only non-capturing groups ``(?:...)``; no ``\\d``/``\\w``/``\\s``/``\\b``, no
  anchors, lookarounds, backreferences or inline flags; the quantifiers
  ``* + ? {n} {n,} {m,n}`` (greedy);
* characters: regex metacharacters ``\\ . ^ $ * + ? { } [ ] ( ) |`` are
  backslash-escaped (inside a class ``\\ ] [ ^ - & ~ |``, so no class ever
  reads as a nested set or set operation); ASCII control characters and
  U+007F are written ``\\xNN``; every other character, non-ASCII included, is
  written raw;
* character sets are classes ``[...]``, or ``[^...]`` when that is shorter
  (in UTF-8 bytes; on a tie).
  ``parse_regex`` never includes the surrogates U+D800–U+DFFF (they have no
  UTF-8 encoding) and reads ``[^...]`` as the complement *without* them, so
  the negated form always prints the same set; ranges are also printed
  across the surrogate gap (``\\ud7ff``/``\\ue000`` joined) where that is
  shorter, which changes nothing either;
* the empty set (a node that matches nothing) is ``[^\\x00-\\U0010ffff]``,
  the one non-raw escape, spelled like ``jsonschema.ir.NOTHING``;
* the result is self-contained: a top-level alternation is wrapped in
  ``(?:...)``, so texts can be concatenated; to quantify a text longer than
  one atom, wrap it in ``(?:...)`` first, as for any pattern.

Language-preserving simplifications happen on the way (parts that match
nothing are dropped, single-character options of an alternation merge into
one class, an empty option becomes ``?``), so ``parse_regex(to_regex(n))`` has
the language of ``n`` but need not be the same tree.

``Intersect``/``Difference`` (from lookarounds) have no portable spelling:
``UnsupportedConstraint("automata", "lookaround", ...)``.
"""

from __future__ import annotations

import functools

from ..errors import CompileLimitExceeded, UnsupportedConstraint
from .regex import (
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
    needs_pruning,
    repeat,
    seq,
)

__all__ = ["NOTHING_TEXT", "concatenable", "group", "is_atom", "to_regex"]

#: The text of the empty language (no string matches), as ``jsonschema.ir.NOTHING``.
NOTHING_TEXT = "[^\\x00-\\U0010ffff]"

_SUR_LO, _SUR_HI = 0xD800, 0xDFFF
_META = frozenset("\\.^$*+?{}[]()|")
_CLASS_META = frozenset("\\]^-[&~|")


def to_regex(node: Node) -> str:
    """Portable regex text with exactly the language of ``node`` (see the module docstring).

    Raises ``UnsupportedConstraint`` for ``Intersect``/``Difference`` nodes and
    ``CompileLimitExceeded`` (``limit="nesting"``) for a tree nested too deeply.
    """
    try:
        pruned = _prune(node)
        if pruned is None:
            return NOTHING_TEXT
        text, _kind = _print(pruned)
    except RecursionError:
        raise CompileLimitExceeded(
            "nesting", 0, None, "the regex AST is nested too deeply"
        ) from None
    return text


# ------------------------------------------------------------------ pruning


def _prune(node: Node) -> Node | None:
    """The node with the parts that match nothing removed; ``None`` if it matches nothing."""
    if not needs_pruning(node):
        return node
    if isinstance(node, CharSet):
        return None if node.is_empty() else node
    if isinstance(node, Literal | Empty):
        return node
    # (a node with nothing to remove is returned as it is: rebuilding it
    # would hash every subtree again)
    if isinstance(node, Seq):
        parts = []
        for p in node.parts:
            q = _prune(p)
            if q is None:
                return None
            parts.append(q)
        if all(q is p for q, p in zip(parts, node.parts, strict=True)):
            return node
        return seq(*parts)
    if isinstance(node, Alt):
        pruned = [_prune(o) for o in node.options]
        if all(q is o for q, o in zip(pruned, node.options, strict=True)):
            return node
        options = [q for q in pruned if q is not None]
        return alt(*options) if options else None
    if isinstance(node, Repeat):
        if node.max == 0:
            return Empty()
        inner = _prune(node.node)
        if inner is None:
            return Empty() if node.min == 0 else None
        return node if inner is node.node else repeat(inner, node.min, node.max)
    if isinstance(node, Intersect | Difference):
        raise UnsupportedConstraint(
            "automata",
            "lookaround",
            "an intersection or difference of languages (a lookaround's, or a JSON "
            "schema's pattern with a format or a length bound) has no portable regex spelling",
        )
    raise TypeError(f"not a regex AST node: {node!r}")


# ------------------------------------------------------------------ printing

# Kinds of printed text: "atom" can take a quantifier as is, "seq" can be
# concatenated but must be grouped before a quantifier, "empty" is "".


def _print(node: Node) -> tuple[str, str]:
    """``(text, kind)`` of a pruned node (kept on a composite node: the
    pieces every schema shares, a JSON string's characters, print once)."""
    kind = type(node)
    if kind is Seq or kind is Alt or kind is Repeat:
        found = node._printed
        if found is None:
            found = _print_new(node)
            object.__setattr__(node, "_printed", found)
        return found
    return _print_new(node)


def _print_new(node: Node) -> tuple[str, str]:
    if isinstance(node, Empty):
        return "", "empty"
    if isinstance(node, CharSet):
        return _charset(node), "atom"
    if isinstance(node, Literal):
        text = node.text.translate(_ESCAPES)
        return text, "atom" if len(node.text) == 1 else "seq"
    if isinstance(node, Seq):
        texts = [_print(p)[0] for p in node.parts]
        return "".join(texts), "seq"
    if isinstance(node, Repeat):
        return _repeat(node.node, node.min, node.max)
    if isinstance(node, Alt):
        return _alt(node.options)
    raise TypeError(f"not a regex AST node: {node!r}")


def _quantifier(lo: int, hi: int | None) -> str:
    if hi is None:
        return "*" if lo == 0 else "+" if lo == 1 else f"{{{lo},}}"
    if (lo, hi) == (0, 1):
        return "?"
    return f"{{{lo}}}" if lo == hi else f"{{{lo},{hi}}}"


def _repeat(inner: Node, lo: int, hi: int | None) -> tuple[str, str]:
    if isinstance(inner, Alt) and any(isinstance(o, Empty) for o in inner.options):
        # (ε|X){m,n} is X{0,n}
        rest = [o for o in inner.options if not isinstance(o, Empty)]
        return _repeat(alt(*rest), 0, hi) if rest else ("", "empty")
    text, kind = _print(inner)
    if kind == "empty":
        return "", "empty"
    if kind != "atom" or isinstance(inner, Repeat):
        text = f"(?:{text})"
    return text + _quantifier(lo, hi), "seq"


def _alt(options: tuple[Node, ...]) -> tuple[str, str]:
    optional = any(isinstance(o, Empty) for o in options)
    rest = [o for o in options if not isinstance(o, Empty)]
    # single characters of the alternation merge into one class (at the first one's place)
    chars = [o for o in rest if _single_char(o) is not None]
    if len(chars) > 1:
        merged = CharSet(tuple(r for o in chars for r in _single_char(o).ranges))  # type: ignore[union-attr]
        first = rest.index(chars[0])
        rest = [o for o in rest if _single_char(o) is None]
        rest.insert(first, merged)
    if not rest:
        return "", "empty"
    if optional:
        body = rest[0] if len(rest) == 1 else Alt(tuple(rest))
        if isinstance(body, Repeat) and body.min == 1:
            return _repeat(body.node, 0, body.max)
        if isinstance(body, Repeat) and body.min == 0:
            return _print(body)
        return _repeat(body, 0, 1)
    if len(rest) == 1:
        return _print(rest[0])
    texts = [_print(o)[0] for o in rest]
    return "(?:" + "|".join(texts) + ")", "atom"


def _single_char(node: Node) -> CharSet | None:
    if isinstance(node, CharSet):
        return node
    if isinstance(node, Literal) and len(node.text) == 1:
        return CharSet.of(node.text)
    return None


# ---------------------------------------------------------------- characters


def _char(c: int) -> str:
    """One character outside a class."""
    if c < 0x20 or c == 0x7F:
        return f"\\x{c:02x}"
    ch = chr(c)
    return "\\" + ch if ch in _META else ch


#: ``_char`` of every character it changes (for ``str.translate``).
_ESCAPES = {c: _char(c) for c in range(0x80) if _char(c) != chr(c)}


def _class_char(c: int) -> str:
    """One character inside a class."""
    if c < 0x20 or c == 0x7F:
        return f"\\x{c:02x}"
    ch = chr(c)
    return "\\" + ch if ch in _CLASS_META else ch


def _bridge(ranges: tuple[tuple[int, int], ...]) -> list[tuple[int, int]]:
    """Ranges with the surrogate gap closed (the surrogates are never matched anyway)."""
    out: list[tuple[int, int]] = []
    for lo, hi in ranges:
        if out and out[-1][1] == _SUR_LO - 1 and lo == _SUR_HI + 1:
            out[-1] = (out[-1][0], hi)
        else:
            out.append((lo, hi))
    return out


def _class_body(ranges: list[tuple[int, int]]) -> str:
    parts = []
    for lo, hi in ranges:
        if lo == hi:
            parts.append(_class_char(lo))
        elif hi == lo + 1:
            parts.append(_class_char(lo) + _class_char(hi))
        else:
            parts.append(_class_char(lo) + "-" + _class_char(hi))
    return "".join(parts)


@functools.lru_cache(maxsize=4096)
def _charset(cs: CharSet) -> str:
    ranges = cs.ranges
    if len(ranges) == 1 and ranges[0][0] == ranges[0][1]:
        return _char(ranges[0][0])
    positive = "[" + _class_body(_bridge(ranges)) + "]"
    complement = cs.complement().ranges
    if not complement:
        return positive
    negative = "[^" + _class_body(_bridge(complement)) + "]"
    return negative if _size(negative) <= _size(positive) else positive


def _size(text: str) -> int:
    return len(text.encode("utf-8"))


# ------------------------------------------------- helpers on portable text


def _scan(text: str) -> tuple[bool, bool]:
    """``(one group spans the whole text, an alternation is at top level)``."""
    depth = 0
    whole_group = text.startswith("(")
    top_alt = False
    i = 0
    while i < len(text):
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if c == "[":
            i += 1
            if i < len(text) and text[i] == "^":
                i += 1
            if i < len(text) and text[i] == "]":
                i += 1
            while i < len(text) and text[i] != "]":
                i += 2 if text[i] == "\\" else 1
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0 and i != len(text) - 1:
                whole_group = False
        elif c == "|" and depth == 0:
            top_alt = True
        i += 1
    return whole_group, top_alt


def is_atom(text: str) -> bool:
    """Whether a quantifier may follow portable ``text`` directly."""
    if len(text) == 1 or (len(text) == 2 and text[0] == "\\"):
        return True
    if text.startswith("["):
        return _class_end(text) == len(text)
    return text.startswith("(") and _scan(text)[0]


def _class_end(text: str) -> int:
    i = 1
    if i < len(text) and text[i] == "^":
        i += 1
    if i < len(text) and text[i] == "]":
        i += 1
    while i < len(text) and text[i] != "]":
        i += 2 if text[i] == "\\" else 1
    return i + 1


def group(text: str) -> str:
    """``text`` made safe to quantify."""
    return text if is_atom(text) else f"(?:{text})"


def concatenable(text: str) -> str:
    """``text`` made safe to concatenate (a top-level alternation wrapped)."""
    return f"(?:{text})" if _scan(text)[1] else text
