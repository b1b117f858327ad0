"""Lookarounds, ``quantifier_modes`` and ``ByteDFA.shortest`` (against Python's ``re``)."""

from __future__ import annotations

import functools
import itertools
import random
import re
import time

import pytest
from automata_support import shortest_completion
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from constrain_api.automata import (
    Alt,
    ByteDFA,
    CharSet,
    Difference,
    Empty,
    Intersect,
    LazyDFA,
    Literal,
    Repeat,
    Seq,
    has_string,
    parse_regex,
    quantifier_modes,
    regex_automaton,
)
from constrain_api.automata.regex import has_lookaround, is_void, needs_pruning, nullable
from constrain_api.errors import CompileLimitExceeded, ConstraintError, UnsupportedConstraint

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# lark's common.ESCAPED_STRING, lark.lark's REGEXP, python.lark's STRING (double-quoted part)
ESCAPED_STRING = r'".*?(?<!\\)(\\\\)*?"'
LARK_REGEXP = r"\/(?!\/)(\\\/|\\\\|[^\/])*?\/[imslux]*"
PY_STRING = r'"(?!"").*?(?<!\\)(\\\\)*?"'
LARK_OP = r"[+*]|[?](?![a-z])"

BEHIND = "lookbehind at the start of a pattern (it inspects text before the match)"
AHEAD = "lookahead at the end of a pattern (it inspects text after the match)"

ALPHABET = ["\\", '"', "a", "é"]


def random_texts(seed: int, count: int, alphabet: str = '\\"aé/\n', max_len: int = 9) -> list[str]:
    rnd = random.Random(seed)
    return [
        "".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, max_len))) for _ in range(count)
    ]


ALL_SHORT = ["".join(t) for n in range(6) for t in itertools.product(ALPHABET, repeat=n)]


# ------------------------------------------------------- the lark patterns


@pytest.mark.parametrize("pattern", [ESCAPED_STRING, LARK_REGEXP])
def test_lark_patterns_compile_and_agree(pattern: str) -> None:
    dfa = ByteDFA.from_regex(pattern)
    compiled = re.compile(pattern)
    for s in ALL_SHORT + random_texts(1, 4000):
        assert dfa.matches(s.encode()) == bool(compiled.fullmatch(s)), s
    # the inside rule holds, so the whole-text reading is the same language
    assert dfa.same_language(ByteDFA.from_regex(pattern, whole_text=True))


def test_escaped_string_examples_and_compile_time() -> None:
    t0 = time.perf_counter()
    dfa = ByteDFA.from_regex(ESCAPED_STRING)
    assert time.perf_counter() - t0 < 2
    for good in ['""', '"a"', r'"\\"', r'"a\"b"', r'"\\\\"', '"é"']:
        assert dfa.matches(good.encode()), good
    for bad in ['"', r'"\"', r'"a\"', r'"\\\"', 'a""', '"\n"']:
        assert not dfa.matches(bad.encode()), bad


def test_python_string_needs_whole_text() -> None:
    # (?!"") right after the opening quote inspects two characters, and for the
    # text "" only one of them is inside the match: a lexer's answer depends on
    # the next character (re.match(PY_STRING, '"""') is None), so the default
    # (inside) reading refuses it ...
    assert re.match(PY_STRING, '""') and not re.match(PY_STRING, '"""')
    with pytest.raises(UnsupportedConstraint) as info:
        ByteDFA.from_regex(PY_STRING)
    assert AHEAD in str(info.value) and "negative lookahead" in str(info.value)
    # ... and the whole-text reading is exactly re.fullmatch
    dfa = ByteDFA.from_regex(PY_STRING, whole_text=True)
    compiled = re.compile(PY_STRING)
    for s in ALL_SHORT + random_texts(2, 4000):
        assert dfa.matches(s.encode()) == bool(compiled.fullmatch(s)), s
    assert dfa.matches(b'""') and not dfa.matches(b'"""') and dfa.matches(b'"a"')


def test_python_string_inner_part_inside_a_longer_pattern() -> None:
    # with a closing context after it the same lookahead sees only the match
    pattern = r'"(?!"").*?(?<!\\)(\\\\)*?"x'
    dfa = ByteDFA.from_regex(pattern)
    for s in ALL_SHORT + [s + "x" for s in random_texts(3, 3000)]:
        assert dfa.matches(s.encode()) == bool(re.fullmatch(pattern, s)), s


