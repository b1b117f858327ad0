"""``jsonschema.numbers``: regexes of number texts, checked against an oracle.

Every case compiles the regex with Python ``re`` and with ``ByteDFA`` and
compares both, text by text, with a brute-force oracle that reads the text
with ``decimal.Decimal`` and tests the value exactly (``fractions.Fraction``).
"""

from __future__ import annotations

import itertools
import math
import re
from bisect import bisect_left, bisect_right
from decimal import Decimal
from fractions import Fraction

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from constrain_api.automata import ByteDFA, parse_regex
from constrain_api.errors import CompileLimitExceeded, ConstraintError, UnsupportedConstraint
from constrain_api.jsonschema.numbers import (
    INTEGER,
    NOTHING,
    NUMBER,
    integer_regex,
    number_regex,
)

PLAIN = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?")
JSON_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")

INVALID = [
    "",
    "-",
    "--1",
    "+1",
    "01",
    "-01",
    "00",
    "00.5",
    "1.",
    "-1.",
    ".5",
    "-.5",
    "1..0",
    " 1",
    "1 ",
    "0x10",
    "1e",
    "1e+",
    "1,0",
    "one",
]
EXPONENTS = ["1e2", "1E2", "1e+2", "1e-2", "-2.5e3", "0e0", "1.0e0", "5E-1", "1e-05", "1e+16"]


def exact(x) -> Fraction | None:
    if x is None:
        return None
    if isinstance(x, float):
        return Fraction(Decimal(repr(x)))
    return Fraction(x)


def oracle(text: str, kw: dict) -> bool:
    """Whether ``text`` is in the documented language of ``number_regex(**kw)``."""
    lo, hi = exact(kw.get("minimum")), exact(kw.get("maximum"))
    q = exact(kw.get("multiple_of"))
    integer = kw.get("integer", False)
    restricted = lo is not None or hi is not None or q is not None
    syntax = PLAIN if (restricted or integer) else JSON_NUMBER
    if not syntax.fullmatch(text):
        return False
    v = Fraction(Decimal(text))
    if integer and v.denominator != 1:
        return False
    if lo is not None and (v < lo or (kw.get("exclusive_minimum") and v == lo)):
        return False
    if hi is not None and (v > hi or (kw.get("exclusive_maximum") and v == hi)):
        return False
    return q is None or (v / q).denominator == 1


def fmt(k: int, places: int) -> str:
    """The text of ``k / 10**places`` with exactly ``places`` fraction digits."""
    sign = "-" if k < 0 else ""
    ip, fp = divmod(abs(k), 10**places)
    return f"{sign}{ip}" if places == 0 else f"{sign}{ip}.{fp:0{places}d}"


def candidates(*centers, spread: int = 4) -> set[str]:
    """Texts around the values ``centers``: integers, decimals with 1 to 3
    fraction digits, trailing zeros, ``-0``, and invalid texts."""
    out = set(INVALID) | set(EXPONENTS)
    out |= {"0", "-0", "0.0", "-0.0", "0.000", "-0.00", "0.5", "-0.5", "1", "-1", "0.01"}
    for c in {Fraction(0), *(Fraction(x) for x in centers if x is not None)}:
        for places in range(4):
            base = math.floor(c * 10**places)
            for k in range(base - spread, base + spread + 2):
                for t in (fmt(k, places), fmt(-k, places)):
                    out.add(t)
                    out.add(t + "0" if places else t + ".0")
                    if places:
                        out.add(t + "1")
                        out.add(t + "01")
                    else:
                        out.add(t + ".00")
    return out


def digit_edits(digits: str) -> set[str]:
    """``digits`` with a digit (0, 5 or 9) inserted or one dropped, anywhere."""
    inserted = {digits[:i] + d + digits[i:] for i in range(len(digits) + 1) for d in "059"}
    return inserted | {digits[:i] + digits[i + 1 :] for i in range(len(digits))}


