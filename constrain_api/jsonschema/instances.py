"""JSON instances as the text the lowered constraint expects.

``lower_json_schema`` fixes the order of object members (declared properties
in schema order — through ``$ref``, ``allOf`` and the first matching
``anyOf``/``oneOf`` branch — then ``required``-only names, then the names
a ``not`` and the other branches of such a ``oneOf`` name, then the rest), and
emits compact JSON. ``instance_text(schema, instance)`` serialises a valid
instance that way, so it can be fed, token by token, to a checker of the
schema: the conformance suite uses it for MaskBench's instances, and users
for targets and tests. It orders; it does not validate.
"""

from __future__ import annotations

import json
import re
from typing import Any

import jsonschema

from ..errors import ConstraintError, UnsupportedConstraint
from .judging import format_checker, judged_schema, validator_class
from .keywords import members_declared, members_named
from .refs import SchemaIndex, index_schema
from .values import is_valid

__all__ = ["instance_text"]

#: Keywords that never reject a value (beside a ``not``, they leave it alone).
_ANNOTATIONS = frozenset({"title", "description", "$comment", "default", "examples"})


def instance_text(schema: Any, instance: Any) -> str:
    """``instance`` as compact JSON with object members in the order the
    lowering fixes: declared properties (schema order, through ``$ref``,
    ``allOf`` and the first matching ``anyOf``/``oneOf`` branch), then
    ``required``-only names, then the names a ``not`` and the ``oneOf``'s
    other branches name (in branch order), then the rest in instance order."""
    doc = _Document(index_schema(schema))
    ordered = _order(doc, schema, "", instance, 0)
    return json.dumps(ordered, ensure_ascii=False, separators=(",", ":"))


def _branches(doc, schema, pointer, instance, depth) -> list[tuple[Any, str]]:
    """The (sub)schemas that apply to ``instance`` at this level, in the
    lowering's merge order: the schema, its ``$ref`` target and ``allOf``
    branches depth first, then the first valid branch of each
    ``anyOf``/``oneOf`` met on the way (the lowering distributes those last)."""
    own: list[tuple[Any, str]] = []
    choices: list[tuple[Any, str]] = []
    _collect(doc, schema, pointer, instance, depth, own, choices)
    out = list(own)
    for branch, where in choices:
        out += _branches(doc, branch, where, instance, depth + 1)
    return out


def _others_named(doc, schema, pointer, instance, depth) -> list[str]:
    """The names ``schema`` names beyond its own members, in the order the
    lowering declares them after those: the members its dependency keywords
    name (each member, then what it requires), those its ``if``/``then``/
    ``else`` declare or require, those the dependency keywords of the
    conditional case the instance takes name, those the branches of its ``oneOf`` other
    than the one ``instance`` matches first do (in branch order), those its
    ``not`` does, then those its ``not``'s ``anyOf``/``oneOf`` branches do.
    Where the lowering does not declare them they are additional members,
    in any order."""
    if not isinstance(schema, dict):
        return []
    names: list[str] = []

    def add(named: list) -> None:
        for n in named:  # ("\0": a name members_named cannot know, where the lowering refuses)
            if isinstance(n, str) and n != "\0" and n not in names:
                names.append(n)

    def members(part: Any) -> list:
        return members_declared(part) if isinstance(part, dict) else []

    add(_dependency_members(schema))
    for key in ("if", "then", "else"):
        add(members(schema.get(key)))
    if "if" in schema:  # (the case the instance takes declares its parts' dependencies)
        taken = ("if", "then") if _valid(doc, schema["if"], instance) else ("else",)
        for key in taken:
            add(_dependency_members(schema.get(key)))
    branches = schema.get("oneOf", [])
    chosen = next((i for i, b in enumerate(branches) if _valid(doc, b, instance)), None)
    for i, branch in enumerate(branches):
        if i == chosen:
            continue
        where = f"{pointer}/oneOf/{i}"
        own: list[tuple[Any, str]] = []
        _collect(doc, branch, where, instance, depth + 1, own, [])
        for s, _ in own:
            add(members(s))
        add(_union_members(doc, branch, where, instance, depth))
    neg = schema.get("not")
    if isinstance(neg, dict):
        add(_merged_members(doc, neg, f"{pointer}/not", instance, depth))
        add(_union_members(doc, neg, f"{pointer}/not", instance, depth))
    return names


def _dependency_members(schema: Any) -> list[str]:
    """The members ``schema``'s dependency keywords name: each member, then
    those it requires (a dependent schema's branches name members too: the
    lowering declares them all, in this order)."""
    names: list[str] = []
    for key in ("dependencies", "dependentRequired", "dependentSchemas"):
        entries = schema.get(key) if isinstance(schema, dict) else None
        for name, dep in entries.items() if isinstance(entries, dict) else ():
            names += [name, *(dep if isinstance(dep, list) else members_named(dep))]
    return names


def _merged_members(doc, schema, pointer, instance, depth) -> list[str]:
    """The names ``schema`` declares, then those it requires, its ``$ref``
    and ``allOf`` merged in (the order of the lowering's merge)."""
    own: list[tuple[Any, str]] = []
    _collect(doc, schema, pointer, instance, depth + 1, own, [])
    parts = [s for s, _ in own if isinstance(s, dict)]
    return [
        *(n for s in parts for n in s.get("properties", {})),
        *(n for s in parts for n in s.get("required", [])),
    ]


