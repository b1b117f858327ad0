"""The core's LALR(1) tables against lark's ``LALR_Analyzer`` and against the grammars' languages.

lark builds the same LR(0) automaton and takes DeRemer and Pennello's
lookaheads too, but lets a rule's item in the middle of its body add to the
*includes* relation, so its lookaheads can be a superset of the LALR(1)
ones (a spurious reduction, sometimes a spurious conflict). So the tables
must match lark's state for state (the same shifts and gotos), with every
reduction ours makes also one lark makes, and ours equal to lark's on the
real grammars; a grammar lark builds tables for, we build too; and the
parser driven by our tables accepts exactly the grammar's sentences.
"""

from __future__ import annotations

import itertools
import json

import pytest
from constrain_conformance.corpus import CASES
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lark.common import ParserConf
from lark.exceptions import GrammarError
from lark.grammar import NonTerminal
from lark.grammar import Rule as LarkRule
from lark.grammar import Terminal as LarkTerminal
from lark.parsers.lalr_analysis import LALR_Analyzer, Shift

import constrain_api as ca
from constrain_api.lalr import END, NotLALR, lalr_tables
from constrain_api.lowering import ContextFree, lower
from constrain_api.lr import LRTable
from constrain_api.shared import shared_dir


def lark_actions(rules, terminals, start):
    """lark's tables as ``(actions, start, end)`` in the core's action format."""
    lark_rules = [
        LarkRule(
            NonTerminal(lhs), [LarkTerminal(s) if s in terminals else NonTerminal(s) for s in rhs]
        )
        for lhs, rhs in rules
    ]
    analyzer = LALR_Analyzer(ParserConf(lark_rules, {}, [start]), strict=True)
    analyzer.compute_lalr()
    table = analyzer.parse_table
    actions = {
        state: {
            sym: (True, arg) if act is Shift else (False, (arg.origin.name, len(arg.expansion)))
            for sym, (act, arg) in row.items()
        }
        for state, row in table.states.items()
    }
    return actions, table.start_states[start], table.end_states[start]


def matched_states(ours, theirs) -> dict[int, int]:
    """Walk both tables from their start states in step: the same symbols
    shift or go to states that correspond one to one, every reduction of
    ours is also lark's; returns lark's state → ours (every state met)."""
    actions, start, end = theirs
    pairs = {start: ours.start}
    todo = [start]
    while todo:
        a = todo.pop()
        b = pairs[a]
        lark_row, our_row = actions[a], ours.actions[b]
        lark_shifts = {s: x for s, (shift, x) in lark_row.items() if shift}
        our_shifts = {s: x for s, (shift, x) in our_row.items() if shift}
        assert set(lark_shifts) == set(our_shifts), (a, b)
        for s, x in lark_shifts.items():
            if x in pairs:
                assert pairs[x] == our_shifts[s], (a, s)
            else:
                pairs[x] = our_shifts[s]
                todo.append(x)
        for s, (shift, x) in our_row.items():
            if not shift:
                assert lark_row.get(s) == (False, x), (a, s, x)
    assert len(set(pairs.values())) == len(pairs) == len(actions) == len(ours.actions)
    assert pairs[end] == ours.end
    return pairs


def assert_same_tables(rules, terminals, start) -> None:
    theirs = lark_actions(rules, terminals, start)
    ours = lalr_tables(rules, terminals, start)
    pairs = matched_states(ours, theirs)
    back = {b: a for a, b in pairs.items()}
    for a, b in pairs.items():  # on real grammars not one lookahead more or less
        assert theirs[0][a] == {
            s: (shift, back[x] if shift else x) for s, (shift, x) in ours.actions[b].items()
        }


def grammar_rules(spec: ca.Constraint):
    language = lower(spec)
    assert isinstance(language, ContextFree)
    ir = language.ir
    return [(r.lhs, tuple(r.rhs)) for r in ir.rules], set(ir.terminals), ir.start


@pytest.mark.parametrize("case", [c for c in CASES if c.family == "grammar"], ids=lambda c: c.name)
def test_the_corpus_grammars_get_lark_s_tables(case):
    assert_same_tables(*grammar_rules(case.spec))


