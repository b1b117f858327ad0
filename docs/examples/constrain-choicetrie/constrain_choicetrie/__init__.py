"""Backend ``choicetrie``: ``Choice`` constraints, exact, on the vocabulary trie.

Compilation builds a byte trie of the options. A checker's state is one node
of it (the text so far is a prefix of some option, so it names exactly one
node). The allowed tokens at a node are found by walking the option trie and
the vocabulary's token trie together from that node: every token trie node
the walk reaches is a token whose bytes continue the text inside some option.
That walk costs the size of the option subtree, never the vocabulary, and
its packed mask is cached per node, so a step in steady state is a copy.

Only ``constrain_api``'s public names are used; the entry point in
``pyproject.toml`` registers the module, whose ``constrain_backends`` hook
returns the backend class and ``constrain_workloads`` a benchmark workload.
"""

from __future__ import annotations

import threading

import numpy as np

import constrain_api as ca

__all__ = ["ChoiceTrieBackend"]


class OptionTrie:
    """The options' UTF-8 bytes as a trie: node 0 is the empty text."""

    def __init__(self, options: tuple[str, ...], max_states: int | None):
        self.children: list[dict[int, int]] = [{}]
        self.accepting: list[bool] = [False]
        for option in options:
            node = 0
            for byte in option.encode("utf-8"):
                nxt = self.children[node].get(byte)
                if nxt is None:
                    nxt = len(self.children)
                    if max_states is not None and nxt >= max_states:
                        raise ca.CompileLimitExceeded(
                            "max_states", max_states, detail="the options' trie is larger"
                        )
                    self.children.append({})
                    self.accepting.append(False)
                    self.children[node][byte] = nxt
                node = nxt
            self.accepting[node] = True

    def walk(self, node: int, data: bytes) -> int | None:
        """The node after ``data`` from ``node``, or ``None`` if no option continues so."""
        for byte in data:
            node = self.children[node].get(byte)
            if node is None:
                return None
        return node


class ChoiceTrieCompiled(ca.BaseCompiled):
    """The option trie and, filled lazily, one packed mask per option node."""

    def __init__(self, spec, vocab, stats, options: OptionTrie):
        super().__init__(spec, vocab, stats)
        self.options = options
        self._masks: dict[int, np.ndarray] = {}
        self._lock = threading.Lock()  # one Compiled serves many threads

    def checker(self) -> ChoiceTrieChecker:
        return ChoiceTrieChecker(self)

    def node_mask(self, node: int) -> np.ndarray:
        """The normal tokens allowed at option node ``node``, as packed words."""
        words = self._masks.get(node)
        if words is None:
            words = self._walk_both(node)
            with self._lock:
                words = self._masks.setdefault(node, words)
        return words

    def _walk_both(self, start: int) -> np.ndarray:
        tokens, children = self.vocab.trie(), self.options.children
        allowed: list[np.ndarray] = []
        stack = [(0, start)]  # (token trie node, option trie node), both for the same bytes
        while stack:
            token_node, option_node = stack.pop()
            for byte, option_child in children[option_node].items():
                token_child = tokens.child(token_node, byte)
                if token_child is not None:
                    allowed.append(tokens.tokens_at(token_child))
                    stack.append((token_child, option_child))
        ids = np.concatenate(allowed) if allowed else np.zeros(0, dtype=np.int64)
        return ca.TokenMask.from_ids(ids, self.vocab.size).words


class ChoiceTrieChecker(ca.StateChecker[int]):
    """State: the option trie node of the text so far."""

    compiled: ChoiceTrieCompiled

    def start_state(self) -> int:
        return 0

    def advance(self, state: int, token_id: int) -> int | None:
        return self.compiled.options.walk(state, self.vocab.token_bytes(token_id))

    def fill_state(self, state: int, row: np.ndarray) -> None:
        row[:] = self.compiled.node_mask(state)

    def state_accepting(self, state: int) -> bool:
        return self.compiled.options.accepting[state]

    def state_finished(self, state: int) -> bool:
        return not self.compiled.options.children[state]


class ChoiceTrieCompiler(ca.BaseCompiler):
    """Compiles choices for one vocabulary; the core has already checked the
    kind and the options, and times the compilation."""

    def compile_regular(self, language, spec, options) -> ChoiceTrieCompiled:
        # capabilities list only "choice": spec is a Choice (language is its
        # alternation of literals, which this backend reads as a trie instead)
        trie = OptionTrie(spec.options, options.max_states)
        return ChoiceTrieCompiled(
            spec, self.vocab, ca.CompileStats(states=len(trie.children)), trie
        )


class ChoiceTrieBackend(ca.BaseBackend):
    """``choicetrie``: exact masks for ``Choice``; compile option ``max_states``
    bounds the option trie (``CompileLimitExceeded`` past it)."""

    name = "choicetrie"
    capabilities = ca.Capabilities(
        kinds={"choice"}, exact={"choice"}, notes="example third-party backend (docs/plugins.md)"
    )
    compiler_class = ChoiceTrieCompiler
    compile_options = ("max_states",)
    max_states: int | None = None


@ca.hookimpl
def constrain_backends():
    """The backends this plugin provides."""
    return [ChoiceTrieBackend]


@ca.hookimpl
def constrain_workloads():
    """A workload for ``nox -s bench``: every backend that compiles choices runs it."""
    return [
        ca.Workload(
            "choicetrie-weekdays",
            ca.Choice(["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"]),
            documents=("Wednesday",),
            description="a five-way choice (from the example plugin constrain-choicetrie)",
        )
    ]
