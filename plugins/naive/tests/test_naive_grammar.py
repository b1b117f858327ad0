"""Grammar masks of the naive backend against an independent bottom-up enumeration."""

from __future__ import annotations

import json
import re
from pathlib import Path

import lark
import pytest
from brute import (
    allowed,
    assert_masks_match,
    grammar_language,
    make_vocab,
    prefix_set,
    regex_language,
    strings_over,
)

import constrain_api as ca


def expectation(language: set[str], vocab: ca.Vocabulary):
    prefixes = prefix_set(language)
    encoded = {s.encode() for s in language}
    normal = [i for i in range(vocab.size) if not vocab.is_special(i)]
    tokens = [vocab.token_bytes(i) for i in range(vocab.size)]
    return lambda text: (allowed(tokens, normal, text, prefixes), text in encoded)


# Ambiguous, left-recursive, with nullable rules (n derives "").
AMBIGUOUS = """
start: s
s: s "+" t | t | s s
t: "a" t? | "(" s ")" | n
n: "b"*
"""
AMBIGUOUS_IR = {
    "start": [["s"]],
    "s": [["s", "PLUS", "t"], ["t"], ["s", "s"]],
    "t": [["A", "t"], ["A"], ["LPAR", "s", "RPAR"], ["n"]],
    "n": [[], ["B", "n"]],
}
AMBIGUOUS_TERMS = {"PLUS": r"\+", "A": "a", "LPAR": r"\(", "RPAR": r"\)", "B": "b"}


# The sampled languages are exact for every string a path reaches here: prefixes
# plus one token stay within 4 characters, and every viable prefix of <= 4
# characters completes within 8 (close the open parentheses / braces).
PATHS = [(1, 3), (2, 1)]  # (token length in characters, path depth)


@pytest.mark.parametrize(("token_chars", "depth"), PATHS)
def test_ambiguous_left_recursive_nullable_grammar(naive, token_chars, depth):
    alphabet = "a+()b"
    literals = {name: {re.sub(r"\\", "", p)} for name, p in AMBIGUOUS_TERMS.items()}
    language = grammar_language(AMBIGUOUS_IR, literals, "start", alphabet, 8)
    # The enumeration agrees with lark's own Earley parser.
    parser = lark.Lark(AMBIGUOUS, parser="earley", lexer="dynamic_complete")
    for s in ["", "a", "a+", "(a)+b", "ab", "(", "a+(b)a", "+a", "()()", "(()"]:
        assert (s in language) == _parses(parser, s), s
    vocab = make_vocab(alphabet, token_chars)
    compiled = naive.compile(ca.Grammar(AMBIGUOUS), vocab)
    assert assert_masks_match(compiled, expectation(language, vocab), depth=depth) > 5


def _parses(parser: lark.Lark, s: str) -> bool:
    try:
        parser.parse(s)
    except lark.exceptions.LarkError:
        return False
    return True


JSONISH = r"""
start: value
value: obj | STRING | NUMBER
obj: "{" [pair ("," pair)*] "}"
pair: STRING ":" value
STRING: /"a*"/
NUMBER: /1+/
"""
JSONISH_IR = {
    "start": [["value"]],
    "value": [["obj"], ["STRING"], ["NUMBER"]],
    "obj": [["LBRACE", "RBRACE"], ["LBRACE", "pairs", "RBRACE"]],
    "pairs": [["pair"], ["pairs", "COMMA", "pair"]],
    "pair": [["STRING", "COLON", "value"]],
}
JSONISH_TERMS = {
    "STRING": ('"a*"', '"a'),
    "NUMBER": ("1+", "1"),
    "LBRACE": (r"\{", "{"),
    "RBRACE": (r"\}", "}"),
    "COMMA": (",", ","),
    "COLON": (":", ":"),
}


@pytest.mark.parametrize(("token_chars", "depth"), PATHS)
def test_tokens_spanning_terminals_json_like(naive, token_chars, depth):
    # Two-character tokens over the alphabet include bridges such as '{"', '",', '":', '"}'.
    alphabet = '{}":a1,'
    terminals = {  # each terminal enumerated over its own characters (speed)
        name: {s for s in strings_over(chars, 8) if re.fullmatch(pattern, s)}
        for name, (pattern, chars) in JSONISH_TERMS.items()
    }
    language = grammar_language(JSONISH_IR, terminals, "start", alphabet, 8)
    assert '{"a":1}' in language and '{"":{}}' in language and "{1:1}" not in language
    vocab = make_vocab(alphabet, token_chars)
    compiled = naive.compile(ca.Grammar(JSONISH), vocab)
    assert assert_masks_match(compiled, expectation(language, vocab), depth=depth) > 5


