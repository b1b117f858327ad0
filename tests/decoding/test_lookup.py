"""Prompt-lookup drafts: the n-gram index against a brute-force reading of
its contract, how a row chooses among its draft sources, and that drafts
looked up in the sequence change nothing but the passes taken (any backend,
never a token outside the language)."""

from __future__ import annotations

import random

import numpy as np
import pytest
from constrain_conformance.corpus import small_vocabulary

import constrain_api as ca
from constrain_api.decoding import ScriptedLM, argmax, generate
from constrain_api.decoding.drafts import Sources
from constrain_api.decoding.lookup import TokenLookup


def reference(tokens: list[int], max_tokens: int, max_n: int) -> list[int]:
    """The contract read literally: the longest suffix (at most ``max_n``)
    that occurs earlier with a token after it; from its latest such
    occurrence, the tokens that follow in the sequence extended by the
    draft itself."""
    end = len(tokens)
    for n in range(min(max_n, end), 0, -1):
        suffix = tokens[end - n :]
        for start in range(end - n - 1, -1, -1):
            if tokens[start : start + n] == suffix:
                extended = list(tokens)
                for i in range(start + n, start + n + max_tokens):
                    extended.append(extended[i])
                return extended[end:]
    return []


@pytest.mark.parametrize("max_n", [1, 2, 3])
def test_lookup_proposes_what_the_contract_says_at_every_length(max_n):
    rng = random.Random(max_n)
    for _ in range(300):
        seq = [rng.randrange(4) for _ in range(rng.randrange(0, 30))]
        grown = TokenLookup(max_n=max_n)
        for i, token in enumerate(seq):  # appended one by one and all at once alike
            grown.extend([token])
            for k in (1, 4):
                assert grown.propose(k) == reference(seq[: i + 1], k, max_n)
        assert TokenLookup(seq, max_n).propose(5) == reference(seq, 5, max_n)


def test_lookup_prefers_the_longest_suffix_then_the_latest_occurrence():
    # "7" last followed 1 (latest), but the suffix "3 7" was followed by 9
    assert TokenLookup([3, 7, 9, 7, 1, 3, 7]).propose(1) == [9]
    assert TokenLookup([3, 7, 9, 7, 1, 3, 7], max_n=1).propose(1) == [1]
    # the latest of two occurrences of "5"
    assert TokenLookup([5, 1, 5, 2, 5]).propose(2) == [2, 5]
    # a repeating pattern repeats past the sequence's end
    assert TokenLookup([4, 6, 4, 6]).propose(5) == [4, 6, 4, 6, 4]
    # the suffix itself is never its own match
    assert TokenLookup([1, 2, 3]).propose(3) == []
    assert TokenLookup().propose(3) == []
    assert len(TokenLookup([1, 2])) == 2
    with pytest.raises(ValueError, match="max_n"):
        TokenLookup(max_n=0)


class Scripted:
    """A draft source proposing from a fixed list, counting what it is asked."""

    def __init__(self, tokens):
        self.tokens, self.asked = tokens, []

    def __call__(self, max_tokens):
        self.asked.append(max_tokens)
        return self.tokens[:max_tokens]


def test_a_row_drafts_from_the_likeliest_right_source_and_tries_the_other_on_misses():
    first, second = Scripted([1, 2, 3]), Scripted([7, 8, 9])
    sources = Sources([first, second], None)
    assert sources.propose([], 3) == [1, 2, 3]  # a tie: the first in order
    assert (first.asked, second.asked) == ([3], [])  # only the source asked is judged
    sources.judge(1)
    sources.judge(7)  # (judged once: no second verdict)
    assert sources.propose([], 3) == [1, 2, 3]  # right: the other is never asked
    assert second.asked == []
    sources.judge(7)  # wrong: now below a source never judged
    assert sources.propose([], 3) == [7, 8, 9]
    sources.judge(7)
    assert sources.propose([], 2) == [7, 8]  # the right one stays
    sources.judge(5)  # each now right once, then wrong: level
    sources.judge(5)  # (nothing proposed since: nothing judged)
    assert sources.hits == [0.8, 0.8] and sources.tries == pytest.approx([1.8, 1.8])
    assert sources.propose([], 2) == [1, 2]  # a tie again: the first in order


