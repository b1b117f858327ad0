"""One mask of the naive backend on the Llama-3 vocabulary (128,256 ids).

States measured: the ISO date-time regex at its start; the widest regex state
(inside a JSON string, ~123k tokens allowed); a JSON grammar at the start of
a value, inside a string and after a key. Each benchmark times a cold walk:
the checker's caches are irrelevant (a fresh mask every round), but the
Earley recognizer's memo is warm after the first round, as it is in decoding.
"""

from __future__ import annotations

import pytest

import constrain_api as ca

DATE_TIME = r"\d{4}-[01]\d-[0-3]\dT[0-2]\d:[0-5]\d:[0-5]\d([+-][0-2]\d:[0-5]\d|Z)"
JSON_STRING = r'"([^"\\\x00-\x1f]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*"'
JSON_GRAMMAR = r"""
?start: value
?value: object | array | ESCAPED_STRING | SIGNED_NUMBER | "true" | "false" | "null"
array: "[" [value ("," value)*] "]"
object: "{" [pair ("," pair)*] "}"
pair: ESCAPED_STRING ":" value
%import common.ESCAPED_STRING
%import common.SIGNED_NUMBER
%import common.WS
%ignore WS
"""


@pytest.fixture(scope="module")
def naive():
    return ca.get("naive")


def _checker_after(naive, spec, vocab, text: str):
    checker = naive.compile(spec, vocab).checker()
    checker.update(vocab.encode(text))
    return checker


def _bench_mask(benchmark, checker, vocab):
    bitmask = ca.allocate_bitmask(1, vocab.size)
    benchmark(checker.fill_mask, bitmask, 0)
    benchmark.extra_info["allowed"] = ca.TokenMask(bitmask[0], vocab.size).count()


def test_naive_date_time_start(benchmark, naive, llama3):
    _bench_mask(benchmark, _checker_after(naive, ca.Regex(DATE_TIME), llama3, ""), llama3)


def test_naive_date_time_middle(benchmark, naive, llama3):
    checker = _checker_after(naive, ca.Regex(DATE_TIME), llama3, "2024-11-2")
    _bench_mask(benchmark, checker, llama3)


def test_naive_regex_inside_json_string(benchmark, naive, llama3):
    checker = _checker_after(naive, ca.Regex(JSON_STRING), llama3, '"')
    _bench_mask(benchmark, checker, llama3)


def test_naive_json_grammar_start(benchmark, naive, llama3):
    checker = _checker_after(naive, ca.Grammar(JSON_GRAMMAR), llama3, "")
    _bench_mask(benchmark, checker, llama3)


def test_naive_json_grammar_inside_string(benchmark, naive, llama3):
    checker = _checker_after(naive, ca.Grammar(JSON_GRAMMAR), llama3, '{"na')
    _bench_mask(benchmark, checker, llama3)


def test_naive_json_grammar_after_key(benchmark, naive, llama3):
    checker = _checker_after(naive, ca.Grammar(JSON_GRAMMAR), llama3, '{"name": ')
    _bench_mask(benchmark, checker, llama3)


def test_naive_compile_regex_llama3(benchmark, naive, llama3):
    benchmark(naive.compile, ca.Regex(DATE_TIME), llama3)
