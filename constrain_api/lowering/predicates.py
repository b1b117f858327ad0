"""``where`` predicates → byte automata.

``dfa_for_predicate(p)`` is the exact language ``{text : p.holds(text)}``
over the UTF-8 encodings of valid Unicode text (no surrogates):

* ``StopsAt(s)``, ``Contains(s)``, ``NotContains(s)``: a KMP automaton over the
  UTF-8 bytes of ``s``, intersected with "valid UTF-8". Matching bytes is
  matching characters here, because UTF-8 is self-synchronizing: in valid
  UTF-8, an occurrence of the encoding of ``s`` always starts and ends on
  character boundaries.
* ``LenChars``/``LenWords``: a counter automaton over characters (for words,
  over the classes "space" = ``str.isspace`` and "non-space", a word starting
  at each non-space after a space or the start, like ``str.split()``),
  expanded to bytes through a small UTF-8 classifier. Counts saturate at
  ``n + 1``, so the automaton has O(n) states.
* ``OneOf``: a trie of the options. ``And``: product (intersection); ``Or``:
  product (union). Every result is trimmed and minimized.

Texts containing surrogates cannot be encoded, so ``OneOf`` options with
surrogates are dropped, ``Contains``/``StopsAt`` of such a string give the
empty language and ``NotContains`` of one is no constraint.
"""

from __future__ import annotations

import functools

import numpy as np

from ..automata.dfa import _NFA, DEFAULT_MAX_STATES, ByteDFA, _determinize
from ..automata.regex import CharSet, _unicode_category
from ..errors import CompileLimitExceeded, UnsupportedConstraint
from ..where import And, Contains, LenChars, LenWords, NotContains, OneOf, Or, Predicate, StopsAt

__all__ = ["dfa_for_predicate"]

_COMPARE = {
    "<": np.less,
    "<=": np.less_equal,
    "==": np.equal,
    ">=": np.greater_equal,
    ">": np.greater,
}


def dfa_for_predicate(p: Predicate, *, max_states: int = DEFAULT_MAX_STATES) -> ByteDFA:
    """The minimal ``ByteDFA`` of the UTF-8 texts for which ``p.holds(text)`` is true.

    Raises ``CompileLimitExceeded`` when an automaton would exceed
    ``max_states`` and ``UnsupportedConstraint`` for an unknown predicate class.
    """
    if isinstance(p, And | Or):
        parts = [dfa_for_predicate(q, max_states=max_states) for q in p.parts]
        parts.sort(key=lambda d: d.num_states)
        result = parts[0]
        for d in parts[1:]:
            if isinstance(p, And):
                result = result.intersect(d, max_states=max_states)
            else:
                result = result.union(d, max_states=max_states)
        return result
    if isinstance(p, OneOf):
        options = [o.encode() for o in p.options if _encodable(o)]
        return ByteDFA.from_strings(options, max_states=max_states)
    if isinstance(p, StopsAt | Contains | NotContains):
        if not _encodable(p.text):
            if isinstance(p, NotContains):
                return ByteDFA.any_utf8()
            return ByteDFA.empty()
        return _substring_dfa(p.text.encode(), type(p).__name__, max_states)
    if isinstance(p, LenChars):
        return _count_dfa(p.op, p.n, words=False, max_states=max_states)
    if isinstance(p, LenWords):
        return _count_dfa(p.op, p.n, words=True, max_states=max_states)
    raise UnsupportedConstraint("automata", f"predicate {type(p).__name__}")


def _encodable(text: str) -> bool:
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


def _check(states: int, limit: int, max_states: int, what: str) -> None:
    if states > limit:
        raise CompileLimitExceeded("states", max_states, states, f"{what} needs more DFA states")


def _substring_dfa(needle: bytes, kind: str, max_states: int) -> ByteDFA:
    """KMP automaton for ``needle`` (states = matched prefix length), ∩ valid UTF-8."""
    m = len(needle)
    _check(m + 1, max_states, max_states, f"{kind}({needle!r})")
    table = np.zeros((m + 1, 256), dtype=np.int32)
    table[0, needle[0]] = 1
    fail = 0
    for j in range(1, m):
        table[j] = table[fail]
        table[j, needle[j]] = j + 1
        fail = int(table[fail, needle[j]])
    accepting = np.zeros(m + 1, dtype=bool)
    if kind == "Contains":
        table[m] = m  # absorbing: found
        accepting[m] = True
    elif kind == "StopsAt":
        table[m] = -1  # the text ends at the first occurrence
        accepting[m] = True
    else:  # NotContains: reaching m is death
        table[table == m] = -1
        table[m] = -1
        accepting[:m] = True
    raw = ByteDFA(table, accepting, 0)
    return raw.intersect(ByteDFA.any_utf8(), max_states=max_states)