def digit_neighbours(*centers) -> set[str]:
    """Texts that differ from each center's digits in one place, where a
    range's regex splits by digit position: one digit up or down with the
    digits after it all 0 or all 9 (or kept), a digit inserted or dropped
    (``digit_edits``), and the same with a fraction part; both signs."""
    out: set[str] = set()
    for c in centers:
        if c is None:
            continue
        text = f"{abs(Decimal(repr(c) if isinstance(c, float) else c)):f}"
        whole, _, frac = text.partition(".")
        digits = whole + frac
        variants = digit_edits(digits)
        for i, d in enumerate(digits):
            for e in {int(d) - 1, int(d) + 1} & set(range(10)):
                rest = digits[i + 1 :]
                for tail in (rest, "0" * len(rest), "9" * len(rest)):
                    variants.add(digits[:i] + str(e) + tail)
        for v in variants:
            if not v:
                continue
            for point in {len(whole), len(whole) - 1, len(whole) + 1, len(v)}:
                if 0 < point <= len(v):
                    head, tail = v[:point].lstrip("0") or "0", v[point:]
                    t = f"{head}.{tail}" if tail else head
                    out |= {t, f"-{t}"}
    return out


def check(kw: dict, texts: set[str] | None = None) -> str:
    regex = number_regex(**kw)
    re.compile(regex)
    parse_regex(regex)
    dfa = ByteDFA.from_regex(regex)
    if texts is None:
        texts = candidates(kw.get("minimum"), kw.get("maximum"), kw.get("multiple_of"))
        texts |= digit_neighbours(kw.get("minimum"), kw.get("maximum"))
    for t in sorted(texts):
        want = oracle(t, kw)
        assert bool(re.fullmatch(regex, t)) == want, (kw, t, want, regex)
        assert dfa.matches(t.encode()) == want, (kw, t, want, regex)
    # self-contained: safe to concatenate and to quantify
    wrapped = re.compile(f"\\[{regex}(?:,{regex})*\\]")
    good = [t for t in sorted(texts) if oracle(t, kw)][:3]
    if good:
        assert wrapped.fullmatch("[" + ",".join(good) + "]"), (kw, regex)
    return regex


def grid(kw: dict) -> None:
    """A check against every text in a systematic window."""
    check(kw)


# ------------------------------------------------------------------ constants


def test_constants_and_unbounded():
    assert number_regex() == NUMBER
    assert number_regex(integer=True) == INTEGER
    assert integer_regex() == INTEGER
    check({})
    check({"integer": True})
    for t in ["-0", "0", "3", "3.0", "3.000", "-12.0"]:
        assert re.fullmatch(INTEGER, t)
    for t in ["3.5", "1e2", "01", "3."]:
        assert not re.fullmatch(INTEGER, t)
    for t in ["1e2", "-0.5E-3", "0", "-0.0"]:
        assert re.fullmatch(NUMBER, t)


def test_nothing_matches_nothing():
    assert ByteDFA.from_regex(NOTHING).is_empty()
    assert re.fullmatch(NOTHING, "") is None
    assert number_regex(5, 4) == NOTHING
    assert number_regex(5, 5, exclusive_minimum=True) == NOTHING
    assert integer_regex(5, 4) == NOTHING
    assert number_regex(2.1, 2.9, integer=True) == NOTHING
    assert number_regex(1, 2, multiple_of=5) == NOTHING
    assert number_regex(float("inf")) == NOTHING
    assert number_regex(maximum=float("-inf")) == NOTHING
    assert number_regex(float("-inf"), float("inf")) == NUMBER  # no bound left
    check({"minimum": 2.1, "maximum": 2.9, "integer": True})


# --------------------------------------------------------------------- ranges


