"""Wildcard terminals (Koo et al. §2.5.1), kept exact.

A character class such as ``[^"\\\\]`` inside a repetition gives byte states
from which almost every token is allowed; composed with T_V each such state
walks the whole vocabulary trie and gets one arc per token. The paper
replaces such classes by terminal labels whose token sets are precomputed.
Here, for a wildcard class C:

* a token is **wild** for C when its bytes are valid UTF-8 made only of
  characters of C; ``chars[t]`` is its number of characters (0: not wild);
* a byte state q is **C-uniform** when every character of C leads from q to
  one and the same state ``next(q)`` (or every one is dead), and **C-closed**
  when every state on the chain q, next(q), next(next(q)), … is C-uniform.
  From a closed state a wild token of j characters goes exactly to
  ``next`` applied j times, whatever its characters are;
* T_V gets a second way to spell a wild token: the wildcard symbol W_C
  repeated once per character, read with a *group* label G(C, j) that
  stands for all wild tokens of j characters; the byte acceptor gets a W_C
  arc q → next(q) at closed states;
* a token of two or more characters whose characters after the first are
  all in C (` foo`, and every wild token) is also *headed*: spelled with
  ``HEAD``, its first character's bytes, then either ``SWITCH`` (read where
  C is closed in the middle of a token) and the wildcard symbols with a
  group label per (class, first character, rest), or ``STAY`` (read
  elsewhere) and the rest in bytes. A state that is not closed (the hex
  digit after ``\\u001`` in a JSON string) still reads the wild tokens by
  first character and group when the state after that character is;
* a token whose leading characters are in C and followed by one outside
  (``abc"`` inside quotes) is *led*: spelled as W_C once per leading
  character, then the rest in bytes, with a group label per (class,
  leading characters, rest), read where C is closed; in bytes elsewhere,
  behind the marker of its classes (as below), so a closed state reads it
  one way only;
* a one-character wild token has no head spelling: its byte spelling starts
  with a marker M_S (S: the classes it is wild for), which the acceptor
  reads only at states closed for no class in S, so that a closed state
  does not read it twice;
* a state that is not closed but where every character of C leads to one
  closed state except a few ASCII ones that follow a trie (an object's
  declared names inside "any other name") is a **funnel** (``funnel_states``):
  it reads the wild tokens by a funnel group (``FUNNEL`` then W_C, to the
  same state as the closed chain it leads to), and their marker M_S leads
  to a copy of the state whose bytes are the trie's only, so the tokens
  that follow the trie get their own arcs, read before the group's.

Every token is thus spelled at every state by bytes or by wildcards, never
lost; both spellings, where both exist, reach the same state. The token
automaton has arcs for group labels and for the remaining single tokens; a
state's mask is their union. Tokens that are not wild for any class (those
containing a quote, partial UTF-8 characters, …) stay plain bytes.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

import numpy as np
import pynini

from constrain_api.automata import CharSet, utf8_sequences

from .arcs import Arcs, add_arcs, fst_arcs
from .automata import END
from .builder import FstBuilder, add_tries
from .utf8classes import BYTE_LABELS

#: At most this many wildcard classes per constraint (the markers number 2**k).
MAX_CLASSES = 4
#: Output labels: the wildcard symbol of class k is ``WILD + k``; the marker
#: of class set S is ``MARK + S`` (``MARK`` alone: tokens in plain bytes);
#: ``HEAD`` starts a spelling by first character, after which ``SWITCH + k``
#: switches to wildcards of class k and ``STAY + S`` stays with bytes;
#: ``LEAD + S`` marks the byte spelling of tokens that start in the classes S
#: (their lead spelling's counterpart); ``FUNNEL + k`` starts a funnel group's
#: spelling (then ``WILD + k`` for its other characters).
WILD = END + 1
MARK = WILD + MAX_CLASSES
SWITCH = MARK + (1 << MAX_CLASSES)
HEAD = SWITCH + MAX_CLASSES
STAY = HEAD + 1
LEAD = STAY + (1 << MAX_CLASSES)
FUNNEL = LEAD + (1 << MAX_CLASSES)
#: The symbols a token's spelling can start with (besides ``END``, EOS): what
#: a funnel copy of a state reads as the state does (``add_wildcard_arcs``).
STARTS = (
    (WILD, WILD + MAX_CLASSES),
    (MARK, MARK + (1 << MAX_CLASSES)),
    (HEAD, HEAD + 1),
    (LEAD, LEAD + (1 << MAX_CLASSES)),
    (FUNNEL, FUNNEL + MAX_CLASSES),
)


@dataclass(frozen=True)
class TokenText:
    """The normal tokens of a vocabulary as characters (one per vocabulary)."""

    code_points: np.ndarray  # int32, the characters of the valid tokens, concatenated
    starts: np.ndarray  # int64, start in code_points of each valid token
    valid_ids: np.ndarray  # int64, the ids of the non-empty valid-UTF-8 normal tokens
    lengths: np.ndarray  # int32, characters per valid token
    size: int  # vocabulary size


def token_text(vocab) -> TokenText:
    """Decode every normal token once; tokens that are not valid UTF-8 are left out."""
    points: list[int] = []
    starts, ids, lengths = [], [], []
    for token_id in vocab.normal_ids().tolist():
        data = vocab.token_bytes(token_id)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            continue
        if text:
            starts.append(len(points))
            ids.append(token_id)
            lengths.append(len(text))
            points.extend(map(ord, text))
    return TokenText(
        np.array(points, dtype=np.int32),
        np.array(starts, dtype=np.int64),
        np.array(ids, dtype=np.int64),
        np.array(lengths, dtype=np.int32),
        vocab.size,
    )


def wild_chars(text: TokenText, charset: CharSet) -> tuple[np.ndarray, np.ndarray]:
    """Per token id: (its number of characters if all are in ``charset``,
    else 0; its number of characters after the first if there are some and
    they are all in ``charset``, whatever the first is, else 0)."""
    chars = np.zeros(text.size, dtype=np.int32)
    tails = np.zeros(text.size, dtype=np.int32)
    if not len(text.valid_ids) or not charset.ranges:
        return chars, tails
    outside = _outside(text, charset)
    bad = np.add.reduceat(outside.astype(np.int32), text.starts)
    first_out = outside[text.starts]
    wild = bad == 0
    chars[text.valid_ids[wild]] = text.lengths[wild]
    headed = (bad == first_out) & (text.lengths > 1)  # nothing outside after the first
    tails[text.valid_ids[headed]] = text.lengths[headed] - 1
    return chars, tails


def lead_chars(text: TokenText, charset: CharSet) -> np.ndarray:
    """Per token id: its number of leading characters in ``charset`` if there
    are some and a character outside follows them, else 0."""
    leads = np.zeros(text.size, dtype=np.int32)
    if not len(text.valid_ids) or not charset.ranges:
        return leads
    outside = _outside(text, charset)
    position = np.arange(len(text.code_points)) - np.repeat(text.starts, text.lengths)
    first_outside = np.minimum.reduceat(np.where(outside, position, 1 << 30), text.starts)
    led = (first_outside > 0) & (first_outside < text.lengths)
    leads[text.valid_ids[led]] = first_outside[led]
    return leads


def _outside(text: TokenText, charset: CharSet) -> np.ndarray:
    """Per character of ``text.code_points``: not in ``charset``. A table
    lookup when the class takes all non-ASCII characters or none (the
    candidate classes do), else a search in its ranges."""
    above = [(max(lo, 0x80), hi) for lo, hi in charset.ranges if hi >= 0x80]
    if not above or above == [(0x80, 0x10FFFF)]:
        table = np.ones(129, dtype=bool)  # 128: every non-ASCII character
        for lo, hi in charset.ranges:
            table[lo : min(hi, 0x7F) + 1] = False
        table[128] = not above
        return table[np.minimum(text.code_points, 128)]
    lo = np.array([r[0] for r in charset.ranges], dtype=np.int32)
    hi = np.array([r[1] for r in charset.ranges], dtype=np.int32)
    at = np.searchsorted(lo, text.code_points, side="right") - 1
    return (at < 0) | (text.code_points > hi[np.maximum(at, 0)])


def first_chars(text: TokenText) -> np.ndarray:
    """Per token id, the code point of its first character (-1: not valid UTF-8)."""
    out = np.full(text.size, -1, dtype=np.int32)
    out[text.valid_ids] = text.code_points[text.starts]
    return out


def candidate_classes(table: np.ndarray, min_bytes: int = 8) -> list[CharSet]:
    """Classes read from the byte automaton: at each state, the largest set of
    ASCII bytes that lead to one same state (if it has ``min_bytes`` or more),
    alone and with every non-ASCII character added; distinct, in state order.
    Whether a class really acts uniformly anywhere is ``closed_chains``' job."""
    ascii_part = table[:, :128]
    lead_alive = (table[:, 0xC2:0xF5] >= 0).all(axis=1)
    rows = np.flatnonzero((ascii_part >= 0).sum(axis=1) >= min_bytes)
    if not len(rows):
        return []
    modes, counts = _modes(ascii_part[rows])
    inside = ascii_part[rows] == modes[:, None]
    keep = counts >= min_bytes
    # states alike give the same classes: build each once, in state order
    keys = np.concatenate([np.packbits(inside, axis=1), lead_alive[rows, None]], axis=1)[keep]
    _, first = np.unique(keys, axis=0, return_index=True)
    found: dict[CharSet, None] = {}
    for q, row in zip(
        rows[keep][np.sort(first)].tolist(), inside[keep][np.sort(first)], strict=True
    ):
        edges = np.flatnonzero(np.diff(np.concatenate([[False], row, [False]])))
        charset = CharSet(tuple(zip(edges[::2].tolist(), (edges[1::2] - 1).tolist(), strict=True)))
        found.setdefault(charset)
        if lead_alive[q]:
            found.setdefault(CharSet((*charset.ranges, (0x80, 0x10FFFF))))
    return list(found)


