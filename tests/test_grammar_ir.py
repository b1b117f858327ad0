"""The core's grammar IR: terminals as byte DFAs, errors naming the terminal."""

from __future__ import annotations

import pytest

import constrain_api as ca


def test_terminal_dfas_keep_every_terminal():
    ir = ca.lower_grammar(ca.Grammar('start: A B? C\nA: /a*/\nB: /[^\\x00-\\U0010ffff]/\nC: "c"'))
    dfas = ir.terminal_dfas()
    assert set(dfas) == {"A", "B", "C"}
    assert dfas["A"].accepts_empty() and dfas["B"].is_empty()
    assert dfas["C"].matches(b"c") and not dfas["C"].matches(b"cc")


def test_terminal_dfas_name_the_terminal_over_the_bound():
    ir = ca.lower_grammar(ca.Grammar("start: BIG\nBIG: /(a|b)*a(a|b){12}/"))
    with pytest.raises(ca.CompileLimitExceeded, match="terminal BIG"):
        ir.terminal_dfas(max_states=500)
    assert ir.terminal_dfas()["BIG"].num_states > 500


def test_regex_ast_spells_what_the_text_spells_where_the_node_intersects():
    """A terminal whose node is an intersection its pattern spells as a union
    (the JSON-schema lowering's length-bounded patterns) gives printers the
    pattern's AST, of the same strings; a node without intersection, a
    pattern only (lark's terminals) and an opaque piece (no regex text) give
    ``ast()``."""
    from constrain_api.automata import ByteDFA, Intersect, has_lookaround, parse_regex

    node = Intersect(parse_regex("[a-c]*b[a-c]*"), parse_regex(".{2}"))
    terminal = ca.Terminal("T", "b[a-c]|[a-c]b", node=node)
    assert has_lookaround(terminal.ast()) and not has_lookaround(terminal.regex_ast())
    assert ByteDFA.from_node(terminal.regex_ast()).same_language(ByteDFA.from_node(node))
    plain = ca.Terminal("P", "ab+")
    assert plain.regex_ast() == plain.ast() == parse_regex("ab+")
    opaque = ca.Terminal("O", "(?P=automaton_0123)", node=node)
    assert opaque.regex_ast() is node
