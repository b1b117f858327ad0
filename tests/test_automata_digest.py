"""Digests of lazy automata's states and of built automata: keys for what
is stored outside the process (``LazyDFA.state_digest``, ``ByteDFA.digest``,
``code_digest``). Equal digests must mean equal languages; the same state
must get the same digest in another table and in another process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from constrain_api.automata import ByteDFA, LazyDFA, TermTable, code_digest, parse_regex

PATTERNS = [
    r'"(?:[^"\\]|\\["\\nt])*"',
    r"[a-z]{0,12}x",
    r"(?:ab|cd)*e",
    r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?",
    r"(?:true|false|null)",
    r"\{(?:\"a\":[0-9]+)?(?:,\"b\":[0-9]+)?\}",
    r"[a-z]{2}[a-z]*(?<!ab)",
    r"(?=[a-c]{2})[a-z]{2,3}",
    r"é|ü[0-9]{2}",
]


def _states(pattern: str, terms: TermTable | None = None) -> LazyDFA:
    dfa = LazyDFA(parse_regex(pattern), terms=terms)
    return dfa.complete()


def _sub_language(dfa: LazyDFA, state: int) -> ByteDFA:
    """The language read from ``state``, as a minimal built automaton."""
    table = np.array([dfa.rows[q] for q in range(dfa.num_states)], dtype=np.int32)
    return ByteDFA(table, np.array(dfa.accept, dtype=bool), state).minimize()


def _digests_by_path(dfa: LazyDFA) -> dict[bytes, str]:
    """Each state's digest, by the shortest byte path to it (first in byte order)."""
    found, todo = {b"": dfa.start}, [b""]
    for path in todo:
        for lo, _hi, q in dfa.runs_of(found[path]):
            step = path + bytes([lo])
            if q not in found.values():
                found[step] = q
                todo.append(step)
    return {path: dfa.state_digest(q).hex() for path, q in found.items()}


def test_equal_digests_mean_equal_languages():
    """Over the states of several patterns (in one table, so equal
    remainders are one term): states with one digest read one language.
    (Not the converse: states with other terms of one language, which the
    lazy automaton does not merge, have other digests; a miss, not a
    wrong hit.)"""
    table = TermTable()
    automata = [_states(p, table) for p in PATTERNS]
    by_digest: dict[bytes, list[tuple[LazyDFA, int]]] = {}
    for dfa in automata:
        for q in range(dfa.num_states):
            by_digest.setdefault(dfa.state_digest(q), []).append((dfa, q))
    shared = [group for group in by_digest.values() if len(group) > 1]
    assert shared  # (states of different patterns meet: the end of a string, a digit run)
    for group in shared:
        first = _sub_language(*group[0])
        for dfa, q in group[1:]:
            assert _sub_language(dfa, q).same_language(first)


def test_the_same_state_has_the_same_digest_in_another_table():
    for pattern in PATTERNS:
        one = _digests_by_path(_states(pattern))
        # another table that made other terms first, the options of the
        # patterns' alternations in the other order (ids differ, and so
        # does the order a set of them iterates in)
        table = TermTable()
        for primer in (r"[x-z]{3}(?:q|r)*", r"(?:null|false|true)", r"(?:cd|ab)", r"ü|é"):
            _states(primer, table)
        two = _digests_by_path(_states(pattern, table))
        assert one == two, pattern


def test_a_state_digest_tells_accepting_and_shortest_apart():
    whole = LazyDFA(parse_regex("ab|abc"))
    shortest = LazyDFA(parse_regex("ab|abc"), shortest=True)
    assert whole.state_digest(whole.start) != shortest.state_digest(shortest.start)
    # the start state made apart from the empty string does not accept
    with_empty = LazyDFA(parse_regex("(?:ab)*"))
    without = LazyDFA(parse_regex("(?:ab)*"), without_empty=True)
    assert with_empty.accept[with_empty.start] and not without.accept[without.start]
    assert with_empty.state_digest(with_empty.start) != without.state_digest(without.start)


def test_counts_and_classes_change_the_digest():
    assert _digests_by_path(_states("[a-z]{0,3}")) != _digests_by_path(_states("[a-z]{0,4}"))
    assert _digests_by_path(_states("[a-y]+")) != _digests_by_path(_states("[a-z]+"))
    assert _digests_by_path(_states("ab")) != _digests_by_path(_states("ba"))


_SCRIPT = textwrap.dedent(
    """
    import json, sys
    from constrain_api.automata import LazyDFA, parse_regex
    sys.path.insert(0, {here!r})
    from test_automata_digest import PATTERNS, _digests_by_path, _states
    out = {{p: {{k.hex(): v for k, v in _digests_by_path(_states(p)).items()}} for p in PATTERNS}}
    print(json.dumps(out, sort_keys=True))
    """
)


@pytest.mark.parametrize("seed", ["1", "2"])
def test_digests_are_the_same_in_another_process(seed):
    """Another process (another string-hash seed, so sets iterate in
    another order) gives every state the same digest."""
    here = os.path.dirname(os.path.abspath(__file__))
    env = {**os.environ, "PYTHONHASHSEED": seed}
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT.format(here=here)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    theirs = json.loads(done.stdout)
    ours = {p: {k.hex(): v for k, v in _digests_by_path(_states(p)).items()} for p in PATTERNS}
    assert theirs == ours


def test_built_automata_digests():
    a, b = ByteDFA.from_regex("ab|cd"), ByteDFA.from_regex("cd|ab")
    assert a.digest() == b.digest()  # (minimal, canonically numbered: one automaton)
    assert a.digest() != ByteDFA.from_regex("ab|ce").digest()
    shifted = ByteDFA(a.table, a.accepting, a.start)
    assert shifted.digest() == a.digest()


def test_code_digest(monkeypatch):
    assert code_digest() == code_digest() and len(code_digest()) == 32
    # sources that cannot be read: a digest of each call's own (never
    # found again), not one shared by every version
    from pathlib import Path

    monkeypatch.setattr(Path, "glob", lambda self, pattern: iter(()))
    unread = code_digest.__wrapped__
    assert unread() != unread() and code_digest() not in (unread(), unread())


def test_a_terms_digest_does_not_depend_on_the_ids_of_its_parts():
    """Alternations and products are sets of terms: the same set, made in
    another order in another table (other ids, another iteration order),
    has the same digest."""
    one, two = TermTable(), TermTable()
    one.limit = two.limit = 1000
    ranges = [(97, 97), (98, 99), (100, 120), (48, 57), (65, 70)]
    made_one = [one.seq(one.byte_range(*r), one.byte_range(33, 33)) for r in ranges]
    made_two = [two.seq(two.byte_range(*r), two.byte_range(33, 33)) for r in reversed(ranges)]
    made_two.reverse()
    assert [one.digest(t) for t in made_one] == [two.digest(t) for t in made_two]
    assert made_one != made_two  # (the ids do differ)
    assert one.digest(one.alt(set(made_one))) == two.digest(two.alt(set(made_two)))
    left1, right1 = frozenset(made_one[:3]), frozenset(made_one[2:])
    left2, right2 = frozenset(made_two[:3]), frozenset(made_two[2:])
    for op in ("and", "minus"):
        p1, p2 = one.product(op, left1, right1), two.product(op, left2, right2)
        assert p1 is not None and p2 is not None
        assert one.digest(p1) == two.digest(p2)
    assert one.digest(one.alt(set(made_one[:2]))) != one.digest(one.alt(set(made_one[1:3])))
