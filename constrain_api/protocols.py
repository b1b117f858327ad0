"""The three protocols every backend implements: ``Backend``, ``Compiled``, ``Checker``.

Compile once, check per sequence: a ``Backend`` compiles a constraint for a
vocabulary into an immutable ``Compiled`` artifact, which hands out one
``Checker`` per sequence. The checker is the per-step hot path.

Semantics every implementation keeps (the conformance suite checks them):

* **Allowed tokens.** After the bytes ``s`` generated so far, a normal token
  ``t`` is allowed iff ``s + bytes(t)`` is a prefix of some string of the
  constraint's language. Exact backends allow exactly these; a backend whose
  ``Capabilities`` declare a kind inexact must still never allow more
  (precision 1), and may allow fewer.
* **EOS** is allowed iff ``s`` itself is in the language. Once an EOS token
  is accepted by ``update`` the checker is *terminated*: nothing is allowed,
  ``is_finished()`` is true and ``is_accepting()`` false until ``rollback``
  or ``init``.
* **Special tokens** other than EOS are never allowed.
* **Rejection.** ``update`` applies a sequence of tokens atomically: if any
  token is not allowed it raises ``TokenRejected`` (with the token and its
  index) and the state is exactly what it was before the call.
* **Rollback** undoes the last ``n`` accepted tokens (EOS included), for any
  ``n`` up to the number accepted since ``init`` (or up to
  ``Capabilities.max_rollback`` when the backend bounds its history);
  ``rollback(0)`` does nothing; a larger ``n`` raises ``ValueError`` and
  changes nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:  # pragma: no cover
    from .masks import TokenMask
    from .specs import Constraint
    from .vocabulary import Vocabulary

#: Optional protocol extensions a backend may declare in ``Capabilities.features``.
FEATURE_PROPOSE = "propose"  # Checker.propose(max_tokens) -> list[int], speculative drafts


@dataclass(frozen=True)
class Capabilities:
    """What a backend (with its options) can compile, and how faithfully.

    ``kinds``: constraint kinds it compiles (``"regex"``, ``"grammar"``,
    ``"json_schema"``, ``"choice"``, ``"where"`` or plugin kinds).
    ``exact``: the subset of ``kinds`` whose masks equal the oracle's; for the
    others the backend only promises never to allow a forbidden token.
    ``features``: optional protocol extensions (``FEATURE_PROPOSE``, …).
    ``max_rollback``: how many tokens ``rollback`` can undo (``None``: all).
    ``notes``: one line for humans on what is inexact or limited.
    """

    kinds: frozenset[str]
    exact: frozenset[str] = frozenset()
    features: frozenset[str] = frozenset()
    max_rollback: int | None = None
    notes: str = ""

    def __post_init__(self) -> None:
        for name in ("kinds", "exact", "features"):
            object.__setattr__(self, name, frozenset(getattr(self, name)))
        if not self.exact <= self.kinds:
            raise ValueError(f"exact kinds {sorted(self.exact - self.kinds)} are not in kinds")
        if self.max_rollback is not None and self.max_rollback < 0:
            raise ValueError("max_rollback must be >= 0 or None")

    def supports(self, kind: str) -> bool:
        """Whether constraints of ``kind`` compile."""
        return kind in self.kinds

    def is_exact(self, kind: str) -> bool:
        """Whether masks for ``kind`` are exactly the oracle's."""
        return kind in self.exact

    def describe(self) -> str:
        """One line: kinds, each marked ``~`` when inexact, then features."""
        kinds = ", ".join(k if k in self.exact else f"{k}~" for k in sorted(self.kinds))
        extra = f"; features: {', '.join(sorted(self.features))}" if self.features else ""
        rb = f"; rollback <= {self.max_rollback}" if self.max_rollback is not None else ""
        return f"{kinds}{extra}{rb}"


@dataclass(frozen=True)
class CompileStats:
    """Cost of one compilation: wall ``seconds`` (set by the compiler),
    automaton ``states`` and artifact ``bytes`` when the backend knows them,
    plus backend-specific figures in ``extra`` (e.g. precomputation time)."""

    seconds: float = 0.0
    states: int | None = None
    bytes: int | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)


@runtime_checkable
class Checker(Protocol):
    """Per-sequence state of a compiled constraint. Not thread-safe; one per sequence.

    Token ids are Python or numpy integers: a float, a string or anything
    else without ``__index__`` raises ``TypeError`` (never coerced)."""

    def init(self) -> None:
        """Return to the start state (empty text), forgetting all history."""

    def update(self, token_ids: Sequence[int]) -> None:
        """Accept tokens in order. Atomic: if one is not allowed, raise
        ``TokenRejected`` and leave the state unchanged."""

    def mask(self) -> TokenMask:
        """The allowed next tokens, as a fresh ``TokenMask``."""

    def fill_mask(self, bitmask: Any, row: int = 0) -> None:
        """Write the allowed next tokens into row ``row`` of a preallocated
        packed int32 bitmask (numpy or CPU tensor), overwriting the whole
        row, without allocating vocabulary-sized objects. ``TypeError`` for
        anything else, or a bitmask that is not int32 or not on the CPU;
        ``IndexError`` for a row the bitmask does not have; ``ValueError``
        for a row narrower than the vocabulary. A wider row gets 0 in its
        words past the vocabulary's. Any strides work."""

    def accepts(self, token_id: int) -> bool:
        """Whether ``token_id`` is allowed next; no state change, no full mask."""

    def validate(self, token_ids: Sequence[int]) -> int:
        """How many leading tokens of ``token_ids`` would be accepted in a row
        (EOS counts, and ends the run); no state change."""

    def is_accepting(self) -> bool:
        """Whether EOS is allowed now (the text so far is in the language)."""

    def is_finished(self) -> bool:
        """Whether nothing but EOS can follow (or EOS was already accepted)."""

    def rollback(self, n: int) -> None:
        """Undo the last ``n`` accepted tokens; ``ValueError`` if there are
        fewer, ``TypeError`` if ``n`` is not an integer."""

    def fork(self) -> Checker:
        """An independent copy of this checker in the same state (beam search)."""


@runtime_checkable
class Compiled(Protocol):
    """A constraint compiled for one vocabulary: immutable, shareable across
    sequences and threads."""

    spec: Constraint
    vocab: Vocabulary
    stats: CompileStats

    def checker(self) -> Checker:
        """A new checker in the start state."""

    def fill_masks(self, checkers: Sequence[Checker], bitmask: Any) -> None:
        """Fill row ``i`` of ``bitmask`` from ``checkers[i]`` (a backend may do it in parallel).
        Optional attribute ``fills_outside_gil`` (default false): the fill
        runs outside Python's GIL, so the decoding loop fills on a worker
        thread beside a GPU's forward pass."""


@runtime_checkable
class Backend(Protocol):
    """One constrained-decoding method. Found by ``name`` through the registry;
    options given to ``constrain_api.get(name, **options)`` go to its constructor."""

    name: str
    capabilities: Capabilities

    def compile(self, spec: Constraint, vocab: Vocabulary, **options: Any) -> Compiled:
        """Compile ``spec`` for ``vocab``. Raises ``UnsupportedConstraint``
        for what it cannot express exactly as declared, ``ConstraintError``
        for malformed input, ``CompileLimitExceeded`` past its bounds."""
