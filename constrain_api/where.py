"""LMQL-style predicates over the generated text.

A predicate constrains one variable, the generated text (written ``x`` here;
any identifier is accepted, but it must be the same everywhere in one
predicate). The language::

    stops_at(x, "s")              the first occurrence of "s" ends the text
    x in ["a", "b"]               the text is one of the options
    "s" in x                      the text contains "s"
    "s" not in x                  the text does not contain "s"
    not "s" in x                  the same
    len(x) <= 10                  length in characters (code points)
    len(words(x)) >= 3            number of words (``str.split()``)
    3 < len(x) <= 10              chains of length bounds (an ``and``)
    p and q, p or q, (p)

Length bounds take the operators ``<``, ``<=``, ``==``, ``>=``, ``>`` and a
non-negative integer literal on either side (``5 >= len(x)`` means
``len(x) <= 5``).

``not`` is accepted wherever the negation is again a predicate of the
language: on containment (``not "s" in x`` is ``"s" not in x``), on length
bounds other than ``==`` (``not len(x) < 5`` is ``len(x) >= 5``), and on
``and``/``or`` of such predicates (De Morgan). ``not stops_at(...)``,
``not x in [...]`` and ``not len(...) == n`` are rejected: the AST has no
general negation node, so every backend sees only the forms listed above.

The string form is parsed with Python's ``ast`` module (never evaluated).
``str(predicate)`` renders the canonical string form, and
``parse(str(p)) == p`` for every predicate ``p``.

``holds(text)`` is the reference semantics on a *complete* text; backends
evaluate predicates eagerly during generation (LMQL's "follow" semantics)
and must agree with it on the texts they let finish.
"""

from __future__ import annotations

import abc
import ast
import keyword
import operator
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import ClassVar, NoReturn

from .errors import ConstraintError

__all__ = [
    "And",
    "Contains",
    "LenChars",
    "LenWords",
    "NotContains",
    "OneOf",
    "Or",
    "Predicate",
    "StopsAt",
    "contains",
    "len_chars",
    "len_words",
    "not_contains",
    "one_of",
    "parse",
    "stops_at",
]

_WHAT = "where"

#: The comparison operators of length bounds, as written in the string form.
OPS: tuple[str, ...] = ("<", "<=", "==", ">=", ">")

_COMPARE: dict[str, Callable[[int, int], bool]] = {
    "<": operator.lt,
    "<=": operator.le,
    "==": operator.eq,
    ">=": operator.ge,
    ">": operator.gt,
}
# ``n op len`` is ``len _MIRROR[op] n``.
_MIRROR = {"<": ">", "<=": ">=", "==": "==", ">=": "<=", ">": "<"}
# ``not (len op n)`` is ``len _NEGATE[op] n``; ``==`` has no single negation.
_NEGATE = {"<": ">=", "<=": ">", ">=": "<", ">": "<="}
_AST_OPS: dict[type[ast.cmpop], str] = {
    ast.Lt: "<",
    ast.LtE: "<=",
    ast.Eq: "==",
    ast.GtE: ">=",
    ast.Gt: ">",
    ast.NotEq: "!=",
    ast.Is: "is",
    ast.IsNot: "is not",
    ast.In: "in",
    ast.NotIn: "not in",
}
_FUNCTIONS = frozenset({"len", "words", "stops_at", "STOPS_AT"})


def _fail(message: str, where: int | None = None) -> NoReturn:
    raise ConstraintError(_WHAT, message, where=where)


def _check_text(value: object, role: str) -> str:
    if not isinstance(value, str):
        _fail(f"{role} must be a string, got {type(value).__name__}")
    if not value:
        _fail(f"{role} must be a non-empty string")
    return value


def _check_bound(op: object, n: object) -> None:
    if op not in _COMPARE:
        _fail(f"unsupported comparison {op!r}; use one of {', '.join(OPS)}")
    if type(n) is not int or n < 0:
        _fail(f"len bound must be a non-negative integer literal, got {n!r}")


def _quote(s: str) -> str:
    """A double-quoted Python string literal for ``s`` (non-printables escaped)."""
    out = ['"']
    for ch in s:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t":
            out.append("\\t")
        elif ch.isprintable():
            out.append(ch)
        else:
            code = ord(ch)
            if code < 0x100:
                out.append(f"\\x{code:02x}")
            elif code < 0x10000:
                out.append(f"\\u{code:04x}")
            else:
                out.append(f"\\U{code:08x}")
    out.append('"')
    return "".join(out)


