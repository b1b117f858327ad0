"""Regexes of the JSON Schema ``format`` values, as quoted canonical JSON strings.

``FORMATS[name]`` (built on first use) and ``format_regex(name)`` give the
regex of the JSON string literals (quotes included, canonical spelling as in
``strings``) whose content is valid for the format. Each is written over the
decoded characters in Python's regex syntax, parsed with ``parse_regex``,
encoded with ``strings.encode_node`` and printed with ``to_regex``, so the
text is portable and the language exact. The formats and their definitions:

* ``date``, ``time``, ``date-time`` — RFC 3339 ``full-date``, ``full-time``,
  ``date-time``: four-digit years ``0000``–``9999``; days checked against the
  month, 29 February only in leap years (divisible by 4, centuries only when
  divisible by 400); ``T``/``t`` and ``Z``/``z`` in either case (RFC 3339
  §5.6); any number of fraction digits; offsets ``±hh:mm`` up to ``23:59``.
  A leap second ``:60`` is accepted when the time, converted to UTC by its
  offset, is ``23:59:60`` (``23:59:60Z``, ``15:59:60-08:00``) — the rule
  the JSON Schema Test Suite checks — at offsets whose minutes are 00, 15,
  30 or 45 only (every offset in use; see ``_leap_seconds``): a leap second
  ties the local time to the offset, and all 2,880 offsets would make
  ``date-time`` a 57,000-character regex of 11,000 DFA states.
  The date is not coupled to leap seconds (the local date may differ from
  the UTC one, and which days have one is IERS' choice, not syntax).
* ``duration`` — RFC 3339 appendix A (ISO 8601 durations): ``P`` then date
  elements (``nY`` [``nM`` [``nD``]], ``nM`` [``nD``], ``nD``) with an optional
  time part, or a time part alone (``T`` then ``nH`` [``nM`` [``nS``]], ``nM``
  [``nS``], ``nS``), or ``nW`` alone; integers only. The designators may be in
  either case, as ABNF strings are case-insensitive (RFC 5234 §2.3).
* ``email`` — RFC 5321 ``Mailbox``: a dot-string or quoted-string local part,
  ``@``, then a domain of letter/digit/hyphen labels (no hyphen at either
  end) or an address literal: ``[IPv4]`` (``Snum``: 1–3 digits, 0–255,
  leading zeros allowed) or ``[IPv6:...]`` (RFC 5321 ``IPv6-addr``: full,
  compressed with at most 6 groups besides ``::``, with a trailing IPv4 at
  most 4). Not included: the ``General-address-literal`` (``[tag:...]`` with
  a tag other than ``IPv6``: only IANA-registered tags are valid, and IPv6
  is the only one), and RFC 5321's size limits (§4.5.3.1, not part of the
  ABNF rule JSON Schema names).
* ``ipv4`` — dotted quad, 0–255, no leading zeros (RFC 2673 §3.2);
  ``ipv6`` — RFC 4291 §2.2 text forms (``::`` compression, embedded IPv4 in
  the last 32 bits), exact, no zone id, no brackets.
* ``uuid`` — RFC 4122: 8-4-4-4-12 hexadecimal digits, either case.
* ``uri``, ``uri-reference`` — RFC 3986 ``URI`` and ``URI-reference``, ASCII
  only, percent-encodings ``%HH``; ``iri``, ``iri-reference`` — RFC 3987, the
  same with ``ucschar`` (and ``iprivate`` in the query) allowed.
* ``json-pointer`` — RFC 6901; ``relative-json-pointer`` — as in
  draft-bhutton-relative-json-pointer-00 (the 2020-12 reference): a
  non-negative integer, an optional ``+n``/``-n`` index adjustment, then a
  JSON pointer, or the integer and ``#``.
* ``uri-template`` — RFC 6570 level 4, with the apostrophe allowed in
  literals (erratum 6937, as the test suite expects).

``format_regex`` raises ``UnsupportedConstraint("json_schema", "format 'x'",
reason)`` for every other name: the known formats in ``UNSUPPORTED_FORMATS``
(``hostname`` and ``idn-hostname``: the 253-character total with 63-character
labels needs ~10⁴ automaton states and the A-label (Punycode/IDNA) checks are
not regular in any useful size; ``idn-email``; ``regex``: ECMA-262 patterns
are not a regular language) and unknown ones.
"""