def test_bridge_tokens_json_like(naive):
    vocab = make_vocab('{}":a1,', 2)
    ids = {vocab.token_bytes(i): i for i in range(vocab.size)}
    compiled = naive.compile(ca.Grammar(JSONISH), vocab)
    checker = compiled.checker()
    path = [b'{"', b'a"', b":1", b',"', b'":', b"{}", b"}"]
    checker.update([ids[t] for t in path])
    assert checker.is_accepting()


def test_ignore_is_honoured(naive):
    grammar = 'start: "a" "b"\n%ignore " "'
    language = regex_language(r" *a *b *", "ab ", 9)  # texts + token <= 6, completion <= 2
    vocab = make_vocab("ab ", 2)
    compiled = naive.compile(ca.Grammar(grammar), vocab)
    assert assert_masks_match(compiled, expectation(language, vocab), depth=2) > 10


@pytest.mark.parametrize(
    ("grammar", "text"),
    [
        ('start: "a"\n%ignore /\\/\\/[^\\n]*/', "//a"),
        ('start: SP\nSP: " "\n%import common.WS\n%ignore WS', "\t "),
        ("start: RX\nRX: /a|ab/", "ab"),
        ('start: RX "c"\nRX: /a|ab/', "abc"),
    ],
)
def test_the_language_has_what_lark_s_lexer_policies_leave_out(naive, grammar, text):
    """The language reads a terminal as any of its regex's full matches
    and skips any match of an ``%ignore``d one; lark's Earley parser reads
    only the match Python's ``re`` finds at a position and its prefixes
    (``/a|ab/`` on ``ab``: ``a``), and skips an ignored terminal's longest
    match only (lexer policies, docs/architecture.md): ``//a`` is the
    comment ``//`` then ``a`` here, one comment for lark; a tab then the
    terminal ``SP``, where lark's whitespace takes both characters."""
    vocab = make_vocab("".join(sorted(set(text))), 1)
    ids = {vocab.token_bytes(i): i for i in range(vocab.size)}
    checker = naive.compile(ca.Grammar(grammar), vocab).checker()
    checker.update([ids[bytes([b])] for b in text.encode()])
    assert checker.is_accepting()
    parser = lark.Lark(grammar, parser="earley", lexer="dynamic_complete")
    with pytest.raises(lark.exceptions.LarkError):  # (the difference the docs state)
        parser.parse(text)


def test_common_imports_and_a_real_json_document(naive):
    grammar = r"""
        ?start: value
        ?value: object | array | string | SIGNED_NUMBER | "true" | "false" | "null"
        array: "[" [value ("," value)*] "]"
        object: "{" [pair ("," pair)*] "}"
        pair: string ":" value
        string: ESCAPED_STRING
        %import common.ESCAPED_STRING
        %import common.SIGNED_NUMBER
        %import common.WS
        %ignore WS
    """
    doc = json.dumps({"name": "é中", "n": [1, -2.5e3, True, None], "o": {}}, ensure_ascii=False)
    tokens = sorted({doc[i : i + k].encode() for k in (1, 2, 3) for i in range(len(doc) - k + 1)})
    vocab = ca.Vocabulary.from_list([b"<eos>", *tokens, b"\xe4"], eos=0)
    compiled = naive.compile(ca.Grammar(grammar), vocab)
    checker = compiled.checker()
    ids = {vocab.token_bytes(i): i for i in range(vocab.size)}
    data = doc.encode()
    i = 0
    while i < len(data):  # greedy 3-byte chunks: they cut é and 中 in the middle
        piece = data[i : i + 3]
        assert ids[piece] in checker.mask(), (i, piece)
        checker.update([ids[piece]])
        i += 3
    assert checker.is_accepting()
    checker.init()
    with pytest.raises(ca.TokenRejected):
        checker.update([ids[b"{"], ids[b"}"], ids[b"}"]])


@pytest.mark.parametrize(
    ("name", "start", "construct"),
    [
        ("python.lark", "file_input", "%declare"),  # indentation tokens come from a postlexer
        # STRING ends in a greedy (?:i)? after lazy .*?; OP /[?](?![a-z])/ peeks past its match
        ("lark.lark", "start", "mixing lazy and greedy|lookahead at the end"),
    ],
)
def test_grammars_shipped_with_lark_are_refused_by_name(naive, name, start, construct):
    path = Path(lark.__file__).parent / "grammars" / name
    vocab = ca.Vocabulary.from_list([b"<eos>", b"a"], eos=0)
    with pytest.raises(ca.UnsupportedConstraint, match=construct) as info:
        naive.compile(ca.Grammar(path.read_text(), start=start), vocab)
    assert info.value.backend == "naive"


