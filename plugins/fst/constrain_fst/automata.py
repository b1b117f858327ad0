"""Byte-level acceptors in pynini from the core's regex AST, the byte trie
T_V is made of (``add_trie``; T_V itself is ``wildcards.wildcard_detokenizer``),
their composition, and a fast reader of an FST's arcs.

Labels: byte ``b`` is label ``b + 1`` (OpenFst reserves 0 for epsilon), the
end marker is ``END``; token ``i`` is input label ``i + 1``.
"""

from __future__ import annotations

import functools
import struct

import numpy as np
import pynini

from constrain_api.automata import (
    Alt,
    CharSet,
    Difference,
    Empty,
    Intersect,
    Literal,
    Node,
    Repeat,
    Seq,
    utf8_sequences,
)

END = 257  # after the text: where EOS is allowed
ONE = pynini.Weight.one("tropical")


def _ranges_acceptor(ranges) -> pynini.Fst:
    """One step per byte range: ``ranges`` is a sequence of (lo, hi) byte pairs."""
    fst = pynini.Fst()
    state = fst.add_state()
    fst.set_start(state)
    for lo, hi in ranges:
        nxt = fst.add_state()
        for b in range(lo, hi + 1):
            fst.add_arc(state, pynini.Arc(b + 1, b + 1, ONE, nxt))
        state = nxt
    fst.set_final(state)
    return fst


def _bytes_acceptor(data: bytes) -> pynini.Fst:
    return _ranges_acceptor([(b, b) for b in data])


def epsilon() -> pynini.Fst:
    """The acceptor of the empty string."""
    fst = pynini.Fst()
    s = fst.add_state()
    fst.set_start(s)
    fst.set_final(s)
    return fst


def label_acceptor(label: int) -> pynini.Fst:
    """The acceptor of the one-symbol string ``label``."""
    fst = pynini.Fst()
    a, b = fst.add_state(), fst.add_state()
    fst.set_start(a)
    fst.set_final(b)
    fst.add_arc(a, pynini.Arc(label, label, ONE, b))
    return fst


def _nothing() -> pynini.Fst:
    fst = pynini.Fst()
    fst.set_start(fst.add_state())
    return fst


def charset_acceptor(cs: CharSet) -> pynini.Fst:
    """The UTF-8 encodings of the characters of ``cs`` (a fresh copy)."""
    return _charset_acceptor(cs).copy()


@functools.lru_cache(maxsize=1024)
def _charset_acceptor(cs: CharSet) -> pynini.Fst:
    seqs = utf8_sequences(cs)
    if not seqs:
        return _nothing()
    return pynini.union(*(_ranges_acceptor(seq) for seq in seqs)).optimize()


def to_fsa(node: Node) -> pynini.Fst:
    """The byte acceptor of a regex AST, with pynini's union, concatenation
    and closure (intersection and difference for lookarounds). Optimized
    (epsilon-free, determinized, minimized) where it is copied — under a
    repetition — and by the caller at the top; not at every node, which cost
    more than it saved."""
    if isinstance(node, Empty):
        return epsilon()
    if isinstance(node, CharSet):
        return charset_acceptor(node)
    if isinstance(node, Literal):
        return _bytes_acceptor(node.text.encode("utf-8"))
    if isinstance(node, Seq):
        out = epsilon()
        for part in node.parts:
            out.concat(to_fsa(part))
        return out
    if isinstance(node, Alt):
        return pynini.union(*(to_fsa(o) for o in node.options))
    if isinstance(node, Repeat):
        inner = to_fsa(node.node)
        if node.max is None:
            return pynini.closure(inner, node.min).optimize()
        return pynini.closure(inner, node.min, node.max).optimize()
    if isinstance(node, Intersect | Difference):
        a, b = (to_fsa(n).optimize() for n in (node.left, node.right))
        op = pynini.intersect if isinstance(node, Intersect) else pynini.difference
        return op(a, b).optimize()
    raise TypeError(f"not a regex AST node: {node!r}")