def _check_var(var: str) -> None:
    if not isinstance(var, str) or not var.isidentifier() or keyword.iskeyword(var):
        raise ValueError(f"not a variable name: {var!r}")


@dataclass(frozen=True, slots=True)
class Predicate(abc.ABC):
    """A predicate over the complete generated text; frozen, hashable, compared by value.

    ``p & q`` and ``p | q`` build conjunctions and disjunctions, ``~p`` the
    negation where the language has one (see the module docstring).
    """

    precedence: ClassVar[int] = 3  # 1 = or, 2 = and, 3 = atom

    @abc.abstractmethod
    def holds(self, text: str) -> bool:
        """Whether the complete text ``text`` satisfies the predicate."""

    @abc.abstractmethod
    def render(self, var: str = "x") -> str:
        """The string form, with the generated text named ``var``."""

    def __str__(self) -> str:
        return self.render()

    def __and__(self, other: object) -> Predicate:
        if not isinstance(other, Predicate):
            return NotImplemented
        return And((self, other))

    def __or__(self, other: object) -> Predicate:
        if not isinstance(other, Predicate):
            return NotImplemented
        return Or((self, other))

    def __invert__(self) -> Predicate:
        return _negate(self, None)


@dataclass(frozen=True, slots=True)
class StopsAt(Predicate):
    """``stops_at(x, text)``: generation stops right after the first occurrence of ``text``.

    ``holds(t)`` iff the first occurrence of ``text`` in ``t`` ends exactly at
    the end of ``t``: ``t`` ends with ``text`` and no occurrence ends earlier
    (for ``text="aa"``: ``"aa"`` and ``"baa"`` hold, ``"aaa"`` does not, since
    the first ``"aa"`` ends at offset 2). Unlike LMQL's STOPS_AT, which also
    lets a variable end (EOS, length limit) before the stop string appears,
    the stop string is required here. ``text`` is non-empty.
    """

    text: str

    def __post_init__(self) -> None:
        _check_text(self.text, "stops_at string")

    def holds(self, text: str) -> bool:
        i = text.find(self.text)
        return i >= 0 and i + len(self.text) == len(text)

    def render(self, var: str = "x") -> str:
        _check_var(var)
        return f"stops_at({var}, {_quote(self.text)})"


@dataclass(frozen=True, slots=True)
class OneOf(Predicate):
    """``x in ["a", "b"]``: the text equals one of ``options``.

    ``options`` is a non-empty tuple of strings (any iterable of strings is
    accepted and stored as a tuple, duplicates dropped, order kept); the
    empty string stands for the empty text.
    """

    options: tuple[str, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "options", _options(self.options, "x in [...]"))

    def holds(self, text: str) -> bool:
        return text in self.options

    def render(self, var: str = "x") -> str:
        _check_var(var)
        return f"{var} in [{', '.join(_quote(o) for o in self.options)}]"


def _options(options: object, role: str) -> tuple[str, ...]:
    if isinstance(options, str | bytes) or not isinstance(options, Iterable):
        _fail(f"{role} needs a list of strings, got {type(options).__name__}")
    seen: dict[str, None] = {}
    for i, option in enumerate(options):
        if not isinstance(option, str):
            _fail(f"{role}: option {i} is {type(option).__name__}, not a string")
        seen.setdefault(option)
    if not seen:
        _fail(f"{role} needs at least one option")
    return tuple(seen)


@dataclass(frozen=True, slots=True)
class Contains(Predicate):
    """``"s" in x``: the text contains ``text`` (non-empty) as a substring."""

    text: str

    def __post_init__(self) -> None:
        _check_text(self.text, "containment string")

    def holds(self, text: str) -> bool:
        return self.text in text

    def render(self, var: str = "x") -> str:
        _check_var(var)
        return f"{_quote(self.text)} in {var}"


