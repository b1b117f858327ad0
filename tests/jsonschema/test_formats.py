"""constrain_api.jsonschema.formats: the ``format`` regexes, exact on the test suite and oracles.

Every supported format runs all string instances of the JSON Schema Test
Suite's ``optional/format/<name>.json`` (draft 2020-12): valid ones must
match, invalid ones must not, with no exceptions. Dates, times, IP addresses
and UUIDs are also checked against Python oracles (``calendar``,
``ipaddress``, arithmetic on offsets) on many generated strings.
"""

from __future__ import annotations

import calendar
import functools
import ipaddress
import json
import random
import re

import pytest
from jsonschema_harness import recognizer

import constrain_api as ca
from constrain_api.automata import ByteDFA
from constrain_api.errors import UnsupportedConstraint
from constrain_api.jsonschema import formats_as_patterns, lower_json_schema, lower_json_schema_ir
from constrain_api.jsonschema.formats import (
    FORMATS,
    UNSUPPORTED_FORMATS,
    format_pattern,
    format_piece,
    format_regex,
    format_source,
)
from constrain_api.jsonschema.lower import _format_piece
from constrain_api.shared import shared_file

#: Suite instances out of reach, with the reason: (format, data) → reason. None today.
EXPECTED_FAILURES: dict[tuple[str, str], str] = {}


@functools.cache
def dfa(name: str) -> ByteDFA:
    return ByteDFA.from_regex(FORMATS[name])


def matches(name: str, s: str) -> bool:
    return dfa(name).matches(json.dumps(s, ensure_ascii=False).encode())


def suite_dir():
    try:
        return shared_file("json-schema-test-suite/tests/draft2020-12/optional/format")
    except FileNotFoundError as e:
        pytest.skip(str(e))


@pytest.mark.shared
@pytest.mark.parametrize("name", sorted(FORMATS))
def test_suite(name: str) -> None:
    checked = 0
    for data, valid, description in suite_strings(name):
        if (name, data) in EXPECTED_FAILURES:
            assert matches(name, data) != valid, "expected failure now passes"
            continue
        assert matches(name, data) == valid, (name, data, description)
        checked += 1
    assert checked > 0


def suite_strings(name: str) -> list[tuple[str, bool, str]]:
    """The string instances of the suite's tests of format ``name``: (data, valid, description)."""
    path = suite_dir() / f"{name}.json"
    if not path.exists():
        pytest.skip(f"the suite has no {name}.json")
    with open(path, encoding="utf-8") as f:
        groups = json.load(f)
    found = []
    for group in groups:
        assert group["schema"].get("format") == name
        found += [(t["data"], t["valid"], t["description"]) for t in group["tests"]
                  if isinstance(t["data"], str)]  # fmt: skip
    return found


@pytest.mark.shared
@pytest.mark.parametrize("name", sorted(FORMATS))
def test_format_pattern_is_the_format(name: str) -> None:
    """``format_pattern`` (what engines with formats of their own are sent),
    read as a JSON Schema pattern by the core's lowering, matches the
    suite's valid strings and none of its invalid ones, as the format's own
    regex does (a ``$`` that let a final newline through, as Python's
    does, would fail the suite's ``...Z\\n``)."""
    spec = ca.JsonSchema({"type": "string", "pattern": format_pattern(name)})
    accepts = recognizer(lower_json_schema_ir(spec))
    extra = ["2023-02-29", "2024-02-29", "01:01:60Z", "23:59:60Z", "2024-01-01T01:03:60Z", "1"]
    for data in [s for s, _, _ in suite_strings(name)] + extra:
        text = json.dumps(data, ensure_ascii=False).encode()
        assert accepts(text) == matches(name, data), (name, data)


