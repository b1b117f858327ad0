"""Lark EBNF → a normalized grammar IR that every grammar backend shares.

The IR is what lark's own grammar loader (``load_grammar`` and
``Grammar.compile``) makes of the text: EBNF operators, templates,
``%import`` and string literals expanded as lark expands them. It is read
by ``lark_reader`` (lark's output without lark's loader, 5–10× faster) and,
for what that leaves to lark, by lark itself. What remains is plain
context-free rules over named terminals, each terminal a Python regex.

The *language* of a grammar, for every backend here, is the set of byte
strings obtained by deriving a sentence of terminals from ``start`` and
replacing each terminal by one of its strings, with any number of
``%ignore``d terminals before, between and after them — what lark's Earley
parser with ``lexer="dynamic_complete"`` accepts, but for two lexer
policies of lark's, where lark refuses a text this language has
(docs/architecture.md): at a position its parser reads a terminal as the
match Python's ``re`` finds there or a prefix of it (an alternation's
first option that matches: ``/a|ab/`` reads ``ab`` as ``a`` only), and
skips only an ignored terminal's longest match (``//a`` is one ignored
line comment there, the comment ``//`` then ``"a"`` here). A terminal's strings are
its regex's full matches, except for a regex whose quantifiers are all lazy
(``/.*?/``, ``ESCAPED_STRING``, C comments): a lexer takes the shortest match
of those, so the terminal's strings are the shortest ones (no proper prefix
matches; ``Terminal.shortest``). A regex mixing lazy and greedy quantifiers
has no such reading and raises ``UnsupportedConstraint``. Lexer policies
(longest match across terminals, priorities, contextual lexing) are not part
of the language; a backend whose parser depends on them says so in its
``Capabilities``.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Mapping
from dataclasses import dataclass, field

from . import lark_reader
from .automata import (
    DEFAULT_MAX_STATES,
    ByteDFA,
    LazyDFA,
    Node,
    TermTable,
    has_lookaround,
    parse_regex,
    quantifier_modes,
    regex_automaton,
)
from .budget import checkpoint
from .errors import CompileLimitExceeded, ConstraintError, UnsupportedConstraint
from .specs import Grammar, compiled_lark_grammar


@dataclass(frozen=True)
class Terminal:
    """A terminal: its ``name``, its Python ``pattern`` (inline flags included),
    for string literals the ``literal`` text (``None`` for regexes), and
    ``shortest``: only the shortest matches count (an all-lazy regex).
    ``node``: an AST of ``pattern``'s strings when its maker has it (the
    JSON-schema lowering composes it from its pieces), so it is not parsed
    again; it may hold an intersection where the text spells the same strings
    as a union (a length-bounded pattern: automata build the intersection's
    product faster), which :meth:`regex_ast` leaves out."""

    name: str
    pattern: str
    literal: str | None = None
    shortest: bool = False
    node: Node | None = field(default=None, compare=False, repr=False)

    def ast(self) -> Node:
        """The AST of ``pattern``: ``node``, or ``parse_regex``'s."""
        return self.node if self.node is not None else parse_regex(self.pattern)

    def regex_ast(self) -> Node:
        """An AST with no intersection where ``pattern`` spells one (for
        printers of regex syntax): :meth:`ast`, or ``pattern`` parsed where
        ``node`` holds an intersection the text spells otherwise."""
        node = self.ast()
        if self.node is not None and has_lookaround(node):
            with contextlib.suppress(ConstraintError):  # (an opaque piece: no regex text)
                return parse_regex(self.pattern)
        return node

    def dfa(self, *, max_states: int = DEFAULT_MAX_STATES) -> ByteDFA:
        """The terminal's strings as a byte DFA."""
        dfa = ByteDFA.from_regex(self.pattern, max_states=max_states, node=self.node)
        return dfa.shortest() if self.shortest else dfa

    def automaton(
        self,
        *,
        max_states: int = DEFAULT_MAX_STATES,
        lazy: bool = False,
        terms: TermTable | None = None,
    ) -> ByteDFA | LazyDFA:
        """:meth:`dfa`, or with ``lazy`` an automaton whose states are found
        as a walk asks for them (``regex_automaton``: a ``LazyDFA`` or an
        already built ``ByteDFA``; a shortest-match terminal's is a
        ``LazyDFA`` with ``shortest``; ``terms``: the table it may share
        with other terminals')."""
        if not lazy:
            return self.dfa(max_states=max_states)
        return regex_automaton(
            self.pattern,
            max_states=max_states,
            node=self.node,
            terms=terms,
            shortest=self.shortest,
        )


@dataclass(frozen=True)
class Rule:
    """``lhs → rhs``: ``rhs`` is a tuple of symbol names, terminals and
    non-terminals alike (look them up in ``GrammarIR.terminals``)."""

    lhs: str
    rhs: tuple[str, ...]