@dataclass(frozen=True, slots=True)
class NotContains(Predicate):
    """``"s" not in x``: the text does not contain ``text`` (non-empty)."""

    text: str

    def __post_init__(self) -> None:
        _check_text(self.text, "containment string")

    def holds(self, text: str) -> bool:
        return self.text not in text

    def render(self, var: str = "x") -> str:
        _check_var(var)
        return f"{_quote(self.text)} not in {var}"


@dataclass(frozen=True, slots=True)
class LenWords(Predicate):
    """``len(words(x)) <op> n``: bound on the number of words.

    Words are maximal runs of non-whitespace, exactly ``text.split()``
    (Python's Unicode whitespace: ``str.isspace``). ``op`` is one of
    ``<``, ``<=``, ``==``, ``>=``, ``>``; ``n`` a non-negative int.
    """

    op: str
    n: int

    def __post_init__(self) -> None:
        _check_bound(self.op, self.n)

    def holds(self, text: str) -> bool:
        return _COMPARE[self.op](len(text.split()), self.n)

    def render(self, var: str = "x") -> str:
        _check_var(var)
        return f"len(words({var})) {self.op} {self.n}"


@dataclass(frozen=True, slots=True)
class LenChars(Predicate):
    """``len(x) <op> n``: bound on the length in characters (code points, not bytes).

    ``op`` is one of ``<``, ``<=``, ``==``, ``>=``, ``>``; ``n`` a non-negative int.
    """

    op: str
    n: int

    def __post_init__(self) -> None:
        _check_bound(self.op, self.n)

    def holds(self, text: str) -> bool:
        return _COMPARE[self.op](len(text), self.n)

    def render(self, var: str = "x") -> str:
        _check_var(var)
        return f"len({var}) {self.op} {self.n}"


def _parts(cls: type, parts: object) -> tuple[Predicate, ...]:
    if isinstance(parts, Predicate) or not isinstance(parts, Iterable):
        _fail(f"{cls.__name__} needs a sequence of predicates")
    flat: list[Predicate] = []
    for part in parts:
        if isinstance(part, cls):
            flat.extend(part.parts)  # type: ignore[attr-defined]
        elif isinstance(part, Predicate):
            flat.append(part)
        else:
            _fail(f"{cls.__name__}: {type(part).__name__} is not a predicate")
    if len(flat) < 2:
        _fail(f"{cls.__name__} needs at least two parts")
    return tuple(flat)


@dataclass(frozen=True, slots=True)
class And(Predicate):
    """``p and q and ...``: all parts hold.

    ``parts`` has at least two predicates; nested ``And`` parts are flattened,
    so ``And((And((a, b)), c)) == And((a, b, c))``.
    """

    parts: tuple[Predicate, ...]
    precedence: ClassVar[int] = 2

    def __post_init__(self) -> None:
        object.__setattr__(self, "parts", _parts(And, self.parts))

    def holds(self, text: str) -> bool:
        return all(p.holds(text) for p in self.parts)

    def render(self, var: str = "x") -> str:
        return " and ".join(_wrap(p, var, 2) for p in self.parts)


@dataclass(frozen=True, slots=True)
class Or(Predicate):
    """``p or q or ...``: some part holds (at least two parts; nested ``Or`` flattened)."""

    parts: tuple[Predicate, ...]
    precedence: ClassVar[int] = 1

    def __post_init__(self) -> None:
        object.__setattr__(self, "parts", _parts(Or, self.parts))

    def holds(self, text: str) -> bool:
        return any(p.holds(text) for p in self.parts)

    def render(self, var: str = "x") -> str:
        return " or ".join(_wrap(p, var, 1) for p in self.parts)


def _wrap(p: Predicate, var: str, precedence: int) -> str:
    s = p.render(var)
    return f"({s})" if p.precedence < precedence else s


def _negate(p: Predicate, where: int | None) -> Predicate:
    if isinstance(p, Contains):
        return NotContains(p.text)
    if isinstance(p, NotContains):
        return Contains(p.text)
    if isinstance(p, LenChars | LenWords):
        if p.op == "==":
            _fail(f"cannot negate {p} (use < or > bounds)", where)
        return type(p)(_NEGATE[p.op], p.n)
    if isinstance(p, And):
        return Or(tuple(_negate(q, where) for q in p.parts))
    if isinstance(p, Or):
        return And(tuple(_negate(q, where) for q in p.parts))
    _fail(f"cannot negate {p}: not is only supported on containment and length bounds", where)