def add_trie(fst: pynini.Fst, entry: int, exit: int, vocab, ids, skip: int = 0) -> None:
    """Spell the tokens ``ids`` from state ``entry``: a trie of their bytes
    (input epsilon, shared prefixes), the last arc reading the token id and
    going to ``exit``. ``skip``: leading bytes already read (at least one
    byte must remain; normal tokens are never empty)."""
    nodes: dict[bytes, int] = {b"": entry}
    for token_id in ids:
        data = vocab.token_bytes(token_id)[skip:]
        state = entry
        for k in range(1, len(data)):
            prefix = data[:k]
            nxt = nodes.get(prefix)
            if nxt is None:
                nxt = nodes[prefix] = fst.add_state()
                fst.add_arc(state, pynini.Arc(0, data[k - 1] + 1, ONE, nxt))
            state = nxt
        fst.add_arc(state, pynini.Arc(token_id + 1, data[-1] + 1, ONE, exit))


def prefix_acceptor(node: Node) -> pynini.Fst:
    """Strings of the language followed by ``END``, and all their prefixes:
    every state of the trimmed automaton made final."""
    fsa = pynini.concat(to_fsa(node), label_acceptor(END)).optimize()
    for state in fsa.states():
        fsa.set_final(state)
    return fsa.arcsort("ilabel")


def token_automaton(detok: pynini.Fst, acceptor: pynini.Fst) -> pynini.Fst:
    """The token-level DFA: T_V composed with the prefix acceptor, projected
    on tokens, epsilon-free. Its arcs out of a state are exactly the tokens
    allowed there (EOS where the text is complete).

    Determinization is normally a no-op here: T_V spells each token one way
    from a state (or once per wildcard group) and the acceptor is a DFA, so
    each label leaves a state at most once; it is run only if OpenFst's
    property check says otherwise. Minimization is not run: it never reduced
    the state count on the workloads measured (the byte DFA is minimal).
    """
    composed = pynini.compose(detok, acceptor)
    tokens = composed.project("input").rmepsilon()
    if not tokens.properties(pynini.I_DETERMINISTIC, True) & pynini.I_DETERMINISTIC:
        tokens = pynini.determinize(tokens)
    return tokens


_MAGIC = 2125659606  # OpenFst's header magic number
_ARC = np.dtype([("ilabel", "<i4"), ("olabel", "<i4"), ("weight", "<f4"), ("nextstate", "<i4")])


def arc_arrays(fst: pynini.Fst) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(source, ilabel, nextstate)`` of every arc, as arrays.

    pynini reads arcs one Python object at a time (a wide state has 256);
    this reads OpenFst's own binary serialization instead (``write_to_string``:
    a header, then per state its final weight, arc count and packed arcs),
    and falls back to the iterator for anything but a plain ``vector`` FST
    over ``standard`` arcs without symbol tables.
    """
    data = fst.write_to_string()
    parsed = _parse_vector(data) if data[:4] == struct.pack("<i", _MAGIC) else None
    if parsed is not None:
        return parsed
    src, ilabel, dst = [], [], []
    for s in fst.states():
        for arc in fst.arcs(s):
            src.append(s)
            ilabel.append(arc.ilabel)
            dst.append(arc.nextstate)
    return (np.array(src, np.int64), np.array(ilabel, np.int64), np.array(dst, np.int64))


def _parse_vector(data: bytes):
    pos = 4
    names = []
    for _ in range(2):  # the FST type, then the arc type
        (n,) = struct.unpack_from("<i", data, pos)
        names.append(data[pos + 4 : pos + 4 + n])
        pos += 4 + n
    version, flags = struct.unpack_from("<ii", data, pos)
    pos += 8 + 8  # the properties
    _, states, _ = struct.unpack_from("<qqq", data, pos)
    pos += 24
    if names != [b"vector", b"standard"] or version != 2 or flags != 0:
        return None
    sources, blocks = [], []
    for s in range(states):
        (count,) = struct.unpack_from("<q", data, pos + 4)  # after the final weight
        pos += 12
        if count:
            blocks.append(np.frombuffer(data, _ARC, count, pos))
            sources.append(np.full(count, s, np.int64))
            pos += count * _ARC.itemsize
    if pos != len(data):
        return None
    if not blocks:
        empty = np.zeros(0, np.int64)
        return empty, empty, empty
    arcs = np.concatenate(blocks)
    return (
        np.concatenate(sources),
        arcs["ilabel"].astype(np.int64),
        arcs["nextstate"].astype(np.int64),
    )
