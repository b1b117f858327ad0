"""``constrain_api.lowering``: every spec as a regular language or a reduced
grammar, read once; and ``BaseCompiler``, the per-vocabulary compiler every
backend shares (options, kind check, dispatch, timing, error naming, caches)."""

from __future__ import annotations

import threading

import pytest

import constrain_api as ca
from constrain_api import ContentCache, ContextFree, Regular

VOCAB = ca.Vocabulary.from_list([b"a", b"b", b"ab", b"x", b"</s>"], eos=4)


def _matches(language: Regular, text: bytes) -> bool:
    return language.dfa().matches(text)


def test_regular_specs_lower_to_one_language():
    regex = ca.lower(ca.Regex("a[bc]"))
    assert isinstance(regex, Regular) and _matches(regex, b"ac") and not _matches(regex, b"a")
    choice = ca.lower(ca.Choice(["New York", "Newark", "ü", ""]))
    assert all(_matches(choice, s.encode()) for s in ("New York", "Newark", "ü", ""))
    assert not _matches(choice, b"New")
    assert ca.ByteDFA.from_node(choice.regex_node()).matches(b"Newark")
    schema = ca.lower(ca.JsonSchema({"enum": ["x", 1]}))
    assert _matches(schema, b'"x"') and _matches(schema, b"1") and not _matches(schema, b"x")
    where = ca.lower(ca.Where("len(x) < 3"))
    assert where.node is None and _matches(where, b"ab") and not _matches(where, b"abc")
    assert ca.ByteDFA.from_node(where.regex_node()).matches(b"ab")  # by state elimination


def test_grammars_and_recursive_schemas_lower_to_a_grammar():
    assert isinstance(ca.lower(ca.Grammar('start: "a"')), ContextFree)
    tree = ca.JsonSchema({"type": "array", "items": {"$ref": "#"}})
    assert isinstance(ca.lower(tree), ContextFree)


def test_lowering_is_cached_by_content_and_refuses_by_name():
    assert ca.lower(ca.Regex("a+")) is ca.lower(ca.Regex("a+"))
    with pytest.raises(ca.UnsupportedConstraint, match="backreference"):
        ca.lower(ca.Regex(r"(a)\1"))
    with pytest.raises(ca.ConstraintError):
        ca.lower(ca.Regex("a("))


def test_the_reduced_grammar_keeps_what_derives_a_string_and_is_reached():
    grammar = ca.Grammar(
        """
        start: A | dead | B
        dead: C dead
        unused: D
        A: "a"
        B: /[^\\x00-\\U0010ffff]/
        C: "c"
        D: "d"
        WS: " "
        %ignore WS
        """
    )
    reduced = ca.lower(grammar).reduce()
    assert reduced.rules == (("start", ("A",)),)  # `dead` derives nothing, B has no string
    assert reduced.names == ("A", "WS") and reduced.ignore == frozenset({"WS"})
    assert set(reduced.dfas) == set(reduced.terminals) == {"A", "WS"}
    assert not reduced.nullable
    ir = reduced.as_ir()
    assert [r.rhs for r in ir.rules] == [("A",)] and ir.ignore == ("WS",)


def test_a_start_that_derives_nothing_is_malformed():
    spec = ca.Grammar('start: "a" start')
    with pytest.raises(ca.ConstraintError, match="'start' derives no string: no text satisfies"):
        ca.lower(spec)
    # reducing an IR built by other means checks the same
    with pytest.raises(ca.ConstraintError, match="derives no string"):
        ContextFree(ca.lower_grammar(spec)).reduce()


def test_nullable_terminals_are_reported_and_refused_on_request():
    reduced = ca.lower(ca.Grammar('start: E "x"\nE: /a*/')).reduce()
    assert reduced.nullable == frozenset({"E"})
    with pytest.raises(ca.UnsupportedConstraint, match="terminal E matching the empty string"):
        reduced.refuse_nullable_terminals("needs a byte")


# -- the compiler ------------------------------------------------------------------


class _Compiled(ca.BaseCompiled):
    def checker(self):
        raise NotImplementedError


class _Compiler(ca.BaseCompiler):
    made = 0

    def __init__(self, backend, vocab):
        super().__init__(backend, vocab)
        type(self).made += 1
        self.seen = self.cache("seen", 2)

    def compile_regular(self, language, spec, options):
        self.seen.put(spec, language)
        return _Compiled(spec, self.vocab, ca.CompileStats(states=options.max_states))

    def compile_native(self, spec, options):
        if spec.kind == "choice" and spec.options == ("native",):
            return _Compiled(spec, self.vocab, ca.CompileStats(extra={"native": True}))
        return None