# --------------------------------------------------------------- builders


def stops_at(s: str) -> StopsAt:
    """``stops_at(x, s)``: the text ends at the first occurrence of ``s``."""
    return StopsAt(s)


def one_of(options: Iterable[str]) -> OneOf:
    """``x in [...]``: the text equals one of ``options``."""
    return OneOf(options)  # type: ignore[arg-type]


def contains(s: str) -> Contains:
    """``"s" in x``: the text contains ``s``."""
    return Contains(s)


def not_contains(s: str) -> NotContains:
    """``"s" not in x``: the text does not contain ``s``."""
    return NotContains(s)


def _bounds(
    cls: type[LenWords] | type[LenChars], bounds: dict[str, int | None], name: str
) -> Predicate:
    ops = {"lt": "<", "le": "<=", "eq": "==", "ge": ">=", "gt": ">"}
    parts = [cls(ops[k], n) for k, n in bounds.items() if n is not None]
    if not parts:
        _fail(f"{name}() needs at least one of lt=, le=, eq=, ge=, gt=")
    return parts[0] if len(parts) == 1 else And(tuple(parts))


def len_words(
    *,
    lt: int | None = None,
    le: int | None = None,
    eq: int | None = None,
    ge: int | None = None,
    gt: int | None = None,
) -> Predicate:
    """Bounds on the word count; several bounds give an ``And`` (in lt, le, eq, ge, gt order)."""
    return _bounds(LenWords, {"lt": lt, "le": le, "eq": eq, "ge": ge, "gt": gt}, "len_words")


def len_chars(
    *,
    lt: int | None = None,
    le: int | None = None,
    eq: int | None = None,
    ge: int | None = None,
    gt: int | None = None,
) -> Predicate:
    """Bounds on the character count; several bounds give an ``And`` (lt, le, eq, ge, gt order)."""
    return _bounds(LenChars, {"lt": lt, "le": le, "eq": eq, "ge": ge, "gt": gt}, "len_chars")


# ----------------------------------------------------------------- parser

_UNARY: dict[type[ast.unaryop], str] = {ast.USub: "-", ast.UAdd: "+", ast.Invert: "~"}
_SYNTAX_NAMES: dict[type[ast.AST], str] = {
    ast.BinOp: "arithmetic",
    ast.Lambda: "lambda",
    ast.IfExp: "conditional expression",
    ast.NamedExpr: "assignment expression",
    ast.Subscript: "subscript",
    ast.Starred: "starred expression",
    ast.JoinedStr: "f-string",
    ast.ListComp: "comprehension",
    ast.SetComp: "comprehension",
    ast.DictComp: "comprehension",
    ast.GeneratorExp: "generator expression",
    ast.Await: "await",
    ast.Yield: "yield",
    ast.YieldFrom: "yield",
    ast.Dict: "dict literal",
    ast.Set: "set literal",
    ast.List: "list literal",
    ast.Tuple: "tuple literal",
}


def parse(source: str) -> Predicate:
    """Parse the string form of a predicate.

    Raises ``ConstraintError("where", message, where=offset)`` for anything
    outside the language, ``offset`` being the character offset of the
    offending construct in ``source``.
    """
    if not isinstance(source, str):
        _fail(f"a predicate must be a string, got {type(source).__name__}")
    return _Parser(source).run()


