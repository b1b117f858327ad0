"""The conformance checks, parametrized by the plugin over backend × vocabulary × case."""

from __future__ import annotations

import random
import time

import pytest

import constrain_api as ca
from constrain_conformance import checks, paths

pytestmark = pytest.mark.conformance

PATH_KINDS = [*paths.PATH_KINDS, "random"]


def _paths(kind, vocab, case, oracle_compiled):
    if kind == "random":
        rng = random.Random(f"{case.name}/{vocab.fingerprint}")
        return [paths.random_path(oracle_compiled, rng, 24) for _ in range(3)]
    found = [paths.PATH_KINDS[kind](vocab, doc) for doc in case.valid]
    return [p for p in found if p is not None]


@pytest.mark.parametrize("path_kind", PATH_KINDS)
def test_masks_match_the_oracle(
    compiled_pair, case, vocab, path_kind, backend, backend_spec, request, record
):
    if str(backend_spec) == request.config.getoption("--oracle"):
        pytest.skip(f"{backend_spec} is the oracle: its masks are the reference, not checked")
    compiled, oracle = compiled_pair
    token_paths = _paths(path_kind, vocab, case, oracle)
    if not token_paths:
        pytest.skip(f"the vocabulary has no {path_kind} path for {case.name}")
    exact = backend.capabilities.is_exact(case.spec.kind)
    max_steps = request.config.getoption("--conformance-max-steps")
    for path in token_paths:
        result = checks.compare_masks(compiled, oracle, path[:max_steps] if max_steps else path)
        # a backend declared inexact must still never be more permissive than the oracle
        ok = result.exact if exact else result.sound
        record("pass" if ok else "fail", result.precision, result.recall)
        assert ok, f"{case.name} ({path_kind}): {result.describe(vocab)}"


@pytest.mark.parametrize("path_kind", list(paths.PATH_KINDS))
def test_documents_accepted_and_rejected(compiled_pair, case, vocab, path_kind, backend, record):
    compiled, oracle = compiled_pair
    exact = backend.capabilities.is_exact(case.spec.kind)
    checked = 0
    for doc in case.valid:
        path = paths.PATH_KINDS[path_kind](vocab, doc)
        if path is None:
            continue
        verdict = checks.run_document(compiled, path)
        checked += 1
        if exact:
            assert verdict.accepted, (
                f"valid {doc!r} ({path_kind}) stopped at step {verdict.stopped_at}"
            )
    for doc in case.invalid:
        path = paths.PATH_KINDS[path_kind](vocab, doc)
        if path is None:
            continue
        verdict = checks.run_document(compiled, path)
        expected = checks.run_document(oracle, path)
        checked += 1
        assert not expected.accepted, f"corpus error: the oracle accepts {doc!r}"
        assert not verdict.accepted, f"invalid {doc!r} ({path_kind}) accepted"
        if exact:
            assert verdict.stopped_at == expected.stopped_at, (
                f"invalid {doc!r} ({path_kind}) rejected at step {verdict.stopped_at}, "
                f"the oracle at {expected.stopped_at}"
            )
    if not checked:
        pytest.skip(f"the vocabulary has no {path_kind} path for {case.name}'s documents")
    record("pass")


def test_minimal_invasiveness(compiled_pair, case, vocab, backend, record):
    """A model that wants a valid document's natural tokenization gets exactly
    it under constrained argmax decoding (exact backends must reproduce all)."""
    pytest.importorskip("torch", reason="the check runs the decoding loop, which needs torch")
    compiled, _ = compiled_pair
    targets = [p for p in (paths.natural(vocab, d) for d in case.valid) if p]
    if not targets:
        pytest.skip(f"the vocabulary has no natural tokenization of {case.name}'s documents")
    missed = [t for t in targets if not checks.reproduces(compiled, t)]
    exact = backend.capabilities.is_exact(case.spec.kind)
    ok = not missed or not exact
    record("pass" if ok else "fail", reproduced=len(targets) - len(missed), targets=len(targets))
    assert ok, f"{case.name}: {len(missed)} of {len(targets)} natural tokenizations not reproduced"


def test_state_operations(compiled_pair, case, vocab, record):
    compiled, _ = compiled_pair
    path = paths.natural(vocab, case.valid[0]) or paths.longest_match(vocab, case.valid[0])
    # as far as the backend accepts it (an inexact one may stop early; the
    # mask and acceptance checks judge that, not this one)
    path = path[: compiled.checker().validate(path)]
    failures = checks.state_operation_failures(compiled, path)
    record("pass" if not failures else "fail")
    assert not failures, "; ".join(failures)


def test_concurrent_checkers_agree_with_sequential_ones(compiled_pair, case, vocab, record):
    compiled, _ = compiled_pair
    token_paths = [p for p in (paths.longest_match(vocab, d) for d in case.valid) if p]
    differing = checks.concurrency_failures(compiled, token_paths * 2)
    record("pass" if not differing else "fail")
    assert not differing, f"paths {differing} gave other masks in threads"


# One small spec of every built-in kind, to probe what a backend refuses.
PROBES = {
    "regex": ca.Regex("a+"),
    "grammar": ca.Grammar('start: "a"+'),
    "choice": ca.Choice(["a", "b"]),
    "where": ca.Where("len(x) <= 3"),
    "json_schema": ca.JsonSchema({"type": "string"}),
}


def test_unsupported_kinds_are_refused(backend, backend_spec, vocab, record):
    refused = [spec for kind, spec in PROBES.items() if not backend.capabilities.supports(kind)]
    if not refused:
        pytest.skip(f"{backend_spec} declares every built-in kind")
    for spec in refused:
        with pytest.raises(ca.UnsupportedConstraint):
            backend.compile(spec, vocab)
    record("pass")


