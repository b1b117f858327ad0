"""Backend ``fst``: the method of Koo et al. (*Automata-based constraints for
language model decoding*) on pynini/OpenFst.

Constrained decoding as standard automata operations: the constraint is a
byte acceptor built from the core's regex AST with pynini's union,
concatenation and closure; the vocabulary is a detokenizing transducer T_V
(token → bytes, trie-compacted, built once per vocabulary); their
composition, projected on tokens and epsilon-free (already deterministic),
is a token-level DFA whose arcs out of a state are exactly the allowed tokens.
Masks are packed rows per state, built on first use and cached.

Wide character classes use the paper's wildcard terminals (``wildcards.py``):
tokens made only of a class's characters are read as group labels at the
states where the class acts uniformly, so such states get a few group arcs
instead of one arc per token.

Grammars (and JSON schemas lowering to one) are pushdown automata
(``pushdown.py``): a recursive transition network with a parenthesis pair
per call site, composed with T_V by ``pynini.pdt_compose``; the decoder
keeps a set of (state, stack) configurations.
"""

from __future__ import annotations

import os
import time
from collections import OrderedDict
from pathlib import Path
from typing import Any

import numpy as np

from constrain_api import (
    BaseBackend,
    BaseCompiled,
    BaseCompiler,
    Capabilities,
    CompileLimitExceeded,
    CompileStats,
    StateChecker,
    Vocabulary,
    bitmask_words,
    checkpoint,
    pack_row,
)
from constrain_api.automata import CharSet

from . import diskcache, utf8classes
from .arcs import fst_arcs
from .automata import prefix_acceptor, token_automaton
from .pushdown import PAREN, Network, pushdown_automaton
from .wildcards import (
    MAX_CLASSES,
    TokenText,
    Wildcards,
    add_wildcard_arcs,
    byte_table,
    candidate_classes,
    class_exclusions,
    closed_chains,
    first_chars,
    lead_chars,
    moves,
    token_text,
    wild_chars,
    wildcard_detokenizer,
)

KINDS = frozenset({"regex", "choice", "json_schema", "grammar"})
#: A byte state with at least this many outgoing byte values counts as "wide".
WIDE = 128
#: A class becomes a wildcard when at least 1/WILD_SHARE of the vocabulary is wild for it.
WILD_SHARE = 16
#: Detokenizers kept per compiler (each one per set of wildcard classes).
KEEP_DETOKENIZERS = 8
#: Per-class token tables kept per compiler.
KEEP_TABLES = 256


