"""The core's lowering on large inputs, first time (the core's caches cleared
each round): a 10,000-string ``enum`` (its lowering was quadratic: 21 s,
issue 27), a 500-option ``Choice``, and strings of a format or pattern under a
length bound whose cut is past its budget (then the intersection: 17-38 ms
each before the cut paid for its loops up front, in 12 MaskBench schemas), and
30 open objects' other member names (a trie's piece per object). Run with
``pytest benchmarks/bench_lowering.py --benchmark-only``.
"""

from __future__ import annotations

import pytest

import constrain_api as ca

ENUM = [f"value-{i}-{i * 7919 % 1000}" for i in range(10_000)]


def _cleared():
    ca.clear_caches()
    return (), {}


@pytest.mark.parametrize("size", [1_000, 10_000])
def test_lower_a_large_enum(benchmark, size):
    spec = ca.JsonSchema({"enum": ENUM[:size]})
    lowered = benchmark.pedantic(lambda: ca.lower(spec), setup=_cleared, rounds=3)
    assert lowered.node is not None  # a regular language: one alternation


def test_lower_a_large_choice(benchmark):
    spec = ca.Choice(ENUM[:500])
    lowered = benchmark.pedantic(lambda: ca.lower(spec).dfa(), setup=_cleared, rounds=3)
    assert lowered.matches(ENUM[0].encode()) and not lowered.matches(b"value-")


#: Strings under a length bound the regex cannot print within its budget,
#: as four and six MaskBench schemas write them.
LENGTH_CUTS = {
    "email-maxLength-1024": {"type": "string", "format": "email", "maxLength": 1024},
    "colon-pattern-maxLength-146": {
        "type": "string",
        "pattern": "^([a-z0-9-]+):([a-z0-9\\.-]+):([a-z0-9-]+)?:([a-z0-9-]+)$",
        "maxLength": 146,
    },
}


def _spec_cleared():
    from constrain_api.caching import SPEC_CACHES
    from constrain_api.jsonschema import formats

    formats.build_formats()  # (built once per process by a compiler's set-up)
    ca.clear_caches(*SPEC_CACHES)
    return (), {}


@pytest.mark.parametrize("name", LENGTH_CUTS)
def test_lower_a_string_under_a_length_bound(benchmark, name):
    from constrain_api.automata.regex import has_lookaround

    spec = ca.JsonSchema(LENGTH_CUTS[name])
    lowered = benchmark.pedantic(lambda: ca.lower(spec), setup=_spec_cleared, rounds=7)
    assert has_lookaround(lowered.node)  # the intersection: the cut did not fit


#: 30 open objects of 6 declared members each (names as real schemas spell
#: them): each object's other members are the strings but its own names,
#: a piece built from the names' trie (16 % of a MaskBench schema's time to
#: first mask on domino, before it took one walk of the trie for AST and text).
_WORDS = [
    "name",
    "id",
    "type",
    "description",
    "value",
    "kind",
    "apiVersion",
    "metadata",
    "spec",
    "status",
    "labels",
    "annotations",
    "namespace",
    "items",
    "version",
    "title",
    "enabled",
    "count",
    "url",
    "path",
    "port",
    "host",
    "timeout",
    "retries",
    "image",
    "command",
    "args",
    "env",
    "volumes",
    "mounts",
    "selector",
    "replicas",
]
OPEN_OBJECTS = {
    "type": "object",
    "properties": {
        f"part{i}": {
            "type": "object",
            "properties": {_WORDS[(i * 7 + j) % len(_WORDS)]: {"type": "string"} for j in range(6)},
        }
        for i in range(30)
    },
}


def test_lower_open_objects_member_names(benchmark):
    spec = ca.JsonSchema(OPEN_OBJECTS)
    lowered = benchmark.pedantic(lambda: ca.lower(spec), setup=_spec_cleared, rounds=7)
    assert lowered.ir.terminals  # a grammar: open objects take any JSON value
