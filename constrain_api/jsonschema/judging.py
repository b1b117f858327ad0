"""The ``jsonschema`` validator reading a schema as the lowering does.

The lowering asks the validator to judge values (the listed values a
schema's other keywords accept, which branch of a union a value takes). Its
own reading of two keywords differs from this package's, and a judge must
read them the same way, or a value is kept that the language has not:

* ``pattern`` and ``patternProperties`` use Python's ``re.search``, where
  JSON Schema means ECMA-262 (``strings``): Python's ``\\d``/``\\w``/``\\s``
  take Unicode digits, letters and spaces, its ``$`` matches before a final
  newline, its ``.`` takes a line separator, and ``\\p{L}`` is an error.
  :func:`validator_class` checks ``pattern`` on the automaton of the
  strings in which the ECMA-262 pattern finds a match; :func:`judged_schema`
  writes each ``patternProperties`` name (which ``jsonschema`` reads in
  three keywords) as a Python regex of those strings, or, where there is
  none (a lookaround's intersection), as a regex Python cannot compile, so
  that a validation that reaches it raises: no judge, rather than a wrong
  one. A pattern this package refuses raises likewise.
* ``format``: ``jsonschema``'s checkers are other definitions (``email`` is
  any text with an ``@``, ``uuid`` takes underscores that Python's ``int``
  skips). :func:`format_checker` checks the formats with this package's own
  languages (``formats``), the others as annotations.
"""

from __future__ import annotations

import functools
from typing import Any

import jsonschema

from ..automata import LazyDFA
from ..automata.printer import to_regex
from ..errors import ConstrainError
from . import formats
from .refs import SCHEMA_KEYWORDS
from .strings import pattern_node

__all__ = ["NO_SPELLING", "format_checker", "judged_schema", "python_pattern", "validator_class"]

#: Keywords whose values are JSON values compared as they are, not schemas.
_VALUES = frozenset({"enum", "const", "default", "examples"})


#: What :func:`python_pattern` gives for a pattern with no Python spelling:
#: a back-reference to a group no pattern defines, which ``re`` refuses.
NO_SPELLING = "(?P=ecma_pattern_with_no_python_spelling)"


@functools.lru_cache(maxsize=1024)
def python_pattern(pattern: str) -> str:
    """A Python ``re`` pattern that ``re.search`` finds in exactly the
    strings in which the ECMA-262 ``pattern`` finds a match; ``NO_SPELLING``
    where there is none (a lookaround, a construct this package refuses)."""
    try:
        return r"\A(?:" + to_regex(pattern_node(pattern)) + r")\Z"
    except (ConstrainError, RecursionError):
        return NO_SPELLING


def judged_schema(node: Any) -> Any:
    """``node`` (a schema, or a document holding schemas) with every
    ``patternProperties`` name written by :func:`python_pattern`; listed
    values (``enum``, ``const``...) as they are. Keywords this package does
    not know are walked as schemas too (a ``$ref`` may reach into them); a
    map of names is not."""
    if isinstance(node, list):
        return [judged_schema(v) for v in node]
    if not isinstance(node, dict):
        return node
    out: dict = {}
    for key, value in node.items():
        kind = SCHEMA_KEYWORDS.get(key)
        if key in _VALUES:
            out[key] = value
        elif key == "patternProperties" and isinstance(value, dict):
            out[key] = _by_python_pattern(value)
        elif kind == "map" and isinstance(value, dict):  # (names, not keywords)
            out[key] = {name: judged_schema(sub) for name, sub in value.items()}
        else:
            out[key] = judged_schema(value)
    return out


def _by_python_pattern(subschemas: dict) -> dict:
    """``patternProperties``' map by :func:`python_pattern`; patterns of one
    spelling (the same strings) apply all their schemas (``allOf``)."""
    out: dict = {}
    for pattern, sub in subschemas.items():
        key = python_pattern(pattern)
        out[key] = {"allOf": [out[key], judged_schema(sub)]} if key in out else judged_schema(sub)
    return out


@functools.cache
def validator_class(cls: type) -> type:
    """The validator class ``cls`` (a draft's) with ``pattern`` read as ECMA-262."""
    return jsonschema.validators.extend(cls, {"pattern": _pattern})


def _pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Any:
    if validator.is_type(instance, "string") and not _found(pattern, instance):
        yield jsonschema.ValidationError(f"{instance!r} does not match {pattern!r}")


def _found(pattern: str, text: str) -> bool:
    try:
        return _pattern_automaton(pattern).matches(text.encode())
    except UnicodeEncodeError:  # (a lone surrogate: no pattern's character here)
        return False


@functools.lru_cache(maxsize=1024)
def _pattern_automaton(pattern: str) -> LazyDFA:
    return LazyDFA(pattern_node(pattern))


@functools.cache
def format_checker() -> jsonschema.FormatChecker:
    """A checker of this package's formats (``formats.FORMATS``), each by its
    own language; other names annotate."""
    checker = jsonschema.FormatChecker(())
    for name in formats.FORMATS:
        checker.checks(name)(functools.partial(_conforms, name))
    return checker


def _conforms(name: str, instance: Any) -> bool:
    if not isinstance(instance, str):
        return True
    try:
        return _format_automaton(name).matches(instance.encode())
    except UnicodeEncodeError:  # (a lone surrogate: no format's character)
        return False


@functools.cache
def _format_automaton(name: str) -> LazyDFA:
    return LazyDFA(formats.format_node(name))
