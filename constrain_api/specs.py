"""Constraint specs: *what* the generated text must look like, independent of any backend.

Every spec is a frozen dataclass, hashable and compared by value (backends
key their compile caches on specs), and is validated when it is built: a
malformed spec raises :class:`~constrain_api.errors.ConstraintError` at
construction, saying what is wrong and where. Whether a backend can express
a (valid) spec is the backend's business: it raises
:class:`~constrain_api.errors.UnsupportedConstraint`, never compiles
something else.

A spec constrains the whole generated text (up to, not including, EOS).
"""

from __future__ import annotations

import abc
import copy
import functools
import json
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, NoReturn
from urllib.parse import urlsplit

import jsonschema
import lark as _lark
from lark.exceptions import LarkError, UnexpectedInput, UnexpectedToken
from lark.load_grammar import load_grammar as _load_grammar

from . import lark_imports as _lark_imports
from . import lark_reader as _lark_reader
from . import where as _where
from .caching import SPEC_GRAPHS, core_cache
from .errors import ConstraintError

__all__ = [
    "Choice",
    "Constraint",
    "Grammar",
    "JsonSchema",
    "Regex",
    "Where",
    "spec_kinds",
]

_DESCRIBE_LIMIT = 60


def _clip(text: str, limit: int = _DESCRIBE_LIMIT) -> str:
    """``text`` on one line (control characters escaped), cut to ``limit`` characters."""
    out = []
    for ch in text:
        if ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch.isprintable() or ch == " ":
            out.append(ch)
        else:
            out.append(ascii(ch)[1:-1])
    line = "".join(out)
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _require_str(what: str, value: object, role: str) -> str:
    if not isinstance(value, str):
        raise ConstraintError(what, f"{role} must be str, got {type(value).__name__}")
    return value


@dataclass(frozen=True, slots=True)
class Constraint(abc.ABC):
    """Base of every constraint spec: a frozen, hashable value naming a formal language.

    ``kind`` is the spec kind's registry name. Subclasses validate in their
    constructor and raise ``ConstraintError`` for malformed input.
    """

    kind: ClassVar[str] = ""

    @abc.abstractmethod
    def describe(self) -> str:
        """A one-line human summary; long inputs are truncated."""


# ------------------------------------------------------------------ Regex


@dataclass(frozen=True, slots=True)
class Regex(Constraint):
    """The whole text must match ``pattern`` (full match, Python ``re`` syntax, no flags).

    The pattern is validated by compiling it with Python's ``re``; which
    constructs a backend supports is up to the backend.
    """

    pattern: str
    kind: ClassVar[str] = "regex"

    def __post_init__(self) -> None:
        _require_str("regex", self.pattern, "a regex pattern")
        try:
            re.compile(self.pattern)
        except re.error as e:
            raise ConstraintError("regex", e.msg, where=e.pos) from None
        except (OverflowError, RecursionError, ValueError) as e:  # e.g. {99999999999}
            raise ConstraintError("regex", str(e)) from None

    def compiled(self) -> re.Pattern[str]:
        """The pattern compiled by Python's ``re`` (cached by ``re``); use ``fullmatch``."""
        return re.compile(self.pattern)

    def describe(self) -> str:
        """``regex /pattern/``."""
        return f"regex /{_clip(self.pattern)}/"


# ---------------------------------------------------------------- Grammar

_LINE_COL = re.compile(r"\bline (\d+),? column (\d+)")
_RELATIVE_IMPORT = re.compile(r"^[ \t]*%import[ \t]+\.", re.MULTILINE)
_SYMBOL_MSG = re.compile(
    r"^(?:Rule|Terminal|Template) '([^']+)' used but not defined \(in \w+ (\S+)\)"
)
_DEFINED_TWICE = re.compile(r"^(?:Rule|Terminal) '([^']+)' defined more than once")


def _grammar_error(message: str, where: str | None = None) -> NoReturn:
    raise ConstraintError("grammar", message, where=where)


