"""The core's lowering on large inputs, first time (the core's caches cleared
each round): a 10,000-string ``enum`` (its lowering was quadratic: 21 s,
issue 27) and a 500-option ``Choice``. Run with
``pytest benchmarks/bench_lowering.py --benchmark-only``.
"""

from __future__ import annotations

import pytest

import constrain_api as ca

ENUM = [f"value-{i}-{i * 7919 % 1000}" for i in range(10_000)]


def _cleared():
    ca.clear_caches()
    return (), {}


@pytest.mark.parametrize("size", [1_000, 10_000])
def test_lower_a_large_enum(benchmark, size):
    spec = ca.JsonSchema({"enum": ENUM[:size]})
    lowered = benchmark.pedantic(lambda: ca.lower(spec), setup=_cleared, rounds=3)
    assert lowered.node is not None  # a regular language: one alternation


def test_lower_a_large_choice(benchmark):
    spec = ca.Choice(ENUM[:500])
    lowered = benchmark.pedantic(lambda: ca.lower(spec).dfa(), setup=_cleared, rounds=3)
    assert lowered.matches(ENUM[0].encode()) and not lowered.matches(b"value-")
