"""Lark grammar text → what lark's loader gives, without lark's loader.

``lark.load_grammar`` reads a grammar with an LALR parser of lark's grammar
language, then rewrites the parse tree with a dozen tree transformers: 7 ms
of DOMINO's ten-line JSON grammar's 13 ms to a first mask, paid again in
validation. :func:`read` reads the part of the language grammars are
written in — rules and terminals with ``|``, groups, ``[...]``, ``?``,
``*``, ``+``, ``~ n`` and ``~ n..m``, aliases, strings and regexes with
flags, ranges, priorities and modifiers, ``%ignore``, ``%import common...``
— with a tokenizer made of the token regexes of lark's own lexer (in its
order) and a recursive-descent parser of lark's grammar of them, and
returns what ``Grammar.compile`` returns: the same terminals (their names,
anonymous ones named as lark names them; regex text composed by lark's
``Pattern`` classes and ``TerminalTreeToPattern``), the same rules (lark's
``EBNF_to_BNF`` names the rules ``+`` and ``*`` make, in lark's order; lark's
expansion of groups and optionals; its removal of duplicate and unused
rules) and the same ignored names. Written by hand because lark has no
faster reader of its own language, and its tree machinery is the cost.

It reads only what it reads exactly as lark does: any other construct
(templates, ``%declare``, ``%override``, ``%extend``, imports other than
lark's ``common.lark``, ``~`` ranges past 49) and any text lark would reject
gives ``None``, and the caller asks lark, whose errors are then the ones
reported. The tests hold it to lark's output on the project's grammars and
on thousands of mutations of them.
"""

from __future__ import annotations

import functools
import pkgutil
import re
from typing import Any

from lark.grammar import NonTerminal, RuleOptions, Symbol, Terminal
from lark.lexer import Pattern, PatternRE, PatternStr, TerminalDef, Token
from lark.tree import Tree
from lark.utils import is_id_continue, is_id_start

try:  # lark's loader's own pieces (pyproject pins the lark versions tested)
    from lark.load_grammar import (
        _EMPTY,
        _TERMINAL_NAMES,
        REPEAT_BREAK_THRESHOLD,  # past it lark makes repeat rules we do not mirror
        EBNF_to_BNF,
        TerminalTreeToPattern,
        _literal_to_pattern,
        eval_escaping,
    )
    from lark.load_grammar import TERMINALS as _META_TOKENS
except ImportError:  # a lark laid out otherwise: lark reads every grammar
    _META_TOKENS = None

from .caching import SPEC_GRAPHS, core_cache

__all__ = ["Read", "bundled_regexes", "read"]

#: ``(terminal defs, rules as (lhs, rhs names), ignored names)``, as
#: ``compiled_lark_grammar`` gives them (rules there are lark ``Rule``\s).
Read = tuple[list[TerminalDef], list[tuple[str, tuple[str, ...]]], list[str]]

_TO_PATTERN = TerminalTreeToPattern() if _META_TOKENS is not None else None


class _NotRead(Exception):
    """The text is outside what :func:`read` reads (lark reads it)."""


# ---------------------------------------------------------------- tokens


#: the tokens lark's lexer of its grammar language drops
_IGNORED_TOKENS = frozenset({"WS", "COMMENT", "BACKSLASH"})


@functools.cache
def _scanner() -> re.Pattern[str]:
    """lark's lexer of its grammar language as one regex: its token regexes
    (``TERMINALS``) in the order lark's lexer sorts them, the first that
    matches winning, as there (without building lark's parser for them:
    11 ms a process)."""
    if _META_TOKENS is None:
        raise _NotRead
    terminals = [TerminalDef(name, PatternRE(value)) for name, value in _META_TOKENS.items()]
    terminals.sort(key=lambda t: (-t.priority, -t.pattern.max_width, -len(t.pattern.value), t.name))
    return re.compile("|".join(f"(?P<{t.name}>{t.pattern.to_regexp()})" for t in terminals))