def _lark_message(e: BaseException) -> str:
    if isinstance(e, UnexpectedToken) and isinstance(e.token, _lark.Token):
        expected = sorted(e.expected or e.accepts or ())
        more = ", ..." if len(expected) > 6 else ""
        tail = f"; expected one of: {', '.join(expected[:6])}{more}" if expected else ""
        return f"unexpected {e.token.type} {e.token.value!r}{tail}"
    first = e.args[0] if e.args and isinstance(e.args[0], str) else str(e)
    first = first.strip().split("\n")[0].strip()
    first = re.sub(r"\s+in <string>:?$", "", first).rstrip(":")
    return first or type(e).__name__


@functools.lru_cache(maxsize=4)
def _meta_parser() -> _lark.Lark:
    # Lark's own description of its grammar syntax, shipped with lark. Only
    # used to *locate* symbols named in an error message (error path only).
    return _lark.Lark.open_from_package("lark", "lark.lark", ("grammars",), parser="lalr")


def _locate_symbol(text: str, message: str) -> str | None:
    """``line:col`` of the symbol an undefined/duplicate-symbol error names, if found."""
    used = _SYMBOL_MSG.match(message)
    twice = _DEFINED_TWICE.match(message)
    if not used and not twice:
        return None
    try:
        tree = _meta_parser().parse(text + "\n")
    except LarkError:
        return None
    definitions = [
        c for c in tree.children if isinstance(c, _lark.Tree) and c.data in ("rule", "token")
    ]
    if twice:
        heads = [d.children[0] for d in definitions if d.children[0].lstrip("!?") == twice[1]]
        tok = heads[1] if len(heads) > 1 else None
    else:
        assert used is not None
        symbol, owner = used[1], used[2]
        uses = []
        for d in definitions:
            for tok in d.children[1:]:
                if not isinstance(tok, _lark.Tree):
                    continue
                for v in tok.scan_values(lambda v: isinstance(v, _lark.Token)):
                    if v.type in ("RULE", "TOKEN") and v == symbol:
                        uses.append((d.children[0].lstrip("!?") != owner, v))
        tok = min(uses, key=lambda u: (u[0], u[1].line, u[1].column))[1] if uses else None
    return f"{tok.line}:{tok.column}" if tok is not None else None


@functools.lru_cache(maxsize=SPEC_GRAPHS)
def _loaded_grammar(text: str) -> Any:
    """lark's loaded grammar of ``text`` (lark's exceptions propagate); cached.
    A bundled grammar it imports from is given to lark trimmed to what the
    imports need (``lark_imports``); should that load fail, lark's own load
    of the whole files decides."""
    trimmed = _lark_imports.loader(text)
    if trimmed is not None:
        try:
            return _load_grammar(text, "<string>", [trimmed], False)[0]
        except Exception:  # (the error to report is lark's own, below)
            pass
    grammar, _ = _load_grammar(text, "<string>", [], False)
    return grammar


@functools.lru_cache(maxsize=SPEC_GRAPHS)
def compiled_lark_grammar(text: str, start: str) -> tuple[list, list, list]:
    """lark's ``(terminal defs, rules, ignored names)`` of a grammar text for
    ``start``, loaded once for validation and lowering (cached, read-only:
    ``lark.load_grammar.Grammar.compile`` copies what it returns)."""
    return _loaded_grammar(text).compile([start], set())


