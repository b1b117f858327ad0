"""``regular_node``: the AST of a regular constraint, or a refusal in the backend's name."""

from __future__ import annotations

import pytest

import constrain_api as ca
from constrain_api.automata import ByteDFA, regular_node


def _language(spec) -> ByteDFA:
    return ByteDFA.from_node(regular_node(spec, backend="mine"))


def test_regex_choice_and_regular_schema():
    assert _language(ca.Regex("a[bc]")).matches(b"ac")
    choice = _language(ca.Choice(["New York", "Newark", "ü"]))
    assert all(choice.matches(s.encode()) for s in ("New York", "Newark", "ü"))
    assert not choice.matches(b"New")
    schema = _language(ca.JsonSchema({"enum": ["x", 1]}))
    assert schema.matches(b'"x"') and schema.matches(b"1") and not schema.matches(b"x")


@pytest.mark.parametrize(
    ("spec", "construct"),
    [
        (ca.Regex(r"(a)\1"), "backreference"),
        (ca.Grammar('start: "a"'), "grammar"),
        (ca.Where("len(x) < 3"), "where"),
        (ca.JsonSchema({"type": "array", "items": {"$ref": "#"}}), "grammar"),
    ],
)
def test_refusals_name_the_backend(spec, construct):
    with pytest.raises(ca.UnsupportedConstraint, match="mine") as info:
        regular_node(spec, backend="mine")
    assert construct in str(info.value)
