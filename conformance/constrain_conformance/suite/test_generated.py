"""Generated constraints against the oracle (``generated.py``): per backend
and kind, ``--conformance-generated`` regexes, grammars or schemas drawn by
Hypothesis (derandomized: every run draws the same ones), each compiled
by the backend and the oracle on the generated vocabulary, their masks
compared along three random paths of the oracle. A constraint the oracle
refuses or finds empty is not judged; one the backend refuses
(``UnsupportedConstraint``, ``CompileLimitExceeded``, at compile time or
at a step) counts as refused, never as a pass. On a failure Hypothesis
shrinks the constraint to a small one and prints it."""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings

import constrain_api as ca
from constrain_conformance import checks, generated, paths

pytestmark = pytest.mark.conformance

#: Random paths per constraint, and their most tokens.
PATHS, PATH_TOKENS = 3, 14


@pytest.mark.parametrize("kind", sorted(generated.GENERATED))
def test_generated_constraints_match_the_oracle(
    kind, backend, backend_spec, oracle, request, record
):
    if str(backend_spec) == request.config.getoption("--oracle"):
        pytest.skip(f"{backend_spec} is the oracle: its masks are the reference, not checked")
    if not backend.capabilities.supports(kind):
        record("unsupported", family=kind)
        pytest.skip(f"{backend_spec} does not support {kind} (its Capabilities)")
    count = request.config.getoption("--conformance-generated")
    if count <= 0:
        pytest.skip("--conformance-generated is 0")
    strategy, make = generated.GENERATED[kind]
    vocab = generated.generated_vocabulary()
    exact = backend.capabilities.is_exact(kind)

    @settings(
        max_examples=count,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(strategy)
    def check(text):
        outcome, precision, recall = _judge(make, text, backend, oracle, vocab, exact)
        record(outcome, precision, recall, family=kind)

    check()


def _judge(make, text, backend, oracle, vocab, exact) -> tuple[str, float, float]:
    """``(outcome, precision, recall)`` of one generated constraint;
    an ``AssertionError`` naming the constraint and the path where the
    backend's masks are not the oracle's (not exact where it declares
    the kind exact, more permissive anywhere)."""
    try:
        spec = make(text)
        reference = oracle.compile(spec, vocab)
    except ca.ConstrainError:  # malformed, empty, or beyond the oracle
        return "unjudged", 1.0, 1.0
    try:
        compiled = backend.compile(spec, vocab)
    except (ca.UnsupportedConstraint, ca.CompileLimitExceeded):
        return "refused", 1.0, 1.0
    rng = random.Random(repr(spec))
    precision = recall = 1.0
    for _ in range(PATHS):
        path = paths.random_path(reference, rng, PATH_TOKENS)
        try:
            result = checks.compare_masks(compiled, reference, path)
        except ca.CompileLimitExceeded:  # a bound met at a step: documented, not wrong
            return "refused", 1.0, 1.0
        assert result.exact if exact else result.sound, (
            f"{spec.describe()} along {[vocab.token_name(t) for t in path]}: "
            f"{result.describe(vocab)}"
        )
        precision, recall = min(precision, result.precision), min(recall, result.recall)
    return "pass", precision, recall