def test_several_eos_ids_and_special_tokens(backend, backend_spec, record):
    """On a vocabulary with two EOS ids and a special token: specials are
    never allowed, either EOS ends the text, rollback undoes it, and
    ``fill_mask`` writes one row of a CPU tensor, leaving the others."""
    kind = next((k for k in ("choice", "regex") if backend.capabilities.supports(k)), None)
    if kind is None:
        pytest.skip(f"{backend_spec} compiles neither choices nor regexes")
    vocab = ca.Vocabulary.from_list(
        [b"a", b"b", b"<eos>", b"<eot>", b"<pad>"], eos=[2, 3], special=[2, 3, 4]
    )
    spec = ca.Choice(["ab"]) if kind == "choice" else ca.Regex("ab")
    checker = backend.compile(spec, vocab).checker()
    assert checker.mask().allowed_ids().tolist() == [0]
    checker.update([0, 1])
    assert checker.mask().allowed_ids().tolist() == [2, 3] and not checker.accepts(4)
    pytest.importorskip("torch")
    bitmask = ca.allocate_bitmask_tensor(2, vocab.size)
    bitmask.fill_(-1)
    checker.fill_mask(bitmask, 1)
    assert ca.TokenMask(bitmask[1].numpy(), vocab.size) == checker.mask()
    assert int(bitmask[0, 0]) == -1
    checker.update([3])
    assert checker.is_finished() and not checker.accepts(2) and not checker.mask().count()
    checker.rollback(2)
    assert checker.mask().allowed_ids().tolist() == [1]
    record("pass")


# One malformed spec per built-in kind (built lazily: some fail on construction).
MALFORMED = {
    "regex": lambda: ca.Regex("(ab"),
    "grammar": lambda: ca.Grammar("start: undefined_rule"),
    "json_schema": lambda: ca.JsonSchema({"type": 5}),
    "choice": lambda: ca.Choice([]),
    "where": lambda: ca.Where("len(x) <="),
}


def test_malformed_constraints_raise_constraint_error(backend, backend_spec, vocab, record):
    """Malformed input is a ``ConstraintError`` that names its kind, whether
    the spec or the backend detects it; never another exception or a
    compiled artifact."""
    kinds = [k for k in MALFORMED if backend.capabilities.supports(k)]
    if not kinds:
        pytest.skip(f"{backend_spec} supports no built-in kind")
    for kind in kinds:
        with pytest.raises(ca.ConstraintError) as error:
            backend.compile(MALFORMED[kind](), vocab)
        assert kind.replace("_", " ") in str(error.value), str(error.value)
    record("pass")


def test_backreference_is_refused(backend, vocab, record):
    if not backend.capabilities.supports("regex"):
        pytest.skip("no regex support")
    with pytest.raises(ca.UnsupportedConstraint):
        backend.compile(ca.Regex(r"(ab)\1"), vocab)
    record("pass")


#: Its minimal DFA has 2**17 states: any automaton-building backend must stop early.
EXPLODING = ca.Regex("(a|b)*a(a|b){16}")


def _walk_within_the_limit(compiled, vocab, steps: int = 64) -> None:
    """Fill masks along a random walk of allowed tokens: each fills, or the
    walk stops at ``CompileLimitExceeded`` (the automaton's bound met)."""
    rng = random.Random(0)
    checker = compiled.checker()
    for _ in range(steps):
        try:
            allowed = [int(t) for t in checker.mask().allowed_ids() if t != vocab.eos_id]
            if not allowed:
                return
            checker.update([rng.choice(allowed)])
        except ca.CompileLimitExceeded:
            return


#: The ``max_seconds`` bound a backend without ``max_states`` is given, and
#: the slack allowed past it (a compile checks its budget between steps).
BUDGET_S, BUDGET_SLACK_S = 2.0, 1.0


def test_compile_limit_is_enforced(backend, backend_spec, vocab, record):
    """Compilation is bounded. With ``max_states=1000`` (the conventional
    compile option) the exploding regex raises ``CompileLimitExceeded``, not
    an hour of work or an out-of-memory kill; a backend that builds its
    automaton as decoding walks it may compile, reporting at most 1,000
    states, and each mask along a walk then either fills or raises the same
    limit. A backend without the option (an engine that builds lazily) is
    given the core's time budget instead, ``max_seconds``: it must refuse or
    finish within it. A backend that takes neither option fails: nothing
    bounds its compiles."""
    if not backend.capabilities.supports("regex"):
        pytest.skip("no regex support")
    try:
        compiled = backend.compile(EXPLODING, vocab, max_states=1000)
    except ca.CompileLimitExceeded:
        record("pass")
        return
    except TypeError:
        pass  # no max_states option: the time budget must bound it
    else:
        states = compiled.stats.states
        if states is not None and states > 1000:
            record("fail")
            pytest.fail(f"{backend_spec} built {states} states despite max_states=1000")
        _walk_within_the_limit(compiled, vocab)
        record("pass")
        return
    start = time.perf_counter()
    try:
        backend.compile(EXPLODING, vocab, max_seconds=BUDGET_S)
    except ca.CompileLimitExceeded:
        pass
    except TypeError as e:
        record("fail")
        pytest.fail(f"{backend_spec} takes neither max_states nor max_seconds: {e}")
    elapsed = time.perf_counter() - start
    if elapsed > BUDGET_S + BUDGET_SLACK_S:
        record("fail")
        pytest.fail(f"{backend_spec} ran {elapsed:.1f} s past max_seconds={BUDGET_S}")
    record("pass")
