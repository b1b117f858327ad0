"""A test-only backend for ``Choice`` constraints, found through a real entry point.

It scans the whole vocabulary per mask (fine for the tiny vocabularies of the
core's tests) and uses only ``constrain_api``'s public names.
"""

from __future__ import annotations

import numpy as np

import constrain_api as ca


class ChoiceCompiled(ca.BaseCompiled):
    """The options as bytes; the state is the text generated so far."""

    def __init__(self, spec: ca.Choice, vocab: ca.Vocabulary, stats: ca.CompileStats):
        super().__init__(spec, vocab, stats)
        self.options = tuple(o.encode("utf-8") for o in spec.options)

    def checker(self) -> ChoiceChecker:
        return ChoiceChecker(self)


class ChoiceChecker(ca.StateChecker[bytes]):
    """State: the bytes generated so far."""

    compiled: ChoiceCompiled

    def start_state(self) -> bytes:
        return b""

    def advance(self, state: bytes, token_id: int) -> bytes | None:
        text = state + self.vocab.token_bytes(token_id)
        return text if any(o.startswith(text) for o in self.compiled.options) else None

    def fill_state(self, state: bytes, row: np.ndarray) -> None:
        allowed = np.zeros(row.shape[0] * 32, dtype=bool)
        for token_id in self.vocab.normal_ids().tolist():
            allowed[token_id] = self.advance(state, token_id) is not None
        row[:] = ca.TokenMask.from_bool(allowed).words

    def state_accepting(self, state: bytes) -> bool:
        return state in self.compiled.options


class ChoiceCompiler(ca.BaseCompiler):
    """Choices for one vocabulary (``capabilities`` admit nothing else)."""

    def compile_regular(self, language, spec, options):
        return ChoiceCompiled(spec, self.vocab, ca.CompileStats(states=len(spec.options)))


class TestChoiceBackend(ca.BaseBackend):
    """Backend ``test-choice``: exact masks for ``Choice``."""

    name = "test-choice"
    capabilities = ca.Capabilities(kinds={"choice"}, exact={"choice"}, notes="test fixture")
    compiler_class = ChoiceCompiler


@ca.hookimpl
def constrain_backends():
    return [TestChoiceBackend]