def test_formats_as_patterns_spells_out_each_format() -> None:
    date = format_pattern("date")
    schema = {
        "type": "object",
        "properties": {
            "format": {"type": "string", "format": "date"},  # a member called "format"
            "d": {"format": "date", "pattern": "^1", "allOf": [{"minLength": 1}]},
            "h": {"format": "hostname"},
            "i": {"type": "integer", "format": "int32"},
            "c": {"const": {"format": "date"}, "default": {"format": "time"}},
        },
        "$defs": {"t": {"format": "time"}},
        "components": {"e": {"enum": [{"format": "date"}], "format": "email"}},
    }
    before = json.dumps(schema)
    got = formats_as_patterns(schema)
    assert json.dumps(schema) == before  # (a copy)
    props = got["properties"]
    assert props["format"] == {"type": "string", "pattern": date}
    assert props["d"] == {"pattern": "^1", "allOf": [{"minLength": 1}, {"pattern": date}]}
    assert props["h"] == {"format": "hostname"}  # refused by the lowering: the engine's own
    assert props["i"] == {"type": "integer"}  # unknown: an annotation
    assert props["c"] == {"const": {"format": "date"}, "default": {"format": "time"}}
    assert got["$defs"]["t"] == {"pattern": format_pattern("time")}
    assert got["components"]["e"] == {
        "enum": [{"format": "date"}],
        "pattern": format_pattern("email"),
    }
    annotations = formats_as_patterns(schema, assert_formats=False)
    assert annotations["properties"]["format"] == {"type": "string"}
    assert annotations["properties"]["h"] == {}
    assert formats_as_patterns({"format": "date", "pattern": "a", "allOf": {}}) == {
        "format": "date", "pattern": "a", "allOf": {}}  # fmt: skip
    assert formats_as_patterns(True) is True
    with pytest.raises(UnsupportedConstraint):
        format_pattern("hostname")


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_regex_is_quoted_and_portable(name: str) -> None:
    rx = format_regex(name)
    assert rx == FORMATS[name]
    assert rx.startswith('"') and rx.endswith('"')
    py = re.compile(rx)
    assert not py.fullmatch('""') or name in ("uri-reference", "iri-reference", "json-pointer",
                                                "uri-template")  # fmt: skip
    # the decoded-content source agrees with the quoted, encoded regex
    source = re.compile(format_source(name))
    for s in ["", "a", "2020-02-29", "12:00:00Z", "::1", "1.2.3.4", 'a"b@c', "/a~0", "P1D",
              "http://x/", "0#"]:  # fmt: skip
        assert bool(source.fullmatch(s)) == matches(name, s), (name, s)


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_piece_ast_is_the_regex_language(name: str) -> None:
    """format_piece's AST (the lowering's piece takes it rather than parsing
    the text back) has the text's language, quotes included, and the
    lowering's piece for the format carries exactly that text and AST."""
    text, node = format_piece(name)
    assert text == format_regex(name)
    assert ByteDFA.from_node(node).same_language(ByteDFA.from_regex(text))
    piece = _format_piece(name)
    assert piece.text == text and piece.ast() == node


def test_unsupported_and_unknown_formats() -> None:
    assert "hostname" not in FORMATS
    for name in UNSUPPORTED_FORMATS:
        with pytest.raises(UnsupportedConstraint) as e:
            format_regex(name, where="/properties/h")
        assert e.value.construct == f"format {name!r}"
        assert "/properties/h" in e.value.reason
    with pytest.raises(UnsupportedConstraint) as e:
        format_regex("int32")
    assert e.value.backend == "json_schema"
    assert "unknown" in e.value.reason
    assert len(FORMATS) == len(list(FORMATS)) and "date" in FORMATS


# ------------------------------------------------------------------ dates


def days_in(year: int, month: int) -> int:
    return [31, 29 if calendar.isleap(year) else 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][
        month - 1
    ]


def test_dates_against_calendar() -> None:
    for year in [0, 4, 100, 400, 1582, 1900, 1996, 2000, 2004, 2020, 2021, 2100, 2400, 9999]:
        for month in range(0, 14):
            for day in range(0, 33):
                s = f"{year:04d}-{month:02d}-{day:02d}"
                expect = 1 <= month <= 12 and 1 <= day <= days_in(year, month)
                assert matches("date", s) == expect, s