@functools.cache
def _classifier(kind: str) -> tuple[np.ndarray, np.ndarray]:
    """A byte automaton reading one UTF-8 character and telling its class.

    ``kind`` "char": one class (any character); "word": class 0 = whitespace
    (``str.isspace``), class 1 = the rest. Returns ``(small, classmap)``:
    ``small[u, c]`` for internal state ``u`` (0 = between characters) and byte
    class ``c`` is an internal state ``>= 0``, ``-1`` (invalid UTF-8), or
    ``-2 - j`` when the byte completes a character of class ``j``.
    """
    if kind == "char":
        classes = [CharSet.any()]
    else:
        space = _unicode_category("SPACE")
        classes = [space, space.complement()]
    # One character of class j followed by the marker byte 0xF8 + j (never in
    # UTF-8), determinized and minimized: a state with a marker edge is "a
    # character of class j just ended".
    nfa = _NFA(10**6)
    start, final = nfa.state(), nfa.state()
    for j, cs in enumerate(classes):
        done = nfa.state()
        nfa.build(cs, start, done)
        nfa.edges[done].append((0xF8 + j, 0xF8 + j, final))
    small, classmap, accepting = _determinize(nfa, start, final, 10**6)
    d = ByteDFA._build(small, classmap, accepting, 0, reachable=True)
    table = d.table
    exit_of = np.full(d.num_states, -1)
    for j in range(len(classes)):
        exit_of[table[:, 0xF8 + j] >= 0] = j
    internal = np.flatnonzero((exit_of < 0) & ~d.accepting)
    assert internal[0] == d.start == 0
    number = np.full(d.num_states + 1, -1)
    number[internal] = np.arange(internal.size)
    code = np.where(exit_of >= 0, -2 - exit_of, number[:-1])
    code = np.append(code, -1)  # index -1: dead
    out = code[table[internal]][:, :0xF8]
    out = np.concatenate([out, np.full((internal.size, 8), -1)], axis=1)
    cols, cmap = np.unique(out.T, axis=0, return_inverse=True)
    return np.ascontiguousarray(cols.T), cmap.reshape(-1)


def _count_dfa(op: str, n: int, *, words: bool, max_states: int) -> ByteDFA:
    """Characters (or words) counted up to ``n + 1`` (saturating), accepted by ``op``."""
    small_c, classmap = _classifier("word" if words else "char")
    u = small_c.shape[0]
    counts = np.arange(n + 2)
    if words:
        # char-level states (count, in_word) numbered 2 * count + in_word
        q = 2 * (n + 2)
        count = np.repeat(counts, 2)
        in_word = np.tile([0, 1], n + 2)
        on_space = 2 * count
        on_other = np.where(in_word == 1, 2 * count + 1, 2 * np.minimum(count + 1, n + 1) + 1)
        delta = np.stack([on_space, on_other], axis=1)
    else:
        q = n + 2
        count = counts
        delta = np.minimum(counts + 1, n + 1)[:, None]
    # q * u states before trimming (about as many after): refuse clearly
    # oversized ones before allocating; _build checks the exact count
    _check(q * u, 2 * max_states, max_states, f"the length bound {op} {n}")
    char_accept = _COMPARE[op](count, n)
    # byte-level state (char state i, classifier state v) = i * u + v
    ci = np.arange(q)[:, None, None]
    sc = small_c[None, :, :]
    exit_class = np.where(sc <= -2, -2 - sc, 0)
    nxt_char = delta[:, exit_class[0]]  # (q, u, k)
    table = np.where(sc >= 0, ci * u + sc, np.where(sc <= -2, nxt_char * u, -1))
    table = table.reshape(q * u, -1).astype(np.int32)
    accepting = np.zeros((q, u), dtype=bool)
    accepting[:, 0] = char_accept
    return ByteDFA._build(table, classmap, accepting.reshape(-1), 0, max_states=max_states)