def _tokens(text: str) -> list[tuple[str, str]]:
    scanner, ignored = _scanner(), _IGNORED_TOKENS
    out: list[tuple[str, str]] = []
    pos, end = 0, len(text)
    match = scanner.match
    while pos < end:
        m = match(text, pos)
        if m is None or m.end() == pos:
            raise _NotRead
        kind = m.lastgroup
        assert kind is not None
        if kind not in ignored:
            out.append((kind, m.group()))
        pos = m.end()
    out.append(("$END", ""))
    return out


# ---------------------------------------------------------------- parsing


class _Parser:
    """Recursive descent over lark's grammar of grammars (``RULES`` in
    ``lark.load_grammar``), building the trees lark's transformers would
    hold before ``Grammar.compile``: literals as ``pattern`` trees, names
    as lark symbols, ``value`` nodes gone from rules (kept in terminals)."""

    def __init__(self, tokens: list[tuple[str, str]]):
        self.tokens = tokens
        self.i = 0
        self.literals: dict[tuple[str, str], Pattern] = {}  # (a grammar repeats its "(")

    def peek(self) -> str:
        return self.tokens[self.i][0]

    def take(self, kind: str) -> str:
        k, v = self.tokens[self.i]
        if k != kind:
            raise _NotRead
        self.i += 1
        return v

    def statements(self) -> list[tuple[str, Any]]:
        out: list[tuple[str, Any]] = []
        while True:
            kind = self.peek()
            if kind == "$END":
                return out
            if kind == "_NL":
                self.i += 1
            elif kind in ("RULE", "RULE_MODIFIERS"):
                out.append(("rule", self.rule()))
            elif kind == "TERMINAL":
                out.append(("term", self.term()))
            elif kind == "_IGNORE":
                self.i += 1
                exp = self.expansions(terminal=True)
                self.take("_NL")
                out.append(("ignore", exp))
            elif kind == "_IMPORT":
                out.append(("import", self.import_()))
            else:  # %declare, %override, %extend, anything else
                raise _NotRead

    def rule(self) -> tuple[str, str, Tree]:
        modifiers = self.take("RULE_MODIFIERS") if self.peek() == "RULE_MODIFIERS" else ""
        name = self.take("RULE")
        if self.peek() == "_LBRACE":  # a template
            raise _NotRead
        return name, modifiers, self.body(terminal=False)

    def term(self) -> tuple[str, Tree]:
        return self.take("TERMINAL"), self.body(terminal=True)

    def body(self, terminal: bool) -> Tree:
        """``[.priority] : expansions`` to the end of the line (a priority
        is not part of the language)."""
        if self.peek() == "_DOT":
            self.i += 1
            self.take("NUMBER")
        self.take("_COLON")
        exp = self.expansions(terminal)
        self.take("_NL")
        return exp

    def import_(self) -> tuple[tuple[str, ...], dict[str, str]]:
        self.take("_IMPORT")
        if self.peek() == "_DOT":  # relative
            raise _NotRead
        path = [self.name()]
        while self.peek() == "_DOT":
            self.i += 1
            path.append(self.name())
        kind = self.peek()
        if kind == "_LPAR":
            self.i += 1
            names = [self.name()]
            while self.peek() == "_COMMA":
                self.i += 1
                names.append(self.name())
            self.take("_RPAR")
            aliases = {n: n for n in names}
            dotted = tuple(path)
        else:
            if len(path) < 2:
                raise _NotRead
            dotted, name = tuple(path[:-1]), path[-1]
            alias = name
            if kind == "_TO":
                self.i += 1
                alias = self.name()
            aliases = {name: alias}
        self.take("_NL")
        return dotted, aliases

    def name(self) -> str:
        kind = self.peek()
        if kind not in ("RULE", "TERMINAL"):
            raise _NotRead
        return self.take(kind)

    # expansions / alias / expansion / expr / atom / value
    def expansions(self, terminal: bool, top: bool = True) -> Tree:
        children = [self.alias(terminal, top)]
        while self.peek() in ("_OR", "_NL_OR"):
            self.i += 1
            children.append(self.alias(terminal, top))
        return Tree("expansions", children)

    def alias(self, terminal: bool, top: bool) -> Tree:
        exp = self.expansion(terminal)
        if self.peek() == "_TO":
            if not top:  # an alias inside a group
                raise _NotRead
            self.i += 1
            return Tree("alias", [exp, NonTerminal(self.take("RULE"))])
        return exp

    def expansion(self, terminal: bool) -> Tree:
        items = []
        while self.peek() in ("_LPAR", "_LBRA", "TERMINAL", "RULE", "STRING", "REGEXP"):
            items.append(self.expr(terminal))
        return Tree("expansion", items)

    def expr(self, terminal: bool) -> Any:
        atom = self.atom(terminal)
        kind = self.peek()
        if kind == "OP":
            return Tree("expr", [atom, Token("OP", self.take("OP"))])
        if kind == "TILDE":
            self.i += 1
            args = [atom, Token("TILDE", "~"), Token("NUMBER", self.take("NUMBER"))]
            if self.peek() == "_DOTDOT":
                self.i += 1
                args.append(Token("NUMBER", self.take("NUMBER")))
            return Tree("expr", args)
        return atom

    def atom(self, terminal: bool) -> Any:
        kind = self.peek()
        if kind == "_LPAR":
            self.i += 1
            exp = self.expansions(terminal, top=False)
            self.take("_RPAR")
            return exp
        if kind == "_LBRA":
            self.i += 1
            exp = self.expansions(terminal, top=False)
            self.take("_RBRA")
            return Tree("maybe", [exp])
        if kind == "TERMINAL":
            sym: Any = Terminal(self.take(kind))
            sym.filter_out = sym.name.startswith("_")
        elif kind == "RULE":
            sym = NonTerminal(self.take(kind))
            if self.peek() == "_LBRACE":  # a template's use
                raise _NotRead
        elif kind == "STRING" and self.tokens[self.i + 1][0] == "_DOTDOT":
            start = self.take("STRING")
            self.i += 1
            sym = Tree("pattern", [_range(start, self.take("STRING"))])
        else:
            text = self.take(kind)
            pattern = self.literals.get((kind, text))
            if pattern is None:
                pattern = self.literals[kind, text] = _pattern(kind, text)
            sym = Tree("pattern", [pattern])
        return Tree("value", [sym]) if terminal else sym