class FSTCompiler(BaseCompiler):
    """T_V per set of wildcard classes (``detokenizers``, the last
    ``KEEP_DETOKENIZERS``), and the per-class token tables they are built from."""

    def __init__(self, backend: FSTBackend, vocab: Vocabulary):
        super().__init__(backend, vocab)
        self.cache_dir = backend.cache_dir
        self._text: TokenText | None = None
        self._detokenizers = self.cache("detokenizers", KEEP_DETOKENIZERS, sizeof=_fst_size)
        self._chars = self.cache("wild_chars", KEEP_TABLES)
        self._leads = self.cache("lead_chars", KEEP_TABLES)
        self._kinds = self.cache("token_kinds", KEEP_DETOKENIZERS * 8)

    def compile_regular(self, language, spec, options) -> FSTCompiled:
        """The byte acceptor of the regex AST, composed with T_V."""
        clock = _Clock()
        node = language.regex_node(max_states=options.max_states)
        acceptor = prefix_acceptor(node, options.max_states)
        return self._compose(spec, options, clock, acceptor)

    def compile_grammar(self, grammar, spec, options) -> PushdownCompiled:
        """The reduced grammar's pushdown automaton, composed with T_V."""
        clock = _Clock()
        network = Network(grammar.reduce(max_states=options.max_states), options.max_states)
        return self._compose(spec, options, clock, *network.pdt())

    def _compose(self, spec, options, clock, acceptor, parens=None, closes=None):
        vocab, max_states = self.vocab, options.max_states
        if acceptor.num_states() > max_states:
            raise CompileLimitExceeded(
                "max_states", max_states, acceptor.num_states(), "the byte automaton"
            )
        clock.lap("acceptor")
        read = fst_arcs(acceptor)
        table, calls = byte_table(read)
        moved = moves(read) if calls.any() else None
        chains: dict[CharSet, tuple] = {}  # closed_chains per class, for both steps
        classes = self._wildcard_classes(table, calls, chains, moved) if options.wildcards else []
        utf8 = bool(options.utf8_classes) and utf8classes.uniform(table)
        clock.lap("analysis")
        detok, wild = self.detokenizer(classes, utf8)
        clock.lap("detokenizer")
        intervals = utf8classes.class_arcs(table) if utf8 else None
        acceptor, closed_for, strict_for, funnel_for = add_wildcard_arcs(
            acceptor, table, wild, calls, intervals, chains
        )
        wide = self._check_composition(
            table, closed_for, strict_for, funnel_for, wild, options.max_composed_arcs
        )
        clock.lap("analysis")
        if parens is None:
            automaton = token_automaton(detok, acceptor)
        else:
            automaton = pushdown_automaton(detok, acceptor, parens)
        if automaton.num_states() > max_states:
            raise CompileLimitExceeded(
                "max_states", max_states, automaton.num_states(), "the token automaton"
            )
        clock.lap("composition")
        stats = CompileStats(
            states=automaton.num_states(),
            extra={
                **clock.laps,
                "byte_states": int(table.shape[0]),
                "wide_states": wide,
                "funnel_states": int(np.count_nonzero(funnel_for)),
                "wildcard_classes": len(classes),
                "utf8_classes": utf8,
            },
        )
        if parens is None:
            return FSTCompiled(spec, vocab, stats, automaton, wild)
        return PushdownCompiled(spec, vocab, stats, automaton, wild, closes)

    def _wildcard_classes(
        self,
        table: np.ndarray,
        calls: np.ndarray | None = None,
        chains: dict[CharSet, tuple] | None = None,
        moved: tuple[np.ndarray, np.ndarray] | None = None,
    ) -> list[CharSet]:
        """The classes worth a wildcard, chosen greedily: each removes, summed
        over the states where it acts uniformly, at least 1/``WILD_SHARE`` of
        the vocabulary in token arcs beyond what the classes before it remove
        (at most ``MAX_CLASSES``). ``chains`` receives each candidate's
        ``closed_chains``, continued through the states with ``calls``
        (a pushdown automaton's; ``moved``: their arcs) only where those
        cannot be followed by the class (``class_exclusions``)."""
        options = []
        for charset in candidate_classes(table):
            count = int(np.count_nonzero(self._wild_chars(charset)[0]))
            if count * WILD_SHARE < self.vocab.size:
                continue
            exclude = class_exclusions(table, charset, calls, moved) if moved else calls
            found = closed_chains(table, charset, exclude)
            if chains is not None:
                chains[charset] = found
            closed, _, nxt = found
            saved = np.where(closed & (nxt >= 0), count, 0)
            if saved.any():
                options.append((charset, saved))
        chosen: list[CharSet] = []
        covered = np.zeros(table.shape[0], dtype=np.int64)
        while options and len(chosen) < MAX_CLASSES:
            gains = [int(np.maximum(saved - covered, 0).sum()) for _, saved in options]
            best = int(np.argmax(gains))
            if gains[best] * WILD_SHARE < self.vocab.size:
                break
            charset, saved = options.pop(best)
            chosen.append(charset)
            covered = np.maximum(covered, saved)
        return chosen

    def _check_composition(
        self, table, closed_for, strict_for, funnel_for, wild: Wildcards, max_arcs
    ) -> int:
        """Raise before OpenFst starts if wide states would spell too many
        tokens in bytes; returns the number of wide states. A token counts as
        covered at a state closed for one of the classes it is wild for or
        starts in (spelled by wildcards, then a short rest in bytes), at a
        funnel state for a class it is wild for (spelled in bytes only along
        the state's exceptions, a few tokens), or, spelled by head, where its
        (ASCII) first character leads to a state closed for a class its rest
        is wild for.

        The tokens of one kind spelled in bytes from several states whose
        (ASCII) first byte leads to one same state are counted once: past
        that byte the composition's pairs (trie node, byte state) are the
        same, and OpenFst builds them once (a JSON string of at most 400
        characters: 400 wide states whose quote, backslash and control
        characters lead to a handful of states)."""
        wide_states = np.flatnonzero((table >= 0).sum(axis=1) >= WIDE)
        estimate = 0
        if len(wide_states):
            kinds, counts = self._token_kinds(wild)
            wild_sets, head_sets, lead_sets, first = kinds.T
            walks = []  # (kind, state after the first byte) pairs
            for q in wide_states.tolist():
                after = table[q, first]  # the state after the first byte
                strict = np.where((first < 128) & (after >= 0), strict_for[after], 0)
                covered = ((wild_sets | lead_sets) & closed_for[q]) | (head_sets & strict)
                covered |= wild_sets & funnel_for[q]
                rows = np.flatnonzero((covered == 0) & (after >= 0))  # a dead byte: no walk
                walks.append(rows * len(table) + after[rows])
            found = np.unique(np.concatenate(walks))
            estimate = int(counts[found // len(table)].sum())
        if estimate > max_arcs:
            raise CompileLimitExceeded(
                "max_composed_arcs",
                max_arcs,
                estimate,
                f"{len(wide_states)} byte states accept almost any byte and no wildcard "
                "class covers them; the composition would hold about that many arcs",
            )
        return len(wide_states)

    def _token_kinds(self, wild: Wildcards) -> tuple[np.ndarray, np.ndarray]:
        """The normal tokens counted by (classes wild for, classes the rest is
        wild for, classes spelled by lead, first byte): the rows and their
        counts (kept per vocabulary and class set)."""
        key = (wild.classes, wild.utf8_classes)
        found = self._kinds.get(key)
        if found is not None:
            return found
        vocab = self.vocab
        normal = vocab.normal_ids()
        wild_sets = np.zeros(vocab.size, dtype=np.int64)
        lead_sets = np.zeros(vocab.size, dtype=np.int64)
        head_sets = np.zeros(vocab.size, dtype=np.int64)
        for k, chars in enumerate(wild.chars):
            wild_sets |= (chars > 0).astype(np.int64) << k
            head_sets |= (wild.tails[k] > 0).astype(np.int64) << k
            if wild.lead_group_of is not None:
                lead_sets |= (wild.lead_group_of[k] > 0).astype(np.int64) << k
        tokens = vocab.tokens
        first = np.zeros(vocab.size, dtype=np.int64)
        first[normal] = np.frombuffer(b"".join(tokens[t][:1] for t in normal.tolist()), np.uint8)
        # one integer per token (np.unique over rows sorts far slower): the
        # three class sets, MAX_CLASSES bits each, then the first byte
        bits = MAX_CLASSES
        keys = (((wild_sets << bits | head_sets) << bits | lead_sets) << 8 | first)[normal]
        values, counts = np.unique(keys, return_counts=True)
        mask = (1 << bits) - 1
        rows = np.stack(
            [
                values >> (8 + 2 * bits),
                values >> (8 + bits) & mask,
                values >> 8 & mask,
                values & 255,
            ],
            axis=1,
        )
        return self._kinds.put(key, (rows, counts))

    def token_text(self) -> TokenText:
        """The vocabulary's tokens as text (decoded once)."""
        if self._text is None:
            self._text = token_text(self.vocab)
        return self._text

    def _wild_chars(self, charset: CharSet) -> tuple[np.ndarray, np.ndarray]:
        return self._chars.get_or_build(charset, lambda: wild_chars(self.token_text(), charset))

    def _lead_chars(self, charset: CharSet) -> np.ndarray:
        return self._leads.get_or_build(charset, lambda: lead_chars(self.token_text(), charset))

    def wildcard_tables(self, classes) -> dict[str, Any]:
        """``wildcard_detokenizer``'s per-class counts and first characters."""
        found = [self._wild_chars(c) for c in classes]
        return {
            "chars": [f[0] for f in found],
            "tails": [f[1] for f in found],
            "leads": [self._lead_chars(c) for c in classes],
            "first": first_chars(self.token_text()),
        }

    def detokenizer(self, classes=(), utf8: bool = False) -> tuple[Any, Wildcards]:
        """T_V (with wildcard spellings for ``classes``, UTF-8 class groups if
        ``utf8``), built once and kept in memory, and on disk under
        ``cache_dir`` when one is given."""
        key = (tuple(classes), utf8)
        found = self._detokenizers.get(key)
        if found is not None:
            return found
        vocab = self.vocab
        if self.cache_dir is not None:
            found = diskcache.load(
                self.cache_dir, vocab.fingerprint, tuple(classes), utf8, vocab.size
            )
        if found is None:
            found = wildcard_detokenizer(
                vocab, classes, **self.wildcard_tables(classes), utf8_classes=utf8
            )
            if self.cache_dir is not None:
                diskcache.store(self.cache_dir, vocab.fingerprint, *found, vocab.size)
        return self._detokenizers.put(key, found)


def _fst_size(found: tuple[Any, Wildcards]) -> int:
    """T_V's bytes, estimated from its arcs (16 bytes each in OpenFst's const format)."""
    detok = found[0]
    return 16 * sum(detok.num_arcs(s) for s in detok.states())


class FSTBackend(BaseBackend):
    """Koo et al.'s composition with a detokenizing transducer (regular constraints).

    Options: ``wildcards`` (default True) turns on the wildcard terminals,
    ``utf8_classes`` (default True) the UTF-8 class groups (``utf8classes``);
    ``max_states`` bounds the constraint's byte automaton and the token
    automaton (``CompileLimitExceeded``); ``max_composed_arcs`` (default
    600,000) bounds the estimated size of the composition — tokens spelled
    byte by byte from wide states — which OpenFst cannot interrupt;
    ``cache_dir`` (constructor only) keeps T_V on disk in OpenFst's format.
    """

    name = "fst"
    capabilities = Capabilities(
        kinds=KINDS,
        exact=KINDS,
        notes=(
            "regular constraints (wildcard terminals for wide classes) and grammars "
            "without indirect left recursion (pushdown automata)"
        ),
    )
    compiler_class = FSTCompiler
    compile_options = ("max_states", "max_composed_arcs", "wildcards", "utf8_classes")

    def __init__(
        self,
        max_states: int = 100_000,
        max_composed_arcs: int = 600_000,
        wildcards: bool = True,
        utf8_classes: bool = True,
        cache_dir: str | os.PathLike[str] | None = None,
    ):
        self.max_states = max_states
        self.max_composed_arcs = max_composed_arcs
        self.wildcards = wildcards
        self.utf8_classes = utf8_classes
        self.cache_dir = Path(cache_dir) if cache_dir is not None else None


class _Clock:
    """Seconds spent per phase of a compilation (``<phase>_seconds`` in its stats)."""

    def __init__(self):
        self.start = self.last = time.perf_counter()
        self.laps: dict[str, float] = {}

    def lap(self, phase: str) -> None:
        """End ``phase``; ``CompileLimitExceeded`` past the compile's budget."""
        checkpoint()
        now = time.perf_counter()
        key = f"{phase}_seconds"
        self.laps[key] = self.laps.get(key, 0.0) + now - self.last
        self.last = now


class StateInfo:
    """One state of the token automaton, read once: token and group moves,
    parenthesis moves (pushdown automata only), the packed row, EOS;
    ``finished``: the row as a mask fills it (EOS and special bits fixed),
    made at the state's first mask."""

    __slots__ = (
        "accepting",
        "closes",
        "finished",
        "funnel_groups",
        "groups",
        "heads",
        "member_moves",
        "moves",
        "opens",
        "row",
    )

    def __init__(self, compiled: FSTCompiled, s: int):
        vocab = compiled.vocab
        wild = compiled.wild
        self.moves: dict[int, int] = {}
        self.groups: dict[tuple[int, int], int] = {}
        self.funnel_groups: dict[tuple[int, int], int] = {}  # read last: see Wildcards
        self.heads: dict[tuple[int, int, int], int] = {}  # (class, first char, rest) → next
        self.member_moves: dict[int, int] = {}  # UTF-8 class or lead group label → next
        self.opens: list[tuple[int, int]] = []  # (open label, next)
        self.closes: list[tuple[int, int]] = []  # (matching open label, next)
        self.finished: np.ndarray | None = None
        labels, targets = compiled.automaton.arcs(s)
        # deterministic by construction on tokens and groups (T_V spells a
        # token one way from a state, the byte acceptors are DFAs); a dict
        # below would drop a second arc silently, so check
        tokens_and_groups = labels[labels < PAREN]
        if (tokens_and_groups[1:] == tokens_and_groups[:-1]).any():
            raise AssertionError(f"fst: state {s} of the token automaton is not deterministic")
        is_token = labels <= vocab.size  # token id + 1; the rest are group labels and parentheses
        eos = np.isin(labels, compiled.eos_labels)
        self.accepting = bool(eos.any())
        plain = is_token & ~eos
        self.moves = dict(zip((labels[plain] - 1).tolist(), targets[plain].tolist(), strict=True))
        for label, nxt in zip(labels[~is_token].tolist(), targets[~is_token].tolist(), strict=True):
            if label >= PAREN:
                if label in compiled.closes:
                    self.closes.append((compiled.closes[label], nxt))
                else:
                    self.opens.append((label, nxt))
            elif label in wild.groups:
                self.groups[wild.groups[label]] = nxt
            elif label in wild.funnel_groups:
                self.funnel_groups[wild.funnel_groups[label]] = nxt
            elif label in wild.heads:
                self.heads[wild.heads[label]] = nxt
            elif label in wild.class_groups or label in wild.lead_groups:
                self.member_moves[label] = nxt
            else:
                raise AssertionError(f"fst: unknown label {label} in the token automaton")
        allowed = np.zeros(bitmask_words(vocab.size) * 32, dtype=bool)
        allowed[np.fromiter(self.moves, dtype=np.int64, count=len(self.moves))] = True
        for label in self.member_moves:
            allowed[wild.members(label)] = True
        for k, chars in enumerate(wild.chars):
            lengths = [j for (c, j) in (*self.groups, *self.funnel_groups) if c == k]
            if lengths:
                table = np.zeros(int(chars.max()) + 1, dtype=bool)
                table[lengths] = True
                allowed[: vocab.size] |= table[chars]
        for k, tails in enumerate(wild.tails):
            keys = [(h, j) for (c, h, j) in self.heads if c == k]
            if keys:  # a 2-D table: first character × characters after it
                table = np.zeros((int(wild.head_ids.max()) + 1, int(tails.max()) + 1), dtype=bool)
                table[tuple(zip(*keys, strict=True))] = True
                allowed[: vocab.size] |= table[wild.head_ids, tails]
        self.row = pack_row(allowed)

    def advance(self, wild: Wildcards, token_id: int) -> int | None:
        """The next state on a token (its own arc, else its wildcard group's)."""
        nxt = self.moves.get(token_id)
        if nxt is None and self.member_moves:
            if wild.class_group_of is not None:
                nxt = self.member_moves.get(int(wild.class_group_of[token_id]))
            if nxt is None and wild.lead_group_of is not None:
                for label in wild.lead_group_of[:, token_id].tolist():
                    if label and label in self.member_moves:
                        return self.member_moves[label]
        if nxt is None and self.groups:
            nxt = _group_move(self.groups, wild, token_id)
        if nxt is None and self.heads:
            h = int(wild.head_ids[token_id])
            for k, tails in enumerate(wild.tails):
                key = (k, h, int(tails[token_id]))
                if key[2] and key in self.heads:
                    return self.heads[key]
        if nxt is None and self.funnel_groups:  # no own arc: the token left the exceptions
            nxt = _group_move(self.funnel_groups, wild, token_id)
        return nxt

    @property
    def has_tokens(self) -> bool:
        return bool(
            self.moves or self.groups or self.heads or self.member_moves or self.funnel_groups
        )


def _group_move(groups: dict[tuple[int, int], int], wild: Wildcards, token_id: int) -> int | None:
    """The next state by the (class, characters) group of ``token_id`` among ``groups``."""
    for k, chars in enumerate(wild.chars):
        j = int(chars[token_id])
        if j and (k, j) in groups:
            return groups[k, j]
    return None


class FSTCompiled(BaseCompiled):
    """The token-level DFA; per-state transitions and packed rows, lazily.

    Arcs read either one token or a wildcard group (all tokens wild for class
    k with j characters); a token with no arc of its own follows its group's.
    """

    def __init__(self, spec, vocab, stats, automaton, wild: Wildcards):
        super().__init__(spec, vocab, stats)
        self.closes: dict[int, int] = {}  # close label → open label (pushdown only)
        self.automaton = automaton
        self.wild = wild
        self.eos_labels = np.array(sorted(eos + 1 for eos in vocab.eos_ids), dtype=np.int64)
        self._states: dict[int, StateInfo] = {}

    def checker(self) -> StateChecker:
        """A checker at the start state."""
        return FSTChecker(self)

    def state(self, s: int) -> StateInfo:
        """The state's moves and row, read on first use and kept."""
        info = self._states.get(s)
        if info is None:
            info = self._states[s] = StateInfo(self, s)  # a benign race
        return info


class FSTChecker(StateChecker[int]):
    """The state is a state of the token-level DFA (an int; -1: empty language)."""

    def start_state(self) -> int:
        return self.compiled.automaton.start

    def advance(self, state: int, token_id: int) -> int | None:
        if state < 0:
            return None
        return self.compiled.state(state).advance(self.compiled.wild, token_id)

    def fill_state(self, state: int, row: np.ndarray) -> None:
        if state < 0:
            row[:] = 0
        else:
            row[:] = self.compiled.state(state).row

    def state_row(self, state: int) -> np.ndarray | None:
        if state < 0:
            return None
        info = self.compiled.state(state)
        if info.finished is None:  # (two threads may both make it: the same row)
            info.finished = self.finished_row(state)
        return info.finished

    def state_accepting(self, state: int) -> bool:
        return state >= 0 and self.compiled.state(state).accepting

    def state_finished(self, state: int) -> bool:
        return state < 0 or not self.compiled.state(state).has_tokens


#: A configuration of the pushdown automaton: (state, stack); the stack is
#: ``None`` or ``(open label, rest)``.
Config = tuple[int, Any]
#: Positions (sets of configurations at token boundaries) whose closure is kept.
KEEP_POSITIONS = 4096
#: Tokens whose next position a closure remembers (the first ones taken from it).
KEEP_STEPS = 64
_UNSEEN = object()
#: The most configurations a closure may hold: an ambiguous grammar's stacks
#: multiply with the text (``r: r r | N`` over digits: each digit may end an
#: ``N`` and start a call, 20,000 stacks after 11 tokens); past the bound a
#: mask raises ``CompileLimitExceeded``, as ``domino``'s parses do.
MAX_CLOSURE = 100_000


class Closure:
    """Every configuration reachable from a position through parentheses,
    grouped by state, with the union of their rows (finished: EOS and special
    bits fixed, as a mask fills it) and whether EOS is allowed and any token;
    ``after`` remembers the position after each of the first ``KEEP_STEPS``
    tokens taken from it (rows of a batch often take the same token at the
    same place: a JSON grammar's punctuation)."""

    __slots__ = ("accepting", "after", "by_state", "has_tokens", "row")

    def __init__(self, compiled: PushdownCompiled, position: frozenset[Config]):
        seen = set(position)
        todo = list(position)
        while todo:
            s, stack = todo.pop()
            info = compiled.state(s)
            found = [(nxt, (label, stack)) for label, nxt in info.opens]
            if stack is not None:
                found += [(nxt, stack[1]) for label, nxt in info.closes if label == stack[0]]
            for config in found:
                if config not in seen:
                    seen.add(config)
                    todo.append(config)
            if len(seen) > MAX_CLOSURE:
                raise CompileLimitExceeded(
                    "closure",
                    MAX_CLOSURE,
                    len(seen),
                    "pushdown configurations reachable at once: the grammar is ambiguous "
                    "past the bound",
                )
        self.by_state: dict[int, list] = {}
        for s, stack in seen:
            self.by_state.setdefault(s, []).append(stack)
        infos = [compiled.state(s) for s in self.by_state]
        rows = [info.row for info in infos if info.has_tokens]
        row = np.bitwise_or.reduce(rows) if rows else np.zeros_like(infos[0].row)
        self.accepting = any(info.accepting for info in infos)
        self.has_tokens = bool(row.any())
        compiled.special_bits.finish_row(row, self.accepting)  # (a new array: its own)
        row.flags.writeable = False
        self.row = row
        self.after: dict[int, frozenset[Config] | None] = {}


class PushdownCompiled(FSTCompiled):
    """The token-level PDT: arcs read tokens, groups, or parentheses; the
    decoder keeps the stack. ``closes`` maps each close label to its open label."""

    def __init__(self, spec, vocab, stats, automaton, wild: Wildcards, closes: dict[int, int]):
        super().__init__(spec, vocab, stats, automaton, wild)
        self.closes = closes
        self._closures: OrderedDict[frozenset[Config], Closure] = OrderedDict()

    def checker(self) -> StateChecker:
        """A checker at the start configuration."""
        return PushdownChecker(self)

    def closure(self, position: frozenset[Config]) -> Closure:
        """The position's closure, kept for the last ``KEEP_POSITIONS`` positions."""
        found = self._closures.get(position)
        if found is None:
            found = Closure(self, position)
            self._closures[position] = found
            if len(self._closures) > KEEP_POSITIONS:
                self._closures.popitem(last=False)
        return found

    def advance(self, position: frozenset[Config], token_id: int) -> frozenset[Config] | None:
        """The configurations after a token (None: not allowed)."""
        closure = self.closure(position)
        after = closure.after
        found = after.get(token_id, _UNSEEN)
        if found is not _UNSEEN:
            return found
        out = set()
        for s, stacks in closure.by_state.items():
            nxt = self.state(s).advance(self.wild, token_id)
            if nxt is not None:
                out.update((nxt, stack) for stack in stacks)
        found = frozenset(out) if out else None
        if len(after) < KEEP_STEPS:  # (two threads may both compute it: the same value)
            after[token_id] = found
        return found


class PushdownChecker(StateChecker[frozenset]):
    """The state is a position: a frozenset of (state, stack) configurations
    (several when the grammar leaves a choice open); empty for no language."""

    def start_state(self) -> frozenset:
        start = self.compiled.automaton.start
        return frozenset({(start, None)}) if start >= 0 else frozenset()

    def advance(self, state: frozenset, token_id: int) -> frozenset | None:
        return self.compiled.advance(state, token_id) if state else None

    def fill_state(self, state: frozenset, row: np.ndarray) -> None:
        if state:
            row[:] = self.compiled.closure(state).row
        else:
            row[:] = 0

    def state_row(self, state: frozenset) -> np.ndarray | None:
        return self.compiled.closure(state).row if state else None

    def state_accepting(self, state: frozenset) -> bool:
        return bool(state) and self.compiled.closure(state).accepting

    def state_finished(self, state: frozenset) -> bool:
        return not state or not self.compiled.closure(state).has_tokens