def _modes(targets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each row's most frequent live target (the smallest of equals; -1 where
    all are dead) and how often it occurs, all rows at once: sorted, dead
    last, then the longest run."""
    rows, width = targets.shape
    dead = np.iinfo(np.int32).max
    ordered = np.sort(np.where(targets >= 0, targets, dead))
    starts = np.ones(ordered.shape, dtype=bool)
    starts[:, 1:] = ordered[:, 1:] != ordered[:, :-1]
    column = np.broadcast_to(np.arange(width), ordered.shape)
    # where each position's run ends: the next run start, from the right
    nxt = np.where(starts, column, width)[:, ::-1]
    ends = np.minimum.accumulate(
        np.concatenate([np.full((rows, 1), width), nxt[:, :-1]], axis=1), axis=1
    )[:, ::-1]
    runs = np.where(starts & (ordered != dead), ends - column, 0)
    best = runs.argmax(axis=1)
    counts = runs[np.arange(rows), best]
    modes = ordered[np.arange(rows), best]
    return np.where(counts > 0, modes, -1), counts


def byte_table(acceptor: pynini.Fst | Arcs) -> tuple[np.ndarray, np.ndarray]:
    """The acceptor's transitions on bytes as an ``(n, 256)`` table (-1: dead),
    and which states have arcs that are not bytes or the end marker (the
    acceptor, or its arcs already read by ``fst_arcs``)."""
    arcs = acceptor if isinstance(acceptor, Arcs) else fst_arcs(acceptor)
    table = np.full((arcs.num_states, 256), -1, dtype=np.int32)
    other = np.zeros(arcs.num_states, dtype=bool)
    src, label, dst = arcs.source, arcs.ilabel, arcs.target
    byte = (label >= 1) & (label <= 256)
    table[src[byte], label[byte] - 1] = dst[byte]
    other[src[~byte & (label != END)]] = True
    return table, other


def moves(acceptor: pynini.Fst | Arcs) -> tuple[np.ndarray, np.ndarray]:
    """The (source, target) of the acceptor's arcs that read neither a byte
    nor the end marker: a pushdown automaton's calls and returns."""
    arcs = acceptor if isinstance(acceptor, Arcs) else fst_arcs(acceptor)
    other = ((arcs.ilabel < 1) | (arcs.ilabel > 256)) & (arcs.ilabel != END)
    return arcs.source[other], arcs.target[other]


