"""Backend ``domino``: subterminal trees pruned by the parser (Beurer-Kellner
et al., "Guiding LLMs The Right Way", 2024).

Compile: the constraint becomes a ``ScannerGrammar`` (a grammar through the
core's Lark loader, a regex/choice as a one-terminal grammar, a JSON schema
through the core's lowering), and lark builds its LALR(1) tables. Subterminal
trees are built per scanner position the first time a sequence reaches it
(``precompute()`` builds them all, as the paper does offline).

Decode: a checker's state is the set of *configurations* the text so far
allows, each ``(parser stack, scanner position)``: several when the text
splits into terminals in several ways (``if`` as a keyword or as the start
of a name). The mask is the union, over configurations, of the tokens of the
position's tree whose paths the parser accepts; it is cached per state, so a
state met again costs a copy. ``update`` and ``accepts`` run the scanner and
the parser over the token's bytes directly, never building a mask.

Options: ``k`` — lookahead, the number of completed terminals a token's path
may hold (``None``: unbounded, exact; a small ``k`` drops the tokens whose
paths are longer, so its masks are a subset of the oracle's).
"""

from __future__ import annotations

import operator
import os
import threading
import time
from collections import OrderedDict
from pathlib import Path

import numpy as np

from constrain_api import (
    FEATURE_PROPOSE,
    BaseBackend,
    BaseCompiled,
    BaseCompiler,
    Capabilities,
    CompileLimitExceeded,
    CompileStats,
    LazyDFA,
    LRTable,
    Stack,
    StateChecker,
    lalr_table,
)

from .kernels import set_bits
from .scanner import BOUNDARY, ScannerGrammar
from .treecache import TreeDiskCache, flush_tree_writes
from .trees import SubterminalTree, TreeBuilder, VocabTrie

KINDS = frozenset({"regex", "choice", "grammar", "json_schema"})
#: exact for every k: a regular constraint is one terminal, which no token can span
REGULAR = frozenset({"regex", "choice"})

_UNKNOWN = object()
_COUNT = operator.itemgetter(1)
#: Entries of each per-state memo (steps, counts, acceptance) before it is cleared.
_STATE_MEMO = 100_000


def _remember(memo: dict, key, value):
    """``memo[key] = value`` (the memo emptied first when full); returns ``value``."""
    if len(memo) > _STATE_MEMO:
        memo.clear()
    memo[key] = value
    return value


#: the default bound on the bytes of tree masks a compiled constraint keeps
TREE_BYTES = 256 * 2**20

#: The most configurations one state may hold where the grammar has
#: conflicts (its parses alive at once: an ambiguous grammar's grow with
#: the text, ``e: e "+" e`` by the Catalan numbers); past it the step raises
#: ``CompileLimitExceeded("parses")``. Grammars without conflicts are not bounded.
MAX_PARSES = 1024

Config = tuple[Stack, int, int]  # (parser stack, terminal or -1 at the boundary, dfa state)
State = frozenset  # of Config


class DominoCompiler(BaseCompiler):
    """The vocabulary's token trie for the compiled walk (``VocabTrie``),
    shared by every compilation; a constraint becomes a scanner grammar and
    the core's LALR(1) tables."""

    def __init__(self, backend, vocab):
        super().__init__(backend, vocab)
        self.trie = VocabTrie(vocab)

    def compile_regular(self, language, spec, options) -> DominoCompiled:
        """A regular language as a one-terminal grammar (its automaton built
        as decoding walks it, when it comes from a regex AST)."""
        if language.node is not None:
            scanner = ScannerGrammar.from_node(language.node, max_states=options.max_states)
        else:
            scanner = ScannerGrammar.from_dfa(language.dfa(max_states=options.max_states))
        return self._compiled(spec, scanner)

    def compile_grammar(self, grammar, spec, options) -> DominoCompiled:
        """The reduced grammar's terminals as the scanner's (lazy automata)."""
        reduced = grammar.reduce(max_states=options.max_states, lazy=True)
        return self._compiled(spec, ScannerGrammar.from_reduced(reduced))

    def _compiled(self, spec, grammar: ScannerGrammar) -> DominoCompiled:
        lr = lalr_table(
            grammar.rules, grammar.names, grammar.start, backend=self.name, general=True
        )
        stats = CompileStats(
            states=sum(d.num_states for d in grammar.dfas),
            extra={
                "terminals": len(grammar.names),
                "lr_states": lr.num_states,
                "lr_conflicts": lr.num_conflicts,
            },
        )
        backend = self.backend
        return DominoCompiled(
            spec,
            self.vocab,
            stats,
            grammar,
            lr,
            self.trie,
            backend.k,
            backend.mask_cache,
            backend.tree_bytes,
            backend.cache_dir,
        )