@pytest.mark.parametrize(
    "kw",
    [
        {"minimum": 0.5, "maximum": 10, "exclusive_minimum": True},
        {"minimum": 0, "maximum": 100, "integer": True},
        {"minimum": -17, "maximum": 123, "integer": True},
        {"minimum": 3, "exclusive_minimum": True, "integer": True},
        {"maximum": 3, "exclusive_maximum": True, "integer": True},
        {"minimum": 2.5, "integer": True},
        {"maximum": -2.5, "integer": True},
        {"minimum": -2.75, "maximum": 3.125},
        {"minimum": -2.75, "maximum": 3.125, "exclusive_minimum": True, "exclusive_maximum": True},
        {"minimum": 1.5, "maximum": 1.75},
        {"minimum": 1.25, "maximum": 1.5, "exclusive_maximum": True},
        {"minimum": 0.1, "maximum": 0.2},
        {"minimum": 0.105, "maximum": 0.109},
        {"minimum": 0, "exclusive_minimum": True},
        {"maximum": 0, "exclusive_maximum": True},
        {"minimum": 0},
        {"maximum": 0},
        {"minimum": -0.5},
        {"maximum": 99.99},
        {"minimum": -1000, "maximum": -999.5},
        {"minimum": -0.001, "maximum": 0.001},
        {"minimum": -0.001, "maximum": 0.001, "exclusive_minimum": True},
        {"minimum": 0, "maximum": 0},
        {"minimum": 0, "maximum": 0, "integer": True},
        {"minimum": 7, "maximum": 7},
        {"minimum": 7.25, "maximum": 7.25},
        {"minimum": -7.25, "maximum": -7.25},
        {"minimum": 9, "maximum": 10},
        {"minimum": 9.99, "maximum": 10.01},
        {"minimum": 99, "maximum": 1001, "integer": True},
        {"minimum": 1, "maximum": 1000000, "integer": True},
        {"minimum": 123456, "maximum": 987654, "integer": True},
        {"minimum": 120000, "maximum": 129999, "integer": True},
        {"minimum": 100, "maximum": 999, "integer": True},
        {"minimum": 10, "maximum": 100, "integer": True, "exclusive_maximum": True},
        {"minimum": Decimal("0.30"), "maximum": Decimal("0.3000")},
        {"minimum": Decimal("12.3456789"), "maximum": Decimal("12.3457")},
        # runs of equal digits in a bound (counted repetitions)
        {"minimum": Decimal("-12.23"), "maximum": 1.994, "exclusive_minimum": True},
        {"maximum": 0.9994},
        {"maximum": 0.9994, "exclusive_maximum": True},
        {"minimum": 0.0009, "maximum": 0.99},
        {"minimum": 0.0009, "exclusive_minimum": True},
        {"minimum": 99990, "maximum": 100009, "integer": True},
    ],
)
def test_ranges(kw):
    grid(kw)


def test_integer_regex():
    for lo, hi in [(0, 9), (-9, 9), (-5, -1), (None, 5), (5, None), (-10, None), (998, 1002)]:
        regex = integer_regex(lo, hi)
        assert regex == number_regex(lo, hi, integer=True)
        check({"minimum": lo, "maximum": hi, "integer": True})


def test_brief_example():
    r = number_regex(0.5, 10, exclusive_minimum=True)
    for t in ["0.50001", "10", "10.000", "3", "0.6", "9.999"]:
        assert re.fullmatch(r, t), t
    for t in ["0.5", "0.50", "10.001", "-0", "0", "1e1", "11"]:
        assert not re.fullmatch(r, t), t


def test_float_bounds_are_their_decimals():
    # 0.1 is one tenth, not the double nearest to it
    r = number_regex(0.1)
    assert re.fullmatch(r, "0.1")
    assert not re.fullmatch(r, "0.09999999999999999")
    r = number_regex(0.1, exclusive_minimum=True)
    assert not re.fullmatch(r, "0.1")
    assert re.fullmatch(r, "0.1000000000000000000001")


# -------------------------------------------------------------- huge bounds


