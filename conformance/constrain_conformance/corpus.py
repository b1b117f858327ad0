"""The corpus: constraints with valid and invalid documents, and vocabularies.

Small vocabularies are byte-level BPEs trained in the session with the
``tokenizers`` library on the corpus's own documents, so they are full of
bridge tokens (``{"``, ``",``, ``":``); the real Llama-3, Llama-2 and
Mistral vocabularies come from the shared folder when asked for.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass

import constrain_api as ca
from constrain_api import shared


@dataclass(frozen=True)
class Case:
    """A constraint, documents in its language and documents outside it."""

    name: str
    family: str
    spec: ca.Constraint
    valid: tuple[str, ...]
    invalid: tuple[str, ...] = ()


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

ARITHMETIC_GRAMMAR = r"""
?start: sum
?sum: product | sum "+" product | sum "-" product
?product: atom | product "*" atom | product "/" atom
?atom: NUMBER | "-" atom | "(" sum ")"
NUMBER: /[0-9]+(\.[0-9]+)?/
%ignore " "
"""

C_SUBSET_GRAMMAR = r"""
start: function+
function: type NAME "(" [param ("," param)*] ")" block
param: type NAME
type: "int" | "void" | "char"
block: "{" statement* "}"
?statement: "return" expr ";"
    | type NAME ["=" expr] ";"
    | NAME "=" expr ";"
    | "if" "(" expr ")" block ["else" block]
    | "while" "(" expr ")" block
    | expr ";"
