"""``BaseBackend`` and one ``BaseCompiler`` per vocabulary: the compile half of
the compile/match split.

``backend.compiler(vocab)`` returns a :class:`BaseCompiler` subclass built
once per vocabulary (XGrammar's ``GrammarCompiler(tokenizer_info)``, vLLM's
per-tokenizer backend). It holds what a backend derives from the vocabulary
(a token trie, an engine's tokenizer) and its caches, and does the work
every backend shares, once:

* reads and checks the compile options (``TypeError`` naming an unknown one),
  the budget options ``max_seconds`` and ``max_memory_mb`` included,
* bounds the compilation by them (``constrain_api.budget``),
* refuses a kind the backend's ``capabilities`` do not list,
* lowers the spec (``constrain_api.lowering.lower``) and dispatches:
  a regular language to :meth:`BaseCompiler.compile_regular`, a grammar to
  :meth:`BaseCompiler.compile_grammar`,
* times the whole (``CompileStats.seconds``),
* names the backend in every ``UnsupportedConstraint``.

A backend implements the one or two methods for the forms it compiles
(and :meth:`BaseCompiler.compile_native` for specs it takes before lowering,
such as an engine's own JSON-schema compiler or a plugin's own kind).
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from .budget import (
    BUDGET_OPTIONS,
    DEFAULT_MAX_MEMORY_MB,
    DEFAULT_MAX_SECONDS,
    check_bound,
    checkpoint,
    compile_budget,
)
from .caching import CacheInfo, ContentCache, default_size
from .errors import UnsupportedConstraint
from .jsonschema.formats import build_formats
from .lowering import ContextFree, Regular, lower
from .vocabulary import Vocabulary

if TYPE_CHECKING:  # pragma: no cover
    from .base import BaseCompiled
    from .protocols import Capabilities
    from .specs import Constraint

#: Compile options as attributes (``options.max_states``).
Options = SimpleNamespace


class BaseCompiler:
    """Compiles constraints for one vocabulary (see the module docstring).

    Subclasses set up per-vocabulary state in ``__init__`` (after calling
    ``super().__init__``), create caches with :meth:`cache`, and implement
    :meth:`compile_regular` and/or :meth:`compile_grammar`. Each returns a
    ``BaseCompiled`` whose ``stats`` carry the backend's own figures; the
    compiler sets ``stats.seconds``. Thread-safe as long as the caches are.
    For a backend that takes JSON schemas, ``__init__`` also builds the
    lowering's formats (``build_formats``: once per process, about 90 ms),
    which a schema's first compilation would otherwise pay.
    """

    def __init__(self, backend: BaseBackend, vocab: Vocabulary):
        self.backend = backend
        self.vocab = vocab
        self.name = backend.name
        self._caches: dict[str, ContentCache] = {}
        if backend.capabilities.supports("json_schema"):
            build_formats()

    # -- what a backend provides ---------------------------------------------------
    def compile_regular(self, language: Regular, spec: Constraint, options: Options):
        """Compile a regular language (a regex, a choice, a predicate, a
        regular JSON schema); ``spec`` is the constraint as given."""
        raise UnsupportedConstraint(self.name, "regular constraints", "it compiles grammars only")

    def compile_grammar(self, grammar: ContextFree, spec: Constraint, options: Options):
        """Compile a context-free grammar (a grammar, a recursive JSON schema)."""
        raise UnsupportedConstraint(self.name, "grammars", "it compiles regular constraints only")

    def compile_native(self, spec: Constraint, options: Options) -> BaseCompiled | None:
        """Compile ``spec`` without the core's lowering, or ``None`` to lower it
        (the default). For an engine's own front end or a plugin's own kind."""
        return None

    # -- the shared part -----------------------------------------------------------
    def compile(self, spec: Constraint, **options: Any) -> BaseCompiled:
        """Compile ``spec`` (see ``Backend.compile``); ``options`` override the
        backend's ``compile_options`` for this compilation."""
        backend = self.backend
        if not backend.capabilities.supports(spec.kind):
            raise UnsupportedConstraint(
                self.name,
                f"{spec.kind} constraints",
                f"it compiles {', '.join(sorted(backend.capabilities.kinds))}",
            )
        resolved = self.options(options)
        start = time.perf_counter()
        try:
            with compile_budget(resolved.max_seconds, resolved.max_memory_mb), gc_paused():
                compiled = self.compile_native(spec, resolved)
                if compiled is None:
                    language = lower(spec)
                    checkpoint()  # (the lowering may have spent the budget)
                    if isinstance(language, Regular):
                        compiled = self.compile_regular(language, spec, resolved)
                    else:
                        compiled = self.compile_grammar(language, spec, resolved)
        except UnsupportedConstraint as e:
            if e.backend == self.name:
                raise
            raise UnsupportedConstraint(self.name, e.construct, e.reason) from e
        compiled.stats = dataclasses.replace(compiled.stats, seconds=time.perf_counter() - start)
        return compiled

    def options(self, given: Mapping[str, Any]) -> Options:
        """The backend's ``compile_options`` and ``BUDGET_OPTIONS`` with
        ``given`` overriding them; ``TypeError`` for a name the backend does
        not take, ``TypeError``/``ValueError`` for a bad budget."""
        names = (*BUDGET_OPTIONS, *self.backend.compile_options)
        unknown = sorted(set(given) - set(names))
        if unknown:
            raise TypeError(f"unknown compile options for {self.name}: {unknown}")
        resolved = {name: given.get(name, getattr(self.backend, name)) for name in names}
        for name in BUDGET_OPTIONS:
            resolved[name] = check_bound(name, resolved[name])
        return Options(**resolved)

    # -- caches --------------------------------------------------------------------
    def cache(self, name: str, maxsize: int, sizeof: Callable[[Any], int] = default_size):
        """A new :class:`ContentCache` owned by this compiler, reported as ``name``."""
        cache: ContentCache = ContentCache(maxsize, sizeof)
        self._caches[name] = cache
        return cache

    def clear_cache(self, *names: str) -> None:
        """Empty the caches ``names`` (all when none is named); what the
        compiler derived from the vocabulary stays."""
        for name, cache in self._caches.items():
            if not names or name in names:
                cache.clear()

    def cache_info(self) -> dict[str, CacheInfo]:
        """Each cache's figures, by name."""
        return {name: cache.info() for name, cache in self._caches.items()}

    def memory_bytes(self) -> int:
        """Estimated bytes held by this compiler's caches."""
        return sum(info.nbytes for info in self.cache_info().values())