class DominoBackend(BaseBackend):
    """``domino``: exact with ``k=None`` (the default); ``k=0, 1, ...`` bound the lookahead.

    Options: ``max_states`` (also per ``compile``) bounds each terminal's
    automaton, whose states are found as decoding walks them
    (``CompileLimitExceeded`` from the step that finds one too many);
    ``mask_cache`` the masks kept per compiled constraint; ``tree_bytes``
    the bytes of the trees' groups (packed rows and token ids) kept per
    compiled constraint (the least recently used trees beyond it are
    dropped, and rebuilt if a state needs them); ``cache_dir`` a folder
    where trees are also stored, keyed by content (``treecache``), and
    found again by later compilations and processes (``None``: in memory
    only)."""

    name = "domino"
    compiler_class = DominoCompiler
    compile_options = ("max_states",)

    def __init__(
        self,
        k: int | None = None,
        max_states: int = 100_000,
        mask_cache: int = 4096,
        tree_bytes: int = TREE_BYTES,
        cache_dir: str | os.PathLike[str] | None = None,
    ):
        if k is not None and (not isinstance(k, int) or k < 0):
            raise ValueError(f"k must be None or an integer >= 0, not {k!r}")
        self.k = k
        self.max_states = max_states
        self.mask_cache = mask_cache
        if not isinstance(tree_bytes, int) or tree_bytes < 0:
            raise ValueError(f"tree_bytes must be an integer >= 0, not {tree_bytes!r}")
        self.tree_bytes = tree_bytes
        self.cache_dir = Path(cache_dir) if cache_dir is not None else None
        exact = KINDS if k is None else REGULAR
        self.capabilities = Capabilities(
            kinds=KINDS,
            exact=exact,
            features={FEATURE_PROPOSE},
            notes="exact (k=None)"
            if k is None
            else f"lookahead k={k}: tokens completing more than {k} terminals are dropped",
        )

    @staticmethod
    def flush_trees() -> None:
        """Wait until every tree handed to the disk cache's writer (by any
        compiled constraint with a ``cache_dir``) is written."""
        flush_tree_writes()


