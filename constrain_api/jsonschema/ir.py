"""The small expression language a schema is lowered to, and its two printers.

``Rx(text)`` is a regular piece (portable regex text, self-contained);
``Cat``/``Or``/``Rep`` combine pieces; ``Call(name)`` names a rule (only in
grammar mode: a recursive or shared subschema). The constructors ``cat``,
``either`` and ``rep`` fold regular operands into one ``Rx`` as they go, so a
regular schema ends as a single ``Rx`` — its regex — and a non-regular one as
an expression whose regular stretches are single terminals.

``to_lark(start, rules)`` prints rules as a Lark grammar. Terminals there never
match the empty string (LALR and Earley lexers reject such terminals): an
``Rx`` that accepts ε is printed as ``[/its non-empty part/]``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

from ..automata import (
    Alt,
    Empty,
    Node,
    Repeat,
    Seq,
    alt,
    nullable,
    parse_regex,
    repeat,
    seq,
)
from ..automata.printer import concatenable, group
from ..errors import CompileLimitExceeded


@dataclass(frozen=True, slots=True)
class Rx:
    """A regular piece: ``text`` (portable regex); ``nullable``: it matches ε;
    ``joinable``: known safe to concatenate as is (``None``: not yet known —
    the constructors set it, so long texts are not rescanned at every join)."""

    text: str
    nullable: bool = False
    joinable: bool | None = field(default=None, compare=False)

    def joined(self) -> str:
        """``text`` made safe to concatenate."""
        if self.joinable is None:
            object.__setattr__(self, "joinable", concatenable(self.text) == self.text)
        return self.text if self.joinable else f"(?:{self.text})"


@dataclass(frozen=True, slots=True)
class Cat:
    parts: tuple[Expr, ...]


@dataclass(frozen=True, slots=True)
class Or:
    options: tuple[Expr, ...]


@dataclass(frozen=True, slots=True)
class Rep:
    item: Expr
    min: int
    max: int | None


@dataclass(frozen=True, slots=True)
class Call:
    name: str


Expr = Rx | Cat | Or | Rep | Call

EMPTY = Rx("", True)
#: Matches nothing: an empty class (portable: Python ``re`` and the automata).
NOTHING = Rx("[^\\x00-\\U0010ffff]")


def is_nothing(e: Expr) -> bool:
    return e == NOTHING


def cat(*parts: Expr) -> Expr:
    """Concatenation, adjacent regular parts merged."""
    out: list[Expr] = []
    for p in parts:
        items = p.parts if isinstance(p, Cat) else (p,)
        for item in items:
            if item == EMPTY:
                continue
            if item == NOTHING:
                return NOTHING
            if out and isinstance(item, Rx) and isinstance(out[-1], Rx):
                prev = out[-1]
                out[-1] = Rx(prev.joined() + item.joined(), prev.nullable and item.nullable, True)
            else:
                out.append(item)
    if not out:
        return EMPTY
    return out[0] if len(out) == 1 else Cat(tuple(out))


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
            return Rx(f"(?:{body})?", True, True)
        if len(nonempty) > 1:
            return Rx(f"(?:{body})", nullable, True)
        return Rx(nonempty[0].text, nullable, nonempty[0].joinable)
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
        return Rx(group(item.text) + q, lo == 0 or item.nullable, True)
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
    """Characters of regex text in ``e`` (a bound on the work it causes)."""
    if isinstance(e, Rx):
        return len(e.text)
    if isinstance(e, Cat):
        return sum(size(p) for p in e.parts)
    if isinstance(e, Or):
        return sum(size(p) for p in e.options)
    if isinstance(e, Rep):
        return size(e.item)
    return len(e.name)


# ------------------------------------------------------------ Lark printer


def to_lark(start: str, rules: dict[str, Expr], *, max_rules: int = 50_000) -> str:
    """The rules as Lark EBNF (``start`` first).

    No ``[...]``, ``?`` or ``*`` is printed: lark expands those inline and
    refuses a rule when two expansions coincide, so every optional part,
    repetition and nested alternation gets a rule of its own (shared by
    identical bodies), with an explicit empty alternative where needed.
    """
    return _LarkPrinter(max_rules).print(start, rules)


class _LarkPrinter:
    def __init__(self, max_rules: int) -> None:
        self.max_rules = max_rules
        self.aux: dict[str, str] = {}  # body → name
        self.lines: list[str] = []

    def print(self, start: str, rules: dict[str, Expr]) -> str:
        order = [start] + [n for n in rules if n != start]
        for name in order:
            self.lines.append(f"{name}: {self.alternatives(rules[name])}")
        return "\n".join(self.lines) + "\n"

    def alternatives(self, e: Expr) -> str:
        options = e.options if isinstance(e, Or) else (e,)
        texts = list(dict.fromkeys(self.sequence(o) for o in options))
        return " | ".join(texts) if all(texts) else " | ".join(t for t in texts if t) + " |"

    def sequence(self, e: Expr) -> str:
        """``e`` as a space-separated symbol sequence ("" for ε)."""
        if isinstance(e, Cat):
            return " ".join(filter(None, (self.sequence(p) for p in e.parts)))
        if isinstance(e, Call):
            return e.name
        if isinstance(e, Rx):
            if not e.nullable:
                return _terminal(e.text)
            rest = _nonempty_text(e.text)
            return "" if rest is None else self.rule(f"{_terminal(rest)} |")
        if isinstance(e, Or):
            return self.rule(self.alternatives(e))
        return self.repeat(e)

    def repeat(self, e: Rep) -> str:
        item = self.sequence(e.item)
        if not item:
            return ""
        head = " ".join([item] * e.min)
        if e.max is None:
            star = self.rule(f"{item} __self__ |")
            return f"{head} {star}".strip()
        if e.max - e.min > self.max_rules:
            raise CompileLimitExceeded(
                "grammar_rules", self.max_rules, e.max - e.min, "a bounded repetition is too long"
            )
        tail = ""
        for _ in range(e.max - e.min):  # up to k more: o_k = item o_{k-1} | ε
            tail = self.rule(f"{item} {tail} |".replace("  ", " "))
        return f"{head} {tail}".strip()

    def rule(self, body: str) -> str:
        if body in self.aux:
            return self.aux[body]
        if len(self.aux) >= self.max_rules:
            raise CompileLimitExceeded("grammar_rules", self.max_rules, None, "too many rules")
        name = f"x{len(self.aux)}"
        self.aux[body] = name
        self.lines.append(f"{name}: {body.replace('__self__', name)}")
        return name


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


@lru_cache(maxsize=4096)
def _nonempty_text(text: str) -> str | None:
    from ..automata import to_regex  # the printer; only grammars with nullable pieces need it

    node = _nonempty(parse_regex(text))
    return None if node is None else to_regex(node)


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
    raise TypeError(node)
