"""End-to-end checks of the JSON Schema lowering: instance → canonical text →
membership in the lowered language, decided by the naive backend's exact
recognizers (``ByteDFA`` for regexes, its Earley recognizer for grammars)."""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from typing import Any

import jsonschema
from constrain_naive.earley import EarleyRecognizer

from constrain_api import Grammar, JsonSchema, Regex
from constrain_api.automata import ByteDFA
from constrain_api.errors import CompileLimitExceeded, ConstraintError, UnsupportedConstraint
from constrain_api.grammar import lower_grammar
from constrain_api.jsonschema import lower_json_schema
from constrain_api.jsonschema.refs import index_schema


def recognizer(constraint: Regex | Grammar):
    """``bytes -> bool`` for the lowered language."""
    if isinstance(constraint, Regex):
        return ByteDFA.from_regex(constraint.pattern).matches
    return EarleyRecognizer(lower_grammar(constraint)).accepts


def canonical_text(schema: Any, instance: Any) -> str:
    """``instance`` as compact JSON with object members in the order the
    lowering fixes: declared properties (schema order, through ``$ref``,
    ``allOf`` and the first matching ``anyOf``/``oneOf`` branch), then
    ``required``-only names, then the rest in instance order."""
    index = index_schema(schema)
    ordered = _order(index, schema, "", instance, 0)
    return json.dumps(ordered, ensure_ascii=False, separators=(",", ":"))


def _branches(index, schema, pointer, instance, depth) -> list[tuple[Any, str]]:
    """The (sub)schemas that apply to ``instance`` at this level, in the
    lowering's merge order: the schema, its ``$ref`` target and ``allOf``
    branches depth first, then the first valid branch of each
    ``anyOf``/``oneOf`` met on the way (the lowering distributes those last)."""
    own: list[tuple[Any, str]] = []
    choices: list[tuple[Any, str]] = []
    _collect(index, schema, pointer, instance, depth, own, choices)
    out = list(own)
    for branch, where in choices:
        out += _branches(index, branch, where, instance, depth + 1)
    return out


def _collect(index, schema, pointer, instance, depth, own, choices) -> None:
    if not isinstance(schema, dict) or depth > 40:
        return
    if isinstance(schema.get("$ref"), str):
        try:
            target = index.resolve(schema["$ref"], pointer)
            _collect(index, index.at(target), target, instance, depth + 1, own, choices)
        except (UnsupportedConstraint, ConstraintError):
            pass
        if index.legacy_ref:
            return
    own.append((schema, pointer))
    for i, branch in enumerate(schema.get("allOf", [])):
        _collect(index, branch, f"{pointer}/allOf/{i}", instance, depth + 1, own, choices)
    for key in ("anyOf", "oneOf"):
        for i, branch in enumerate(schema.get(key, [])):
            if _valid(index, branch, instance):
                choices.append((branch, f"{pointer}/{key}/{i}"))
                break


def _valid(index, schema, instance) -> bool:
    try:
        cls = jsonschema.validators.validator_for(
            index.root, default=jsonschema.Draft202012Validator
        )
        return cls(index.root).evolve(schema=schema).is_valid(instance)
    except Exception:  # an unresolvable reference: not this branch
        return False


def _order(index, schema, pointer, instance, depth) -> Any:
    levels = _branches(index, schema, pointer, instance, depth)
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
            out[k] = _order(index, sub, sp, instance[k], depth + 1)
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
            out_list.append(_order(index, sub, sp, v, depth + 1))
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


@dataclass
class Outcome:
    """One schema's result: ``status`` is supported / unsupported / limit / error."""

    status: str
    seconds: float
    kind: str = ""
    reason: str = ""
    wrong: list[str] = field(default_factory=list)
    checked: int = 0


def run_schema(schema: Any, tests: list[dict], **spec_options: Any) -> Outcome:
    """Lower ``schema`` and check every test instance against the language."""
    t0 = time.perf_counter()
    try:
        spec = JsonSchema(schema, **spec_options)
        lowered = lower_json_schema(spec)
    except UnsupportedConstraint as e:
        return Outcome("unsupported", time.perf_counter() - t0, reason=str(e))
    except CompileLimitExceeded as e:
        return Outcome("limit", time.perf_counter() - t0, reason=str(e))
    except ConstraintError as e:
        return Outcome("error", time.perf_counter() - t0, reason=str(e))
    seconds = time.perf_counter() - t0
    kind = "regex" if isinstance(lowered, Regex) else "grammar"
    try:
        accepts = recognizer(lowered)
    except CompileLimitExceeded as e:
        return Outcome("limit", seconds, kind, reason=f"recognizer: {e}")
    out = Outcome("supported", seconds, kind)
    for test in tests:
        text = canonical_text(schema, test["data"])
        got = accepts(text.encode())
        out.checked += 1
        if got != test["valid"]:
            want = "valid" if test["valid"] else "invalid"
            out.wrong.append(f"{want} {text[:200]!r} ({test.get('description', '')})")
    return out
