"""JSON values as schemas list and type them: equality as the validator
judges it (``1 == 1.0``, ``True != 1``), hashable keys, a schema's listed
values (``enum``/``const``, through ``allOf``) and the JSON types a schema or
its values may take."""

from __future__ import annotations

from typing import Any

from .keywords import (
    TYPES,
)


def types_of(s: dict) -> set[str]:
    t = s.get("type")
    if t is None:
        return set(TYPES)
    names = {t} if isinstance(t, str) else set(t)
    if "integer" in names and "number" not in names:
        names.add("integer")
    return names


#: Every JSON type as ``value_types`` names them.
EVERY_TYPE = frozenset({*TYPES, "integer"})


def json_equal(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


def enum_values(s: dict, where: str | None) -> list[Any]:
    values = list(s.get("enum", [])) if "enum" in s else None
    if "const" in s:
        c = s["const"]
        values = [c] if values is None else [v for v in values if json_equal(v, c)]
    out: dict[Any, Any] = {}  # by a key equal iff the values are JSON-equal: linear
    for v in values or []:
        if isinstance(v, dict) and "__never__" in v:
            continue
        out.setdefault(json_key(v), v)
    return list(out.values())


def json_key(v: Any) -> Any:
    """A hashable key with ``json_key(a) == json_key(b)`` iff ``json_equal(a, b)``
    (``1`` and ``1.0`` are one number; ``True`` is not ``1``)."""
    if isinstance(v, bool):
        return ("bool", v)
    if isinstance(v, int | float):
        return ("number", v)
    if isinstance(v, list):
        return ("array", tuple(json_key(x) for x in v))
    if isinstance(v, dict):
        return ("object", frozenset((k, json_key(x)) for k, x in v.items()))
    return (type(v).__name__, v)


def declared_types(s: dict) -> set[str]:
    t = s.get("type")
    if t is None:
        return set()
    return {t} if isinstance(t, str) else set(t)


def value_type(v: Any) -> str:
    """The JSON type of ``v``, integers as ``"number"``."""
    name = _type_name(v)
    return "number" if name == "integer" else name


def listed_values(s: Any) -> list[Any] | None:
    """The values ``s`` is limited to when it, or some of its ``allOf``
    members, list them (``enum``/``const``: the values every list has);
    ``None`` otherwise."""
    lists = []

    def collect(x: Any) -> None:
        if isinstance(x, dict):
            if "enum" in x or "const" in x:
                lists.append(enum_values(x, None))
            for member in x.get("allOf", []):
                collect(member)

    collect(s)
    if not lists:
        return None
    return [v for v in lists[0] if all(any(json_equal(v, w) for w in o) for o in lists[1:])]


def value_types(s: dict) -> set[str] | None:
    if "enum" in s or "const" in s:
        out = set()
        for v in enum_values(s, None):
            out.add(_type_name(v))
        return out
    if "type" not in s:
        return None
    names = types_of(s)
    return names | ({"integer"} if "number" in names else set())


def _type_name(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int) or (isinstance(v, float) and v.is_integer()):
        return "integer"
    if isinstance(v, float):
        return "number"
    if isinstance(v, str):
        return "string"
    return "array" if isinstance(v, list) else "object"


def is_valid(validator: Any, instance: Any) -> bool:
    """``validator.is_valid(instance)``, where a validation that never ends
    (a schema that refers back to itself through no instance keyword, as
    ``if``/``then`` with a ``$ref`` can) raises ``RecursionError`` however
    deep it stopped: inside the reference registry's Rust maps (``rpds``),
    Python's ``RecursionError`` comes out as pyo3's ``PanicException``, a
    ``BaseException`` that the callers' ``except Exception`` let through."""
    try:
        return validator.is_valid(instance)
    except Exception:
        raise
    except BaseException as e:
        if type(e).__name__ != "PanicException":
            raise
        raise RecursionError("the validator recursed without end") from None


class Judge:
    """A ``jsonschema`` validator whose ``is_valid`` is :func:`is_valid`."""

    __slots__ = ("validator",)

    def __init__(self, validator: Any) -> None:
        self.validator = validator

    def is_valid(self, instance: Any) -> bool:
        return is_valid(self.validator, instance)


__all__ = [
    "EVERY_TYPE",
    "Judge",
    "declared_types",
    "enum_values",
    "is_valid",
    "json_equal",
    "json_key",
    "listed_values",
    "types_of",
    "value_type",
    "value_types",
]