def _maskbench_grammars(every: int = 40):
    base = shared_dir()
    folder = None if base is None else base / "maskbench" / "data"
    if folder is None or not folder.is_dir():
        return []
    out = []
    for path in sorted(folder.glob("*.json"))[::every]:
        try:
            language = lower(ca.JsonSchema(json.loads(path.read_text())["schema"]))
        except (ca.UnsupportedConstraint, ca.CompileLimitExceeded, ca.ConstraintError):
            continue
        if isinstance(language, ContextFree):
            out.append((path.stem, language.ir))
    return out


def test_lowered_json_schema_grammars_get_lark_s_tables():
    grammars = _maskbench_grammars()
    if not grammars:
        pytest.skip("MaskBench data not found under $CONSTRAIN_SHARED")
    assert len(grammars) >= 15
    for _, ir in grammars:
        assert_same_tables([(r.lhs, tuple(r.rhs)) for r in ir.rules], set(ir.terminals), ir.start)


# ------------------------------------------------------------- random grammars

TERMINALS = ("X", "Y", "Z")
NONTERMINALS = ("start", "a", "b", "c")


@st.composite
def grammars(draw):
    names = NONTERMINALS[: draw(st.integers(1, 4))]
    symbols = st.sampled_from(names + TERMINALS)
    rules = set()
    for lhs in names:
        for body in draw(st.lists(st.lists(symbols, max_size=3), min_size=1, max_size=3)):
            rules.add((lhs, tuple(body)))
    return sorted(rules)


def sentences(rules, start: str, length: int) -> frozenset[tuple[str, ...]]:
    """The grammar's sentences of at most ``length`` terminals (a fixpoint
    over the rules, every string cut at ``length``)."""
    derived: dict[str, set[tuple[str, ...]]] = {lhs: set() for lhs, _ in rules}
    changed = True
    while changed:
        changed = False
        for lhs, rhs in rules:
            found = {()}
            for s in rhs:
                options = derived.get(s, {(s,)})
                found = {x + y for x in found for y in options if len(x) + len(y) <= length}
            if not found <= derived[lhs]:
                derived[lhs] |= found
                changed = True
    return frozenset(derived.get(start, ()))


def productive(rules) -> bool:
    """Whether every non-terminal derives some string (as the core's
    callers guarantee: they build tables of reduced grammars)."""
    return all(sentences(rules, lhs, 8) for lhs in {lhs for lhs, _ in rules})


def accepts(table: LRTable, text: tuple[str, ...]) -> bool:
    stack = table.start
    for t in text:
        stack = table.feed(stack, t)
        if stack is None:
            return False
    return table.accepts_end(stack)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(grammars())
def test_random_grammars_against_lark_and_their_language(rules):
    try:
        theirs = lark_actions(rules, set(TERMINALS), "start")
    except GrammarError:
        theirs = None
    try:
        ours = lalr_tables(rules, set(TERMINALS), "start")
    except NotLALR:
        assert theirs is None, "lark built tables for a grammar we refuse"
        return
    if theirs is not None:
        matched_states(ours, theirs)
    if not productive(rules):
        return
    table = LRTable(rules, set(TERMINALS), "start")
    language = sentences(rules, "start", 5)
    for n in range(6):
        for text in itertools.product(TERMINALS, repeat=n):
            assert accepts(table, text) is (text in language), text


def test_lark_s_extra_lookahead_is_not_ours():
    """After ``Y`` only ``a → Y . c`` predicts ``c → ε`` (its ``a`` followed by
    ``Z``); lark also lets ``b → Y . a``'s follow (the end) in. Our state
    reduces on ``Z`` only; lark's on ``Z`` and the end."""
    rules = [
        ("a", ("Y", "c")),
        ("b", ("Y", "a")),
        ("c", ()),
        ("start", ("a", "Z")),
        ("start", ("b",)),
    ]
    ours = lalr_tables(rules, {"Y", "Z"}, "start")
    theirs = lark_actions(rules, {"Y", "Z"}, "start")
    pairs = matched_states(ours, theirs)
    after_y = ours.actions[ours.actions[ours.start]["Y"][1]]
    assert after_y["Z"] == (False, ("c", 0)) and END not in after_y
    lark_after_y = theirs[0][theirs[0][theirs[1]]["Y"][1]]
    assert lark_after_y[END] == (False, ("c", 0))
    assert pairs  # (the automata correspond state for state)


