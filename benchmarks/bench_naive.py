"""One mask of the naive backend on the Llama-3 vocabulary (128,256 ids).

The constraints are the conformance corpus's. States measured: the ISO
date-time regex at its start; the widest regex state
(inside a JSON string, ~123k tokens allowed); a JSON grammar at the start of
a value, inside a string and after a key. Each benchmark times a cold walk:
the checker's caches are irrelevant (a fresh mask every round), but the
Earley recognizer's memo is warm after the first round, as it is in decoding.
"""

from __future__ import annotations

import pytest
from constrain_conformance.corpus import DATE_TIME, JSON_GRAMMAR, JSON_STRING

import constrain_api as ca


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
