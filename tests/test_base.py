"""The Checker contract, as implemented once in StateChecker, judged against the
definition of a correct mask computed by brute force over the options."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import constrain_api as ca
from constrain_api import Capabilities, Choice, TokenRejected, UnsupportedConstraint, Vocabulary

try:
    from constrain_testplugin import TestChoiceBackend
except ImportError:  # pragma: no cover
    pytest.fail(
        "constrain-testplugin is not installed: pip install ./tests/plugin_dist "
        "(nox -s tests does this)",
        pytrace=False,
    )

E_ACUTE = "é".encode()  # two bytes: tokens may split it
TOKENS = [
    b"<eos>",
    b"a",
    b"b",
    b"ab",
    b"ba",
    b"abc",
    b"c",
    b"<pad>",
    E_ACUTE[:1],
    E_ACUTE[1:],
    b"x",
]
EOS, A, B, AB, BA, ABC, C, PAD, E1, E2, X = range(len(TOKENS))
OPTIONS = ["ab", "abc", "ba", "é"]


@pytest.fixture
def vocab():
    return Vocabulary.from_list(TOKENS, eos=EOS, special=[PAD])


class ToyMatcher:
    """A mutable engine matcher for ``OPTIONS``: the texts it accepted, stacked."""

    def __init__(self, vocab):
        self.vocab, self.texts = vocab, [b""]

    def allows(self, token_id):
        text = self.texts[-1] + self.vocab.token_bytes(token_id)
        return any(o.encode().startswith(text) for o in OPTIONS)


class ToyMatcherChecker(ca.MatcherChecker):
    def matcher_accept(self, token_id):
        if not self.matcher.allows(token_id):
            return False
        self.matcher.texts.append(self.matcher.texts[-1] + self.vocab.token_bytes(token_id))
        return True

    def matcher_rollback(self, n):
        del self.matcher.texts[-n:]

    def matcher_fill(self, row):
        allowed = np.zeros(len(row) * 32, dtype=bool)
        for t in self.vocab.normal_ids().tolist():
            allowed[t] = self.matcher.allows(t)
        row[:] = ca.bitmask_from_bool(allowed[None, :])[0][: len(row)]

    def matcher_accepting(self):
        return self.matcher.texts[-1].decode("utf-8", "replace") in OPTIONS

    def matcher_fork(self):
        twin = ToyMatcher(self.vocab)
        twin.texts = list(self.matcher.texts)
        return twin

    def matcher_reset(self):
        self.matcher.texts[1:] = []


class ToyMatcherCompiled(ca.BaseCompiled):
    def checker(self):
        return ToyMatcherChecker(self, ToyMatcher(self.vocab))


class KeptRowsChecker(ca.StateChecker[bytes]):
    """The test plugin's checker with its rows kept per state (``state_row``),
    so ``fill_mask`` copies a finished row instead of fixing one each time."""

    def __init__(self, compiled: KeptRowsCompiled, max_rollback: int | None = None):
        self.inner, self.kept = compiled.inner.checker(), compiled.kept
        super().__init__(compiled, max_rollback)

    def start_state(self):
        return self.inner.start_state()

    def advance(self, state, token_id):
        return self.inner.advance(state, token_id)

    def fill_state(self, state, row):
        self.inner.fill_state(state, row)

    def state_accepting(self, state):
        return self.inner.state_accepting(state)

    def state_row(self, state):
        if state not in self.kept:
            self.kept[state] = self.finished_row(state)
        return self.kept[state]


class KeptRowsCompiled(ca.BaseCompiled):
    def __init__(self, inner: ca.BaseCompiled):
        super().__init__(inner.spec, inner.vocab, inner.stats)
        self.inner, self.kept = inner, {}

    def checker(self) -> KeptRowsChecker:
        return KeptRowsChecker(self)


@pytest.fixture(params=["StateChecker", "StateChecker.state_row", "MatcherChecker"])
def compiled(vocab, request):
    """The contract, once through each base class (and StateChecker's kept rows)."""
    if request.param == "StateChecker":
        return TestChoiceBackend().compile(Choice(OPTIONS), vocab)
    if request.param == "StateChecker.state_row":
        return KeptRowsCompiled(TestChoiceBackend().compile(Choice(OPTIONS), vocab))
    return ToyMatcherCompiled(Choice(OPTIONS), vocab, ca.CompileStats(0.0))


def test_kept_rows_are_finished_read_only_and_copied(vocab):
    """A row kept by ``state_row`` is the fill_state row with EOS and special
    bits fixed, cannot be written, and every mask is a copy of it: writing a
    filled row (a loop's apply does not, a careless caller might) leaves the
    next mask intact."""
    compiled = KeptRowsCompiled(TestChoiceBackend().compile(Choice(OPTIONS), vocab))
    checker = compiled.checker()
    checker.update([AB])  # an option: EOS allowed, and C still
    bm = ca.allocate_bitmask(2, vocab.size)
    checker.fill_mask(bm, 0)
    (kept,) = compiled.kept.values()
    assert not kept.flags.writeable
    assert set(ca.TokenMask(kept, vocab.size)) == oracle(b"ab") == {EOS, C}
    bm[0] = 0
    checker.fill_mask(bm, 1)  # the same array again: the row copied without checks
    checker.fill_mask(bm, 0)
    assert set(ca.TokenMask(bm[0], vocab.size)) == set(ca.TokenMask(bm[1], vocab.size)) == {EOS, C}
    with pytest.raises(IndexError):
        checker.fill_mask(bm, 2)
    checker.update([EOS])  # terminated: nothing, not the kept row
    checker.fill_mask(bm, 0)
    assert not bm[0].any()


def oracle(text: bytes) -> set[int]:
    """The definition: t allowed iff text + bytes(t) is a prefix of an option;
    EOS iff text is an option; specials never."""
    options = [o.encode() for o in OPTIONS]
    allowed = {
        i
        for i, tok in enumerate(TOKENS)
        if i not in (EOS, PAD) and any(o.startswith(text + tok) for o in options)
    }
    if text in options:
        allowed.add(EOS)
    return allowed


def paths(text=b"", path=()):
    """Every token path the oracle allows (EOS excluded)."""
    yield text, path
    for t in sorted(oracle(text) - {EOS}):
        yield from paths(text + TOKENS[t], (*path, t))


def test_masks_equal_the_definition_on_every_path(compiled):
    n = 0
    for text, path in paths():
        checker = compiled.checker()
        checker.update(list(path))
        assert set(checker.mask().allowed_ids().tolist()) == oracle(text), (text, path)
        assert checker.is_accepting() == (EOS in oracle(text))
        assert checker.is_finished() == (oracle(text) <= {EOS})
        for t in range(len(TOKENS)):
            assert checker.accepts(t) == (t in oracle(text)), (text, t)
        n += 1
    assert n >= 8  # the path enumeration really ran (incl. the split é)


def test_update_is_atomic_on_rejection(compiled):
    checker = compiled.checker()
    checker.update([A])
    before = checker.mask()
    with pytest.raises(TokenRejected) as info:
        checker.update([B, X])
    assert info.value.token_id == X and info.value.index == 1
    assert checker.mask() == before  # state unchanged: "a" still, not "ab"
    assert checker.rollback_depth == 1


@pytest.mark.parametrize(
    ("token", "reason"),
    [(PAD, "special"), (EOS, "EOS"), (99, "outside"), (-1, "outside"), (C, "not allowed")],
)
def test_rejection_reasons(compiled, token, reason):
    with pytest.raises(TokenRejected, match=reason):
        compiled.checker().update([token])


class AnythingChecker(ca.StateChecker[int]):
    """Every token advances (the state counts them): what refuses EOS,
    special and out-of-range ids is StateChecker itself."""

    def start_state(self):
        return 0

    def advance(self, state, token_id):
        return state + 1

    def fill_state(self, state, row):
        row[:] = -1

    def state_accepting(self, state):
        return state >= 2


class AnythingMatcherChecker(ToyMatcherChecker):
    """A matcher that takes every token it is given, accepting after two."""

    def matcher_accept(self, token_id):
        self.matcher.texts.append(self.matcher.texts[-1] + b"?")
        return True

    def matcher_accepting(self):
        return len(self.matcher.texts) > 2


@pytest.mark.parametrize("kind", ["StateChecker", "MatcherChecker"])
@pytest.mark.parametrize("token", [PAD, EOS, len(TOKENS), -1])
def test_one_token_updates_refuse_what_the_state_would_take(vocab, kind, token):
    """The loop's ``update([t])`` (a fast path) refuses a special token, EOS
    before an accepting state and ids outside the vocabulary even from a
    state (a matcher) that advances on anything, changing nothing; nothing
    after EOS."""
    compiled = ToyMatcherCompiled(Choice(OPTIONS), vocab, ca.CompileStats(0.0))
    if kind == "StateChecker":
        checker = AnythingChecker(compiled)
    else:
        checker = AnythingMatcherChecker(compiled, ToyMatcher(vocab))
    with pytest.raises(TokenRejected):
        checker.update([token])
    assert checker.rollback_depth == 0 and not checker.is_accepting()
    checker.update([A])
    checker.update([np.int64(B)])  # (not an int: the general path)
    assert checker.is_accepting() and checker.rollback_depth == 2
    checker.update([EOS])
    assert checker.terminated
    with pytest.raises(TokenRejected):
        checker.update([A])
    checker.rollback(1)
    checker.update([A])
    assert checker.rollback_depth == 3 and not checker.terminated


def test_update_needs_a_sequence(compiled):
    with pytest.raises(TypeError):
        compiled.checker().update(A)


def test_eos_terminates_and_rollback_undoes_it(compiled):
    checker = compiled.checker()
    checker.update([AB])
    assert checker.is_accepting() and not checker.is_finished()
    checker.update([EOS])
    assert checker.is_finished() and not checker.is_accepting()
    assert checker.mask().count() == 0
    assert not checker.accepts(C)
    with pytest.raises(TokenRejected):
        checker.update([C])
    checker.rollback(1)
    assert checker.is_accepting() and checker.accepts(C)


def test_validate_counts_without_changing_state(compiled):
    checker = compiled.checker()
    assert checker.validate([A, B, C, EOS]) == 4
    assert checker.validate([A, B, EOS, C]) == 3  # nothing after EOS
    assert checker.validate([A, X, B]) == 1
    assert checker.validate([]) == 0
    assert checker.rollback_depth == 0 and checker.mask() == compiled.checker().mask()


def test_rollback_bounds(compiled):
    checker = compiled.checker()
    checker.update([A, B])
    with pytest.raises(ValueError):
        checker.rollback(3)
    assert checker.rollback_depth == 2  # unchanged by the failed rollback
    checker.rollback(0)
    checker.rollback(2)
    assert checker.mask() == compiled.checker().mask()
    with pytest.raises(ValueError):
        checker.rollback(-1)


def test_bounded_history(compiled):
    if not isinstance(compiled.checker(), ca.StateChecker):
        pytest.skip("max_rollback is StateChecker's")

    class Bounded(type(compiled.checker())):
        def __init__(self, compiled):
            super().__init__(compiled, max_rollback=1)

    checker = Bounded(compiled)
    checker.update([A, B, C])
    assert checker.rollback_depth == 1
    with pytest.raises(ValueError):
        checker.rollback(2)


def test_init_resets(compiled):
    checker = compiled.checker()
    checker.update([B, A, EOS])
    checker.init()
    assert checker.rollback_depth == 0 and checker.mask() == compiled.checker().mask()


def test_fork_is_independent(compiled):
    one = compiled.checker()
    one.update([A])
    two = one.fork()
    two.update([B])
    assert one.rollback_depth == 1 and two.rollback_depth == 2
    assert set(one.mask()) == oracle(b"a") and set(two.mask()) == oracle(b"ab")


def test_fill_mask_overwrites_the_row_in_numpy_and_tensor(compiled, vocab):
    checker = compiled.checker()
    checker.update([A])
    expected = checker.mask()
    bm = np.full((2, ca.bitmask_words(vocab.size)), -1, dtype=np.int32)  # garbage
    checker.fill_mask(bm, 1)
    assert ca.TokenMask(bm[1], vocab.size) == expected
    assert (bm[0] == -1).all()  # other rows untouched
    t = ca.allocate_bitmask_tensor(3, vocab.size)
    t.fill_(-1)
    checker.fill_mask(t, 2)
    assert ca.TokenMask(t[2].numpy(), vocab.size) == expected
    # padding bits past V stay clear, so kernels never see stray ids
    assert not ca.bitmask_to_bool(t[2], 32)[vocab.size :].any()
    logits = torch.zeros(1, vocab.size)
    ca.apply_bitmask_(logits, t[2:3], vocab_size=vocab.size)
    assert torch.isfinite(logits[0]).nonzero().flatten().tolist() == sorted(oracle(b"a"))


def test_fill_mask_into_rows_wider_than_the_vocabulary(compiled, vocab):
    """A bitmask sized for a model's padded width (more words than the
    vocabulary needs), filled again and again as a loop does: each fill
    writes the state's mask into the vocabulary's words and zeros the words
    past them (StateChecker's shortcut for the bitmask it last filled whole
    must not take this one for such a bitmask)."""
    words = ca.bitmask_words(vocab.size)
    bm = np.full((2, words + 2), -1, dtype=np.int32)  # garbage
    checker = compiled.checker()
    for text, token in ((b"", None), (b"a", A), (b"ab", B)):
        if token is not None:
            checker.update([token])
        for _ in range(2):  # (no other bitmask filled between: the loop's pattern)
            checker.fill_mask(bm, 1)
            assert set(ca.TokenMask(bm[1, :words], vocab.size)) == oracle(text)
            assert not bm[1, words:].any()
        assert (bm[0] == -1).all()  # other rows untouched


def test_fill_masks_batches(compiled, vocab):
    checkers = [compiled.checker() for _ in range(3)]
    checkers[1].update([B])
    checkers[2].update([AB])
    bm = ca.allocate_bitmask(3, vocab.size)
    compiled.fill_masks(checkers, bm)
    for row, text in enumerate([b"", b"b", b"ab"]):
        assert set(ca.TokenMask(bm[row], vocab.size)) == oracle(text)


def test_protocol_conformance(compiled):
    backend = TestChoiceBackend()
    assert isinstance(backend, ca.Backend)
    assert isinstance(compiled, ca.Compiled)
    assert isinstance(compiled.checker(), ca.Checker)
    assert compiled.stats.seconds >= 0


def test_base_backend_refuses_unsupported_kinds(vocab):
    with pytest.raises(UnsupportedConstraint) as info:
        TestChoiceBackend().compile(ca.Regex("ab"), vocab)
    assert info.value.backend == "test-choice" and "regex" in str(info.value)


def test_capabilities():
    caps = Capabilities(kinds={"regex", "grammar"}, exact={"regex"}, features={"propose"})
    assert caps.supports("grammar") and not caps.supports("choice")
    assert caps.is_exact("regex") and not caps.is_exact("grammar")
    assert caps.describe() == "grammar~, regex; features: propose"
    assert isinstance(caps.kinds, frozenset)
    with pytest.raises(ValueError):
        Capabilities(kinds={"regex"}, exact={"grammar"})
    with pytest.raises(ValueError):
        Capabilities(kinds={"regex"}, max_rollback=-1)


class ContiguousOnlyChecker(ToyMatcherChecker):
    """Like an engine writing through a raw pointer: refuses any row that is
    not C-contiguous (the engine would write outside it)."""

    def matcher_fill(self, row):
        assert row.flags.c_contiguous, "the engine was handed a strided row"
        super().matcher_fill(row)


def test_an_engine_fills_strided_rows_through_contiguous_memory(vocab):
    """A Fortran-ordered bitmask and a negative-stride row view are filled
    right, and the engine never sees a strided row (other rows untouched)."""
    compiled = ToyMatcherCompiled(Choice(OPTIONS), vocab, ca.CompileStats(0.0))
    checker = ContiguousOnlyChecker(compiled, ToyMatcher(vocab))
    checker.update([A])
    expected = ca.allocate_bitmask(1, vocab.size)
    checker.fill_mask(expected, 0)
    fortran = np.asfortranarray(np.full((3, expected.shape[1]), 7, dtype=np.int32))
    checker.fill_mask(fortran, 1)
    assert np.array_equal(fortran[1], expected[0])
    assert (fortran[0] == 7).all() and (fortran[2] == 7).all()
    wide = np.full((2, 2 * expected.shape[1]), 7, dtype=np.int32)
    strided = wide[:, ::2]  # a view whose rows are not contiguous
    checker.fill_mask(strided, 0)
    assert np.array_equal(strided[0], expected[0]) and (wide[0, 1::2] == 7).all()


def test_an_engine_refuses_a_row_too_narrow_for_the_vocabulary():
    tokens = [b"<eos>"] + [bytes([97 + i % 26]) * (1 + i // 26) for i in range(40)]
    big = Vocabulary.from_list(tokens, eos=0)
    compiled = ToyMatcherCompiled(Choice(OPTIONS), big, ca.CompileStats(0.0))
    with pytest.raises(ValueError, match="cannot hold 41 tokens"):
        compiled.checker().fill_mask(np.zeros((1, 1), np.int32), 0)


class BlockingMatcherChecker(ToyMatcherChecker):
    """Its fill waits until told to go on: a second thread meets it mid-call."""

    entered: object
    proceed: object

    def matcher_fill(self, row):
        self.entered.set()
        assert self.proceed.wait(10)
        super().matcher_fill(row)


def test_a_checker_used_by_two_threads_at_once_raises_instead_of_racing(vocab):
    import threading

    compiled = ToyMatcherCompiled(Choice(OPTIONS), vocab, ca.CompileStats(0.0))
    checker = BlockingMatcherChecker(compiled, ToyMatcher(vocab))
    checker.entered, checker.proceed = threading.Event(), threading.Event()
    out = ca.allocate_bitmask(1, vocab.size)
    worker = threading.Thread(target=checker.fill_mask, args=(out, 0))
    worker.start()
    assert checker.entered.wait(10)
    calls = [
        lambda: checker.update([A]),
        lambda: checker.rollback(0),
        lambda: checker.accepts(A),
        lambda: checker.validate([A]),
        lambda: checker.fork(),
        lambda: checker.is_accepting(),
        lambda: checker.fill_mask(ca.allocate_bitmask(1, vocab.size), 0),
    ]
    for call in calls:
        with pytest.raises(RuntimeError, match="in use by another thread"):
            call()
    checker.proceed.set()
    worker.join(10)
    assert set(ca.TokenMask(out[0], vocab.size)) == oracle(b"")
    checker.update([A])  # free again; and a fork has its own guard
    twin = checker.fork()
    twin.update([B])
    assert checker.rollback_depth == 1 and twin.rollback_depth == 2


def test_matchers_filled_together_get_each_checkers_mask(vocab):
    """``MatcherChecker.fill_together`` (an engine's batched fill): one call
    gets the live rows' (matcher, row) pairs and the C-contiguous bitmask;
    a terminated row gets 0 and EOS is set where the text is accepted, as
    ``fill_mask`` does; a bitmask it cannot hand over, or a checker given
    twice, is filled row by row; a checker in use raises, and none is left
    claimed."""
    compiled = ToyMatcherCompiled(Choice(OPTIONS), vocab, ca.CompileStats(0.0))
    checkers = []
    for path in ([], [A], [A, B], [A, B, EOS]):
        checker = compiled.checker()
        checker.update(path)
        checkers.append(checker)
    expected = np.stack([c.mask().words for c in checkers])
    assert set(ca.TokenMask(expected[2], vocab.size)) == {EOS, C}  # "ab": EOS or "c"
    assert not expected[3].any()
    calls = []

    def fill_live(pairs, words):
        calls.append([row for _, row in pairs])
        assert words.flags.c_contiguous and words.shape == expected.shape
        for matcher, row in pairs:  # the engine's part: normal tokens only
            allowed = np.zeros(words.shape[1] * 32, dtype=bool)
            allowed[[t for t in vocab.normal_ids().tolist() if matcher.allows(t)]] = True
            words[row] = ca.bitmask_from_bool(allowed[None, :])[0]

    out = np.full(expected.shape, -1, dtype=np.int32)
    ca.MatcherChecker.fill_together(checkers, out, fill_live)
    assert calls == [[0, 1, 2]]
    assert np.array_equal(out, expected)
    strided = np.full((out.shape[0], 2 * out.shape[1]), -1, dtype=np.int32)[:, ::2]
    for other in (strided, torch.full(out.shape, -1, dtype=torch.int32)):
        ca.MatcherChecker.fill_together(checkers, other, fill_live)
        assert np.array_equal(np.asarray(other), expected)
    twice = [checkers[1], checkers[1]]
    out2 = np.full((2, out.shape[1]), -1, dtype=np.int32)
    ca.MatcherChecker.fill_together(twice, out2, fill_live)
    assert np.array_equal(out2, expected[[1, 1]])
    assert len(calls) == 1  # (row by row, each time)
    checkers[1]._in_use.acquire()  # another thread inside it
    with pytest.raises(RuntimeError, match="in use by another thread"):
        ca.MatcherChecker.fill_together(checkers, out, fill_live)
    checkers[1]._in_use.release()
    checkers[0].update([A])  # the checker claimed before the refusal was released


def test_token_ids_must_be_integers_not_coerced(compiled, vocab):
    """``update([a + 0.9])`` once accepted ``a``; floats and numeric strings
    are refused with TypeError, numpy integers are ids."""
    checker = compiled.checker()
    for bad in (A + 0.9, float(A), str(A)):
        with pytest.raises(TypeError):
            checker.update([bad])
        with pytest.raises(TypeError):
            checker.accepts(bad)
        with pytest.raises(TypeError):
            checker.validate([bad])
    assert checker.rollback_depth == 0
    checker.update([np.int64(A)])
    assert checker.rollback_depth == 1
    with pytest.raises(TypeError):
        checker.rollback(0.5)
    assert checker.rollback_depth == 1


def test_bad_arguments_raise_documented_errors(compiled, vocab):
    checker = compiled.checker()
    with pytest.raises(TypeError, match="numpy array or a CPU torch tensor"):
        checker.fill_mask([0, 0, 0], 0)
    with pytest.raises(TypeError, match="needs a Vocabulary"):
        TestChoiceBackend().compile(Choice(OPTIONS), None)