def test_sources_take_proposals_as_arrays():
    """A checker's ``propose`` may answer a numpy array (as ``propose``'s
    contract allows): chosen, judged and passed over like a list."""
    empty, array = Scripted(np.array([], dtype=np.int64)), Scripted(np.array([3, 4, 5]))
    sources = Sources([empty, array, Scripted([9])], None)
    assert list(sources.propose([], 2)) == [3, 4]
    sources.judge(8)
    assert list(sources.propose([], 2)) == [9]  # (the array's source fell below)


def test_a_source_that_proposes_nothing_is_passed_over_and_not_judged():
    silent, talker = Scripted([]), Scripted([4, 5])
    sources = Sources([silent, talker], None)
    assert sources.propose([], 2) == [4, 5]
    sources.judge(9)
    assert sources.hits == [0.0, 0.0] and sources.tries == [0.0, 1.0]
    nothing = Sources([Scripted([]), Scripted([])], None)
    assert nothing.propose([], 2) == []
    nothing.judge(1)
    assert nothing.tries == [0.0, 0.0]


def test_sources_of_a_checker():
    vocab = small_vocabulary()
    naive = ca.get("naive").compile(ca.Regex("[ab]+"), vocab).checker()
    assert not hasattr(naive, "propose")
    assert Sources.of(naive, [1], "checker") is None
    looked = Sources.of(naive, [1, 2, 1], "auto")
    assert looked.lookup is not None and len(looked.proposers) == 1
    assert looked.propose([], 2) == [2, 1]

    class Proposing:
        def propose(self, max_tokens):
            return [3] * max_tokens

    both = Sources.of(Proposing(), [1], "both")
    assert len(both.proposers) == 2 and both.propose([], 2) == [3, 3]
    auto = Sources.of(Proposing(), [1], "auto")  # (a checker that proposes: it alone)
    assert auto.lookup is None and len(auto.proposers) == 1
    assert len(Sources.of(Proposing(), [1], "checker").proposers) == 1
    assert Sources.of(Proposing(), [1], "lookup").propose([], 1) == []
    # the row's tokens join the lookup as the row grows
    assert Sources.of(Proposing(), [1], "lookup").propose([2, 1], 1) == [2]


# -- in the loop ----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def vocab() -> ca.Vocabulary:
    return small_vocabulary()


def _letters(vocab, text: str) -> list[int]:
    """One token a letter (not the tokenizer's merges: the loop works on any ids)."""
    ids = [vocab.encode(letter) for letter in text]
    assert all(len(one) == 1 for one in ids)
    return [one[0] for one in ids]


def _run(vocab, compiled, prompt, target, **options):
    lm = ScriptedLM([*target, vocab.eos_id], width=vocab.size, eos_id=vocab.eos_id,
                    prompt_length=len(prompt))  # fmt: skip
    return generate(lm, vocab, [prompt], compiled, argmax(), forced=False, **options)


@pytest.mark.parametrize("backend", ["naive", "fst", "domino"])
def test_lookup_drafts_copy_the_prompt_on_any_backend(vocab, backend):
    """The model copies text from its prompt: drafts looked up there are
    kept, the output is the same, in fewer passes, whether or not the
    backend proposes drafts of its own."""
    compiled = ca.get(backend).compile(ca.Regex("[a-d]{16}"), vocab)
    target = _letters(vocab, "abcd" * 4)
    prompt = [vocab.eos_id, *_letters(vocab, "abcd")]
    plain = _run(vocab, compiled, prompt, target)
    assert plain.sequences[0].token_ids == target
    looked = _run(vocab, compiled, prompt, target, speculative=4, draft_policy="always",
                  draft_source="lookup")  # fmt: skip
    assert looked.sequences[0].token_ids == target
    totals = looked.totals()
    assert totals["accepted"] == totals["drafted"] > 0
    assert totals["forward_passes"] <= plain.totals()["forward_passes"] // 3
    both = _run(vocab, compiled, prompt, target, speculative=4, draft_policy="always",
                draft_source="both")  # fmt: skip
    assert both.sequences[0].token_ids == target
    assert both.totals()["forward_passes"] < plain.totals()["forward_passes"]
    auto = _run(vocab, compiled, prompt, target, speculative=4, draft_policy="always")
    assert auto.sequences[0].token_ids == target
    if backend != "domino":  # (no propose: "auto" drafts by lookup)
        counts = ("drafted", "accepted", "forward_passes")
        assert [auto.totals()[k] for k in counts] == [totals[k] for k in counts]


