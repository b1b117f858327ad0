"""The loop reads each filled mask row once: ``sole_tokens`` against a
brute-force reading of the bits."""

from __future__ import annotations

import numpy as np
import pytest

from constrain_api.decoding.masking import NOTHING, SEVERAL, sole_tokens


def _brute(row: np.ndarray) -> int:
    bits = np.unpackbits(row.view(np.uint8), bitorder="little")
    ids = np.flatnonzero(bits)
    if ids.size == 0:
        return NOTHING
    return int(ids[0]) if ids.size == 1 else SEVERAL


@pytest.mark.parametrize("words", [1, 2, 3, 4008])
def test_sole_tokens_agrees_with_the_bits(words):
    rng = np.random.default_rng(words)
    rows = [np.zeros(words, dtype=np.int32)]  # nothing allowed
    # exactly one (sign bit included; read as 64-bit words: low half, high half, top bit)
    for bit in [0, 31, 32 * words - 1, 32 * (words // 2) + 17, 32 * min(1, words - 1) + 5]:
        row = np.zeros(words, dtype=np.int32)
        row.view(np.uint32)[bit // 32] = np.uint32(1) << np.uint32(bit % 32)
        rows.append(row)
    two_in_a_word = np.zeros(words, dtype=np.int32)
    two_in_a_word[-1] = 0b101
    rows.append(two_in_a_word)
    if words > 1:
        two_words = np.zeros(words, dtype=np.int32)
        two_words[0], two_words[-1] = 1, 1
        rows.append(two_words)
        two_halves = np.zeros(words, dtype=np.int32)  # one 64-bit word, a bit in each half
        two_halves[0], two_halves[1] = 1, 1
        rows.append(two_halves)
    noise = rng.integers(-(2**31), 2**31, (3, words), dtype=np.int64).astype(np.int32)
    rows += list(noise)
    batch = np.stack(rows)
    assert sole_tokens(batch).tolist() == [_brute(r) for r in batch]
    strided = np.zeros((len(rows), 2 * words), dtype=np.int32)[:, ::2]  # (read 32 bits a word)
    strided[:] = batch
    assert sole_tokens(strided).tolist() == [_brute(r) for r in batch]
    assert SEVERAL in sole_tokens(batch).tolist() and NOTHING in sole_tokens(batch).tolist()


@pytest.mark.parametrize("words", [1, 2, 13, 4008])
def test_sole_tokens_of_rows_that_all_leave_a_choice_and_of_one_row(words):
    """A batch where every row leaves a choice (the loop's usual step, read
    without looking for single bits), and each kind of row alone (the forced
    chain's scratch row)."""
    rng = np.random.default_rng(words)
    several = rng.integers(-(2**31), 2**31, (5, words), dtype=np.int64).astype(np.int32)
    several[:, -1] |= 0b11  # at least two bits in every row
    assert sole_tokens(several).tolist() == [SEVERAL] * 5
    assert sole_tokens(several[:0]).tolist() == []
    one = np.zeros((1, words), dtype=np.int32)
    assert sole_tokens(one).tolist() == [NOTHING]
    one[0, words // 2] = np.int32(-(2**31))  # the sign bit alone: one token
    assert sole_tokens(one).tolist() == [_brute(one[0])] == [32 * (words // 2) + 31]
    one[0, 0] |= 1
    assert sole_tokens(one).tolist() == [_brute(one[0])] == [SEVERAL]
    for row in several:
        assert sole_tokens(row[None]).tolist() == [SEVERAL]