class DominoCompiled(BaseCompiled):
    """The scanner grammar, the LR tables, the trees (lazily, per position;
    an LRU holding at most ``tree_bytes`` of groups besides the newest tree,
    ``tree_bytes_held`` now; with ``cache_dir``, also on disk:
    ``tree_disk``) and the masks of the states met (an LRU of
    ``mask_cache`` entries). ``trees_built`` counts the trees built here
    (not found in memory or on disk)."""

    def __init__(
        self,
        spec,
        vocab,
        stats,
        grammar: ScannerGrammar,
        lr: LRTable,
        trie: VocabTrie,
        k,
        mask_cache: int,
        tree_bytes: int = TREE_BYTES,
        cache_dir: Path | None = None,
    ):
        super().__init__(spec, vocab, stats)
        self.grammar = grammar
        self.lr = lr
        self.k = k
        self._builder = TreeBuilder(grammar, trie)
        self.trees_built = 0
        self.tree_disk = (
            None
            if cache_dir is None
            else TreeDiskCache(
                cache_dir, grammar, vocab.fingerprint, vocab.size, trie.words, self._builder.slices
            )
        )
        self._trees: OrderedDict[tuple[int, int], SubterminalTree] = OrderedDict()
        self._tree_bytes, self.tree_bytes_held = tree_bytes, 0
        self._masks: OrderedDict[State, np.ndarray] = OrderedDict()
        self._mask_cache = mask_cache
        self._lock = threading.Lock()
        self.start_state: State = frozenset({(lr.start, *BOUNDARY)})
        # the speculative model: (scanner positions, parser sub-states) -> {token: count}
        self._counts: dict[frozenset, dict[int, int]] = {}
        self._steps: dict[tuple[State, int], State | None] = {}
        # per state, what decoding asks at every step: its context's counts
        # and whether it accepts (bounded like the steps' memo)
        self._counts_of: dict[State, dict[int, int]] = {}
        self._accepting: dict[State, bool] = {}

    def checker(self) -> DominoChecker:
        return DominoChecker(self)

    # -- trees --------------------------------------------------------------------
    def tree_position(self, position: tuple[int, int]) -> tuple[int, int]:
        """The position whose tree is ``position``'s: inside a lazily built
        terminal, its state with the counts no token can exhaust lifted
        (``LazyDFA.relaxed`` over the longest token's bytes: a tree reads
        each token's bytes only, so both give the same tree), so that the
        positions inside a long counted string share one tree, whose walk
        takes slices; else ``position`` (the automaton memoizes it)."""
        t, q = position
        dfa = self.grammar.dfas[t] if t >= 0 else None
        if isinstance(dfa, LazyDFA):
            return (t, dfa.relaxed(q, self._builder.trie.max_token_bytes))
        return position

    def tree(self, position: tuple[int, int]) -> SubterminalTree:
        """The subterminal tree of ``position`` (built on first use; shared
        with the positions that have the same :meth:`tree_position`)."""
        position = self.tree_position(position)
        tree = self._trees.get(position)
        if tree is not None:
            try:  # noqa: SIM105 (not contextlib.suppress: a context manager per call)
                self._trees.move_to_end(position)  # least recently used goes first
            except KeyError:  # another thread dropped it
                pass
            return tree
        with self._builder.lock:  # the builder's memo is shared by the positions
            tree = self._trees.get(position)
            if tree is None:
                disk = self.tree_disk
                start = time.perf_counter()
                tree = None if disk is None else disk.find(position)
                built = tree is None
                if built:
                    start = time.perf_counter()
                    tree = self._builder.build(position)
                    self.trees_built += 1
                tree.seconds = time.perf_counter() - start  # (its build, or its reading)
                if built and disk is not None:
                    disk.keep(position, tree)
                self._trees[position] = tree
                self.tree_bytes_held += tree.nbytes
                while self.tree_bytes_held > self._tree_bytes and len(self._trees) > 1:
                    _, dropped = self._trees.popitem(last=False)
                    self.tree_bytes_held -= dropped.nbytes
        return tree

    def precompute(self) -> dict[str, float]:
        """Build every position's tree now (the paper's offline step); returns
        ``{"positions", "seconds", "tree_nodes", "mask_bytes"}``."""
        start = time.perf_counter()
        positions = nodes = mask_bytes = 0
        for position in self.grammar.positions:  # not held here: the LRU may drop them
            tree = self.tree(position)
            positions += 1
            nodes += tree.num_nodes
            mask_bytes += tree.nbytes
        return {
            "positions": positions,
            "seconds": time.perf_counter() - start,
            "tree_nodes": nodes,
            "mask_bytes": mask_bytes,
        }

    # -- scanning with the parser ------------------------------------------------------
    def advance(self, state: State, data: bytes) -> State | None:
        """The configurations after ``data``, or ``None`` if there are none."""
        g, lr = self.grammar, self.lr
        rows, accept, first, ignore, names = g.rows, g.accept, g.first, g.ignore, g.names
        if len(state) == 1:
            # one configuration inside a terminal (most steps): its automaton
            # alone reads the bytes up to an accepting state, no sets built
            ((stack, t, q),) = state
            if t >= 0:
                row, accepts, i = rows[t], accept[t], 0
                while i < len(data) and not accepts[q]:
                    q = row[q][data[i]]
                    if q < 0:
                        return None
                    i += 1
                if i == len(data):
                    return frozenset(((stack, t, q),))
                state, data = frozenset(((stack, t, q),)), data[i:]
        for byte in data:
            out = set()
            for stack, t, q in state:
                stacks = (stack,)
                if t >= 0:
                    q2 = rows[t][q][byte]
                    if q2 >= 0:
                        out.add((stack, t, q2))
                    if not accept[t][q]:
                        continue
                    if t in g.shifted:  # (several stacks where the grammar has conflicts)
                        fed_t = lr.feed_all(stack, names[t])
                        stacks = (stack, *fed_t) if t in ignore else fed_t  # (or ignored)
                for fed in stacks:
                    for u, qu in first[byte]:
                        if u in ignore or lr.feed_all(fed, names[u]):
                            out.add((fed, u, qu))
            if not out:
                return None
            if len(out) > MAX_PARSES and not lr.deterministic:
                raise CompileLimitExceeded(
                    "parses",
                    MAX_PARSES,
                    len(out),
                    "configurations alive at once: the grammar is ambiguous past the bound",
                )
            state = frozenset(out)
        return state

    def step(self, state: State, token_id: int) -> State | None:
        """:meth:`advance` by a token's bytes, memoized (bounded)."""
        key = (state, token_id)
        steps = self._steps
        nxt = steps.get(key, _UNKNOWN)  # get, not `in` then []: another thread may clear it
        if nxt is not _UNKNOWN:
            return nxt
        return _remember(steps, key, self.advance(state, self.vocab.token_bytes(token_id)))

    def accepting(self, state: State) -> bool:
        """Whether the text of ``state`` is a sentence (memoized, bounded)."""
        known = self._accepting.get(state)
        if known is None:
            known = _remember(self._accepting, state, self._accepts(state))
        return known

    def _accepts(self, state: State) -> bool:
        g, lr = self.grammar, self.lr
        for stack, t, q in state:
            if t < 0:
                if lr.accepts_end(stack):
                    return True
                continue
            if not g.accept[t][q]:
                continue
            if t in g.ignore and lr.accepts_end(stack):  # (the ignored text ends it)
                return True
            if t in g.shifted and any(
                lr.accepts_end(done) for done in lr.feed_all(stack, g.names[t])
            ):
                return True
        return False

    # -- the speculative model (DOMINO §3.4) ---------------------------------------------
    @staticmethod
    def context(state: State) -> frozenset:
        """What the model conditions on: each configuration's scanner position
        and parser state (the top of its stack), not the whole stack."""
        return frozenset((stack[-1], t, q) for stack, t, q in state)

    def _counts_in(self, state: State) -> dict[int, int]:
        """The counts of ``state``'s context (made empty on first sight),
        memoized per state (bounded): one lookup per step."""
        counts = self._counts_of.get(state)
        if counts is None:
            with self._lock:  # (two states of one context share its dict)
                counts = self._counts.setdefault(self.context(state), {})
            _remember(self._counts_of, state, counts)
        return counts

    def learn(self, state: State, token_id: int) -> None:
        """Count ``token_id`` as accepted in ``state``. Without a lock: two
        threads counting at once may lose a count (a model of frequencies,
        not a mask), never corrupt one."""
        counts = self._counts_in(state)
        counts[token_id] = counts.get(token_id, 0) + 1

    def likeliest(self, state: State) -> int | None:
        """The token accepted most often in this context so far (``None``: never seen)."""
        counts = self._counts_of.get(state)
        if counts is None:  # (not made here: a context only proposed from stays unknown)
            counts = self._counts.get(self.context(state))
            if counts is None:
                return None
        seen = list(counts.items())  # (one C call: no thread's count lands midway)
        return max(seen, key=_COUNT)[0] if seen else None

    # -- masks ---------------------------------------------------------------------
    def state_mask(self, state: State) -> np.ndarray:
        """The tokens allowed in ``state``, packed and finished (special bits
        cleared, EOS set when ``state`` accepts): a ready ``fill_mask`` row (cached)."""
        words = self._masks.get(state)
        if words is not None:
            try:  # noqa: SIM105 (not contextlib.suppress: a context manager per step)
                self._masks.move_to_end(state)  # least recently used goes first
            except KeyError:  # another thread evicted it
                pass
            return words
        words = np.zeros((self.vocab.size + 31) // 32, dtype=np.int32)
        for stack, t, q in state:
            self._walk((t, q), stack, words)
        self.special_bits.finish_row(words, self.accepting(state))
        words.flags.writeable = False
        with self._lock:
            self._masks[state] = words
            if len(self._masks) > self._mask_cache:
                self._masks.popitem(last=False)
        return words

    def _walk(self, position: tuple[int, int], stack: Stack, words: np.ndarray) -> None:
        """OR into ``words`` the tokens of ``position``'s tree the parser accepts."""
        tree, lr, names, k = self.tree(position), self.lr, self.grammar.names, self.k
        width = words.size  # (a packed row's; a small group's ids are fewer)
        few: list[np.ndarray] = []  # the token ids of small groups, set at the end
        todo = [(0, stack, 0)]
        while todo:
            node, stack, depth = todo.pop()
            free = tree.free[node]
            if free is not None:
                if free.size == width:
                    words |= free
                else:
                    few.append(free)
            for t, tokens in tree.checked[node]:
                if lr.feed_all(stack, names[t]):
                    if tokens.size == width:
                        words |= tokens
                    else:
                        few.append(tokens)
            if k is not None and depth >= k:
                continue
            for t, child in tree.children[node]:
                for nxt in lr.feed_all(stack, names[t]):  # (one, where no conflicts)
                    todo.append((child, nxt, depth + 1))
        if few:
            set_bits(words.view(np.uint32), few[0] if len(few) == 1 else np.concatenate(few))


class DominoChecker(StateChecker[State]):
    """State: the frozenset of (parser stack, scanner position) configurations."""

    compiled: DominoCompiled

    def start_state(self) -> State:
        return self.compiled.start_state

    def advance(self, state: State, token_id: int) -> State | None:
        # a bounded lookahead bounds the masks, so it bounds what update accepts too
        if self.compiled.k is not None and not self.state_allows(state, token_id):
            return None
        return self.compiled.step(state, token_id)

    def state_allows(self, state: State, token_id: int) -> bool:
        words = self.compiled.state_mask(state) if self.compiled.k is not None else None
        if words is not None:
            return bool((int(words[token_id >> 5]) >> (token_id & 31)) & 1)
        return self.compiled.step(state, token_id) is not None

    def update(self, token_ids) -> None:
        """Accept ``token_ids`` (atomically) and count them for :meth:`propose`."""
        if type(token_ids) is list and len(token_ids) == 1:  # the decoding loop's call
            token_id, state = token_ids[0], self._stack[-1]
            compiled = self.compiled
            # a normal token (the special ids hold EOS) after a live state (a
            # terminated one is no frozenset); anything else takes the general path
            if (
                type(token_id) is int
                and isinstance(state, frozenset)
                and compiled.k is None
                and 0 <= token_id < self._size
                and token_id not in self._special_ids
            ):
                nxt = compiled.step(state, token_id)
                if nxt is not None:
                    compiled.learn(state, token_id)
                    self._stack.append(nxt)
                    return
        ids, states = self._states_after(token_ids)  # (raises, changing nothing)
        eos, learn = self._eos_ids, self.compiled.learn
        for token_id, before in zip(ids, [self.state, *states], strict=False):
            if token_id not in eos:
                learn(before, token_id)
        self._stack.extend(states)

    def propose(self, max_tokens: int) -> list[int]:
        """Up to ``max_tokens`` tokens the speculative model expects next, each
        allowed after the ones before it (the ``propose`` feature): the most
        frequent token seen in each context, learned from accepted tokens."""
        state, draft = self.state, []
        if not isinstance(state, frozenset):  # terminated
            return draft
        while len(draft) < max_tokens:
            token = self.compiled.likeliest(state)
            if token is None:
                break
            state = self.advance(state, token)
            if state is None:
                break
            draft.append(token)
        return draft

    def fill_state(self, state: State, row: np.ndarray) -> None:
        row[:] = self.compiled.state_mask(state)

    def state_row(self, state: State) -> np.ndarray:
        """The state's cached row, already finished (``fill_mask`` copies it)."""
        return self.compiled.state_mask(state)

    def state_accepting(self, state: State) -> bool:
        return self.compiled.accepting(state)