@pytest.mark.parametrize(
    "pattern, message",
    [
        ("(?<!a)b", BEHIND),
        ("(?<=a)b", BEHIND),
        ("a(?!b)", AHEAD),
        ("a(?=b)", AHEAD),
        ("(?:a|)(?<!a)b", BEHIND),
        (LARK_OP, AHEAD),
        ("(?:a(?!b))*c", AHEAD),  # a repetition's body is its own sequence
        ("x(?:a(?!b)|c)d", AHEAD),  # so is an alternation's option
        ("(?:a(?=b)|c)b", AHEAD),
        ("(?:(?<=x)a|b)", BEHIND),
        ("a*(?<=a)", BEHIND),
        ("ab?(?<=ab)c", BEHIND),
        ("a(?=bc)b", AHEAD),
        (PY_STRING, AHEAD),
    ],
)
def test_lookarounds_seeing_outside_the_match_raise(pattern: str, message: str) -> None:
    re.compile(pattern)
    with pytest.raises(UnsupportedConstraint) as info:
        parse_regex(pattern)
    assert info.value.backend == "automata"
    assert message == info.value.construct
    assert message in str(info.value)
    with pytest.raises(UnsupportedConstraint):
        ByteDFA.from_regex(pattern)


def test_lark_op_message_is_clear() -> None:
    with pytest.raises(UnsupportedConstraint) as info:
        ByteDFA.from_regex(LARK_OP)
    text = str(info.value)
    assert "negative lookahead (?!...)" in text and "needs 1 character(s) after it" in text


@pytest.mark.parametrize(
    "pattern, construct",
    [
        ("a(?=b+)b", "variable-width lookahead"),
        ("a(?!b|cd)bb", "variable-width negative lookahead"),
        ("a(?=b(?=c))bc", "lookahead (?=...) inside a lookaround"),
        ("ab(?<=a(?!b)b)", "inside a lookaround"),
        # a lookbehind window reaching back past an earlier lookahead whose
        # window reaches past the lookbehind: no nesting of windows exists
        (".(?=..).(?<=..).", "crossing lookarounds"),
    ],
)
def test_unsupported_lookaround_forms(pattern: str, construct: str) -> None:
    re.compile(pattern)
    with pytest.raises(UnsupportedConstraint) as info:
        parse_regex(pattern)
    assert construct in info.value.construct


def test_lookbehind_must_be_fixed_width_in_re_itself() -> None:
    with pytest.raises(re.error):
        re.compile("a(?<=a+)")
    with pytest.raises(ConstraintError, match="fixed-width"):
        parse_regex("a(?<=a+)")


# ------------------------------------------------------------ AST shape


def test_ast_nodes() -> None:
    sigma_star = Repeat(CharSet.any(), 0, None)
    node = parse_regex(ESCAPED_STRING)
    assert node == Seq(
        (
            Literal('"'),
            Difference(
                Repeat(CharSet.any(dotall=False), 0, None), Seq((sigma_star, Literal("\\")))
            ),
            Repeat(Literal("\\\\"), 0, None),
            Literal('"'),
        )
    )
    assert parse_regex("a[ab](?<=[bc])c") == Seq(
        (
            Literal("a"),
            Intersect(CharSet.of("ab"), Seq((sigma_star, CharSet.of("bc")))),
            Literal("c"),
        )
    )
    # decided while parsing: the window is empty, the neighbouring text fixed
    assert parse_regex("a(?=b)b") == Literal("ab")
    assert parse_regex("(?!a)b") == Literal("b")
    assert parse_regex("ab(?<=b)c") == Literal("abc")
    assert parse_regex("ab(?<!b)c") == CharSet(())
    assert parse_regex("a(?=)") == Literal("a")
    assert parse_regex("a(?!)") == CharSet(())
    assert parse_regex("(?<=)a") == Literal("a")
    assert parse_regex("(?=)(?<=)") == Empty()
    assert parse_regex("(?<!)") == CharSet(())
    assert ByteDFA.from_regex("ab(?<!b)c").is_empty()
    # lookarounds are zero-width: anchors next to them stay at the start/end
    assert parse_regex("^(?=a)a$(?<=a)") == Literal("a")