def test_huge_bounds():
    big = 10**300
    texts = {
        "1" + "0" * 300,
        "9" * 300,
        "1" + "0" * 299 + "1",
        "1" + "0" * 300 + ".5",
        "-1" + "0" * 300,
        "0",
        "5",
    }
    check({"minimum": big}, texts)
    check({"minimum": big, "exclusive_minimum": True}, texts)
    check({"maximum": -big, "integer": True}, texts)
    check({"minimum": big + 1, "maximum": big + 10**150}, texts)
    texts = {
        "1" + "0" * 308,
        "1" + "0" * 308 + ".0",
        "1" + "0" * 308 + ".01",
        "1" + "0" * 309,
        "-1" + "0" * 308,
        "9" * 308,
        "0",
        "1e308",
    }
    r = check({"minimum": -1e308, "maximum": 1e308}, texts)
    assert len(r) < 200
    texts = {"0." + "0" * 323 + "5", "0." + "0" * 323 + "51", "0." + "0" * 322 + "1", "0", "1"}
    check({"minimum": 5e-324, "maximum": 1}, texts)
    check({"minimum": 5e-324, "maximum": 1, "exclusive_minimum": True}, texts)
    check({"minimum": -1, "maximum": -5e-324}, {"-" + t for t in texts} | texts)
    # a bound with many different digits stays within the parser's nesting
    digits = Decimal("0." + "1234567890" * 20)
    check(
        {"minimum": digits, "maximum": 1},
        {str(digits), str(digits) + "1", str(digits)[:-1], "0.2", "0.1"},
    )
    check({"minimum": 10**200 + 1}, {str(10**200 + 1), str(10**200), str(10**201)})


# ------------------------------------------------------------------ multipleOf


@pytest.mark.parametrize(
    "kw",
    [
        {"multiple_of": 1},
        {"multiple_of": 2},
        {"multiple_of": 5, "minimum": 0},
        {"multiple_of": 10, "minimum": -35, "maximum": 1234},
        {"multiple_of": 16},
        {"multiple_of": 16, "minimum": 100, "maximum": 100000},
        {"multiple_of": 25, "minimum": 13, "exclusive_minimum": True},
        {"multiple_of": 20, "maximum": 1000, "integer": True},
        {"multiple_of": 3},
        {"multiple_of": 3, "minimum": 0},
        {"multiple_of": 3, "minimum": 2, "integer": True},
        {"multiple_of": 3, "maximum": 0, "exclusive_maximum": True},
        {"multiple_of": 7, "minimum": -50, "maximum": 100},
        {"multiple_of": 11, "minimum": 1000, "maximum": 2000},
        {"multiple_of": 0.1},
        {"multiple_of": 0.01},
        {"multiple_of": 0.01, "minimum": 0, "maximum": 1.5},
        {"multiple_of": 0.01, "minimum": 0.005, "maximum": 0.125, "exclusive_maximum": True},
        {"multiple_of": 0.1, "minimum": -2.25, "exclusive_minimum": True},
        {"multiple_of": 0.5},
        {"multiple_of": 0.25},
        {"multiple_of": 0.25, "minimum": -3, "maximum": 4.3},
        {"multiple_of": 2.5, "minimum": -10, "maximum": 1000},
        {"multiple_of": 2.5, "minimum": 12.5, "exclusive_minimum": True},
        {"multiple_of": 0.3, "minimum": -1, "maximum": 2},
        {"multiple_of": 0.01, "integer": True, "minimum": -3.5, "maximum": 3.5},
        {"multiple_of": 2.5, "integer": True, "minimum": -20, "maximum": 20},
        {"multiple_of": 0.5, "integer": True},
        {"multiple_of": 1e300},
        {"multiple_of": 1e-5, "minimum": 0, "maximum": 0.001},
        {"multiple_of": Decimal("0.125"), "minimum": 0, "maximum": 3},
        {"multiple_of": 0.0005, "minimum": -0.01, "maximum": 0.0115},
        {"multiple_of": 0.001, "minimum": 0.0015, "maximum": 99.9995},
        {"multiple_of": 32, "minimum": -100, "maximum": 10**7},
        {"multiple_of": 6, "minimum": 0},
    ],
)
def test_multiple_of(kw):
    grid(kw)


def test_multiple_of_wide_window():
    """Every integer and two-place decimal in a window, against the oracle."""
    texts = {fmt(k, p) for k in range(-2100, 2101) for p in (0, 2)}
    texts |= {t + "0" for t in list(texts) if "." in t}
    texts = set(sorted(texts)[::3])
    for kw in [
        {"multiple_of": 16, "minimum": 0},
        {"multiple_of": 8, "maximum": 1999},
        {"multiple_of": 0.25, "minimum": -17.3},
        {"multiple_of": 0.04},
        {"multiple_of": 3, "minimum": 0},
        {"multiple_of": 6, "minimum": -1000, "maximum": 1000},
    ]:
        check(kw, texts)


