"""A seeded corpus of hostile inputs: what a careless user or an attacker
could hand a backend. ``nox -s fuzz`` runs each case against every installed
backend in a process of its own (``fuzz.py``) and writes docs/reliability.md.

A case is a function ``run(backend_name, vocab) -> str`` returning ``"ok"``,
``"n/a"`` (the backend does not take that kind), ``"unjudged"`` (compiled,
but the oracle refuses it) or ``"wrong: ..."`` (a mask
that differs from the oracle's, a state changed by a rejected call, a
language that should have been refused); an exception it lets out is
classified by the runner as documented (``ca.ConstrainError``,
``TypeError``, ``ValueError``; ``RuntimeError`` where the protocol names it)
or not. Groups:

* ``malformed``: regexes, grammars and schemas that do not parse or mean nothing;
* ``explosive``: constraints whose automata or indices would explode (the
  compile budget and the size bounds must refuse them in time);
* ``empty``: languages with no string (``ConstraintError`` on every backend);
* ``edge``: small constraints at the edges of the engines (counts past 128, the empty text);
* ``misuse``: a checker called wrongly (bad ids, types, strides, rollbacks, two threads);
* ``files``: corrupt or absurd vocabulary files, a tampered disk cache;
* ``generated``: regexes, schemas and grammars drawn from ``random.Random(seed)``.

Compiled constraints are judged against the ``naive`` oracle along random
paths of its own masks (exact kinds: equal masks; the others: no token the
oracle forbids).
"""

from __future__ import annotations

import base64
import json
import random
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

import constrain_api as ca

from . import checks, paths

Run = Callable[[str, ca.Vocabulary], str]


@dataclass(frozen=True)
class Case:
    """One hostile input: ``name`` (unique), ``group``, what it does (``run``),
    the backends it applies to (``None``: all; ``("core",)``: once, not per
    backend) and, for a spec, the function that builds it (``spec``)."""

    name: str
    group: str
    run: Run
    backends: tuple[str, ...] | None = None
    spec: Callable[[], ca.Constraint] | None = None


# ----------------------------------------------------------------- judging


def judge(backend_name: str, spec: ca.Constraint, vocab: ca.Vocabulary, seed: int = 0) -> str:
    """Compile ``spec`` on the backend (``"n/a"`` for a kind it does not take)
    and compare it with the oracle along three random oracle paths."""
    backend = ca.get(backend_name)
    if not backend.capabilities.supports(spec.kind):
        return "n/a"
    compiled = backend.compile(spec, vocab)
    try:
        oracle = ca.get("naive").compile(spec, vocab)
    except ca.ConstrainError:
        return "unjudged"  # compiled, but the oracle refuses it: nothing to compare
    exact = backend.capabilities.is_exact(spec.kind)
    rng = random.Random(seed)
    for _ in range(3):
        path = paths.random_path(oracle, rng, 12)
        result = checks.compare_masks(compiled, oracle, path)
        if not (result.exact if exact else result.sound):
            return f"wrong: {result.describe(vocab)}"
    return "ok"


def spec_case(name: str, group: str, spec_factory: Callable[[], ca.Constraint]) -> Case:
    """A case compiling a spec (built in the child: a malformed one may raise there)."""
    return Case(name, group, lambda b, v: judge(b, spec_factory(), v), spec=spec_factory)


def empty_case(name: str, spec: ca.Constraint) -> Case:
    """A language with no string: the backend must raise ``ConstraintError``."""

    def run(backend_name: str, vocab: ca.Vocabulary) -> str:
        backend = ca.get(backend_name)
        if not backend.capabilities.supports(spec.kind):
            return "n/a"
        try:
            backend.compile(spec, vocab)
        except ca.ConstraintError:
            return "ok"
        return "wrong: compiled a constraint no text satisfies"

    return Case(name, "empty", run)


# ----------------------------------------------------------------- misuse

MISUSE_SPEC = ca.Regex("(ab|ac)+d")


def _checker(backend_name: str, vocab: ca.Vocabulary) -> ca.Checker:
    backend = ca.get(backend_name)
    kind = MISUSE_SPEC.kind
    return backend.compile(
        MISUSE_SPEC if backend.capabilities.supports(kind) else ca.Choice(["abd"]), vocab
    ).checker()