def test_february_29_every_year() -> None:
    for year in range(10000):
        assert matches("date", f"{year:04d}-02-29") == calendar.isleap(year), year


# ------------------------------------------------------------------ times


def time_valid(hh: int, mm: int, ss: int, sign: str, oh: int, om: int) -> bool:
    if not (hh <= 23 and mm <= 59 and ss <= 60):
        return False
    if sign != "Z" and not (oh <= 23 and om <= 59):
        return False
    if ss < 60:
        return True
    if sign != "Z" and om % 15:
        return False  # the documented subset: leap seconds only at quarter-hour offsets
    offset = 0 if sign == "Z" else (oh * 60 + om) * (1 if sign == "+" else -1)
    return (hh * 60 + mm - offset) % 1440 == 23 * 60 + 59


def time_text(hh: int, mm: int, ss: int, frac: str, sign: str, oh: int, om: int) -> str:
    zone = "Z" if sign == "Z" else f"{sign}{oh:02d}:{om:02d}"
    return f"{hh:02d}:{mm:02d}:{ss:02d}{frac}{zone}"


def test_times_against_arithmetic() -> None:
    rng = random.Random(3)
    cases = []
    for _ in range(4000):
        cases.append((rng.randint(0, 24), rng.randint(0, 60), rng.choice([0, 30, 59, 60, 61]),
                      rng.choice(["", ".5", ".123456789"]), rng.choice("+-Z"),
                      rng.randint(0, 24), rng.randint(0, 60)))  # fmt: skip
    # every minute of the day with a leap second: the offsets that make it 23:59 UTC and one off
    for local in range(1440):
        hh, mm = divmod(local, 60)
        for sign, k in (("+", 1), ("-", -1)):
            off = ((local - 1439) * k) % 1440
            for delta in (0, 1):
                oh, om = divmod((off + delta) % 1440, 60)
                cases.append((hh, mm, 60, "", sign, oh, om))
    for hh, mm, ss, frac, sign, oh, om in cases:
        s = time_text(hh, mm, ss, frac, sign, oh, om)
        assert matches("time", s) == time_valid(hh, mm, ss, sign, oh, om), s


def test_date_time_combinations() -> None:
    assert matches("date-time", "2020-02-29T23:59:60Z")
    assert matches("date-time", "2021-12-31t00:14:60+00:15")
    assert not matches("date-time", "2021-12-31t00:19:60+00:20")  # outside the documented subset
    assert matches("date-time", "0000-01-01T00:00:00.0z")
    assert not matches("date-time", "2021-02-29T00:00:00Z")
    assert not matches("date-time", "2020-02-29 00:00:00Z")
    assert not matches("date-time", "2020-02-29T00:00:00")
    assert not matches("date-time", "2020-02-29T00:00:00.Z")


DURATIONS = {
    True: ["P1Y", "P1Y2M", "P1Y2M3D", "P1M", "P1M2D", "P3D", "PT1H", "PT1H2M", "PT1H2M3S",
           "PT2M", "PT2M3S", "PT3S", "P1W", "P1DT1S", "P1Y2M3DT4H5M6S", "P0D", "p1d", "P1dt2h",
           "P0012Y"],
    False: ["", "P", "PT", "P1", "P1Y2D", "PT1H2S", "P1W1D", "P1WT1H", "P1.5D", "PT1.5S",
            "P-1D", "1D", "P1D ", "P1YT", "P1D2Y", "PT1D", "P1H", "P1DT", "P1Y2M3D4H"],
}  # fmt: skip


@pytest.mark.parametrize("valid", [True, False])
def test_durations(valid: bool) -> None:
    for s in DURATIONS[valid]:
        assert matches("duration", s) == valid, s


# ------------------------------------------------------------ IP addresses and UUIDs


