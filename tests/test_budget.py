"""Compile budgets (``max_seconds``, ``max_memory_mb``): the bound, its
plumbing through ``BaseCompiler``, and the code paths that must not swallow
it. Every installed backend honouring them: conformance/tests/test_edge_specs.py."""

from __future__ import annotations

import math
import mmap
import os
import threading

import pytest

import constrain_api as ca
from constrain_api import budget as budget_module
from constrain_api.jsonschema import lower_json_schema


class FakeClock:
    """``time.perf_counter`` that moves only when told to."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.step = 0.0  # added after each reading

    def perf_counter(self) -> float:
        self.now += self.step
        return self.now - self.step


@pytest.fixture
def clock(monkeypatch) -> FakeClock:
    fake = FakeClock()
    monkeypatch.setattr(budget_module, "time", fake)
    return fake


@pytest.fixture
def memory(monkeypatch) -> list[int]:
    """The resident set the budget reads (bytes), set by the test."""
    rss = [1 << 30]
    monkeypatch.setattr(budget_module, "resident_bytes", lambda: rss[0])
    monkeypatch.setattr(budget_module, "MEMORY_CHECK_INTERVAL", 0.0)
    return rss


@pytest.mark.parametrize("value", [0, -1, 0.0, math.nan])
def test_a_bound_must_be_positive(value):
    with pytest.raises(ValueError, match="max_seconds"):
        ca.CompileBudget(max_seconds=value)


@pytest.mark.parametrize("value", ["5", True, [1]])
def test_a_bound_must_be_a_number(value):
    with pytest.raises(TypeError, match="max_memory_mb"):
        ca.CompileBudget(max_memory_mb=value)


def test_time_bound(clock):
    budget = ca.CompileBudget(max_seconds=2)
    clock.now += 1.5
    budget.check()
    clock.now += 1.0
    with pytest.raises(ca.CompileLimitExceeded) as info:
        budget.check()
    assert (info.value.limit, info.value.bound, info.value.value) == ("max_seconds", 2.0, 2.5)
    assert ca.is_budget_error(info.value)


def test_memory_bound(memory):
    budget = ca.CompileBudget(max_memory_mb=100)
    memory[0] += 99 * 2**20
    budget.check()
    memory[0] += 2 * 2**20
    with pytest.raises(ca.CompileLimitExceeded) as info:
        budget.check()
    assert (info.value.limit, info.value.value) == ("max_memory_mb", 101)


def test_an_estimate_counts_what_the_compile_already_holds(memory):
    budget = ca.CompileBudget(max_memory_mb=100)
    memory[0] += 60 * 2**20
    budget.check_estimate(39, "an index")
    with pytest.raises(ca.CompileLimitExceeded, match="an index would pass"):
        budget.check_estimate(41, "an index")
    ca.CompileBudget(max_memory_mb=None).check_estimate(10**9, "anything")


def test_no_bound_no_budget(clock, memory):
    ca.checkpoint()  # outside a compilation: nothing to check
    with ca.compile_budget(None, None):
        clock.now += 10**6
        memory[0] += 2**40
        ca.checkpoint()


def test_budgets_nest_and_belong_to_their_thread(clock):
    with ca.compile_budget(max_seconds=1) as outer:
        assert ca.current_budget() is outer
        with ca.compile_budget(max_seconds=100) as inner:
            assert ca.current_budget() is inner
        assert ca.current_budget() is outer
        clock.now += 5
        seen = []
        worker = threading.Thread(target=lambda: seen.append(ca.current_budget()))
        worker.start()
        worker.join()
        assert seen == [None]  # another thread's work is not this compilation's
        with pytest.raises(ca.CompileLimitExceeded):
            ca.checkpoint()
    assert ca.current_budget() is None


def test_options_reach_the_budget(clock):
    vocab = ca.Vocabulary.from_list([b"</s>", b"a", b"b", b"ab"], eos=0)
    backend = ca.get("naive", max_seconds=5, max_memory_mb=None)
    assert (backend.max_seconds, backend.max_memory_mb) == (5.0, None)
    seen = []

    class Spy(type(backend.compiler(vocab))):
        def compile_regular(self, language, spec, options):
            seen.append((options.max_seconds, options.max_memory_mb, ca.current_budget()))
            return super().compile_regular(language, spec, options)

    backend.compiler_class = Spy
    backend.__dict__.pop("_compilers")
    backend.compile(ca.Regex("ab"), vocab)
    backend.compile(ca.Regex("ab?"), vocab, max_seconds=None, max_memory_mb=7)
    assert [s[:2] for s in seen] == [(5.0, None), (None, 7.0)]
    assert all(isinstance(s[2], ca.CompileBudget) for s in seen)
    assert ca.current_budget() is None
    with pytest.raises(ValueError, match="max_seconds"):
        backend.compile(ca.Regex("a"), vocab, max_seconds=0)
    with pytest.raises(TypeError, match="max_memory_mb"):
        backend.compile(ca.Regex("a"), vocab, max_memory_mb="lots")
    with pytest.raises(ValueError, match="max_seconds"):
        ca.get("naive", max_seconds=-1)
    with pytest.raises(TypeError, match="budget options"):
        backend.set_budget(max_minutes=1)


def test_a_compile_pauses_the_garbage_collector_and_restores_it():
    """The cyclic collector is off while a compilation builds its objects,
    and as it was afterwards (on; or off when the caller had turned it off),
    also when the compilation fails."""
    import gc

    vocab = ca.Vocabulary.from_list([b"</s>", b"a", b"b", b"ab"], eos=0)
    backend = ca.get("naive")
    seen = []

    class Spy(type(backend.compiler(vocab))):
        def compile_regular(self, language, spec, options):
            seen.append(gc.isenabled())
            return super().compile_regular(language, spec, options)

    backend.compiler_class = Spy
    backend.__dict__.pop("_compilers")
    assert gc.isenabled()
    backend.compile(ca.Regex("ab"), vocab)
    assert seen == [False] and gc.isenabled()
    with pytest.raises(ca.CompileLimitExceeded):
        backend.compile(ca.Regex("(a|b)*a(a|b){12}"), vocab, max_states=100)
    assert gc.isenabled()
    gc.disable()
    try:
        backend.compile(ca.Regex("ab?"), vocab)
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_a_large_automaton_stops_at_the_time_bound():
    """Subset construction checks the budget per state: 2^15 states of
    ``(a|b)*a(a|b){14}`` take seconds, the bound stops them (the error is
    what is asserted, not a duration)."""
    ca.clear_caches()
    vocab = ca.Vocabulary.from_list([b"</s>", b"a", b"b"], eos=0)
    with pytest.raises(ca.CompileLimitExceeded) as info:
        ca.get("naive").compile(ca.Regex("(a|b)*a(a|b){14}"), vocab, max_seconds=0.05)
    assert info.value.limit == "max_seconds"


def test_an_interrupted_build_leaves_no_trace(clock):
    """A compilation stopped by its budget midway (each clock reading one
    second later: the bound passes after a few checkpoints) caches nothing
    half-built: the same constraint compiles afterwards to the same masks
    as in a fresh process."""
    ca.clear_caches()
    vocab = ca.Vocabulary.from_list([b"</s>", b"a", b"b", b"ab", b"ba", b"[", b"]"], eos=0)
    spec = ca.Grammar('start: "[" x "]"\nx: /a(b|a)*/ | /b{2,9}/ | "[" x "]"')
    backend = ca.get("naive", max_seconds=3)
    clock.step = 1.0
    with pytest.raises(ca.CompileLimitExceeded) as info:
        backend.compile(spec, vocab)
    assert info.value.limit == "max_seconds"
    clock.step = 0.0
    compiled = backend.compile(spec, vocab)
    ca.clear_caches()
    fresh = ca.get("naive").compile(spec, vocab)
    for text in (b"", b"[", b"[a", b"[[bb", b"[ab]"):
        ids = [vocab.tokens.index(bytes([c])) for c in text]
        checkers = [compiled.checker(), fresh.checker()]
        for checker in checkers:
            checker.update(ids)
        assert checkers[0].mask() == checkers[1].mask(), text


@pytest.mark.parametrize(
    "schema",
    [
        {"oneOf": [{"type": "string", "pattern": "^a"}, {"type": "string", "pattern": "b$"}]},
        {"oneOf": [{"type": "string", "pattern": "^a"}, {"type": "string", "maxLength": 3}]},
    ],
)
@pytest.mark.parametrize("running_out", ["searching the branches' product", "automata"])
def test_a_budget_error_is_not_taken_for_a_refusal(monkeypatch, schema, running_out):
    """``oneOf`` falls back when an intersection is too large to search or
    its automata too large to build; a budget that ran out there ends the
    compilation instead of refusing the schema."""
    import constrain_api.jsonschema.lower as lowering

    ca.clear_caches()

    def out_of_time(*args, **kw):
        raise ca.CompileLimitExceeded("max_seconds", 1.0, 1.5)

    if running_out == "automata":
        for operation in ("intersect", "difference"):
            monkeypatch.setattr(ca.ByteDFA, operation, out_of_time)
    else:
        monkeypatch.setattr(lowering, "has_string", out_of_time)
    with pytest.raises(ca.CompileLimitExceeded) as info:
        lower_json_schema(ca.JsonSchema(schema))
    assert info.value.limit == "max_seconds"


_LINUX = hasattr(os, "fork") and os.path.exists("/proc/self/statm")


@pytest.mark.skipif(not _LINUX, reason="reads /proc (Linux)")
def test_resident_bytes_reads_this_process_after_a_fork():
    """The reading is this process's even where a parent read before the
    fork (its kept-open file would be the parent's): a child that grows
    by 128 MiB sees it."""
    budget_module.resident_bytes()  # the parent opens its own
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report growth in MiB, then leave at once
        try:
            before = budget_module.resident_bytes()
            # (fresh pages of its own: a bytearray may reuse a free chunk of
            # the parent's heap, resident already, after a long test run)
            block = mmap.mmap(-1, 128 << 20)
            block[::4096] = b"x" * len(block[::4096])  # touch every page
            os.write(write, str((budget_module.resident_bytes() - before) >> 20).encode())
        finally:
            os._exit(0)
    os.close(write)
    grown = int(os.read(read, 64) or b"-1")
    os.close(read)
    os.waitpid(pid, 0)
    assert grown >= 120
    # (and the kept-open reading agrees with a fresh one)
    kept, fresh = budget_module.resident_bytes(), budget_module.resident_bytes(os.getpid())
    assert abs(kept - fresh) < 16 << 20


@pytest.mark.skipif(not _LINUX, reason="reads /proc (Linux)")
def test_resident_bytes_survives_its_file_closed_behind_its_back():
    """Still the resident set now, not the peak (the fallback where /proc
    cannot be read): the peak is made 256 MiB above it first."""
    block = bytearray(256 << 20)
    block[::4096] = b"x" * len(block[::4096])
    del block  # (a block this size goes back to the system at once)
    budget_module.resident_bytes()
    os.close(budget_module._statm[1])  # (as a daemon closing every descriptor would)
    kept, fresh = budget_module.resident_bytes(), budget_module.resident_bytes(os.getpid())
    assert abs(kept - fresh) < 16 << 20


@pytest.mark.skipif(not _LINUX, reason="reads /proc (Linux)")
def test_resident_bytes_is_not_fooled_by_its_number_reused(tmp_path):
    """The kept file closed and its number given to another file (one that
    reads like a statm line): the reading is still this process's."""
    decoy = tmp_path / "statm"
    decoy.write_text("1 999999999 1 1 0 1 0\n")
    budget_module.resident_bytes()
    number = budget_module._statm[1]
    os.close(number)
    fd = os.open(decoy, os.O_RDONLY)
    try:
        assert fd == number  # (the lowest free number: the one just closed)
        kept, fresh = budget_module.resident_bytes(), budget_module.resident_bytes(os.getpid())
        assert abs(kept - fresh) < 16 << 20
    finally:
        os.close(fd)