@dataclass(frozen=True)
class GrammarIR:
    """Context-free rules over regex terminals, with ``start`` and the
    ``ignore`` terminal names (allowed between any two tokens)."""

    start: str
    rules: tuple[Rule, ...]
    terminals: Mapping[str, Terminal]
    ignore: tuple[str, ...] = ()
    _by_lhs: dict[str, tuple[Rule, ...]] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        by_lhs: dict[str, list[Rule]] = {}
        for rule in self.rules:
            by_lhs.setdefault(rule.lhs, []).append(rule)
        self._by_lhs.update({k: tuple(v) for k, v in by_lhs.items()})

    @property
    def nonterminals(self) -> tuple[str, ...]:
        """Non-terminal names in order of first definition."""
        return tuple(self._by_lhs)

    def is_terminal(self, symbol: str) -> bool:
        """Whether ``symbol`` names a terminal."""
        return symbol in self.terminals

    def rules_for(self, lhs: str) -> tuple[Rule, ...]:
        """The rules of non-terminal ``lhs``."""
        return self._by_lhs.get(lhs, ())

    def terminal_dfas(
        self, *, max_states: int = DEFAULT_MAX_STATES, lazy: bool = False
    ) -> dict[str, ByteDFA | LazyDFA]:
        """Every terminal's byte DFA by name (empty languages included); a
        malformed pattern or a DFA over ``max_states`` raises
        ``ConstraintError``/``CompileLimitExceeded`` naming the terminal.
        ``lazy``: automata built as walks ask (``Terminal.automaton``),
        sharing one table of terms (``TermTable``)."""
        dfas: dict[str, ByteDFA | LazyDFA] = {}
        terms = TermTable() if lazy else None
        for name, terminal in self.terminals.items():
            checkpoint()
            try:
                dfas[name] = terminal.automaton(max_states=max_states, lazy=lazy, terms=terms)
            except ConstraintError as e:
                raise ConstraintError("grammar", f"terminal {name}: {e.message}", e.where) from e
            except CompileLimitExceeded as e:
                raise CompileLimitExceeded(
                    e.limit, e.bound, e.value, f"terminal {name} of the grammar"
                ) from e
        return dfas


def lower_grammar(spec: Grammar, *, backend: str = "grammar") -> GrammarIR:
    """The IR of a (validated) ``Grammar`` spec.

    Raises ``UnsupportedConstraint`` (naming ``backend``) for ``%declare``d
    terminals (a postlexer produces them, e.g. Python's indentation tokens; no
    text-level language expresses them), for terminals mixing lazy and greedy
    quantifiers, and (from the regex translation) for lookarounds that inspect
    text outside the terminal's match, such as lark.lark's ``[?](?![a-z])``.
    """
    read = lark_reader.read(spec.text, spec.start)
    if read is not None:
        terminal_defs, out_rules, ignore = read
    else:
        terminal_defs, out_rules, ignore = _compiled_by_lark(spec, backend)
    terminals = {}
    bundled = lark_reader.bundled_regexes()
    for t in terminal_defs:
        pattern = t.pattern.to_regexp()
        node = None
        if t.pattern.type == "str":  # an escaped literal: no quantifier
            modes: frozenset[str] = frozenset()
        elif pattern in bundled:
            node, modes = _bundled_terminal(pattern)
        else:
            modes = quantifier_modes(pattern)
        if modes == {"lazy", "greedy"}:
            raise UnsupportedConstraint(
                backend,
                f"terminal {t.name} /{pattern}/ mixing lazy and greedy quantifiers",
                "a lexer's match of such a regex is neither its shortest nor its longest",
            )
        literal = t.pattern.value if t.pattern.type == "str" and not t.pattern.flags else None
        terminals[t.name] = Terminal(t.name, pattern, literal, modes == {"lazy"}, node)
    rules = tuple(Rule(lhs, rhs) for lhs, rhs in out_rules)
    return GrammarIR(spec.start, rules, terminals, tuple(ignore))


@functools.lru_cache(maxsize=64)
def _bundled_terminal(pattern: str) -> tuple[Node, frozenset[str]]:
    """AST and quantifier modes of a terminal of lark's ``common.lark``
    (``ESCAPED_STRING``, ``SIGNED_NUMBER``, ``WS``...): parsed once per
    process, as lark's file is read once (``lark_reader.bundled_regexes``),
    not per grammar; not a core cache: what it holds is lark's, not a spec's."""
    return parse_regex(pattern), quantifier_modes(pattern)


def _compiled_by_lark(spec: Grammar, backend: str) -> tuple[list, list, list]:
    """lark's own loading of a grammar the reader leaves to it (``%declare``
    raises ``UnsupportedConstraint``)."""
    terminal_defs, rules, ignore = compiled_lark_grammar(spec.text, spec.start)
    defined = {t.name for t in terminal_defs}
    out_rules = []
    for rule in rules:
        for sym in rule.expansion:
            if sym.is_term and sym.name not in defined:
                raise UnsupportedConstraint(
                    backend,
                    f"%declare {sym.name}",
                    "declared terminals come from a postlexer (e.g. indentation), "
                    "not from the grammar text",
                )
        out_rules.append((rule.origin.name, tuple(sym.name for sym in rule.expansion)))
    return terminal_defs, out_rules, ignore
