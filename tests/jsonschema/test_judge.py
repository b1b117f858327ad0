"""The JSON-schema lowering judged by an independent validator (issue 28).

Every backend, the oracle included, compiles what the lowering gives
(``lower_json_schema_ir``, through ``constrain_api.lower``), so the
conformance suite cannot see a lowering bug. Here the ``jsonschema``
package's validator (the schema's draft, Draft 2020-12 when it names none)
judges documents the lowering's own language produces:

* **drawn from the language**: seeded random walks over the lowered byte
  automaton (each byte chosen among the live ones, then completed by the
  shortest way to acceptance) must be JSON the validator (with an exact
  ``multipleOf``) accepts;
* **near the boundaries**: perturbed instances (numbers one step either
  side, strings a character longer or shorter, an item or member more or
  less) spelled by ``instance_text``: when the lowering accepts one, the
  validator must too.

Schemas: hand-written boundary cases (merged bounds, required sets, enums),
the Test Suite's supported regular cases and a MaskBench sample.
"""

from __future__ import annotations

import json
import random
from collections import deque
from fractions import Fraction
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from jsonschema_harness import recognizer

from constrain_api import JsonSchema
from constrain_api.automata import ByteDFA
from constrain_api.errors import CompileLimitExceeded, ConstraintError, UnsupportedConstraint
from constrain_api.grammar import GrammarIR
from constrain_api.jsonschema import instance_text, lower_json_schema_ir
from constrain_api.shared import shared_dir

WALKS = 25

BOUNDARY_SCHEMAS = [
    {"allOf": [{"maximum": 10}, {"maximum": 5}], "type": "integer"},
    {"allOf": [{"minimum": 3}, {"minimum": 7}], "type": "integer", "maximum": 20},
    {"allOf": [{"maxLength": 6}, {"maxLength": 3}], "type": "string"},
    {"allOf": [{"minLength": 1}, {"minLength": 4}], "type": "string", "maxLength": 8},
    {"allOf": [{"maxItems": 4}, {"maxItems": 2}], "type": "array", "items": {"type": "boolean"}},
    {"type": "integer", "exclusiveMinimum": -3, "exclusiveMaximum": 4},
    {"type": "number", "minimum": -1.5, "maximum": 2.25},
    {"type": "integer", "multipleOf": 3, "minimum": 0, "maximum": 30},
    {"type": "string", "pattern": "^[a-c]{2,3}$"},
    {"type": "array", "items": {"enum": ["x", 1, None]}, "minItems": 1, "maxItems": 3},
    {
        "type": "object",
        "properties": {"a": {"type": "integer", "maximum": 3}, "b": {"const": "k"}},
        "required": ["a"],
        "additionalProperties": False,
    },
    {
        "type": "object",
        "properties": {"n": {"type": "string", "maxLength": 2}},
        "required": ["n"],
        "minProperties": 1,
        "additionalProperties": {"type": "boolean"},
    },
    {"anyOf": [{"type": "integer", "maximum": -2}, {"type": "string", "minLength": 2}]},
    {"oneOf": [{"type": "boolean"}, {"type": "null"}]},
    {"enum": [[1, 2], {"a": True}, "s", 2.5]},
    {"not": {"pattern": "a"}},
    {"type": ["string", "integer"], "not": {"type": "string", "maxLength": 2}},
    {"allOf": [{"not": {"pattern": "^a"}}, {"not": {"pattern": "b$"}}], "maxLength": 4},
]


def _exact_multiple_of(validator, divisor, instance, schema):
    """``multipleOf`` in exact decimals: the package divides floats
    (0.5075 / 0.0001 = 5074.999…, so it calls 0.5075 no multiple of 0.0001)."""
    if not validator.is_type(instance, "number"):
        return
    quotient = Fraction(repr(instance)) / Fraction(repr(divisor))
    if quotient.denominator != 1:
        yield jsonschema.ValidationError(f"{instance!r} is not a multiple of {divisor!r}")


def _validator(schema: Any) -> jsonschema.protocols.Validator:
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    exact = jsonschema.validators.extend(cls, {"multipleOf": _exact_multiple_of})
    return exact(schema)


def _walk(dfa: ByteDFA, rng: random.Random, max_len: int = 120) -> bytes:
    """A random string of the language (see the module docstring)."""
    out, state = bytearray(), dfa.start
    rows, accept = dfa.rows, dfa.accept
    while len(out) < max_len:
        if accept[state] and rng.random() < 0.15:
            return bytes(out)
        live = [b for b in range(256) if rows[state][b] >= 0]
        if not live:
            break
        byte = rng.choice(live)
        out.append(byte)
        state = rows[state][byte]
    return bytes(out) + _shortest_completion(dfa, state)


def _shortest_completion(dfa: ByteDFA, state: int) -> bytes:
    rows, accept = dfa.rows, dfa.accept
    seen, todo = {state: b""}, deque([state])
    while todo:
        s = todo.popleft()
        if accept[s]:
            return seen[s]
        for b in range(256):
            t = rows[s][b]
            if t >= 0 and t not in seen:
                seen[t] = seen[s] + bytes([b])
                todo.append(t)
    raise AssertionError("a trimmed automaton reaches acceptance from every state")