@functools.lru_cache(maxsize=256)
def _validate_grammar(text: str, start: str) -> None:
    """Validate a Lark grammar; cached on success (the key is the whole spec)."""
    m = _RELATIVE_IMPORT.search(text)
    if m:
        line = text.count("\n", 0, m.start()) + 1
        _grammar_error(
            "relative %import is not supported: a grammar spec must be self-contained "
            "(only lark's bundled grammars, e.g. %import common.WS, can be imported)",
            f"{line}:{m[0].index('%') + 1}",
        )
    read = _lark_reader.read(text, start)
    if read is not None and _regexes_compile(read[0]):
        return  # read as lark reads it: lark would accept it
    try:
        grammar = _loaded_grammar(text)
        rules = {name for name, params, _tree, _opts in grammar.rule_defs if not params}
        if start not in rules:
            if any(name == start for name, *_ in grammar.rule_defs):
                _grammar_error(f"start rule {start!r} is a template, not a rule")
            known = ", ".join(sorted(rules)[:8]) + (", ..." if len(rules) > 8 else "")
            _grammar_error(f"start rule {start!r} is not defined (rules: {known or 'none'})")
        terminals, _rules, _ignore = compiled_lark_grammar(text, start)
    except ConstraintError:
        raise
    except UnexpectedInput as e:
        line, col = getattr(e, "line", -1), getattr(e, "column", -1)
        where = f"{line}:{col}" if isinstance(line, int) and line > 0 else None
        _grammar_error(_lark_message(e), where)
    except LarkError as e:
        message = _lark_message(e)
        m = _LINE_COL.search(str(e))
        _grammar_error(message, f"{m[1]}:{m[2]}" if m else _locate_symbol(text, message))
    except OSError as e:  # %import of a grammar lark does not ship
        name = getattr(e, "filename", None) or str(e)
        _grammar_error(f"cannot %import {name}: not one of lark's bundled grammars")
    except (
        AssertionError,
        AttributeError,
        IndexError,
        KeyError,
        TypeError,
        ValueError,
        re.error,
        RecursionError,
    ) as e:
        # lark's loader fails this way on some malformed texts
        _grammar_error(f"malformed grammar ({type(e).__name__}: {e})")
    # Terminals are compiled with Python's ``re`` (lark's default), as lark's
    # lexers would do: a bad regex literal fails here, not at parse time.
    for t in terminals:
        try:
            re.compile(t.pattern.to_regexp())
        except re.error as e:
            raw = getattr(t.pattern, "raw", None)
            at = text.find(raw) if raw else -1
            where = None
            if at >= 0:
                line = text.count("\n", 0, at) + 1
                where = f"{line}:{at - (text.rfind(chr(10), 0, at) + 1) + 1}"
            shown = raw or t.pattern.to_regexp()
            _grammar_error(f"bad regular expression {shown} in terminal {t.name}: {e.msg}", where)


def _regexes_compile(terminals: list) -> bool:
    """Whether every terminal's regex compiles with Python's ``re``."""
    try:
        for t in terminals:
            re.compile(t.pattern.to_regexp())
    except re.error:
        return False
    return True


@functools.lru_cache(maxsize=32)
def _cached_lark(text: str, start: str, options: tuple[tuple[str, Any], ...]) -> _lark.Lark:
    return _lark.Lark(text, start=start, **dict(options))


@dataclass(frozen=True, slots=True)
class Grammar(Constraint):
    """The whole text must be derivable from rule ``start`` of the Lark EBNF grammar ``text``.

    ``%ignore``d terminals may appear between tokens, as in Lark. Validated
    as lark's own grammar loader validates (syntax, undefined/duplicate
    symbols, templates, the start rule: ``lark_reader``, or lark for what it
    leaves to lark, whose error is then reported) and every terminal regex
    compiled with Python's ``re``. Only lark's bundled grammars can be ``%import``ed
    (``common``, ``unicode``, ...): the text alone determines the language.
    Parser-specific restrictions (zero-width terminals, LALR conflicts) are
    not validated here; a backend that cannot handle them raises
    ``UnsupportedConstraint``.
    """

    text: str
    start: str = "start"
    kind: ClassVar[str] = "grammar"

    def __post_init__(self) -> None:
        _require_str("grammar", self.text, "a grammar")
        _require_str("grammar", self.start, "the start rule")
        if not self.start:
            _grammar_error("the start rule name is empty")
        _validate_grammar(self.text, self.start)

    def lark(self, **options: Any) -> _lark.Lark:
        """A ``lark.Lark`` for this grammar (default ``parser="earley"``, lexer ``"dynamic"``).

        Instances are cached and shared per (text, start, options) when the
        options are hashable; equality and hash of the spec are unaffected.
        Lark's own exceptions propagate when that parser configuration
        refuses the grammar (dynamic Earley refuses zero-width terminals).
        """
        if "start" in options:
            raise TypeError("the start rule is part of the spec; use Grammar(text, start=...)")
        merged = {"parser": "earley", **options}
        if merged["parser"] == "earley":
            merged.setdefault("lexer", "dynamic")
        key = tuple(sorted(merged.items()))
        try:
            hash(key)
        except TypeError:
            return _lark.Lark(self.text, start=self.start, **merged)
        return _cached_lark(self.text, self.start, key)

    def describe(self) -> str:
        """``grammar (N lines, start=...): first line``."""
        lines = self.text.splitlines()
        first = next((ln.strip() for ln in lines if ln.strip()), "")
        return f"grammar ({len(lines)} lines, start={self.start}): {_clip(first, 40)}"


