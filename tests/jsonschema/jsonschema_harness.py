"""End-to-end checks of the JSON Schema lowering: instance → its text (``instance_text``) →
membership in the lowered language (``lower_json_schema_ir``: the form every
backend compiles), decided by exact recognizers that build only the states
the instances visit: the core's ``LazyDFA`` for regexes, the naive backend's
Earley recognizer over lazy terminal automata for grammars (the instances of
a schema whose automaton is too big to build whole are still decided)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from constrain_naive.earley import EarleyRecognizer
from hypothesis import HealthCheck, settings

from constrain_api import JsonSchema
from constrain_api.automata import LazyDFA, Node
from constrain_api.errors import CompileLimitExceeded, ConstraintError, UnsupportedConstraint
from constrain_api.grammar import GrammarIR
from constrain_api.jsonschema import instance_text, lower_json_schema_ir


def same_examples(n: int):
    """Hypothesis settings for ``n`` examples, the same ones every run (CI's)."""
    return settings(
        max_examples=n,
        deadline=None,
        derandomize=True,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )


def recognizer(constraint: Node | GrammarIR):
    """``bytes -> bool`` for the lowered language (a regex AST or a grammar)."""
    if not isinstance(constraint, GrammarIR):
        return LazyDFA(constraint).matches
    return EarleyRecognizer(constraint, lazy=True).accepts


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
        lowered = lower_json_schema_ir(spec)
    except UnsupportedConstraint as e:
        return Outcome("unsupported", time.perf_counter() - t0, reason=str(e))
    except CompileLimitExceeded as e:
        return Outcome("limit", time.perf_counter() - t0, reason=str(e))
    except ConstraintError as e:
        if e.message.startswith("no JSON value satisfies"):  # the empty language
            return _empty_language(schema, tests, time.perf_counter() - t0)
        return Outcome("error", time.perf_counter() - t0, reason=str(e))
    seconds = time.perf_counter() - t0
    kind = "grammar" if isinstance(lowered, GrammarIR) else "regex"
    try:
        accepts = recognizer(lowered)
    except CompileLimitExceeded as e:
        return Outcome("limit", seconds, kind, reason=f"recognizer: {e}")
    out = Outcome("supported", seconds, kind)
    for test in tests:
        text = instance_text(schema, test["data"])
        try:  # (lazy automata find their states, and meet their limits, as texts walk)
            got = accepts(text.encode())
        except CompileLimitExceeded as e:
            return Outcome("limit", seconds, kind, reason=f"recognizer: {e}")
        out.checked += 1
        if got != test["valid"]:
            want = "valid" if test["valid"] else "invalid"
            out.wrong.append(f"{want} {text[:200]!r} ({test.get('description', '')})")
    return out


def _empty_language(schema: Any, tests: list[dict], seconds: float) -> Outcome:
    """A schema the lowering refuses as admitting no value: right iff every
    test instance is invalid."""
    out = Outcome("supported", seconds, "empty")
    for test in tests:
        out.checked += 1
        if test["valid"]:
            text = instance_text(schema, test["data"])
            out.wrong.append(f"valid {text[:200]!r} refused as an empty language")
    return out
