"""The time and memory one compilation may spend: ``max_seconds`` and ``max_memory_mb``.

Every backend built on ``BaseBackend`` takes these two compile options (in
its constructor and per ``compile``); :class:`~constrain_api.BaseCompiler`
opens a :class:`CompileBudget` around each compilation. The long loops of a
compilation — the JSON-schema lowering, subset construction and
minimization, product automata, the backends' own builders — call
:func:`checkpoint`, which raises ``CompileLimitExceeded`` once the
compilation has run past ``max_seconds``, or once the process's resident
memory has grown by more than ``max_memory_mb`` since it began. A call into
an engine that cannot be interrupted (outlines-core's index, OpenFst's
composition, XGrammar's compiler) is preceded by a size estimate where the
backend has one (:meth:`CompileBudget.check_estimate`) and followed by a
checkpoint, so the bound holds to within one such call (docs/usage.md lists
what each backend honours).

Outside a compilation (no budget open) :func:`checkpoint` does nothing, so
core functions called directly are not bounded. Memory is the process's
resident set: allocations by other threads during the compilation count too.
"""

from __future__ import annotations

import contextlib
import math
import os
import resource
import sys
import time
from collections.abc import Iterator
from contextvars import ContextVar

from .errors import CompileLimitExceeded

#: Defaults of every ``BaseBackend``: a compilation that would run longer or
#: take more memory than this is refused (``None`` lifts a bound).
DEFAULT_MAX_SECONDS: float | None = 30.0
DEFAULT_MAX_MEMORY_MB: float | None = 4096.0

#: The compile options every ``BaseBackend`` takes (constructor defaults through
#: ``ca.get(name, ...)``, or per ``compile``).
BUDGET_OPTIONS = ("max_seconds", "max_memory_mb")

#: Seconds between two readings of the resident set (one reading is a file read).
MEMORY_CHECK_INTERVAL = 0.002

_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


#: ``(pid, fd, identity)``: this process's ``/proc/<pid>/statm``, kept open
#: (a reading is then an ``fstat`` and a ``pread``, not an open, a read
#: and a close: 26 µs each in a compile); a forked child opens its own.
_statm: tuple[int, int, tuple[int, int]] | None = None


def _own_resident() -> int:
    """This process's resident bytes, read from the kept file; opened
    again when the number no longer names it (closed, or reused for
    another file, behind our back: the number is not closed then, it may
    be someone else's) or names the parent's (a forked child's copy, closed)."""
    global _statm
    pid, kept = os.getpid(), _statm
    if kept is not None:
        try:
            st = os.fstat(kept[1])
            ours = (st.st_dev, st.st_ino) == kept[2]
        except OSError:
            ours = False
        if ours and kept[0] == pid:
            return int(os.pread(kept[1], 128, 0).split()[1]) * _PAGE
        if ours:  # inherited across a fork: the parent's file, our copy of it
            os.close(kept[1])
    fd = os.open(f"/proc/{pid}/statm", os.O_RDONLY | os.O_CLOEXEC)
    st = os.fstat(fd)
    _statm = (pid, fd, (st.st_dev, st.st_ino))
    return _own_resident()


def resident_bytes(pid: int | None = None) -> int:
    """The resident memory of this process (or of ``pid``) now (Linux); for
    this process, its peak where the current figure is not available (0 for
    another process)."""
    try:
        if not pid:
            return _own_resident()
        with open(f"/proc/{pid}/statm", "rb") as f:
            return int(f.read().split()[1]) * _PAGE
    except (OSError, ValueError, IndexError):
        if pid is not None:
            return 0
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak if sys.platform == "darwin" else peak * 1024


def check_bound(name: str, value: float | None) -> float | None:
    """``value`` as a bound: ``None`` or a positive number; ``TypeError`` or
    ``ValueError`` (naming the option) otherwise."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number or None, not {type(value).__name__}")
    if not value > 0 or math.isnan(value):
        raise ValueError(f"{name} must be > 0 or None, not {value!r}")
    return float(value)


class CompileBudget:
    """One compilation's bounds, and what it has used of them so far."""

    __slots__ = (
        "_deadline",
        "_next_memory_check",
        "max_memory_mb",
        "max_seconds",
        "rss_start",
        "started",
    )

    def __init__(self, max_seconds: float | None = None, max_memory_mb: float | None = None):
        self.max_seconds = check_bound("max_seconds", max_seconds)
        self.max_memory_mb = check_bound("max_memory_mb", max_memory_mb)
        self.started = time.perf_counter()
        self._deadline = math.inf if self.max_seconds is None else self.started + self.max_seconds
        self.rss_start = resident_bytes() if self.max_memory_mb is not None else 0
        self._next_memory_check = self.started + MEMORY_CHECK_INTERVAL

    def elapsed(self) -> float:
        """Seconds since the compilation began."""
        return time.perf_counter() - self.started

    def grown_mb(self) -> float:
        """MiB the resident set has grown by since the compilation began."""
        return (resident_bytes() - self.rss_start) / 2**20

    def check(self) -> None:
        """``CompileLimitExceeded`` past either bound (memory is read at most
        every ``MEMORY_CHECK_INTERVAL`` seconds)."""
        now = time.perf_counter()
        if now > self._deadline:
            raise CompileLimitExceeded(
                "max_seconds",
                self.max_seconds,
                round(now - self.started, 3),
                "the compilation ran past its time bound",
            )
        if self.max_memory_mb is not None and now >= self._next_memory_check:
            self._next_memory_check = now + MEMORY_CHECK_INTERVAL
            grown = self.grown_mb()
            if grown > self.max_memory_mb:
                raise CompileLimitExceeded(
                    "max_memory_mb",
                    self.max_memory_mb,
                    round(grown),
                    "the process's resident memory grew past the bound during the compilation",
                )

    def check_estimate(self, megabytes: float, what: str) -> None:
        """``CompileLimitExceeded`` when a step estimated to take ``megabytes``
        MiB would pass the memory bound (before an uninterruptible call)."""
        self.check()
        if self.max_memory_mb is None:
            return
        if self.grown_mb() + megabytes > self.max_memory_mb:
            raise CompileLimitExceeded(
                "max_memory_mb",
                self.max_memory_mb,
                round(megabytes),
                f"{what} would pass the memory bound (estimated before building)",
            )


#: The ``limit`` of a ``CompileLimitExceeded`` raised by a budget.
BUDGET_LIMITS = frozenset({"max_seconds", "max_memory_mb"})


def is_budget_error(error: CompileLimitExceeded) -> bool:
    """Whether ``error`` is a budget's (a code path that falls back when an
    automaton is too large must re-raise these: the whole compilation is over)."""
    return error.limit in BUDGET_LIMITS


_current: ContextVar[CompileBudget | None] = ContextVar("compile_budget", default=None)


def current_budget() -> CompileBudget | None:
    """The budget of the compilation running in this thread, if any."""
    return _current.get()


def checkpoint() -> None:
    """Raise ``CompileLimitExceeded`` if the running compilation has passed
    its bounds; nothing outside a compilation. Cheap: call it per state."""
    budget = _current.get()
    if budget is not None:
        budget.check()


@contextlib.contextmanager
def compile_budget(
    max_seconds: float | None = None, max_memory_mb: float | None = None
) -> Iterator[CompileBudget]:
    """Bound the compilation run inside the ``with`` block (this thread)."""
    budget = CompileBudget(max_seconds, max_memory_mb)
    token = _current.set(budget)
    try:
        yield budget
    finally:
        _current.reset(token)