def _unchanged(call: Callable[[ca.Checker], object], expected: tuple[type[Exception], ...]) -> Run:
    """A misuse that must raise one of ``expected`` and leave the checker's mask as it was."""

    def run(backend_name: str, vocab: ca.Vocabulary) -> str:
        checker = _checker(backend_name, vocab)
        first = next(iter(sorted(set(checker.mask().allowed_ids().tolist()) - vocab.eos_ids)))
        checker.update([first])
        before = checker.mask()
        try:
            call(checker)
        except expected:
            pass
        else:
            return "wrong: the misuse was accepted"
        if checker.mask() != before:
            return "wrong: a rejected call changed the checker's state"
        return "ok"

    return run


def _fill(bitmask_factory: Callable[[int], np.ndarray], row: int = 0) -> Run:
    """``fill_mask`` into an odd but valid bitmask: the row must equal the
    mask, the other rows stay untouched; or a documented error."""

    def run(backend_name: str, vocab: ca.Vocabulary) -> str:
        checker = _checker(backend_name, vocab)
        bitmask = bitmask_factory(ca.bitmask_words(vocab.size))
        before = np.array(bitmask, copy=True)
        checker.fill_mask(bitmask, row)
        if not np.array_equal(np.asarray(bitmask[row]), checker.mask().words):
            return "wrong: the row is not the mask"
        others = [r for r in range(bitmask.shape[0]) if r != row]
        if not np.array_equal(np.asarray(bitmask)[others], before[others]):
            return "wrong: fill_mask wrote outside its row"
        return "ok"

    return run


def _two_threads(backend_name: str, vocab: ca.Vocabulary) -> str:
    """One checker hammered from two threads: documented errors or garbage
    states are the caller's fault; the process must not die."""
    checker = _checker(backend_name, vocab)
    bitmask = ca.allocate_bitmask(1, vocab.size)
    ids = sorted(set(checker.mask().allowed_ids().tolist()) - vocab.eos_ids)
    stop = threading.Event()

    def hammer() -> None:
        while not stop.is_set():
            try:
                checker.fill_mask(bitmask, 0)
                checker.update(ids[:1])
                checker.rollback(1)
            except (ca.ConstrainError, RuntimeError, ValueError):
                pass

    threads = [threading.Thread(target=hammer) for _ in range(2)]
    for t in threads:
        t.start()
    stop.wait(0.5)
    stop.set()
    for t in threads:
        t.join()
    return "ok"


def _after_eos(backend_name: str, vocab: ca.Vocabulary) -> str:
    checker = _checker(backend_name, vocab)
    checker.update([vocab.tokens.index(bytes([c])) for c in b"abd"])
    checker.update([vocab.eos_id])
    try:
        checker.update([vocab.tokens.index(b"a")])
    except ca.TokenRejected:
        return "ok" if checker.is_finished() else "wrong: not finished after EOS"
    return "wrong: a token after EOS was accepted"


def _compile_without_vocabulary(backend_name: str, vocab: ca.Vocabulary) -> str:
    ca.get(backend_name).compile(MISUSE_SPEC, None)  # type: ignore[arg-type]
    return "wrong: compiled for no vocabulary"


def _unknown_option(backend_name: str, vocab: ca.Vocabulary) -> str:
    ca.get(backend_name).compile(MISUSE_SPEC, vocab, max_staets=5)
    return "wrong: an unknown option was ignored"