def test_ipv4_against_ipaddress() -> None:
    rng = random.Random(5)
    parts = ["0", "1", "9", "10", "99", "100", "199", "200", "249", "250", "255", "256", "300",
             "00", "01", "010", "001", "1000", "", "a", "-1"]  # fmt: skip
    for _ in range(5000):
        s = ".".join(rng.choice(parts) for _ in range(rng.choice([3, 4, 4, 4, 5])))
        try:
            ipaddress.IPv4Address(s)
            expect = True
        except ValueError:
            expect = False
        assert matches("ipv4", s) == expect, s


def random_ipv6(rng: random.Random) -> str:
    def group() -> str:
        return "".join(
            rng.choice("0123456789abcdefABCDEFg") for _ in range(rng.choice([1, 2, 4, 4, 5]))
        )

    n = rng.randint(0, 9)
    groups = [group() for _ in range(n)]
    if rng.random() < 0.3:
        groups.append(".".join(rng.choice(["1", "0", "255", "256", "01", "192"]) for _ in range(4)))
    if rng.random() < 0.6:
        i = rng.randint(0, len(groups))
        left, right = ":".join(groups[:i]), ":".join(groups[i:])
        return left + "::" + right + rng.choice(["", "", "", ":", "::"])
    return ":".join(groups)


def test_ipv6_against_ipaddress() -> None:
    rng = random.Random(11)
    for _ in range(8000):
        s = random_ipv6(rng)
        try:
            ipaddress.IPv6Address(s)
            expect = "%" not in s
        except ValueError:
            expect = False
        assert matches("ipv6", s) == expect, s
    for s in ["::", "::1", "1::", "1:2:3:4:5:6:7::", "::2:3:4:5:6:7:8", "1:2:3:4:5:6:1.2.3.4",
              "::1.2.3.4", "::ffff:1.2.3.4", "1::1.2.3.4", "FFFF::"]:  # fmt: skip
        assert matches("ipv6", s), s
    for s in ["1:2:3:4:5:6:7:8:9", "1::2::3", ":1::", "1:2:3:4:5:6:7:1.2.3.4", "::1.2.3",
              "fe80::1%eth0", "[::1]", "::01.2.3.4", "12345::"]:  # fmt: skip
        assert not matches("ipv6", s), s


def test_uuid() -> None:
    rng = random.Random(2)
    for _ in range(2000):
        lengths = [rng.choice([n, n, n - 1, n + 1]) for n in (8, 4, 4, 4, 12)]
        s = "-".join(
            "".join(rng.choice("0123456789abcdefABCDEF") for _ in range(k)) for k in lengths
        )
        assert matches("uuid", s) == (lengths == [8, 4, 4, 4, 12]), s
    assert not matches("uuid", "0" * 32)


# ------------------------------------------------------------------ e-mail, URIs

EMAILS = {
    True: ["a@b", "joe.bloggs@example.com", "!#$%&'*+-/=?^_`{|}~@x.y", '"a b"@c', '""@c',
           '"\\"\\\\"@c', "a@[1.2.3.4]", "a@[001.002.003.255]", "a@[IPv6:::1]", "a@[ipv6:1:2::3]",
           "a@[IPv6:1:2:3:4:5:6:7:8]", "a@[IPv6:1:2:3:4:5:6:1.2.3.4]", "a@[IPv6:::1.2.3.4]",
           "a@[IPv6:1:2::3:4:5:6]", "a@a-b.c-d", "a@1.2.3.4"],
    False: ["", "a", "@b", "a@", "a..b@c", ".a@b", "a.@b", "a b@c", "a@b..c", "a@-b", "a@b-",
            "a@b_c", '"a"b"@c', '"\x01"@c', "a@[256.1.1.1]", "a@[IPv6:1:2:3:4:5:6:7::]",
            "a@[IPv6:1:2:3:4:5:6:7:8:9]", "a@[IPv6:1:2:3:4:5::1.2.3.4]", "a@[tag:x]", "é@b",
            "a@b.", "a@[1.2.3]"],
}  # fmt: skip