def _perturbations(value: Any, rng: random.Random) -> list[Any]:
    """Values near ``value``: numbers a step away, strings and containers one longer/shorter."""
    out: list[Any] = []
    if isinstance(value, bool) or value is None:
        return [not value if isinstance(value, bool) else 0]
    if isinstance(value, int):
        return [value - 1, value + 1, value * 2, -value]
    if isinstance(value, float):
        return [value - 0.5, value + 0.5, value + 0.25]
    if isinstance(value, str):
        return [value[:-1], value + "a", value + value[:1]]
    if isinstance(value, list):
        out += [value[:-1], [*value, value[-1]] if value else [0]]
        if value:
            i = rng.randrange(len(value))
            out += [[*value[:i], p, *value[i + 1 :]] for p in _perturbations(value[i], rng)[:2]]
        return out
    if isinstance(value, dict):
        keys = list(value)
        if keys:
            k = rng.choice(keys)
            out.append({key: v for key, v in value.items() if key != k})
            out += [{**value, k: p} for p in _perturbations(value[k], rng)[:2]]
        out.append({**value, "zz_extra": 1})
        return out
    return out


def _lowered(schema: Any) -> Any:
    try:
        return lower_json_schema_ir(JsonSchema(schema))
    except (UnsupportedConstraint, CompileLimitExceeded, ConstraintError):
        return None


class _NoJudge(Exception):
    """The validator cannot judge this schema (e.g. a pattern Python's ``re``
    rejects, such as ``\\p{L}``)."""


def _valid(validator: Any, document: Any) -> bool:
    try:
        return validator.is_valid(document)
    except Exception as e:  # the validator's own limits, not a verdict
        raise _NoJudge(str(e)) from e


def judge(schema: Any, instances: list[Any], seed: int) -> list[str]:
    """What the validator and the lowering disagree on (empty: none)."""
    lowered = _lowered(schema)
    if lowered is None:
        return []
    try:
        return _judge(schema, lowered, instances, seed)
    except _NoJudge:
        return []


def _judge(schema: Any, lowered: Any, instances: list[Any], seed: int) -> list[str]:
    validator, rng, wrong = _validator(schema), random.Random(seed), []
    if not isinstance(lowered, GrammarIR):  # a regex AST
        try:
            dfa = ByteDFA.from_node(lowered, max_states=20_000)
        except CompileLimitExceeded:
            dfa = None
        for _ in range(WALKS if dfa is not None else 0):
            text = _walk(dfa, rng)
            try:
                document = json.loads(text)
            except ValueError:
                wrong.append(f"not JSON: {text[:80]!r}")
                continue
            if not _valid(validator, document):
                wrong.append(f"accepted but invalid: {text[:80]!r}")
    try:
        accepts = recognizer(lowered)
    except CompileLimitExceeded:
        return wrong
    for instance in instances:
        for near in _perturbations(instance, rng):
            try:
                text = instance_text(schema, near)
            except (ValueError, TypeError):
                continue
            try:
                taken = accepts(text.encode())
            except CompileLimitExceeded:  # (a lazy automaton past its bound)
                return wrong
            if taken and not _valid(validator, near):
                wrong.append(f"accepted but invalid: {text[:80]!r}")
    return wrong


@pytest.mark.parametrize("index", range(len(BOUNDARY_SCHEMAS)))
def test_boundary_schemas(index):
    schema = BOUNDARY_SCHEMAS[index]
    assert _lowered(schema) is not None, "the lowering should support this schema"
    seeds = [0, 1, 2, True, "ab", [True], {"a": 3, "b": "k"}, {"n": "x"}, 5, -2.0, 2.25]
    assert not judge(schema, seeds, index), schema


def _suite_cases() -> list[tuple[str, Any, list[Any]]]:
    base = shared_dir()
    folder = None if base is None else base / "json-schema-test-suite/tests/draft2020-12"
    if folder is None or not folder.is_dir():
        return []
    cases = []
    for f in sorted(folder.glob("*.json")):
        for case in json.loads(f.read_text()):
            instances = [t["data"] for t in case["tests"]]
            cases.append((f"{f.stem}: {case['description']}", case["schema"], instances))
    return cases


def _maskbench_sample(every: int = 16) -> list[Path]:
    base = shared_dir()
    folder = None if base is None else base / "maskbench" / "data"
    return sorted(folder.glob("*.json"))[::every] if folder is not None and folder.is_dir() else []


def test_the_test_suite_schemas():
    cases = _suite_cases()
    if not cases:
        pytest.skip("JSON Schema Test Suite not found under $CONSTRAIN_SHARED")
    wrong = []
    for i, (name, schema, instances) in enumerate(cases):
        wrong += [f"{name}: {w}" for w in judge(schema, instances, i)]
    assert not wrong, "\n".join(wrong[:20])


def test_a_maskbench_sample():
    files = _maskbench_sample()
    if not files:
        pytest.skip("MaskBench data not found under $CONSTRAIN_SHARED")
    wrong = []
    for i, f in enumerate(files):
        data = json.loads(f.read_text())
        instances = [t["data"] for t in data["tests"]]
        wrong += [f"{f.name}: {w}" for w in judge(data["schema"], instances, i)]
    assert not wrong, "\n".join(wrong[:20])