def test_common_lark_terminals_load(naive):
    names = ["ESCAPED_STRING", "SIGNED_NUMBER", "CNAME", "WS", "NEWLINE", "C_COMMENT", "SH_COMMENT"]
    grammar = "start: " + " | ".join(names) + f"\n%import common ({', '.join(names)})\n"
    samples = {
        b'"a\\"b\\\\"': True,  # "a\"b\\" : escaped quote, then an escaped backslash
        b'"a"b"': False,  # the first unescaped quote closes the string
        b"-1.5e3": True,
        b"/* x */": True,
        b"/* x */ */": False,  # a C comment closes at the first */
        b"# c": True,
        b"_x1": True,
    }
    vocab = ca.Vocabulary.from_list([b"<eos>", *[bytes([c]) for c in range(32, 127)]], eos=0)
    compiled = naive.compile(ca.Grammar(grammar), vocab)
    for text, valid in samples.items():
        checker = compiled.checker()
        accepted = checker.validate([c - 31 for c in text]) == len(text) and (
            checker.update([c - 31 for c in text]) or checker.is_accepting()
        )
        assert accepted == valid, text


def test_declare_is_unsupported(naive):
    vocab = ca.Vocabulary.from_list([b"<eos>", b"a"], eos=0)
    with pytest.raises(ca.UnsupportedConstraint, match="%declare INDENT"):
        naive.compile(ca.Grammar('start: "a" INDENT\n%declare INDENT'), vocab)


def test_mixed_lazy_and_greedy_terminal_is_unsupported(naive):
    vocab = ca.Vocabulary.from_list([b"<eos>", b"a"], eos=0)
    with pytest.raises(ca.UnsupportedConstraint, match="mixing lazy and greedy"):
        naive.compile(ca.Grammar("start: T\nT: /a*?b+/"), vocab)


def test_grammar_deriving_nothing_is_an_error(naive):
    vocab = ca.Vocabulary.from_list([b"<eos>", b"a"], eos=0)
    with pytest.raises(ca.ConstraintError, match="derives no string"):
        naive.compile(ca.Grammar("start: start"), vocab)


def test_long_document_byte_by_byte_uses_the_memo(naive):
    grammar = 'start: item+\nitem: "[" /[a-z]+/ "]"'
    vocab = ca.Vocabulary.from_list([b"<eos>", *[bytes([c]) for c in b"[]abcxyz"]], eos=0)
    compiled = naive.compile(ca.Grammar(grammar), vocab)
    ids = {vocab.token_bytes(i): i for i in range(vocab.size)}
    checker = compiled.checker()
    for c in b"[abc][xyz]" * 50:
        checker.update([ids[bytes([c])]])
        assert checker.mask().count() >= 1
    assert checker.is_accepting()


def _ir(grammar: str) -> ca.GrammarIR:
    return ca.lower(ca.Grammar(grammar)).ir


def test_lazy_terminals_decide_as_built_ones():
    """``EarleyRecognizer(lazy=True)`` finds the terminals' states as the
    chart reaches them: the same verdict, prefix and sentence, on every
    string of up to 5 bytes over the grammar's alphabet."""
    from itertools import product

    from constrain_naive import EarleyRecognizer

    grammar = 'start: s\ns: s "+" t | t\nt: /a[ab]*/ | "(" s ")" | /b{2,3}/'
    built = EarleyRecognizer(_ir(grammar))
    lazy = EarleyRecognizer(_ir(grammar), lazy=True)
    seen = set()
    for n in range(6):
        for text in map(bytes, product(b"ab+()", repeat=n)):
            verdict = (built.run(text) is not None, built.accepts(text))
            assert (lazy.run(text) is not None, lazy.accepts(text)) == verdict, text
            seen.add(verdict)
    assert seen == {(True, True), (True, False), (False, False)}


def test_lazy_terminals_decide_a_grammar_too_big_to_build_whole():
    """A terminal whose minimal DFA has 2**17 states: built whole it passes
    the bound; lazily, a text visits a few of them."""
    from constrain_naive import EarleyRecognizer

    ir = _ir('start: "<" T ">"\nT: /(a|b)*a(a|b){16}/')
    with pytest.raises(ca.CompileLimitExceeded, match="terminal T"):
        EarleyRecognizer(ir, max_states=1000)
    lazy = EarleyRecognizer(ir, max_states=1000, lazy=True)
    assert lazy.accepts(b"<" + b"ba" + b"b" * 16 + b">")
    assert not lazy.accepts(b"<" + b"ab" + b"b" * 16 + b">")
    assert lazy.run(b"<abab") is not None and lazy.run(b"<abc") is None