def _pattern(kind: str, text: str) -> Pattern:
    try:
        return _literal_to_pattern(Token(kind, text))
    except Exception:  # lark's GrammarError, or its assertions
        raise _NotRead from None


def _range(start: str, end: str) -> Pattern:
    a, b = start[1:-1], end[1:-1]  # (as lark takes them: a flag makes them fail)
    # (eval_escaping's own error ends the reading too)
    if len(eval_escaping(a)) != 1 or len(eval_escaping(b)) != 1:
        raise _NotRead
    return PatternRE(f"[{a}-{b}]")


# ---------------------------------------------------------------- definitions


class _Definitions:
    """lark's ``GrammarBuilder`` for the statements :class:`_Parser` reads:
    definitions in lark's order (imports first), ignore names, checks."""

    def __init__(self) -> None:
        self.terms: dict[str, Tree] = {}
        self.rules: dict[str, tuple[str, Tree]] = {}  # name -> (modifiers, tree)
        self.order: list[str] = []
        self.ignore: list[str] = []
        self.imported: set[str] = set()  # (their trees are lark's file's, resolved)

    def define(self, name: str, is_term: bool, tree: Tree, modifiers: str = "") -> None:
        if name in self.terms or name in self.rules or name.startswith("__"):
            raise _NotRead
        self.order.append(name)
        if is_term:
            self.terms[name] = tree
        else:
            if "?" in modifiers and name.startswith("_"):
                raise _NotRead
            self.rules[name] = (modifiers, tree)

    def add_ignore(self, tree: Tree) -> None:
        if len(tree.children) == 1:
            (exp,) = tree.children
            if exp.data == "expansion" and len(exp.children) == 1:
                (item,) = exp.children
                if isinstance(item, Tree) and item.data == "value":
                    (sym,) = item.children
                    if isinstance(sym, Terminal):
                        self.ignore.append(sym.name)
                        return
        name = f"__IGNORE_{len(self.ignore)}"
        self.ignore.append(name)
        self.order.append(name)
        self.terms[name] = tree