?expr: term (OP term)*
?term: NUMBER | NAME | NAME "(" [expr ("," expr)*] ")" | "(" expr ")"
OP: "+" | "-" | "<" | ">" | "=="
NAME: /[a-zA-Z_][a-zA-Z0-9_]*/
NUMBER: /[0-9]+/
%import common.WS
%ignore WS
"""

# An XML document constrained by its schema, in the spirit of DOMINO's appendix.
XML_SCHEMA_GRAMMAR = r"""
start: "<person>" name age? email* "</person>"
name: "<name>" TEXT "</name>"
age: "<age>" INT "</age>"
email: "<email>" TEXT "@" TEXT "</email>"
TEXT: /[A-Za-z][A-Za-z .]*/
INT: /[0-9]+/
%import common.WS
%ignore WS
"""

IPV4 = r"((25[0-5]|2[0-4]\d|[01]?\d\d?)\.){3}(25[0-5]|2[0-4]\d|[01]?\d\d?)"
#: Keywords that are also names: ``if`` starts a statement or a name (``iffy``).
KEYWORDS_GRAMMAR = r"""
start: stmt+
stmt: "if" NAME "then" NAME ";" | NAME "=" NAME ";"
NAME: /[a-z]+/
%ignore " "
"""
KEYWORDS_DOCUMENTS = ("if x then y;iffy=z;", "ifx theny;", "a = b ; if b then c;")

#: Nested lists: recursion through an optional, comma-separated item list.
NESTED_LIST_GRAMMAR = r"""
start: list
list: "[" [item ("," item)*] "]"
item: list | NUMBER
NUMBER: /[0-9]+/
"""
NESTED_LIST_DOCUMENTS = ("[[1,[2,[]]],3]", "[]", "[[[[7]]]]")

DATE_TIME = r"\d{4}-[01]\d-[0-3]\dT[0-2]\d:[0-5]\d:[0-5]\d([+-][0-2]\d:[0-5]\d|Z)"
JSON_STRING = r'"([^"\\\x00-\x1f]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*"'

# In the spirit of Koo et al.'s appendix C.4 workloads (our own spellings):
# a multiple-choice answer and free quoted text.
MULTIPLE_CHOICE = r"The answer is \((A|B|C|D)\)\."
QUOTED_TEXT = r'"[^"\n]{0,40}"'

PERSON_SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 12},
        "age": {"type": "integer", "minimum": 0, "maximum": 150},
        "email": {"type": "string", "format": "email"},
        "tags": {"type": "array", "items": {"enum": ["a", "b", "c"]}, "maxItems": 3},
    },
    "required": ["name", "age"],
    "additionalProperties": False,
}

TREE_SCHEMA = {  # recursive: lowered to a grammar
    "$defs": {
        "node": {
            "type": "object",
            "properties": {
                "value": {"type": "number"},
                "children": {"type": "array", "items": {"$ref": "#/$defs/node"}},
            },
            "required": ["value"],
            "additionalProperties": False,
        }
    },
    "$ref": "#/$defs/node",
}

#: The hand-written cases the small vocabularies are trained on.
TRAINING_CASES: tuple[Case, ...] = (
    Case(
        "multiple-choice",
        "regex",
        ca.Regex(MULTIPLE_CHOICE),
        ("The answer is (B).", "The answer is (D)."),
        ("The answer is (E).", "The answer is B."),
    ),
    Case(
        "quoted-text",
        "regex",
        ca.Regex(QUOTED_TEXT),
        ('"hello world"', '""', '"a \\ b, ünïcode"'),
        ('"two\nlines"', '"unterminated'),
    ),
    Case(
        "person-schema",
        "json_schema",
        ca.JsonSchema(PERSON_SCHEMA),
        (
            '{"name":"Ada","age":36}',
            '{"name":"Bob","age":7,"email":"bob@example.com","tags":["a","c"]}',
            '{"name":"","age":150,"tags":[]}',
        ),
        (
            '{"name":"Ada"}',
            '{"name":"Ada","age":151}',
            '{"age":3,"name":"x"}',
            '{"name":"A","age":1,"x":2}',
        ),
    ),
    Case(
        "tree-schema",
        "json_schema",
        ca.JsonSchema(TREE_SCHEMA),
        ('{"value":1}', '{"value":-2.5,"children":[{"value":3},{"value":4,"children":[]}]}'),
        ('{"children":[]}', '{"value":1,"children":[{"value":"x"}]}'),
    ),
    Case(
        "ipv4",
        "regex",
        ca.Regex(IPV4),
        ("192.168.0.1", "8.8.8.8", "255.255.255.0"),
        ("256.1.1.1", "1.2.3", "1.2.3.4.5"),
    ),
    Case(
        "date-time",
        "regex",
        ca.Regex(DATE_TIME),
        ("2024-11-22T01:23:45Z", "1999-01-31T23:59:59+05:30"),
        ("2024-23-01T00:00:00Z", "2024-11-22 01:23:45Z"),
    ),
    Case(
        "json-string",
        "regex",
        ca.Regex(JSON_STRING),
        ('"hello"', '"a \\"quoted\\" é中 word"', '"\\u00e9"'),
        ('"unterminated', '"bad \\x escape"'),
    ),
    Case(
        "name-choice",
        "choice",
        ca.Choice(["Paris", "London", "Tokyo", "New York", "Newark"]),
        ("Paris", "New York", "Newark"),
        ("Berlin", "New", "Paris "),
    ),
    Case(
        "sentence-where",
        "where",
        ca.Where('stops_at(x, ".") and len(words(x)) <= 6'),
        ("The cat sat.", "Fine."),
        ("one two three four five six seven.", "No stop here"),
    ),
    Case(
        "json",
        "grammar",
        ca.Grammar(JSON_GRAMMAR),
        (
            '{"name": "Ada", "tags": ["x", 1.5e3, true, null]}',
            '[1, -2, {"k": {}}]',
            '{"é": "中文", "n": []}',
        ),
        ('{"a" 1}', "[1, 2,]", '{"a": tru}'),
    ),
    Case(
        "c-subset",
        "grammar",
        ca.Grammar(C_SUBSET_GRAMMAR),
        (
            "int main() { return 0; }",
            "void f(int a, char b) {\n  if (a < b) { a = a + 1; } else { b = 2; }\n"
            "  while (a) { f(a, b); }\n}",
        ),
        ("int main() { return 0 }", "int f( { }", "main() {}"),
    ),
    Case(
        "xml-schema",
        "grammar",
        ca.Grammar(XML_SCHEMA_GRAMMAR),
        (
            "<person><name>Ada Lovelace</name><age>36</age><email>ada@example.com</email></person>",
            "<person>\n  <name>Alan</name>\n</person>",
        ),
        ("<person><age>36</age></person>", "<person><name>Ada</name><age>x</age></person>"),
    ),
    Case(
        "arithmetic",
        "grammar",
        ca.Grammar(ARITHMETIC_GRAMMAR),
        ("1 + 2 * (3 - 4.5)", "-(7)/2", "((1))"),
        ("1 +", "(1", "2 ** 3"),
    ),
)

#: JSON-schema cases for the lowering's constructs that go past other
#: engines (``oneOf`` one JSON type at a time, "exactly one of these
#: members" or groups of members, dependencies, conditionals on one
#: member). Not in :func:`training_text`: the small vocabularies, and
#: every seeded test on them, stay as they were.
SCHEMA_CONSTRUCT_CASES: tuple[Case, ...] = (
    Case(  # oneOf of required members (the lowering: this one's, each other's absent)
        "exactly-one-member-schema",
        "json_schema",
        ca.JsonSchema(
            {
                "type": "object",
                "properties": {"email": {"type": "string"}, "phone": {"type": "string"}},
                "oneOf": [{"required": ["email"]}, {"required": ["phone"]}],
                "additionalProperties": False,
            }
        ),
        ('{"email":"a@b.c"}', '{"phone":"+1 555"}'),
        ("{}", '{"email":"a@b.c","phone":"+1 555"}', '{"phone":5}'),
    ),
    Case(  # oneOf told apart by a member's values, one JSON type at a time
        "shapes-schema",
        "json_schema",
        ca.JsonSchema(
            {
                "properties": {
                    "shape": {"enum": ["circle", "square"]},
                    "r": {"type": "number"},
                    "side": {"type": "number"},
                },
                "oneOf": [
                    {"properties": {"shape": {"const": "circle"}}, "required": ["shape", "r"]},
                    {"properties": {"shape": {"const": "square"}}, "required": ["shape", "side"]},
                ],
            }
        ),
        ('{"shape":"circle","r":1.5}', '{"shape":"square","side":2}'),
        ("5", '{"shape":"circle"}', '{"shape":"square","r":1}', '"circle"'),
    ),
    Case(  # oneOf of open objects told apart by a tag no branch requires (split by it)
        "tagged-oneof-schema",
        "json_schema",
        ca.JsonSchema(
            {
                "type": "object",
                "oneOf": [
                    {
                        "properties": {
                            "country": {"const": f"c{i}"},
                            "state": {"enum": [f"s{i}", f"s{i + 1}"]},
                            "zip": {"type": "string", "maxLength": 4},
                        }
                    }
                    for i in range(8)
                ],
            }
        ),
        (
            '{"country":"c3","state":"s4"}',
            '{"state":"s0"}',
            '{"state":"s8","zip":"12"}',
            '{"country":"c7","extra":1}',
        ),
        (
            "{}",
            '{"state":"s1"}',
            '{"country":"zz"}',
            '{"country":"c3","state":"s0"}',
            '{"zip":"1"}',
        ),
    ),
    Case(  # oneOf told apart by the types and member counts its unions take
        "union-shapes-schema",
        "json_schema",
        ca.JsonSchema(
            {
                "$defs": {
                    "link": {
                        "type": "object",
                        "properties": {"id": {"type": "string", "maxLength": 3}},
                        "required": ["id"],
                        "additionalProperties": False,
                    },
                    "one": {"anyOf": [{"type": "null"}, {"$ref": "#/$defs/link"}]},
                    "repo": {
                        "type": "object",
                        "oneOf": [
                            {
                                "properties": {"t": {"const": "vcs"}, "url": {"maxLength": 4}},
                                "required": ["t", "url"],
                                "additionalProperties": False,
                            },
                            {
                                "properties": {"t": {"const": "pkg"}, "p": {"type": "integer"}},
                                "required": ["t", "p"],
                                "additionalProperties": False,
                            },
                        ],
                    },
                },
                "type": "object",
                "properties": {
                    "data": {
                        "oneOf": [
                            {"$ref": "#/$defs/one"},
                            {"type": "array", "items": {"$ref": "#/$defs/link"}, "maxItems": 2},
                        ]
                    },
                    "repos": {
                        "type": "array",
                        "maxItems": 2,
                        "items": {
                            "oneOf": [
                                {"$ref": "#/$defs/repo"},
                                {
                                    "type": "object",
                                    "additionalProperties": {"const": False},
                                    "minProperties": 1,
                                    "maxProperties": 1,
                                },
                            ]
                        },
                    },
                },
                "required": ["data"],
                "additionalProperties": False,
            }
        ),
        (
            '{"data":null}',
            '{"data":{"id":"ab"},"repos":[{"x":false}]}',
            '{"data":[],"repos":[{"t":"vcs","url":"u"},{"t":"pkg","p":2}]}',
            '{"data":[{"id":"a"},{"id":""}]}',
        ),
        (
            '{"data":"a"}',
            '{"repos":[]}',
            '{"data":{"id":1}}',
            '{"data":null,"repos":[{"x":true}]}',
            '{"data":null,"repos":[{"t":"vcs"}]}',
        ),
    ),
    Case(  # draft-07 dependencies: a member absent, or present with what it requires
        "dependencies-schema",
        "json_schema",
        ca.JsonSchema(
            {
                "$schema": "http://json-schema.org/draft-07/schema#",
                "type": "object",
                "properties": {"card": {"type": "string"}, "billing": {"type": "string"}},
                "dependencies": {"card": ["billing"]},
                "additionalProperties": False,
            }
        ),
        ("{}", '{"billing":"Paris"}', '{"card":"4111","billing":"Paris"}'),
        ('{"card":"4111"}', '{"card":4111,"billing":"Paris"}'),
    ),
    Case(  # if/then/else on one member's values (the lowering: cases of that member)
        "discriminated-conditionals-schema",
        "json_schema",
        ca.JsonSchema(
            {
                "type": "object",
                "properties": {"kind": {"enum": ["a", "b", "c"]}, "n": {"type": "integer"}},
                "required": ["kind"],
                "allOf": [
                    {"if": {"properties": {"kind": {"const": "a"}}}, "then": {"required": ["n"]}},
                    {
                        "if": {"properties": {"kind": {"const": "b"}}},
                        "then": {"properties": {"n": False}},
                    },
                ],
                "additionalProperties": False,
            }
        ),
        ('{"kind":"a","n":1}', '{"kind":"b"}', '{"kind":"c","n":2}', '{"kind":"c"}'),
        ('{"kind":"a"}', '{"kind":"b","n":1}', '{"n":1}'),
    ),
    Case(  # if/then/else on anything (the lowering: if and then, or not-if and else)
        "negated-conditional-schema",
        "json_schema",
        ca.JsonSchema(
            {
                "type": "object",
                "properties": {"country": {"type": "string"}, "zip": {"type": "string"}},
                "required": ["zip"],
                "if": {"properties": {"country": {"const": "US"}}, "required": ["country"]},
                "then": {"properties": {"zip": {"pattern": "^[0-9]{5}$"}}},
                "else": {"properties": {"zip": {"maxLength": 3}}},
                "additionalProperties": False,
            }
        ),
        ('{"country":"US","zip":"12345"}', '{"country":"FR","zip":"750"}', '{"zip":"123"}'),
        ('{"country":"US","zip":"1234"}', '{"country":"FR","zip":"75001"}', '{"zip":"12345"}'),
    ),
    Case(  # oneOf of groups of members (the lowering: one of each other group absent)
        "exactly-one-group-schema",
        "json_schema",
        ca.JsonSchema(
            {
                "type": "object",
                "properties": {"r": {"type": "number"}, "w": {"type": "number"}, "h": {}},
                "oneOf": [{"required": ["r"]}, {"required": ["w", "h"]}],
                "additionalProperties": False,
            }
        ),
        ('{"r":1}', '{"w":2,"h":3}', '{"r":1,"w":2}'),
        ('{"r":1,"w":2,"h":3}', '{"w":2}', "{}"),
    ),
    Case(  # contains with a most (the lowering: hits between runs of misses)
        "contains-schema",
        "json_schema",
        ca.JsonSchema(
            {
                "type": "array",
                "items": {"type": "integer"},
                "contains": {"minimum": 10},
                "minContains": 1,
                "maxContains": 2,
            }
        ),
        ("[10]", "[1,12,3]", "[10,2,11]", "[0,10,-4,99]"),
        ("[]", "[1,2]", "[10,11,12]", '[10,"a"]'),
    ),
    Case(  # not of an object schema (the lowering: the ways a value fails it)
        "not-object-schema",
        "json_schema",
        ca.JsonSchema(
            {
                "type": ["object", "string"],
                "not": {
                    "type": "object",
                    "properties": {"id": {"type": "string"}, "tag": {"enum": ["a", "b"]}},
                    "required": ["id"],
                },
            }
        ),
        ('"x"', "{}", '{"id":7}', '{"id":"1","tag":"c"}', '{"tag":"a"}'),
        ('{"id":"7"}', '{"id":"1","tag":"a"}', "3", "null"),
    ),
    Case(  # a format and a pattern, and a length bound (the lowering: an
        # intersection of automata, no regex text: text engines refuse it)
        "pattern-and-format-schema",
        "json_schema",
        ca.JsonSchema(
            {
                "type": "object",
                "properties": {
                    "day": {"type": "string", "format": "date", "pattern": "^2024-"},
                    "ref": {"type": "string", "pattern": "^[a-z]+(:[a-z]+)*$", "maxLength": 6},
                },
                "required": ["day", "ref"],
                "additionalProperties": False,
            }
        ),
        ('{"day":"2024-02-29","ref":"ab:c"}', '{"day":"2024-12-01","ref":"abcdef"}'),
        (
            '{"day":"2023-02-28","ref":"a"}',
            '{"day":"2024-02-30","ref":"a"}',
            '{"day":"2024-01-01","ref":"abcdefg"}',
            '{"day":"2024-01-01","ref":"a:"}',
        ),
    ),
    Case(  # a pattern searched for in a string of 8 to 32 characters: the
        # bound splits the length around the match, one option per split,
        # whose automaton passes 100,000 states; the lowering gives the
        # automata forms the intersection (text engines get the text)
        "length-bounded-search-schema",
        "json_schema",
        ca.JsonSchema(
            {
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "password": {
                        "type": "string",
                        "pattern": "[0-9]",
                        "minLength": 8,
                        "maxLength": 32,
                    },
                },
                "required": ["name"],
            }
        ),
        (
            '{"name":"a","password":"abcdefg1"}',
            '{"name":"","password":"1bcdefghijklmnopqrstuvwxyzabcdef"}',
            '{"name":"b"}',
        ),
        (
            '{"name":"a","password":"abcdefgh"}',
            '{"name":"a","password":"abcde12"}',
            '{"name":"a","password":"1bcdefghijklmnopqrstuvwxyzabcdefg"}',
        ),
    ),
    Case(  # lookaheads in patterns (the lowering: a difference and an
        # intersection of automata, no regex text: text engines refuse it)
        "lookahead-pattern-schema",
        "json_schema",
        ca.JsonSchema(
            {
                "type": "object",
                "properties": {
                    "user": {"type": "string", "pattern": "^(?!admin$)[a-z]+$"},
                    "pin": {"type": "string", "pattern": "^(?=.*7)[0-9]{4}$"},
                },
                "required": ["user", "pin"],
                "additionalProperties": False,
            }
        ),
        (
            '{"user":"bob","pin":"1737"}',
            '{"user":"adm","pin":"7000"}',
            '{"user":"admins","pin":"1237"}',
        ),
        (
            '{"user":"admin","pin":"7777"}',
            '{"user":"bob","pin":"1234"}',
            '{"user":"bob","pin":"77777"}',
            '{"user":"Bob","pin":"7777"}',
        ),
    ),
    Case(  # oneOf whose branch fails the other in two overlapping ways (ok
        # absent; rev not a string): lowered as disjoint ways, an unambiguous
        # grammar an LALR(1) parser takes (CouchDB's _bulk_docs answer)
        "exclusive-ways-schema",
        "json_schema",
        ca.JsonSchema(
            {
                "type": "array",
                "items": {
                    "type": "object",
                    "oneOf": [
                        {
                            "properties": {
                                "error": {"type": "string"},
                                "reason": {"type": "string"},
                            },
                            "required": ["error", "reason"],
                        },
                        {
                            "properties": {"ok": {"type": "boolean"}, "rev": {"type": "string"}},
                            "required": ["ok"],
                        },
                    ],
                },
            }
        ),
        (
            '[{"ok":true,"rev":"1-a"},{"error":"conflict","reason":"x"}]',
            '[{"error":"e","reason":"r","rev":3}]',
            '[{"error":"e","reason":"r","ok":true,"rev":[]}]',
            "[]",
        ),
        (
            '[{"error":"e","reason":"r","ok":true}]',
            '[{"error":"e","reason":"r","ok":false,"rev":"2"}]',
            '[{"error":"e"}]',
            '[{"rev":"1"}]',
        ),
    ),
    Case(  # oneOf of branches with members of their own (the lowering: each
        # branch and, per other branch, one way its values fail that one)
        "exclusive-members-schema",
        "json_schema",
        ca.JsonSchema(
            {
                "type": "object",
                "oneOf": [
                    {"properties": {"city": {"type": "string"}}, "required": ["city"]},
                    {"properties": {"zip": {"enum": ["75001", "10115"]}}, "required": ["zip"]},
                ],
            }
        ),
        (
            '{"city":"Paris"}',
            '{"zip":"10115"}',
            '{"city":"Paris","zip":"1"}',
            '{"zip":"75001","city":7}',
        ),
        ('{"city":"Paris","zip":"75001"}', '{"zip":"1"}', "{}", '{"city":7}'),
    ),
)

#: Schema-construct cases whose lowering holds a piece with no regex text (an
#: intersection of automata): backends that print regexes refuse them.
TEXTLESS_CASES = frozenset({"pattern-and-format-schema", "lookahead-pattern-schema"})

#: A grammar with a rule and a terminal that derive no string: a backend that
#: compiles them as they are lets a text into them (the ``[``) that no
#: document completes (the production engines did, before their adapters
#: compiled the reduced grammar). LALR(1) without conflicts.
DEAD_RULES_GRAMMAR = r"""
start: "[" dead "]" | item ("," item)*
dead: "(" dead
item: "a" | NEVER "b"
NEVER: /(?!a)a/
"""

#: A terminal that is ``%ignore``d and used by a rule: each match of it is
#: either (``domino`` once only ignored it, so ``a b`` was out).
IGNORED_SYMBOL_GRAMMAR = r"""
start: "a" (SP "b")*
SP: " "
%ignore SP
"""

#: Grammar-construct cases (not trained on: the small vocabularies stay as they are).
GRAMMAR_CONSTRUCT_CASES: tuple[Case, ...] = (
    Case(
        "dead-rules-grammar",
        "grammar",
        ca.Grammar(DEAD_RULES_GRAMMAR),
        ("a", "a,a,a"),
        ("[", "[(]", "b", "a,"),
    ),
    Case(
        "ignored-symbol-grammar",
        "grammar",
        ca.Grammar(IGNORED_SYMBOL_GRAMMAR),
        ("a", "a b", " a  b b ", "a b  "),
        ("ab", "b", "a bb", "a b b b c"),
    ),
)

#: Every hand-written case: the small vocabularies' training cases, then the
#: schema and grammar constructs.
CASES: tuple[Case, ...] = TRAINING_CASES + SCHEMA_CONSTRUCT_CASES + GRAMMAR_CONSTRUCT_CASES


@functools.lru_cache(maxsize=4)
def maskbench_cases(count: int, per_schema: int = 3) -> tuple[Case, ...]:
    """Up to ``count`` MaskBench schemas from the shared folder (spread evenly
    over the sorted files) that the core lowers, each with up to
    ``per_schema`` valid and invalid instances. Empty when the data is absent."""
    try:
        files = sorted(shared.shared_file("maskbench/data").glob("*.json"))
    except FileNotFoundError:
        return ()
    entries = ((f"maskbench-{p.stem}", json.loads(p.read_text())) for p in files)
    return _schema_cases(entries, len(files), count, per_schema)


@functools.lru_cache(maxsize=4)
def schema_suite_cases(count: int, per_schema: int = 3) -> tuple[Case, ...]:
    """Up to ``count`` schemas of the JSON Schema Test Suite (draft 2020-12)
    that the core lowers, like :func:`maskbench_cases`."""
    try:
        folder = shared.shared_file("json-schema-test-suite/tests/draft2020-12")
    except FileNotFoundError:
        return ()
    groups = [
        (f"suite-{p.stem}-{i}", group)
        for p in sorted(folder.glob("*.json"))
        for i, group in enumerate(json.loads(p.read_text()))
    ]
    return _schema_cases(iter(groups), len(groups), count, per_schema)


def _schema_cases(entries, total: int, count: int, per_schema: int) -> tuple[Case, ...]:
    """Cases from ``(name, {"schema", "tests": [{"data", "valid"}]})`` entries:
    instances spelled as the lowered language spells them (``instance_text``)."""
    if count <= 0:
        return ()
    from constrain_api.jsonschema import instance_text, lower_json_schema

    stride = max(1, total // (2 * count))  # oversampled: some are refused
    cases: list[Case] = []
    for k, (name, data) in enumerate(entries):
        if len(cases) == count:
            break
        if k % stride:
            continue
        try:
            spec = ca.JsonSchema(data["schema"])
            lower_json_schema(spec)
        except (ca.UnsupportedConstraint, ca.CompileLimitExceeded, ca.ConstraintError):
            continue
        texts: dict[bool, list[str]] = {True: [], False: []}
        for test in data["tests"]:
            texts[bool(test["valid"])].append(instance_text(data["schema"], test["data"]))
        if texts[True]:
            valid, invalid = tuple(texts[True][:per_schema]), tuple(texts[False][:per_schema])
            cases.append(Case(name, "json_schema", spec, valid, invalid))
    return tuple(cases)


def training_text() -> list[str]:
    """Documents the small BPE vocabularies are trained on."""
    docs = [d for case in TRAINING_CASES for d in case.valid + case.invalid]
    return docs * 20 + ['{"key": "value", "list": [1, 2, 3]}'] * 50


@functools.lru_cache(maxsize=4)
def small_vocabulary(vocab_size: int = 400) -> ca.Vocabulary:
    """A byte-level BPE of ``vocab_size`` tokens trained on the corpus (all 256
    bytes are tokens, so every path kind exists), with EOS ``<|eos|>``."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    # No pre-tokenizer split: merges may cross punctuation and words, as in
    # real vocabularies with tokens like '",' or '":'.
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=["<|eos|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(training_text(), trainer)
    return ca.Vocabulary.from_tokenizer(tok, eos="<|eos|>", name=f"bpe{vocab_size}")


REAL_VOCABULARIES = {
    "llama3": ("vocab/llama3/tokenizer.model", ca.Vocabulary.from_llama3),
    "llama2": ("vocab/llama2/tokenizer.model", ca.Vocabulary.from_sentencepiece),
    "mistral-v3": ("vocab/mistral-v3/tokenizer.model", ca.Vocabulary.from_sentencepiece),
}


@functools.lru_cache(maxsize=4)
def real_vocabulary(name: str) -> ca.Vocabulary:
    """A real vocabulary from the shared folder (``FileNotFoundError`` when absent)."""
    relative, load = REAL_VOCABULARIES[name]
    return load(shared.shared_file(relative))