from __future__ import annotations

import functools
from collections import defaultdict
from collections.abc import Iterator, Mapping

from ..automata.printer import to_regex
from ..automata.regex import Literal, Node, parse_regex, seq
from ..errors import UnsupportedConstraint
from .strings import encode_node

__all__ = [
    "FORMATS",
    "UNSUPPORTED_FORMATS",
    "build_formats",
    "format_node",
    "format_pattern",
    "format_piece",
    "format_regex",
    "format_source",
    "formats_as_patterns",
]

# ----------------------------------------------------------------- RFC 3339

_DIGITS = "[0-9]+"
_HH = "(?:[01][0-9]|2[0-3])"
_MM = "[0-5][0-9]"
_FRAC = r"(?:\.[0-9]+)?"
_OFFSET = rf"(?:[Zz]|[+\-]{_HH}:{_MM})"
_LEAP_YEAR = "(?:[0-9]{2}(?:0[48]|[2468][048]|[13579][26])|(?:0[048]|[2468][048]|[13579][26])00)"
_MONTH_DAY = (
    "(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])"
    "|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)"
    "|02-(?:0[1-9]|1[0-9]|2[0-8]))"
)
_DATE = f"(?:[0-9]{{4}}-{_MONTH_DAY}|{_LEAP_YEAR}-02-29)"


def _leap_seconds() -> str:
    """``hh:mm:60[.frac]offset`` where ``hh:mm`` minus the offset is 23:59 (UTC).

    A deliberate subset: only offsets whose minutes are 00, 15, 30 or 45 (every
    offset in use) — the full rule, all 2,880 offsets, makes ``date-time`` a
    57,000-character regex of 11,000 DFA states; this one is 3,800 and 870.
    """
    by_local: dict[int, list[str]] = defaultdict(list)
    for sign in "+-":
        for h in range(24):
            for m in (0, 15, 30, 45):
                off = h * 60 + m
                local = (1439 + off if sign == "+" else 1439 - off) % 1440
                by_local[local].append(f"\\{sign}{h:02d}:{m:02d}")
    by_local[1439].append("[Zz]")
    options = [
        f"{local // 60:02d}:{local % 60:02d}:60{_FRAC}(?:{'|'.join(offsets)})"
        for local, offsets in sorted(by_local.items())
    ]
    return "(?:" + "|".join(options) + ")"


def _time() -> str:
    return f"(?:{_HH}:{_MM}:{_MM}{_FRAC}{_OFFSET}|{_leap_seconds()})"


def _duration() -> str:
    def d(letter: str) -> str:
        return f"{_DIGITS}[{letter.upper()}{letter.lower()}]"

    second = d("s")
    minute = f"{d('m')}(?:{second})?"
    hour = f"{d('h')}(?:{minute})?"
    time = f"[Tt](?:{hour}|{minute}|{second})"
    day = d("d")
    month = f"{d('m')}(?:{day})?"
    year = f"{d('y')}(?:{month})?"
    date = f"(?:{day}|{month}|{year})(?:{time})?"
    return f"[Pp](?:{date}|{time}|{d('w')})"


# ------------------------------------------------------------ IP addresses

_DEC_OCTET = "(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])"
_IPV4 = rf"{_DEC_OCTET}(?:\.{_DEC_OCTET}){{3}}"
_H16 = "[0-9A-Fa-f]{1,4}"


def _ipv6(ipv4: str = _IPV4) -> str:
    """RFC 3986 ``IPv6address`` (= the RFC 4291 §2.2 text forms)."""
    h = f"{_H16}:"
    ls32 = f"(?:{_H16}:{_H16}|{ipv4})"

    def left(n: int) -> str:  # [ *n( h16 ":" ) h16 ]
        if n < 0:
            return ""
        return f"(?:(?:{h}){{0,{n}}}{_H16})?" if n else f"(?:{_H16})?"

    options = [
        f"(?:{h}){{6}}{ls32}",
        f"::(?:{h}){{5}}{ls32}",
        f"{left(0)}::(?:{h}){{4}}{ls32}",
        f"{left(1)}::(?:{h}){{3}}{ls32}",
        f"{left(2)}::(?:{h}){{2}}{ls32}",
        f"{left(3)}::{h}{ls32}",
        f"{left(4)}::{ls32}",
        f"{left(5)}::{_H16}",
        f"{left(6)}::",
    ]
    return "(?:" + "|".join(options) + ")"


