"""The example backend: found through its entry point, certified by the
conformance suite, and rejected by it when one line of it is broken."""

from __future__ import annotations

import inspect
import types

import constrain_choicetrie
import pytest

import constrain_api as ca

pytest_plugins = ["pytester"]


def run_suite(pytester, backend: str, report) -> dict:
    """The conformance suite on ``backend`` (small vocabulary), in-process."""
    result = pytester.runpytest_inprocess(
        "--pyargs",
        "constrain_conformance.suite",
        f"--backend={backend}",
        f"--conformance-report={report}",
        "-p",
        "no:cacheprovider",
    )
    return result.parseoutcomes()


def test_the_entry_point_finds_it():
    assert "choicetrie" in [info.name for info in ca.available()]
    assert isinstance(ca.get("choicetrie"), constrain_choicetrie.ChoiceTrieBackend)


def test_masks_on_a_tiny_vocabulary():
    vocab = ca.Vocabulary.from_list(
        [b"c", b"a", b"t", b"ca", b"cat", b"d", b"o", b"g", b"<eos>"], eos=[8], special=[8]
    )
    checker = ca.get("choicetrie").compile(ca.Choice(["cat", "dog"]), vocab).checker()
    assert checker.mask().allowed_ids().tolist() == [0, 3, 4, 5]  # c, ca, cat, d
    checker.update([3])  # "ca"
    assert checker.mask().allowed_ids().tolist() == [2]  # t
    with pytest.raises(ca.TokenRejected):
        checker.update([1])
    checker.update([2])
    assert checker.mask().allowed_ids().tolist() == [8] and checker.is_finished()


def test_max_states_bounds_compilation():
    vocab = ca.Vocabulary.from_list([b"a", b"b", b"<eos>"], eos=[2], special=[2])
    with pytest.raises(ca.CompileLimitExceeded):
        ca.get("choicetrie").compile(ca.Choice(["ab" * 10]), vocab, max_states=5)


def test_the_conformance_suite_certifies_it(pytester, tmp_path):
    report = tmp_path / "matrix.md"
    outcomes = run_suite(pytester, "choicetrie", report)
    assert outcomes.get("failed", 0) == 0 and outcomes.get("passed", 0) > 0, outcomes
    row = next(line for line in report.read_text().splitlines() if "`choicetrie`" in line)
    assert "pass (" in row.split("|")[3], row  # the choice column


# Each mutant changes one line of the module; the suite must reject each one.
MUTANTS = {
    "misses tokens spanning several option bytes": (
        "                    stack.append((token_child, option_child))",
        "                    pass",
    ),
    "allows EOS before the option is complete": (
        "        return self.compiled.options.accepting[state]",
        "        return True",
    ),
    "accepts a token whose first byte fits": (
        "        return self.compiled.options.walk(state, self.vocab.token_bytes(token_id))",
        "        return self.compiled.options.walk(state, self.vocab.token_bytes(token_id)[:1])",
    ),
}


def mutant_backend(old: str, new: str) -> type:
    """The example module with line ``old`` replaced by ``new``, its backend renamed."""
    source = inspect.getsource(constrain_choicetrie)
    assert source.count(old + "\n") == 1, f"the line to mutate is gone: {old.strip()}"
    module = types.ModuleType("constrain_choicetrie_mutant")
    exec(compile(source.replace(old + "\n", new + "\n"), module.__name__, "exec"), module.__dict__)
    backend = module.ChoiceTrieBackend
    backend.name = "choicetrie-mutant"
    return backend


@pytest.mark.parametrize("defect", list(MUTANTS))
def test_the_suite_rejects_a_one_line_bug(pytester, tmp_path, defect):
    unregister = ca.register(mutant_backend(*MUTANTS[defect]))
    report = tmp_path / "matrix.md"
    try:
        outcomes = run_suite(pytester, "choicetrie-mutant", report)
    finally:
        unregister()
    assert outcomes.get("failed", 0) >= 1, outcomes
    row = next(line for line in report.read_text().splitlines() if "`choicetrie-mutant`" in line)
    assert "**FAIL**" in row.split("|")[3], row  # failed on choices, not elsewhere
