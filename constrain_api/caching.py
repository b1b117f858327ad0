"""Bounded caches keyed by content, and the core's process-wide ones.

A :class:`ContentCache` is a thread-safe LRU whose keys describe what was
built (a pattern, a set of classes, never ``id()``), so a hit is the same
object a fresh build would equal. Compilers own theirs per vocabulary
(``BaseCompiler.cache``); the core keeps a few process-wide ones, listed by
:func:`core_caches` and emptied by :func:`clear_caches` (benchmarks do that
to measure a first compile).
"""

from __future__ import annotations

import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

V = TypeVar("V")


def default_size(value: Any) -> int:
    """Bytes of a cached value: its ``nbytes`` when it has one (numpy arrays,
    artifacts that report it), else ``sys.getsizeof`` (a lower bound)."""
    nbytes = getattr(value, "nbytes", None)
    return int(nbytes) if isinstance(nbytes, int) else sys.getsizeof(value)


@dataclass(frozen=True)
class CacheInfo:
    """One cache's figures: entries, bound, hits, misses, bytes (estimated)."""

    entries: int
    maxsize: int
    hits: int
    misses: int
    nbytes: int


class ContentCache(Generic[V]):
    """A bounded, thread-safe LRU keyed by content (hashable values that
    describe what was built: a pattern, a set of classes, never ``id()``).

    ``maxsize=0`` keeps nothing; ``sizeof`` estimates an entry's bytes when
    :meth:`info` is asked. With ``max_bytes`` the entries' estimated bytes
    (``sizeof`` at insertion) are bounded too: the least recent go first,
    and a value larger than the whole budget is returned but not kept."""

    def __init__(
        self,
        maxsize: int,
        sizeof: Callable[[Any], int] = default_size,
        max_bytes: int | None = None,
    ):
        if maxsize < 0:
            raise ValueError(f"a cache holds 0 entries or more, not {maxsize}")
        if max_bytes is not None and max_bytes < 0:
            raise ValueError(f"a cache holds 0 bytes or more, not {max_bytes}")
        self.maxsize = maxsize
        self.max_bytes = max_bytes
        self._sizeof = sizeof
        self._entries: OrderedDict[Hashable, V] = OrderedDict()
        self._sizes: dict[Hashable, int] = {}
        self._bytes = 0
        self._lock = threading.Lock()
        self._hits = self._misses = 0

    def get(self, key: Hashable) -> V | None:
        """The value for ``key`` (now the most recent), or ``None``."""
        with self._lock:
            value = self._entries.get(key)
            if value is None:
                self._misses += 1
                return None
            self._hits += 1
            self._entries.move_to_end(key)
            return value

    def put(self, key: Hashable, value: V) -> V:
        """Keep ``value`` for ``key`` (the least recent entries go past
        ``maxsize`` or ``max_bytes``); returns the value kept (an earlier one
        wins a race)."""
        size = self._sizeof(value) if self.max_bytes is not None else 0
        with self._lock:
            known = self._entries.get(key)
            if known is not None:
                return known
            if self.max_bytes is not None and size > self.max_bytes:
                return value
            self._entries[key] = value
            self._sizes[key] = size
            self._bytes += size
            while len(self._entries) > self.maxsize or (
                self.max_bytes is not None and self._bytes > self.max_bytes
            ):
                old, _ = self._entries.popitem(last=False)
                self._bytes -= self._sizes.pop(old)
            return value

    def get_or_build(self, key: Hashable, build: Callable[[], V]) -> V:
        """The value for ``key``, built by ``build()`` (outside the lock) on a miss."""
        value = self.get(key)
        return self.put(key, build()) if value is None else value

    def clear(self) -> None:
        """Drop every entry (the counters stay)."""
        with self._lock:
            self._entries.clear()
            self._sizes.clear()
            self._bytes = 0

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._entries

    def info(self) -> CacheInfo:
        """Entries, bound, hits, misses and estimated bytes."""
        with self._lock:
            values = list(self._entries.values())
        nbytes = sum(self._sizeof(value) for value in values)
        return CacheInfo(len(values), self.maxsize, self._hits, self._misses, nbytes)


_CORE: dict[str, Any] = {}


def core_cache(name: str, cache: Any) -> Any:
    """Register a process-wide cache of the core under ``name``: a
    ``ContentCache`` or an ``functools.lru_cache`` function. Returns it."""
    _CORE[name] = cache
    return cache


def core_caches() -> dict[str, CacheInfo]:
    """The core's process-wide caches and their figures."""
    out = {}
    for name, cache in sorted(_CORE.items()):
        if isinstance(cache, ContentCache):
            out[name] = cache.info()
        else:  # functools.lru_cache
            info = cache.cache_info()
            out[name] = CacheInfo(info.currsize, info.maxsize or 0, info.hits, info.misses, 0)
    return out


#: The most specs whose lowered forms (graphs of Python objects: regex ASTs,
#: grammar rules, lark's loaded grammars) a spec-keyed core cache keeps.
#: Every full pass of Python's garbage collector walks what caches keep: a
#: process compiling a new schema per request, its lowering cache at 256,
#: held ~1,600 objects a schema (~0.3 ms a collection each, paid by whichever
#: decoding step the collection lands on).
SPEC_GRAPHS = 32


#: The core caches keyed by a whole spec (the others hold parts shared
#: across specs, such as a regex's automaton).
SPEC_CACHES = (
    "compiled lark grammars",
    "grammar validations",
    "json schema specs",
    "lark grammar compilations",
    "lark grammar readings",
    "lark grammars",
    "lowered json schemas",
    "lowered specs",
)


def clear_caches(*names: str) -> None:
    """Empty the named process-wide caches of the core, or all of them (the
    next compile of anything is then a first compile). ``SPEC_CACHES`` are
    those keyed by a whole spec: clearing only them makes a spec new again
    while parts shared with other specs stay built. ``KeyError`` for an
    unknown name."""
    for name in names or tuple(_CORE):
        cache = _CORE[name]
        cache.cache_clear() if hasattr(cache, "cache_clear") else cache.clear()