# ------------------------------------------------------------- JsonSchema

_WHITESPACE = ("compact", "flexible")


def _pointer(path: Iterable[object]) -> str:
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in path)


def _schema_error(message: str, where: str | None = None) -> NoReturn:
    raise ConstraintError("json schema", message, where=where)


def _check_json_value(value: object, path: list[object]) -> None:
    """Raise unless ``value`` is plain JSON data (str keys, finite numbers)."""
    if value is None or isinstance(value, bool | int | str):
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            _schema_error(f"{value} is not a JSON number", _pointer(path))
        return
    if isinstance(value, Mapping):
        for k, v in value.items():
            if not isinstance(k, str):
                _schema_error(f"object key {k!r} is not a string", _pointer(path))
            path.append(k)
            _check_json_value(v, path)
            path.pop()
        return
    if isinstance(value, list | tuple):
        for i, v in enumerate(value):
            path.append(i)
            _check_json_value(v, path)
            path.pop()
        return
    _schema_error(f"{type(value).__name__} is not JSON data", _pointer(path))


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            _schema_error(f"duplicate object key {k!r}")
        out[k] = v
    return out


def _no_constant(name: str) -> NoReturn:
    _schema_error(f"{name} is not a JSON number")


def _parse_schema_text(text: str) -> Any:
    try:
        return json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_no_constant)
    except json.JSONDecodeError as e:
        _schema_error(f"not valid JSON: {e.msg}", f"{e.lineno}:{e.colno}")
    except RecursionError:
        _schema_error("JSON nested too deeply")