MISUSE = [
    Case(
        "update-id-out-of-range",
        "misuse",
        _unchanged(lambda c: c.update([10**9]), (ca.TokenRejected, ValueError)),
    ),
    Case(
        "update-negative-id",
        "misuse",
        _unchanged(lambda c: c.update([-1]), (ca.TokenRejected, ValueError)),
    ),
    Case("update-float-id", "misuse", _unchanged(lambda c: c.update([3.9]), (TypeError,))),
    Case("update-string-id", "misuse", _unchanged(lambda c: c.update(["3"]), (TypeError,))),
    Case("update-none", "misuse", _unchanged(lambda c: c.update(None), (TypeError,))),
    Case("rollback-too-far", "misuse", _unchanged(lambda c: c.rollback(10), (ValueError,))),
    Case("rollback-negative", "misuse", _unchanged(lambda c: c.rollback(-1), (ValueError,))),
    Case("rollback-float", "misuse", _unchanged(lambda c: c.rollback(1.5), (TypeError,))),
    Case("fill-mask-list", "misuse", _unchanged(lambda c: c.fill_mask([0] * 64), (TypeError,))),
    Case(
        "fill-mask-float32",
        "misuse",
        _unchanged(lambda c: c.fill_mask(np.zeros((1, 64), np.float32)), (TypeError,)),
    ),
    Case(
        "fill-mask-narrow-row",
        "misuse",
        _unchanged(lambda c: c.fill_mask(np.zeros((1, 1), np.int32)), (ValueError, TypeError)),
    ),
    Case(
        "fill-mask-row-out-of-range",
        "misuse",
        _unchanged(lambda c: c.fill_mask(np.zeros((2, 64), np.int32), 5), (ValueError, IndexError)),
    ),
    Case(
        "fill-mask-fortran-order",
        "misuse",
        _fill(lambda w: np.asfortranarray(np.full((3, w), -7, np.int32)), 1),
    ),
    Case(
        "fill-mask-negative-stride",
        "misuse",
        _fill(lambda w: np.full((3, 2 * w), -7, np.int32)[::-1, ::2], 2),
    ),
    Case("two-threads-one-checker", "misuse", _two_threads),
    Case("update-after-eos", "misuse", _after_eos),
    Case("compile-for-no-vocabulary", "misuse", _compile_without_vocabulary),
    Case("compile-unknown-option", "misuse", _unknown_option),
]


# ------------------------------------------------------------------ files


def _tiktoken_file(lines: list[bytes]) -> Run:
    def run(backend_name: str, vocab: ca.Vocabulary) -> str:
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "bad.tiktoken"
            path.write_bytes(b"\n".join(lines))
            ca.Vocabulary.from_tiktoken(path, {"<eos>": 10**6}, eos="<eos>")
        return "wrong: a malformed rank file was loaded"

    return run


def _token(data: bytes) -> bytes:
    return base64.b64encode(data)