# ------------------------------------------------------------------- e-mail

_SNUM = "(?:25[0-5]|2[0-4][0-9]|[01][0-9]{2}|[0-9]{1,2})"
_SMTP_IPV4 = rf"{_SNUM}(?:\.{_SNUM}){{3}}"


def _smtp_ipv6() -> str:
    """RFC 5321 ``IPv6-addr`` (its own compression limits, ``Snum`` IPv4)."""

    def groups(n: int) -> str:  # n groups joined by ':' (n >= 1)
        return _H16 if n == 1 else f"{_H16}(?::{_H16}){{{n - 1}}}"

    def upto(n: int) -> str:  # 0..n groups joined by ':'
        return "" if n == 0 else f"(?:{_H16}(?::{_H16}){{0,{n - 1}}})?"

    comp = "|".join(f"{groups(a) if a else ''}::{upto(6 - a)}" for a in range(7))
    v4comp = "|".join(
        f"{groups(a) if a else ''}::(?:{_H16}(?::{_H16}){{0,{3 - a}}}:)?{_SMTP_IPV4}"
        if a < 4
        else f"{groups(a)}::{_SMTP_IPV4}"
        for a in range(5)
    )
    return f"(?:{groups(8)}|{comp}|{groups(6)}:{_SMTP_IPV4}|{v4comp})"


def _email() -> str:
    atext = r"[A-Za-z0-9!#$%&'*+\-/=?^_`{|}~]"
    dot_string = rf"{atext}+(?:\.{atext}+)*"
    quoted = r'"(?:[ !#-\[\]-~]|\\[ -~])*"'
    label = "[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?"
    domain = rf"{label}(?:\.{label})*"
    literal = rf"\[(?:{_SMTP_IPV4}|[Ii][Pp][Vv]6:{_smtp_ipv6()})\]"
    return f"(?:{dot_string}|{quoted})@(?:{domain}|{literal})"


# ------------------------------------------------------------ URIs and IRIs

_UCSCHAR = (
    "\\xa0-\\ud7ff\\uf900-\\ufdcf\\ufdf0-\\uffef"
    + "".join(f"\\U{p:04x}0000-\\U{p:04x}fffd" for p in range(1, 14))
    + "\\U000e1000-\\U000efffd"
)
_IPRIVATE = "\\ue000-\\uf8ff\\U000f0000-\\U000ffffd\\U00100000-\\U0010fffd"


def _uri(iri: bool, reference: bool) -> str:
    """RFC 3986 ``URI``/``URI-reference``; with ``iri``, RFC 3987 ``IRI``/``IRI-reference``."""
    unreserved = r"A-Za-z0-9\-._~" + (_UCSCHAR if iri else "")
    sub_delims = "!$&'()*+,;="
    pct = "%[0-9A-Fa-f]{2}"
    pchar = f"(?:[{unreserved}{sub_delims}:@]|{pct})"
    segment = f"{pchar}*"
    segment_nz = f"{pchar}+"
    segment_nz_nc = f"(?:[{unreserved}{sub_delims}@]|{pct})+"
    private = _IPRIVATE if iri else ""
    query = f"(?:[{unreserved}{sub_delims}:@/?{private}]|{pct})*"
    fragment = f"(?:[{unreserved}{sub_delims}:@/?]|{pct})*"
    scheme = r"[A-Za-z][A-Za-z0-9+\-.]*"
    userinfo = f"(?:[{unreserved}{sub_delims}:]|{pct})*"
    ipvfuture = rf"[Vv][0-9A-Fa-f]+\.[A-Za-z0-9\-._~{sub_delims}:]+"
    host = rf"(?:\[(?:{_ipv6()}|{ipvfuture})\]|(?:[{unreserved}{sub_delims}]|{pct})*)"
    authority = f"(?:{userinfo}@)?{host}(?::[0-9]*)?"
    abempty = f"(?:/{segment})*"
    absolute = f"/(?:{segment_nz}(?:/{segment})*)?"
    rootless = f"{segment_nz}(?:/{segment})*"
    noscheme = f"{segment_nz_nc}(?:/{segment})*"
    tail = rf"(?:\?{query})?(?:#{fragment})?"
    absolute_uri = f"{scheme}:(?://{authority}{abempty}|{absolute}|{rootless}|){tail}"
    if not reference:
        return absolute_uri
    relative = f"(?://{authority}{abempty}|{absolute}|{noscheme}|){tail}"
    return f"(?:{absolute_uri}|{relative})"