def class_exclusions(
    table: np.ndarray, charset: CharSet, calls: np.ndarray | None, moves
) -> np.ndarray | None:
    """The states where a token in the middle of characters of ``charset``
    might take a call or return: those with such moves (``calls``) from
    which, through moves alone (the stack ignored: more, never fewer), a
    state that reads a first byte of the class is reached. Elsewhere the
    moves cannot be followed by the token's next character, so the state
    may continue a closed chain (``closed_chains``' ``exclude``): a name's
    last state, say, whose returns lead to ``(``, ``;`` or spaces only."""
    if calls is None or not calls.any():
        return calls
    src, dst = moves
    readable = np.zeros(table.shape[0], dtype=bool)
    for lo, hi in {seq[0] for seq in utf8_sequences(charset)}:
        readable |= (table[:, lo : hi + 1] >= 0).any(axis=1)
    after = np.zeros(table.shape[0], dtype=bool)  # a reading state reached by moves
    while True:
        grown = np.zeros_like(after)
        grown[src[readable[dst] | after[dst]]] = True
        if (grown == after).all():
            return calls & after
        after = grown


def _class_ends(table: np.ndarray, sequences) -> tuple[np.ndarray, np.ndarray]:
    """Per byte state: whether every character of the UTF-8 ``sequences``
    leads to one same state, and that state (``len(table)``: dead, also when
    there are none). Conservative: two bytes of one range of a sequence that
    lead to different states count as not uniform even if the walks meet
    again later."""
    n = table.shape[0]
    dead = n  # an extra row that stays dead, so -1 never indexes a real row
    padded = np.vstack([np.where(table < 0, dead, table), np.full((1, 256), dead)])
    uniform = np.ones(n, dtype=bool)
    target: np.ndarray | None = None
    for seq in sequences:
        ends = np.arange(n)
        for lo, hi in seq:
            step = padded[ends, lo : hi + 1]
            ends = step.min(axis=1)
            uniform &= ends == step.max(axis=1)
        if target is None:
            target = ends
        uniform &= ends == target
    return uniform, target if target is not None else np.full(n, dead)


def closed_chains(
    table: np.ndarray, charset: CharSet, exclude: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(closed where a token starts, closed in the middle of a token, next)
    per byte state for ``charset``: see the module docstring. ``next`` is -1
    where the class's characters are dead. States in ``exclude`` (those with
    moves other than bytes that the class may follow: a pushdown automaton's
    calls and returns, ``class_exclusions``) may start a closed chain but
    never continue one: a token that starts there may take those moves
    first, and is then read from where they lead; in the middle of a token
    it could not.

    Conservative: a state where two bytes of one range of a UTF-8 sequence
    lead to different states counts as not uniform even if the walks later
    meet again (they would be spelled in bytes: slower, still exact).
    """
    n = table.shape[0]
    uniform, target = _class_ends(table, utf8_sequences(charset))
    nxt = np.where(uniform & (target != n), target, -1).astype(np.int32)
    inner = uniform & ~exclude if exclude is not None else uniform
    strict = inner.copy()
    while True:  # closed: uniform, and the next state (if any) closed
        update = inner & ((nxt < 0) | strict[np.maximum(nxt, 0)])
        if (update == strict).all():
            break
        strict = update
    start = uniform & ((nxt < 0) | strict[np.maximum(nxt, 0)])
    return start, strict, nxt


def _ascii_bytes(charset: CharSet) -> np.ndarray:
    """The class's one-byte characters."""
    found = [range(lo, min(hi, 0x7F) + 1) for lo, hi in charset.ranges if lo < 0x80]
    return np.array([b for r in found for b in r], dtype=np.int64)