@dataclass(frozen=True, slots=True, init=False)
class JsonSchema(Constraint):
    """The text must be a JSON document valid under ``schema``.

    ``schema`` may be a dict, a bool or JSON text; it is stored canonically
    as compact JSON text in ``schema_json`` (key order kept: property order
    is significant), so ``JsonSchema(d) == JsonSchema(json.dumps(d, indent=2))``.
    The ``schema`` property returns a fresh parsed copy. The schema is
    checked against its meta-schema (``$schema``, default draft 2020-12;
    an unknown ``$schema`` falls back to 2020-12); ``pattern`` regexes are
    ECMA-262 and are not checked here.

    ``whitespace="compact"``: no whitespace outside strings.
    ``whitespace="flexible"``: up to ``max_whitespace`` whitespace
    characters wherever JSON allows whitespace (``max_whitespace`` is
    ignored for compact).

    ``additional_properties``: what an object schema without
    ``additionalProperties`` allows beyond its ``properties`` — ``True``
    (the standard: any further members) or ``False`` (none).
    ``one_of``: ``"exact"`` lowers ``oneOf`` only when its branches are
    provably disjoint (else ``UnsupportedConstraint``); ``"any_of"`` lowers
    it as ``anyOf`` (documents matching several branches are then accepted).
    ``format_assertion``: known ``format`` names restrict strings (``True``)
    or only annotate, as the 2020-12 default vocabulary says (``False``).
    ``constrain_api.jsonschema.lower_json_schema`` gives the language.
    """

    schema_json: str
    whitespace: str
    max_whitespace: int
    additional_properties: bool
    one_of: str
    format_assertion: bool
    kind: ClassVar[str] = "json_schema"

    def __init__(
        self,
        schema: Mapping[str, Any] | bool | str,
        whitespace: str = "compact",
        max_whitespace: int = 1,
        *,
        additional_properties: bool = True,
        one_of: str = "exact",
        format_assertion: bool = True,
    ) -> None:
        if isinstance(schema, str):
            parsed = _parse_schema_text(schema)
        elif isinstance(schema, bool | Mapping):
            try:
                _check_json_value(schema, [])
            except RecursionError:
                _schema_error("schema nested too deeply")
            parsed = schema
        else:
            _schema_error(
                f"a schema must be a dict, a bool or JSON text, not {type(schema).__name__}"
            )
        if not isinstance(parsed, bool | Mapping):
            _schema_error(
                f"a schema must be a JSON object or boolean, got {type(parsed).__name__}", ""
            )
        if whitespace not in _WHITESPACE:
            _schema_error(f"whitespace must be 'compact' or 'flexible', got {whitespace!r}")
        if type(max_whitespace) is not int or max_whitespace < 0:
            _schema_error(f"max_whitespace must be an int >= 0, got {max_whitespace!r}")
        if one_of not in ("exact", "any_of"):
            _schema_error(f"one_of must be 'exact' or 'any_of', got {one_of!r}")
        for name, flag in (
            ("additional_properties", additional_properties),
            ("format_assertion", format_assertion),
        ):
            if not isinstance(flag, bool):
                _schema_error(f"{name} must be a bool, got {flag!r}")
        try:
            text = json.dumps(parsed, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        except (ValueError, TypeError, RecursionError) as e:
            _schema_error(str(e))
        canonical = json.loads(text)
        _check_schema_uri(canonical)
        _check_meta(canonical)
        object.__setattr__(self, "schema_json", text)
        object.__setattr__(self, "whitespace", whitespace)
        object.__setattr__(self, "max_whitespace", max_whitespace)
        object.__setattr__(self, "additional_properties", additional_properties)
        object.__setattr__(self, "one_of", one_of)
        object.__setattr__(self, "format_assertion", format_assertion)

    @property
    def schema(self) -> Any:
        """The schema as Python data (a fresh copy each time)."""
        return json.loads(self.schema_json)

    def describe(self) -> str:
        """``json schema {...} (compact)``."""
        ws = "compact" if self.whitespace == "compact" else f"flexible<={self.max_whitespace}"
        return f"json schema {_clip(self.schema_json)} ({ws})"


@functools.lru_cache(maxsize=16)
def _meta_format_checker(cls: Any) -> jsonschema.FormatChecker:
    # The draft's own meta-schema format checks, minus "regex": jsonschema
    # checks that format with Python's ``re``, which rejects valid ECMA-262
    # patterns (``\p{Letter}``, ``(?<name>...)``). Whether a pattern can be
    # lowered is the JSON-schema front end's business, not the spec's.
    checker = copy.copy(cls.FORMAT_CHECKER)
    checker.checkers = {k: v for k, v in checker.checkers.items() if k != "regex"}
    return checker


try:  # (a compiled validator: the meta-schema check of a valid schema in microseconds)
    import jsonschema_rs as _jsonschema_rs
except ImportError:  # pragma: no cover - a core dependency; the check falls back
    _jsonschema_rs = None

#: the drafts whose meta-schemas ``jsonschema-rs`` bundles (any other
#: ``$schema``, draft 3's included, it would try to fetch)
_BUNDLED_DRAFTS = (
    jsonschema.Draft4Validator,
    jsonschema.Draft6Validator,
    jsonschema.Draft7Validator,
    jsonschema.Draft201909Validator,
    jsonschema.Draft202012Validator,
)


def _meta_valid_fast(schema: Any) -> bool:
    """Whether ``jsonschema-rs`` finds ``schema`` valid against the meta-schema
    of its draft: no ``$schema``, or one ``jsonschema`` reads as one of
    the five drafts it bundles (never a ``$schema`` it would fetch).
    ``False`` where it cannot tell (not installed, a boolean schema,
    numbers past 64 bits, any error): the caller then asks ``jsonschema``."""
    if _jsonschema_rs is None or not isinstance(schema, dict):
        return False
    if (
        "$schema" in schema
        and jsonschema.validators.validator_for(schema, default=None) not in _BUNDLED_DRAFTS
    ):
        return False
    try:
        return bool(_jsonschema_rs.meta.is_valid(schema))
    except Exception:  # (whatever it cannot read, jsonschema judges)
        return False


def _check_schema_uri(schema: Any) -> None:
    """``ConstraintError`` where the root's ``$schema`` is no string or a
    string that is no URI (``http://[x/``): the validators look their draft
    up by the parsed URI before the meta-schema is read, and a dict there
    raised a bare ``TypeError``, a number an ``AttributeError``, a bracket
    that is no IPv6 host a ``ValueError``."""
    if not isinstance(schema, dict) or "$schema" not in schema:
        return
    uri = schema["$schema"]
    if not isinstance(uri, str):
        _schema_error(f"$schema must be a string (a URI), got {type(uri).__name__}", "/")
    try:
        urlsplit(uri)
    except ValueError as e:
        _schema_error(f"$schema {uri!r} is not a URI: {e}", "/")


def _check_meta(schema: Any) -> None:
    """``ConstraintError`` unless ``schema`` is valid against its draft's
    meta-schema. ``jsonschema`` (the Python validator the tests judge
    documents with) decides and words the error; a schema the compiled
    ``jsonschema-rs`` finds valid is accepted without it: python-jsonschema
    walks the 2020-12 meta-schema's dynamic references in 0.3 ms for the
    smallest schema and 25 ms at MaskBench's p99, before anything is
    compiled. (What the compiled one accepts, the Python one accepts, on
    every MaskBench and JSON Schema Test Suite schema: tests/test_specs.py.)"""
    if _meta_valid_fast(schema):
        return
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    try:
        cls.check_schema(schema, format_checker=_meta_format_checker(cls))
    except jsonschema.SchemaError as e:
        _schema_error(e.message, _pointer(e.absolute_path))
    except RecursionError:
        _schema_error("schema nested too deeply")


# ----------------------------------------------------------------- Choice


@dataclass(frozen=True, slots=True)
class Choice(Constraint):
    """The text must equal one of ``options``.

    A non-empty list of strings, stored as a tuple with duplicates removed
    (first occurrence kept); ``""`` means the empty text.
    """

    options: tuple[str, ...]
    kind: ClassVar[str] = "choice"

    def __post_init__(self) -> None:
        options = self.options
        if isinstance(options, str | bytes | Mapping) or not isinstance(options, Iterable):
            raise ConstraintError(
                "choice", f"options must be a list of strings, got {type(options).__name__}"
            )
        seen: dict[str, None] = {}
        for i, option in enumerate(options):
            if not isinstance(option, str):
                raise ConstraintError(
                    "choice", f"option is {type(option).__name__}, not str", where=i
                )
            seen.setdefault(option)
        if not seen:
            raise ConstraintError("choice", "at least one option is needed")
        object.__setattr__(self, "options", tuple(seen))

    def describe(self) -> str:
        """``choice of N: 'a' | 'b' | ...``."""
        shown = " | ".join(repr(o) for o in self.options)
        return f"choice of {len(self.options)}: {_clip(shown)}"


# ------------------------------------------------------------------ Where


@dataclass(frozen=True, slots=True)
class Where(Constraint):
    """The text must satisfy an LMQL-style predicate (see :mod:`constrain_api.where`).

    ``predicate`` is given as its string form (parsed with
    ``where.parse``) or as a ``where.Predicate``; it is stored as the
    predicate, so equal predicates give equal specs whatever their spelling.
    """

    predicate: _where.Predicate
    kind: ClassVar[str] = "where"

    def __post_init__(self) -> None:
        if isinstance(self.predicate, str):
            object.__setattr__(self, "predicate", _where.parse(self.predicate))
        elif not isinstance(self.predicate, _where.Predicate):
            raise ConstraintError(
                "where",
                f"a predicate must be a string or a Predicate, got {type(self.predicate).__name__}",
            )

    def holds(self, text: str) -> bool:
        """The reference semantics on a complete text (``predicate.holds``)."""
        return self.predicate.holds(text)

    def describe(self) -> str:
        """``where <predicate>``."""
        return f"where {_clip(str(self.predicate))}"


def spec_kinds() -> dict[str, type[Constraint]]:
    """The built-in spec kinds by ``kind`` name (a fresh dict; the registry adds plugins')."""
    return {cls.kind: cls for cls in (Regex, Grammar, JsonSchema, Choice, Where)}


core_cache("grammar validations", _validate_grammar)
core_cache("lark grammars", _loaded_grammar)
core_cache("compiled lark grammars", compiled_lark_grammar)
