"""The fused apply of a packed bitmask on a GPU: one Triton kernel.

:func:`~constrain_api.masks.apply_bitmask_` sends CUDA logits here when
``triton`` is importable: each program takes one row and a block of
columns, reads the block's bitmask words, and writes ``-inf`` only where a
token is refused (a column at or past the vocabulary, or whose bit is
clear). The logits are never read, and nothing the size of the logits is
allocated: the torch path unpacks the bits into a boolean tensor of the
logits' width first (three kernels and ``B × W`` bytes per call).

``CONSTRAIN_APPLY=torch`` in the environment keeps the torch path; a kernel
that fails to build (no compiler for this GPU) warns once and the process
falls back to it. Nothing here imports triton until CUDA logits arrive, so
a CPU process never pays for it. The kernel is made on first use, so a test
can build it under Triton's interpreter (``TRITON_INTERPRET=1``), which runs
it on CPU tensors.
"""

from __future__ import annotations

import functools
import os
import warnings
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    import torch

__all__ = ["BLOCK", "ENV_VAR", "apply_", "usable"]

#: the environment variable that chooses the apply: ``torch`` for the torch
#: path, anything else (or unset) for the kernel where it can run
ENV_VAR = "CONSTRAIN_APPLY"
#: columns per program: 32 words of the bitmask each (Llama-3's 128,256
#: logits are 126 programs a row, enough to fill a GPU at batch 1)
BLOCK = 1024

_FLOATS = ("float32", "float16", "bfloat16")
_broken: list[str] = []  # why the kernel could not be built, once it failed


@functools.lru_cache(maxsize=1)
def _kernel() -> Any:
    """The jitted kernel (Triton's interpreter when ``TRITON_INTERPRET=1``)."""
    import triton
    import triton.language as tl

    @triton.jit
    def apply_bitmask_kernel(
        logits_ptr,
        bitmask_ptr,
        rows_ptr,
        logits_stride,
        bitmask_stride,
        width,
        vocab_size,
        HAS_ROWS: tl.constexpr,
        BLOCK: tl.constexpr,
    ):
        if HAS_ROWS:  # a subset of the rows: their indices, the same in both
            row = tl.load(rows_ptr + tl.program_id(0)).to(tl.int64)
        else:
            row = tl.program_id(0).to(tl.int64)
        cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
        # columns past the vocabulary read no word (0: refused), padding bits included;
        # those before it are within the bitmask's words (checked by the caller)
        in_vocab = cols < vocab_size
        words = tl.load(bitmask_ptr + row * bitmask_stride + (cols >> 5), mask=in_vocab, other=0)
        allowed = ((words >> (cols & 31)) & 1) != 0
        refused = (cols < width) & ~allowed
        minus_inf = tl.full([BLOCK], float("-inf"), logits_ptr.dtype.element_ty)
        tl.store(logits_ptr + row * logits_stride + cols, minus_inf, mask=refused)

    return apply_bitmask_kernel


def usable(logits: torch.Tensor) -> bool:
    """Whether :func:`apply_` takes these logits: on a CUDA device, a float
    dtype it writes, unit stride along the vocabulary, triton importable,
    and not turned off (``CONSTRAIN_APPLY=torch``, or a failed build)."""
    if not logits.is_cuda or _broken or os.environ.get(ENV_VAR, "") == "torch":
        return False
    if str(logits.dtype).removeprefix("torch.") not in _FLOATS or logits.stride(-1) != 1:
        return False
    return _importable()


@functools.lru_cache(maxsize=1)
def _importable() -> bool:
    try:
        import triton  # noqa: F401
    except ImportError:
        return False
    return True


def apply_(
    logits: torch.Tensor,
    bitmask: torch.Tensor,
    vocab_size: int,
    rows: torch.Tensor | None = None,
) -> bool:
    """Write ``-inf`` into the refused columns of 2-D ``logits``, in place.

    ``bitmask``: int32 ``(batch, ceil(vocab_size / 32))`` on the logits'
    device; ``rows``: int64 indices of the rows to apply (both tensors'),
    on that device, or ``None`` for all. Columns at or past ``vocab_size``
    are refused. Returns ``False`` (having written nothing) when the kernel
    cannot be built here, after a warning the first time; the caller then
    takes the torch path.
    """
    n_rows = logits.shape[0] if rows is None else rows.shape[0]
    width = logits.shape[1]
    if n_rows == 0 or width == 0:
        return True
    bitmask = bitmask.contiguous()
    grid = (n_rows, -(-width // BLOCK))
    try:
        _kernel()[grid](
            logits,
            bitmask,
            bitmask if rows is None else rows,  # (a pointer it never reads without rows)
            logits.stride(0),
            bitmask.stride(0),
            width,
            vocab_size,
            HAS_ROWS=rows is not None,
            BLOCK=BLOCK,
        )
    except Exception as e:  # a compiler missing or refusing this GPU: nothing was written
        if not _broken:
            _broken.append(f"{type(e).__name__}: {e}")
            warnings.warn(
                f"the Triton apply kernel could not run ({_broken[0]}); "
                "apply_bitmask_ takes the torch path from now on",
                RuntimeWarning,
                stacklevel=3,
            )
        return False
    return True
