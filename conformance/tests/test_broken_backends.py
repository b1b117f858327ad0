"""The suite catches broken backends: each deliberately broken variant of the
oracle fails the check aimed at its defect, directly and through pytest."""

from __future__ import annotations

import time

import numpy as np
import pytest
from constrain_conformance import checks, corpus, paths
from constrain_conformance.report import FAMILIES

import constrain_api as ca

pytest_plugins = ["pytester"]


class Tampered:
    """A checker that delegates to the oracle's and then breaks one thing."""

    def __init__(self, inner, defect: str, vocab: ca.Vocabulary):
        self.inner, self.defect, self.vocab = inner, defect, vocab
        self.masks_filled = 0

    def fill_mask(self, bitmask, row: int = 0) -> None:
        if self.defect == "hangs":
            time.sleep(30)
        self.inner.fill_mask(bitmask, row)
        self.masks_filled += 1
        words = ca.vocab_row(bitmask, row, self.vocab.size)
        allowed = ca.TokenMask(words, self.vocab.size)
        # "allows-forbidden-late": correct for its first 8 masks, then like "allows-forbidden"
        late = self.defect == "allows-forbidden-late" and self.masks_filled > 8
        if (self.defect == "allows-forbidden" or late) and allowed.count():
            forbidden = np.setdiff1d(self.vocab.normal_ids(), allowed.allowed_ids())
            if forbidden.size:  # one extra token, whenever anything is allowed
                t = int(forbidden[0])
                words[t >> 5] |= np.int32(np.uint32(1 << (t & 31)).view(np.int32))
        if self.defect == "misses-bridge":
            for t in allowed.allowed_ids().tolist():  # drop tokens spanning '"' and more
                data = self.vocab.token_bytes(t)
                if b'"' in data and len(data.strip(b'"')) and data != b'"':
                    words[t >> 5] &= np.int32(
                        np.uint32(~(1 << (t & 31)) & 0xFFFFFFFF).view(np.int32)
                    )

    def mask(self) -> ca.TokenMask:
        words = ca.allocate_bitmask(1, self.vocab.size)[0]
        self.fill_mask(words)
        return ca.TokenMask(words, self.vocab.size)

    def is_finished(self) -> bool:
        finished = self.inner.is_finished()
        return not finished if self.defect == "finished-lies" else finished

    def rollback(self, n: int) -> None:
        if self.defect == "rollback-off-by-one" and n > 1:
            n -= 1
        self.inner.rollback(n)

    def fork(self):
        return Tampered(self.inner.fork(), self.defect, self.vocab)

    def __getattr__(self, name):  # init, update, accepts, validate, is_accepting, ...
        return getattr(self.inner, name)


class TamperedCompiled:
    def __init__(self, inner: ca.Compiled, defect: str):
        self.inner, self.defect = inner, defect
        self.spec, self.vocab, self.stats = inner.spec, inner.vocab, inner.stats

    def checker(self):
        return Tampered(self.inner.checker(), self.defect, self.vocab)

    def fill_masks(self, checkers, bitmask):
        for i, c in enumerate(checkers):
            c.fill_mask(bitmask, i)
        if self.defect == "batch-rows-swapped" and len(checkers) > 1:
            bitmask[[0, 1]] = bitmask[[1, 0]]
        if self.defect == "batch-writes-past":
            bitmask[len(checkers) :] = 0


def broken_backend(defect: str) -> type:
    class Broken:
        name = f"broken-{defect}"
        capabilities = ca.get("naive").capabilities

        def compile(self, spec, vocab, **options):
            if defect == "compile-hangs":
                time.sleep(30)
            if defect == "refuses-schemas" and spec.kind == "json_schema":
                raise ca.UnsupportedConstraint(self.name, "json schemas", "on purpose")
            return TamperedCompiled(ca.get("naive").compile(spec, vocab), defect)

    return Broken


class Unbounded:
    """A backend whose ``compile`` takes no options: neither ``max_states``
    nor a time budget bounds it."""

    name = "broken-unbounded"
    capabilities = ca.get("naive").capabilities

    def compile(self, spec, vocab):
        return ca.get("naive").compile(spec, vocab, max_states=10**6)


