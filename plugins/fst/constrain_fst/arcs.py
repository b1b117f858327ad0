"""FSTs as numpy arrays (both ways, through OpenFst's ``const``
serialization), and the token automaton kept as arrays.

pynini hands out arcs one Python object at a time, and its epsilon removal
cost more than the composition itself on wide constraints (the JSON object:
35 ms for 99,000 arcs). Here an FST is read through OpenFst's own binary
serialization of its ``const`` type — a header, a fixed-size record per
state, then every arc in state order — straight into arrays, and the epsilon
removal that turns the composition into the token automaton is array work
over the composition's epsilon arcs (the vocabulary trie's: they form a
layered graph whose depth is the longest token), level by level.
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


@dataclass(frozen=True)
class TokenAutomaton:
    """The token-level automaton as arrays: state s's arcs are
    ``labels[offsets[s]:offsets[s + 1]]`` (input labels: token id + 1, group
    labels, parentheses) going to ``targets[...]``, sorted by label;
    ``start`` is -1 for the empty language."""

    start: int
    offsets: np.ndarray
    labels: np.ndarray
    targets: np.ndarray

    def num_states(self) -> int:
        return len(self.offsets) - 1

    def num_arcs(self) -> int:
        return len(self.labels)

    def arcs(self, s: int) -> tuple[np.ndarray, np.ndarray]:
        """The state's (labels, targets)."""
        lo, hi = self.offsets[s], self.offsets[s + 1]
        return self.labels[lo:hi], self.targets[lo:hi]

    def is_deterministic(self) -> bool:
        """No state has two arcs with one label (a state's labels are sorted)."""
        same = self.labels[1:] == self.labels[:-1]
        bounds = self.offsets[(self.offsets > 0) & (self.offsets < len(self.labels))]
        same[bounds - 1] = False  # the last arc of a state and the first of the next
        return not same.any()


def remove_epsilons(arcs: Arcs, max_levels: int = 4096) -> TokenAutomaton | None:
    """The input-epsilon-free automaton of ``arcs`` read on input labels: its
    states are the start and every target of a non-epsilon arc (renumbered
    in that order, start first), and each gets the non-epsilon arcs of every
    state its epsilon arcs reach. All states are taken as final (the
    composition's are: every byte state is).

    Closures are followed level by level (a level: one epsilon arc further;
    duplicate pairs dropped where a level grows), the last small levels by a
    walk; ``None`` if they have not ended after ``max_levels`` levels or
    ``MAX_WALK`` walked pairs (epsilon cycles: the caller falls back on
    OpenFst's epsilon removal)."""
    n = arcs.num_states
    if arcs.start < 0:
        nothing = np.zeros(0, np.int64)
        return TokenAutomaton(-1, np.zeros(1, np.int64), nothing, nothing)
    eps = arcs.ilabel == 0
    e_dst = arcs.target[eps]
    e_start = np.searchsorted(arcs.source[eps], np.arange(n + 1))  # arcs come in state order
    real = ~eps
    r_src, r_label, r_dst = arcs.source[real], arcs.ilabel[real], arcs.target[real]
    r_start = np.searchsorted(r_src, np.arange(n + 1))
    keep = _distinct(np.concatenate([[arcs.start], r_dst]))
    keep = np.concatenate([[arcs.start], keep[keep != arcs.start]])
    number = np.full(n, -1, np.int64)
    number[keep] = np.arange(len(keep))
    # (result state, state reached) pairs, one epsilon level at a time; the
    # last few levels (long tokens only) by a plain walk, as numpy's per-call
    # cost would dominate them
    owners, reached = np.arange(len(keep)), keep
    out_owner, out_label, out_target = [], [], []
    for _ in range(max_levels):
        lo, hi = r_start[reached], r_start[reached + 1]
        count = hi - lo
        if count.any():
            at = _ranges(lo, count)
            out_owner.append(np.repeat(owners, count))
            out_label.append(r_label[at])
            out_target.append(number[r_dst[at]])
        lo, hi = e_start[reached], e_start[reached + 1]
        count = hi - lo
        if not count.any():
            break
        grown = count.sum() > len(reached)
        owners = np.repeat(owners, count)
        reached = e_dst[_ranges(lo, count)]
        if grown:  # where paths may merge; on a composition only the first levels grow
            pairs = _distinct(owners * n + reached)
            owners, reached = pairs // n, pairs % n
        if len(reached) <= SMALL_LEVEL:
            tail = _walk(owners, reached, r_start, r_label, r_dst, number, e_start, e_dst)
            if tail is None:
                return None
            out_owner.append(tail[0])
            out_label.append(tail[1])
            out_target.append(tail[2])
            break
    else:
        return None
    owner = np.concatenate(out_owner) if out_owner else np.zeros(0, np.int64)
    label = np.concatenate(out_label) if out_label else np.zeros(0, np.int64)
    target = np.concatenate(out_target) if out_target else np.zeros(0, np.int64)
    order = np.argsort(owner * (int(label.max(initial=0)) + 1) + label)  # by state, then label
    offsets = np.searchsorted(owner[order], np.arange(len(keep) + 1))
    return TokenAutomaton(0, offsets, label[order], target[order])


#: Below this many pairs, the rest of the epsilon closures is walked in Python.
SMALL_LEVEL = 16
#: A walk reaching more (owner, state) pairs than this gives up (the caller
#: falls back on OpenFst's epsilon removal).
MAX_WALK = 1_000_000


def _walk(owners, reached, r_start, r_label, r_dst, number, e_start, e_dst):
    """The non-epsilon arcs below the given pairs, by depth-first walk:
    (owner, label, target) arrays, or None past ``MAX_WALK`` pairs."""
    out: list[tuple[int, int, int]] = []
    todo = list(zip(owners.tolist(), reached.tolist(), strict=True))
    seen = set(todo)
    while todo:
        owner, s = todo.pop()
        if len(seen) > MAX_WALK:
            return None
        for k in range(int(r_start[s]), int(r_start[s + 1])):
            out.append((owner, int(r_label[k]), int(number[r_dst[k]])))
        for k in range(int(e_start[s]), int(e_start[s + 1])):
            pair = (owner, int(e_dst[k]))
            if pair not in seen:
                seen.add(pair)
                todo.append(pair)
    table = np.array(out, dtype=np.int64).reshape(-1, 3)
    return table[:, 0], table[:, 1], table[:, 2]


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