@functools.cache
def _common() -> dict[str, Tree]:
    """The terminal definitions of lark's ``common.lark``, resolved, by name
    (read once per process: it is lark's file, not a constraint)."""
    data = pkgutil.get_data("lark", "grammars/common.lark")
    if data is None:
        raise _NotRead
    defs = _Definitions()
    for kind, stmt in _Parser(_tokens(data.decode("utf-8") + "\n")).statements():
        if kind != "term":
            raise _NotRead
        defs.define(stmt[0], True, stmt[1])
    return _resolve_all(defs.terms)


@functools.cache
def _common_patterns() -> dict[int, Pattern]:
    """The patterns of every tree in :func:`_common`, by ``id`` (the trees
    live as long as the process; lark's ``Pattern`` objects are immutable)."""
    memo: dict[int, Pattern] = {}
    for tree in _common().values():
        _term_pattern(tree, memo)
    return memo


@functools.cache
def bundled_regexes() -> frozenset[str]:
    """The regex texts of the terminals of lark's ``common.lark`` (as a
    grammar importing them gets them), for what derives things from them
    once per process; empty when the file is not one this reader reads."""
    try:
        memo = _common_patterns()
        return frozenset(memo[id(tree)].to_regexp() for tree in _common().values())
    except Exception:
        return frozenset()


def _resolve_all(terms: dict[str, Tree], resolved: frozenset[str] = frozenset()) -> dict[str, Tree]:
    """Every terminal's tree with the terminals it names inlined (lark's
    ``resolve_term_references``: a named terminal's tree is shared where it
    is used); rules inside, undefined names and recursion are lark's errors.
    ``resolved``: names whose trees are resolved already (imported ones)."""
    done: dict[str, Tree] = {name: terms[name] for name in resolved}

    def resolve(name: str, visiting: frozenset[str]) -> Tree:
        if name in done:
            return done[name]
        if name in visiting or name not in terms:
            raise _NotRead
        inner = visiting | {name}

        def inline(t: Tree) -> Tree:
            children = []
            for c in t.children:
                if isinstance(c, Tree):
                    c = inline(c)
                elif isinstance(c, NonTerminal):
                    raise _NotRead
                elif isinstance(c, Terminal):
                    c = resolve(c.name, inner)
                children.append(c)
            return Tree(t.data, children)

        done[name] = tree = inline(terms[name])
        return tree

    return {name: resolve(name, frozenset()) for name in terms}


def _load(text: str) -> _Definitions:
    statements = _Parser(_tokens(text + "\n")).statements()
    defs = _Definitions()
    imports: dict[tuple[str, ...], dict[str, str]] = {}
    for kind, stmt in statements:
        if kind == "import":
            dotted, aliases = stmt
            imports.setdefault(dotted, {}).update(aliases)
    for dotted, aliases in imports.items():
        if dotted != ("common",):
            raise _NotRead
        common = _common()
        if any(n not in common or not a.isupper() for n, a in aliases.items()):
            raise _NotRead
        # lark keeps the imported names, in the file's order, their bodies
        # resolved in the file (what they name is dropped with the file)
        for name in common:
            if name in aliases:
                defs.define(aliases[name], True, common[name])
                defs.imported.add(aliases[name])
    for kind, stmt in statements:
        if kind == "term":
            defs.define(stmt[0], True, stmt[1])
        elif kind == "rule":
            name, modifiers, tree = stmt
            defs.define(name, False, tree, modifiers)
        elif kind == "ignore":
            defs.add_ignore(stmt)
    # lark's validation: every name used is defined; every ignored name too
    for _modifiers, tree in defs.rules.values():
        for expansion in tree.find_data("expansion"):
            for sym in expansion.scan_values(lambda v: isinstance(v, Symbol)):
                if sym.name not in defs.terms and sym.name not in defs.rules:
                    raise _NotRead
    defs.terms = _resolve_all(defs.terms, frozenset(defs.imported))
    if not set(defs.ignore) <= set(defs.terms):
        raise _NotRead
    return defs


# ---------------------------------------------------------------- compiling


