"""The small expression language a schema is lowered to, and its two outputs.

``Rx(text)`` is a regular piece (portable regex text, self-contained);
``Cat``/``Or``/``Rep`` combine pieces; ``Call(name)`` names a rule (only in
grammar mode: a recursive or shared subschema). The constructors ``cat``,
``either`` and ``rep`` fold regular operands into one ``Rx`` as they go, so a
regular schema ends as a single ``Rx`` — its regex — and a non-regular one as
an expression whose regular stretches are single terminals.

``flatten(start, rules)`` turns rules into plain context-free rules over
terminals that never match the empty string (LALR and Earley lexers reject
such terminals: an ``Rx`` that accepts ε becomes ``its non-empty part | ε``);
``to_lark`` prints them as a Lark grammar (for engines that read grammar
text), ``to_grammar_ir`` hands them to the core's ``GrammarIR`` directly (for
``lower``: no text for lark to parse back).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from ..automata import (
    Alt,
    Difference,
    Empty,
    Intersect,
    Node,
    Repeat,
    Seq,
    alt,
    has_lookaround,
    nullable,
    parse_regex,
    repeat,
    seq,
)
from ..automata.printer import concatenable, group
from ..automata.regex import _cached_hash, _cached_hash_of  # (hashed once, as AST nodes)
from ..caching import ContentCache, core_cache
from ..errors import CompileLimitExceeded
from ..grammar import GrammarIR, Rule, Terminal


@dataclass(frozen=True, slots=True)
class Rx:
    """A regular piece: ``text`` (portable regex); ``nullable``: it matches ε;
    ``joinable``: known safe to concatenate as is (``None``: not yet known —
    the constructors set it, so long texts are not rescanned at every join);
    ``recipe``: how the constructors made it from other pieces (``("seq",
    *parts)``, ``("alt", *options)`` or ``("rep", item, min, max)``), so
    :meth:`ast` builds its AST from theirs instead of parsing ``text``;
    ``node``: its AST, once known (a piece may be given it)."""

    text: str
    nullable: bool = False
    joinable: bool | None = field(default=None, compare=False)
    recipe: tuple | None = field(default=None, compare=False, repr=False)
    node: Node | None = field(default=None, compare=False, repr=False)

    def joined(self) -> str:
        """``text`` made safe to concatenate."""
        if self.joinable is None:
            object.__setattr__(self, "joinable", concatenable(self.text) == self.text)
        return self.text if self.joinable else f"(?:{self.text})"

    def ast(self) -> Node:
        """The regex AST of ``text`` (same language): composed from the parts'
        ASTs, so only pieces made from text are parsed (``parse_regex``
        caches those by text: the JSON string, number and literal pieces
        every schema has are parsed once)."""
        node = self.node
        if node is None:
            node = _compose(self)
            object.__setattr__(self, "node", node)
            object.__setattr__(self, "recipe", None)  # (the parts are no longer needed)
        return node


def _compose(rx: Rx) -> Node:
    recipe = rx.recipe
    if recipe is None:
        return parse_regex(rx.text)
    op = recipe[0]
    if op == "seq":
        return seq(*(part.ast() for part in recipe[1:]))
    if op == "alt":
        return alt(*(option.ast() for option in recipe[1:]))
    _, item, lo, hi = recipe
    return repeat(item.ast(), lo, hi)


@dataclass(frozen=True, slots=True)
class Cat:
    parts: tuple[Expr, ...]

    _size: int | None = field(default=None, init=False, repr=False, compare=False)
    _hash: int | None = field(default=None, init=False, repr=False, compare=False)

    def __hash__(self) -> int:
        return _cached_hash_of(self, self.parts)


@dataclass(frozen=True, slots=True)
class Or:
    options: tuple[Expr, ...]

    _size: int | None = field(default=None, init=False, repr=False, compare=False)
    _hash: int | None = field(default=None, init=False, repr=False, compare=False)

    def __hash__(self) -> int:
        return _cached_hash_of(self, self.options)


@dataclass(frozen=True, slots=True)
class Rep:
    item: Expr
    min: int
    max: int | None

    _size: int | None = field(default=None, init=False, repr=False, compare=False)
    _hash: int | None = field(default=None, init=False, repr=False, compare=False)

    def __hash__(self) -> int:
        return _cached_hash(self)


@dataclass(frozen=True, slots=True)
class Call:
    name: str


Expr = Rx | Cat | Or | Rep | Call

#: The head of the text of a piece known by its AST alone (``opaque``): a
#: back-reference to a group no piece defines, so that no regex engine reads
#: it as anything else (it is malformed), and text outputs refuse it.
OPAQUE_HEAD = "(?P=automaton_"


def opaque(node: Node, nullable: bool = False) -> Rx:
    """A piece whose language is ``node`` and that has no regex text: an
    intersection or difference of languages, or a regex too big to print.
    The automata forms (``lower_json_schema_ir``) hold it; its ``text`` is
    a key of its content (a digest of the AST), for the caches keyed by
    text, that no regex engine accepts (``OPAQUE_HEAD``)."""
    digest = hashlib.sha256(repr(node).encode()).hexdigest()[:32]
    return Rx(f"{OPAQUE_HEAD}{digest})", nullable, True, node=node)


def has_opaque(text: str) -> bool:
    """Whether a regex or grammar text holds an ``opaque`` piece."""
    return OPAQUE_HEAD in text


EMPTY = Rx("", True, node=Empty())
#: Matches nothing: an empty class (portable: Python ``re`` and the automata).
NOTHING = Rx("[^\\x00-\\U0010ffff]")
_NOTHING_TEXT = NOTHING.text


def is_nothing(e: Expr) -> bool:
    return e == NOTHING


def cat(*parts: Expr) -> Expr:
    """Concatenation, adjacent regular parts merged."""
    out: list[Expr] = []
    for p in parts:
        items = p.parts if isinstance(p, Cat) else (p,)
        for item in items:
            if type(item) is Rx:  # (== EMPTY, == NOTHING, without the dataclass's __eq__)
                if not item.text and item.nullable:
                    continue
                if item.text == _NOTHING_TEXT and not item.nullable:
                    return NOTHING
            if out and isinstance(item, Rx) and isinstance(out[-1], Rx):
                prev = out[-1]
                head = prev.recipe[1:] if _is_seq(prev) else (prev,)
                out[-1] = Rx(
                    prev.joined() + item.joined(),
                    prev.nullable and item.nullable,
                    True,
                    ("seq", *head, item),
                )
            else:
                out.append(item)
    if not out:
        return EMPTY
    return out[0] if len(out) == 1 else Cat(tuple(out))


def _is_seq(rx: Rx) -> bool:
    """Whether ``rx`` is a concatenation whose AST is still to be made
    (its parts then join the next one's, so a long run is one ``seq``)."""
    return rx.node is None and rx.recipe is not None and rx.recipe[0] == "seq"


def either(*options: Expr) -> Expr:
    """Alternation (duplicates and impossible options dropped)."""
    unique: dict[Expr, None] = {}  # (a dict: order kept, linear in the options)
    for o in options:
        for item in o.options if isinstance(o, Or) else (o,):
            if item != NOTHING:
                unique.setdefault(item)
    seen = list(unique)
    if not seen:
        return NOTHING
    if len(seen) == 1:
        return seen[0]
    if all(isinstance(o, Rx) for o in seen):
        nonempty = [o for o in seen if o.text]
        nullable = any(o.nullable for o in seen)
        if not nonempty:
            return EMPTY
        body = "|".join(o.text for o in nonempty)
        if len(nonempty) != len(seen):
            return Rx(f"(?:{body})?", True, True, ("alt", *nonempty, EMPTY))
        if len(nonempty) > 1:
            return Rx(f"(?:{body})", nullable, True, ("alt", *nonempty))
        return Rx(nonempty[0].text, nullable, nonempty[0].joinable, ("alt", nonempty[0]))
    return Or(tuple(seen))


def rep(item: Expr, lo: int, hi: int | None) -> Expr:
    """``lo`` to ``hi`` copies of ``item`` (``hi=None``: unbounded)."""
    if hi is not None and hi < lo:
        return NOTHING
    if hi == 0 or item == EMPTY:
        return EMPTY
    if lo == hi == 1:
        return item
    if item == NOTHING:
        return EMPTY if lo == 0 else NOTHING
    if isinstance(item, Rx):
        q = {(0, None): "*", (1, None): "+", (0, 1): "?"}.get((lo, hi))
        if q is None:
            q = f"{{{lo},}}" if hi is None else f"{{{lo}}}" if lo == hi else f"{{{lo},{hi}}}"
        return Rx(group(item.text) + q, lo == 0 or item.nullable, True, ("rep", item, lo, hi))
    return Rep(item, lo, hi)


def separated(item: Expr, sep: Expr, lo: int, hi: int | None) -> Expr:
    """``lo``..``hi`` copies of ``item`` with ``sep`` between them."""
    if hi is not None and hi < lo:
        return NOTHING
    if hi == 0:
        return EMPTY
    more = rep(cat(sep, item), max(lo - 1, 0), None if hi is None else hi - 1)
    body = cat(item, more)
    return body if lo > 0 else either(body, EMPTY)


def size(e: Expr) -> int:
    """Characters of regex text in ``e`` (a bound on the work it causes;
    kept on a composite, which the lowering sizes at every level)."""
    if isinstance(e, Rx):
        return len(e.text)
    if isinstance(e, Call):
        return len(e.name)
    n = e._size
    if n is None:
        if isinstance(e, Cat):
            n = sum(size(p) for p in e.parts)
        elif isinstance(e, Or):
            n = sum(size(p) for p in e.options)
        else:
            n = size(e.item)
        object.__setattr__(e, "_size", n)
    return n


def unguarded_cycle(rules: dict[str, Expr], roots: Iterable[str] | None = None) -> list[str] | None:
    """A cycle of rules each of which can be the next one alone (every
    part beside that call empty): ``[A, B, ..., A]``, or ``None``. Such a
    rule derives itself while consuming nothing, a recursion through no
    instance keyword (a ``$ref`` back to a schema it is part of, by
    ``allOf``/``anyOf``/``$ref`` alone): no language is defined by it.
    ``roots``: rules every cycle passes through (the lowering's recursive
    ones), where the search starts; default every rule."""
    starts = list(rules if roots is None else roots)
    # every rule taken as nullable first (more edges, never fewer): the
    # exact set, a fixed point of several walks, only where that finds one
    cycle = _cycle(rules, starts, set(rules))
    return cycle and _cycle(rules, starts, _nullable_rules(rules))


def _cycle(rules: dict[str, Expr], starts: list[str], nullable: set[str]) -> list[str] | None:
    memo: dict[int, frozenset[str]] = {}
    empty: dict[int, bool] = {}
    edges: dict[str, list[str]] = {}

    def after(name: str) -> Iterator[str]:
        if name not in edges:
            found = _alone(rules[name], nullable, memo, empty) if name in rules else ()
            edges[name] = sorted(found)
        return iter(edges[name])

    state: dict[str, int] = {}  # 1: on the path, 2: done
    for root in starts:
        if root in state:
            continue
        path, stack = [root], [after(root)]
        state[root] = 1
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                state[path.pop()] = 2
                stack.pop()
            elif state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            elif nxt not in state:
                state[nxt] = 1
                path.append(nxt)
                stack.append(after(nxt))
    return None


def _nullable_rules(rules: dict[str, Expr]) -> set[str]:
    """The rules that derive the empty string (a least fixed point)."""
    found: set[str] = set()
    while True:
        memo: dict[int, bool] = {}
        more = {n for n, body in rules.items() if n not in found and _empty_ok(body, found, memo)}
        if not more:
            return found
        found |= more


def _empty_ok(e: Expr, nullable: set[str], memo: dict[int, bool]) -> bool:
    if isinstance(e, Rx):
        return e.nullable
    if isinstance(e, Call):
        return e.name in nullable
    known = memo.get(id(e))
    if known is None:
        if isinstance(e, Cat):
            known = all(_empty_ok(p, nullable, memo) for p in e.parts)
        elif isinstance(e, Or):
            known = any(_empty_ok(o, nullable, memo) for o in e.options)
        else:
            known = e.min == 0 or _empty_ok(e.item, nullable, memo)
        memo[id(e)] = known
    return known


_NO_RULES: frozenset[str] = frozenset()


def _alone(
    e: Expr, nullable: set[str], memo: dict[int, frozenset[str]], empty: dict[int, bool]
) -> frozenset[str]:
    """The rules ``e`` can derive alone, everything else in it empty
    (``memo``, ``empty``: this walk's by node, for shared sub-expressions)."""
    if isinstance(e, Rx):
        return _NO_RULES
    if isinstance(e, Call):
        return frozenset((e.name,))
    known = memo.get(id(e))
    if known is None:
        if isinstance(e, Cat):
            can = [_empty_ok(p, nullable, empty) for p in e.parts]
            known = frozenset().union(
                *(
                    _alone(p, nullable, memo, empty)
                    for i, p in enumerate(e.parts)
                    if all(can[:i]) and all(can[i + 1 :])
                )
            )
        elif isinstance(e, Or):
            known = frozenset().union(*(_alone(o, nullable, memo, empty) for o in e.options))
        elif e.max == 0 or (e.min > 1 and not _empty_ok(e.item, nullable, empty)):
            known = _NO_RULES
        else:
            known = _alone(e.item, nullable, memo, empty)
        memo[id(e)] = known
    return known


# ------------------------------------------------------------ flat rules


@dataclass(frozen=True, slots=True)
class Term:
    """A terminal of the flat rules: ``text`` (portable regex, never matching
    ε); ``rx``: the piece it came from, for its AST (``None``: parse ``text``)."""

    text: str
    rx: Rx | None = field(default=None, compare=False)


_SELF = object()  # stands for the rule being defined, in a repetition's body


def flatten(
    start: str, rules: dict[str, Expr], *, max_rules: int = 50_000
) -> list[tuple[str, tuple[tuple[str | Term, ...], ...]]]:
    """The rules as plain context-free rules: ``(name, alternatives)`` with
    ``start`` first, each alternative a tuple of symbols (``()`` is ε).

    Every optional part, repetition and nested alternation gets a rule of
    its own (``x0``, ``x1``, ..., shared by identical bodies), and a
    nullable ``Rx`` becomes a rule ``its non-empty part | ε``: terminals
    never match the empty string. ``CompileLimitExceeded`` past ``max_rules``
    rules.
    """
    return _Flattener(max_rules).flatten(start, rules)


class _Flattener:
    def __init__(self, max_rules: int) -> None:
        self.max_rules = max_rules
        self.aux: dict[tuple, str] = {}  # alternatives → name
        self.defs: list[tuple[str, tuple[tuple[str | Term, ...], ...]]] = []
        # sequences by expression (its id, and the expression to keep the id
        # taken): the lowering shares sub-expressions (an object's remaining
        # members after each one), and each is flattened once, not once per use
        self._sequences: dict[int, tuple[Expr, tuple[str | Term, ...]]] = {}

    def flatten(self, start: str, rules: dict[str, Expr]):
        order = [start] + [n for n in rules if n != start]
        heads = [(name, self.alternatives(rules[name])) for name in order]
        return heads + self.defs

    def alternatives(self, e: Expr) -> tuple[tuple[str | Term, ...], ...]:
        options = e.options if isinstance(e, Or) else (e,)
        return tuple(dict.fromkeys(self.sequence(o) for o in options))

    def sequence(self, e: Expr) -> tuple[str | Term, ...]:
        """``e`` as a symbol sequence (``()`` for ε); memoized."""
        known = self._sequences.get(id(e))
        if known is not None:
            return known[1]
        symbols = self._sequence(e)
        self._sequences[id(e)] = (e, symbols)
        return symbols

    def _sequence(self, e: Expr) -> tuple[str | Term, ...]:
        if isinstance(e, Cat):
            return tuple(s for p in e.parts for s in self.sequence(p))
        if isinstance(e, Call):
            return (e.name,)
        if isinstance(e, Rx):
            if not e.nullable:
                return (Term(e.text, e),)
            rest = _nonempty_piece(e)
            return () if rest is None else (self.rule(((Term(rest.text, rest),), ())),)
        if isinstance(e, Or):
            return (self.rule(self.alternatives(e)),)
        return self.repeat(e)

    def repeat(self, e: Rep) -> tuple[str | Term, ...]:
        item = self.sequence(e.item)
        if not item:
            return ()
        head = item * e.min
        if e.max is None:
            return (*head, self.rule(((*item, _SELF), ())))
        if e.max - e.min > self.max_rules:
            raise CompileLimitExceeded(
                "grammar_rules", self.max_rules, e.max - e.min, "a bounded repetition is too long"
            )
        tail: tuple[str | Term, ...] = ()
        for _ in range(e.max - e.min):  # up to k more: o_k = item o_{k-1} | ε
            tail = (self.rule(((*item, *tail), ())),)
        return (*head, *tail)

    def rule(self, alternatives: tuple[tuple[str | Term, ...], ...]) -> str:
        name = self.aux.get(alternatives)
        if name is not None:
            return name
        if len(self.aux) >= self.max_rules:
            raise CompileLimitExceeded("grammar_rules", self.max_rules, None, "too many rules")
        name = self.aux[alternatives] = f"x{len(self.aux)}"
        body = tuple(tuple(name if s is _SELF else s for s in alt) for alt in alternatives)
        self.defs.append((name, body))
        return name


# ------------------------------------------------------------ Lark printer


def to_lark(start: str, rules: dict[str, Expr], *, max_rules: int = 50_000) -> str:
    """The rules as Lark EBNF (``start`` first): the :func:`flatten`ed rules,
    so no ``[...]``, ``?`` or ``*`` is printed (lark expands those inline and
    refuses a rule when two expansions coincide)."""
    lines = []
    for name, alternatives in flatten(start, rules, max_rules=max_rules):
        texts = list(
            dict.fromkeys(
                " ".join(_terminal(s.text) if isinstance(s, Term) else s for s in alt)
                for alt in alternatives
            )
        )
        body = " | ".join(t for t in texts if t) + (" |" if not all(texts) else "")
        lines.append(f"{name}: {body}")
    return "\n".join(lines) + "\n"


def to_grammar_ir(start: str, rules: dict[str, Expr], *, max_rules: int = 50_000) -> GrammarIR:
    """The rules as the core's ``GrammarIR`` directly (the language of
    ``to_lark``'s text, without printing it for lark to read back): the
    :func:`flatten`ed rules, terminals named ``T0``, ``T1``, ... by text (one
    terminal per distinct regex)."""
    terminals: dict[str, Terminal] = {}
    names: dict[str, str] = {}  # regex text → terminal name

    def symbol(s: str | Term) -> str:
        if not isinstance(s, Term):
            return s
        name = names.get(s.text)
        if name is None:
            name = names[s.text] = f"T{len(names)}"
            node = s.rx.ast() if s.rx is not None else None
            terminals[name] = Terminal(name, s.text, node=node)
        return name

    out = [
        Rule(name, tuple(symbol(s) for s in alt))
        for name, alternatives in flatten(start, rules, max_rules=max_rules)
        for alt in alternatives
    ]
    return GrammarIR(start, tuple(out), terminals)


def _terminal(text: str) -> str:
    out = []
    i = 0
    while i < len(text):
        c = text[i]
        if c == "\\":
            pair = text[i : i + 2]
            # lark turns \" into " inside /.../: spell quotes as \x22
            out.append("\\x22" if pair == '\\"' else pair)
            i += 2
            continue
        out.append({"/": "\\/", '"': "\\x22"}.get(c, c))
        i += 1
    return "/" + "".join(out) + "/"


def _nonempty_piece(rx: Rx) -> Rx | None:
    """``rx`` without the empty string (``None`` if nothing is left), its
    text printed from its AST (cached by ``rx``'s text)."""
    known = _NONEMPTY.get(rx.text)
    if known is None:
        from ..automata import to_regex  # the printer; only grammars with nullable pieces need it

        node = _nonempty(rx.ast())
        if node is None:
            piece = None
        elif has_opaque(rx.text):  # (an intersection or difference: no text to print)
            piece = opaque(node)
        elif has_lookaround(node):  # (text beside an AST that has none: print the text's)
            piece = Rx(to_regex(_nonempty(parse_regex(rx.text))), node=node)
        else:
            piece = Rx(to_regex(node), node=node)
        known = _NONEMPTY.put(rx.text, (piece,))
    return known[0]


#: ``_nonempty_piece`` results (in a 1-tuple) by the piece's text; bounded
#: at 256 as ``parse_regex``'s cache is (the reason is there).
_NONEMPTY: ContentCache[tuple[Rx | None]] = core_cache("non-empty pieces", ContentCache(256))


def _nonempty(node: Node) -> Node | None:
    """``node``'s language minus ε (``None`` if nothing is left)."""
    if not nullable(node):
        return node
    if isinstance(node, Empty):
        return None
    if isinstance(node, Alt):
        opts = [o for o in (_nonempty(o) for o in node.options) if o is not None]
        return alt(*opts) if opts else None
    if isinstance(node, Seq):
        # ne(a b) = ne(a) b | ne(b)   (a, b nullable)
        head, tail = node.parts[0], seq(*node.parts[1:])
        first = _nonempty(head)
        rest = _nonempty(tail)
        opts = ([seq(first, tail)] if first is not None else []) + ([rest] if rest else [])
        return alt(*opts) if opts else None
    if isinstance(node, Repeat):
        inner = _nonempty(node.node)
        if inner is None:
            return None
        hi = None if node.max is None else node.max - 1
        return seq(inner, repeat(node.node, 0, hi)) if hi != 0 else inner
    if isinstance(node, Intersect | Difference):
        return Difference(node, Empty())
    raise TypeError(node)
