"""constrain_api.lark_reader: a grammar it reads gives exactly what lark's
loader gives (terminal names and patterns, rules, ignored names); anything
else is left to lark (``None``), and specs report lark's own errors."""

from __future__ import annotations

import pkgutil
import random

import pytest
from constrain_conformance.corpus import (
    ARITHMETIC_GRAMMAR,
    C_SUBSET_GRAMMAR,
    JSON_GRAMMAR,
    KEYWORDS_GRAMMAR,
    NESTED_LIST_GRAMMAR,
    XML_SCHEMA_GRAMMAR,
)
from lark.load_grammar import _get_parser, load_grammar

import constrain_api as ca
from constrain_api import lark_reader
from constrain_api.automata import parse_regex
from constrain_api.errors import ConstraintError
from constrain_api.grammar import lower_grammar

#: grammars the reader must read (each exercises a part of the language)
READ = [
    JSON_GRAMMAR,
    C_SUBSET_GRAMMAR,
    XML_SCHEMA_GRAMMAR,
    ARITHMETIC_GRAMMAR,
    KEYWORDS_GRAMMAR,
    NESTED_LIST_GRAMMAR,
    # + and * make rules (named after the rule, numbered across the grammar),
    # shared by equal operands, in lark's bottom-up order
    'start: a+ (b c)* a+\n| (a | b)+ "x"*\na: "a"\nb: "b" b?\nc: ("c" a*)+ | "d"\n',
    # [] keeps a placeholder where ? keeps nothing
    'start: [a] [b] "c" a? a?\na: A\nb: B\nA: /a/\nB: /b/\n',
    # repeats, groups inside groups, ranges in rules and terminals
    'start: "x"~3 ("y" | "z")~1..3 NUM (("p") "q")~0..2\nNUM: ("0".."9")~2..4\n',
    # literals named as lark names them: punctuation, words, clashes, anonymous
    'start: "(" "if" "IF" "if"i /if/ /[0-9]+/ DIGITS "," COMMA\nDIGITS: /[0-9]+/\nCOMMA: ","\n',
    # a defined terminal of the same string takes the literal's place
    'start: "a" OTHER "+"\nOTHER: "+"\n',
    # aliases, modifiers, priorities, comments, continuation lines
    "?start: a -> one // a comment\n"
    "    | _b _b -> two  # another\n"
    "    // a comment between alternatives\n"
    '    | "c"\n'
    '!a.2: "x" "y"?\n'
    '_b: "b"\n'
    "TERM.3: /t/\n",
    # %ignore of a name, of a literal, of a pattern; imports in three forms
    'start: WORD ("," WORD)*\n%import common (WORD, WS_INLINE)\n%import common.NEWLINE -> NL\n'
    '%ignore WS_INLINE\n%ignore "#"\n%ignore /;+/\n%ignore NL\n',
    # imported terminals used inside the grammar's own
    'start: PAIR+\nPAIR: CNAME "=" SIGNED_NUMBER\n%import common.CNAME\n'
    "%import common.SIGNED_NUMBER\n%import common.WS\n%ignore WS\n",
    # flags on strings and regexes; a regex spanning lines under x
    'start: "select"i /a b/x "FROM"i /[A-Z]+/i\n',
    # terminals made of terminals; an unused rule, an unused terminal
    "start: ID\nID: LETTER (LETTER | DIGIT)*\nLETTER: /[a-z]/\nDIGIT: /[0-9]/\n"
    "unused: ID ID\nUNUSED: /u/\n",
    # empty alternatives and an empty rule body
    'start: "a" | \nempty: \nrec: rec "r" | empty\n',
    # a rule used only by itself is dropped (as lark drops it)
    'start: "s"\nself: self "x" | "y"\n',
]

#: grammars lark reads and the reader leaves to lark
LEFT_TO_LARK = [
    'start: pair{a, b}\npair{x, y}: x y\na: "a"\nb: "b"\n',  # templates
    "start: A B\n%declare B\nA: /a/\n",  # %declare
    'start: "a"\n%override start: "b"\n',  # %override
    'start: "a"\n%extend start: "b"\n',  # %extend
    'start: "a"~60\n',  # a repeat lark splits into rules of its own
    "start: x\n%import python.NAME -> x\n",  # another bundled grammar
]

#: texts lark rejects
REJECTED = [
    "start: a\n",  # undefined rule
    'start: "a"\nstart: "b"\n',  # defined twice
    'start: [a] [a]\na: "a"\n',  # rules defined twice (placeholders collide)
    "start: [a] [b] a? b?\na: A\nb: B\nA: /a/\nB: /b/\n",  # the same
    'start: "a" -> b | "a" -> c\n',  # the same expansion twice
    'start: ""\n',  # an empty terminal
    "start: A\nA: \n",  # an empty terminal definition
    'start: A\nA: a\na: "a"\n',  # a rule inside a terminal
    "start: A\nA: B\nB: A\n",  # recursion in terminals
    '__start: "a"\n',  # a reserved name
    '?_start: "a"\n',  # ? on an inlined rule
    '_start: "a" -> b\n',  # an alias on an inlined rule
    'start: "a"~3..1\n',  # a bad range
    "start: A\n%ignore B\nA: /a/\n",  # an ignored name not defined
    'start: "a\nb"\n',  # a newline in a string
    "start: /a\nb/\n",  # a newline in a regex without x
    'start: "a" "b\n',  # an unterminated string
    "start: a b c (\n",  # an unclosed group
    'start "a"\n',  # no colon
    'start: ("a" -> b)\n',  # an alias inside a group
]


