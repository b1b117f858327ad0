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