def _term_pattern(tree: Any, memo: dict[int, Pattern]) -> Pattern:
    """lark's ``TerminalTreeToPattern`` on a resolved terminal tree (``memo``:
    patterns of trees already seen, by ``id``: a named terminal's tree is
    shared by the terminals that use it)."""
    if isinstance(tree, Pattern):
        return tree
    known = memo.get(id(tree))
    if known is not None:
        return known
    data, children = tree.data, tree.children
    if data == "pattern" or data == "value":
        pattern = _term_pattern(children[0], memo)
    elif data == "expansion":
        pattern = _TO_PATTERN.expansion([_term_pattern(c, memo) for c in children])
    elif data == "expansions":
        pattern = _TO_PATTERN.expansions([_term_pattern(c, memo) for c in children])
    elif data == "expr":
        pattern = _TO_PATTERN.expr([_term_pattern(children[0], memo), *children[1:]])
    elif data == "maybe":
        pattern = _TO_PATTERN.maybe([_term_pattern(children[0], memo)])
    else:
        raise _NotRead  # an alias in a terminal: lark's error
    memo[id(tree)] = pattern
    return pattern


def _lark_order(root: Tree) -> list[Tree]:
    """The order of lark's ``Tree.iter_subtrees`` (each tree once, bottom-up
    by level), in which in-place transformers visit a rule's trees."""
    queue = [root]
    for t in queue:
        queue.extend(c for c in reversed(t.children) if isinstance(c, Tree))
    queue.reverse()
    return queue


class _AnonTerminals:
    """lark's ``PrepareAnonTerminals``: a literal in a rule becomes a
    terminal, named as lark names it (a defined terminal of the same
    pattern, a name from ``_TERMINAL_NAMES``, the upper-cased text, or
    ``__ANON_n``)."""

    def __init__(self, terminals: list[TerminalDef]):
        self.terminals = terminals
        self.names = {t.name for t in terminals}
        self.by_pattern = {t.pattern: t for t in terminals}
        self.i = 0

    def __call__(self, p: Pattern, keep_all_tokens: bool) -> Terminal:
        name = None
        if isinstance(p, PatternStr):
            known = self.by_pattern.get(p)
            if known is not None:
                name = known.name
            else:
                value = p.value
                name = _TERMINAL_NAMES.get(value)
                if (
                    name is None
                    and value
                    and is_id_continue(value)
                    and is_id_start(value[0])
                    and value.upper() not in self.names
                ):
                    name = value.upper()
                if name in self.names:
                    name = None
        elif p in self.by_pattern:
            name = self.by_pattern[p].name
        if name is None:
            name = f"__ANON_{self.i}"
            self.i += 1
        if name not in self.names:
            self.names.add(name)
            definition = TerminalDef(name, p)
            self.by_pattern[p] = definition
            self.terminals.append(definition)
        sym = Terminal(name)
        sym.filter_out = False if keep_all_tokens else isinstance(p, PatternStr)
        return sym