def _lark(text: str, start: str = "start") -> tuple:
    grammar, _ = load_grammar(text, "<string>", [], False)
    terminals, rules, ignore = grammar.compile([start], set())
    return (
        [(t.name, t.pattern) for t in terminals],
        [(r.origin.name, tuple(s.name for s in r.expansion)) for r in rules],
        list(ignore),
    )


def _read(text: str, start: str = "start") -> tuple | None:
    read = lark_reader.read(text, start)
    if read is None:
        return None
    terminals, rules, ignore = read
    return [(t.name, t.pattern) for t in terminals], list(rules), list(ignore)


@pytest.mark.parametrize("text", READ)
def test_a_grammar_it_reads_is_what_lark_gives(text: str) -> None:
    read = _read(text)
    assert read is not None
    assert read == _lark(text)
    # patterns compared as lark compares them (type, text, flags): their text too
    for (_, mine), (_, theirs) in zip(read[0], _lark(text)[0], strict=True):
        assert mine.to_regexp() == theirs.to_regexp()


def test_the_tokens_are_lark_lexer_s_in_its_order() -> None:
    lexer = _get_parser().lexer
    order = [t.name for t in lexer.terminals]
    assert list(lark_reader._scanner().groupindex) == order  # named groups, in order
    assert lexer.ignore_types == lark_reader._IGNORED_TOKENS


def test_the_reader_names_rules_and_terminals_as_lark_does() -> None:
    terminals, rules, _ = lark_reader.read(READ[9], "start")
    assert [(t.name, t.pattern.value) for t in terminals] == [
        ("DIGITS", "[0-9]+"),
        ("COMMA", ","),
        ("LPAR", "("),  # punctuation by lark's table
        ("IF", "if"),  # a word upper-cased
        ("__ANON_0", "IF"),  # ... unless the name is taken
        ("__ANON_1", "if"),  # (with the i flag)
        ("__ANON_2", "if"),  # (a regex)
    ]
    rhs = ("LPAR", "IF", "__ANON_0", "__ANON_1", "__ANON_2", "DIGITS", "DIGITS", "COMMA")
    assert rules == [("start", (*rhs, "COMMA"))]
    _, rules, _ = lark_reader.read(READ[6], "start")
    # c's a* is start's a+ rule (lark keys those rules by operand), numbered on
    assert ("__c_plus_4", ("C", "__start_plus_0")) in rules
    assert ("__start_star_1", ("__start_star_1", "b", "c")) in rules


@pytest.mark.parametrize("text", LEFT_TO_LARK)
def test_what_it_does_not_read_is_left_to_lark(text: str) -> None:
    _lark(text)  # lark reads it
    assert lark_reader.read(text, "start") is None
    ca.Grammar(text)  # and the spec is valid through lark


@pytest.mark.parametrize("text", REJECTED)
def test_a_text_lark_rejects_is_left_to_lark_and_its_error(text: str) -> None:
    assert lark_reader.read(text, "start") is None
    with pytest.raises(ConstraintError):
        ca.Grammar(text)


def test_lark_bundled_grammars_are_read_as_lark_reads_them_or_left_to_it() -> None:
    for name, start in [("lark.lark", "start"), ("python.lark", "file_input")]:
        text = pkgutil.get_data("lark", f"grammars/{name}").decode()
        read = _read(text, start)
        assert read is None or read == _lark(text, start)


def test_a_start_that_is_not_a_rule_is_left_to_lark() -> None:
    assert lark_reader.read(JSON_GRAMMAR, "nothing") is None
    with pytest.raises(ConstraintError, match="start rule 'nothing' is not defined"):
        ca.Grammar(JSON_GRAMMAR, start="nothing")


def test_lowering_through_the_reader_equals_lowering_through_lark(monkeypatch) -> None:
    for text in READ:
        spec = ca.Grammar(text)
        mine = lower_grammar(spec)
        monkeypatch.setattr(lark_reader, "read", lambda *_: None)
        theirs = lower_grammar(spec)
        monkeypatch.undo()
        assert mine == theirs


def test_a_terminal_s_ast_when_lowering_gives_one_is_its_pattern_s() -> None:
    given = 0
    for text in READ:
        for terminal in lower_grammar(ca.Grammar(text)).terminals.values():
            if terminal.node is not None:  # lark's common.lark terminals
                given += 1
                assert terminal.node == parse_regex(terminal.pattern), terminal
    assert given >= 8


_PIECES = ['"', "/", "|", "?", "*", "+", "(", ")", "[", "]", "\n", " -> x", "~", "2", ".."]
_PIECES += ["_", "A"]


def _mutants(text: str, rng: random.Random, count: int) -> list[str]:
    out = []
    for _ in range(count):
        t = text
        for _ in range(rng.randint(1, 3)):
            i = rng.randrange(len(t) + 1)
            kind = rng.random()
            if kind < 0.4 and t:  # drop a piece
                t = t[:i] + t[i + rng.randint(1, 3) :]
            elif kind < 0.8:  # insert a token of the language
                t = t[:i] + rng.choice(_PIECES) + t[i:]
            else:  # repeat a line
                lines = t.split("\n")
                j = rng.randrange(len(lines))
                lines.insert(j, lines[j])
                t = "\n".join(lines)
        out.append(t)
    return out


def test_mutated_grammars_are_read_exactly_or_left_to_lark() -> None:
    rng = random.Random(20261127)
    read_count = left = 0
    for text in READ:
        for mutant in _mutants(text, rng, 100):
            mine = _read(mutant)
            if mine is None:
                left += 1
                continue
            read_count += 1
            assert mine == _lark(mutant), repr(mutant)
    # both sides are exercised (about 1 in 7 mutants is still a grammar lark reads)
    assert read_count > 150 and left > 1000, (read_count, left)