def test_intersect_difference_from_node() -> None:
    a_or_b = Repeat(CharSet.of("ab"), 0, None)
    ends_a = Seq((Repeat(CharSet.any(), 0, None), Literal("a")))
    inter = ByteDFA.from_node(Intersect(a_or_b, ends_a))
    diff = ByteDFA.from_node(Difference(a_or_b, ends_a))
    for n in range(5):
        for t in itertools.product("abc", repeat=n):
            s = "".join(t)
            in_a = set(s) <= {"a", "b"}
            assert inter.matches(s.encode()) == (in_a and s.endswith("a"))
            assert diff.matches(s.encode()) == (in_a and not s.endswith("a"))
    # nested, inside a repetition
    node = Repeat(Seq((Difference(Literal("ab"), Literal("ab")), Literal("x"))), 0, None)
    assert ByteDFA.from_node(node).same_language(ByteDFA.from_regex(""))


def test_difference_complement_products() -> None:
    a = ByteDFA.from_regex("[ab]*")
    b = ByteDFA.from_regex(".*a")
    d = a.difference(b)
    assert d.same_language(ByteDFA.from_regex("(?:[ab]*b)?"))
    assert a.difference(ByteDFA.empty()).same_language(a)
    assert ByteDFA.empty().difference(a).is_empty()
    assert a.difference(a).is_empty()
    c = ByteDFA.from_regex("(?s).*a").complement()
    for s in ["", "b", "ab", "é", "\n"]:
        assert c.matches(s.encode())
    for s in ["a", "ba", "éa"]:
        assert not c.matches(s.encode())
    assert not c.matches(b"\xff") and not c.is_viable(b"\xc3a")
    assert c.complement().same_language(ByteDFA.from_regex("(?s).*a"))
    assert ByteDFA.any_utf8().complement().is_empty()
    assert ByteDFA.empty().complement().same_language(ByteDFA.any_utf8())
    with pytest.raises(CompileLimitExceeded):
        ByteDFA.from_regex("[ab]{0,40}").difference(ByteDFA.from_regex("[bc]{0,40}"), max_states=5)


def test_lookaround_respects_max_states() -> None:
    with pytest.raises(CompileLimitExceeded):
        ByteDFA.from_regex("x(?:a|b)*a(?:a|b){12}(?<!b)y", max_states=500)


# ---------------------------------------------------- random patterns vs re

ATOMS = [
    "a",
    r"\\",
    '"',
    "é",
    ".",
    '[a"]',
    r"[^\\]",
    "a\\\\",
    '""',
    r"(?:\\.)",
    "(?:)",
]
QUANTIFIERS = ["*", "+", "?", "*?", "{2}", "??", "{0,2}"]
# fixed-width lookaround bodies: single characters, classes, 2-character literals
BODIES = [
    "a",
    r"\\",
    '"',
    "é",
    ".",
    '[a"]',
    r"[^\\]",
    '""',
    r"\\\\",
    'a"',
    "(?:a|é)",
    '[aé]"',
]
LOOKS = ["(?={})", "(?!{})", "(?<={})", "(?<!{})"]


