"""Regexes of the JSON texts of numbers under JSON Schema's numeric keywords.

``number_regex`` turns ``minimum``/``maximum`` (inclusive or exclusive),
``type: integer`` and ``multipleOf`` into a regex of exactly the JSON number
texts whose *exact decimal value* satisfies them; ``integer_regex`` is its
integer shorthand. Bounds and ``multipleOf`` are exact decimals: an ``int`` or
``decimal.Decimal`` as given, a ``float`` as the shortest decimal that reads
back as it (``Decimal(repr(x))``), so ``0.1`` is one tenth, not the binary
double nearest to it. An infinite float bound is no bound on its side
(``minimum=-inf``), or an empty range (``minimum=+inf``).

The texts (fixed conventions; the JSON grammar, RFC 8259 §6, minus what is
excluded here):

* A number is ``-?(?:0|[1-9][0-9]*)(?:\\.[0-9]+)?(?:[eE][+-]?[0-9]+)?``
  (``NUMBER``) when nothing restricts it.
* An integer is ``-?(?:0|[1-9][0-9]*)(?:\\.0+)?`` (``INTEGER``): JSON Schema
  counts ``3.0`` as an integer and Python's ``json.dumps(3.0)`` writes
  ``3.0``, so an integral value may carry a fraction of zeros. Integers never
  take an exponent.
* A number under any bound or ``multipleOf`` is written in plain decimal
  notation, ``-?(?:0|[1-9][0-9]*)(?:\\.[0-9]+)?``: no exponent. (Python
  writes ``1e-05`` and ``1e+16`` for very small and very large floats; those
  texts are outside the language.) Within plain decimal notation the regex is
  exact: trailing zeros (``10.000``) are allowed wherever the value is.
* ``-0`` (and ``-0.0``…) is the value 0: allowed exactly when 0 is.

Values and multiples: ``multipleOf: q`` holds when ``value / q`` is an
integer, computed exactly. Supported (else ``UnsupportedConstraint``):

* ``q = 10**-d`` (``0.1``, ``0.01``, …, ``1``): at most ``d`` significant
  fraction digits (more digits only if zero), with any bounds.
* ``q = c * 10**-d`` (integral or not: ``2``, ``5``, ``16``, ``25``,
  ``2.5``, ``0.25``, ``0.0005``, ``1e300``, …) where ``c`` divides ``10**m``
  for an ``m >= d`` with ``10**m / c <= TAIL_LIMIT`` residues (so ``32`` and
  ``0.0005``, not ``64`` or ``0.00005``): the value's last ``m`` digits
  decide, with any bounds.
* Any ``q`` when the bounds leave at most ``ENUM_LIMIT`` multiples (each is
  listed, as a trie of digits).
* An integral ``q`` (or any ``q`` with ``integer``: its numerator in lowest
  terms) of at most 16 when the magnitudes are otherwise unbounded (no
  bounds, or bounds at 0 or within ``q`` of it, e.g. ``minimum: 0``): state
  elimination on the residue automaton, if the regex stays within
  ``max_size`` — ``multipleOf 3`` and ``6`` do at the default size,
  ``7``, ``9``, ``11``… raise ``CompileLimitExceeded``. (These regexes are
  meant for automata; Python ``re`` may backtrack heavily on them.)

With ``integer=True`` the multiples of ``q`` are the integers divisible by
the numerator of ``q`` in lowest terms (``2.5 = 5/2``: multiples of 5).

Every regex is portable — valid for Python ``re`` and for
``automata.parse_regex``: classes ``[0-9]``, counted repetitions and
non-capturing groups only (no ``\\d``, anchors, lookarounds or backrefs), and
self-contained (a top-level alternation is wrapped in ``(?:...)``), so it may
be concatenated or quantified. An empty set is ``NOTHING``, an empty class.
Nesting stays shallow whatever the bounds (runs of equal digits are counted,
past 16 nested groups a chain of digits is flattened), within what
``parse_regex`` can read.

Errors: ``UnsupportedConstraint("json_schema", "multipleOf <q>", reason)``
when a ``multipleOf`` cannot be expressed exactly;
``CompileLimitExceeded("regex_size", max_size, size, detail)`` when the regex
would exceed ``max_size`` characters, or a bound has more than 4000 digits;
``ConstraintError`` for a bound that is not a number (NaN, a string, a bool)
or a ``multipleOf`` that is not positive.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterable, Iterator
from contextvars import ContextVar
from decimal import Decimal
from fractions import Fraction

from ..automata.printer import group, is_atom
from ..errors import CompileLimitExceeded, ConstraintError, UnsupportedConstraint

__all__ = [
    "ENUM_LIMIT",
    "INTEGER",
    "NOTHING",
    "NUMBER",
    "TAIL_LIMIT",
    "fractional_regex",
    "integer_regex",
    "number_regex",
]

#: Any JSON integer text (an integral value, optionally with ``.0``…).
INTEGER = "-?(?:0|[1-9][0-9]*)(?:\\.0+)?"
#: Draft-03/04 integers: no fraction at all (``3.0`` is not one there).
INTEGER_NO_FRACTION = "-?(?:0|[1-9][0-9]*)"

#: Whether an integer may be spelled with ``.0…`` (draft 6 on) or not (draft 3/4).
_ZERO_FRACTION: ContextVar[bool] = ContextVar("zero_fraction", default=True)
#: Set while ``number_regex`` spells integers with no fraction at all.
_FRACTIONLESS: ContextVar[bool] = ContextVar("fractionless", default=False)


@contextlib.contextmanager
def integers_with_zero_fraction(allowed: bool) -> Iterator[None]:
    """Within the block, integers are spelled with an optional ``.0…`` or not
    (draft 4: "a JSON number without a fraction or exponent part")."""
    token = _ZERO_FRACTION.set(allowed)
    try:
        yield
    finally:
        _ZERO_FRACTION.reset(token)


def fractional_regex() -> str:
    """The number texts of values that are not integers: a fraction with a
    non-zero digit, in plain decimals (draft 6 on: ``3.0`` is an integer);
    under draft 3/4 (``integers_with_zero_fraction(False)``) any fraction or
    exponent."""
    if _ZERO_FRACTION.get():
        return "-?(?:0|[1-9][0-9]*)\\.[0-9]*[1-9][0-9]*"
    return "-?(?:0|[1-9][0-9]*)(?:\\.[0-9]+(?:[eE][+-]?[0-9]+)?|[eE][+-]?[0-9]+)"


#: Any JSON number text.
NUMBER = "-?(?:0|[1-9][0-9]*)(?:\\.[0-9]+)?(?:[eE][+-]?[0-9]+)?"
#: Matches nothing: an empty class (portable: Python ``re`` and the automata).
NOTHING = "[^\\x00-\\U0010ffff]"
#: Bounded ``multipleOf`` ranges with at most this many multiples are listed.
ENUM_LIMIT = 1000
#: ``multipleOf c·10**-d`` by its last ``m`` digits when ``10**m / c`` ≤ this.
TAIL_LIMIT = 5000
#: Residue automata larger than this are not tried (state elimination).
_ELIMINATION_LIMIT = 16
#: Numbers with more digits than this are refused (below Python's 4300).
_MAX_DIGITS = 4000

_BACKEND = "json_schema"

Bound = int | float | Decimal

# A fraction value (the digits after the point) as a pair: whether the empty
# digit string is in the set, and a regex of its non-empty strings (None: none).
_Tail = tuple[bool, str | None]


# ------------------------------------------------------------------ regex text


def _class(digits: Iterable[int]) -> str:
    """A character class of decimal digits, runs as ranges."""
    ds = sorted(set(digits))
    if len(ds) == 1:
        return str(ds[0])
    if ds == list(range(10)):
        return "[0-9]"
    parts: list[str] = []
    i = 0
    while i < len(ds):
        j = i
        while j + 1 < len(ds) and ds[j + 1] == ds[j] + 1:
            j += 1
        if j - i >= 2:
            parts.append(f"{ds[i]}-{ds[j]}")
        else:
            parts.extend(str(x) for x in ds[i : j + 1])
        i = j + 1
    return "[" + "".join(parts) + "]"


def _digits(text: str) -> str:
    """Literal digits, runs of 4 or more written ``d{n}``."""
    out: list[str] = []
    i = 0
    while i < len(text):
        j = i
        while j < len(text) and text[j] == text[i]:
            j += 1
        out.append(text[i] + f"{{{j - i}}}" if j - i >= 4 else text[i:j])
        i = j
    return "".join(out)


def _rep(atom: str, lo: int, hi: int | None) -> str:
    """``atom`` repeated ``lo`` to ``hi`` times (``hi=None``: unbounded)."""
    if hi is not None and hi == 0:
        return ""
    if hi == lo:
        return atom if lo == 1 else f"{group(atom)}{{{lo}}}"
    if hi is None:
        q = {0: "*", 1: "+"}.get(lo, f"{{{lo},}}")
    else:
        q = "?" if (lo, hi) == (0, 1) else f"{{{lo},{hi}}}"
    return group(atom) + q


def _alt(options: list[str]) -> str | None:
    """The alternation of ``options`` (None when there are none), self-contained."""
    seen: list[str] = []
    for option in options:
        for o in _alternatives(option):
            if o not in seen:
                seen.append(o)
    if not seen:
        return None
    if len(seen) == 1:
        return seen[0]
    return "(?:" + "|".join(seen) + ")"


def _alternatives(text: str) -> list[str]:
    """The top-level options of a group ``(?:a|b)``, else ``[text]``."""
    if not (text.startswith("(?:") and is_atom(text)):
        return [text]
    parts: list[str] = []
    depth = 0
    start = 3
    i = 3
    while i < len(text) - 1:
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if c == "[":
            i = text.index("]", i + 1) + 1
            continue
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif c == "|" and depth == 0:
            parts.append(text[start:i])
            start = i + 1
        i += 1
    if not parts:
        return [text]
    parts.append(text[start : len(text) - 1])
    return parts


def _opt(text: str) -> str:
    if text.endswith("+") and is_atom(text[:-1]):
        return text[:-1] + "*"
    return group(text) + "?"


def _cont(tail: _Tail) -> str | None:
    """The regex of a tail (None: the empty set)."""
    nullable, rest = tail
    if rest is None:
        return "" if nullable else None
    return _opt(rest) if nullable else rest


# -------------------------------------------------------------- exact values


def _fraction(x: Bound, name: str) -> Fraction | None:
    """``x`` as an exact rational; None for an infinite bound's 'no bound'."""
    if isinstance(x, bool) or not isinstance(x, int | float | Decimal):
        raise ConstraintError("json_schema", f"{name} must be a number, not {x!r}")
    if isinstance(x, int):
        return Fraction(x)
    d = Decimal(repr(x)) if isinstance(x, float) else x
    if d.is_nan():
        raise ConstraintError("json_schema", f"{name} must be a number, not NaN")
    if d.is_infinite():
        return None
    return Fraction(d)