URIS = {
    "uri": {
        True: ["a:", "a:b", "http://x", "http://x:80/p?q#f", "http://u:p@[::1]:8/", "urn:x:y",
               "http://[v7.a:b]/", "file:///etc", "x+y.z-w:p%20q", "http://x/%7e?%2F#%aA",
               "mailto:a@b", "http://x/a/../b", "tel:+1-2"],
        False: ["", "a", "/a", "//x", ":x", "1a:b", "a b:c", "http://x/%g0", "http://x/ä",
                "http://x:y/", "http://[::1/", "http://a b", "http://x/#a#b", "a:b\\c",
                "http://[v7.]/", "http://[::1]x/"],
    },
    "uri-reference": {
        True: ["", "a", "/a", "//x", "//", "?q", "#f", "./a:b", "a/b:c", "../x", "http://x",
               "//u@h:1/p"],
        False: ["a:b c", ":x", "1:b", "/a b", "#a#", "%", "/%1", "//a@b@c", "\\"],
    },
    "iri": {
        True: ["http://ƒøø.ßår/?∂é=π#ü", "urn:é", "http://x/?\U000f0000"],
        False: ["http://x/#\U000f0000", "âππ", "http://x/\ufffe"],
    },
    "iri-reference": {True: ["âππ", "/π", "#é"], False: ["#a\\b", "\x01"]},
    "json-pointer": {True: ["", "/", "//", "/a~0~1", "/\x00\"\\"], False: ["a", "/~", "/~2", "#"]},
    "relative-json-pointer": {
        True: ["0", "1/a", "0#", "10/~0", "2+1/a", "0-1", "3+0"],
        False: ["", "-1", "01", "0##", "0/~", "1#/a", "0+1#", "+1"],
    },
    "uri-template": {
        True: ["", "a{b}c", "{+a,b*,c:12}", "{%41.b}", "x'y"],
        False: ["{", "}", "{}", "{a,}", "{a b}", "{a:0}", "{a:10000}", "a b", "{a..b}"],
    },
}  # fmt: skip


@pytest.mark.parametrize("valid", [True, False])
def test_emails(valid: bool) -> None:
    for s in EMAILS[valid]:
        assert matches("email", s) == valid, s


@pytest.mark.parametrize("name", sorted(URIS))
def test_uri_like(name: str) -> None:
    for valid in (True, False):
        for s in URIS[name][valid]:
            assert matches(name, s) == valid, (name, s)


@pytest.mark.parametrize("name", ["email", "date-time", "uuid"])
def test_a_format_piece_is_made_once_with_the_ast_of_its_regex(name: str) -> None:
    """Every schema with the format gets the same piece (its regex and that
    regex's AST: parsing the e-mail regex is most of a small schema's
    lowering), and the lowering's language is the format's."""
    from constrain_api import caching
    from constrain_api.automata import parse_regex
    from constrain_api.jsonschema.lower import _format_piece

    piece = _format_piece(name)
    assert piece.text == format_regex(name) and piece.joinable
    caching.clear_caches()  # a parse is never reused from the core's cache here
    assert piece.ast() == parse_regex(format_regex(name))
    assert _format_piece(name) is piece
    lowered = lower_json_schema(ca.JsonSchema({"type": "string", "format": name}))
    assert ByteDFA.from_regex(lowered.pattern).same_language(dfa(name))


def test_the_set_up_of_a_backend_taking_json_schemas_builds_every_format():
    """A schema's first compilation never pays for its formats (up to 21 ms
    each): the per-vocabulary set-up built them all."""
    from constrain_api.compiler import BaseCompiler
    from constrain_api.jsonschema import formats

    backend = ca.get("naive")
    assert backend.capabilities.supports("json_schema")
    vocab = ca.Vocabulary([b"a", b"<eos>"], eos_ids=[1])
    for cache in (formats._build, formats._encoded, formats._quoted):
        cache.cache_clear()
    BaseCompiler(backend, vocab)
    assert formats._quoted.cache_info().currsize == len(FORMATS)
    assert formats._build.cache_info().currsize == len(FORMATS)