class BaseBackend:
    """A backend whose compilation goes through a per-vocabulary compiler.

    Set ``name``, ``capabilities``, ``compiler_class`` (a ``BaseCompiler``
    subclass implementing ``compile_regular`` and/or ``compile_grammar``) and
    ``compile_options`` (the attributes of the backend, set by its
    constructor, that ``compile(..., name=value)`` may override). Every such
    backend also takes ``max_seconds`` and ``max_memory_mb`` (defaults
    ``DEFAULT_MAX_SECONDS``, ``DEFAULT_MAX_MEMORY_MB``; ``None`` lifts a
    bound), from ``compile`` or, as its defaults, from
    ``ca.get(name, max_seconds=...)`` (through :meth:`set_budget`: a
    constructor need not know them).
    :meth:`compiler` keeps one compiler per vocabulary (the last
    ``max_vocabularies`` used); :meth:`compile` is the one-line convenience.
    """

    name: str
    capabilities: Capabilities
    compiler_class: type[BaseCompiler] = BaseCompiler
    compile_options: tuple[str, ...] = ()
    max_vocabularies: int = 8
    max_seconds: float | None = DEFAULT_MAX_SECONDS
    max_memory_mb: float | None = DEFAULT_MAX_MEMORY_MB

    def set_budget(self, **bounds: float | None) -> None:
        """Set this backend's default ``max_seconds`` and/or ``max_memory_mb``
        (``constrain_api.budget``; ``ca.get(name, max_seconds=...)`` calls
        this); ``TypeError``/``ValueError`` for another name, or for anything
        but ``None`` or a positive number."""
        unknown = sorted(set(bounds) - set(BUDGET_OPTIONS))
        if unknown:
            raise TypeError(f"unknown budget options for {self.name}: {unknown}")
        for name, value in bounds.items():
            setattr(self, name, check_bound(name, value))

    def compiler(self, vocab: Vocabulary) -> BaseCompiler:
        """The compiler for ``vocab`` (built on first use, then kept);
        ``TypeError`` for anything but a ``Vocabulary``."""
        if not isinstance(vocab, Vocabulary):
            raise TypeError(f"compile needs a Vocabulary, not {type(vocab).__name__}")
        # set lazily: subclasses' constructors need not call this class's
        compilers = self.__dict__.get("_compilers")
        if compilers is None:
            compilers = self.__dict__.setdefault("_compilers", ContentCache(self.max_vocabularies))
        lock = self.__dict__.setdefault("_compilers_lock", threading.Lock())
        with lock:  # one compiler per vocabulary, even when two threads ask at once
            return compilers.get_or_build(
                vocab.fingerprint, lambda: self.compiler_class(self, vocab)
            )

    def compile(self, spec: Constraint, vocab: Vocabulary, **options: Any) -> BaseCompiled:
        """Compile ``spec`` for ``vocab`` (see ``Backend.compile``)."""
        return self.compiler(vocab).compile(spec, **options)


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Python's cyclic garbage collector paused for the block (restored as
    it was). A compilation makes hundreds of thousands of small acyclic
    objects (AST nodes, NFA states, subsets); each collection they trigger
    traverses the whole heap, the vocabulary's objects included: 40-350 ms
    of a 0.5 s compile of a large MaskBench schema. The memory budget still
    bounds what the block allocates."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