# ------------------------------------------------------------ JSON pointers

_JSON_POINTER = "(?:/(?:[^~/]|~[01])*)*"
_NON_NEGATIVE = "(?:0|[1-9][0-9]*)"
_RELATIVE_JSON_POINTER = rf"{_NON_NEGATIVE}(?:(?:[+\-]{_NON_NEGATIVE})?{_JSON_POINTER}|#)"


def _uri_template() -> str:
    pct = "%[0-9A-Fa-f]{2}"
    literal = rf"(?:[!#$&'()*+,\-./0-9:;=?@A-Z\[\]_a-z~{_UCSCHAR}{_IPRIVATE}]|{pct})"
    varchar = f"(?:[A-Za-z0-9_]|{pct})"
    varname = rf"{varchar}(?:\.?{varchar})*"
    varspec = rf"{varname}(?::[1-9][0-9]{{0,3}}|\*)?"
    expression = rf"\{{[+#./;?&=,!@|]?{varspec}(?:,{varspec})*\}}"
    return f"(?:{literal}|{expression})*"


# ------------------------------------------------------------------ registry

_SOURCES = {
    "date": lambda: _DATE,
    "time": _time,
    "date-time": lambda: f"{_DATE}[Tt]{_time()}",
    "duration": _duration,
    "email": _email,
    "ipv4": lambda: _IPV4,
    "ipv6": _ipv6,
    "uuid": lambda: "-".join(f"[0-9A-Fa-f]{{{n}}}" for n in (8, 4, 4, 4, 12)),
    "uri": lambda: _uri(iri=False, reference=False),
    "uri-reference": lambda: _uri(iri=False, reference=True),
    "iri": lambda: _uri(iri=True, reference=False),
    "iri-reference": lambda: _uri(iri=True, reference=True),
    "json-pointer": lambda: _JSON_POINTER,
    "relative-json-pointer": lambda: _RELATIVE_JSON_POINTER,
    "uri-template": _uri_template,
}

#: Known formats this module does not support, and why.
UNSUPPORTED_FORMATS: Mapping[str, str] = {
    "hostname": (
        "RFC 1123 host names bound the total length (253) and each label (63): together "
        "they need about 10^4 automaton states, and the A-label (Punycode/IDNA 2008) "
        "validity the test suite checks is not expressible in a regex of useful size"
    ),
    "idn-hostname": "internationalized host names need IDNA 2008 validity checks",
    "idn-email": "internationalized e-mail domains need IDNA 2008 validity checks",
    "regex": "the ECMA-262 regular expressions are not a regular language",
}


def format_source(name: str) -> str:
    """The format's regex over decoded characters (Python syntax, full match)."""
    return _SOURCES[name]()


@functools.cache
def _time_node() -> Node:
    return parse_regex(_time())


def format_node(name: str) -> Node:
    """The format's decoded-character AST (for combining with length bounds)."""
    if name not in FORMATS:
        format_regex(name)  # raises the documented error
    return _node(name)


def _node(name: str) -> Node:
    if name == "time":
        return _time_node()
    if name == "date-time":  # (the big time part parsed once)
        return seq(parse_regex(f"{_DATE}[Tt]"), _time_node())
    return parse_regex(format_source(name))


@functools.cache
def _encoded(name: str) -> Node:
    return encode_node(_node(name))


@functools.cache
def _build(name: str) -> str:
    return f'"{to_regex(_encoded(name))}"'


@functools.cache
def _quoted(name: str) -> Node:
    return seq(Literal('"'), _encoded(name), Literal('"'))