def _fst_cache_tampered(backend_name: str, vocab: ca.Vocabulary) -> str:
    """Flip bytes in every file of fst's disk cache: the next compile must
    rebuild (same masks as a fresh build) or refuse, never read garbage."""
    spec = ca.Regex("[a-c]+d")
    with tempfile.TemporaryDirectory() as folder:
        first = ca.get("fst", cache_dir=folder).compile(spec, vocab).checker().mask()
        for path in Path(folder).rglob("*"):
            if path.is_file():
                data = bytearray(path.read_bytes())
                for i in range(0, len(data), max(1, len(data) // 16)):
                    data[i] ^= 0x5A
                path.write_bytes(bytes(data))
        ca.clear_caches()
        again = ca.get("fst", cache_dir=folder).compile(spec, vocab).checker().mask()
    return "ok" if again == first else "wrong: a tampered cache changed the mask"


FILES = [
    Case(
        "tiktoken-absurd-rank", "files", _tiktoken_file([_token(b"a") + b" 1000000000"]), ("core",)
    ),
    Case(
        "tiktoken-not-base64", "files", _tiktoken_file([b"%%% 0", _token(b"b") + b" 1"]), ("core",)
    ),
    Case(
        "tiktoken-repeated-token",
        "files",
        _tiktoken_file([_token(b"a") + b" 0", _token(b"a") + b" 1"]),
        ("core",),
    ),
    Case("tiktoken-negative-rank", "files", _tiktoken_file([_token(b"a") + b" -3"]), ("core",)),
    Case("tiktoken-binary-garbage", "files", _tiktoken_file([bytes(range(256)) * 4]), ("core",)),
    Case("fst-cache-flipped-bytes", "files", _fst_cache_tampered, ("fst",)),
]


# ------------------------------------------------------------ hand-written

MALFORMED = [
    spec_case("regex-unbalanced", "malformed", lambda: ca.Regex("(ab")),
    spec_case("regex-bad-class", "malformed", lambda: ca.Regex("[z-a]")),
    spec_case("regex-nothing-to-repeat", "malformed", lambda: ca.Regex("*a")),
    spec_case("regex-backreference", "malformed", lambda: ca.Regex(r"(a)\1")),
    spec_case("regex-nul-and-surrogates", "malformed", lambda: ca.Regex("\x00[\ud800-\udfff]?")),
    spec_case("grammar-undefined-rule", "malformed", lambda: ca.Grammar("start: missing")),
    spec_case("grammar-garbage", "malformed", lambda: ca.Grammar("start: ((( ]]] ?? \x00")),
    spec_case("schema-type-number-5", "malformed", lambda: ca.JsonSchema({"type": 5})),
    spec_case(
        "schema-remote-ref",
        "malformed",
        lambda: ca.JsonSchema({"$ref": "http://example.com/x.json"}),
    ),
    spec_case(
        "schema-ref-cycle",
        "malformed",
        lambda: ca.JsonSchema(
            {"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"}
        ),
    ),
    spec_case(
        # a reference back to itself through anyOf alone: undefined (the
        # validator recurses forever), not the strings of its other branch
        "schema-ref-cycle-in-a-union",
        "malformed",
        lambda: ca.JsonSchema(
            {
                "$defs": {"a": {"anyOf": [{"$ref": "#/$defs/a"}, {"type": "string"}]}},
                "$ref": "#/$defs/a",
            }
        ),
    ),
    spec_case(
        "schema-bad-pattern",
        "malformed",
        lambda: ca.JsonSchema({"type": "string", "pattern": "(("}),
    ),
    spec_case("choice-empty-list", "malformed", lambda: ca.Choice([])),
]

EXPLOSIVE = [
    spec_case("regex-negated-class-5000", "explosive", lambda: ca.Regex('[^"]{0,5000}')),
    spec_case("regex-exponential-dfa", "explosive", lambda: ca.Regex("(a|b)*a(a|b){20}")),
    spec_case("regex-nested-counts", "explosive", lambda: ca.Regex("((a{1,30}b){1,30}c){1,30}")),
    spec_case("regex-huge-count", "explosive", lambda: ca.Regex("a{1000000}")),
    spec_case(
        "regex-many-lookaheads",
        "explosive",
        lambda: ca.Regex("".join(f"(?=.*{c})" for c in "abcdefghij") + "[a-j]{10,40}"),
    ),
    spec_case("grammar-500-keywords", "explosive", lambda: ca.Grammar(_keyword_grammar(500))),
    spec_case(
        "schema-enum-10000",
        "explosive",
        lambda: ca.JsonSchema({"enum": [f"value-{i}" for i in range(10_000)]}),
    ),
    spec_case(
        "schema-min-length-million",
        "explosive",
        lambda: ca.JsonSchema({"type": "string", "minLength": 10**6}),
    ),
    spec_case("schema-deep-nesting", "explosive", lambda: ca.JsonSchema(_nested(400))),
    spec_case(
        "schema-many-properties",
        "explosive",
        lambda: ca.JsonSchema(
            {
                "type": "object",
                "properties": {f"p{i}": {"type": "integer"} for i in range(300)},
                "required": [f"p{i}" for i in range(0, 300, 2)],
            }
        ),
    ),
    spec_case(
        "schema-tiny-multiple-of",
        "explosive",
        lambda: ca.JsonSchema({"type": "number", "multipleOf": 1e-9, "minimum": 0, "maximum": 1}),
    ),
]

EMPTY = [
    empty_case("empty-grammar-unproductive", ca.Grammar('start: "a" b\nb: b "c"')),
    empty_case("empty-regex-class", ca.Regex(r"[^\s\S]")),
    empty_case("empty-regex-lookahead", ca.Regex(r"a(?=b)c")),
    empty_case("empty-schema-false", ca.JsonSchema(False)),
    empty_case("empty-schema-enum", ca.JsonSchema({"enum": []})),
    empty_case(
        "empty-schema-bounds", ca.JsonSchema({"type": "integer", "minimum": 5, "maximum": 3})
    ),
    empty_case("empty-schema-self-ref", ca.JsonSchema({"$ref": "#"})),
]

EDGE = [
    spec_case("grammar-left-recursive", "edge", lambda: ca.Grammar('start: start "a" | "b"')),
    spec_case("choice-empty-text", "edge", lambda: ca.Choice([""])),
    spec_case("regex-empty", "edge", lambda: ca.Regex("")),
    spec_case("regex-count-129", "edge", lambda: ca.Regex('[^"]{0,129}')),
    spec_case("regex-at-least-130", "edge", lambda: ca.Regex("b{130,}")),
    spec_case("regex-non-ascii", "edge", lambda: ca.Regex("[é€😀]+")),
    spec_case(
        "schema-unicode-keys",
        "edge",
        lambda: ca.JsonSchema(
            {
                "type": "object",
                "properties": {"ключ": {"const": "\u0000\ud7ff"}},
                "required": ["ключ"],
            }
        ),
    ),
]


def _keyword_grammar(n: int) -> str:
    rng = random.Random(n)
    words = sorted(
        {"".join(rng.choice("abcdefghij") for _ in range(rng.randint(3, 9))) for _ in range(n)}
    )
    return 'start: item\nitem: kw | "[" item ("," item)* "]"\nkw: ' + " | ".join(
        f'"{w}"' for w in words
    )


def _nested(depth: int) -> dict:
    schema: dict = {"type": "integer"}
    for _ in range(depth):
        schema = {"type": "array", "items": schema}
    return schema


# -------------------------------------------------------------- generated

_ATOMS = ["a", "b", "[a-c]", "[^a]", ".", r"\d", r"\w", "é", "(?:ab|c)", r"\.", '[^"\\\\]']


def _random_regex(rng: random.Random, depth: int = 0) -> str:
    """A random pattern over a small alphabet, with counted repetitions of all sizes."""
    if depth > 3 or rng.random() < 0.3:
        atom = rng.choice(_ATOMS)
    elif rng.random() < 0.5:
        atom = "(" + "|".join(_random_regex(rng, depth + 1) for _ in range(rng.randint(2, 3))) + ")"
    else:
        atom = "(" + "".join(_random_regex(rng, depth + 1) for _ in range(rng.randint(2, 3))) + ")"
    roll = rng.random()
    if roll < 0.2:
        return atom + rng.choice(["*", "+", "?"])
    if roll < 0.45:  # mostly small counts (judged against the oracle), some past 128
        lo = rng.choice([0, 1, 2, 3, 7] if depth else [0, 1, 2, 7, 64, 129, 300])
        hi = lo + rng.choice([0, 1, 5, 20] if depth else [0, 1, 5, 100, 1000])
        return atom + f"{{{lo},{hi}}}"
    return atom


def _mutated(rng: random.Random, text: str) -> str:
    """``text`` with a few characters deleted, doubled or replaced by syntax."""
    chars = list(text)
    for _ in range(rng.randint(1, 3)):
        if not chars:
            break
        i = rng.randrange(len(chars))
        op = rng.random()
        if op < 0.4:
            del chars[i]
        elif op < 0.7:
            chars.insert(i, rng.choice("()[]{}|*+?\\^$\"'\n:"))
        else:
            chars[i] = chars[i] * 2
    return "".join(chars)


def _random_schema(rng: random.Random, depth: int = 0) -> dict:
    kind = rng.choice(
        ["string", "integer", "number", "array", "object", "enum", "anyOf", "oneOf", "not"]
    )
    if depth > 2 and kind in ("array", "object", "anyOf", "oneOf", "not"):
        kind = "string"
    if kind == "string":
        s: dict = {"type": "string"}
        if rng.random() < 0.5:
            s["pattern"] = _random_regex(rng, 2)
        if rng.random() < 0.4:
            s["maxLength"] = rng.choice([0, 1, 5, 200, 5000])
        if rng.random() < 0.3:
            s["minLength"] = rng.choice([0, 3, 50, 10**5])
        if rng.random() < 0.2:
            s["format"] = rng.choice(["date-time", "email", "uuid", "ipv6", "no-such-format"])
        return s
    if kind in ("integer", "number"):
        s = {"type": kind}
        for key in ("minimum", "maximum", "exclusiveMinimum", "multipleOf"):
            if rng.random() < 0.4:
                s[key] = rng.choice([0, 1, -7, 10**12, 0.5, 1e-7, 3])
        return s
    if kind == "array":
        s = {"type": "array", "items": _random_schema(rng, depth + 1)}
        if rng.random() < 0.5:
            s["minItems"], s["maxItems"] = rng.choice([(0, 3), (2, 1), (5, 500), (1, 10**6)])
        if rng.random() < 0.3:
            s["uniqueItems"] = True
        return s
    if kind == "object":
        names = [
            rng.choice(["a", "b", "ключ", "", "\\", '"']) + str(i) for i in range(rng.randint(0, 5))
        ]
        s = {"type": "object", "properties": {n: _random_schema(rng, depth + 1) for n in names}}
        s["required"] = [n for n in names if rng.random() < 0.5]
        s["additionalProperties"] = rng.choice([True, False, {"type": "integer"}])
        return s
    if kind == "enum":
        return {
            "enum": rng.sample(
                [1, "x", None, [1, 2], {"a": 1}, 1.0, True, "é", ""], rng.randint(0, 4)
            )
        }
    branches = [_random_schema(rng, depth + 1) for _ in range(rng.randint(1, 3))]
    return {"not": branches[0]} if kind == "not" else {kind: branches}


def generated(seed: int, count: int = 10) -> list[Case]:
    """``count`` random regexes, mutated regexes, schemas and mutated grammars from ``seed``."""
    rng = random.Random(seed)
    cases: list[Case] = []
    base_grammar = (
        'start: pair ("," pair)*\npair: KEY ":" VALUE\nKEY: /[a-z]+/\nVALUE: /[0-9]+/ | "true"'
    )
    for i in range(count):
        pattern = _random_regex(rng)
        cases.append(spec_case(f"gen-regex-{i}", "generated", lambda p=pattern: ca.Regex(p)))
        broken = _mutated(rng, pattern)
        cases.append(spec_case(f"gen-regex-mutated-{i}", "generated", lambda p=broken: ca.Regex(p)))
        schema = json.loads(json.dumps(_random_schema(rng)))
        cases.append(spec_case(f"gen-schema-{i}", "generated", lambda s=schema: ca.JsonSchema(s)))
        grammar = _mutated(rng, base_grammar)
        cases.append(
            spec_case(f"gen-grammar-mutated-{i}", "generated", lambda g=grammar: ca.Grammar(g))
        )
    return cases


def corpus(seed: int = 0, generated_count: int = 10) -> list[Case]:
    """Every case: hand-written first, then the generated ones from ``seed``."""
    return [
        *MALFORMED,
        *EXPLOSIVE,
        *EMPTY,
        *EDGE,
        *MISUSE,
        *FILES,
        *generated(seed, generated_count),
    ]


# ------------------------------------------------- the runner's own checks


def _segfault(backend_name: str, vocab: ca.Vocabulary) -> str:
    import ctypes

    ctypes.string_at(0)  # reads address 0: the process dies of SIGSEGV
    return "ok"


def _sleep(backend_name: str, vocab: ca.Vocabulary) -> str:
    threading.Event().wait()
    return "ok"


def _allocate(backend_name: str, vocab: ca.Vocabulary) -> str:
    blocks = []
    while True:  # touched pages, so the resident set grows
        blocks.append(np.ones(2**25, dtype=np.uint8))


def _undocumented(backend_name: str, vocab: ca.Vocabulary) -> str:
    return {}["no such key"]


def _refused(backend_name: str, vocab: ca.Vocabulary) -> str:
    raise ca.CompileLimitExceeded("max_seconds", 1.0, 2.0)


HARNESS = [
    Case("harness-ok", "harness", lambda b, v: "ok"),
    Case("harness-wrong", "harness", lambda b, v: "wrong: on purpose"),
    Case("harness-documented", "harness", _refused),
    Case("harness-undocumented", "harness", _undocumented),
    Case("harness-crash", "harness", _segfault),
    Case("harness-hang", "harness", _sleep),
    Case("harness-memory", "harness", _allocate),
]


def cases(name: str = "hostile", seed: int = 0, generated_count: int = 10) -> list[Case]:
    """The corpus ``name``: ``"hostile"`` (:func:`corpus`) or ``"harness"``,
    cases that misbehave on purpose so the runner's classification is tested."""
    if name == "harness":
        return list(HARNESS)
    return corpus(seed, generated_count)