class _Backend(ca.BaseBackend):
    name = "lowering-test"
    capabilities = ca.Capabilities(kinds={"regex", "choice", "grammar"})
    compiler_class = _Compiler
    compile_options = ("max_states",)
    max_vocabularies = 2

    def __init__(self, max_states: int = 7):
        self.max_states = max_states


def test_options_are_read_once_with_the_backends_defaults():
    backend = _Backend()
    assert backend.compile(ca.Regex("a"), VOCAB).stats.states == 7
    assert backend.compile(ca.Regex("a"), VOCAB, max_states=3).stats.states == 3
    with pytest.raises(TypeError, match=r"unknown compile options for lowering-test: \['k'\]"):
        backend.compile(ca.Regex("a"), VOCAB, k=1)


def test_kinds_are_checked_and_dispatched_and_errors_name_the_backend():
    backend = _Backend()
    with pytest.raises(ca.UnsupportedConstraint, match="'lowering-test' does not support where"):
        backend.compile(ca.Where("len(x) < 3"), VOCAB)
    # a grammar reaches compile_grammar, which this backend does not implement
    with pytest.raises(ca.UnsupportedConstraint, match="'lowering-test' does not support gramm"):
        backend.compile(ca.Grammar('start: "a"'), VOCAB)
    # the core's refusals are re-raised in the backend's name
    with pytest.raises(ca.UnsupportedConstraint, match=r"'lowering-test'.*backreference"):
        backend.compile(ca.Regex(r"(a)\1"), VOCAB)
    native = backend.compile(ca.Choice(["native"]), VOCAB)
    assert native.stats.extra == {"native": True}


def test_the_compiler_times_the_compilation():
    compiled = _Backend().compile(ca.Regex("(ab)+"), VOCAB)
    assert compiled.stats.seconds > 0


def test_one_compiler_per_vocabulary_and_a_bounded_number_of_them():
    backend = _Backend()
    other = ca.Vocabulary.from_list([b"a", b"c", b"</s>"], eos=2)
    third = ca.Vocabulary.from_list([b"q", b"</s>"], eos=1)
    compiler = backend.compiler(VOCAB)
    assert backend.compiler(VOCAB) is compiler and compiler.vocab == VOCAB
    assert backend.compiler(other) is not compiler
    backend.compiler(third)  # max_vocabularies = 2: VOCAB's goes
    assert backend.compiler(VOCAB) is not compiler


