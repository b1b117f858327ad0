"""Backend ``xgrammar``: the Checker protocol on XGrammar's ``GrammarMatcher``.

XGrammar (MLC; the default structured-output engine of vLLM and SGLang)
compiles a grammar into a character-level pushdown automaton and, at
compile time, splits the vocabulary per automaton position into tokens it
can decide without the stack (context-independent, cached) and the few it
must check against the stack at run time (context-dependent). The adapter
follows its ``GrammarCompiler``/``GrammarMatcher`` split: one compiler (and
``TokenizerInfo``) per vocabulary, one ``CompiledGrammar`` per constraint,
one matcher per checker.

The protocol's bookkeeping (EOS allowed iff the matcher ``is_completed()``
and kept from it, atomic ``update``, special tokens, the mask's EOS/special
bits) is the core's ``MatcherChecker``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import xgrammar as xgr

from constrain_api import (
    BaseBackend,
    BaseCompiled,
    BaseCompiler,
    Capabilities,
    CompileStats,
    MatcherChecker,
    UnsupportedConstraint,
    Vocabulary,
)
from constrain_api.automata import DEFAULT_MAX_STATES, Node, check_nfa_size, nfa_limit

from .ebnf import DEFAULT_MAX_RULE_STATES, NAME, automaton_rules, grammar_ebnf

KINDS = frozenset({"regex", "choice", "grammar", "json_schema"})
JSON_MODES = ("engine", "lowering")


class XGrammarCompiler(BaseCompiler):
    """XGrammar's own ``GrammarCompiler`` over the vocabulary's ``TokenizerInfo``;
    a constraint as EBNF (or, opt-in, XGrammar's JSON-schema converter)."""

    def __init__(self, backend, vocab):
        super().__init__(backend, vocab)
        info = xgr.TokenizerInfo(
            _encoded_vocabulary(vocab),
            xgr.VocabType.RAW,
            vocab_size=vocab.size,
            stop_token_ids=sorted(vocab.eos_ids) or None,
        )
        self.engine = xgr.GrammarCompiler(info, max_threads=backend.max_threads)

    def compile_native(self, spec, options) -> XGrammarCompiled | None:
        """A JSON schema to XGrammar's converter (``json_schema="engine"``)."""
        if spec.kind == "json_schema" and self.backend.json_schema == "engine":
            return self._compiled(spec, lambda: _engine_json(self.engine, spec))
        return None

    def compile_regular(self, language, spec, options) -> XGrammarCompiled:
        def expression() -> Node:  # (past max_rule_states: counted before XGrammar expands it)
            node = language.regex_node()
            check_nfa_size(node, options.max_nfa_states, "counted before XGrammar expands it")
            return node

        rules = automaton_rules(language.dfa, expression, "root", options.max_rule_states)
        text = "\n".join(rules) + "\n"
        return self._compiled(spec, lambda: self.engine.compile_grammar(text))

    def compile_grammar(self, grammar, spec, options) -> XGrammarCompiled:
        # the reduced grammar: the engine keeps rules that derive no string
        # and would let a text into one (a mask wider than the language)
        ir = grammar.reduce(lazy=True).as_ir()
        for name, terminal in ir.terminals.items():
            check_nfa_size(terminal.ast(), options.max_nfa_states, f"terminal {name}")
        text = grammar_ebnf(ir, options.max_rule_states)
        return self._compiled(spec, lambda: self.engine.compile_grammar(text))

    def _compiled(self, spec, compile_: Any) -> XGrammarCompiled:
        try:
            grammar = compile_()
        except RuntimeError as e:  # XGrammar's parser and converters report this way
            raise UnsupportedConstraint(NAME, spec.kind, f"xgrammar: {e}") from None
        stats = CompileStats(
            bytes=grammar.memory_size_bytes, extra={"json_schema": self.backend.json_schema}
        )
        return XGrammarCompiled(spec, self.vocab, stats, grammar)

    def clear_cache(self, *names: str) -> None:
        """Also empties XGrammar's own cache of compiled grammars (``"engine"``)."""
        super().clear_cache(*names)
        if not names or "engine" in names:
            self.engine.clear_cache()


class XGrammarBackend(BaseBackend):
    """XGrammar behind the protocol.

    Options (constructor): ``json_schema`` — ``"lowering"`` (default: the
    core's lowering, compiled as EBNF; exact) or ``"engine"`` (XGrammar's own
    JSON-schema converter, with the spec's whitespace and
    ``additional_properties`` policies as its options; its language allows
    some documents the schema's language does not — invalid JSON among them —
    so it is opt-in, see the README); ``max_threads`` for XGrammar's compiler;
    ``max_nfa_states`` (also per ``compile``; default 401,000, the core's
    NFA bound): a regex (or a grammar terminal) that expands to more NFA
    states (counted on its AST) is refused before XGrammar, which cannot be
    interrupted, expands it; ``max_rule_states`` (also per ``compile``;
    default 4,096; 0: none): a regular constraint, grammar terminal or run
    of ignored terminals whose minimal automaton has at most this many
    states is printed as one rule per state, whose tokens XGrammar decides
    at compile time (steps of µs, a compile that scans the vocabulary once
    per state); a bigger one as one expression, whose repetitions XGrammar
    checks at every step (README).
    """

    name = NAME
    compiler_class = XGrammarCompiler
    compile_options = ("max_nfa_states", "max_rule_states")

    def __init__(
        self,
        json_schema: str = "lowering",
        max_threads: int = 1,
        max_nfa_states: int = nfa_limit(DEFAULT_MAX_STATES),
        max_rule_states: int = DEFAULT_MAX_RULE_STATES,
    ):
        if json_schema not in JSON_MODES:
            raise ValueError(f"json_schema must be one of {JSON_MODES}, got {json_schema!r}")
        self.json_schema = json_schema
        self.max_threads = max_threads
        self.max_nfa_states = max_nfa_states
        if type(max_rule_states) is not int or max_rule_states < 0:
            raise ValueError(f"max_rule_states must be an int >= 0, got {max_rule_states!r}")
        self.max_rule_states = max_rule_states
        exact = {"regex", "choice", "grammar"}
        if json_schema == "lowering":
            exact.add("json_schema")
        self.capabilities = Capabilities(
            kinds=KINDS,
            exact=frozenset(exact),
            notes=(
                "json_schema='engine' (opt-in) is XGrammar's JSON language: it allows "
                "documents the schema's language forbids (plugins/xgrammar/README.md)"
            ),
        )


def _encoded_vocabulary(vocab: Vocabulary) -> list[bytes]:
    """Exact token bytes; special tokens as empty strings, which XGrammar
    treats as special (never matched by the grammar)."""
    return [b"" if vocab.is_special(i) else vocab.token_bytes(i) for i in range(vocab.size)]


def _engine_json(compiler: Any, spec) -> Any:
    """XGrammar's JSON-schema converter with the spec's policies."""
    if not spec.format_assertion:
        raise UnsupportedConstraint(
            NAME,
            "format_assertion=False",
            "XGrammar's converter asserts the formats it knows; use json_schema='lowering'",
        )
    remote = _first_remote_ref(spec.schema)
    if remote is not None:  # the converter logs a warning and allows any JSON there
        raise UnsupportedConstraint(
            NAME,
            f"$ref {remote!r}",
            "XGrammar's converter resolves only '#' references (it would allow any JSON "
            "in its place); use json_schema='lowering'",
        )
    flexible = spec.whitespace == "flexible"
    return compiler.compile_json_schema(
        spec.schema_json,
        any_whitespace=flexible,
        max_whitespace_cnt=spec.max_whitespace if flexible else None,
        separators=(",", ":"),
        # strict mode forbids members and items the schema does not list
        strict_mode=not spec.additional_properties,
    )


#: Keywords whose values are data, not schemas: a "$ref" there is not a reference.
_DATA_KEYWORDS = frozenset({"const", "enum", "default", "examples"})


def _first_remote_ref(schema: Any) -> str | None:
    """The first ``$ref`` of ``schema`` that does not start with ``#``, if any."""
    todo = [schema]
    while todo:
        node = todo.pop()
        if isinstance(node, list):
            todo.extend(node)
        elif isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and not ref.startswith("#"):
                return ref
            todo.extend(v for k, v in node.items() if k not in _DATA_KEYWORDS)
    return None


class XGrammarCompiled(BaseCompiled):
    """A ``CompiledGrammar``: immutable, shared by every checker's matcher."""

    def __init__(self, spec, vocab, stats, grammar: Any):
        super().__init__(spec, vocab, stats)
        self.grammar = grammar

    def checker(self) -> XGrammarChecker:
        """A checker at the start."""
        return XGrammarChecker(self, xgr.GrammarMatcher(self.grammar))


class XGrammarChecker(MatcherChecker):
    """One sequence: a ``GrammarMatcher``; the bookkeeping is ``MatcherChecker``'s."""

    def matcher_accept(self, token_id: int) -> bool:
        return self.matcher.accept_token(token_id)  # refused: matcher unchanged

    def matcher_rollback(self, n: int) -> None:
        self.matcher.rollback(n)

    def matcher_fill(self, row: np.ndarray) -> None:
        self.matcher.fill_next_token_bitmask(row.reshape(1, -1), 0)

    def matcher_accepting(self) -> bool:
        return self.matcher.is_completed()

    def matcher_fork(self) -> Any:
        return self.matcher.fork()

    def matcher_reset(self) -> None:
        self.matcher.reset()
