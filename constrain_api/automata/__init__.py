"""Byte-level automata shared by the backends: one regex parser, one DFA builder.

* ``parse_regex`` (``regex``): a pattern → a small public AST (``CharSet``,
  ``Literal``, ``Seq``, ``Alt``, ``Repeat``, ``Empty``, and ``Intersect``/
  ``Difference`` for lookarounds) with the full-match semantics of Python
  ``re``; ``quantifier_modes``: whether its quantifiers are lazy or greedy.
* ``utf8_sequences`` (``utf8``): code-point sets → UTF-8 byte-range sequences.
* ``ByteDFA`` (``dfa``): deterministic automata over bytes — from a regex, an
  AST, strings; products, difference, complement; minimization; the
  shortest-match (prefix-free) reduction; ``byte_segments``: the pieces a
  state's edges cut the byte line into (a subset construction's step).
* ``LazyDFA`` (``lazy``): the same subset construction, one state at a time
  as a walk asks for it (not minimized); ``regex_automaton`` picks it or an
  already built ``ByteDFA``.

``code_digest``: a digest of this package's source, for keys of what is
stored about its automata and terms (``LazyDFA.state_digest``).

It knows regexes and automata only: which constraint becomes which automaton
is ``constrain_api.lowering``'s business (it imports this, never the reverse).
"""

import functools
import hashlib
import os
from pathlib import Path

from .dfa import DEFAULT_MAX_STATES, ByteDFA, byte_segments, check_nfa_size, nfa_limit
from .elimination import char_edges, dfa_to_node, dfa_to_regex
from .lazy import LazyDFA, TermTable, has_string, regex_automaton
from .printer import to_regex
from .regex import (
    MAX_CODE_POINT,
    Alt,
    CharSet,
    Difference,
    Empty,
    Intersect,
    Literal,
    Node,
    Repeat,
    Seq,
    alt,
    has_lookaround,
    nullable,
    parse_regex,
    quantifier_modes,
    repeat,
    seq,
)
from .utf8 import ByteRangeSeq, utf8_sequences

__all__ = [
    "DEFAULT_MAX_STATES",
    "MAX_CODE_POINT",
    "Alt",
    "ByteDFA",
    "ByteRangeSeq",
    "CharSet",
    "Difference",
    "Empty",
    "Intersect",
    "LazyDFA",
    "Literal",
    "Node",
    "Repeat",
    "Seq",
    "TermTable",
    "alt",
    "byte_segments",
    "char_edges",
    "check_nfa_size",
    "code_digest",
    "dfa_to_node",
    "dfa_to_regex",
    "has_lookaround",
    "has_string",
    "nfa_limit",
    "nullable",
    "parse_regex",
    "quantifier_modes",
    "regex_automaton",
    "repeat",
    "seq",
    "to_regex",
    "utf8_sequences",
]


@functools.cache
def code_digest() -> bytes:
    """A digest of this package's source files: what gives its terms,
    digests and automata their meaning. A key for anything stored about
    them outside the process: a change to the code makes it a miss. Where
    the sources cannot be read (a zipped or frozen install), a digest of
    this process alone: what is stored is then never found by another."""
    h = hashlib.sha256()
    try:
        sources = sorted(Path(__file__).parent.glob("*.py"))
        for path in sources:
            h.update(path.name.encode() + b"\0" + path.read_bytes())
    except OSError:
        sources = []
    if not sources:
        h.update(os.urandom(32))
    return h.digest()