def test_one_compiler_even_when_threads_race():
    backend, found = _Backend(), []
    before = _Compiler.made
    threads = [
        threading.Thread(target=lambda: found.append(backend.compiler(VOCAB))) for _ in range(8)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert _Compiler.made == before + 1 and all(c is found[0] for c in found)


def test_compiler_caches_are_bounded_reported_and_cleared():
    compiler = _Backend().compiler(VOCAB)
    for pattern in ("a", "b", "ab"):
        compiler.compile(ca.Regex(pattern))
    info = compiler.cache_info()["seen"]
    assert (info.entries, info.maxsize, info.misses) == (2, 2, 0)
    assert ca.Regex("a") not in compiler.seen and ca.Regex("ab") in compiler.seen
    assert compiler.memory_bytes() == info.nbytes > 0
    compiler.clear_cache()
    assert compiler.cache_info()["seen"].entries == 0


def test_content_cache_lru_and_build_once():
    cache: ContentCache[int] = ContentCache(2, sizeof=lambda v: v)
    builds = []
    assert cache.get_or_build("a", lambda: builds.append("a") or 1) == 1
    assert cache.get_or_build("a", lambda: builds.append("a") or 2) == 1
    cache.put("b", 10)
    cache.get("a")  # now the most recent: "b" goes next
    cache.put("c", 100)
    assert "a" in cache and "b" not in cache and len(cache) == 2
    assert cache.put("a", 5) == 1  # the first value wins
    assert builds == ["a"] and cache.info().nbytes == 101
    nothing: ContentCache[int] = ContentCache(0)
    assert nothing.put("a", 1) == 1 and "a" not in nothing
    with pytest.raises(ValueError):
        ContentCache(-1)


@pytest.mark.parametrize(
    ("spec", "where"),
    [
        (ca.Regex(r"[^\s\S]"), None),
        (ca.Regex(r"a(?=b)c"), None),  # a lookaround: decided by the automaton
        (ca.Regex(r"(x|[^\s\S])y[^\s\S]*z[^\s\S]"), None),
        (ca.Grammar('start: "a" b\nb: b "c"'), None),
        (ca.Grammar('start: "a" B\nB: /(?=x)y/'), None),  # an empty terminal
        (ca.JsonSchema(False), "#"),
        (ca.JsonSchema({"enum": []}), "#"),
        (ca.JsonSchema({"type": "string", "minLength": 3, "maxLength": 2}), "#"),
        (ca.JsonSchema({"$ref": "#"}), "#"),  # a grammar that never ends
    ],
)
def test_a_language_with_no_string_is_refused_at_lowering(spec, where):
    ca.clear_caches()
    with pytest.raises(ca.ConstraintError) as info:
        ca.lower(spec)
    assert info.value.what == spec.kind and info.value.where == where
    assert "satisfies" in info.value.message


def test_an_empty_schema_names_the_sub_schemas_that_admit_no_value():
    schema = {
        "type": "object",
        "properties": {"a": {"enum": []}, "b": {"type": "integer"}},
        "required": ["a", "b"],
    }
    with pytest.raises(ca.ConstraintError, match="#/properties/a") as info:
        ca.lower(ca.JsonSchema(schema))
    assert "#/properties/b" not in str(info.value)


@pytest.mark.parametrize(
    "spec",
    [
        ca.Regex(r"a(?=b)b"),  # a lookaround whose language is not empty
        ca.Regex(""),
        ca.Grammar('start: "a" b?\nb: b "c"'),  # the unproductive rule is optional
        ca.JsonSchema(
            {"type": "object", "properties": {"a": {"enum": []}}}  # a is optional
        ),
    ],
)
def test_a_language_with_some_string_is_not_refused(spec):
    language = ca.lower(spec)
    if isinstance(language, Regular):
        assert not language.dfa().is_empty()
    else:
        assert language.reduce().rules


def test_parsed_regexes_are_shared_and_cleared():
    ca.clear_caches("parsed regexes")
    first = ca.parse_regex("a[bc]+")
    assert ca.parse_regex("a[bc]+") is first
    assert ca.core_caches()["parsed regexes"].hits >= 1
    ca.clear_caches("parsed regexes")
    assert ca.parse_regex("a[bc]+") is not first and ca.parse_regex("a[bc]+") == first


def test_a_lookaround_terminal_is_never_determinized_whole_by_the_lowering_or_lazily(
    monkeypatch,
):
    """Whether a terminal with a lookaround (lark's ESCAPED_STRING) has any
    string is decided by a search of its lazy product (``TermTable``), and
    the lazy automaton a backend walks (its shortest matches, as a lexer
    reads it) is found state by state: neither determinizes the whole
    regex, and the lazy one has the minimal DFA's language."""
    from constrain_api.lowering import lower

    spec = ca.Grammar("start: ESCAPED_STRING\n%import common.ESCAPED_STRING\n")
    ca.clear_caches()
    real_from_node = ca.ByteDFA.from_node

    def built(*args, **kwargs):
        raise AssertionError("determinized the whole regex")

    monkeypatch.setattr(ca.ByteDFA, "from_node", built)
    ir = lower(spec).ir
    (terminal,) = ir.terminals.values()
    assert "(?<!" in terminal.pattern and terminal.shortest
    lazy = terminal.automaton(lazy=True)
    assert isinstance(lazy, ca.LazyDFA)
    assert lazy.matches(b'"a\\"b"') and not lazy.matches(b'"a\\"')
    monkeypatch.setattr(ca.ByteDFA, "from_node", real_from_node)
    assert lazy.to_dfa().same_language(terminal.dfa())
    # a lookaround that leaves no string is still found out, and dropped
    with pytest.raises(ca.ConstraintError, match="derives no string"):
        lower(ca.Grammar("start: BAD\nBAD: /ab(?<!b)c/\n"))
    reduced = lower(ca.Grammar('start: "x" | BAD\nBAD: /ab(?<!b)c/\n')).reduce(lazy=True)
    assert "BAD" not in reduced.names and reduced.names


def test_a_grammars_lazy_terminals_share_one_table_of_terms():
    """``terminal_dfas(lazy=True)`` makes every terminal's lazy automaton on
    one table of terms, short patterns included (a piece two terminals
    share is one term), and keeps none of them in the core's cache of lazy
    automata (which holds tables of their own); a pattern asked for alone
    is kept as before."""
    from constrain_api.automata.lazy import regex_automaton
    from constrain_api.lowering import lower

    ca.clear_caches()
    grammar = 'start: A | B\nA: /"[a-z]*"x/\nB: /"[a-z]*"y/\n'
    automata = lower(ca.Grammar(grammar)).ir.terminal_dfas(lazy=True)
    a, b = automata["A"], automata["B"]
    assert isinstance(a, ca.LazyDFA) and isinstance(b, ca.LazyDFA)
    assert a._terms is b._terms
    assert a.matches(b'"ab"x') and b.matches(b'"ab"y') and not a.matches(b'"ab"y')
    pattern = lower(ca.Grammar(grammar)).ir.terminals["A"].pattern
    alone = regex_automaton(pattern)
    assert alone is not a and alone._terms is not a._terms
    assert regex_automaton(pattern) is alone
