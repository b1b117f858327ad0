"""``first_and_follow`` against lark's ``calculate_sets`` (the textbook fixed
point, over lark's own rule objects) on random grammars, the suite's
grammars and lowered JSON schemas, and on grammars deeper than recursion."""

from __future__ import annotations

from constrain_conformance.corpus import CASES
from hypothesis import HealthCheck, given, settings
from lark.grammar import NonTerminal
from lark.grammar import Rule as LarkRule
from lark.grammar import Terminal as LarkTerminal
from lark.parsers.grammar_analysis import calculate_sets
from test_lalr import TERMINALS, grammars  # (random grammars over three terminals)

import constrain_api as ca
from constrain_api.lowering import ContextFree, lower


def named(bits: int, terminals) -> set[str]:
    return {t for i, t in enumerate(terminals) if bits >> i & 1}


def lark_sets(rules, terminals, start) -> tuple[set[str], dict[str, set[str]]]:
    """lark's FIRST of ``start`` and FOLLOW of each terminal, by name."""
    lark_rules = [
        LarkRule(
            NonTerminal(lhs), [LarkTerminal(s) if s in terminals else NonTerminal(s) for s in rhs]
        )
        for lhs, rhs in rules
    ]
    first, follow, _ = calculate_sets(lark_rules)
    begins = {s.name for s in first.get(NonTerminal(start), ())}
    after = {t: {s.name for s in follow.get(LarkTerminal(t), ())} for t in terminals}
    return begins, after


def assert_like_lark(rules, terminals, start) -> None:
    terminals = list(terminals)
    first, follows = ca.first_and_follow(rules, terminals, start)
    begins, after = lark_sets(rules, set(terminals), start)
    assert named(first, terminals) == begins
    assert len(follows) == len(terminals)
    assert {t: named(bits, terminals) for t, bits in zip(terminals, follows, strict=True)} == after


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(grammars())
def test_random_grammars_get_lark_s_sets(rules):
    assert_like_lark(rules, TERMINALS, "start")


def test_the_suite_s_and_lowered_json_schemas_grammars_get_lark_s_sets():
    specs = [c.spec for c in CASES if c.family == "grammar"]
    specs.append(
        ca.JsonSchema(
            {
                "type": "object",
                "properties": {
                    "a": {"type": "integer"},
                    "b": {"$ref": "#"},
                    "c": {"type": "array", "items": {"$ref": "#"}},
                },
            }
        )
    )
    checked = 0
    for spec in specs:
        language = lower(spec)
        if not isinstance(language, ContextFree):
            continue
        ir = language.ir
        assert_like_lark([(r.lhs, tuple(r.rhs)) for r in ir.rules], list(ir.terminals), ir.start)
        checked += 1
    assert checked >= 5


def test_a_symbol_no_rule_defines_derives_nothing():
    rules = [("start", ("a", "X")), ("start", ("Y",)), ("a", ("undefined", "Z"))]
    first, follows = ca.first_and_follow(rules, ["X", "Y", "Z"], "start")
    assert named(first, "XYZ") == {"Y"}
    assert [named(b, "XYZ") for b in follows] == [set(), set(), {"X"}]
    assert ca.first_and_follow(rules, ["X"], "nowhere")[0] == 0


def test_long_chains_of_optional_parts_need_no_recursion():
    """``m_i → X_i m_{i+1} | m_{i+1}``: 3,000 optional members in a row
    (the shape of a large object's optional properties), past the
    interpreter's recursion limit; every member can follow every earlier one."""
    depth = 3000
    terminals = [f"X{i}" for i in range(depth)] + ["END"]
    rules = [("start", ("m0",))]
    for i in range(depth):
        rules += [(f"m{i}", (f"X{i}", f"m{i + 1}")), (f"m{i}", (f"m{i + 1}",))]
    rules.append((f"m{depth}", ("END",)))
    first, follows = ca.first_and_follow(rules, terminals, "start")
    assert first == (1 << (depth + 1)) - 1  # any member, or the end, comes first
    for i in (0, 1, depth // 2, depth - 1):
        assert follows[i] == ((1 << (depth + 1)) - 1) & ~((1 << (i + 1)) - 1)
    assert follows[depth] == 0