def test_lookup_drafts_never_leave_the_language(vocab):
    """The prompt says "b" follows "a", the constraint allows only "a": a
    looked-up draft is cut to what the checker accepts, so no "b" is ever
    fed (every drafted token is kept: the model writes only "a")."""
    compiled = ca.get("naive").compile(ca.Regex("a{16}"), vocab)
    target = _letters(vocab, "a" * 16)
    prompt = [vocab.eos_id, *_letters(vocab, "ababab")]
    result = _run(vocab, compiled, prompt, target, speculative=4, draft_policy="always",
                  draft_source="lookup")  # fmt: skip
    assert result.sequences[0].token_ids == target
    totals = result.totals()
    assert totals["accepted"] == totals["drafted"] > 0


def test_both_sources_draft_from_the_one_that_is_right(vocab):
    """A checker whose drafts always miss beside a prompt the model copies:
    alone (and by default: it proposes) it saves nothing; with the lookup
    beside it (``"both"``) the row drafts from the lookup. A checker that is
    right beside a lookup that misses keeps drafting from the checker. Same
    output every time."""
    compiled = ca.get("naive").compile(ca.Regex("[a-d]{16}"), vocab)

    class Proposing:
        """A checker whose drafts follow a script (of the text so far)."""

        def __init__(self, inner, script):
            self.inner, self.script, self.done = inner, script, 0

        def propose(self, max_tokens):
            return self.script[self.done : self.done + max_tokens]

        def update(self, token_ids):
            self.inner.update(token_ids)
            self.done += len(token_ids)

        def rollback(self, n):
            self.inner.rollback(n)
            self.done -= n

        def fork(self):
            return Proposing(self.inner.fork(), self.script)

        def __getattr__(self, name):
            return getattr(self.inner, name)

    target = _letters(vocab, "abcd" * 4)
    copied = [vocab.eos_id, *_letters(vocab, "abcd")]
    wrong = Proposing(compiled.checker(), _letters(vocab, "d" * 16))
    lm_options = {"speculative": 4, "draft_policy": "always"}
    plain = _run(vocab, compiled, copied, target)
    alone = _run(vocab, [wrong], copied, target, draft_source="checker", **lm_options)
    auto = _run(vocab, [wrong], copied, target, **lm_options)
    both = _run(vocab, [wrong], copied, target, draft_source="both", **lm_options)
    assert _tokens(alone) == _tokens(auto) == _tokens(both) == _tokens(plain) == [target]
    assert alone.totals()["accepted"] == auto.totals()["accepted"] == 0
    assert both.totals()["accepted"] > 0
    assert both.totals()["forward_passes"] < plain.totals()["forward_passes"] // 2

    # the prompt misleads the lookup ("a" then "d"), the checker is right
    misleading = [vocab.eos_id, *_letters(vocab, "adadad")]
    right = Proposing(compiled.checker(), target)
    by_checker = _run(vocab, [right], misleading, target, draft_source="checker", **lm_options)
    both = _run(vocab, [right], misleading, target, draft_source="both", **lm_options)
    assert _tokens(by_checker) == _tokens(both) == [target]
    assert both.totals()["forward_passes"] <= by_checker.totals()["forward_passes"] + 2


def _tokens(result):
    return [g.token_ids for g in result.sequences]
