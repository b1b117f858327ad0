"""FSTs as numpy arrays (both ways, through OpenFst's ``const``
serialization), and the token automaton kept as arrays.

pynini hands out arcs one Python object at a time, and its epsilon removal
cost more than the composition itself on wide constraints (the JSON object:
35 ms for 99,000 arcs). Here an FST is read through OpenFst's own binary
serialization of its ``const`` type — a header, a fixed-size record per
state, then every arc in state order — straight into arrays; the token
automaton reads the composition through them, removing a state's epsilon
arcs (the vocabulary trie's: a layered graph as deep as the longest token)
on first use, level by level with array operations.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np
import pynini
import pywrapfst

_MAGIC = 2125659606  # OpenFst's header magic number
_STATE = np.dtype(
    [("final", "<f4"), ("pos", "<u4"), ("narcs", "<u4"), ("niepsilons", "<u4"), ("noeps", "<u4")]
)
_ARC = np.dtype([("ilabel", "<i4"), ("olabel", "<i4"), ("weight", "<f4"), ("nextstate", "<i4")])


@dataclass(frozen=True)
class Arcs:
    """Every arc of an FST (``source``, ``ilabel``, ``olabel``, ``target``;
    in state order) with its ``start``, ``num_states`` and ``final`` states."""

    start: int
    num_states: int
    final: np.ndarray  # bool per state
    source: np.ndarray
    ilabel: np.ndarray
    olabel: np.ndarray
    target: np.ndarray


#: Each property bit pair, the "not" side (no algorithm relies on it):
#: stored on an FST read for the last time, so that converting it does not
#: scan it to compute them (10-15 ms on a 90,000-arc composition).
_UNKNOWN = (
    pynini.NOT_ACCEPTOR
    | pynini.NON_I_DETERMINISTIC
    | pynini.NON_O_DETERMINISTIC
    | pynini.EPSILONS
    | pynini.I_EPSILONS
    | pynini.O_EPSILONS
    | pynini.NOT_I_LABEL_SORTED
    | pynini.NOT_O_LABEL_SORTED
    | pynini.WEIGHTED
    | pynini.CYCLIC
    | pynini.INITIAL_CYCLIC
    | pynini.NOT_TOP_SORTED
    | pynini.NOT_ACCESSIBLE
    | pynini.NOT_COACCESSIBLE
    | pynini.NOT_STRING
    | pynini.WEIGHTED_CYCLES
)
_KNOWN = (
    pynini.ACCEPTOR
    | pynini.I_DETERMINISTIC
    | pynini.O_DETERMINISTIC
    | pynini.NO_EPSILONS
    | pynini.NO_I_EPSILONS
    | pynini.NO_O_EPSILONS
    | pynini.I_LABEL_SORTED
    | pynini.O_LABEL_SORTED
    | pynini.UNWEIGHTED
    | pynini.ACYCLIC
    | pynini.INITIAL_ACYCLIC
    | pynini.TOP_SORTED
    | pynini.ACCESSIBLE
    | pynini.COACCESSIBLE
    | pynini.STRING
    | pynini.UNWEIGHTED_CYCLES
)


def fst_arcs(fst: pynini.Fst, last_use: bool = False) -> Arcs:
    """The arcs of ``fst`` as arrays: from the ``const`` serialization, or
    through pynini's iterator for any layout this reader does not know.
    ``last_use``: the caller drops ``fst`` afterwards, so its stored
    properties may be replaced by the uninformative ones, which spares
    OpenFst the scan that computes them for the conversion."""
    if last_use:
        fst.set_properties(_UNKNOWN, _UNKNOWN | _KNOWN)
    data = pywrapfst.convert(fst, "const").write_to_string()
    parsed = _parse_const(data)
    return parsed if parsed is not None else _iterate(fst)


def const_fst(start: int, num_states: int, finals, source, ilabel, olabel, target) -> pynini.Fst:
    """The unweighted FST with these arcs (``source`` sorted) written in the
    ``const`` serialization and read back by pynini (as a mutable FST)."""
    states = np.zeros(num_states, dtype=_STATE)
    states["final"] = np.inf
    states["final"][np.asarray(finals, dtype=np.int64)] = 0.0
    counts = np.bincount(source, minlength=num_states)
    states["narcs"] = counts
    states["pos"] = np.cumsum(counts) - counts
    states["niepsilons"] = np.bincount(source[ilabel == 0], minlength=num_states)
    states["noeps"] = np.bincount(source[olabel == 0], minlength=num_states)
    records = np.zeros(len(source), dtype=_ARC)
    records["ilabel"], records["olabel"], records["nextstate"] = ilabel, olabel, target
    header = b"".join(
        [
            struct.pack("<i", _MAGIC),
            struct.pack("<i", 5) + b"const",
            struct.pack("<i", 8) + b"standard",
            struct.pack("<ii", 2, 0),  # version; flags: no symbol tables, not aligned
            struct.pack("<Q", 0),  # properties: none known
            struct.pack("<qqq", start, num_states, len(source)),
        ]
    )
    return pynini.Fst.read_from_string(header + states.tobytes() + records.tobytes())


def add_arcs(fst: pynini.Fst, new_states: int, source, label, target) -> pynini.Fst:
    """An acceptor: ``fst``'s states and arcs, ``new_states`` more states
    (final), and the given arcs (ilabel = olabel), sorted by input label;
    one array write instead of a pynini call per arc."""
    arcs = fst_arcs(fst)
    n = arcs.num_states + new_states
    source = np.concatenate([arcs.source, np.asarray(source, dtype=np.int64)])
    label = np.concatenate([arcs.ilabel, np.asarray(label, dtype=np.int64)])
    target = np.concatenate([arcs.target, np.asarray(target, dtype=np.int64)])
    order = np.lexsort((label, source))
    finals = np.concatenate([np.flatnonzero(arcs.final), np.arange(arcs.num_states, n)])
    out = const_fst(arcs.start, n, finals, source[order], label[order], label[order], target[order])
    return out.arcsort("ilabel")  # sorted already: this records it for the composition


def _parse_const(data: bytes) -> Arcs | None:
    if data[:4] != struct.pack("<i", _MAGIC):
        return None
    pos = 4
    names = []
    for _ in range(2):  # the FST type, then the arc type
        (n,) = struct.unpack_from("<i", data, pos)
        names.append(data[pos + 4 : pos + 4 + n])
        pos += 4 + n
    version, flags = struct.unpack_from("<ii", data, pos)
    pos += 8 + 8  # the properties
    start, states, arcs = struct.unpack_from("<qqq", data, pos)
    pos += 24
    # flags: symbol tables or alignment padding would move the records
    if names != [b"const", b"standard"] or version != 2 or flags != 0:
        return None
    if pos + states * _STATE.itemsize + arcs * _ARC.itemsize != len(data):
        return None
    records = np.frombuffer(data, _STATE, states, pos)
    arc = np.frombuffer(data, _ARC, arcs, pos + states * _STATE.itemsize)
    counts = records["narcs"].astype(np.int64)
    return Arcs(
        int(start),
        int(states),
        records["final"] != np.inf,
        np.repeat(np.arange(states, dtype=np.int64), counts),
        arc["ilabel"].astype(np.int64),
        arc["olabel"].astype(np.int64),
        arc["nextstate"].astype(np.int64),
    )


def _iterate(fst: pynini.Fst) -> Arcs:
    zero = pynini.Weight.zero(fst.weight_type())
    rows = [(s, a.ilabel, a.olabel, a.nextstate) for s in fst.states() for a in fst.arcs(s)]
    table = np.array(rows, dtype=np.int64).reshape(-1, 4)
    final = np.array([fst.final(s) != zero for s in fst.states()], dtype=bool)
    return Arcs(fst.start(), fst.num_states(), final, *table.T.copy())


class TokenAutomaton:
    """A composition read on input labels, its epsilon arcs removed:
    ``arcs(s)`` are the non-epsilon arcs of every state that s's epsilon
    arcs reach. Its states are the composition's; those a reader can be in
    are ``token_states``: the start and every target of a non-epsilon arc.
    ``start`` is -1 for the empty language. Every state is taken as final
    (the composition's are: every byte state is).

    The closures are followed a level at a time with array operations (a
    level: one epsilon arc further; the vocabulary trie's epsilon arcs form
    a layered graph as deep as the longest token), the last small levels by
    a plain walk. ``eager``: for every token state at once, when built
    (where a decoder reaches most states: pushdown automata, whose
    configurations touch many states a step); otherwise state by state on
    first use (regular constraints, whose decoders visit few of them)."""

    def __init__(self, arcs: Arcs, eager: bool = False):
        n = arcs.num_states
        self.start = int(arcs.start) if n and arcs.start >= 0 else -1
        eps = arcs.ilabel == 0
        self._e_dst = arcs.target[eps]
        self._e_start = _starts(arcs.source[eps], n)
        real = ~eps
        self._r_label, self._r_dst = arcs.ilabel[real], arcs.target[real]
        self._r_start = _starts(arcs.source[real], n)
        reached = np.zeros(n, dtype=bool)
        reached[self._r_dst] = True
        if self.start >= 0:
            reached[self.start] = True
        self.token_states = np.flatnonzero(reached)
        self._all: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        if eager:
            self._all = self._closures(self.token_states)

    def num_states(self) -> int:
        """How many states a reader can be in."""
        return len(self.token_states)

    def num_arcs(self) -> int:
        """The token arcs of every state (for figures and tests: a lazy
        automaton removes every state's epsilons for it)."""
        found = self._all if self._all is not None else self._closures(self.token_states)
        return len(found[1])

    def arcs(self, s: int) -> tuple[np.ndarray, np.ndarray]:
        """The state's distinct (label, target) arcs, sorted by label (a
        label may lead to several states: a pushdown automaton's parentheses
        may be read at several points of its tokens)."""
        at = -1 if self._all is None else int(np.searchsorted(self.token_states, s))
        if at < 0 or at == len(self.token_states) or self.token_states[at] != s:
            return self._closures(np.array([s], dtype=np.int64))[1:]
        offsets, labels, targets = self._all
        return labels[offsets[at] : offsets[at + 1]], targets[offsets[at] : offsets[at + 1]]

    def _closures(self, states: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The arcs below each of ``states``: (offsets into the arcs per
        state, labels, targets), distinct and sorted by (state, label, target)."""
        n = len(self._r_start) - 1
        owners, reached = np.arange(len(states)), states
        found: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        for _ in range(MAX_LEVELS):
            lo = self._r_start[reached]
            count = self._r_start[reached + 1] - lo
            if count.any():
                at = _ranges(lo, count)
                found.append((np.repeat(owners, count), self._r_label[at], self._r_dst[at]))
            lo = self._e_start[reached]
            count = self._e_start[reached + 1] - lo
            if not count.any():
                break
            grown = count.sum() > len(reached)
            owners = np.repeat(owners, count)
            reached = self._e_dst[_ranges(lo, count)]
            if grown:  # where paths may merge: each (owner, state) pair once
                pairs = _distinct(owners * n + reached)
                owners, reached = pairs // n, pairs % n
            if len(reached) <= SMALL_LEVEL:
                found.append(self._walk(owners.tolist(), reached.tolist()))
                break
        else:  # an epsilon cycle: walk the closures whole, remembering states
            found = [self._walk(list(range(len(states))), states.tolist())]
        if found:
            owner, label, target = (np.concatenate(part) for part in zip(*found, strict=True))
        else:
            owner = label = target = np.zeros(0, dtype=np.int64)
        width = int(label.max(initial=0)) + 1
        if len(states) * width * n < MAX_KEY:  # one sort key per arc
            keys = _distinct((owner * width + label) * n + target)  # merged paths: once
            owner, rest = np.divmod(keys, width * n)
            label, target = np.divmod(rest, n)
        else:
            order = np.lexsort((target, label, owner))
            owner, label, target = owner[order], label[order], target[order]
            new = np.ones(len(owner), dtype=bool)
            new[1:] = (np.diff(owner) != 0) | (np.diff(label) != 0) | (np.diff(target) != 0)
            owner, label, target = owner[new], label[new], target[new]
        offsets = np.searchsorted(owner, np.arange(len(states) + 1))
        return offsets, label, target

    def _walk(self, owners: list[int], todo: list[int]) -> tuple[np.ndarray, ...]:
        """The non-epsilon arcs below the given (owner, state) pairs, by
        depth-first walk: (owners, labels, targets)."""
        r_start, e_start, e_dst = self._r_start, self._e_start, self._e_dst
        out: list[tuple[int, int, int]] = []
        stack = list(zip(owners, todo, strict=True))
        seen = set(stack)
        while stack:
            owner, q = stack.pop()
            lo, hi = int(r_start[q]), int(r_start[q + 1])
            out += [
                (owner, label, t)
                for label, t in zip(
                    self._r_label[lo:hi].tolist(), self._r_dst[lo:hi].tolist(), strict=True
                )
            ]
            for nxt in e_dst[int(e_start[q]) : int(e_start[q + 1])].tolist():
                if (owner, nxt) not in seen:
                    seen.add((owner, nxt))
                    stack.append((owner, nxt))
        table = np.array(out, dtype=np.int64).reshape(-1, 3)
        return table[:, 0], table[:, 1], table[:, 2]


#: Below this many states, the rest of an epsilon closure is walked in Python
#: (numpy's per-call cost would dominate the last levels: long tokens only).
SMALL_LEVEL = 16
#: Arcs are sorted on one integer key (state, label, target) below this
#: bound, by three keys above it.
MAX_KEY = 1 << 62
#: Levels followed with arrays before a closure is taken for cyclic and walked.
MAX_LEVELS = 4096


def _starts(source: np.ndarray, n: int) -> np.ndarray:
    """Where each state's arcs start in ``source`` (sorted), and the end."""
    return np.concatenate([[0], np.cumsum(np.bincount(source, minlength=n))])


def _distinct(values: np.ndarray) -> np.ndarray:
    """The distinct values, sorted (``np.unique`` hashes, several times slower here)."""
    values = np.sort(values)
    return values[np.concatenate([[True], values[1:] != values[:-1]])] if len(values) else values


def _ranges(lo: np.ndarray, count: np.ndarray) -> np.ndarray:
    """The indices ``lo[i] .. lo[i] + count[i] - 1`` for every i, concatenated."""
    total = int(count.sum())
    if not total:
        return np.zeros(0, np.int64)
    ends = np.cumsum(count)
    return np.arange(total) - np.repeat(ends - count - lo, count)