@pytest.fixture(scope="module")
def json_case():
    return next(c for c in corpus.CASES if c.name == "json")


@pytest.fixture(scope="module")
def vocab():
    return corpus.small_vocabulary()


@pytest.fixture(scope="module")
def oracle(json_case, vocab):
    return ca.get("naive").compile(json_case.spec, vocab)


def test_allowing_a_forbidden_token_is_caught(json_case, vocab, oracle):
    broken = TamperedCompiled(oracle, "allows-forbidden")
    result = checks.compare_masks(broken, oracle, paths.natural(vocab, json_case.valid[0]))
    assert result.extra and result.precision < 1.0 and not result.exact


def test_missing_a_bridge_token_is_caught(json_case, vocab, oracle):
    broken = TamperedCompiled(oracle, "misses-bridge")
    path = paths.longest_match(vocab, json_case.valid[0])
    result = checks.compare_masks(broken, oracle, path)
    assert result.missing and result.recall < 1.0 and not result.extra
    assert any(b'"' in vocab.token_bytes(t) for _, t in result.missing)


def test_is_finished_disagreeing_with_the_mask_is_caught(json_case, vocab, oracle):
    """Masks right, ``is_finished`` wrong (once a mutant no test saw)."""
    broken = TamperedCompiled(oracle, "finished-lies")
    result = checks.compare_masks(broken, oracle, paths.natural(vocab, json_case.valid[0]))
    assert not result.extra and not result.missing
    assert result.finished_wrong and not result.exact and not result.sound


def test_rollback_off_by_one_is_caught(json_case, vocab, oracle):
    broken = TamperedCompiled(oracle, "rollback-off-by-one")
    failures = checks.state_operation_failures(broken, paths.natural(vocab, json_case.valid[0]))
    assert any("rollback" in f for f in failures)


@pytest.mark.parametrize(
    ("defect", "failure"),
    [
        ("batch-rows-swapped", "fill_masks row 0 differs"),
        ("batch-writes-past", "fill_masks wrote past"),
    ],
)
def test_a_batch_fill_unlike_the_rows_masks_is_caught(json_case, vocab, oracle, defect, failure):
    """``fill_masks`` (the loop's batch call) is checked against each
    checker's own mask, and against writing outside its rows."""
    broken = TamperedCompiled(oracle, defect)
    path = paths.natural(vocab, json_case.valid[0])
    failures = checks.state_operation_failures(broken, path)
    assert any(failure in f for f in failures), failures


def test_missing_a_bridge_token_is_invasive(json_case, vocab, oracle):
    broken = TamperedCompiled(oracle, "misses-bridge")
    targets = [paths.natural(vocab, doc) for doc in json_case.valid]
    assert not all(checks.reproduces(broken, t) for t in targets)


def test_the_intact_oracle_passes_the_same_checks(json_case, vocab, oracle):
    path = paths.longest_match(vocab, json_case.valid[0])
    assert checks.compare_masks(oracle, oracle, path).exact
    assert not checks.state_operation_failures(oracle, path)
    assert all(checks.reproduces(oracle, paths.natural(vocab, d)) for d in json_case.valid)


def run_suite(pytester, backend: type, selection: str, *options: str):
    """Run the conformance suite on ``backend`` (registered for the run) for
    the tests ``-k selection`` selects; pytest's result."""
    unregister = ca.register(backend)
    try:
        return pytester.runpytest_inprocess(
            "--pyargs",
            "constrain_conformance.suite",
            "--backend",
            backend.name,
            "-k",
            selection,
            *options,
            "-p",
            "no:cacheprovider",
        )
    finally:
        unregister()


@pytest.mark.parametrize(
    ("defect", "failing_test"),
    [
        ("allows-forbidden", "test_masks_match_the_oracle"),
        ("misses-bridge", "test_masks_match_the_oracle"),
        ("misses-bridge", "test_minimal_invasiveness"),
        ("finished-lies", "test_masks_match_the_oracle"),
        ("rollback-off-by-one", "test_state_operations"),
    ],
)
def test_the_suite_run_by_pytest_fails_broken_backends(pytester, defect, failing_test):
    result = run_suite(pytester, broken_backend(defect), f"{failing_test} and json")
    outcomes = result.parseoutcomes()
    assert outcomes.get("failed", 0) >= 1, result.stdout.str()[-2000:]