@pytest.mark.parametrize(
    ("rules", "reason"),
    [
        ([("start", ("x",)), ("start", ("y",)), ("x", ("A",)), ("y", ("A",))], "Reduce/Reduce"),
        ([("start", ("x", "B")), ("x", ("A",)), ("x", ("A", "B", "B"))], "Shift/Reduce"),
        ([("start", ("A",)), ("start", ("A",))], "given twice"),
        ([("start", ("x",))], "no terminal and no rule"),
        ([("x", ("A",))], "start symbol"),
    ],
)
def test_what_has_no_tables_is_refused_with_the_reason(rules, reason):
    with pytest.raises(NotLALR, match=reason):
        lalr_tables(rules, {"A", "B"}, "start")


def test_any_name_is_a_symbol_even_the_added_root_s():
    """The added root rule is reached by no name: a non-terminal called
    ``$root`` is one like any other."""
    rules = [("$root", ("A", "$root")), ("$root", ("B",))]
    table = LRTable(rules, {"A", "B"}, "$root")
    assert accepts(table, ("A", "A", "B")) and not accepts(table, ("A",))
    assert_same_tables(rules, {"A", "B"}, "$root")


def test_deep_grammars_need_no_recursion():
    """The lookahead relations are walked without Python recursion: a chain
    of 3,000 non-terminals (past the interpreter's recursion limit) builds.
    ``a_i → B a_{i+1} | A``: the sentences are ``B``s then ``A``."""
    depth = 3000
    rules = [("start", ("a0",))]
    for i in range(depth):
        rules += [(f"a{i}", ("B", f"a{i + 1}")), (f"a{i}", ("A",))]
    rules.append((f"a{depth}", ("A",)))
    table = LRTable(rules, {"A", "B"}, "start")
    assert accepts(table, ("B",) * depth + ("A",))
    assert not accepts(table, ("B",) * (depth + 1) + ("A",))
    assert not accepts(table, ("B", "B"))


# ------------------------------------------------- conflicts kept (general mode)


def accepts_general(table: LRTable, text: tuple[str, ...]) -> bool:
    stacks = {table.start}
    for t in text:
        stacks = {fed for stack in stacks for fed in table.feed_all(stack, t)}
    return any(table.accepts_end(stack) for stack in stacks)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(grammars())
def test_random_grammars_with_conflicts_kept_accept_their_language(rules):
    """Tables that keep their conflicts, driven along every action, accept
    exactly the grammar's sentences, ambiguous grammars included, and reach
    some stack after every prefix of a sentence; a grammar whose tables have
    no conflicts gets the same tables as without ``conflicts=True``; only
    hidden left recursion is refused (and never a grammar without conflicts)."""
    try:
        plain = lalr_tables(rules, set(TERMINALS), "start")
    except NotLALR:
        plain = None
    try:
        kept = lalr_tables(rules, set(TERMINALS), "start", conflicts=True)
    except NotLALR as e:
        assert "hidden left recursion" in str(e) and plain is None
        return
    if plain is not None:
        assert kept == plain and not kept.conflicts
    else:
        assert kept.conflicts
    if not productive(rules):
        return
    table = LRTable(rules, set(TERMINALS), "start", general=True)
    language = sentences(rules, "start", 6)
    for n in range(5):
        for text in itertools.product(TERMINALS, repeat=n):
            assert accepts_general(table, text) is (text in language), text
    for sentence in language:
        stacks = {table.start}
        for t in sentence:
            stacks = {fed for stack in stacks for fed in table.feed_all(stack, t)}
            assert stacks, sentence