def _compile(defs: _Definitions, start: str) -> Read:
    """lark's ``Grammar.compile`` of the definitions for ``start``."""
    if start not in defs.rules:
        raise _NotRead
    terminals = []
    memo = dict(_common_patterns()) if defs.imported else {}
    for name in defs.order:
        if name in defs.terms:
            tree = defs.terms[name]
            if name not in defs.imported:
                expansions = list(tree.find_data("expansion"))
                if len(expansions) == 1 and not expansions[0].children:
                    raise _NotRead  # "Terminals cannot be empty"
            terminals.append(TerminalDef(name, _term_pattern(tree, memo)))

    anon = _AnonTerminals(terminals)
    ebnf = EBNF_to_BNF()
    named: list[tuple[str, Tree]] = []
    for name in defs.order:
        if name not in defs.rules:
            continue
        modifiers, tree = defs.rules[name]
        keep_all = "!" in modifiers
        tree = _copy(tree)
        order = _lark_order(tree)
        for t in order:  # literals → terminals
            t.children = [
                anon(c.children[0], keep_all) if isinstance(c, Tree) and c.data == "pattern" else c
                for c in t.children
            ]
        ebnf.rule_options = RuleOptions(keep_all_tokens=True) if keep_all else None
        ebnf.prefix = name
        for t in order:  # EBNF → BNF
            for i, c in enumerate(t.children):
                if isinstance(c, Tree) and c.data == "expr":
                    atom, op, *args = c.children
                    if op == "~" and int(args[-1]) >= REPEAT_BREAK_THRESHOLD:
                        raise _NotRead
                    try:
                        t.children[i] = ebnf.expr(atom, op, *args)
                    except Exception:
                        raise _NotRead from None
                elif isinstance(c, Tree) and c.data == "maybe":
                    t.children[i] = ebnf.maybe(c.children[0])
        named.append((name, tree))
    named += [(name, tree) for name, tree, _options in ebnf.new_rules]

    compiled: list[tuple[str, tuple[str, ...]]] = []
    seen: set[tuple[str, tuple[str, ...]]] = set()
    term_names = set()
    for name, tree in named:
        for expansion, alias in _rule_alternatives(tree):
            if alias and name.startswith("_"):
                raise _NotRead
            rhs = tuple(s.name for s in expansion if s != _EMPTY)
            key = (name, rhs)
            if key in seen:
                if rhs:
                    raise _NotRead  # "Rules defined twice"
                continue  # an empty one: lark keeps the first
            seen.add(key)
            compiled.append(key)
            term_names.update(s.name for s in expansion if isinstance(s, Terminal))

    # lark's removal of unused rules (used by another rule, or the start)
    while True:
        count = len(compiled)
        used = {s for lhs, rhs in compiled for s in rhs if s != lhs and s not in term_names}
        used.add(start)
        compiled = [r for r in compiled if r[0] in used]
        if len(compiled) == count:
            break
    used_terms = {s for _lhs, rhs in compiled for s in rhs if s in term_names}
    kept = [t for t in terminals if t.name in used_terms or t.name in defs.ignore]
    return kept, compiled, list(defs.ignore)


#: past this many alternatives in one rule, lark expands it (as slowly)
_MAX_ALTERNATIVES = 4096


def _rule_alternatives(tree: Tree) -> list[tuple[tuple[Any, ...], str | None]]:
    """A rule's alternatives as (symbols, alias name), as lark's
    ``SimplifyRule_Visitor`` and ``RuleTreeToText`` give them: every group
    and optional expanded in place (the choices of each item in order,
    the first item's outermost), repeats dropped keeping the first."""
    out: list[tuple[tuple[Any, ...], str | None]] = []
    seen: set[tuple[tuple[Any, ...], str | None]] = set()
    for child in tree.children:
        alias = None
        if child.data == "alias":
            child, alias_symbol = child.children
            alias = alias_symbol.name
        for symbols in _alternatives(child):
            key = (symbols, alias)
            if key not in seen:
                seen.add(key)
                out.append(key)
    return out


def _alternatives(node: Any) -> list[tuple[Any, ...]]:
    """The symbol sequences an ``expansion``/``expansions`` tree stands for."""
    if not isinstance(node, Tree):
        return [(node,)]
    if node.data == "expansions":
        return [seq for child in node.children for seq in _alternatives(child)]
    if node.data != "expansion":
        raise _NotRead
    out: list[tuple[Any, ...]] = [()]
    for child in node.children:
        options = _alternatives(child)
        out = [head + tail for head in out for tail in options]
        if len(out) > _MAX_ALTERNATIVES:
            raise _NotRead
    return out


def _copy(tree: Tree) -> Tree:
    return Tree(tree.data, [_copy(c) if isinstance(c, Tree) else c for c in tree.children])


@functools.lru_cache(maxsize=SPEC_GRAPHS)
def _definitions(text: str) -> _Definitions | None:
    try:
        return _load(text)
    except Exception:  # _NotRead, or lark's own error on a piece: lark's to report
        return None


@functools.lru_cache(maxsize=SPEC_GRAPHS)
def read(text: str, start: str) -> Read | None:
    """``(terminal defs, rules, ignored names)`` of a Lark grammar text for
    ``start``, equal to lark's ``load_grammar(...).compile([start], set())``
    (rules as ``(lhs, rhs names)``); ``None`` when the text is not one this
    reader reads exactly as lark does (lark must read it). Cached, read-only."""
    defs = _definitions(text)
    if defs is None:
        return None
    try:
        return _compile(defs, start)
    except Exception:  # _NotRead, or lark's own error on a piece: lark's to report
        return None


core_cache("lark grammar readings", _definitions)
core_cache("lark grammar compilations", read)
