"""constrain_api.lark_imports: lark's bundled grammars trimmed to what a
grammar imports, giving lark the same grammar as its own load of the whole
file; anything it cannot trim, or a load that fails, is lark's own."""

from __future__ import annotations

import pytest
from constrain_conformance.corpus import C_SUBSET_GRAMMAR, JSON_GRAMMAR, XML_SCHEMA_GRAMMAR
from lark.load_grammar import load_grammar

import constrain_api as ca
from constrain_api import lark_imports, specs
from constrain_api.errors import ConstraintError

FORMS = [
    JSON_GRAMMAR,
    C_SUBSET_GRAMMAR,
    XML_SCHEMA_GRAMMAR,
    'start: INT "," WORD\n%import common (INT, WORD)\n',
    "start: N+\n%import common.NUMBER -> N\n%import common.WS\n%ignore WS\n",
    'start: CNAME "=" SIGNED_FLOAT\n%import common.CNAME\n%import common.SIGNED_FLOAT\n',
    # a name of the user's own beside an imported one that uses the same name inside
    'start: INT ":" ESCAPED_STRING\nINT: /[0-9]/\n%import common.ESCAPED_STRING\n',
    "start: LETTER+\n%import common.LETTER\n%import common.WS_INLINE\n%ignore WS_INLINE\n",
]


def _compiled(text: str, sources: list) -> tuple:
    grammar, _ = load_grammar(text, "<string>", sources, False)
    terminals, rules, ignore = grammar.compile(["start"], set())
    return [(t.name, t.pattern, t.priority) for t in terminals], str(rules), ignore


@pytest.mark.parametrize("text", FORMS)
def test_a_trimmed_import_gives_lark_the_same_grammar(text: str) -> None:
    source = lark_imports.loader(text)
    assert source is not None
    _, trimmed = source(None, "common.lark")
    assert len(trimmed.splitlines()) < 20  # common.lark has 30 definitions
    assert _compiled(text, [source]) == _compiled(text, [])


def test_only_the_imported_names_and_what_they_mention_are_given() -> None:
    source = lark_imports.loader("start: WS\n%import common.WS\n")
    assert source is not None
    resource, text = source(None, "common.lark")
    assert text == "WS: /[ \\t\\f\\r\\n]/+\n" and resource.path == "grammars/common.lark"
    _, number = lark_imports.loader("start: SIGNED_NUMBER\n%import common.SIGNED_NUMBER\n")(
        None, "common.lark"
    )
    names = {line.split(":")[0].strip() for line in number.splitlines()}
    assert names == {"SIGNED_NUMBER", "NUMBER", "FLOAT", "INT", "DIGIT", "DECIMAL", "_EXP",
                     "SIGNED_INT"}  # fmt: skip
    with pytest.raises(OSError):
        source(None, "python.lark")  # any other file: lark looks where it always does


def test_what_cannot_be_trimmed_is_left_to_lark() -> None:
    # python.lark has rules over several lines; NOPE is not in common.lark
    assert lark_imports.loader("start: NAME\n%import python.NAME\n") is None
    assert lark_imports.loader("start: NOPE\n%import common.NOPE\n") is None
    assert lark_imports.loader('start: "a"\n') is None


def test_errors_are_lark_own() -> None:
    """An import the trimmed file cannot satisfy is lark's to report: the
    spec's error is the one a load of the whole file gives."""
    text = "start: NOPE\n%import common.NOPE\n"
    with pytest.raises(Exception) as plain:
        load_grammar(text, "<string>", [], False)
    specs._loaded_grammar.cache_clear()
    specs._validate_grammar.cache_clear()
    with pytest.raises(ConstraintError) as ours:
        ca.Grammar(text)
    assert str(plain.value).splitlines()[0] in str(ours.value)