# ---------------------------------------------------------------------- errors


def test_unsupported_multiple_of():
    with pytest.raises(UnsupportedConstraint) as e:
        number_regex(multiple_of=7, minimum=100)
    assert e.value.construct == "multipleOf 7"
    assert e.value.backend == "json_schema"
    with pytest.raises(UnsupportedConstraint) as e:
        number_regex(multiple_of=3, minimum=0, maximum=10**6)
    assert e.value.construct == "multipleOf 3"
    with pytest.raises(UnsupportedConstraint) as e:
        number_regex(multiple_of=0.3, minimum=0)
    assert e.value.construct == "multipleOf 0.3"
    with pytest.raises(UnsupportedConstraint) as e:
        number_regex(multiple_of=17)
    assert e.value.construct == "multipleOf 17"


def test_size_limits():
    with pytest.raises(CompileLimitExceeded) as e:
        number_regex(multiple_of=7)  # exact by state elimination, but too long
    assert e.value.limit == "regex_size"
    assert e.value.bound == 20000
    regex = number_regex(multiple_of=7, max_size=40000)
    check(
        {"multiple_of": 7, "max_size": 40000},
        {str(n) for n in range(-30, 200)} | {"7.0", "-0", "14.5"},
    )
    assert len(regex) <= 40000
    with pytest.raises(CompileLimitExceeded) as e:
        integer_regex(123456789, 987654321987, max_size=40)
    assert e.value.limit == "regex_size" and e.value.value is not None
    with pytest.raises(CompileLimitExceeded):
        number_regex(Decimal("1e-100000"), max_size=1000)


def test_malformed_arguments():
    with pytest.raises(ConstraintError):
        number_regex(multiple_of=0)
    with pytest.raises(ConstraintError):
        number_regex(multiple_of=-2)
    with pytest.raises(ConstraintError):
        number_regex(float("nan"))
    with pytest.raises(ConstraintError):
        number_regex("3")  # type: ignore[arg-type]
    with pytest.raises(ConstraintError):
        number_regex(True)  # type: ignore[arg-type]


# ------------------------------------------------------- exhaustive windows


def bisect(keys: list[int], bound: Fraction, right: bool) -> int:
    """Where ``bound`` goes in the sorted ``keys``: after its equals when ``right``."""
    return (bisect_right if right else bisect_left)(keys, bound)


def matched_in(regex: str, texts: list[str]) -> set[str]:
    """The texts ``regex`` matches whole: one scan of them joined by lines."""
    return {m.group(0) for m in re.finditer(f"(?m)^(?:{regex})$", "\n".join(texts))}


def test_every_integer_in_a_window():
    """Integer ranges between bounds whose digits meet each split a range's
    regex makes (a digit 0, 1 or 9 on either side, runs of 0s and 9s, one
    length to the next, either sign), against every integer text of a
    window around them: texts near a bound miss a wrong middle of the range,
    such as a digit class of one value dropped or a digit slot that takes
    one digit too few or too many."""
    lows = [None, -1205, -150, -1, 0, 1, 10, 101, 110, 199, 1000, 1050]
    highs = [None, -101, 0, 9, 99, 109, 150, 205, 999, 1150, 1205, 1999, 2000, 9099, 11150]
    numbers = set(range(-2100, 12001))
    for bound in lows + highs:  # (and a digit more or fewer anywhere: past the window)
        near = digit_edits(str(abs(bound or 0)))
        numbers |= {sign * int(t) for t in near if t for sign in (1, -1)}
    texts = [str(n) for n in sorted(numbers)]
    for lo in lows:
        for hi in highs:
            if lo is not None and hi is not None and lo > hi:
                continue
            want = {
                t for t in texts if (lo is None or int(t) >= lo) and (hi is None or int(t) <= hi)
            }
            assert matched_in(integer_regex(lo, hi), texts) == want, (lo, hi)


