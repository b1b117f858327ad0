"""The hostile-input runner (``nox -s fuzz``): each way a case can end is
classified as such (cases that misbehave on purpose), real corpus cases run,
and the report counts what it was given."""

from __future__ import annotations

import pytest
from constrain_conformance import fuzz, hostile

import constrain_api as ca


@pytest.fixture(scope="module")
def ctx():
    return fuzz.context()


EXPECTED = {
    "harness-ok": "ok",
    "harness-wrong": "wrong",
    "harness-documented": "error",
    "harness-undocumented": "undocumented",
    "harness-crash": "crash",
    "harness-hang": "hang",
    "harness-memory": "memory",
}


@pytest.mark.parametrize("case", hostile.HARNESS, ids=lambda c: c.name)
def test_every_ending_is_classified(ctx, case):
    # the hanging case waits out its timeout; the others get room for a
    # subprocess's start-up on a loaded 2-core machine (3 s was seen to flake)
    timeout = 3 if EXPECTED[case.name] == "hang" else 30
    result = fuzz.run_case(ctx, "naive", case, corpus="harness", timeout=timeout, memory_mb=600)
    assert result.outcome == EXPECTED[case.name], result
    if result.outcome == "crash":
        assert result.detail == "signal 11"


@pytest.mark.parametrize(
    ("name", "outcome"),
    [
        ("update-float-id", "ok"),
        ("fill-mask-negative-stride", "ok"),
        ("empty-regex-class", "ok"),
        ("regex-unbalanced", "error"),
        ("regex-count-129", "ok"),
    ],
)
def test_corpus_cases_run_in_their_own_process(ctx, name, outcome):
    case = next(c for c in hostile.corpus() if c.name == name)
    assert fuzz.run_case(ctx, "domino", case, timeout=60).outcome == outcome


def test_the_corpus_is_seeded_and_its_names_unique():
    names = [c.name for c in hostile.corpus(seed=3)]
    assert len(names) == len(set(names))

    def specs(seed):
        built = []
        for case in hostile.generated(seed):
            try:
                built.append(repr(case.spec()))
            except ca.ConstraintError as e:  # a mutated one that does not parse
                built.append(str(e))
        return built

    assert specs(3) == specs(3)
    assert specs(3) != specs(4)


def test_the_report_counts_and_lists_failures():
    results = [
        fuzz.Result("naive", "a", "edge", "ok", "", 0.1),
        fuzz.Result("naive", "b", "edge", "crash", "signal 11", 0.2),
        fuzz.Result(
            "fst", "a", "edge", "error", "CompileLimitExceeded: compile limit max_states=5", 3.0
        ),
    ]
    text = fuzz.report(results, seed=0, vocab="small", timeout=60, memory_mb=8192)
    assert "| `naive` | 1 | 0 | 0 | 0 | 0 | 1 | 0 | 0 | 0 | 0.2 |" in text
    assert "- `naive` / `b`: **crash** — signal 11" in text
    assert "error (max_states)" in text