def test_kept_conflicts_list_every_action_shift_first():
    # start → x | y; x → A; y → A; z-free: reduce/reduce on the end
    rules = [("start", ("x",)), ("start", ("y",)), ("x", ("A",)), ("y", ("A",))]
    tables = lalr_tables(rules, {"A"}, "start", conflicts=True)
    ((state, row),) = tables.conflicts.items()
    assert row == {END: ((False, ("x", 1)), (False, ("y", 1)))}
    assert tables.actions[state][END] == (False, ("x", 1))
    # start → x B; x → A | A B B: shift B, or reduce x → A
    rules = [("start", ("x", "B")), ("x", ("A",)), ("x", ("A", "B", "B"))]
    tables = lalr_tables(rules, {"A", "B"}, "start", conflicts=True)
    ((state, row),) = tables.conflicts.items()
    ((first, reduce),) = row.values()
    assert first[0] is True and reduce == (False, ("x", 1))
    table = LRTable(rules, {"A", "B"}, "start", general=True)
    assert not table.deterministic and table.num_conflicts == 1
    assert accepts_general(table, ("A", "B")) and accepts_general(table, ("A", "B", "B", "B"))
    assert not accepts_general(table, ("A", "B", "B"))
    assert table.expected(table.feed_all(table.start, "A")[0]) == {"B"}
    with pytest.raises(ValueError, match="feed_all"):
        table.feed(table.start, "A")


def test_hidden_left_recursion_is_refused_with_conflicts_kept():
    """``start → n start C | D``, ``n → ε``: after ``D`` a parser following
    every action could reduce ``n → ε`` any number of times (one per ``C``
    still to come): refused, naming it, rather than looping."""
    rules = [("start", ("n", "start", "C")), ("start", ("D",)), ("n", ())]
    with pytest.raises(NotLALR, match=r"Shift/Reduce|Reduce/Reduce"):
        lalr_tables(rules, {"C", "D"}, "start")
    with pytest.raises(NotLALR, match="hidden left recursion: start -> n start C"):
        lalr_tables(rules, {"C", "D"}, "start", conflicts=True)
    with pytest.raises(ca.UnsupportedConstraint, match="hidden left recursion") as e:
        ca.lalr_table(rules, {"C", "D"}, "start", backend="test", general=True)
    assert e.value.backend == "test" and "conflicts and hidden" in e.value.construct
    with pytest.raises(ca.UnsupportedConstraint, match="given twice") as e:  # (not that)
        ca.lalr_table([("start", ("C",))] * 2, {"C"}, "start", backend="test", general=True)
    assert e.value.construct == "a grammar that is not LALR(1)"
    # plain left recursion is no such thing: start → start C | D, ambiguous besides
    rules = [
        ("start", ("start", "C")),
        ("start", ("D",)),
        ("start", ("start", "C", "n")),
        ("n", ()),
    ]
    table = LRTable(rules, {"C", "D"}, "start", general=True)
    assert not table.deterministic
    assert accepts_general(table, ("D", "C", "C")) and not accepts_general(table, ("C",))


def test_a_feed_exploring_too_many_parses_stops(monkeypatch):
    """``sᵢ → e sᵢ₊₁ | f sᵢ₊₁`` (``e``, ``f`` empty), ``sₖ → A``: before
    ``A`` every choice of the k empty symbols is a parse with a stack of its
    own, 2^k of them. Past ``MAX_STACKS`` the feed raises
    ``CompileLimitExceeded`` instead of exploring them all."""
    import constrain_api.lr as lr

    k = 8
    rules = [("start", ("s0",)), (f"s{k}", ("A",)), ("e", ()), ("f", ())]
    for i in range(k):
        rules += [(f"s{i}", ("e", f"s{i + 1}")), (f"s{i}", ("f", f"s{i + 1}"))]
    table = LRTable(rules, {"A"}, "start", general=True)
    fed = table.feed_all(table.start, "A")
    assert len(fed) == 2**k and all(table.accepts_end(stack) for stack in fed)
    monkeypatch.setattr(lr, "MAX_STACKS", 64)
    table = LRTable(rules, {"A"}, "start", general=True)
    with pytest.raises(ca.CompileLimitExceeded, match="lr_stacks=64"):
        table.feed_all(table.start, "A")