def _patterns() -> st.SearchStrategy[str]:
    look = st.tuples(st.sampled_from(LOOKS), st.sampled_from(BODIES)).map(
        lambda t: t[0].format(t[1])
    )
    atom = st.sampled_from(ATOMS)
    # a lookaround between atoms, often with room for its window on both sides
    framed = st.tuples(atom, atom, look, atom, atom).map("".join)
    leaf = st.one_of(atom, look, framed)

    def extend(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        return st.one_of(
            st.lists(inner, min_size=2, max_size=4).map("".join),
            st.lists(inner, min_size=2, max_size=4).map("".join),
            st.tuples(inner, inner).map(lambda t: f"(?:{t[0]}|{t[1]})"),
            st.tuples(inner, st.sampled_from(QUANTIFIERS)).map(lambda t: f"(?:{t[0]}){t[1]}"),
            inner.map(lambda r: f"({r})"),
        )

    return st.recursive(leaf, extend, max_leaves=5).filter(
        lambda p: "(?=" in p or "(?!" in p or "(?<" in p
    )


@functools.lru_cache(maxsize=1024)
def _compile(pattern: str, whole_text: bool) -> ByteDFA | str:
    try:
        return ByteDFA.from_regex(pattern, whole_text=whole_text)
    except UnsupportedConstraint as e:
        return e.construct


texts = st.text(alphabet=st.sampled_from(ALPHABET), max_size=7)
contexts = st.text(alphabet=st.sampled_from(ALPHABET), max_size=3)


def _is_lookaround_refusal(construct: str) -> bool:
    return construct in (BEHIND, AHEAD) or construct == "crossing lookarounds"


@SETTINGS
@given(_patterns(), st.lists(texts, min_size=4, max_size=16))
def test_random_lookarounds_match_like_re(pattern: str, samples: list[str]) -> None:
    compiled = re.compile(pattern)
    whole = _compile(pattern, True)
    inside = _compile(pattern, False)
    if isinstance(whole, str):
        # (inside a repetition or a middle option the edges of the text are out of reach)
        assert _is_lookaround_refusal(whole), (pattern, whole)
        assert isinstance(inside, str)
        return
    for s in samples + ALL_SHORT[:85]:
        assert whole.matches(s.encode()) == bool(compiled.fullmatch(s)), (pattern, s)
    witness = shortest_completion(whole, whole.start)
    assert (witness is None) == whole.is_empty()
    if witness is not None:
        assert compiled.fullmatch(witness.decode()), (pattern, witness)
    if isinstance(inside, str):
        assert _is_lookaround_refusal(inside), (pattern, inside)
    else:
        assert inside.same_language(whole), pattern


@SETTINGS
@given(
    _patterns(),
    st.lists(st.tuples(contexts, texts, contexts), min_size=4, max_size=16),
)
def test_accepted_lookarounds_never_see_outside_the_match(
    pattern: str, samples: list[tuple[str, str, str]]
) -> None:
    # the inside rule: the match of s does not depend on the text around it
    dfa = _compile(pattern, False)
    if isinstance(dfa, str):
        return
    for before, s, after in samples:
        embedded = re.compile(f"(?:{pattern})(?={re.escape(after)}\\Z)")
        found = bool(embedded.match(before + s + after, len(before)))
        assert dfa.matches(s.encode()) == found, (pattern, before, s, after)


def _check_viability(compiled: re.Pattern[str], dfa: ByteDFA, prefix: str) -> None:
    state = dfa.run(prefix.encode())
    if state >= 0:
        # viable ⇒ a completion exists: the automaton names one, re confirms it
        rest = shortest_completion(dfa, state)
        assert rest is not None
        assert compiled.fullmatch(prefix + rest.decode()), (compiled.pattern, prefix, rest)
    # a completion found by brute force ⇒ viable
    if any(compiled.fullmatch(prefix + c) for c in ALL_SHORT[:341]):
        assert state >= 0, (compiled.pattern, prefix)


@SETTINGS
@given(_patterns(), st.lists(st.text(alphabet=st.sampled_from(ALPHABET), max_size=4), max_size=4))
def test_random_lookarounds_viability(pattern: str, prefixes: list[str]) -> None:
    dfa = _compile(pattern, True)
    if isinstance(dfa, str):
        return
    compiled = re.compile(pattern)
    for p in ["", *prefixes]:
        _check_viability(compiled, dfa, p)


@pytest.mark.parametrize(
    "pattern",
    [
        '"(?!"")[a"]+"',
        'a(?=..)[a"]*""',
        "(?:x(?<=x)y)*",
        "(?:a(?!b)[ab])+",
        'a(?<!\\\\)(?!")[a"\\\\]{2}',
        '"(?<!")a',
        '.(?<=")(?=a)a"',
        "a.(?<=a[aé])é",
        "(?i)a(?=A)a",
        "(?i:a)(?<=[A])b",
        "ab(?<=ab)(?=cd)cd",
        "a(?=b.)b(?<=ab)c",
        "é(?<!é)",
        "a(?=.b).(?<=a.)b",  # two windows that coincide
    ],
)
def test_selected_patterns(pattern: str) -> None:
    dfa = ByteDFA.from_regex(pattern)
    compiled = re.compile(pattern)
    for s in ALL_SHORT + random_texts(5, 500, 'abcdxyAé"\\', 7):
        assert dfa.matches(s.encode()) == bool(compiled.fullmatch(s)), (pattern, s)


# ------------------------------------------------------ quantifier modes


@pytest.mark.parametrize(
    "pattern, modes",
    [
        ("abc", set()),
        ("a*", {"greedy"}),
        ("a+?", {"lazy"}),
        ("a??", {"lazy"}),
        ("a{2,5}?", {"lazy"}),
        ("a{2,5}", {"greedy"}),
        ("a{3}", set()),
        ("a{3}?", set()),
        ("a{3,3}?", set()),
        ("a{2,}", {"greedy"}),
        (ESCAPED_STRING, {"lazy"}),
        (LARK_REGEXP, {"lazy", "greedy"}),
        (r"/\*(.|\n)*?\*/", {"lazy"}),
        (r"\*\+\?\{2,3\}", set()),  # escaped: no quantifier
        ("[*+?]", set()),
        ("(?:a*?|b+)c", {"lazy", "greedy"}),
        ("(?:(?:a)*?)", {"lazy"}),
        ("a(?=b*)b", set()),  # inside a lookaround: does not decide the match
        ("a*+", {"greedy"}),
        ("(a)?(?(1)b*?|c)", {"greedy", "lazy"}),
    ],
)
def test_quantifier_modes(pattern: str, modes: set[str]) -> None:
    assert quantifier_modes(pattern) == frozenset(modes)


def test_quantifier_modes_malformed() -> None:
    with pytest.raises(ConstraintError):
        quantifier_modes("a{2,1}")
    with pytest.raises(ConstraintError):
        quantifier_modes("(")


# ------------------------------------------------------------ shortest


def _full_re_match(compiled: re.Pattern[str], s: str) -> bool:
    m = compiled.match(s)
    return m is not None and m.end() == len(s)


@pytest.mark.parametrize(
    "pattern, alphabet",
    [
        (ESCAPED_STRING, '"\\ab'),
        (r"/\*(.|\n)*?\*/", "/*a\n"),
        (r"a.*?b", "abc"),
        (r"#[^\n]*?\n", "#a\n"),
    ],
)
def test_shortest_is_the_lexer_match(pattern: str, alphabet: str) -> None:
    assert quantifier_modes(pattern) == {"lazy"}
    full = ByteDFA.from_regex(pattern)
    dfa = full.shortest()
    compiled = re.compile(pattern)
    exhaustive = ["".join(t) for n in range(7) for t in itertools.product(alphabet, repeat=n)]
    for s in exhaustive + random_texts(7, 3000, alphabet, 14):
        assert dfa.matches(s.encode()) == _full_re_match(compiled, s), (pattern, s)
    assert dfa.intersect(full).same_language(dfa)  # a sublanguage
    assert dfa.shortest() is dfa or dfa.shortest().same_language(dfa)


def test_shortest_examples() -> None:
    d = ByteDFA.from_regex(r"/\*(.|\n)*?\*/").shortest()
    assert d.matches(b"/**/") and d.matches(b"/* a */") and not d.matches(b"/* a */ */")
    e = ByteDFA.from_regex(ESCAPED_STRING).shortest()
    assert e.matches(b'"a\\"b"') and not e.matches(b'"a"b"') and e.matches(b'"\\\\"')
    assert ByteDFA.from_regex("a*").shortest().same_language(ByteDFA.from_regex(""))
    assert ByteDFA.from_regex("ab|abc").shortest().same_language(ByteDFA.from_regex("ab"))
    assert ByteDFA.empty().shortest().is_empty()
    s = ByteDFA.from_regex("a+b").shortest()
    assert s.same_language(ByteDFA.from_regex("a+b"))  # already prefix-free


def test_void_and_lookaround_predicates_on_shared_subtrees() -> None:
    """A subtree shared by many trees (or many times by one) is decided once
    (the answer is kept on the node): a tree of 2**60 paths is answered, and
    each answer equals the answer for the same tree built without sharing."""
    a, void = Literal("a"), CharSet(())
    diff = Difference(Literal("ab"), Literal("a"))
    for leaf, voids, looks in ((a, False, False), (void, True, False), (diff, False, True)):
        node = leaf
        for _ in range(60):  # each level refers to the one below twice
            node = Seq((Alt((node, Literal("b"))), node))
        assert is_void(node) is voids
        assert has_lookaround(node) is looks
        assert nullable(node) is False
        small = Seq((Alt((leaf, Literal("b"))), leaf))  # a fresh tree: decided from its leaves
        assert is_void(small) is voids and has_lookaround(small) is looks
    assert is_void(Intersect(void, a)) and not has_lookaround(a)


def test_node_traits_agree_with_the_automata() -> None:
    """``is_void``, ``has_lookaround`` and ``nullable`` (bits kept on each
    node) against the nodes' automata, for every combinator: void exactly
    where no lookaround hides it, nullable exactly; ``needs_pruning``
    exactly where an empty class, a ``{0}`` repeat or a lookaround is inside."""
    a, b, void, eps = Literal("a"), CharSet.of("b"), CharSet(()), Empty()
    leaves = (a, b, void, eps, Repeat(a, 0, None), Repeat(b, 0, 0))
    nodes = []
    for x in leaves:
        for y in leaves:
            nodes += [
                Seq((x, y)),
                Alt((x, y)),
                Repeat(Seq((x, y)), 0, 2),
                Repeat(Alt((x, y)), 1, None),
                Intersect(x, y),
                Difference(x, y),
            ]
    for node in nodes:
        dfa = ByteDFA.from_node(node)
        looks = isinstance(node, Intersect | Difference)
        assert has_lookaround(node) is looks, node
        prunable = looks or void in _leaves_of(node) or Repeat(b, 0, 0) in _leaves_of(node)
        assert needs_pruning(node) is prunable, node
        assert nullable(node) is dfa.matches(b""), node
        if looks:
            assert not is_void(node) or dfa.is_empty(), node  # sound
        else:
            assert is_void(node) is dfa.is_empty(), node


def _leaves_of(node) -> list:
    """The node's parts down to the leaves and ``{0}`` repeats (with duplicates)."""
    if isinstance(node, Seq):
        return [leaf for p in node.parts for leaf in _leaves_of(p)]
    if isinstance(node, Alt):
        return [leaf for o in node.options for leaf in _leaves_of(o)]
    if isinstance(node, Repeat) and node.max != 0:
        return _leaves_of(node.node)
    if isinstance(node, Intersect | Difference):
        return _leaves_of(node.left) + _leaves_of(node.right)
    return [node]


# ------------------------------------------- lookarounds in a lazy automaton


@SETTINGS
@given(_patterns())
def test_random_lookarounds_lazily_have_the_minimal_dfas_language(pattern: str) -> None:
    """A ``LazyDFA`` steps a lookaround's intersection or difference as a
    product of term sets, made a state only once a search found it has a
    string: the same language as the minimal DFA, emptiness included, and
    every state it finds is live (nothing for a trimming to drop)."""
    whole = _compile(pattern, True)
    if isinstance(whole, str):
        return
    lazy = LazyDFA(parse_regex(pattern, whole_text=True))
    assert lazy.is_empty() == whole.is_empty(), pattern
    built = lazy.to_dfa()
    assert built.num_states == lazy.num_states, pattern  # all reachable and live
    assert built.same_language(whole), pattern
    # the shortest matches, with and without the empty string
    assert (
        LazyDFA(parse_regex(pattern, whole_text=True), shortest=True)
        .to_dfa()
        .same_language(whole.shortest())
    ), pattern
    without = LazyDFA(parse_regex(pattern, whole_text=True), shortest=True, without_empty=True)
    assert without.to_dfa().same_language(whole.shortest().difference(ByteDFA.literal(b"")))


@pytest.mark.parametrize(
    "pattern",
    ["x(?!ab)a.", "(?:a(?!b)[ab])+", "[ab]{2}(?<!ab)(?<!bb)", "(?:x(?!y).)*z", "ab(?<!b)c"],
)
def test_a_lazy_lookaround_makes_no_state_without_a_string(pattern: str) -> None:
    """Products whose left side's strings all lie in the right side's
    (``x(?!ab)a`` then ``b``) have no string though neither side is
    empty: the search finds them out before they are states."""
    node = parse_regex(pattern, whole_text=True)
    lazy = LazyDFA(node)
    built = lazy.to_dfa()
    assert built.num_states == lazy.num_states
    assert built.same_language(ByteDFA.from_node(node))
    compiled = re.compile(pattern)
    for s in ALL_SHORT[:341] + random_texts(3, 300, "abxyz", 6):
        assert lazy.matches(s.encode()) == bool(compiled.fullmatch(s)), (pattern, s)


@pytest.mark.parametrize("pattern", [ESCAPED_STRING, LARK_REGEXP, r"/\*(.|\n)*?\*/", "a*?"])
def test_lazy_shortest_matches_are_the_minimal_dfas(pattern: str) -> None:
    node = parse_regex(pattern)
    full = ByteDFA.from_node(node)
    lazy = LazyDFA(node, shortest=True)
    assert lazy.to_dfa().same_language(full.shortest())
    assert lazy.to_dfa().num_states == lazy.num_states
    assert regex_automaton(pattern, shortest=True) is regex_automaton(pattern, shortest=True)
    assert regex_automaton(pattern, shortest=True) is not regex_automaton(pattern)


def test_a_product_too_big_to_build_is_walked_by_its_states() -> None:
    """``[ab]*`` whose 21st character from the end is ``a``, then ``c``: a
    minimal DFA of about 2**21 states, which the eager construction
    refuses past its bound; lazily, a walk pays for the states it visits
    (each made once a depth-first search found it a string)."""
    ab = CharSet.of("ab")
    tail = Seq((Repeat(ab, 0, None), Literal("a"), Repeat(ab, 20, 20)))
    node = Seq((Intersect(Repeat(ab, 0, None), tail), Literal("c")))
    with pytest.raises(CompileLimitExceeded):
        ByteDFA.from_node(node, max_states=5000)
    lazy = LazyDFA(node, max_states=5000)
    assert lazy.matches(b"a" * 21 + b"c") and lazy.matches(b"ba" + b"b" * 20 + b"c")
    assert not lazy.matches(b"b" * 21 + b"c") and not lazy.matches(b"a" * 20 + b"c")
    assert lazy.is_viable(b"ab" * 30) and not lazy.is_viable(b"ab" * 30 + b"c")
    assert lazy.num_states < 200


def test_a_product_search_past_its_bound_is_a_compile_limit(monkeypatch) -> None:
    """Deciding that ``[ab]{0,300}`` and ``[ab]*c`` share no string walks
    all 300 counts: past ``PRODUCT_SEARCH_BOUND`` products that is a
    ``CompileLimitExceeded``, never an unbounded search; within it, the
    empty language (so ``is_empty``)."""
    from constrain_api.automata import lazy as lazy_module

    ab = CharSet.of("ab")
    node = Intersect(Repeat(ab, 0, 300), Seq((Repeat(ab, 0, None), Literal("c"))))
    assert LazyDFA(node).is_empty()
    monkeypatch.setattr(lazy_module, "PRODUCT_SEARCH_BOUND", 50)
    with pytest.raises(CompileLimitExceeded) as info:
        LazyDFA(node)
    assert info.value.limit == "states"


def _counting_searches(monkeypatch) -> list:
    """The products ``TermTable._has_string`` is asked about, from now on."""
    from constrain_api.automata.lazy import TermTable

    asked: list = []
    search = TermTable._has_string

    def counted(self, key):
        asked.append(key)
        return search(self, key)

    monkeypatch.setattr(TermTable, "_has_string", counted)
    return asked


def test_a_length_bound_beside_a_pattern_is_walked_without_searches(monkeypatch) -> None:
    """``.{0,300}`` beside a pattern (``maxLength`` beside a format): every
    count is a product of its own. A short string of the pattern's side,
    read by the counting side, shows each one has a string, so none is
    searched; the language and the liveness of every state are as before."""
    pattern = Seq(
        (Repeat(CharSet.of("abc"), 1, None), Literal("@"), Repeat(CharSet.of("ab"), 1, 3))
    )
    node = Intersect(pattern, Repeat(CharSet.any(), 0, 300))
    asked = _counting_searches(monkeypatch)
    lazy = LazyDFA(node)
    assert lazy.matches(b"abc@ab") and lazy.matches(b"a" * 296 + b"@ab")
    assert lazy.is_viable(b"c" * 200) and not lazy.matches(b"abc@")
    assert asked == []
    # near the bound, where the shortest rest no longer fits, the search decides
    assert not lazy.matches(b"a" * 298 + b"@ab") and not lazy.is_viable(b"c" * 299)
    assert asked
    built = lazy.to_dfa()
    assert built.num_states == lazy.num_states  # every state live
    assert built.same_language(ByteDFA.from_node(node))


@pytest.mark.parametrize(
    "node, strings",
    [
        # the left side's shortest string ("a") is not the right side's: searched, has one
        (
            Intersect(Alt((Literal("a"), Literal("bbb"))), Repeat(CharSet.of("b"), 0, None)),
            [b"bbb"],
        ),
        # a difference: the left side's shortest string is the right side's
        (Difference(Repeat(CharSet.of("ab"), 0, 4), Repeat(CharSet.of("a"), 0, None)), [b"ab"]),
        # no string at all: neither side's shortest is the other's, nor any other
        (Intersect(Repeat(CharSet.of("a"), 0, 5), Repeat(CharSet.of("b"), 1, None)), []),
    ],
)
def test_products_a_short_string_does_not_show_are_searched(monkeypatch, node, strings) -> None:
    """Where no side's shortest string shows the product has one, the search
    decides, as before: a product with strings, and one with none (never a
    state)."""
    asked = _counting_searches(monkeypatch)
    lazy = LazyDFA(node)
    assert asked
    assert lazy.is_empty() == (not strings)
    for data in strings:
        assert lazy.matches(data)
    assert lazy.to_dfa().same_language(ByteDFA.from_node(node))


_COUNTED_ATOMS = ["a", "b", "ab", "é", "[ab]", "[a-c]", ".", "(?:a|bb)", "[^a]"]
_COUNTED_PLAIN = st.recursive(
    st.sampled_from(_COUNTED_ATOMS),
    lambda inner: st.one_of(
        st.lists(inner, min_size=2, max_size=3).map("".join),
        st.tuples(inner, inner).map(lambda t: f"(?:{t[0]}|{t[1]})"),
        st.tuples(
            inner, st.sampled_from(["*", "+", "?", "{2}", "{0,3}", "{1,5}", "{3,}", "{0,12}"])
        ).map(lambda t: f"(?:{t[0]}){t[1]}"),
    ),
    max_leaves=6,
)
_NESTED_PRODUCTS = st.recursive(
    _COUNTED_PLAIN.map(lambda p: parse_regex(p, whole_text=True)),
    lambda inner: st.tuples(st.sampled_from([Intersect, Difference]), inner, inner).map(
        lambda t: t[0](t[1], t[2])
    ),
    max_leaves=4,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_NESTED_PRODUCTS)
def test_nested_products_of_counted_pieces_are_exact_and_live(node) -> None:
    """Intersections and differences of counted pieces, nested: whether a
    product has a string is shown by a short string of one side or
    searched, and either way the lazy automaton has the minimal DFA's
    language and no state without a string (a product wrongly shown live
    would be a dead state here)."""
    try:
        full = ByteDFA.from_node(node, max_states=3000)
        lazy = LazyDFA(node)
        built = lazy.to_dfa()
    except CompileLimitExceeded:
        return
    assert has_string(node) is not full.is_empty()
    assert lazy.is_empty() == full.is_empty()
    assert built.num_states == lazy.num_states
    assert built.same_language(full)


_PLAIN = st.recursive(
    st.sampled_from(ATOMS),
    lambda inner: st.one_of(
        st.lists(inner, min_size=2, max_size=3).map("".join),
        st.tuples(inner, inner).map(lambda t: f"(?:{t[0]}|{t[1]})"),
        st.tuples(inner, st.sampled_from(QUANTIFIERS)).map(lambda t: f"(?:{t[0]}){t[1]}"),
    ),
    max_leaves=5,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_PLAIN, _PLAIN, st.sampled_from([Intersect, Difference]))
def test_has_string_decides_products_as_the_minimal_automata_do(a, b, op) -> None:
    """``has_string`` of an intersection or difference of two regexes
    (searched lazily, never determinized whole) says what the product of
    their minimal automata says."""
    left, right = ByteDFA.from_regex(a), ByteDFA.from_regex(b)
    product = left.intersect(right) if op is Intersect else left.difference(right)
    assert has_string(op(parse_regex(a), parse_regex(b))) is not product.is_empty()


def test_has_string_is_bounded() -> None:
    """A product past the bound on terms raises ``CompileLimitExceeded``
    (the callers then decide another way), never runs away."""
    disjoint = Intersect(parse_regex("a{0,5000}b"), parse_regex("a{0,5000}c"))
    assert not has_string(disjoint)  # (every pair of states the two reach walked)
    with pytest.raises(CompileLimitExceeded):
        has_string(disjoint, max_states=10)
