"""One scan of the vocabulary per step: walk the byte trie with the recognizer.

Shared prefixes are tested once (a dead node skips its whole subtree), so a
step costs O(trie nodes reached), never O(V × text length). The walk is a
plain Python loop on purpose: full-vocabulary scanning *is* the method.
"""

from __future__ import annotations

import numpy as np

from constrain_api import TokenTrie, Vocabulary, bitmask_words, pack_row


class TrieScan:
    """The vocabulary trie as flat Python lists (fast scalar access in the walk)
    plus the arrays that turn reached nodes into a packed bitmask row."""

    def __init__(self, vocab: Vocabulary):
        trie: TokenTrie = vocab.trie()
        self.vocab_size = vocab.size
        self.num_nodes = trie.num_nodes
        self.max_depth = trie.max_depth
        self.depth = trie.depth.tolist()
        self.byte = trie.edge_byte.tolist()
        self.end = trie.subtree_end.tolist()
        offsets = trie.token_offsets
        self.has_tokens = (offsets[1:] > offsets[:-1]).tolist()
        # token_ids[k] sits at node token_node[k]
        self.token_ids = np.asarray(trie.token_ids, dtype=np.int64)
        self.token_node = np.repeat(np.arange(trie.num_nodes), np.diff(offsets))
        self._padded_bits = bitmask_words(vocab.size) * 32

    def nodes_dfa(self, rows: list[list[int]], state: int) -> list[int]:
        """Token-carrying trie nodes whose bytes keep the DFA alive from ``state``."""
        depth, byte, end, has_tokens = self.depth, self.byte, self.end, self.has_tokens
        states = [state] * (self.max_depth + 1)
        out = []
        i, n = 1, self.num_nodes
        while i < n:
            d = depth[i]
            s = rows[states[d - 1]][byte[i]]
            if s < 0:
                i = end[i]
                continue
            states[d] = s
            if has_tokens[i]:
                out.append(i)
            i += 1
        return out

    def nodes_stepper(self, step, state) -> list[int]:
        """Same walk for any recognizer: ``step(state, byte)`` returns the next
        state or ``None``."""
        depth, byte, end, has_tokens = self.depth, self.byte, self.end, self.has_tokens
        states = [state] * (self.max_depth + 1)
        out = []
        i, n = 1, self.num_nodes
        while i < n:
            d = depth[i]
            s = step(states[d - 1], byte[i])
            if s is None:
                i = end[i]
                continue
            states[d] = s
            if has_tokens[i]:
                out.append(i)
            i += 1
        return out

    def write_row(self, nodes: list[int], row: np.ndarray) -> None:
        """Overwrite ``row`` with the tokens that sit at ``nodes``."""
        reached = np.zeros(self.num_nodes, dtype=bool)
        reached[nodes] = True
        allowed = np.zeros(self._padded_bits, dtype=bool)
        allowed[self.token_ids[reached[self.token_node]]] = True
        pack_row(allowed, row)
