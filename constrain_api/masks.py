"""Packed token bitmasks: the one mask format every backend writes.

A bitmask is a 2-D int32 array of shape ``(batch, ceil(V / 32))``: bit
``i & 31`` of word ``i >> 5`` is set when token ``i`` is allowed. This is the
layout of XGrammar, llguidance and vLLM, so masks interoperate with their
kernels. Bits at or above ``V`` (padding of the last word) are never set.

A bitmask may be a numpy array or a CPU ``torch.Tensor``; backends write into
either through :func:`row_view`, which returns a zero-copy numpy view of one
row, or :func:`vocab_row`, its words that hold the vocabulary's bits (a row
may be wider than the vocabulary: the words past it are left at 0).
torch is only needed for the tensor helpers and :func:`apply_bitmask_`.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from . import apply_kernel

if TYPE_CHECKING:  # pragma: no cover
    import torch

#: dtype of a packed bitmask word (a dtype, not the scalar type: comparing
#: an array's dtype with it costs no conversion, once per ``fill_mask``).
BITMASK_DTYPE = np.dtype(np.int32)


def bitmask_words(vocab_size: int) -> int:
    """Number of int32 words that hold ``vocab_size`` bits."""
    if vocab_size < 0:
        raise ValueError(f"vocab_size must be >= 0, got {vocab_size}")
    return (vocab_size + 31) // 32


def allocate_bitmask(batch: int, vocab_size: int) -> np.ndarray:
    """A zeroed ``(batch, ceil(V/32))`` int32 numpy bitmask (nothing allowed)."""
    return np.zeros((batch, bitmask_words(vocab_size)), dtype=BITMASK_DTYPE)


def allocate_bitmask_tensor(
    batch: int, vocab_size: int, *, pin_memory: bool = False
) -> torch.Tensor:
    """A zeroed int32 CPU ``torch.Tensor`` bitmask; ``pin_memory`` for fast host-to-GPU copies."""
    import torch

    return torch.zeros((batch, bitmask_words(vocab_size)), dtype=torch.int32, pin_memory=pin_memory)


def row_view(bitmask: Any, row: int = 0, vocab_size: int = 0) -> np.ndarray:
    """Zero-copy 1-D int32 numpy view of one row of a numpy or CPU-tensor bitmask.

    Writes through the view change the bitmask. Raises ``TypeError`` for a
    bitmask that is not int32 or not on the CPU, ``IndexError`` for a row it
    does not have, ``ValueError`` for a row too narrow for ``vocab_size`` tokens.
    """
    if (  # the common case, all of it checked at once: a 2-D numpy bitmask wide enough
        type(bitmask) is np.ndarray
        and bitmask.dtype is BITMASK_DTYPE
        and bitmask.ndim == 2
        and bitmask.shape[1] << 5 >= vocab_size
    ):
        return bitmask[row]  # (IndexError for a row it does not have)
    if isinstance(bitmask, np.ndarray):
        arr = bitmask
    else:
        device = getattr(bitmask, "device", None)
        if device is not None and getattr(device, "type", "cpu") != "cpu":
            raise TypeError(f"fill the bitmask on the CPU, not on {device}")
        if not callable(getattr(bitmask, "numpy", None)):
            raise TypeError(
                "bitmask must be a numpy array or a CPU torch tensor (allocate_bitmask), "
                f"not {type(bitmask).__name__}"
            )
        arr = bitmask.numpy()
    if arr.dtype != BITMASK_DTYPE:
        raise TypeError(f"bitmask must be int32, got {arr.dtype}")
    if arr.ndim == 1:
        if row != 0:
            raise IndexError(f"row {row} of a 1-D bitmask")
        view = arr
    else:
        view = arr[row]
    words = (vocab_size + 31) // 32
    if view.shape[0] < words:
        raise ValueError(
            f"a bitmask row of {view.shape[0]} words cannot hold {vocab_size} tokens"
            f" ({words} words)"
        )
    return view


def vocab_row(bitmask: Any, row: int, vocab_size: int) -> np.ndarray:
    """The words of row ``row`` that hold the vocabulary's bits
    (``bitmask_words(vocab_size)`` of them, a zero-copy view, C-contiguous
    when the row is), after zeroing the row's words past them: a bitmask
    wider than the vocabulary (one sized for a model's padded logits) has
    its whole row written, the rest left at 0. Raises as :func:`row_view`."""
    view = row_view(bitmask, row, vocab_size)
    words = (vocab_size + 31) >> 5
    if view.shape[0] != words:
        view[words:] = 0
        view = view[:words]
    return view


# Bits of each int32 word as a little-endian byte sequence: unpackbits with
# bitorder="little" on the uint8 view yields token order directly.
def _ids_from_row(words: np.ndarray, vocab_size: int) -> np.ndarray:
    bits = np.unpackbits(words.astype("<i4", copy=False).view(np.uint8), bitorder="little")
    return np.flatnonzero(bits[:vocab_size]).astype(np.int64)


def pack_row(allowed: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """Pack a 1-D boolean array (token ``i`` allowed iff ``allowed[i]``) into a
    row of int32 words: into ``out`` when given, else a new row. When the
    array's length is a multiple of 32 (``bitmask_words(V) * 32``, the padding
    left ``False``) nothing of vocabulary size is allocated besides the
    packed bytes."""
    allowed = np.asarray(allowed, dtype=bool)
    if allowed.shape[0] % 32:
        padded = np.zeros(bitmask_words(allowed.shape[0]) * 32, dtype=bool)
        padded[: allowed.shape[0]] = allowed
        allowed = padded
    words = np.packbits(allowed, bitorder="little").view("<i4")
    if out is None:
        return words.astype(BITMASK_DTYPE)
    out[: words.shape[0]] = words
    out[words.shape[0] :] = 0
    return out


def _row_from_bool(allowed: np.ndarray, out: np.ndarray) -> None:
    pack_row(allowed, out)


class TokenMask:
    """The set of allowed token ids as one packed bitmask row.

    ``TokenMask(words, vocab_size)`` wraps (does not copy) a 1-D int32 array.
    Supports ``token_id in mask``, ``len``/``count()``, iteration in id order,
    ``allowed_ids()``, ``to_bool()``, equality, and set algebra
    (``&``, ``|``, ``-``) for comparing backends.
    """

    __slots__ = ("vocab_size", "words")

    def __init__(self, words: np.ndarray, vocab_size: int):
        words = np.asarray(words)
        if words.dtype != BITMASK_DTYPE or words.ndim != 1:
            raise TypeError("TokenMask wraps a 1-D int32 array")
        if words.shape[0] != bitmask_words(vocab_size):
            raise ValueError(
                f"{words.shape[0]} words cannot hold a vocabulary of {vocab_size} "
                f"(need {bitmask_words(vocab_size)})"
            )
        self.words = words
        self.vocab_size = vocab_size

    @classmethod
    def empty(cls, vocab_size: int) -> TokenMask:
        """Nothing allowed."""
        return cls(np.zeros(bitmask_words(vocab_size), dtype=BITMASK_DTYPE), vocab_size)

    @classmethod
    def full(cls, vocab_size: int) -> TokenMask:
        """Every id below ``vocab_size`` allowed."""
        return cls.from_bool(np.ones(vocab_size, dtype=bool))

    @classmethod
    def from_ids(cls, ids: Iterable[int], vocab_size: int) -> TokenMask:
        """The mask allowing exactly ``ids``; an id outside ``[0, V)`` raises ``IndexError``."""
        allowed = np.zeros(vocab_size, dtype=bool)
        idx = np.fromiter(ids, dtype=np.int64)
        if idx.size and (idx.min() < 0 or idx.max() >= vocab_size):
            raise IndexError(f"token ids must lie in [0, {vocab_size})")
        allowed[idx] = True
        return cls.from_bool(allowed)

    @classmethod
    def from_bool(cls, allowed: Any) -> TokenMask:
        """From a 1-D boolean numpy array or tensor of length V."""
        if hasattr(allowed, "detach"):
            allowed = allowed.detach().cpu().numpy()
        allowed = np.asarray(allowed, dtype=bool)
        if allowed.ndim != 1:
            raise ValueError("expected a 1-D boolean array")
        words = np.zeros(bitmask_words(allowed.shape[0]), dtype=BITMASK_DTYPE)
        _row_from_bool(allowed, words)
        return cls(words, allowed.shape[0])

    def allowed_ids(self) -> np.ndarray:
        """Allowed ids, ascending, as an int64 numpy array."""
        return _ids_from_row(self.words, self.vocab_size)

    def to_bool(self) -> np.ndarray:
        """Boolean numpy array of length V."""
        bits = np.unpackbits(self.words.astype("<i4", copy=False).view(np.uint8), bitorder="little")
        return bits[: self.vocab_size].astype(bool)

    def count(self) -> int:
        """Number of allowed tokens."""
        return int(self.to_bool().sum())

    def copy(self) -> TokenMask:
        """An independent copy (the wrapped row may be overwritten by the next step)."""
        return TokenMask(self.words.copy(), self.vocab_size)

    def __contains__(self, token_id: object) -> bool:
        if not isinstance(token_id, int | np.integer) or not 0 <= token_id < self.vocab_size:
            return False
        return bool((int(self.words[token_id >> 5]) >> (token_id & 31)) & 1)

    def __len__(self) -> int:
        return self.count()

    def __iter__(self) -> Iterator[int]:
        return iter(self.allowed_ids().tolist())

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TokenMask):
            return NotImplemented
        return self.vocab_size == other.vocab_size and bool(np.array_equal(self.words, other.words))

    __hash__ = None  # mutable view

    def _combine(self, other: TokenMask, op: Any) -> TokenMask:
        if self.vocab_size != other.vocab_size:
            raise ValueError("masks over different vocabulary sizes")
        return TokenMask(op(self.words, other.words), self.vocab_size)

    def __and__(self, other: TokenMask) -> TokenMask:
        return self._combine(other, np.bitwise_and)

    def __or__(self, other: TokenMask) -> TokenMask:
        return self._combine(other, np.bitwise_or)

    def __sub__(self, other: TokenMask) -> TokenMask:
        return self._combine(other, lambda a, b: np.bitwise_and(a, np.invert(b)))

    def __repr__(self) -> str:
        ids = self.allowed_ids()
        shown = ", ".join(map(str, ids[:8].tolist())) + (", ..." if ids.size > 8 else "")
        return f"TokenMask({ids.size} of {self.vocab_size} allowed: [{shown}])"


def bitmask_from_bool(allowed: Any) -> Any:
    """Pack a ``(batch, V)`` (or ``(V,)``) boolean array or tensor into an int32 bitmask.

    Returns the same kind it was given (numpy or torch, on the same device).
    """
    if hasattr(allowed, "detach"):
        import torch

        squeeze = allowed.dim() == 1
        a = allowed.reshape(1, -1) if squeeze else allowed
        batch, v = a.shape
        nwords = bitmask_words(v)
        padded = torch.zeros((batch, nwords * 32), dtype=torch.int64, device=a.device)
        padded[:, :v] = a.to(torch.int64)
        shifts = torch.arange(32, device=a.device, dtype=torch.int64)
        words = (padded.view(batch, nwords, 32) << shifts).sum(-1)
        # Fold the unsigned 32-bit value into int32's two's complement.
        words = torch.where(words >= 2**31, words - 2**32, words).to(torch.int32)
        return words[0] if squeeze else words
    arr = np.asarray(allowed, dtype=bool)
    squeeze = arr.ndim == 1
    arr2 = arr.reshape(1, -1) if squeeze else arr
    batch, v = arr2.shape
    padded = np.zeros((batch, bitmask_words(v) * 32), dtype=bool)
    padded[:, :v] = arr2
    out = np.packbits(padded, axis=-1, bitorder="little").view("<i4").astype(BITMASK_DTYPE)
    return out[0] if squeeze else out


def bitmask_to_bool(bitmask: Any, vocab_size: int) -> Any:
    """Unpack an int32 bitmask (numpy or tensor, 1-D or 2-D) into booleans of width V."""
    if hasattr(bitmask, "detach"):
        return _unpack_tensor(bitmask, vocab_size)
    arr = np.asarray(bitmask)
    squeeze = arr.ndim == 1
    arr2 = arr.reshape(1, -1) if squeeze else arr
    bits = np.unpackbits(
        np.ascontiguousarray(arr2.astype("<i4", copy=False)).view(np.uint8),
        axis=-1,
        bitorder="little",
    )[:, :vocab_size].view(bool)  # (0 or 1 each: a view, no copy)
    return bits[0] if squeeze else bits


def _unpack_tensor(bitmask: torch.Tensor, width: int) -> torch.Tensor:
    """Bits of ``bitmask`` (…, W) as booleans (…, width); bits past W*32 are False.

    Works on the uint8 view (little-endian words: byte k holds ids 8k..8k+7),
    which moves a quarter of the memory of shifting int32 words by 0..31.
    """
    import torch

    nwords = bitmask.shape[-1]
    as_bytes = bitmask.contiguous().view(torch.uint8)
    shifts = torch.arange(8, device=bitmask.device, dtype=torch.uint8)
    bits = ((as_bytes.unsqueeze(-1) >> shifts) & 1).view(torch.bool)
    bits = bits.reshape(*bitmask.shape[:-1], nwords * 32)
    if width <= nwords * 32:
        return bits[..., :width]
    pad = torch.zeros(
        (*bitmask.shape[:-1], width - nwords * 32), dtype=torch.bool, device=bits.device
    )
    return torch.cat([bits, pad], dim=-1)


def apply_bitmask_(
    logits: torch.Tensor,
    bitmask: Any,
    *,
    vocab_size: int | None = None,
    indices: Iterable[int] | None = None,
) -> torch.Tensor:
    """Set the logits of disallowed tokens to ``-inf``, in place, on the logits' device.

    ``logits`` is ``(batch, W)`` or ``(W,)``; ``bitmask`` the matching
    ``(batch, ceil(V/32))`` (or 1-D) int32 bitmask, numpy or tensor on any
    device. ``W`` may exceed ``V`` (padded embedding rows): columns at or past
    ``vocab_size`` (default: ``32 * words``) are always disallowed, as are
    padding bits. ``indices`` restricts the operation to those rows of a
    2-D ``logits``/``bitmask`` pair. Returns ``logits``.

    On CUDA logits with triton importable, one fused kernel does it
    (:mod:`constrain_api.apply_kernel`; ``CONSTRAIN_APPLY=torch`` turns it
    off); on a CPU a branch-free bit blend (float32, float16, bfloat16
    logits given all rows) or a select; elsewhere torch ops unpack the bits
    into a boolean mask.
    """
    import torch

    if not isinstance(bitmask, torch.Tensor):
        bitmask = torch.from_numpy(np.asarray(bitmask))
    if bitmask.dtype != torch.int32:
        raise TypeError(f"bitmask must be int32, got {bitmask.dtype}")
    if logits.dim() not in (1, 2) or bitmask.dim() != logits.dim():
        raise ValueError(
            f"logits {tuple(logits.shape)} and bitmask {tuple(bitmask.shape)} "
            "must both be 1-D or 2-D"
        )
    nwords = bitmask.shape[-1]
    if vocab_size is None:
        vocab_size = nwords * 32
    if bitmask_words(vocab_size) != nwords:
        raise ValueError(
            f"bitmask has {nwords} words; a vocabulary of {vocab_size} "
            f"needs {bitmask_words(vocab_size)}"
        )
    if logits.dim() == 2 and logits.shape[0] != bitmask.shape[0] and indices is None:
        raise ValueError(
            f"batch of logits ({logits.shape[0]}) != batch of bitmask ({bitmask.shape[0]})"
        )
    bitmask = bitmask.to(logits.device, non_blocking=True)
    width = logits.shape[-1]
    rows = None
    if indices is not None:
        ids = [int(i) for i in indices]
        n = min(logits.shape[0], bitmask.shape[0])
        bad = [i for i in ids if not 0 <= i < n]
        if bad:
            raise IndexError(f"indices {bad[:4]} outside the {n} rows of logits and bitmask")
        rows = torch.as_tensor(ids, dtype=torch.long, device=logits.device)
    if apply_kernel.usable(logits) and (rows is None or logits.dim() == 2):
        if logits.dim() == 1:
            logits2, bitmask2 = logits.view(1, -1), bitmask.view(1, -1)
        else:
            logits2, bitmask2 = logits, bitmask
        if apply_kernel.apply_(logits2, bitmask2, vocab_size, rows):
            return logits
    chosen = bitmask if rows is None else bitmask.index_select(0, rows)
    if logits.device.type == "cpu":
        if rows is None and _blend_on_cpu(logits, chosen, vocab_size):
            return logits
        refused = torch.from_numpy(_refused_on_cpu(chosen, width, vocab_size))
        if rows is None and not logits.requires_grad:  # (a select: 10 % faster than masked_fill_)
            minus_inf = torch.tensor(float("-inf"), dtype=logits.dtype)
            return torch.where(refused, minus_inf, logits, out=logits)
    else:
        allowed = _unpack_tensor(chosen, width)
        if vocab_size < width:
            allowed[..., vocab_size:] = False
        refused = allowed.logical_not_()
    if rows is None:
        return logits.masked_fill_(refused, float("-inf"))
    logits.index_copy_(0, rows, logits.index_select(0, rows).masked_fill_(refused, float("-inf")))
    return logits


#: The CPU blend's lanes per chunk of rows (2 MiB of int32): rows are
#: blended a chunk at a time, so the lanes stay in cache and their memory is
#: reused (a 64 x 128k batch at once is 1.8x slower).
_BLEND_CHUNK = 1 << 19

#: Below this many logits the select costs less than the blend's few ops.
_BLEND_LEAST = 1 << 14


@functools.cache
def _blend_kind(dtype: Any) -> tuple[Any, int, Any, int] | None:
    """For a logits dtype the blend handles (float32, float16, bfloat16 on a
    little-endian machine): the signed integer dtype of its width, the width
    in bits, the lane shifts and -inf's bit pattern; else None."""
    import torch

    ints = {torch.float32: torch.int32, torch.float16: torch.int16, torch.bfloat16: torch.int16}
    int_dtype = ints.get(dtype)
    if int_dtype is None or sys.byteorder != "little":
        return None
    bits = torch.iinfo(int_dtype).bits
    shifts = torch.arange(bits - 1, -1, -1, dtype=int_dtype)
    minus_inf = torch.tensor(float("-inf"), dtype=dtype).view(int_dtype).item()
    return int_dtype, bits, shifts, minus_inf


