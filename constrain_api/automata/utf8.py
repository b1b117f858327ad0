"""Sets of code points → sequences of byte ranges covering their UTF-8 encodings.

The classic range-splitting algorithm: a code-point range is cut at the
encoding-length boundaries (U+007F, U+07FF, U+FFFF) and then at the
boundaries of its continuation-byte blocks until every piece is a
"rectangle": a cross product of one byte range per position. Such a piece is
exactly the set of encodings of its code points, so the pieces together
describe the set byte by byte, without ever matching an invalid sequence
(surrogates, overlong forms, bytes F5–FF).
"""

from __future__ import annotations

from collections.abc import Iterable

from .regex import CharSet

__all__ = ["ByteRangeSeq", "utf8_sequences"]

#: One piece: a tuple of inclusive byte ranges, one per byte of the encoding.
ByteRangeSeq = tuple[tuple[int, int], ...]

_LENGTH_LIMITS = (0x7F, 0x7FF, 0xFFFF, 0x10FFFF)


def utf8_sequences(charset: CharSet | Iterable[tuple[int, int]]) -> list[ByteRangeSeq]:
    """Byte-range sequences whose union is exactly the UTF-8 encodings of ``charset``.

    ``charset`` is a ``CharSet`` or inclusive code-point ranges (normalized
    the same way: surrogates dropped). The sequences are disjoint and listed
    in code-point order (which is also byte order). Examples:
    U+0000–U+007F → ``[((0x00, 0x7F),)]``; U+0080–U+07FF →
    ``[((0xC2, 0xDF), (0x80, 0xBF))]``.
    """
    ranges = charset.ranges if isinstance(charset, CharSet) else CharSet(tuple(charset)).ranges
    out: list[ByteRangeSeq] = []
    for lo, hi in ranges:
        start = lo
        for n, limit in enumerate(_LENGTH_LIMITS, start=1):
            if start > hi:
                break
            if start > limit:
                continue
            end = min(hi, limit)
            _split(start, end, n, out)
            start = end + 1
    return out


def _split(lo: int, hi: int, n: int, out: list[ByteRangeSeq]) -> None:
    """Append the rectangles of [lo, hi] (all encoded with ``n`` bytes)."""
    stack = [(lo, hi)]
    pieces: list[tuple[int, int]] = []
    while stack:
        lo, hi = stack.pop()
        for i in range(1, n):
            mask = (1 << (6 * i)) - 1
            if lo & ~mask == hi & ~mask:
                continue
            if lo & mask:
                # the head up to the end of lo's block, then the rest
                stack.append(((lo | mask) + 1, hi))
                stack.append((lo, lo | mask))
                break
            if hi & mask != mask:
                stack.append((hi & ~mask, hi))
                stack.append((lo, (hi & ~mask) - 1))
                break
        else:
            pieces.append((lo, hi))
    for lo, hi in pieces:
        a = chr(lo).encode()
        b = chr(hi).encode()
        out.append(tuple(zip(a, b, strict=True)))