def _matrix_of_a_timeout(pytester, tmp_path, defect: str, selection: str):
    """Run the suite on ``broken-<defect>`` with a 0.5 s case timeout:
    (pytest's outcomes, the matrix it wrote)."""
    report = tmp_path / "matrix.md"
    options = ("--conformance-timeout=0.5", f"--conformance-report={report}")
    result = run_suite(pytester, broken_backend(defect), selection, *options)
    return result.parseoutcomes(), report.read_text()


def test_a_failure_the_check_did_not_record_is_in_the_matrix(pytester, tmp_path):
    """A backend that hangs fails by the per-case timeout, before it could
    record anything: the matrix must still say FAIL, and why."""
    outcomes, text = _matrix_of_a_timeout(
        pytester, tmp_path, "hangs", "test_state_operations and json"
    )
    assert outcomes.get("failed", 0) >= 1
    assert "| `broken-hangs` |" in text and "**FAIL**" in text
    assert "TimeoutError" in text


def test_a_compile_that_times_out_is_a_failure_in_the_matrix(pytester, tmp_path):
    """A compile that runs past the timeout fails in the test's set-up (where
    the case is compiled): the matrix must count it as a failure, not drop it."""
    outcomes, text = _matrix_of_a_timeout(
        pytester, tmp_path, "compile-hangs", "test_masks_match_the_oracle and json and natural"
    )
    assert outcomes.get("errors", 0) >= 1
    assert "| `broken-compile-hangs` |" in text and "**FAIL**" in text
    assert "TimeoutError" in text


def test_max_steps_bounds_the_mask_comparison_and_the_matrix_says_so(pytester, tmp_path):
    """``--conformance-max-steps`` compares only the first tokens of each path:
    a defect past the bound goes unseen there (and the matrix says the bound),
    while the unbounded run catches it."""
    backend = broken_backend("allows-forbidden-late")
    selection = "test_masks_match_the_oracle and date-time and bytes"
    outcomes, texts = [], []
    for bound in ("0", "4"):
        report = tmp_path / f"matrix-{bound}.md"
        options = (f"--conformance-max-steps={bound}", f"--conformance-report={report}")
        result = run_suite(pytester, backend, selection, *options)
        outcomes.append(result.parseoutcomes())
        texts.append(report.read_text())
    assert outcomes[0].get("failed", 0) >= 1, outcomes[0]
    assert outcomes[1].get("failed", 0) == 0 and outcomes[1].get("passed", 0) >= 1, outcomes[1]
    assert "first 4 tokens" in texts[1] and "first" not in texts[0].split("|")[0]


def test_refusals_are_counted_in_the_matrix_not_shown_as_passes(pytester, tmp_path):
    """A backend that refuses a kind it declares: its checks skip, and the
    matrix cell says how many were refused instead of a bare pass."""
    report = tmp_path / "matrix.md"
    selection = "test_masks_match_the_oracle and natural and (person-schema or json-string)"
    options = (f"--conformance-report={report}",)
    result = run_suite(pytester, broken_backend("refuses-schemas"), selection, *options)
    outcomes = result.parseoutcomes()
    assert outcomes.get("skipped", 0) >= 1 and outcomes.get("passed", 0) >= 1, outcomes
    row = next(line for line in report.read_text().splitlines() if "`broken-refuses" in line)
    cells = [c.strip() for c in row.split("|")[2:-1]]
    schema_cell = cells[FAMILIES.index("json_schema")]
    assert "refused" in schema_cell and "pass" not in schema_cell, row
    assert all("refused" not in c for i, c in enumerate(cells) if FAMILIES[i] != "json_schema"), row


def test_a_backend_with_no_compile_bound_fails_the_limit_check(pytester):
    """``test_compile_limit_is_enforced`` must not skip a backend that takes
    neither ``max_states`` nor ``max_seconds``: it fails."""
    result = run_suite(pytester, Unbounded, "test_compile_limit_is_enforced")
    outcomes = result.parseoutcomes()
    assert outcomes.get("failed", 0) >= 1 and not outcomes.get("skipped"), outcomes
    assert "neither max_states nor max_seconds" in result.stdout.str()