class _Parser:
    def __init__(self, source: str):
        self.source = source
        stripped = source.lstrip()
        self.lead = len(source) - len(stripped)
        self.text = stripped.rstrip()
        self.var: str | None = None
        self.line_starts = [0]
        i, n = 0, len(self.text)
        while i < n:
            ch = self.text[i]
            if ch == "\r" and i + 1 < n and self.text[i + 1] == "\n":
                i += 1
            if ch in "\r\n":
                self.line_starts.append(i + 1)
            i += 1

    def offset(self, lineno: int, col_chars: int) -> int:
        return self.lead + self.line_starts[lineno - 1] + col_chars

    def pos(self, node: ast.AST) -> int:
        lineno = node.lineno  # type: ignore[attr-defined]
        start = self.line_starts[lineno - 1]
        end = self.line_starts[lineno] if lineno < len(self.line_starts) else len(self.text)
        line = self.text[start:end].encode("utf-8", "surrogatepass")
        col = len(line[: node.col_offset].decode("utf-8", "replace"))  # type: ignore[attr-defined]
        return self.lead + start + col

    def fail(self, node: ast.AST, message: str) -> NoReturn:
        _fail(message, self.pos(node))

    def run(self) -> Predicate:
        if not self.text:
            _fail("empty predicate", 0)
        try:
            tree = ast.parse(self.text, mode="eval")
        except SyntaxError as e:
            where = None
            if e.lineno is not None and e.offset is not None and e.lineno <= len(self.line_starts):
                where = min(self.offset(e.lineno, max(e.offset - 1, 0)), len(self.source))
            _fail(f"syntax error: {e.msg}", where)
        except (ValueError, UnicodeError) as e:  # e.g. NUL bytes, lone surrogates
            _fail(f"syntax error: {e}")
        except (RecursionError, MemoryError):
            _fail("predicate is nested too deeply")
        try:
            return self.pred(tree.body)
        except RecursionError:
            _fail("predicate is nested too deeply")

    # -- predicates

    def pred(self, node: ast.expr) -> Predicate:
        if isinstance(node, ast.BoolOp):
            parts = tuple(self.pred(v) for v in node.values)
            return And(parts) if isinstance(node.op, ast.And) else Or(parts)
        if isinstance(node, ast.UnaryOp):
            if isinstance(node.op, ast.Not):
                return _negate(self.pred(node.operand), self.pos(node))
            self.unsupported(node)
        if isinstance(node, ast.Compare):
            return self.compare(node)
        if isinstance(node, ast.Call):
            return self.call(node)
        if isinstance(node, ast.Name):
            self.variable(node)
            self.fail(node, f"the bare variable {node.id} is not a predicate")
        if isinstance(node, ast.Constant):
            self.fail(node, f"the constant {node.value!r} is not a predicate")
        self.unsupported(node)

    def unsupported(self, node: ast.expr) -> NoReturn:
        if isinstance(node, ast.Attribute):
            self.fail(node, f"attribute access .{node.attr} is not supported")
        if isinstance(node, ast.UnaryOp):
            symbol = _UNARY.get(type(node.op), type(node.op).__name__)
            self.fail(node, f"unsupported operator {symbol}")
        name = _SYNTAX_NAMES.get(type(node), type(node).__name__)
        self.fail(node, f"unsupported syntax: {name}")

    def call(self, node: ast.Call) -> Predicate:
        name = self.func_name(node)
        if name in ("stops_at", "STOPS_AT"):
            self.plain_args(node, 2, name)
            self.variable(node.args[0])
            text = self.string(node.args[1], "stops_at string")
            return StopsAt(self.checked(node.args[1], lambda: _check_text(text, "stops_at string")))
        if name == "len":
            self.fail(node, "len(...) must be compared with an integer literal")
        self.fail(node, f"unsupported call {name}()")

    def func_name(self, node: ast.Call) -> str:
        if isinstance(node.func, ast.Name):
            return node.func.id
        if isinstance(node.func, ast.Attribute):
            self.fail(node.func, f"attribute access .{node.func.attr} is not supported")
        self.fail(node, "unsupported call")

    def plain_args(self, node: ast.Call, count: int, name: str) -> None:
        if node.keywords:
            self.fail(node.keywords[0].value, f"{name}() takes no keyword arguments")
        for arg in node.args:
            if isinstance(arg, ast.Starred):
                self.fail(arg, f"{name}() takes no starred arguments")
        if len(node.args) != count:
            self.fail(node, f"{name}() takes {count} argument(s), got {len(node.args)}")

    def checked(self, node: ast.AST, check: Callable[[], str]) -> str:
        try:
            return check()
        except ConstraintError as e:
            self.fail(node, e.message)

    def variable(self, node: ast.expr) -> str:
        if not isinstance(node, ast.Name):
            if isinstance(node, ast.Constant):
                self.fail(node, f"expected the variable, got the constant {node.value!r}")
            self.fail(node, "expected the variable (the generated text)")
        if node.id in _FUNCTIONS:
            self.fail(node, f"{node.id} is a function, not a variable")
        if self.var is None:
            self.var = node.id
        elif node.id != self.var:
            self.fail(
                node,
                f"mixed variables {self.var} and {node.id}: a predicate constrains one variable",
            )
        return node.id

    def string(self, node: ast.expr, role: str) -> str:
        if isinstance(node, ast.Constant) and type(node.value) is str:
            return node.value
        if isinstance(node, ast.Constant):
            self.fail(node, f"{role} must be a string literal, got {node.value!r}")
        if isinstance(node, ast.Name):
            self.fail(node, f"{role} must be a string literal, got the name {node.id}")
        if isinstance(node, ast.Call):
            self.fail(node, f"unsupported call {self.func_name(node)}()")
        self.unsupported(node)

    def bound(self, node: ast.expr) -> int:
        if isinstance(node, ast.Constant) and type(node.value) is int and node.value >= 0:
            return node.value
        self.fail(node, "len bound must be a non-negative integer literal")

    def length(self, node: ast.expr) -> type[LenWords] | type[LenChars] | None:
        """LenWords/LenChars when ``node`` is ``len(words(x))``/``len(x)``, else None."""
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
            return None
        if node.func.id != "len":
            return None
        self.plain_args(node, 1, "len")
        arg = node.args[0]
        if isinstance(arg, ast.Call) and isinstance(arg.func, ast.Name) and arg.func.id == "words":
            self.plain_args(arg, 1, "words")
            self.variable(arg.args[0])
            return LenWords
        if isinstance(arg, ast.Name):
            self.variable(arg)
            return LenChars
        if isinstance(arg, ast.Call):
            name = self.func_name(arg)
            self.fail(arg, f"unsupported call {name}() (len() takes x or words(x))")
        self.fail(arg, "len() takes the variable or words(variable)")

    def compare(self, node: ast.Compare) -> Predicate:
        operands = [node.left, *node.comparators]
        ops = [_AST_OPS[type(op)] for op in node.ops]
        if len(ops) > 1:
            parts = []
            for i, op in enumerate(ops):
                if op not in _COMPARE:
                    self.fail(operands[i + 1], "only length bounds can be chained")
                parts.append(self.bound_pair(operands[i], op, operands[i + 1], node))
            return And(tuple(parts))
        op, left, right = ops[0], operands[0], operands[1]
        if op in _COMPARE:
            return self.bound_pair(left, op, right, node)
        if op in ("in", "not in"):
            if isinstance(left, ast.Name) and op == "in":
                self.variable(left)
                return OneOf(self.option_list(right))
            if isinstance(left, ast.Name):
                self.variable(left)
                self.fail(node, "x not in [...] is not supported; list the allowed options")
            text = self.string(left, "the left side of in")
            if not isinstance(right, ast.Name):
                self.fail(right, f"the right side of {op} must be the variable")
            self.variable(right)
            self.checked(left, lambda: _check_text(text, "containment string"))
            return Contains(text) if op == "in" else NotContains(text)
        self.fail(node, f"unsupported comparison {op}")

    def bound_pair(self, left: ast.expr, op: str, right: ast.expr, node: ast.expr) -> Predicate:
        kind = self.length(left)
        if kind is not None:
            if self.length(right) is not None:
                self.fail(right, "cannot compare two lengths; bound a length by an integer")
            return kind(op, self.bound(right))
        kind = self.length(right)
        if kind is not None:
            return kind(_MIRROR[op], self.bound(left))
        for side in (left, right):
            if isinstance(side, ast.Name):
                self.variable(side)
                self.fail(
                    node, f"unsupported comparison {op} on the text; use x in [...] or len(x)"
                )
        for side in (left, right):
            if isinstance(side, ast.Call):
                self.fail(side, f"unsupported call {self.func_name(side)}()")
            if not isinstance(side, ast.Constant):
                self.unsupported(side)
        self.fail(node, f"unsupported comparison {op}: one side must be len(x) or len(words(x))")

    def option_list(self, node: ast.expr) -> tuple[str, ...]:
        if not isinstance(node, ast.List | ast.Tuple):
            self.fail(node, "x in ... needs a list of string literals")
        if not node.elts:
            self.fail(node, "x in [] is never true; give at least one option")
        return tuple(self.string(e, "an option") for e in node.elts)