def funnel_states(
    table: np.ndarray,
    charset: CharSet,
    chains: tuple[np.ndarray, np.ndarray, np.ndarray],
    moving: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """(funnel, default) per byte state for ``charset``, given its
    ``closed_chains``. A state q that is not closed is a **funnel** when
    every character of the class leads from it to one live *default* state
    g, closed in the middle of a token, or — for some ASCII characters, the
    *exceptions* — to a state e that is a funnel with default ``next(g)`` or
    closed with ``next(e) == next(g)``. A token of j characters of the class
    then ends at ``next`` applied j - 1 times to g unless it follows
    exceptions all the way (the trie of an object's declared member names
    inside "any other name", which would otherwise spell every token in
    bytes from each of its states). States with ``moving`` (a pushdown
    automaton's calls and returns) are never funnels nor exceptions.
    ``default`` is -1 where the state is no funnel."""
    start, strict, nxt = chains
    n = table.shape[0]
    ascii_targets = table[:, _ascii_bytes(charset)]
    # where the class's other characters lead (all to one state), if it has some
    wide = [seq for seq in utf8_sequences(charset) if len(seq) > 1]
    wide_ok, wide_end = _class_ends(table, wide)
    default = wide_end if wide else _modes(ascii_targets)[0]
    ok = wide_ok & (default >= 0) & (default < n) & ~start & (ascii_targets >= 0).all(axis=1)
    if moving is not None:
        ok &= ~moving
    g = np.where(ok, default, 0)
    ok &= strict[g]
    exceptions = ok[:, None] & (ascii_targets != g[:, None])
    want = nxt[g][:, None]  # an exception's default
    target = np.where(exceptions, ascii_targets, 0)
    closed_ok = start[target] & (nxt[target] == want)
    if moving is not None:
        closed_ok &= ~moving[target]
    funnel = ok
    while True:
        fine = ~exceptions | closed_ok | (funnel[target] & (g[target] == want) & (want >= 0))
        update = ok & fine.all(axis=1)
        if (update == funnel).all():
            return funnel, np.where(funnel, g, -1)
        funnel = update


@dataclass(frozen=True)
class Wildcards:
    """The wildcard classes of one constraint on one vocabulary.

    ``chars[k]`` and ``tails[k]`` are the per-token counts of ``wild_chars``
    for class k; ``groups[label]`` is the (class, characters) pair a group
    input label stands for, ``heads[label]`` the (class, first character,
    characters after it) triple of a group spelled by first character;
    ``head_ids`` numbers each such token's first character (``len`` of the
    first characters for the other tokens). ``class_groups[label]`` are the
    tokens of a UTF-8 class group (``utf8classes``), ``class_group_of`` each
    token's group label (0: none); both empty when T_V spells bytes.
    ``lead_groups[label]`` are the tokens of a group spelled by wildcards
    then bytes (same class, leading characters and rest), ``lead_group_of[k]``
    each token's group label for class k (0: none). ``funnel_groups[label]``
    is the (class, characters) pair of the same tokens as a group, spelled
    from a funnel state (``funnel_states``): read where only the tokens that
    leave the state's exceptions follow it, so a token's own arc, where it
    has one, comes first.
    """

    classes: tuple[CharSet, ...]
    chars: tuple[np.ndarray, ...]
    groups: dict[int, tuple[int, int]]
    tails: tuple[np.ndarray, ...] = ()
    head_ids: np.ndarray | None = None
    heads: dict[int, tuple[int, int, int]] = field(default_factory=dict)
    class_groups: dict[int, np.ndarray] = field(default_factory=dict)
    class_group_of: np.ndarray | None = None
    lead_groups: dict[int, np.ndarray] = field(default_factory=dict)
    lead_group_of: np.ndarray | None = None
    funnel_groups: dict[int, tuple[int, int]] = field(default_factory=dict)

    @functools.cached_property
    def _sets(self) -> np.ndarray:
        sets = np.zeros(len(self.chars[0]) if self.chars else 0, dtype=np.int64)
        for k, counts in enumerate(self.chars):
            sets |= (counts > 0).astype(np.int64) << k
        return sets

    @functools.cached_property
    def marks(self) -> frozenset[int]:
        """The class sets S whose marker ``MARK + S`` T_V writes: those some
        token is wild for."""
        return frozenset(set(np.unique(self._sets).tolist()) - {0})

    @functools.cached_property
    def lead_marks(self) -> frozenset[int]:
        """The class sets S whose marker ``LEAD + S`` T_V writes: those some
        token that is wild for none starts in (its lead classes)."""
        if self.lead_group_of is None:
            return frozenset()
        leads = np.zeros_like(self._sets)
        for k, row in enumerate(self.lead_group_of):
            leads |= (row > 0).astype(np.int64) << k
        return frozenset(set(np.unique(leads[self._sets == 0]).tolist()) - {0})

    @functools.cached_property
    def stays(self) -> frozenset[int]:
        """The class sets S whose marker ``STAY + S`` T_V writes (the classes
        a headed token's rest is wild for)."""
        sets = np.zeros(len(self.tails[0]) if self.tails else 0, dtype=np.int64)
        for k, counts in enumerate(self.tails):
            sets |= (counts > 0).astype(np.int64) << k
        return frozenset(set(np.unique(sets).tolist()) - {0})

    def members(self, label: int) -> np.ndarray:
        """The tokens of a UTF-8 class group or a lead group."""
        found = self.class_groups.get(label)
        return found if found is not None else self.lead_groups[label]

    @property
    def utf8_classes(self) -> bool:
        """Whether T_V spells non-ASCII bytes by interval (``utf8classes``)."""
        return self.class_group_of is not None


def wildcard_detokenizer(
    vocab,
    classes,
    chars,
    tails=(),
    first: np.ndarray | None = None,
    utf8_classes: bool = False,
    leads=(),
) -> tuple[pynini.Fst, Wildcards]:
    """T_V with wildcard spellings for the given classes (see the module
    docstring). Token ids in, their spellings out: every spelling leaves the
    root and its last arc reads the token id (or group label) back to the
    root, the only final state; EOS ids write ``END``; other special tokens
    are left out (never allowed). ``chars``/``tails``/``leads`` per class
    from ``wild_chars``, ``first`` from ``first_chars`` (needed when
    ``tails`` are given). ``utf8_classes``: the tokens spelled in plain bytes
    spell non-ASCII bytes by interval instead, in class groups
    (``utf8classes``; only for acceptors where ``utf8classes.uniform``
    holds)."""
    groups: dict[int, tuple[int, int]] = {}
    funnel_groups: dict[int, tuple[int, int]] = {}
    sets = np.zeros(vocab.size, dtype=np.int32)  # per token, the classes it is wild for
    for k, counts in enumerate(chars):
        sets |= (counts > 0).astype(np.int32) << k
    heads_of = np.zeros(vocab.size, dtype=np.int32)  # ... and those its rest is wild for
    for k, counts in enumerate(tails):
        heads_of |= (counts > 0).astype(np.int32) << k
    fst = FstBuilder()
    tries = _Tries()  # the byte tries, built in one piece at the end
    root = fst.add_state()
    fst.set_start(root)
    fst.set_final(root)
    normal = vocab.normal_ids()
    plain = normal[(sets[normal] == 0) & (heads_of[normal] == 0)]
    leads_of = np.zeros(vocab.size, dtype=np.int32)  # plain ones: the classes they start in
    for k, counts in enumerate(leads):
        leads_of[plain] |= (counts[plain] > 0).astype(np.int32) << k
    label = vocab.size + 1  # group labels: after the token ids
    # Plain tokens in bytes: behind ``MARK`` (from the root when there are no
    # classes), or, for those starting with characters of a class, behind the
    # lead marker of those classes (read where none of them is closed:
    # elsewhere the lead spelling below reads them). With classes, every
    # spelling thus starts with a symbol that is not a byte (``STARTS``).
    for s in sorted(set(leads_of[plain].tolist())):
        mine = plain[leads_of[plain] == s].tolist()
        entry = root
        if len(classes):
            entry = fst.add_state()
            fst.add_arc(root, 0, LEAD + s if s else MARK, entry)
        tries.add(entry, vocab, mine, classes=utf8_classes)
    lead_groups: dict[int, np.ndarray] = {}
    lead_group_of = np.zeros((len(classes), vocab.size), dtype=np.int64)
    for k, counts in enumerate(chars):
        lead = leads[k][plain] if k < len(leads) else np.zeros(0, np.int32)
        # the states after 0, 1, … symbols: a wild token of j characters
        # reads its last one back to the root; a lead spelling goes on after j
        chain = _wild_chain(fst, root, WILD + k, int(max(counts.max(), lead.max(initial=0) + 1)))
        for j in np.unique(counts[counts > 0]).tolist():
            fst.add_arc(chain[j - 1], label, WILD + k, root)
            groups[label] = (k, j)
            label += 1
        # the funnel spelling of the same groups: FUNNEL + k, then WILD + k
        funnel = _funnel_chain(fst, root, k, int(counts.max()))
        for j in np.unique(counts[counts > 0]).tolist():
            fst.add_arc(funnel[j - 1], label, WILD + k if j > 1 else FUNNEL + k, root)
            funnel_groups[label] = (k, j)
            label += 1
        found, label = _add_leads(fst, chain, root, vocab, plain[lead > 0], lead[lead > 0], label)
        for group, members in found.items():
            lead_group_of[k, members] = group
        lead_groups.update(found)
    head_ids, heads, codes = None, {}, None
    headed = normal[heads_of[normal] != 0]
    if len(headed):
        codes, inverse = np.unique(first[headed], return_inverse=True)
        head_ids = np.full(vocab.size, len(codes), dtype=np.int32)
        head_ids[headed] = inverse
    # Entries: HEAD for tokens wild for no class; the marker of their class set
    # for wild ones (one-character ones in bytes, the others by head), so that
    # a state closed for one of their classes reads them by wildcards only.
    for s in range(1 << len(classes)):
        ours = normal[sets[normal] == s]
        if not len(ours):
            continue
        entry = fst.add_state()
        fst.add_arc(root, 0, HEAD if s == 0 else MARK + s, entry)
        if s:
            tries.add(entry, vocab, ours[heads_of[ours] == 0].tolist())
        mine = ours[heads_of[ours] != 0]
        if len(mine):
            label = _add_heads(
                fst, tries, entry, root, vocab, mine, head_ids, codes, heads_of, tails, heads, label
            )
    for eos in sorted(vocab.eos_ids):
        fst.add_arc(root, eos + 1, END, root)
    class_groups, label = tries.build(fst, root, label)
    class_group_of = None
    if utf8_classes:
        class_group_of = np.zeros(vocab.size, dtype=np.int64)
        for group, members in class_groups.items():
            class_group_of[members] = group
    wild = Wildcards(
        tuple(classes),
        tuple(chars),
        groups,
        tuple(tails),
        head_ids,
        heads,
        class_groups,
        class_group_of,
        lead_groups,
        lead_group_of if len(classes) else None,
        funnel_groups,
    )
    return fst.fst().connect().arcsort("olabel"), wild


def _wild_chain(fst: FstBuilder, start: int, symbol: int, length: int) -> list[int]:
    """A chain of ε:``symbol`` arcs from ``start``: the states after 0, 1, …,
    ``length - 1`` symbols (``start`` first)."""
    chain = [start]
    for _ in range(length - 1):
        nxt = fst.add_state()
        fst.add_arc(chain[-1], 0, symbol, nxt)
        chain.append(nxt)
    return chain


def _funnel_chain(fst: FstBuilder, root: int, k: int, length: int) -> list[int]:
    """The states after 0, 1, …, ``length - 1`` symbols of a funnel spelling
    of class k: ``FUNNEL + k``, then ``WILD + k``."""
    if length <= 1:
        return [root]
    first = fst.add_state()
    fst.add_arc(root, 0, FUNNEL + k, first)
    return [root, *_wild_chain(fst, first, WILD + k, length - 1)]


def _add_leads(fst, chain, root, vocab, ids, counts, label) -> tuple[dict[int, np.ndarray], int]:
    """Spell the tokens ``ids`` by their ``counts`` leading characters as
    wildcard symbols (to the chain's state after them), then the rest in
    bytes, whose last arc reads a group label per (leading characters,
    rest). Returns the groups (label → tokens) and the next label."""
    spellings: dict[tuple[int, bytes], list[int]] = {}
    for token_id, j in zip(ids.tolist(), counts.tolist(), strict=True):
        data = vocab.token_bytes(token_id)
        rest = data[len(data.decode("utf-8")[:j].encode("utf-8")) :]
        spellings.setdefault((j, rest), []).append(token_id)
    groups: dict[int, np.ndarray] = {}
    nodes: dict[tuple[int, bytes], int] = {}
    for (j, rest), members in spellings.items():
        state = chain[j]
        for i in range(1, len(rest)):
            nxt = nodes.get((j, rest[:i]))
            if nxt is None:
                nxt = nodes[j, rest[:i]] = fst.add_state()
                fst.add_arc(state, 0, rest[i - 1] + 1, nxt)
            state = nxt
        fst.add_arc(state, label, rest[-1] + 1, root)
        groups[label] = np.array(members, dtype=np.int64)
        label += 1
    return groups, label


def _add_heads(
    fst, tries, entry, root, vocab, ids, head_ids, codes, heads_of, tails, heads, label
) -> int:
    """Spell the tokens ``ids`` by head from ``entry``: a trie of first
    characters, then ``STAY`` and the rest in bytes, or ``SWITCH`` and the
    wildcard chain with a group label per (class, first character, rest)
    (recorded in ``heads``, numbered from ``label``). Returns the next label."""
    nodes = {b"": entry}
    per_head = head_ids[ids]
    for h in np.unique(per_head).tolist():
        head = chr(int(codes[h])).encode("utf-8")
        node = _path(fst, nodes, head)
        mine = ids[per_head == h]
        for s in sorted(set(heads_of[mine].tolist())):
            stay = fst.add_state()
            fst.add_arc(node, 0, STAY + s, stay)
            tries.add(stay, vocab, mine[heads_of[mine] == s].tolist(), len(head))
        for k, counts in enumerate(tails):
            rest = counts[mine]  # the rest's lengths, for this first character
            if not rest.any():
                continue
            switch = fst.add_state()
            fst.add_arc(node, 0, SWITCH + k, switch)
            chain = _wild_chain(fst, switch, WILD + k, int(rest.max()))
            for j in np.unique(rest[rest > 0]).tolist():
                fst.add_arc(chain[j - 1], label, WILD + k, root)
                heads[label] = (k, h, j)
                label += 1
    return label


def _path(fst: FstBuilder, nodes: dict[bytes, int], data: bytes) -> int:
    """The state after ``data`` in a byte trie of ε-input arcs (made as needed)."""
    state = nodes[b""]
    for k in range(1, len(data) + 1):
        nxt = nodes.get(data[:k])
        if nxt is None:
            nxt = nodes[data[:k]] = fst.add_state()
            fst.add_arc(state, 0, data[k - 1] + 1, nxt)
        state = nxt
    return state


class _Tries:
    """Spellings collected for ``builder.add_tries``, all going back to the
    root: in bytes, or (``classes``) with non-ASCII bytes by UTF-8 interval,
    tokens of one spelling in one class group (``utf8classes``)."""

    def __init__(self) -> None:
        self.parts: dict[bool, tuple[list[int], list[bytes], list[int]]] = {
            False: ([], [], []),
            True: ([], [], []),
        }

    def add(self, entry: int, vocab, ids, skip: int = 0, classes: bool = False) -> None:
        """Spell the tokens ``ids`` from ``entry``, their first ``skip`` bytes
        already read (at least one remains: normal tokens are not empty)."""
        entries, spellings, labels = self.parts[classes]
        entries.extend([entry] * len(ids))
        spellings.extend(vocab.token_bytes(t)[skip:] for t in ids)
        labels.extend(t + 1 for t in ids)

    def build(self, fst: FstBuilder, root: int, label: int) -> tuple[dict[int, np.ndarray], int]:
        """Add the tries; returns the class groups (label → token ids),
        numbered from ``label``, and the next free label."""
        entries, spellings, labels = self.parts[False]
        if spellings:
            add_tries(fst, np.array(entries), root, spellings, labels)
        entries, spellings, labels = self.parts[True]
        if not spellings:
            return {}, label
        found, label = add_tries(
            fst, np.array(entries), root, spellings, labels, BYTE_LABELS, next_group=label
        )
        tokens = np.array(labels, dtype=np.int64) - 1
        return {g: tokens[at] for g, at in found.items()}, label


def add_wildcard_arcs(
    acceptor: pynini.Fst,
    table: np.ndarray,
    wild: Wildcards,
    exclude: np.ndarray | None,
    extra: tuple[np.ndarray, np.ndarray, np.ndarray] | None,
    chains: dict[CharSet, tuple],
) -> tuple[pynini.Fst, np.ndarray, np.ndarray, np.ndarray]:
    """The byte acceptor with its W arcs (closed states), switch loops
    (states closed in the middle of a token), marker loops (states where
    wild tokens are spelled in bytes) and stay loops (where tokens spelled
    by first character continue in bytes), funnel arcs and copies (below),
    and the ``extra`` (source, label, target) arcs (the UTF-8 interval arcs);
    with, per state, the bit sets of the classes it is closed for where a
    token starts and in the middle of one, and the bit of the class it is a
    funnel for (0: none). At a state in ``exclude`` a marker leads to a copy
    of the state with its byte (and extra) arcs only: the token's bytes
    start right there, and a call or return first is taken before the
    marker instead. Only the markers T_V writes get arcs (``wild.marks``,
    ``wild.lead_marks``, ``wild.stays``); ``chains`` holds each class's
    ``closed_chains``, as chosen.

    A funnel state for class k (``funnel_states``; each state is one for at
    most one class, the one with the most wild tokens) reads ``FUNNEL + k``
    to its default, and the marker of the tokens wild for k goes to its
    *funnel copy*, where their bytes follow exceptions only: a wild token
    gets its own arc there only if it follows exceptions all the way (the
    funnel group's arc, read last, would be wrong for it), and its walk
    ends at once otherwise. A copy reads a token's first symbol as its
    state does (``STARTS``), so a token ending there goes on as from the
    state itself."""
    classes = wild.classes
    n = table.shape[0]
    closed_for = np.zeros(n, dtype=np.int32)
    strict_for = np.zeros(n, dtype=np.int32)
    found: list[tuple[np.ndarray, int | np.ndarray, np.ndarray]] = []
    if extra is not None:
        found.append(extra)
    states = np.arange(n, dtype=np.int64)
    for k, charset in enumerate(classes):
        start, strict, nxt = chains[charset]
        closed_for |= start.astype(np.int32) << k
        strict_for |= strict.astype(np.int32) << k
        q = np.flatnonzero(start & (nxt >= 0))
        found.append((q, WILD + k, nxt[q]))
        q = np.flatnonzero(strict)
        found.append((q, SWITCH + k, q))
    target = states  # where a marker leads: the state, or its bytes-only copy
    copies = 0
    if classes and exclude is not None and exclude.any():
        copied = np.flatnonzero(exclude)
        copies = len(copied)
        target = states.copy()
        target[copied] = n + np.arange(copies)
        rows, cols = np.nonzero(table[copied] >= 0)  # the copies' bytes
        found.append((n + rows, cols + 1, table[copied[rows], cols]))
        if extra is not None:  # and their interval arcs
            mine = exclude[extra[0]]
            found.append((target[extra[0][mine]], extra[1][mine], extra[2][mine]))
    funnel = _Funnels(table, wild, chains, exclude, n + copies)
    found.extend(funnel.arcs())
    if classes:
        found.append((states, HEAD, target))
        found.append((states, MARK, target))
    for s in sorted(wild.marks):
        q = np.flatnonzero((closed_for & s) == 0)
        found.append((q, MARK + s, funnel.marker_targets(q, s, target[q])))
    for s in sorted(wild.lead_marks):
        q = np.flatnonzero((closed_for & s) == 0)
        found.append((q, LEAD + s, target[q]))
    for s in sorted(wild.stays):  # in the middle of a token: calls and returns may follow
        q = np.flatnonzero((strict_for & s) == 0)
        found.append((q, STAY + s, q))
    if not found:
        return acceptor.arcsort("ilabel"), closed_for, strict_for, funnel.bit
    arcs = _concatenated(found)
    if funnel.copies:
        arcs = _concatenated([arcs, *funnel.mirrored(arcs, fst_arcs(acceptor))])
    acceptor = add_arcs(acceptor, copies + funnel.copies, *arcs)
    return acceptor, closed_for, strict_for, funnel.bit


def _concatenated(found) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(source, label, target) arrays of arc groups (a group's label may be one int)."""
    source = np.concatenate([np.asarray(f[0], dtype=np.int64) for f in found])
    label = np.concatenate([np.broadcast_to(f[1], len(f[0])) for f in found])
    dest = np.concatenate([np.asarray(f[2], dtype=np.int64) for f in found])
    return source, label, dest


class _Funnels:
    """The funnel states of an acceptor's classes (``funnel_states``), each
    for at most one class, and their copies (numbered from ``first``): per
    class, the funnel states for it and the exceptions they reach."""

    def __init__(self, table, wild: Wildcards, chains, moving, first: int):
        n = table.shape[0]
        self.klass = np.full(n, -1, dtype=np.int64)  # the class each state is a funnel for
        self.default = np.full(n, -1, dtype=np.int64)
        self.bit = np.zeros(n, dtype=np.int32)
        self.copy_of: dict[int, np.ndarray] = {}  # class → state → its copy (-1: none)
        self.exceptions: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        self.copies = 0
        self.stays = sorted(wild.stays)
        sizes = [int(np.count_nonzero(chars)) for chars in wild.chars]
        for k in sorted(range(len(wild.classes)), key=lambda k: -sizes[k]):
            charset = wild.classes[k]
            funnel, default = funnel_states(table, charset, chains[charset], moving)
            if not funnel.any():
                continue
            ascii_bytes = _ascii_bytes(charset)
            mine = funnel & (self.klass < 0)
            self.klass[mine] = k
            self.default[mine] = default[mine]
            self.bit[mine] = 1 << k
            # every funnel state's exceptions (source, byte, target), then the
            # copy region: the states assigned k and the exceptions they reach
            q = np.flatnonzero(funnel)
            rows, cols = np.nonzero(table[q][:, ascii_bytes] != default[q][:, None])
            src, byte = q[rows], ascii_bytes[cols]
            dst = table[src, byte]
            member = mine.copy()
            while True:
                grown = member.copy()
                grown[dst[member[src]]] = True
                if (grown == member).all():
                    break
                member = grown
            copy_of = np.full(n, -1, dtype=np.int64)
            copy_of[member] = first + self.copies + np.arange(np.count_nonzero(member))
            self.copies += int(np.count_nonzero(member))
            self.copy_of[k] = copy_of
            keep = member[src]
            self.exceptions[k] = (copy_of[src[keep]], byte[keep] + 1, copy_of[dst[keep]])

    def arcs(self) -> list[tuple[np.ndarray, int | np.ndarray, np.ndarray]]:
        """``FUNNEL + k`` from each funnel state to its default; in the copies,
        the exceptions' bytes and the stay loops of tokens spelled by head."""
        found = []
        q = np.flatnonzero(self.klass >= 0)
        found.append((q, FUNNEL + self.klass[q], self.default[q]))
        for k, copy_of in self.copy_of.items():
            found.append(self.exceptions[k])
            mine = copy_of[copy_of >= 0]
            for s in self.stays:
                found.append((mine, STAY + s, mine))
        return found

    def marker_targets(self, q: np.ndarray, s: int, targets: np.ndarray) -> np.ndarray:
        """Where the marker of tokens wild for the classes ``s`` leads from
        the states ``q``: a funnel state's copy if it is a funnel for one of
        them, else ``targets``."""
        out = targets.copy()
        for k, copy_of in self.copy_of.items():
            if s >> k & 1:
                mine = self.klass[q] == k
                out[mine] = copy_of[q[mine]]
        return out

    def mirrored(self, arcs, read) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """The copies' arcs for a token's first symbol: those of their states,
        among ``arcs`` (source, label, target) and the acceptor's own
        (``read``: its ``END`` arcs)."""
        source, label, dest = _concatenated([arcs, (read.source, read.ilabel, read.target)])
        starts = label == END
        for lo, hi in STARTS:
            starts |= (label >= lo) & (label < hi)
        inside = source < len(self.klass)
        source, label, dest = source[starts & inside], label[starts & inside], dest[starts & inside]
        out = []
        for copy_of in self.copy_of.values():
            mine = copy_of[source] >= 0
            out.append((copy_of[source[mine]], label[mine], dest[mine]))
        return out