def _blend_on_cpu(logits: torch.Tensor, bitmask: torch.Tensor, vocab_size: int) -> bool:
    """Refuse the tokens of a CPU bitmask in ``logits`` (1-D or 2-D, any
    strides) by rewriting their bits, or return False for a dtype it does
    not handle (float64), a big-endian machine, fewer than ``_BLEND_LEAST``
    logits or logits that require grad (``masked_fill_`` then keeps
    autograd's record).

    Each word's bits become lanes of all ones (allowed) or zeros (refused)
    by two shifts, then ``((x ^ -inf) & lane) ^ -inf`` keeps an allowed
    logit's bits and writes -inf's bits into a refused one: the result is
    bit-identical to a select, with no data-dependent branch. torch's CPU
    ``where``/``masked_fill_`` branch per element, so a scattered mask (every
    other token allowed, as in JSON strings with Llama-3's vocabulary) costs
    them 3-5x a uniform one; this costs the same for every mask: 16 x 128k
    logits 0.6-0.9 ms against 0.75-2.4 ms.
    """
    if logits.numel() < _BLEND_LEAST or logits.requires_grad:  # (bits are not differentiable)
        return False
    kind = _blend_kind(logits.dtype)
    if kind is None:
        return False
    int_dtype, bits, shifts, minus_inf = kind
    x = logits.unsqueeze(0) if logits.dim() == 1 else logits
    words = bitmask.reshape(x.shape[0], -1).contiguous().view(int_dtype)  # (little-endian lanes)
    batch, lanes = words.shape[0], words.shape[1] * bits
    ints = x.view(int_dtype)
    n = min(vocab_size, x.shape[-1])
    step = max(1, _BLEND_CHUNK // lanes)
    for start in range(0, batch, step):
        chunk = words[start : start + step]
        keep = (chunk.unsqueeze(-1) << shifts).bitwise_right_shift_(bits - 1)
        keep = keep.view(chunk.shape[0], lanes)[:, :n]
        ints[start : start + step, :n].bitwise_xor_(minus_inf).bitwise_and_(keep).bitwise_xor_(
            minus_inf
        )
    if n < x.shape[-1]:
        ints[:, n:] = minus_inf
    return True


def _refused_on_cpu(bitmask: torch.Tensor, width: int, vocab_size: int) -> np.ndarray:
    """The refused columns of a CPU bitmask as a boolean array of the logits'
    ``width``: ids at or past ``vocab_size`` refused too. Unpacked by
    :func:`bitmask_to_bool` (numpy's ``unpackbits``, one C pass), faster
    than the shifts of :func:`_unpack_tensor` over an 8-times wider tensor:
    the CPU apply is 1.2-2x faster with it."""
    n = min(vocab_size, width)
    allowed = bitmask_to_bool(bitmask.numpy(), n)
    refused = np.ones((*allowed.shape[:-1], width), dtype=bool)
    np.logical_not(allowed, out=refused[..., :n])
    return refused


class SpecialBits:
    """Precomputed bit operations for a vocabulary's EOS and special tokens.

    ``finish_row(row, accepting)`` clears every special token's bit and sets
    the EOS bits when ``accepting``: the last step of every ``fill_mask``.
    Costs a few word operations, independent of V.
    """

    def __init__(self, vocab: Any):
        self.vocab_size = int(vocab.size)
        special = np.array(sorted(vocab.special_ids), dtype=np.int64)
        eos = np.array(sorted(vocab.eos_ids), dtype=np.int64)
        self._special_words, self._special_keep = self._group(special, invert=True)
        eos_words, eos_set = self._group(eos, invert=False)
        # specials packed in a few neighbouring words (Llama-3: 256 ids, 8
        # words) are cleared through one slice: a fancy index costs a gather
        # and a scatter, several times the AND itself
        self._special_span: tuple[int, int, np.ndarray] | None = None
        if self._special_words.size:
            lo, hi = int(self._special_words[0]), int(self._special_words[-1]) + 1
            if hi - lo <= 4 * self._special_words.size + 8:
                keep = np.full(hi - lo, -1, dtype=np.int32)
                keep[self._special_words - lo] = self._special_keep
                self._special_span = (lo, hi, keep)
        self._eos_pairs = [(int(w), np.int32(v)) for w, v in zip(eos_words, eos_set, strict=True)]
        last_bits = self.vocab_size & 31
        # Padding bits of the last word: never set.
        self._pad_word = bitmask_words(self.vocab_size) - 1 if last_bits else -1
        self._pad_keep = (
            np.int32(np.uint32((1 << last_bits) - 1).view(np.int32)) if last_bits else 0
        )

    @staticmethod
    def _group(ids: np.ndarray, invert: bool) -> tuple[np.ndarray, np.ndarray]:
        words = np.unique(ids >> 5)
        acc = {int(w): 0 for w in words}
        for i in ids.tolist():
            acc[i >> 5] |= 1 << (i & 31)
        vals = np.array([acc[int(w)] for w in words], dtype=np.uint32)
        if invert:
            vals = ~vals
        return words.astype(np.intp), vals.view(np.int32)

    def finish_row(self, row: np.ndarray, accepting: bool) -> None:
        """Clear special and padding bits of ``row``; set EOS bits iff ``accepting``."""
        span = self._special_span
        if span is not None:
            row[span[0] : span[1]] &= span[2]
        elif self._special_words.size:
            row[self._special_words] &= self._special_keep
        if self._pad_word >= 0:
            row[self._pad_word] &= self._pad_keep
        if accepting:
            for word, bits in self._eos_pairs:
                row[word] |= bits