def _split(x: Fraction) -> tuple[int, tuple[int, ...]]:
    """A non-negative decimal ``x`` as its integer part and fraction digits
    (trailing zeros removed)."""
    whole = math.floor(x)
    rest = x - whole
    if rest == 0:
        return whole, ()
    k = _decimal_places(rest)
    digits = str(rest.numerator * 10**k // rest.denominator).zfill(k).rstrip("0")
    return whole, tuple(int(c) for c in digits)


def _decimal_places(x: Fraction) -> int:
    """The number of fraction digits of the decimal ``x`` (its denominator is
    ``2**a * 5**b``)."""
    a, b, rest = _twos_and_fives(x.denominator)
    if rest != 1:  # pragma: no cover - inputs are decimals
        raise ValueError("not a decimal")
    return max(a, b)


def _twos_and_fives(n: int) -> tuple[int, int, int]:
    """``(a, b, r)`` with ``n = 2**a * 5**b * r`` and ``r`` prime to 10 (fast
    for huge ``n``: squared divisors)."""
    a = (n & -n).bit_length() - 1
    n >>= a
    b = 0
    while n % 5 == 0:
        p, k = 5, 1
        while n % (p * p) == 0:
            p, k = p * p, 2 * k
        n //= p
        b += k
    return a, b, n


def _power_of_ten_exponent(c: int) -> int | None:
    """The least ``m`` with ``c`` dividing ``10**m``, None if there is none."""
    a, b, rest = _twos_and_fives(c)
    return max(a, b) if rest == 1 else None


# ----------------------------------------------------------- integer ranges


def _chain(steps: list[tuple[str, str | None, bool]], end: _Tail) -> _Tail:
    """The language ``T_0`` of a chain ``T_i = [ε] | lit_i T_{i+1} | alt_i``
    (``steps[i] = (lit_i, alt_i, ε ∈ T_i)``, ``T_k = end``).

    Equal consecutive steps form a run, written once with a counted
    repetition (``0{0,5}[1-9][0-9]*``). Runs nest one group each; past 16 runs
    several are flattened into one group (their literal prefixes repeated),
    so a long bound never nests deeper than Python's parser allows."""
    runs: list[list] = []
    for lit, alt, null in steps:
        if runs and runs[-1][:3] == [lit, alt, null]:
            runs[-1][3] += 1
        else:
            runs.append([lit, alt, null, 1])
    per = max(1, -(-len(runs) // 16))
    tail = end
    for start in range(((len(runs) - 1) // per) * per, -1, -per):
        options: list[str] = []
        nullable = False
        prefix = ""
        for lit, alt, null, z in runs[start : start + per]:
            some = _rep(lit, 0, z - 1)
            if null and not prefix:  # ε is the chunk's nullability, not an option
                nullable = True
                if alt is not None:
                    options.append(some + alt)
                if z > 1:
                    options.append(_rep(lit, 1, z - 1))
            elif null:
                options.append(prefix + (some + _opt(alt) if alt is not None else some))
            elif alt is not None:
                options.append(prefix + some + alt)
            prefix += _rep(lit, z, z)
        rest = _cont(tail)
        if rest is not None:
            options.append(prefix + rest)
        tail = nullable, _alt(options)
    return tail


def _ge(digits: str) -> str:
    """Digit strings of ``len(digits)`` characters, ``>= digits``."""
    n = len(digits)
    end = len(digits.rstrip("0"))
    if end == 0:
        return _rep("[0-9]", n, n)
    steps = []
    for i in range(end - 1):
        d = int(digits[i])
        alt = None if d == 9 else _class(range(d + 1, 10)) + _rep("[0-9]", n - i - 1, n - i - 1)
        steps.append((str(d), alt, False))
    last = _class(range(int(digits[end - 1]), 10)) + _rep("[0-9]", n - end, n - end)
    out = _cont(_chain(steps, (False, last)))
    assert out is not None
    return out


def _le(digits: str) -> str:
    """Digit strings of ``len(digits)`` characters, ``<= digits``."""
    n = len(digits)
    end = len(digits.rstrip("9"))
    if end == 0:
        return _rep("[0-9]", n, n)
    steps = []
    for i in range(end - 1):
        d = int(digits[i])
        alt = None if d == 0 else _class(range(d)) + _rep("[0-9]", n - i - 1, n - i - 1)
        steps.append((str(d), alt, False))
    last = _class(range(int(digits[end - 1]) + 1)) + _rep("[0-9]", n - end, n - end)
    out = _cont(_chain(steps, (False, last)))
    assert out is not None
    return out


def _same_length(x: str, y: str) -> str:
    """Digit strings of the common length of ``x <= y`` between them."""
    i = 0
    while i < len(x) and x[i] == y[i]:
        i += 1
    if i == len(x):
        return _digits(x)
    prefix, xi, yi = x[:i], int(x[i]), int(y[i])
    xr, yr = x[i + 1 :], y[i + 1 :]
    free = len(xr)
    low_full = xr.strip("0") == ""
    high_full = yr.strip("9") == ""
    lo_d = xi if low_full else xi + 1
    hi_d = yi if high_full else yi - 1
    options: list[str] = []
    if not low_full:
        options.append(f"{xi}{_ge(xr)}")
    if lo_d <= hi_d:
        options.append(_class(list(range(lo_d, hi_d + 1))) + _rep("[0-9]", free, free))
    if not high_full:
        options.append(f"{yi}{_le(yr)}")
    body = _alt(options)
    assert body is not None
    return _digits(prefix) + body


def _int_range(lo: int, hi: int | None) -> str | None:
    """Canonical digit strings (``0`` or no leading zero) of ``lo..hi``."""
    if hi is not None and lo > hi:
        return None
    options: list[str] = []
    if lo == 0:
        options.append("0")
        lo = 1
        if hi is not None and hi < 1:
            return _alt(options)
    sl = str(lo)
    ll = len(sl)
    sh = str(hi) if hi is not None else None
    lh = len(sh) if sh is not None else None
    if lh == ll:
        assert sh is not None
        options.append(_same_length(sl, sh))
        return _alt(options)
    # lengths ll .. lh (lh > ll or unbounded)
    first_full = ll if lo == 10 ** (ll - 1) else ll + 1
    if first_full > ll:
        options.append(_same_length(sl, "9" * ll))
    if sh is None:
        options.append("[1-9]" + _rep("[0-9]", first_full - 1, None))
        return _alt(options)
    assert lh is not None
    last_full = lh if hi == 10**lh - 1 else lh - 1
    if first_full <= last_full:
        options.append("[1-9]" + _rep("[0-9]", first_full - 1, last_full - 1))
    if last_full < lh:
        options.append(_same_length("1" + "0" * (lh - 1), sh))
    return _alt(options)


# ---------------------------------------------------------- fraction digits


def _free(rem: int | None) -> _Tail:
    """Any fraction digits (only zeros after ``rem`` more digits)."""
    if rem is None:
        return True, "[0-9]+"
    if rem == 0:
        return True, "0+"
    return True, _rep("[0-9]", 1, rem) + "0*"


def _frac(
    lo: tuple[int, ...] | None,
    lo_ex: bool,
    hi: tuple[int, ...] | None,
    hi_ex: bool,
    rem: int | None,
) -> _Tail:
    """Digit strings ``s`` with ``0.s`` between ``0.lo`` and ``0.hi`` (None: no
    bound on that side; ``*_ex``: exclusive), only zeros after ``rem`` digits.

    Reading ``s`` digit by digit, a bound is *tight* while the digits so far
    equal its digits, else satisfied. Both bounds stay tight along their
    common prefix; where they part, one chain follows each bound."""
    if rem is not None and lo_ex and lo is not None:  # pragma: no cover
        raise AssertionError("exclusive bounds are normalized away on a grid")
    nlo = len(lo) if lo is not None else 0
    nhi = len(hi) if hi is not None else 0

    def free(i: int) -> str:
        out = _cont(_free(None if rem is None else rem - i))
        assert out is not None
        return out

    def lower(i: int) -> _Tail:  # lo tight from position i, hi satisfied
        assert lo is not None
        steps = []
        for j in range(i, nlo):
            alt = None if lo[j] == 9 else _class(range(lo[j] + 1, 10)) + free(j + 1)
            steps.append((str(lo[j]), alt, False))
        if lo_ex:  # the bound's digits exhausted: value > 0 needed
            end: _Tail = (False, "0*[1-9][0-9]*")
        else:
            end = _free(None if rem is None else rem - max(i, nlo))
        return _chain(steps, end)

    def upper(i: int) -> _Tail:  # hi tight from position i, lo satisfied
        assert hi is not None
        steps = []
        for j in range(i, nhi):
            alt = None if hi[j] == 0 else _class(range(hi[j])) + free(j + 1)
            steps.append((str(hi[j]), alt, True))
        return _chain(steps, (False, None) if hi_ex else (True, "0+"))

    if lo is None and hi is None:
        return _free(rem)
    if hi is None:
        return lower(0)
    if lo is None:
        return upper(0)
    depth = max(nlo, nhi)
    steps = []
    for i in range(depth):
        ld = lo[i] if i < nlo else 0
        hd = hi[i] if i < nhi else 0
        null = i >= nlo and not lo_ex  # stopping here: value 0.lo, or below it
        if ld == hd:
            steps.append((str(ld), None, null))
            continue
        assert ld < hd
        options = []
        first = ld + 1
        if i + 1 >= nlo and not lo_ex:  # ld then anything: as free as the digits above
            first = ld
        else:
            low = _cont(lower(i + 1))
            assert low is not None
            options.append(str(ld) + low)
        if hd > first:
            options.append(_class(range(first, hd)) + free(i + 1))
        up = _cont(upper(i + 1))
        if up is not None:
            options.append(str(hd) + up)
        return _chain(steps, (null, _alt(options)))
    # lo == hi: the single value
    ok = not lo_ex and not hi_ex
    return _chain(steps, (True, "0+") if ok else (False, None))


def _frac_text(tail: _Tail) -> str | None:
    """The optional ``.digits`` part of a text given its digit set."""
    nullable, rest = tail
    if rest is None:
        return "" if nullable else None
    body = "\\." + rest
    return _opt(body) if nullable else body


# --------------------------------------------------------- decimal intervals


def _magnitude_range(
    a: Fraction, a_ex: bool, b: Fraction | None, b_ex: bool, rem: int | None
) -> str | None:
    """Unsigned texts with value in the interval (``rem``: fraction digits
    after which only zeros may follow; None: any)."""
    any_frac = "" if rem == 0 and _FRACTIONLESS.get() else _frac_text(_free(rem))
    assert any_frac is not None
    if rem == 0:  # integers: the bounds are integral and inclusive here
        assert not a_ex and not b_ex
        ints = _int_range(int(a), None if b is None else int(b))
        return None if ints is None else ints + any_frac
    big_a, fa = _split(a)
    if b is not None:
        big_b, fb = _split(b)
        if big_a == big_b:
            f = _frac_text(_frac(fa, a_ex, fb, b_ex, rem))
            return None if f is None else _digits(str(big_a)) + f
    options: list[str] = []
    if not fa and not a_ex:
        mid_lo = big_a
    else:
        f = _frac_text(_frac(fa, a_ex, None, False, rem))
        if f is not None:
            options.append(_digits(str(big_a)) + f)
        mid_lo = big_a + 1
    ints = _int_range(mid_lo, None if b is None else big_b - 1)
    if ints is not None:
        options.append(ints + any_frac)
    if b is not None:
        f = _frac_text(_frac(None, False, fb, b_ex, rem))
        if f is not None:
            options.append(_digits(str(big_b)) + f)
    return _alt(options)


_Interval = tuple[Fraction, bool, Fraction | None, bool]


def _magnitudes(
    lo: Fraction | None, lo_ex: bool, hi: Fraction | None, hi_ex: bool
) -> tuple[_Interval | None, _Interval | None]:
    """The magnitude intervals of the non-negative and the negative texts
    (``-0`` counts as a negative text of magnitude 0); None when empty."""

    def clip(a: Fraction | None, a_ex: bool, b: Fraction | None, b_ex: bool) -> _Interval | None:
        if a is None or a < 0:
            a, a_ex = Fraction(0), False
        if b is not None and (b < a or (b == a and (a_ex or b_ex))):
            return None
        return a, a_ex, b, b_ex

    pos = clip(lo, lo_ex, hi, hi_ex)
    neg = clip(
        None if hi is None else -hi,
        hi_ex,
        None if lo is None else -lo,
        lo_ex,
    )
    return pos, neg


def _signed(pos: str | None, neg: str | None) -> str:
    if pos is None and neg is None:
        return NOTHING
    if pos is not None and pos == neg:
        return "-?" + pos
    options = []
    if pos is not None:
        options.append(pos)
    if neg is not None:
        options.append("-" + neg)
    out = _alt(options)
    assert out is not None
    return out


# ------------------------------------------------------------------ multiples


class _Trie:
    """Sequences of regex atoms (digits, ``\\.``, ``0*``, ``0+``) → a regex
    that shares prefixes and merges sibling digits with equal continuations
    into a class."""

    def __init__(self) -> None:
        self.root: dict = {}

    def add(self, atoms: list[str]) -> None:
        node = self.root
        for a in atoms:
            node = node.setdefault(a, {})
        node[None] = True

    def regex(self) -> _Tail:
        # iterative post-order: node id -> tail
        done: dict[int, _Tail] = {}
        stack: list[tuple[dict, bool]] = [(self.root, False)]
        while stack:
            node, expanded = stack.pop()
            if not expanded:
                stack.append((node, True))
                for key, child in node.items():
                    if key is not None:
                        stack.append((child, False))
                continue
            groups: dict[str, list[int]] = {}
            others: list[str] = []
            order: list[tuple[int, str]] = []
            for key, child in node.items():
                if key is None:
                    continue
                sub = _cont(done.pop(id(child)))
                assert sub is not None
                if len(key) == 1 and key.isdigit():
                    if sub not in groups:
                        groups[sub] = []
                        order.append((int(key), sub))
                    groups[sub].append(int(key))
                else:
                    others.append(key + sub)
            order.sort()
            options = [_class(groups[sub]) + sub for _, sub in order] + sorted(others)
            done[id(node)] = (None in node, _alt(options))
        return done[id(self.root)]


def _frac_atoms(frac: str) -> list[list[str]]:
    """The spellings of the fraction digits ``frac`` (exact, fixed length)."""
    f = frac.rstrip("0")
    if not f:
        return [[], ["\\.", "0+"]]
    return [["\\.", *f, "0*"]]


def _atoms(int_digits: str, frac: str, d: int) -> list[list[str]]:
    if d == 0:
        return [list(int_digits)]
    return [list(int_digits) + tail for tail in _frac_atoms(frac)]


def _full_atoms(w: int, d: int) -> list[list[str]]:
    """The texts of the magnitude ``w / 10**d`` as atom sequences."""
    if d == 0:
        return [list(str(w))]
    s = str(w).zfill(d + 1)
    return _atoms(s[:-d], s[-d:], d)


def _with_int_suffix(body: str | None, d: int) -> str | None:
    if body is None or d or _FRACTIONLESS.get():
        return body
    return body + "(?:\\.0+)?"


def _listed(a: int, b: int, c: int, d: int) -> str | None:
    """The multiples of ``c`` in ``[a, b]`` (scaled by ``10**d``), listed."""
    trie = _Trie()
    first = -(-a // c) * c
    for w in range(first, b + 1, c):
        for seq in _full_atoms(w, d):
            trie.add(seq)
    return _with_int_suffix(_cont(trie.regex()), d)


def _by_last_digits(a: int, b: int | None, c: int, d: int, m: int) -> str | None:
    """Multiples of ``c`` (``c | 10**m``, ``m >= d``) in ``[a, b]``: the value's
    last ``m`` digits are one of ``10**m / c`` residues."""
    big_m = 10**m
    residues = range(0, big_m, c)

    def tail(r: int) -> list[list[str]]:
        s = str(r).zfill(m)
        return _atoms(s[: m - d], s[m - d :], d)

    trie = _Trie()
    # values below 10**m: canonical texts, listed
    top = big_m - 1 if b is None else min(b, big_m - 1)
    first = -(-a // c) * c
    for w in range(first, top + 1, c):
        for seq in _full_atoms(w, d):
            trie.add(seq)
    options: list[str] = []
    if b is None or b >= big_m:
        hl, rl = divmod(max(a, big_m), big_m)
        hh, rh = (None, None) if b is None else divmod(b, big_m)
        if hh is not None and hh == hl:
            for r in residues:
                if rl <= r <= rh:  # type: ignore[operator]
                    for seq in tail(r):
                        trie.add(list(str(hl)) + seq)
        else:
            mid_lo = hl
            if rl:
                mid_lo = hl + 1
                for r in residues:
                    if r >= rl:
                        for seq in tail(r):
                            trie.add(list(str(hl)) + seq)
            mid_hi = None
            if hh is not None:
                mid_hi = hh - 1
                assert rh is not None
                if rh == big_m - 1:
                    mid_hi = hh
                else:
                    for r in residues:
                        if r <= rh:
                            for seq in tail(r):
                                trie.add(list(str(hh)) + seq)
            heads = _int_range(mid_lo, mid_hi)
            if heads is not None:
                tails = _Trie()
                for r in residues:
                    for seq in tail(r):
                        tails.add(seq)
                t = _cont(tails.regex())
                assert t is not None
                options.append(heads + t)
    listed = _cont(trie.regex()) if trie.root else None
    if listed is not None:
        options.insert(0, listed)
    return _with_int_suffix(_alt(options), d)


def _residue_regex(c: int, max_size: int) -> str:
    """Canonical non-zero digit strings divisible by ``c`` (state elimination
    on the residue automaton)."""
    start, final = "s", "f"
    edges: dict[object, dict[object, str]] = {start: {}}

    def add(p: object, q: object, label: str) -> None:
        row = edges.setdefault(p, {})
        if q not in row:
            row[q] = label
        elif "" in (row[q], label):
            other = row[q] or label
            row[q] = _opt(other) if other else ""
        else:
            row[q] = _alt([row[q], label])  # type: ignore[assignment]

    by_target: dict[int, list[int]] = {}
    for digit in range(1, 10):
        by_target.setdefault(digit % c, []).append(digit)
    for r, ds in by_target.items():
        add(start, r, _class(ds))
    for r in range(c):
        by_target = {}
        for digit in range(10):
            by_target.setdefault((10 * r + digit) % c, []).append(digit)
        for q, ds in by_target.items():
            add(r, q, _class(ds))
    add(0, final, "")
    pending = set(range(c))
    while pending:

        def cost(q: int) -> tuple[int, int]:
            ins = [p for p in edges if q in edges[p] and p != q]
            outs = [t for t in edges.get(q, {}) if t != q]
            return len(ins) * len(outs), q

        q = min(pending, key=cost)
        pending.discard(q)
        row = edges.pop(q, {})
        loop = row.pop(q, None)
        star = _rep(loop, 0, None) if loop else ""
        for p in list(edges):
            if q not in edges[p]:
                continue
            into = edges[p].pop(q)
            for t, out in row.items():
                label = into + star + out
                add(p, t, label)
                if len(edges[p][t]) > max_size:
                    raise CompileLimitExceeded(
                        "regex_size",
                        max_size,
                        None,
                        f"the digits of the multiples of {c} (state elimination)",
                    )
    out = edges[start].get(final)
    assert out is not None
    return out


def _multiples(
    lo: Fraction | None,
    lo_ex: bool,
    hi: Fraction | None,
    hi_ex: bool,
    c: int,
    d: int,
    construct: str,
    max_size: int,
) -> str:
    """Texts of the values ``w / 10**d`` with ``c | w`` in the bounds."""
    scale = 10**d
    wl = wh = None
    if lo is not None:
        s = lo * scale
        wl = math.floor(s) + 1 if (lo_ex and s.denominator == 1) else math.ceil(s)
    if hi is not None:
        s = hi * scale
        wh = math.ceil(s) - 1 if (hi_ex and s.denominator == 1) else math.floor(s)
    pos, neg = _magnitudes(
        None if wl is None else Fraction(wl), False, None if wh is None else Fraction(wh), False
    )
    m = _power_of_ten_exponent(c)
    if m is not None:
        m = max(m, d, 1)
        if 10**m // c > TAIL_LIMIT:
            m = None

    def side(interval) -> str | None:
        if interval is None:
            return None
        a, _, b, _ = interval
        a, b = int(a), None if b is None else int(b)
        candidates: list[str | None] = []
        if b is not None:
            count = b // c - (a - 1) // c
            if count == 0:
                return None
            if count <= ENUM_LIMIT and count * len(str(b)) <= 50 * max_size:
                candidates.append(_listed(a, b, c, d))
        if m is not None:
            candidates.append(_by_last_digits(a, b, c, d, m))
        elif b is None:
            if d != 0 or a > c or c > _ELIMINATION_LIMIT:
                raise UnsupportedConstraint(
                    _BACKEND,
                    construct,
                    "only with bounds that leave few multiples, or none but at 0",
                )
            body = _residue_regex(c, max_size)
            candidates.append(_with_int_suffix(_alt(["0", body]) if a == 0 else body, d))
        if not candidates:
            raise UnsupportedConstraint(
                _BACKEND,
                construct,
                f"more than {ENUM_LIMIT} multiples within the bounds",
            )
        found = [x for x in candidates if x is not None]
        return min(found, key=len) if found else None

    return _signed(side(pos), side(neg))


# ---------------------------------------------------------------------- API


def integer_regex(
    minimum: int | None = None, maximum: int | None = None, *, max_size: int = 20000
) -> str:
    """Regex of the JSON texts of integers n with minimum <= n <= maximum (None:
    unbounded on that side), including the ``.0+`` spellings and ``-0`` for 0."""
    return number_regex(minimum, maximum, integer=True, max_size=max_size)


def number_regex(
    minimum: Bound | None = None,
    maximum: Bound | None = None,
    *,
    exclusive_minimum: bool = False,
    exclusive_maximum: bool = False,
    integer: bool = False,
    multiple_of: Bound | None = None,
    max_size: int = 20000,
) -> str:
    """Regex of exactly the JSON number texts (see the module docstring for
    the language) whose value satisfies the bounds (``exclusive_*``: strict),
    is integral when ``integer``, and is a multiple of ``multiple_of``.

    Raises ``UnsupportedConstraint`` (construct ``"multipleOf <q>"``) for a
    ``multipleOf`` it cannot express, ``CompileLimitExceeded`` (``regex_size``)
    for a regex longer than ``max_size``.
    """
    token = _FRACTIONLESS.set(integer and not _ZERO_FRACTION.get())
    try:
        return _number_regex(
            minimum, maximum, exclusive_minimum, exclusive_maximum, integer, multiple_of, max_size
        )
    finally:
        _FRACTIONLESS.reset(token)


def _number_regex(
    minimum: Bound | None,
    maximum: Bound | None,
    exclusive_minimum: bool,
    exclusive_maximum: bool,
    integer: bool,
    multiple_of: Bound | None,
    max_size: int,
) -> str:
    lo = hi = None
    lo_ex, hi_ex = bool(exclusive_minimum), bool(exclusive_maximum)
    if minimum is not None:
        lo = _fraction(minimum, "minimum")
        if lo is None and minimum > 0:  # +inf
            return NOTHING
    if maximum is not None:
        hi = _fraction(maximum, "maximum")
        if hi is None and maximum < 0:  # -inf
            return NOTHING
    if lo is None:
        lo_ex = False
    if hi is None:
        hi_ex = False
    q = None
    if multiple_of is not None:
        q = _fraction(multiple_of, "multipleOf")
        if q is None or q <= 0:
            raise ConstraintError("json_schema", f"multipleOf must be > 0, not {multiple_of!r}")
    if lo is None and hi is None and q is None:
        if not integer:
            return NUMBER
        return INTEGER_NO_FRACTION if _FRACTIONLESS.get() else INTEGER
    _check_digits((q, lo, hi), max_size)

    # the grid the values lie on: multiples of c / 10**d
    if q is None:
        c, d = 1, (0 if integer else None)
    elif integer or q.denominator == 1:
        c, d = q.numerator, 0
    else:
        d = _decimal_places(q)
        c = int(q * 10**d)
    if lo is not None and hi is not None and (lo > hi or (lo == hi and (lo_ex or hi_ex))):
        return NOTHING

    if c == 1:
        if d is not None:  # normalize the bounds onto the grid, inclusive
            scale = 10**d
            if lo is not None:
                s = lo * scale
                w = math.floor(s) + 1 if (lo_ex and s.denominator == 1) else math.ceil(s)
                lo, lo_ex = Fraction(w, scale), False
            if hi is not None:
                s = hi * scale
                w = math.ceil(s) - 1 if (hi_ex and s.denominator == 1) else math.floor(s)
                hi, hi_ex = Fraction(w, scale), False
        pos, neg = _magnitudes(lo, lo_ex, hi, hi_ex)
        out = _signed(
            None if pos is None else _magnitude_range(*pos, d),
            None if neg is None else _magnitude_range(*neg, d),
        )
    else:
        assert d is not None
        construct = f"multipleOf {_show(multiple_of)}"
        out = _multiples(lo, lo_ex, hi, hi_ex, c, d, construct, max_size)
    if len(out) > max_size:
        raise CompileLimitExceeded(
            "regex_size", max_size, len(out), "the regex of a number's bounds/multipleOf"
        )
    return out


def _show(x: Bound | None) -> str:
    if isinstance(x, float):
        return repr(x)
    return str(x)


def _check_digits(values: tuple[Fraction | None, ...], max_size: int) -> None:
    """Refuse numbers with too many digits to write (Python's int-to-text
    conversion stops at 4300 digits; such bounds are not worth starting on)."""
    total_places = 0
    for x in values:
        if x is None:
            continue
        places = _decimal_places(x)
        total_places = max(total_places, places)
        digits = math.floor(abs(x)).bit_length() * 0.30103 + 1
        if digits + total_places > _MAX_DIGITS:
            raise CompileLimitExceeded(
                "regex_size",
                max_size,
                None,
                f"a bound or multipleOf with about {int(digits)} digits and {places} places",
            )