def format_piece(name: str) -> tuple[str, Node]:
    """A supported format's :func:`format_regex` and its AST (the same
    language, printed from it: a caller that keeps it spares parsing the
    text back, which costs what building it did, 0.1-23 ms a format)."""
    return format_regex(name), _quoted(name)


def build_formats() -> None:
    """Build every supported format's regex and AST now, once per process
    (0.1-21 ms a format, about 90 ms in all), so that no compilation pays
    for its schema's formats: the per-vocabulary set-up of a backend that
    takes JSON schemas calls it (``BaseCompiler``)."""
    for name in _SOURCES:
        format_piece(name)


class _Formats(Mapping[str, str]):
    """The supported formats → their quoted-string regexes, each built on first use."""

    def __getitem__(self, name: str) -> str:
        if name not in _SOURCES:
            raise KeyError(name)
        return _build(name)

    def __contains__(self, name: object) -> bool:
        return name in _SOURCES

    def __iter__(self) -> Iterator[str]:
        return iter(_SOURCES)

    def __len__(self) -> int:
        return len(_SOURCES)

    def __repr__(self) -> str:
        return f"FORMATS({', '.join(_SOURCES)})"


#: Supported format name → regex of its quoted canonical JSON strings.
FORMATS: Mapping[str, str] = _Formats()


def format_regex(name: str, *, where: str = "") -> str:
    """The regex of the quoted canonical JSON strings valid for format ``name``.

    Raises ``UnsupportedConstraint`` (backend ``"json_schema"``, construct
    ``format 'name'``) for a known but unsupported format and for an unknown one.
    """
    if name in _SOURCES:
        return _build(name)
    at = f" (at {where})" if where else ""
    if name in UNSUPPORTED_FORMATS:
        raise UnsupportedConstraint(
            "json_schema", f"format {name!r}", UNSUPPORTED_FORMATS[name] + at
        )
    raise UnsupportedConstraint("json_schema", f"format {name!r}", "unknown format" + at)


# -------------------------------------------------------- formats as patterns

#: Keywords whose values are JSON data, never schemas: a ``format`` member
#: inside them is data, left as it is.
_DATA_KEYWORDS = frozenset({"const", "enum", "default", "examples"})


@functools.cache
def format_pattern(name: str) -> str:
    """A ``pattern`` whose matches are exactly the strings of format
    ``name`` (anchored, in the core's portable dialect, ``to_regex``);
    the documented ``UnsupportedConstraint`` for any other name."""
    return f"^{to_regex(format_node(name))}$"


def formats_as_patterns(schema: object, *, assert_formats: bool = True) -> object:
    """A copy of ``schema`` with the language of every ``format`` spelled
    out, for an engine whose formats are not this module's (its own date
    or time rules): a format this module supports becomes a ``pattern``
    of the same strings (beside a pattern already there, one more
    ``allOf`` entry), an unknown format, which only annotates, is dropped,
    and so is every format when ``assert_formats`` is false (the lowering's
    ``format_assertion=False``); one it refuses (``UNSUPPORTED_FORMATS``)
    stays, for the engine to refuse or not. Every object in the document
    is read as a schema but the values of ``const``, ``enum``, ``default``
    and ``examples``: a ``$ref`` may point anywhere, and a ``format`` in
    an object that is no schema changes nothing. ``schema`` is not
    modified."""

    def walk(node: object) -> object:
        if isinstance(node, list):
            return [walk(item) for item in node]
        if not isinstance(node, dict):
            return node
        out = {key: value if key in _DATA_KEYWORDS else walk(value) for key, value in node.items()}
        name = out.get("format")
        if not isinstance(name, str) or (assert_formats and name in UNSUPPORTED_FORMATS):
            return out
        del out["format"]
        if assert_formats and name in _SOURCES:
            pattern = format_pattern(name)
            if isinstance(out.get("pattern"), str):
                others = out.get("allOf", [])
                if not isinstance(others, list):
                    out["format"] = name  # (a malformed allOf: for the engine to refuse)
                    return out
                out["allOf"] = [*others, {"pattern": pattern}]
            else:
                out["pattern"] = pattern
        return out

    return walk(schema)