def test_every_decimal_in_a_window():
    """Bounds with fraction digits (a 0, 1, 5 or 9 in each place, values
    below one and past ten, either sign, inclusive and exclusive) against
    every decimal of up to three places in [-2.5, 2.5] and of up to two in
    [-120, 120]."""
    windows = [
        ([-1.25, -0.5, 0, 0.05, 0.1, 0.15, 0.205, 0.999, 1, 1.05, 1.25, 2.005], Fraction(5, 2), 3),
        ([-99.95, -10.5, 0, 0.5, 10.05, 99.95, 100.05, 110], Fraction(120), 2),
    ]
    for points, reach, places in windows:
        texts = [
            fmt(k, p)
            for p in range(places + 1)
            for k in range(-math.floor(reach * 10**p), math.floor(reach * 10**p) + 1)
        ]
        scale = 10**places  # (every value and bound an integer number of 10**-places)
        texts.sort(key=lambda t: Fraction(t))
        keys = [int(Fraction(t) * scale) for t in texts]
        for lo, hi in itertools.combinations([None, *points, None], 2):
            for lo_ex, hi_ex in itertools.product([False, True], repeat=2):
                start = 0 if lo is None else bisect(keys, exact(lo) * scale, lo_ex)
                end = len(keys) if hi is None else bisect(keys, exact(hi) * scale, not hi_ex)
                want = set(texts[start:end])
                kw = {
                    "minimum": lo,
                    "maximum": hi,
                    "exclusive_minimum": lo_ex,
                    "exclusive_maximum": hi_ex,
                }
                assert matched_in(number_regex(**kw), texts) == want, kw


# ------------------------------------------------------------------ hypothesis

decimals = st.builds(
    lambda n, p: Decimal(n).scaleb(-p),
    st.integers(-3000, 3000),
    st.integers(0, 3),
)
bounds = st.one_of(st.none(), st.integers(-1200, 1200), decimals, st.integers(-(10**7), 10**7))
multiples = st.sampled_from(
    [None, None, None, 1, 2, 3, 4, 5, 7, 10, 16, 25, 0.5, 0.1, 0.25, 0.01, 2.5, 0.3, 0.125]
)


@settings(
    max_examples=50,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    derandomize=True,
)
@given(
    lo=bounds,
    hi=bounds,
    lo_ex=st.booleans(),
    hi_ex=st.booleans(),
    integer=st.booleans(),
    q=multiples,
)
def test_random_bounds(lo, hi, lo_ex, hi_ex, integer, q):
    kw = {
        "minimum": lo,
        "maximum": hi,
        "exclusive_minimum": lo_ex,
        "exclusive_maximum": hi_ex,
        "integer": integer,
        "multiple_of": q,
    }
    try:
        number_regex(**kw)
    except UnsupportedConstraint as e:
        # only multiples that are not c·10**-d with c | 10**m, over a wide range
        assert q in (3, 7, 0.3), kw
        assert e.construct == f"multipleOf {q}"
        return
    except CompileLimitExceeded:
        assert q in (3, 7, 0.3), kw
        return
    check(kw, candidates(lo, hi, q, spread=3) | digit_neighbours(lo, hi))


def test_draft_4_integers_have_no_fraction():
    """Draft 4: "a JSON number without a fraction or exponent part" (3.0 is not
    one); from draft 6 on, 3.0 is an integer. ``type: number`` keeps 3.0."""
    from constrain_api import JsonSchema, lower_json_schema
    from constrain_api.automata import ByteDFA

    def accepts(schema, text):
        return ByteDFA.from_regex(lower_json_schema(JsonSchema(schema)).pattern).matches(text)

    draft4 = {"$schema": "http://json-schema.org/draft-04/schema#"}
    for bounds in ({}, {"minimum": 2, "maximum": 300}, {"multipleOf": 3}):
        assert accepts({**draft4, "type": "integer", **bounds}, b"3")
        assert not accepts({**draft4, "type": "integer", **bounds}, b"3.0")
        assert accepts({"type": "integer", **bounds}, b"3.0")
    assert accepts({**draft4, "type": "number", "multipleOf": 3}, b"3.0")