def _union_members(doc, schema, pointer, instance, depth) -> list[str]:
    """The names the branches of ``schema``'s ``anyOf`` (else ``oneOf``)
    declare and require, each merged, in branch order: what the lowering
    declares for the ways a value fails such a union."""
    if not isinstance(schema, dict):
        return []
    key = "anyOf" if "anyOf" in schema else "oneOf"
    branches = schema.get(key, [])
    return [
        n
        for i, branch in enumerate(branches if isinstance(branches, list) else [])
        for n in _merged_members(doc, branch, f"{pointer}/{key}/{i}", instance, depth)
    ]


def _collect(doc, schema, pointer, instance, depth, own, choices) -> None:
    if not isinstance(schema, dict) or depth > 40:
        return
    if isinstance(schema.get("$ref"), str):
        try:
            target = doc.resolve(schema["$ref"], pointer)
            _collect(doc, doc.at(target), target, instance, depth + 1, own, choices)
        except (UnsupportedConstraint, ConstraintError):
            pass
        if doc.legacy_ref:
            return
    own.append((schema, pointer))
    for i, branch in enumerate(schema.get("allOf", [])):
        _collect(doc, branch, f"{pointer}/allOf/{i}", instance, depth + 1, own, choices)
    neg = schema.get("not")
    if isinstance(neg, dict) and "not" in neg and not set(neg) - {"not", *_ANNOTATIONS}:
        # (not not X: the lowering applies X as it does an allOf member)
        _collect(doc, neg["not"], f"{pointer}/not/not", instance, depth + 1, own, choices)
    for key in ("anyOf", "oneOf"):
        for i, branch in enumerate(schema.get(key, [])):
            if _valid(doc, branch, instance):
                choices.append((branch, f"{pointer}/{key}/{i}"))
                break


class _Document:
    """The schema document ``instance_text`` orders by: its index (``refs``)
    and, built once, a validator of it that reads patterns and formats as the
    lowering reads them (``judging``)."""

    def __init__(self, index: SchemaIndex) -> None:
        self.index = index
        self.legacy_ref = index.legacy_ref
        self._validator: Any = None

    def resolve(self, ref: str, pointer: str) -> str:
        return self.index.resolve(ref, pointer)

    def at(self, pointer: str) -> Any:
        return self.index.at(pointer)

    def validator(self) -> Any:
        if self._validator is None:
            root = self.index.root
            cls = jsonschema.validators.validator_for(root, default=jsonschema.Draft202012Validator)
            self._validator = validator_class(cls)(
                judged_schema(root), format_checker=format_checker()
            )
        return self._validator


def _valid(doc: _Document, schema, instance) -> bool:
    """Whether ``instance`` is valid under ``schema`` (a part of the document)."""
    try:
        return is_valid(doc.validator().evolve(schema=judged_schema(schema)), instance)
    except Exception:  # an unresolvable reference, a validation that never ends: not this branch
        return False


def _order(doc, schema, pointer, instance, depth) -> Any:
    levels = _branches(doc, schema, pointer, instance, depth)
    for s, _ in levels:  # an enum/const object fixes its own member order
        values = s.get("enum", []) + ([s["const"]] if "const" in s else [])
        for value in values:
            if isinstance(value, dict | list) and _same(value, instance):
                return _like(value, instance)
    if isinstance(instance, dict):
        names: list[str] = []
        required: list[str] = []
        for s, _ in levels:
            names += [n for n in s.get("properties", {}) if n not in names]
            required += [n for n in s.get("required", []) if n not in required]
        names += [n for n in required if n not in names]
        for s, p in levels:
            others = _others_named(doc, s, p, instance, depth)
            names += [n for n in others if n not in names]
        keys = [n for n in names if n in instance] + [k for k in instance if k not in names]
        out = {}
        for k in keys:
            subs = [
                (s["properties"][k], f"{p}/properties/{k}")
                for s, p in levels
                if k in s.get("properties", {})
            ]
            if not subs:  # patternProperties apply to undeclared names (search semantics)
                subs = [
                    (sub, f"{p}/patternProperties/{pattern}")
                    for s, p in levels
                    for pattern, sub in s.get("patternProperties", {}).items()
                    if _matches(pattern, k)
                ]
            if not subs:
                subs = [
                    (s["additionalProperties"], f"{p}/additionalProperties")
                    for s, p in levels
                    if isinstance(s.get("additionalProperties"), dict)
                ]
            sub, sp = subs[0] if subs else (True, pointer)
            out[k] = _order(doc, sub, sp, instance[k], depth + 1)
        return out
    if isinstance(instance, list):
        out_list = []
        for i, v in enumerate(instance):
            sub, sp = True, pointer
            for s, p in levels:
                prefix = s.get(
                    "prefixItems", s.get("items") if isinstance(s.get("items"), list) else []
                )
                if i < len(prefix):
                    sub, sp = prefix[i], p
                    break
                if isinstance(s.get("items"), dict):
                    sub, sp = s["items"], f"{p}/items"
                    break
            out_list.append(_order(doc, sub, sp, v, depth + 1))
        return out_list
    return instance


def _matches(pattern: str, name: str) -> bool:
    """ECMA ``pattern`` (as Python ``re``, close enough for ordering) found in ``name``."""
    try:
        return re.search(pattern, name) is not None
    except re.error:
        return False


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return a == b and (type(a) is type(b) or {type(a), type(b)} <= {int, float})


def _like(value: Any, instance: Any) -> Any:
    """``instance`` with the member order of the equal ``value``."""
    if isinstance(value, dict):
        return {k: _like(value[k], instance[k]) for k in value}
    if isinstance(value, list):
        return [_like(v, i) for v, i in zip(value, instance, strict=True)]
    return instance
