"""Fixtures of the suite: the backend under test, the oracle, the vocabulary,
compiled pairs, the matrix recorder and the per-case timeout."""

from __future__ import annotations

import signal

import pytest

import constrain_api as ca
from constrain_conformance import corpus
from constrain_conformance.plugin import LAST_OUTCOME, BackendSpec, results


@pytest.fixture(scope="session")
def backend(backend_spec: BackendSpec) -> ca.Backend:
    """The backend under test."""
    return backend_spec.create()


@pytest.fixture(scope="session")
def oracle(request: pytest.FixtureRequest) -> ca.Backend:
    """The oracle (``naive``)."""
    return ca.get(request.config.getoption("--oracle"))


@pytest.fixture(scope="session")
def vocab(vocab_name: str) -> ca.Vocabulary:
    """The vocabulary of this run (skips when a real one is absent)."""
    if vocab_name == "small":
        return corpus.small_vocabulary()
    try:
        return corpus.real_vocabulary(vocab_name)
    except FileNotFoundError as e:
        pytest.skip(str(e))


_COMPILED: dict = {}


@pytest.fixture
def compiled_pair(backend_spec, backend, oracle, vocab, case, record):
    """(backend's Compiled, oracle's Compiled) for this case. Skips what the
    backend's capabilities exclude (recorded ``unsupported``), what it refuses
    to compile (``refused``: a kind it declares, yet ``UnsupportedConstraint``
    or ``CompileLimitExceeded``) and what only the oracle refuses
    (``unjudged``: nothing to compare with); the matrix counts each."""
    if not backend.capabilities.supports(case.spec.kind):
        record("unsupported")
        pytest.skip(f"{backend_spec} does not support {case.spec.kind} (its Capabilities)")
    key = (str(backend_spec), case.name, vocab.fingerprint)
    if key not in _COMPILED:
        try:
            mine = backend.compile(case.spec, vocab)
        except (ca.UnsupportedConstraint, ca.CompileLimitExceeded) as e:
            _COMPILED[key] = ("refused", e)
        else:
            try:
                _COMPILED[key] = (mine, oracle.compile(case.spec, vocab))
            except (ca.UnsupportedConstraint, ca.CompileLimitExceeded) as e:
                _COMPILED[key] = ("unjudged", e)
    value = _COMPILED[key]
    if value[0] == "refused":
        record("refused")
        pytest.skip(f"{backend_spec} refused {case.name}: {value[1]}")
    if value[0] == "unjudged":
        record("unjudged")
        pytest.skip(f"the oracle refused {case.name}, nothing to compare with: {value[1]}")
    return value


@pytest.fixture
def record(request: pytest.FixtureRequest, backend_spec: BackendSpec):
    """``record(outcome, precision=, recall=, reproduced=, targets=, family=)``
    into the matrix row of this test (``reproduced``, ``targets``:
    minimal-invasiveness counts; ``family``: the row of a test without a
    case, whose own is ``errors``)."""
    case = request.getfixturevalue("case") if "case" in request.fixturenames else None
    rows = results(request.config)

    def add(
        outcome: str,
        precision: float = 1.0,
        recall: float = 1.0,
        reproduced: int = 0,
        targets: int = 0,
        family: str | None = None,
    ) -> None:
        row = rows[(str(backend_spec), family or (case.family if case else "errors"))]
        request.node.stash[LAST_OUTCOME] = outcome
        if outcome == "unsupported":
            row.unsupported += 1
        elif outcome == "refused":
            row.refused += 1
        elif outcome == "unjudged":
            row.unjudged += 1
        elif outcome == "pass":
            row.passed += 1
        else:
            row.failed += 1
        row.precision = min(row.precision, precision)
        row.recall = min(row.recall, recall)
        row.reproduced += reproduced
        row.targets += targets

    return add


@pytest.fixture(autouse=True)
def _case_timeout(request: pytest.FixtureRequest):
    """Fail a case that runs past ``--conformance-timeout`` instead of hanging."""
    if request.node.get_closest_marker("conformance") is None:
        yield
        return
    seconds = request.config.getoption("--conformance-timeout")

    def expire(signum, frame):
        raise TimeoutError(f"conformance case exceeded {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
