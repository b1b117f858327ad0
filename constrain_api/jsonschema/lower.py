"""The schema walker: a JSON Schema → an ``ir`` expression.

One ``Lowerer`` runs in one of two modes. *Regex mode* inlines every
``$ref`` and gives up (``NotRegular``) on recursion and on schema-free values
(``true``, ``additionalProperties`` left open), which no regex describes.
*Grammar mode* turns ``$ref`` targets into rules and writes schema-free
values with the JSON rules, so every schema it accepts becomes a grammar.

The language of a schema (what the text must be; see ``docs/jsonschema.md``):

* values are written as JSON with the whitespace policy of the options;
  strings in their canonical form (``strings``), numbers in the forms
  ``numbers`` documents;
* object members in a fixed order: the ``properties`` in schema order (then
  ``required`` names that ``properties`` lacks), then any additional members;
* a keyword that cannot be expressed exactly raises ``UnsupportedConstraint``
  naming it and its JSON pointer — nothing is dropped silently.
"""

from __future__ import annotations

import functools
import itertools
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import jsonschema
import referencing
import referencing.jsonschema

from ..automata import (
    ByteDFA,
    CharSet,
    Difference,
    Intersect,
    Literal,
    Node,
    Repeat,
    alt,
    dfa_to_regex,
    has_lookaround,
    has_string,
)
from ..budget import checkpoint, is_budget_error
from ..caching import core_cache
from ..errors import CompileLimitExceeded, ConstraintError, UnsupportedConstraint
from . import formats, numbers, strings
from .exclusive import (
    ANY_SHAPE,
    Shape,
    apart,
    closed_names,
    disjoint_by_schema,
    exclusive_failing,
    exclusive_objects,
    exclusive_required,
    failures,
    in_one_order,
    object_shapes,
    role_on_type,
    tag_cases,
    takes_all,
)
from .ir import (
    EMPTY,
    NOTHING,
    Call,
    Expr,
    Rx,
    cat,
    either,
    is_nothing,
    opaque,
    rep,
    separated,
    size,
)
from .judging import format_checker, judged_schema, validator_class
from .keywords import (
    APPLICATORS,
    DEPENDENCIES,
    DRAFT_KEYWORDS,
    EXCLUSIVE_FLAGS,
    KEYWORDS_OF_TYPE,
    REFUSED,
    TYPES,
    annotation_keywords,
    can_reject,
    count_keyword,
    keywords_of,
    members_declared,
    members_named,
)
from .refs import (
    SCHEMA_KEYWORDS,
    SchemaIndex,
    grafted,
    join_pointer,
    pointer_tokens,
    subschemas,
)
from .values import (
    EVERY_TYPE,
    Judge,
    declared_types,
    enum_values,
    json_equal,
    json_key,
    listed_values,
    types_of,
    value_types,
)

ROOT_URI = "urn:constrain-api:schema"


#: Members with dependencies in one schema, at most (2 ** this branches).
_MAX_DEPENDENCIES = 6
#: Keywords beside which the names an ``unevaluatedProperties`` sees are not
#: the schema's own (``Lowerer._evaluated_here``).
_ACROSS = (APPLICATORS - {"allOf"}) | {"__conditionals__", "$dynamicRef", "dependencies"}


class NotRegular(Exception):
    """Regex mode met recursion or a schema-free value."""


class _NotListed(Exception):
    """The validator cannot judge a schema's listed values (``Lowerer._listed``)."""


def _discriminator(cond: Any) -> tuple[str, dict, bool, bool] | None:
    """``(member, its schema, required, object only)`` of a condition that
    tests one member against listed values (``const``/``enum``, maybe with a
    ``type``), or ``None``."""
    if not isinstance(cond, dict):
        return None
    keys = {k for k in cond if can_reject({k: cond[k]})}
    props = cond.get("properties")
    if not keys <= {"properties", "required", "type"} or not isinstance(props, dict):
        return None
    if len(props) != 1:
        return None
    ((name, schema),) = props.items()
    if not isinstance(schema, dict) or not ("const" in schema or "enum" in schema):
        return None
    if {k for k in schema if can_reject({k: schema[k]})} - {"const", "enum", "type"}:
        return None
    required = cond.get("required", [])
    if required not in ([], [name]):
        return None
    kind = cond.get("type")
    if kind not in (None, "object", ["object"]):
        return None
    return name, schema, bool(required), kind is not None


@dataclass(frozen=True)
class Options:
    """How a schema becomes a language (the ``JsonSchema`` spec's fields)."""

    whitespace: str = "compact"
    max_whitespace: int = 1
    additional_properties: bool = True
    one_of: str = "exact"
    format_assertion: bool = True
    max_regex_chars: int = 200_000
    max_grammar_chars: int = 2_000_000
    max_states: int = 20_000


def _unsupported(construct: str, where: str, reason: str) -> UnsupportedConstraint:
    return UnsupportedConstraint("json_schema", f"{construct} at {where or '/'}", reason)


#: Keywords that constrain strings only: ``not`` of a schema of these alone
#: is the strings that fail them (a difference of automata).
_STRING_KEYWORDS = frozenset({"pattern", "minLength", "maxLength"})

#: A referenced schema whose regular piece is shorter than this is inlined in
#: grammar mode (no rule of its own).
_INLINE_CHARS = 2000
#: A bigger expression than this becomes a rule in grammar mode (``share``).
_SHARE_CHARS = 4000
#: The most schemas read for the shape of an ``anyOf``/``oneOf`` (``Lowerer._shape``).
_MAX_SHAPE_VISITS = 64


#: The most listed values a schema is decided by (see ``_Lowerer._finite``).
_MAX_FINITE = 10_000


class Lowerer:
    """Lower one schema document (see the module docstring for the modes)."""

    def __init__(
        self,
        index: SchemaIndex,
        root: Any,
        options: Options,
        *,
        grammar: bool,
        known: dict[str, Expr] | None = None,
        strings_not_in: dict[frozenset[str], tuple[str, Node]] | None = None,
        trie_nodes: dict[Node, Node] | None = None,
    ):
        self.index = index
        self.root = root  # references rewritten to "#<pointer>" (see lower_json_schema)
        self.options = options
        self.grammar = grammar
        self.rules: dict[str, Expr] = {}
        #: where each rule of a schema was found (a pointer), for errors;
        #: the rules that recur inside themselves (every cycle of rules
        #: passes through one)
        self.rule_at: dict[str, str] = {}
        self.recursive_rules: set[str] = set()
        self._names: dict[str, str] = {}
        self._active: list[str] = []
        self._recursive: set[str] = set()
        self._memo: dict[str, Expr] = dict(known or {})
        #: the quoted strings other than a set of names (``_strings_not_in``),
        #: by names; regex mode hands its own to grammar mode's (same options)
        self.strings_not_in = {} if strings_not_in is None else strings_not_in
        #: their AST nodes by value, so that equal parts are one node (handed on alike)
        self.trie_nodes = {} if trie_nodes is None else trie_nodes
        # schemas being lowered, by content → their rule's name should they
        # recur inside themselves (a cycle through a $ref merged with its
        # siblings, which no pointer names); those that did
        self._name_patterns: dict[str, tuple[ByteDFA, str | None]] = {}  # (_pattern_names)
        self._lowering: dict[str, str] = {}
        self._recurring: set[str] = set()
        self._started = 0  # schemas lowered so far (numbers those rules)
        self._validation: tuple | None = None  # (validator class, registry, format checker)
        self.rules_inlined: dict[str, Expr] = {}
        self._depth = 0
        ws = options.whitespace == "flexible" and options.max_whitespace > 0
        self.ws = Rx(f"[ \\t\\n\\r]{{0,{options.max_whitespace}}}", True) if ws else EMPTY
        self.any_value_used = False
        #: JSON pointers of the sub-schemas that admit no value, deepest first
        self.nothing_at: list[str] = []

    def reusable(self) -> dict[str, Expr]:
        """The sub-schemas lowered so far whose expression grammar mode
        would write alike (for a grammar-mode ``Lowerer``'s ``known``): a
        regex-mode expression is one ``Rx``, its references inlined, and
        grammar mode inlines those too below ``_INLINE_CHARS`` and shares
        nothing below ``_SHARE_CHARS`` (``share``). Those that admit no
        value are left out (grammar mode records where they are). Rules
        are numbered as met, so the names may differ from a grammar-mode
        lowering alone's."""
        small = min(_INLINE_CHARS, _SHARE_CHARS)
        return {
            key: expr
            for key, expr in self._memo.items()
            if type(expr) is Rx and len(expr.text) < small and not is_nothing(expr)
        }

    def _strings_not_in(self, names: Iterable[str]) -> tuple[str, Node]:
        """``strings.string_not_in_piece`` of ``names``, memoized for this
        schema's lowering only (``strings_not_in``, shared by its two
        passes). Not process-wide: a piece is a graph of hundreds of AST
        nodes, and every full pass of Python's garbage collector walks
        whatever a long-lived cache keeps (168 pieces of 100 MaskBench
        schemas: 117,000 objects, 21 ms a collection, paid by a decoding
        step)."""
        key = frozenset(names)
        piece = self.strings_not_in.get(key)
        if piece is None:
            piece = strings.string_not_in_piece(
                key, max_size=self.options.max_regex_chars, shared=self.trie_nodes
            )
            self.strings_not_in[key] = piece
        return piece

    # -------------------------------------------------------------- entry

    def lower_document(self) -> Expr:
        meta = self.root.get("$schema") if isinstance(self.root, dict) else None
        if isinstance(meta, str) and "//json-schema.org/" not in meta:
            raise _unsupported(
                f"$schema {meta!r}", "", "a custom meta-schema may switch vocabularies off"
            )
        if not self.grammar:  # (grammar mode follows regex mode on the same document)
            self._refuse_other_drafts_keywords()
        return cat(self.ws, self.lower(self.root, ""), self.ws)

    def _refuse_other_drafts_keywords(self) -> None:
        """``UnsupportedConstraint`` for a keyword of another draft anywhere in
        the document (``if`` or ``const`` in draft 4, ``unevaluatedProperties``
        or ``prefixItems`` in draft 7, ``dependencies`` in 2020-12): its
        draft's validator ignores it, the lowering would apply it, and its
        author likely meant the other draft, so it is refused by name
        rather than either. ``additionalItems`` in 2020-12 is ignored by
        both (read only beside a list ``items``, which 2020-12 forbids).
        Every schema of the document is read (``subschemas``: also beside a
        ``$ref``, where drafts up to 7 stop the reference index's walk, so
        the ``definitions`` beside a root ``$ref`` went unread and draft 7's
        ``unevaluatedProperties: false`` there was applied), and every
        schema a ``$ref`` reaches off those paths (``SchemaIndex.off_path``)."""
        own = keywords_of(self.draft)
        for start in ("", *sorted(self.index.off_path)):
            for pointer, node in subschemas(self.index.at(start, self.root), start):
                for key in node:
                    if key in DRAFT_KEYWORDS and key not in own:
                        raise _unsupported(
                            key,
                            pointer,
                            f"not a keyword of the schema's draft ({self.draft.__name__}); "
                            "refused rather than ignored, since its author likely meant "
                            "another draft's",
                        )

    def lower(self, schema: Any, where: str) -> Expr:
        """The expression of ``schema`` (found at ``where``)."""
        if schema is True:
            return self.any_value()
        if schema is False:
            self.nothing_at.append(f"#{where}")
            return NOTHING
        key = json.dumps(schema, sort_keys=False)
        if key in self._memo:
            return self._memo[key]
        if key in self._lowering:  # met again inside itself: a recursion
            if not self.grammar:
                raise NotRegular
            self._recurring.add(key)
            return Call(self._lowering[key])
        checkpoint()
        if self._depth > 150:
            raise _unsupported(
                "schema", where, "nested more than 150 deep (a reference cycle through siblings?)"
            )
        self._depth += 1
        self._started += 1
        name = self._lowering[key] = f"r{self._started}"
        try:
            expr = self._lower(dict(schema), where)
        except RecursionError:
            raise _unsupported("schema", where, "nested too deeply") from None
        finally:
            self._depth -= 1
            del self._lowering[key]
        if key in self._recurring:
            self.rules[name] = expr
            self.rule_at[name] = where
            self.recursive_rules.add(name)
            expr = Call(name)
        self._memo[key] = expr
        if is_nothing(expr):
            self.nothing_at.append(f"#{where}")
        self._check_size(expr)
        return expr

    def _check_size(self, expr: Expr) -> None:
        limit = self.options.max_grammar_chars if self.grammar else self.options.max_regex_chars
        n = size(expr)
        if n > limit:
            if not self.grammar:
                raise NotRegular
            raise CompileLimitExceeded("regex_size", limit, n, "the schema's lowering is too big")

    # ---------------------------------------------------------- structure

    def _lower(self, s: dict, where: str) -> Expr:
        finite = self._finite(s, where)
        if finite is not None:
            return finite
        if "$ref" in s:
            ref = s.pop("$ref")
            target = self._target(ref, where)
            if not can_reject(s) or self.index.legacy_ref:  # drafts <= 7 ignore siblings
                return self.lower_ref(target)
            # (the names the target evaluates count for an unevaluatedProperties here)
            unevaluated = {k: s.pop(k) for k in ("unevaluatedProperties",) if k in s}
            s = self._merge(self._expand(self.index.at(target, self.root), target), s, where)
            if not isinstance(s, dict):  # (a target or a merge that admits nothing)
                return self.lower(s, where)
            s.update(unevaluated)
        if s.get("unevaluatedProperties", True) is not True and "allOf" in s:
            s = self._evaluated_here(s, where)
            if not isinstance(s, dict):
                return self.lower(s, where)
        for key in ("unevaluatedProperties", "unevaluatedItems"):
            if s.get(key, True) is not True and APPLICATORS & set(s):
                raise _unsupported(
                    key, where, "what counts as evaluated depends on the applicators beside it"
                )
        if "allOf" in s:
            s = self._flatten(s, where)
            if not isinstance(s, dict):
                return self.lower(s, where)
            finite = self._finite(s, where)  # (a listed value may come from a branch's $ref)
            if finite is not None:
                return finite
        if any(key in s for key in DEPENDENCIES):
            if s.get("unevaluatedProperties", True) is not True:
                # (settled on the schema's own names first: the members the
                # dependencies declare are evaluated by no keyword)
                s = self._evaluated_here(s, where)
            s = self._dependencies(s, where)
        for key, reason in REFUSED.items():
            if key in s and not _trivial(key, s[key]):
                raise _unsupported(key, where, reason)
        if "if" in s or "then" in s or "else" in s or "__conditionals__" in s:
            # (lowered again: a branch merged in may bring keywords handled
            # above, an allOf or a $ref, which would otherwise be ignored)
            return self.lower(self._conditional(s, where), where)
        if "anyOf" in s or "oneOf" in s:
            return self._alternatives(s, where)
        if "not" in s:
            s = self._negate(s, where)
            if s is False:
                return NOTHING
        if "__allOf__" in s:
            merged: Any = s
            for part in s.pop("__allOf__"):
                merged = self._merge(merged, part, where)
            return self.lower(merged, where)
        if "enum" in s or "const" in s:
            return self._enum(s, where)
        return either(*(self._typed(t, s, where) for t in TYPES if t in self._types(s)))

    def _finite(self, s: dict, where: str) -> Expr | None:
        """A schema that lists its values (``enum``/``const``, beside or in a
        branch of ``allOf``) is those of them the whole schema accepts, each
        decided by the ``jsonschema`` validator: exact whatever the other
        keywords (``not``, ``if``, ``dependencies``, ...). ``None`` when ``s``
        lists no values (a list beside a ``$ref`` that the schema's draft
        ignores is none), holds the lowering's own markers, or the validator
        cannot judge it (the lowering then goes on as usual)."""
        legacy = self.index.legacy_ref  # (drafts up to 7 ignore what is beside a $ref)
        if legacy and "$ref" in s:
            return None
        branches = [s, *(b for b in s.get("allOf", ()) if isinstance(b, dict))]
        lists = [
            (b, enum_values(b, None))
            for b in branches
            if ("enum" in b or "const" in b) and not (legacy and "$ref" in b)
        ]
        if not lists:
            # (the union's cheap test first: the marker search walks the
            # whole sub-schema, at every level of a nested schema)
            if not _is_finite_union(s) or _has_marker(s):
                return None
            return self._finite_union(s, where)
        rest = {k: v for k, v in s.items() if k not in ("enum", "const")}
        if not can_reject(rest) or _has_marker(s):
            return None  # (nothing to decide, or the usual path decides it alike)
        listing, values = min(lists, key=lambda pair: len(pair[1]))
        if len(values) > _MAX_FINITE:
            return None
        try:
            # (judged without the list they come from, which each is in: the
            # validator's enum check compares a value with every listed one,
            # quadratic in a list of 1,554 values)
            validator = self._validator_for(_without_list(s, listing))
            values = [v for v in values if validator.is_valid(v)]
        except Exception:  # unresolvable reference, unusable keyword
            return None
        return either(*(self.literal(v) for v in values))

    def _finite_union(self, s: dict, where: str) -> Expr | None:
        """A schema whose ``anyOf`` (or ``oneOf``) branches each list their
        values, beside keywords the usual path reads only in parts (``if``,
        ``not``, dependencies): its values are among the branches' lists,
        each kept where the validator accepts it under the whole schema.
        ``None`` elsewhere (the usual path decides it)."""
        if not _is_finite_union(s):
            return None
        values: dict[Any, Any] = {}
        for branch in _union_branches(s):
            listed = listed_values(self._resolved(branch, where))
            if listed is None:
                return None
            for v in listed:
                values.setdefault(json_key(v), v)
        if len(values) > _MAX_FINITE:
            return None
        accepted = self._accepted(s, list(values.values()))
        if accepted is None:
            return None
        return either(*(self.literal(v) for v in accepted))

    def _types(self, s: dict) -> set[str]:
        names = types_of(s)
        if "integer" in names:
            names.add("number")
        return names

    def _target(self, ref: str, where: str) -> str:
        if not ref.startswith("#"):
            raise _unsupported(f"$ref {ref[1:]!r}", where, "remote references are not fetched")
        return ref[1:]

    def lower_ref(self, pointer: str) -> Expr:
        """The expression of the schema at ``pointer`` (a rule in grammar mode)."""
        if pointer in self._active:
            if not self.grammar:
                raise NotRegular
            self._recursive.add(pointer)
            return Call(self._names[pointer])
        if pointer in self._names:
            name = self._names[pointer]
            return Call(name) if name in self.rules else self.rules_inlined[name]
        if len(self._active) > 200:
            raise _unsupported("$ref", pointer, "references nest more than 200 deep")
        name = f"d{len(self._names)}"
        self._names[pointer] = name
        self._active.append(pointer)
        try:
            body = self.lower(self.index.at(pointer, self.root), pointer)
        finally:
            self._active.pop()
        if not self.grammar:
            self.rules_inlined[name] = body
            return body
        if pointer not in self._recursive and isinstance(body, Rx) and size(body) < _INLINE_CHARS:
            self.rules_inlined[name] = body
            return body
        self.rules[name] = body
        self.rule_at[name] = pointer
        if pointer in self._recursive:
            self.recursive_rules.add(name)
        return Call(name)

    def _expand(self, schema: Any, where: str, depth: int = 0) -> Any:
        """``schema`` with a top-level ``$ref`` replaced by its target, merged."""
        if not isinstance(schema, dict) or "$ref" not in schema:
            return schema
        if depth > 50:
            raise _unsupported("$ref", where, "a cycle of references with no schema between")
        rest = {k: v for k, v in schema.items() if k != "$ref"}
        target = self._target(schema["$ref"], where)
        inner = self._expand(self.index.at(target, self.root), target, depth + 1)
        if self.index.legacy_ref or not can_reject(rest):
            return inner
        return self._merge(inner, rest, where)

    def _flatten(self, s: dict, where: str) -> Any:
        """``s`` with ``allOf`` merged in (``False`` if a branch is ``false``)."""
        branches = s.pop("allOf")
        out: Any = s
        for i, branch in enumerate(branches):
            here = join_pointer(where, "allOf", i)
            part = self._expand(branch, here)
            if isinstance(part, dict) and "allOf" in part:  # depth first: member order
                part = self._flatten(dict(part), here)
            out = self._merge(out, part, here)
            if out is False:
                break
        if isinstance(out, dict) and "allOf" in out:
            return self._flatten(out, where)
        return out

    # -------------------------------------------------------------- merge

    def _evaluated_here(self, s: Any, where: str) -> Any:
        """``s`` with its ``unevaluatedProperties`` made an
        ``additionalProperties`` where the names it evaluates are its own:
        beside no applicator but ``allOf``, whose members merge in first
        (each with its own made so: a member's names count for it, not for
        its cousins). After the merge its properties and patterns are the
        names evaluated, and an ``additionalProperties`` (its own or a
        member's) evaluates every other name, leaving nothing unevaluated.
        Elsewhere (``anyOf``, ``oneOf``, conditionals, ``not``, references,
        ``unevaluatedItems``) refused: evaluation across schemas."""
        if not isinstance(s, dict):
            return s
        local = not _ACROSS & set(s)
        for key in ("unevaluatedProperties", "unevaluatedItems"):
            if s.get(key, True) is not True and not (local and key == "unevaluatedProperties"):
                raise _unsupported(
                    f"{key} under allOf/anyOf/oneOf/$ref", where, "evaluation across schemas"
                )
        if "unevaluatedProperties" not in s or not local:
            return s
        s = dict(s)
        unevaluated = s.pop("unevaluatedProperties")  # (not seen by the merges below)
        if "allOf" in s:
            s = self._flatten(s, where)
            if not isinstance(s, dict):
                return s
            if _ACROSS & set(s):  # (a member brought one in)
                raise _unsupported("unevaluatedProperties", where, "evaluation across schemas")
        s.setdefault("additionalProperties", unevaluated)
        return s

    def _merge(self, a: Any, b: Any, where: str) -> Any:
        """A schema equivalent to ``allOf: [a, b]`` (one level deep)."""
        if a is False or b is False:
            return False
        if a is True:
            return dict(b) if isinstance(b, dict) else b
        if b is True:
            return dict(a)
        a, b = self._expand(a, where), self._expand(b, where)
        if a is False or b is False:
            return False
        if a is True or b is True:
            return self._merge(a, b, where)
        a, b = self._evaluated_here(a, where), self._evaluated_here(b, where)
        if a is False or b is False:
            return False
        a, b = _numeric_bounds(a, b)
        out = dict(a)
        conditional = ("if", "then", "else")
        if any(k in a for k in conditional) and any(k in b for k in conditional):
            # two conditionals, each with its own if/then/else (a then beside
            # no if does nothing): decided together (``_conditional``)
            b = dict(b)
            later = {k: b.pop(k) for k in ("if", "then", "else") if k in b}
            out["__conditionals__"] = [*a.get("__conditionals__", []), later]
        arrays = any(k in s for s in (a, b) for k in ("items", "prefixItems", "additionalItems"))
        counts = _contains_counts(a, b)
        for key in _CONTAINS_COUNTS:
            out.pop(key, None)
        for key, value in b.items():
            if arrays and key in ("items", "prefixItems", "additionalItems"):
                continue
            if key in _CONTAINS_COUNTS:
                continue
            if key not in out:
                out[key] = value
                continue
            mine = out[key]
            if json_equal(mine, value):  # (as JSON: Python's ``True == 1`` is no merge)
                continue
            if key in ("anyOf", "oneOf", "not", "__allOf__"):
                # two of these cannot share one schema: apply the second later
                deferred = value if key == "__allOf__" else [{key: value}]
                out["__allOf__"] = list(out.get("__allOf__", [])) + deferred
                continue
            if key in ("__conditionals__", "__patterns__", "__not_strings__", "__not_string__"):
                out[key] = [*mine, *value]
                continue
            if key == "pattern":  # (a string must match both: the second kept beside)
                out["__patterns__"] = [*out.get("__patterns__", []), value]
                continue
            out[key] = self._merge_keyword(key, mine, value, a, b, where)
        for x, y in ((a, b), (b, a)):
            if x.get("patternProperties") and not takes_all(y.get("additionalProperties", True)):
                # (y's additionalProperties holds for the names x's patterns match, which
                # the merged patternProperties would exempt from it)
                raise _unsupported(
                    "allOf with patternProperties and additionalProperties",
                    where,
                    "one member's additionalProperties applies to the names the other's "
                    "patterns match",
                )
        if ("properties" in a and "properties" in b) or (
            ("additionalProperties" in a or "additionalProperties" in b)
            and ("properties" in a or "properties" in b)
        ):
            self._merge_objects(out, a, b, where)
        if arrays:
            self._merge_arrays(out, a, b)
        out.update(counts)
        return out

    def _merge_arrays(self, out: dict, a: dict, b: dict) -> None:
        """Elements of ``allOf: [a, b]``: position by position, then the
        tails, spelled as the document's draft spells them (``items`` as a
        list and ``additionalItems`` before 2020-12: the merged schema is
        also judged by that draft's validator, which ignores ``prefixItems``)."""
        tuples = self._tuple_items
        (pa, ta), (pb, tb) = _positional(a, tuples), _positional(b, tuples)
        n = max(len(pa), len(pb))
        pa, pb = pa + [ta] * (n - len(pa)), pb + [tb] * (n - len(pb))
        for key in ("items", "prefixItems", "additionalItems"):
            out.pop(key, None)
        prefix = [_conj(x, y) for x, y in zip(pa, pb, strict=True)]
        if not tuples:
            if n:
                out["prefixItems"] = prefix
            out["items"] = _conj(ta, tb)
            return
        if n:
            out["items"], out["additionalItems"] = prefix, _conj(ta, tb)
        else:
            out["items"] = _conj(ta, tb)

    @functools.cached_property
    def _tuple_items(self) -> bool:
        """Whether the document's draft writes positional items as a list in
        ``items`` (drafts up to 2019-09) rather than ``prefixItems``."""
        return "prefixItems" not in self.draft.VALIDATORS

    def _merge_keyword(self, key: str, x: Any, y: Any, a: dict, b: dict, where: str) -> Any:
        if key == "type":
            tx = {x} if isinstance(x, str) else set(x)
            ty = {y} if isinstance(y, str) else set(y)
            for t1, t2 in ((tx, ty), (ty, tx)):
                if "integer" in t1 and "number" in t2:
                    t2.add("integer")
            both = sorted(tx & ty)
            return both if both else "__none__"
        if key in ("minimum", "minLength", "minItems", "minProperties"):
            return max(x, y)
        if key in ("maximum", "maxLength", "maxItems", "maxProperties"):
            return min(x, y)
        if key in ("exclusiveMinimum", "exclusiveMaximum") and not isinstance(x, bool):
            if isinstance(y, bool):
                raise _unsupported(key, where, "mixed draft-04 and later forms")
            return max(x, y) if key == "exclusiveMinimum" else min(x, y)
        if key == "required":
            return list(dict.fromkeys(list(x) + list(y)))
        if key == "enum":
            return [v for v in x if any(json_equal(v, w) for w in y)]
        if key == "const":
            return x if json_equal(x, y) else {"__never__": True}
        if key in ("properties", "patternProperties", "$defs", "definitions"):
            merged = dict(x)
            for name, sub in y.items():
                merged[name] = {"allOf": [merged[name], sub]} if name in merged else sub
            return merged
        if key in ("items", "additionalProperties", "additionalItems", "propertyNames"):
            if isinstance(x, list) or isinstance(y, list):
                raise _unsupported(key, where, "merging positional item lists")
            return {"allOf": [x, y]}
        if key in ("format", "multipleOf", "uniqueItems", "if", "then", "else"):
            raise _unsupported(f"allOf with two {key} keywords", where, "their conjunction")
        if not can_reject({key: x}):
            return x  # annotations: keep the first
        raise _unsupported(f"allOf merging {key}", where, "no merge rule for this keyword")

    def _merge_objects(self, out: dict, a: dict, b: dict, where: str) -> None:
        """Members of ``allOf: [a, b]``: each side's ``additionalProperties``
        applies to the names the *other* side declares."""
        patterns = a.get("patternProperties") or b.get("patternProperties")
        if patterns and "properties" in a and "properties" in b:
            raise _unsupported(
                "allOf with properties and patternProperties", where, "name-dependent merge"
            )
        names = dict.fromkeys(list(a.get("properties", {})) + list(b.get("properties", {})))
        props = {}
        for name in names:
            parts = []
            for side in (a, b):
                if name in side.get("properties", {}):
                    parts.append(side["properties"][name])
                elif "additionalProperties" in side:
                    parts.append(side["additionalProperties"])
            props[name] = parts[0] if len(parts) == 1 else {"allOf": parts}
        out["properties"] = props
        adds = [s["additionalProperties"] for s in (a, b) if "additionalProperties" in s]
        if adds:
            out["additionalProperties"] = adds[0] if len(adds) == 1 else {"allOf": adds}

    # ---------------------------------------------------------- combinators

    def _alternatives(self, s: dict, where: str) -> Expr:
        key = "anyOf" if "anyOf" in s else "oneOf"
        branches = s.pop(key)
        exprs = []
        schemas = []
        for i, branch in enumerate(branches):
            here = join_pointer(where, key, i)
            merged = self._merge(s, self._expand(branch, here), here)
            schemas.append(merged)
            exprs.append(self.lower(merged, here))
        if key == "oneOf" and self.options.one_of == "exact":
            return self._exclusive(schemas, exprs, where)
        return either(*exprs)

    def _exclusive(self, schemas: list[Any], exprs: list[Expr], where: str) -> Expr:
        """The ``oneOf`` of the branches: their union when they are pairwise
        disjoint; for branches of strings, null and booleans (one spelling per
        value, so texts and values correspond) each branch minus the others,
        computed on automata; else ``UnsupportedConstraint``."""
        live = [(s, e) for s, e in zip(schemas, exprs, strict=True) if e != NOTHING]
        limit = self.options.max_states
        dfas: dict[int, ByteDFA] = {}

        def dfa(i: int) -> ByteDFA:
            if i not in dfas:
                dfas[i] = ByteDFA.from_regex(
                    live[i][1].text, max_states=limit, node=live[i][1].ast()
                )
            return dfas[i]

        shapes: dict[int, Shape] = {}

        def shape(i: int) -> Shape:
            if i not in shapes:
                shapes[i] = self._shape(live[i][0], where, [_MAX_SHAPE_VISITS])
            return shapes[i]

        overlapping = False
        for i in range(len(live)):
            for j in range(i + 1, len(live)):
                (s1, e1), (s2, e2) = live[i], live[j]
                if disjoint_by_schema(s1, s2) or shape(i).disjoint(shape(j)):
                    continue
                if shape(i).only_empty_object_in_common(shape(j)) and any(
                    self._accepted(x, [{}]) == [] for x in (s1, s2)
                ):
                    continue  # (the one value both might take, {}, one of them refuses)
                if isinstance(e1, Rx) and isinstance(e2, Rx):
                    meet = _meet(
                        e1, e2, limit, lambda i=i, j=j: dfa(i).intersect(dfa(j), max_states=limit)
                    )
                    if not meet:
                        continue
                overlapping = True
        if not overlapping:
            return either(*(e for _, e in live))
        listed = self._exclusive_listed([s for s, _ in live])
        if listed is not None:
            return listed
        by_type = self._exclusive_by_type([s for s, _ in live], where)
        if by_type is not None:
            return by_type
        single_spelling = all(
            isinstance(e, Rx) and (value_types(s) or {"object"}) <= {"string", "null", "boolean"}
            for s, e in live
        )
        if single_spelling:
            try:
                parts = []
                for i in range(len(live)):
                    only = dfa(i)
                    for j in range(len(live)):
                        if j != i:
                            only = only.difference(dfa(j), max_states=limit)
                    if not only.is_empty():
                        others = alt(*(live[j][1].ast() for j in range(len(live)) if j != i))
                        parts.append(
                            _printed(only, lambda i=i, o=others: Difference(live[i][1].ast(), o))
                        )
                return either(*parts)
            except CompileLimitExceeded as e:
                if is_budget_error(e):
                    raise
        raise _unsupported(
            "oneOf",
            where,
            "its branches overlap, and 'exactly one' was not expressible (by JSON "
            "type, listed values, members, or the ways each branch fails the others: "
            "docs/jsonschema.md); JsonSchema(one_of='any_of') accepts such documents "
            "as anyOf does",
        )

    def _shape(self, s: Any, where: str, visits: list[int]) -> Shape:
        """What every value of ``s`` has: the JSON types it may take
        (``"integer"`` beside ``"number"``; its ``type`` or listed values'),
        and as an object the fewest and most members it may have (its
        ``required`` names, ``minProperties``, ``maxProperties``) and the
        names they may have (a closed object's ``properties``), each
        narrowed by its ``anyOf``/``oneOf`` branches' (the union of their
        types, the widest of their counts and names). ``visits``: the schemas left to
        read (references may recur): past them, a branch is unknown (every
        type, any count)."""
        visits[0] -= 1
        s = self._resolved(s, where) if visits[0] >= 0 else None
        if s is False:
            return Shape(frozenset(), 0, 0)
        if not isinstance(s, dict):
            return ANY_SHAPE
        types = value_types(s)
        required = s.get("required", [])
        least = len(set(required)) if isinstance(required, list) else 0
        least = max(least, count_keyword(s, "minProperties", 0) or 0)
        own = Shape(EVERY_TYPE if types is None else frozenset(types), least,
                    count_keyword(s, "maxProperties"), closed_names(s))  # fmt: skip
        branches = _union_branches(s)
        if not branches:
            return own
        shapes = [self._shape(branch, where, visits) for branch in branches]
        objects = [b for b in shapes if "object" in b.types]  # (the counts' branches)
        mosts = [b.most for b in objects]
        names = [b.names for b in objects]
        union = Shape(
            frozenset().union(*(b.types for b in shapes)),
            min((b.least for b in objects), default=0),
            None if not objects or None in mosts else max(mosts),
            None if not objects or None in names else frozenset().union(*names),
        )
        return own.meet(union)

    def _exclusive_listed(self, schemas: list[Any]) -> Expr | None:
        """The ``oneOf`` of branches that each list their values (``enum``/
        ``const``, also in ``allOf``): the values valid under exactly one
        branch (each branch's list judged by the validator on that branch),
        or ``None`` when some branch lists none or cannot be judged."""
        lists = [listed_values(s) for s in schemas]
        if any(values is None for values in lists) or any(_has_marker(s) for s in schemas):
            return None
        try:
            valid = [
                [v for v in values if self._validator_for(s).is_valid(v)]
                for s, values in zip(schemas, lists, strict=True)
            ]
        except Exception:  # (an unresolvable reference, an unusable keyword)
            return None
        once = []
        for i, values in enumerate(valid):
            for v in values:
                elsewhere = any(
                    json_equal(v, w) for j in range(len(valid)) if j != i for w in valid[j]
                )
                if not elsewhere and not any(json_equal(v, w) for w in once):
                    once.append(v)
        return either(*(self.literal(v) for v in once)) if once else NOTHING

    def _merged_all_of(self, s: Any, where: str) -> Any:
        """``s`` with its ``allOf`` merged in (``_flatten``: the same values),
        or ``s`` itself where the members have no merge (two formats...)."""
        merged = self._resolved(s, where, expand=False)
        return s if merged is None else merged

    def _resolved(self, s: Any, where: str, expand: bool = True) -> Any:
        """``s`` with its top-level ``$ref`` (``expand``) and its ``allOf``
        merged in (a branch as ``failures`` reads it), or ``None`` where
        they have no merge."""
        try:
            s = self._expand(s, where) if expand else s
            return self._flatten(dict(s), where) if isinstance(s, dict) and "allOf" in s else s
        except UnsupportedConstraint:
            return None

    def _exclusive_by_type(self, schemas: list[Any], where: str) -> Expr | None:
        """The ``oneOf`` of ``schemas`` one JSON type at a time, or ``None``
        where some type's branches may overlap. A value of type T matches
        exactly one branch iff: of the branches that take every T (no keyword
        of theirs applies to T), it matches the only one and no other branch
        takes T (or, with others, fails them all: ``exclusive_failing``); or
        none takes every T and it matches one of the T-restricted branches,
        made exclusive (pairwise disjoint already, by members, or by the ways
        each fails the others). Two branches that take every T leave no T at
        all. Branches are compared with their ``allOf`` merged in (the types
        and members its references bring)."""
        schemas = [self._merged_all_of(s, where) for s in schemas]
        resolve = functools.partial(self._resolved, where=where)
        parts = []
        for tau in TYPES:
            roles = [role_on_type(s, tau) for s in schemas]
            takers = [s for s, role in zip(schemas, roles, strict=True) if role != "empty"]
            universal = roles.count("universal")
            if universal >= 2 or not takers:
                continue
            only = [
                self._merge(s, {"type": tau}, where)
                for s, role in zip(schemas, roles, strict=True)
                if role == "constrained"
            ]
            if universal:  # its T values are those failing every other branch
                every: dict = {"type": tau}
                if tau == "object":  # (the members the others name, in one order:
                    # each branch's, then its anyOf/oneOf branches', as instance_text)
                    named = [
                        n
                        for b in only
                        for part in [b, *(resolve(u) for u in _union_branches(b))]
                        if isinstance(part, dict)
                        for n in members_declared(part)
                    ]
                    every["properties"] = dict.fromkeys(named, True)
                exclusive = exclusive_failing([every, *only], tau, resolve)
            elif all(
                disjoint_by_schema(a, b, self._judged) for a, b in itertools.combinations(only, 2)
            ):
                parts += [self.lower(s, where) for s in only]
                continue
            elif tau == "object":
                exclusive = exclusive_required(only)
                if exclusive is not None:
                    parts += [self.lower(s, where) for s in exclusive]
                    continue
                exclusive = exclusive_objects(only, bool(self.options.additional_properties))
                if exclusive is None:
                    exclusive = self._exclusive_by_tag(only, where)
            else:
                exclusive = exclusive_failing(only, tau, resolve)
            if exclusive is None:
                return None
            try:
                parts += [self.lower(s, where) for s in exclusive]
            except UnsupportedConstraint:  # (a negation it cannot express)
                return None
        return either(*parts)

    def _exclusive_by_tag(self, branches: list[dict], where: str, depth: int = 0) -> list | None:
        """Object branches of plain member keywords told apart by a tag: a
        member whose values some branches list (``enum``/``const``), which
        none need require (``{"kind": {"enum": ["a"]}}``), made exclusive one
        case of the tag at a time. The cases are disjoint: the tag present
        with one of the listed values (grouped by the branches that take
        them), present with none of them, absent. In each, the branches that
        take the case's tag values keep it pinned (in place, so members keep
        their order) and are made exclusive as ``exclusive_objects`` (or
        split again by another tag); the others take no value of the case.
        A value matches exactly one branch iff it matches exactly one in its
        case. ``None`` when no member is such a tag, or a case cannot be
        made exclusive: where the ways each branch fails the others multiply
        past ``exclusive._MAX_ABSENT_CHOICES``, a tag that decides most pairs cuts them."""
        default_open = bool(self.options.additional_properties)
        shapes = object_shapes(branches, default_open)
        if depth >= _MAX_TAG_SPLITS or shapes is None:
            return None
        named = in_one_order(branches, shapes)  # (so the tag has its place in each)
        for tag in dict.fromkeys(n for b in branches for n in members_declared(b)):
            takes = [self._tag_values(b, tag, where) for b in named]
            if any(t is _NOT_A_TAG for t in takes) or sum(isinstance(t, list) for t in takes) < 2:
                continue
            if all(t == takes[0] for t in takes):
                continue  # (the same for every branch: no case would tell them apart)
            cases = tag_cases(named, tag, takes)
            out = []
            for case in cases:
                if len(case) <= 1:
                    out += case
                    continue
                exclusive = exclusive_required(case)
                if exclusive is None:
                    exclusive = exclusive_objects(case, default_open)
                if exclusive is None:
                    exclusive = self._exclusive_by_tag(case, where, depth + 1)
                if exclusive is None:
                    break
                out += exclusive
            else:
                return out
        return None

    def _tag_values(self, b: dict, tag: str, where: str) -> Any:
        """How branch ``b`` takes member ``tag``: the listed values its
        subschema accepts (judged by the validator), ``True`` (any value:
        declared as such, or ``b`` open), ``False`` (none: closed without
        it, or declared ``false``), or ``_NOT_A_TAG``."""
        sub = b.get("properties", {}).get(tag, b.get("additionalProperties", True))
        if takes_all(sub) or sub is False:
            return bool(sub)
        sub = self._resolved(sub, where)
        values = listed_values(sub) if isinstance(sub, dict) else None
        accepted = None if values is None else self._accepted(sub, values)
        return _NOT_A_TAG if accepted is None else accepted

    def _conditional(self, s: dict, where: str) -> Any:
        """``s`` with its conditionals (its own ``if``/``then``/``else`` and
        those ``allOf`` merged in) folded into choices, or refused.

        A condition of ``true``/``false`` picks its branch. Otherwise every
        condition must test one member against listed values, the same
        member in all of them (a discriminator: ``{"properties": {"kind":
        {"const": "a"}}}``, with or without ``"required": ["kind"]`` and
        ``"type": "object"``), with value lists that do not meet: a value
        then meets one condition at most, and the cases are disjoint, so
        their ``anyOf`` is exact and grows with the conditions, not with
        their combinations (see ``_discriminator_cases``)."""
        blocks = [{k: s.pop(k) for k in ("if", "then", "else") if k in s}]
        blocks += s.pop("__conditionals__", [])
        pending = []
        for block in blocks:
            if "if" not in block:  # then/else without if do nothing
                continue
            cond, then, other = block["if"], block.get("then", True), block.get("else", True)
            if then is True and other is True:
                continue
            if cond is True or cond is False:
                s = self._merge(s, then if cond else other, where)
                if s is False:
                    return False
                continue
            pending.append((cond, then, other))
        if not pending:
            return s
        cases = self._discriminator_cases(pending, where)
        if cases is None:
            cases = self._negated_cases(pending, where)
            named = [
                n
                for block in pending
                for part in block
                if isinstance(part, dict)
                for n in [*part.get("properties", {}), *part.get("required", [])]
            ]
            s = self._declared(s, named)
        s["__allOf__"] = [*s.get("__allOf__", []), {"anyOf": cases}]
        return s

    def _negated_cases(self, pending: list[tuple], where: str) -> list[Any]:
        """The conditionals ``(if, then, else)`` as the union of their cases:
        for each, ``if`` and ``then``, or ``not if`` and ``else`` (the two
        disjoint, so the union is exact), one case per combination (up to
        ``_MAX_CONDITIONS`` conditionals); refused where an ``if`` has no
        negation here (see ``failures``)."""
        if len(pending) > _MAX_CONDITIONS:
            raise _unsupported(
                "allOf with several if keywords",
                where,
                f"more than {_MAX_CONDITIONS} conditions (each doubles the cases)",
            )
        for cond, _, _ in pending:
            try:
                self._negate({"not": cond}, where)
            except UnsupportedConstraint as e:
                raise _unsupported(
                    "if/then/else", where, f"its 'if' has no negation here ({e.construct})"
                ) from None
        choices = [((cond, then), ({"not": cond}, other)) for cond, then, other in pending]
        cases = []
        for picked in itertools.product(*choices):
            parts = [part for pair in picked for part in pair if part is not True]
            cases.append({"allOf": parts} if parts else True)
        return cases

    def _declared(self, s: dict, names: list[str]) -> dict:
        """``s`` with ``names`` declared after its own members (its required
        ones first), each with the schema an undeclared name would take: the
        same values, but one place for the member in every case a choice
        makes (and ``instance_text``'s). Unchanged beside ``patternProperties``."""
        props = s.get("properties", {})
        if "patternProperties" in s or not isinstance(props, dict):
            return s
        additional = s.get("additionalProperties", bool(self.options.additional_properties))
        order = [*(n for n in s.get("required", []) if n not in props), *names]
        declared = {**props, **{n: additional for n in order if n not in props}}
        return {**s, "properties": declared} if declared != props else s

    def _discriminator_cases(self, pending: list[tuple], where: str) -> list[Any] | None:
        """Disjoint schemas whose union is the conjunction of the conditionals
        ``(if, then, else)`` in ``pending``, or ``None`` when they are not all
        discriminators on one member with disjoint value lists.

        With member ``p`` and value lists ``S_1 .. S_k``: ``p`` present with a
        value in ``S_j`` (``then_j`` and every other ``else``); ``p`` present
        with a value in none (every ``else``); and, for the conditions that
        hold without ``p`` (no ``required``), ``p`` absent (their ``then``s,
        the others' ``else``s); a non-object holds every condition without
        ``"type": "object"`` and fails those with it."""
        found = [_discriminator(c) for c, _, _ in pending]
        if any(f is None for f in found) or len({f[0] for f in found}) != 1:
            return None
        name = found[0][0]
        try:
            lists = [self._listed(f[1], where) for f in found]
        except _NotListed:
            return None
        for i, j in itertools.combinations(range(len(lists)), 2):
            if any(json_equal(v, w) for v in lists[i] for w in lists[j]):
                return None
        thens = [t for _, t, _ in pending]
        elses = [e for _, _, e in pending]

        def conj(*parts: Any) -> Any:
            return {"allOf": [p for p in parts if p is not True]} if parts else True

        cases = []
        for j, values in enumerate(lists):
            picked = [thens[j], *(e for i, e in enumerate(elses) if i != j)]
            member = {"type": "object", "required": [name], "properties": {name: {"enum": values}}}
            cases.append(conj(member, *picked))
        every = [v for values in lists for v in values]
        outside = {"not": {"enum": every}}
        cases.append(
            conj({"type": "object", "required": [name], "properties": {name: outside}}, *elses)
        )
        absent = [thens[i] if not f[2] else elses[i] for i, f in enumerate(found)]
        cases.append(conj({"type": "object", "properties": {name: False}}, *absent))
        others = [elses[i] if f[3] else thens[i] for i, f in enumerate(found)]
        cases.append(conj({"not": {"type": "object"}}, *others))
        return cases

    def _listed(self, s: dict, where: str) -> list[Any]:
        """The values ``s`` lists (``const``/``enum``) that its other keywords
        accept, decided by the validator; ``_NotListed`` when it cannot judge
        (an unresolvable reference, an unusable keyword)."""
        values = enum_values(s, where)
        rest = {k: v for k, v in s.items() if k not in ("enum", "const")}
        if can_reject(rest):
            try:
                validator = self._validator_for(_standard(rest))
                values = [v for v in values if validator.is_valid(v)]
            except Exception as e:
                raise _NotListed(str(e)) from None
        return values

    def _negate(self, s: dict, where: str) -> Any:
        """``s`` with its ``not`` folded into the other keywords (or refused)."""
        neg = self._expand(s.pop("not"), join_pointer(where, "not"))
        here = join_pointer(where, "not")
        if isinstance(neg, dict) and "allOf" in neg:
            neg = self._flatten(dict(neg), here)
        if neg is True or neg == {}:
            return False
        if neg is False:
            return s
        keys = set(k for k in neg if can_reject({k: neg[k]}))
        if not keys:  # (annotations and unknown keywords only: neg takes every value)
            return False
        if keys == {"not"}:  # not not X: X, applied as an allOf member is
            s["__allOf__"] = [*s.get("__allOf__", []), neg["not"]]
            return s
        if keys == {"type"}:
            banned = types_of(neg)
            if "number" in banned:
                banned |= {"integer"}
            keep = [t for t in ("null", "boolean", "object", "array", "string", "number", "integer")
                    if t in types_of(s) and t not in banned]  # fmt: skip
            if "integer" in banned and "number" in keep:
                s["__fractional__"] = True  # (the numbers left: not integers)
            s["type"] = keep or "__none__"
            return s
        if keys == {"required"} and isinstance(neg["required"], list):
            # ``required`` holds for every value that is not an object, so
            # its negation is the objects that lack one of the names
            have = s.get("required", [])
            absent = [n for n in dict.fromkeys(neg["required"]) if n not in have]
            if "object" not in types_of(s) or not absent:
                return False
            s["type"] = "object"
            if len(absent) == 1:
                s["properties"] = {**s.get("properties", {}), absent[0]: False}
            else:  # (one of them absent, as disjoint ways: an unambiguous grammar)
                ways = apart([{"properties": {n: False}} for n in absent])
                s["__allOf__"] = [*s.get("__allOf__", []), {"anyOf": ways}]
            return s
        string_only = "type" not in keys or types_of(neg) == {"string"}
        if keys and keys <= _STRING_KEYWORDS | {"type"} and string_only:
            # neg constrains strings only; without a type every non-string satisfies it
            if "type" not in keys:
                s["type"] = ["string"] if "string" in types_of(s) else "__none__"
            negated = {k: neg[k] for k in keys - {"type"}}
            s["__not_string__"] = [*s.get("__not_string__", []), negated]
            return s
        if keys <= {"enum", "const"} and not enum_values(neg, None):
            return s
        if keys <= {"enum", "const"} and "enum" not in s and "const" not in s:
            values = enum_values(neg, None)
            types = types_of(s)
            if types <= {"boolean", "null"}:  # finitely many values: list those left
                every = ([True, False] if "boolean" in types else []) + (
                    [None] if "null" in types else []
                )
                s["enum"] = [u for u in every if not any(json_equal(u, v) for v in values)]
                return s
            # strings only: every other value is outside the list, and a
            # string is outside it iff its canonical spelling is
            strings_only = all(isinstance(v, str) for v in values)
            if strings_only and not set(s) - {"type", "not"} - annotation_keywords(s):
                if "string" in types_of(s):
                    s["__not_strings__"] = values
                return s
        resolve = functools.partial(self._resolved, where=here)
        ways = failures(neg, resolve) if isinstance(neg, dict) else None
        if ways is None:
            raise _unsupported("not", here, "negation of this schema is not expressible")
        if not ways:
            return False
        # the members the ways name, declared in one order after the schema's
        # own (as ``instance_text`` writes them: the negated schema's, then
        # its anyOf/oneOf branches'); declaring an allowed name True changes no value
        props = s.get("properties", {})
        own = [n for n in s.get("required", []) if n not in props]
        parts = [neg, *(resolve(b) for b in _union_branches(neg))]
        named = dict.fromkeys(
            [*own, *(n for p in parts if isinstance(p, dict) for n in members_declared(p))], True
        )
        for way in ways:
            if way.get("type") == "object":
                way["properties"] = {**named, **way.get("properties", {})}
        s["__allOf__"] = [*s.get("__allOf__", []), {"anyOf": ways}]
        return s

    # ---------------------------------------------------------------- enum

    def _enum(self, s: dict, where: str) -> Expr:
        try:
            values = self._listed(s, where)
        except _NotListed as e:
            raise _unsupported("enum", where, f"cannot check values: {e}") from None
        return either(*(self.literal(v) for v in values))

    def _dependencies(self, s: dict, where: str) -> dict:
        """``s`` with its dependency keywords (those its draft defines) as
        choices: a member they name is absent, or present with the members
        it requires and the schema it applies. The two branches of a choice
        are disjoint, so their ``anyOf`` is exact; each choice doubles the
        branches, so past ``_MAX_DEPENDENCIES`` they are refused, as are a
        malformed entry and a keyword the draft does not define."""
        draft = self.draft
        choices = []
        for key in DEPENDENCIES:
            entries = s.get(key)
            if not isinstance(entries, dict) or _trivial(key, entries):
                continue
            if key not in draft.VALIDATORS:
                raise _unsupported(
                    key,
                    where,
                    f"not a keyword of the schema's draft ({draft.__name__}); refused "
                    "rather than ignored, since its author likely meant another draft's",
                )
            declared = s.get("properties", {})
            found = []
            missing: list[str] = []
            for name, dep in entries.items():
                names = key != "dependentSchemas" and isinstance(dep, list)
                if names and all(isinstance(n, str) for n in dep):
                    present: Any = {"required": [name, *dep]}
                    asked = [name, *dep]
                elif key != "dependentRequired" and isinstance(dep, dict | bool):
                    present = {"allOf": [{"required": [name]}, dep]}
                    asked = [name, *members_named(dep)]
                else:
                    break  # malformed: refused as a whole
                if not isinstance(declared, dict) or "\0" in asked:
                    raise _unsupported(
                        key, where, "dependent schemas with keywords that name other members"
                    )
                missing += [n for n in asked if n not in declared and n not in missing]
                found.append([{"properties": {name: False}}, present])
            else:
                choices += found
                del s[key]
                if missing:
                    # a member's place in the language's member order comes
                    # from the schema's properties: one that only a branch
                    # names is declared, after the schema's own, so that it
                    # does not move with the branch
                    widened = self._declared(s, missing)
                    if widened is s:
                        raise _unsupported(
                            key,
                            where,
                            "dependencies on undeclared members beside patternProperties",
                        )
                    s = widened
        if len(choices) > _MAX_DEPENDENCIES:
            raise _unsupported(
                "dependencies", where, f"more than {_MAX_DEPENDENCIES} members with dependencies"
            )
        if choices:
            s["__allOf__"] = [*s.get("__allOf__", []), *({"anyOf": c} for c in choices)]
        return s

    @functools.cached_property
    def draft(self) -> Any:
        """The ``jsonschema`` validator class of the document's draft (2020-12
        when its ``$schema`` names none)."""
        return jsonschema.validators.validator_for(
            self.root, default=jsonschema.Draft202012Validator
        )

    def _validator_for(self, schema: Any) -> Judge:
        """A ``jsonschema`` validator of ``schema`` (a part of this document)
        for the document's draft; the registry of the document is made once.
        A validation that never ends raises ``RecursionError`` (``Judge``)."""
        if self._validation is None:  # (patterns and formats as the lowering reads them)
            root = _absolute_refs(judged_schema(self.root))
            resource = referencing.Resource.from_contents(
                root, default_specification=referencing.jsonschema.DRAFT202012
            )
            registry = referencing.Registry().with_resource(ROOT_URI, resource)
            cls = validator_class(self.draft)
            checker = format_checker() if self.options.format_assertion else None
            self._validation = (cls, registry, checker)
        cls, registry, checker = self._validation
        if isinstance(schema, bool):  # (drafts before 6 have no boolean schemas)
            schema = {} if schema else {"not": {}}
        if "exclusiveMinimum" not in cls.VALIDATORS:  # (draft 4: flags of minimum/maximum)
            schema = _flagged_bounds(schema)
        schema = _absolute_refs(judged_schema(schema))
        return Judge(cls(schema, registry=registry, format_checker=checker))

    def _judged(self, schema: Any, values: list) -> list:
        """The ``values`` that ``schema`` (a part of this document) accepts,
        by the validator; all of them where it cannot judge (``_accepted``):
        never fewer than it accepts."""
        accepted = self._accepted(schema, values)
        return values if accepted is None else accepted

    def _accepted(self, schema: Any, values: list) -> list | None:
        """The ``values`` that ``schema`` (a part of this document) accepts,
        by the validator; ``None`` where it cannot judge (not an object
        schema, a marker of the lowering's own, an unusable keyword)."""
        if not isinstance(schema, dict) or _has_marker(schema):
            return None
        try:
            validator = self._validator_for(schema)
            return [v for v in values if validator.is_valid(v)]
        except Exception:  # (an unresolvable reference, an unusable keyword)
            return None

    def literal(self, value: Any) -> Expr:
        """Exactly the JSON text of ``value`` (numbers in their equal spellings)."""
        if value is None or isinstance(value, bool):
            return Rx(json.dumps(value))
        if isinstance(value, int | float):
            return Rx(_number_literal(value))
        if isinstance(value, str):
            return _quoted_name(value)
        ws = self.ws
        if isinstance(value, list):
            items = [cat(self.literal(v), ws) for v in value]
            body = EMPTY
            for i, item in enumerate(items):
                body = cat(body, Rx(",") if i else EMPTY, ws if i else EMPTY, item)
            return cat(Rx("\\["), ws, body, Rx("\\]"))
        members = []
        for i, (k, v) in enumerate(value.items()):
            sep = cat(Rx(","), ws) if i else EMPTY
            members.append(cat(sep, _quoted_name(k), ws, Rx(":"), ws, self.literal(v), ws))
        return cat(Rx("\\{"), ws, *members, Rx("\\}"))

    # --------------------------------------------------------------- types

    def _typed(self, t: str, s: dict, where: str) -> Expr:
        if t == "null":
            return Rx("null")
        if t == "boolean":
            return Rx("(?:true|false)")
        if t == "number":
            return self._number(s, where)
        if t == "string":
            return self._string(s, where)
        if t == "array":
            return self._array(s, where)
        return self._object(s, where)

    def _number(self, s: dict, where: str) -> Expr:
        if s.get("__fractional__"):
            declared = declared_types(s)
            if "integer" in declared and "number" not in declared:
                return NOTHING
            if set(s) & KEYWORDS_OF_TYPE["number"]:
                raise _unsupported("not integer", where, "with bounds or multipleOf")
            return Rx(numbers.fractional_regex())
        lo, hi, lo_ex, hi_ex = s.get("minimum"), s.get("maximum"), False, False
        for key, strict in (("exclusiveMinimum", True), ("exclusiveMaximum", False)):
            value = s.get(key)
            if value is None or value is False:
                continue
            if value is True:  # draft-04: a flag on minimum/maximum
                if strict:
                    lo_ex = lo is not None
                else:
                    hi_ex = hi is not None
                continue
            if strict and (lo is None or Decimal(repr(value)) >= Decimal(repr(lo))):
                lo, lo_ex = value, True
            if not strict and (hi is None or Decimal(repr(value)) <= Decimal(repr(hi))):
                hi, hi_ex = value, True
        declared = declared_types(s)
        integer = "integer" in declared and "number" not in declared
        text = numbers.number_regex(
            lo,
            hi,
            exclusive_minimum=lo_ex,
            exclusive_maximum=hi_ex,
            integer=integer,
            multiple_of=s.get("multipleOf"),
        )
        return Rx(text)

    def _string(self, s: dict, where: str) -> Expr:
        if "__not_string__" in s:
            rest = {k: v for k, v in s.items() if k != "__not_string__"}
            return self._string_minus(rest, s["__not_string__"], where)
        lo, hi = count_keyword(s, "minLength", 0), count_keyword(s, "maxLength")
        if hi is not None and hi < lo:  # (no string, whatever else the schema says)
            return NOTHING
        fmt = s.get("format") if self.options.format_assertion else None
        if fmt in formats.UNSUPPORTED_FORMATS:
            raise _unsupported(f"format {fmt!r}", where, formats.UNSUPPORTED_FORMATS[fmt])
        if fmt is not None and fmt not in formats.FORMATS:
            fmt = None  # unknown formats only annotate (JSON Schema 2020-12 §7.2.1)
        if "__not_strings__" in s:
            excluded = s["__not_strings__"]
            if _matched(s) or fmt or lo or hi is not None:  # (the others' strings, less these)
                rest = {k: v for k, v in s.items() if k != "__not_strings__"}
                return self._string_minus(rest, [{"enum": excluded}], where)
            return _quoted_rx(self._strings_not_in(excluded))
        if fmt is not None or _matched(s):
            return self._string_matching(s, fmt, lo, hi, where)
        return Rx(strings.string_regex(lo, hi))

    def _string_matching(
        self, s: dict, fmt: str | None, lo: int, hi: int | None, where: str
    ) -> Expr:
        """Strings of a ``format`` and/or ``pattern``s (``__patterns__``: an
        ``allOf``'s others), ``lo`` to ``hi`` characters: the regex when there
        is one of them and it prints within the limits; else (several, or a
        length bound whose regex is too big or cuts through a repetition)
        their intersection, known by its AST alone (``opaque``: the automata
        forms hold it, text outputs refuse it)."""
        patterns = _matched(s)
        if len(patterns) + (fmt is not None) == 1:
            try:
                if fmt is None:
                    text, node = strings.pattern_piece(
                        patterns[0], min_length=lo, max_length=hi, where=where
                    )
                elif lo or hi is not None:
                    text, node = strings.restricted_piece(
                        formats.format_node(fmt), lo, hi, what=f"format {fmt!r}"
                    )
                else:
                    return _format_piece(fmt)
                return Rx(text, node=node)  # (node: what automata build, where cheaper)
            except CompileLimitExceeded as e:
                if e.limit != "regex_size" or is_budget_error(e):
                    raise
            except UnsupportedConstraint as e:
                if "minLength/maxLength" not in e.construct:
                    raise
        parts = [] if fmt is None else [formats.format_node(fmt)]
        parts += [strings.pattern_node(p, where=where) for p in patterns]
        node = functools.reduce(Intersect, parts)
        return opaque(strings.quoted_node(node, lo, hi))

    def _string_minus(self, s: dict, negated: list[dict], where: str) -> Expr:
        """The strings of ``s`` that fail every string schema of ``negated``
        (``not: {pattern: ...}``; ``{"enum": [...]}``: other than these):
        a difference of the quoted strings' automata."""
        here = join_pointer(where, "not")
        positive = self._string(s, where)
        if is_nothing(positive):
            return NOTHING
        limit = self.options.max_states
        removed = []
        try:
            dfa = ByteDFA.from_regex(positive.text, max_states=limit, node=positive.ast())
            for neg in negated:
                if "enum" in neg:
                    excluded = either(*(self.literal(v) for v in neg["enum"] if isinstance(v, str)))
                else:
                    excluded = self._string(dict(neg), here)
                if not is_nothing(excluded):
                    excluded_dfa = ByteDFA.from_regex(excluded.text, node=excluded.ast())
                    dfa = dfa.difference(excluded_dfa, max_states=limit)
                    removed.append(excluded.ast())
        except CompileLimitExceeded as e:
            if is_budget_error(e):
                raise
            raise _unsupported(
                "not", here, f"the complement's automaton is too large ({e})"
            ) from None
        if dfa.is_empty():
            return NOTHING
        return _printed(dfa, lambda: Difference(positive.ast(), alt(*removed)))

    def _array(self, s: dict, where: str) -> Expr:
        if "__none__" in str(s.get("type", "")):
            return NOTHING
        items = s.get("items")
        prefix = s.get("prefixItems", [])
        if isinstance(items, list):  # draft-04..2019-09 tuple form
            prefix, items = items, s.get("additionalItems")
        if items is None:  # (additionalItems applies beside a tuple form only)
            # the elements no keyword evaluates: unevaluatedItems's, if any
            items = s.get("unevaluatedItems", True)
        lo, hi = count_keyword(s, "minItems", 0), count_keyword(s, "maxItems")
        if s.get("uniqueItems") and (hi is None or hi > 1):
            raise _unsupported("uniqueItems", where, "distinct elements are not expressible")
        if "contains" in s:
            return self._containing(s, items, prefix, lo, hi, where)
        ws = self.ws
        sep = cat(Rx(","), ws)
        item = cat(self.lower(items, join_pointer(where, "items")), ws)
        tail_lo = max(0, lo - len(prefix))
        tail_hi = None if hi is None else max(0, hi - len(prefix))
        # each tail element preceded by the separator
        body_after = rep(cat(sep, item), tail_lo, tail_hi)
        positions = prefix[:hi] if hi is not None else prefix
        if not positions:
            body = separated(item, sep, lo, hi)
        else:
            body = body_after if len(positions) == len(prefix) else EMPTY
            for i in range(len(positions) - 1, -1, -1):
                here = join_pointer(where, "prefixItems", i)
                elem = cat(self.lower(positions[i], here), ws)
                present = cat(sep if i else EMPTY, elem, body)
                body = present if i < lo else either(present, EMPTY)
        return cat(Rx("\\["), ws, body, Rx("\\]"))

    def _containing(
        self, s: dict, items: Any, prefix: list, lo: int, hi: int | None, where: str
    ) -> Expr:
        """Arrays of ``items`` with ``minContains`` (default 1) to
        ``maxContains`` elements matching ``contains``: every element an
        item, ``m`` of them hits (items matching ``contains``) between
        runs of any items — ``(I,)* H ((,I)* ,H){m-1} (,I)*`` — or, with a
        most, hits between runs of misses (items failing ``contains``: its
        ``not`` must be expressible). Refused beside positional items, an
        ``unevaluatedItems``, or item counts the hits do not imply."""
        here = join_pointer(where, "contains")
        m, most = count_keyword(s, "minContains", 1), count_keyword(s, "maxContains")
        if prefix or "unevaluatedItems" in s:
            raise _unsupported("contains", where, "beside positional items or unevaluatedItems")
        if m > _MAX_CONTAINS or (most or 0) > _MAX_CONTAINS:
            raise CompileLimitExceeded(
                "regex_size", _MAX_CONTAINS, max(m, most or 0), "a count of matching elements"
            )
        rest = {k: v for k, v in s.items() if k not in ("contains", "minContains", "maxContains")}
        if m == 0 and most is None:
            return self._array(rest, where)
        if most is not None and most < m:
            return NOTHING
        ws = self.ws
        sep = cat(Rx(","), ws)
        if most is None and m == 1 and (hi is not None or lo > 1):
            return self._containing_counted(s, items, lo, hi, where)
        if hi is not None or lo > m:
            raise _unsupported(
                "contains", where, "with minItems/maxItems beyond what the matching count implies"
            )
        hit = cat(self.lower(_conj(items, s["contains"]), here), ws)
        if most is None:
            item = cat(self.lower(items, join_pointer(where, "items")), ws)
            before, after = rep(cat(item, sep), 0, None), rep(cat(sep, item), 0, None)
            body = cat(before, hit, rep(cat(after, sep, hit), m - 1, m - 1), after)
            return cat(Rx("\\["), ws, body, Rx("\\]"))
        miss = cat(self.lower(_conj(items, {"not": s["contains"]}), here), ws)
        misses = rep(cat(sep, miss), 0, None)
        options = [EMPTY, cat(miss, misses)] if m == 0 else []
        if most >= 1:
            core = cat(hit, misses)
            first = either(EMPTY, cat(miss, misses, sep))
            options.append(cat(first, core, rep(cat(sep, core), max(m, 1) - 1, most - 1)))
        return cat(Rx("\\["), ws, either(*options), Rx("\\]"))

    def _containing_counted(self, s: dict, items: Any, lo: int, hi: int | None, where: str) -> Expr:
        """Arrays of ``lo``..``hi`` ``items`` with a hit among them: for each
        count ``a`` of elements before some hit, ``a`` items, the hit, and
        the items after it that make up the counts (the last ``a`` open-ended
        when there is no most)."""
        top = hi - 1 if hi is not None else lo - 1
        if top > _MAX_CONTAINS:
            raise CompileLimitExceeded(
                "regex_size", _MAX_CONTAINS, top, "an item count beside contains"
            )
        ws = self.ws
        sep = cat(Rx(","), ws)
        hit = cat(self.lower(_conj(items, s["contains"]), join_pointer(where, "contains")), ws)
        item = cat(self.lower(items, join_pointer(where, "items")), ws)
        options = []
        for a in range(top + 1):
            before = rep(cat(item, sep), a, a if hi is not None or a < top else None)
            after = rep(cat(sep, item), max(lo - 1 - a, 0), None if hi is None else hi - 1 - a)
            options.append(cat(before, hit, after))
        return cat(Rx("\\["), ws, either(*options), Rx("\\]"))

    def _object(self, s: dict, where: str) -> Expr:
        if "__none__" in str(s.get("type", "")):
            return NOTHING
        ws = self.ws
        props: dict[str, Any] = dict(s.get("properties", {}))
        required = list(s.get("required", []))
        default_add = bool(self.options.additional_properties)
        additional = s.get("additionalProperties", default_add)
        if "unevaluatedProperties" in s and "additionalProperties" not in s:
            additional = s["unevaluatedProperties"]
        patterns: dict[str, Any] = dict(s.get("patternProperties", {}))
        if (
            not self.grammar
            and additional is True
            and not patterns
            and s.get("propertyNames", True) is True
        ):
            # other members may hold any JSON value, which no regex spells:
            # give up before lowering the properties (_extra_members would,
            # after them: most objects of real schemas end regex mode here)
            raise NotRegular
        names = list(props) + [r for r in required if r not in props]
        allowed: ByteDFA | None = None  # the other names propertyNames lets appear
        if "propertyNames" in s and s["propertyNames"] is not True:
            if not (additional is False and not patterns):
                allowed = self._name_language(s["propertyNames"], where)
            check = self._validator_for(s["propertyNames"])
            names = [n for n in names if check.is_valid(n)]
            if any(r not in names for r in required):
                return NOTHING
        pattern_keys = {
            p: self._pattern_names(p, join_pointer(where, "patternProperties", p))[0]
            for p in patterns
        }
        entries: list[tuple[Expr, bool]] = []
        for name in names:
            quoted = strings.quote(name)
            parts = [props[name]] if name in props else []
            matched = [
                p
                for p, key in pattern_keys.items()
                if key.matches(json.dumps(name, ensure_ascii=False).encode())
            ]
            parts += [patterns[p] for p in matched]
            if name not in props and not matched:
                parts.append(additional)
            here = join_pointer(where, "properties", name)
            schema = parts[0] if len(parts) == 1 else {"allOf": parts}
            value = self.lower(schema, here)
            if value == NOTHING:
                if name in required:
                    return NOTHING
                continue
            member = cat(_quoted_name(name, quoted), ws, Rx(":"), ws, value, ws)
            entries.append((member, name in required))
        extras = self._extra_members(names, patterns, additional, where, allowed)
        lo, hi = count_keyword(s, "minProperties", 0), count_keyword(s, "maxProperties")
        if hi is not None and hi < lo:
            return NOTHING
        sep = cat(Rx(","), ws)
        # first: the members when none is present yet; without declared
        # members, the other members' one counted repetition
        if extras is not None:
            first = separated(extras, sep, lo, hi)
        else:
            first = EMPTY if lo == 0 else NOTHING
        if entries:
            first = self._counted_members(entries, extras, sep, lo, hi, first, where)
        return cat(Rx("\\{"), ws, first, Rx("\\}"))

    def _counted_members(
        self,
        entries: list[tuple[Expr, bool]],
        extras: Expr | None,
        sep: Expr,
        lo: int,
        hi: int | None,
        first: Expr,
        where: str,
    ) -> Expr:
        """The declared ``entries`` in order, the other members (``extras``)
        after them, with ``lo``..``hi`` members in all; ``first`` is what
        follows ``{`` when no declared member is chosen."""
        # counted[c]: the members from here on, each after a separator, when c
        # are already present; counts above `cap` behave alike (all fine with
        # no maximum, all too many above one)
        cap = lo if hi is None else hi + 1
        if cap > 64:
            raise _unsupported("minProperties/maxProperties", where, "counts above 64")
        counted = {}
        for c in range(cap + 1):
            if extras is None:
                fine = c >= lo and (hi is None or c <= hi)
                counted[c] = EMPTY if fine else NOTHING
            else:
                counted[c] = rep(cat(sep, extras), max(0, lo - c), None if hi is None else hi - c)
        for member, req in reversed(entries):
            after = {c: counted[min(c + 1, cap)] for c in counted}
            counted = {
                c: self.share(self._member_then(sep, member, req, after[c], counted[c]))
                for c in counted
            }
            head = cat(member, after[0])
            first = self.share(head if req else either(head, first))
        return first

    @staticmethod
    def _member_then(sep: Expr, member: Expr, req: bool, after: Expr, skipped: Expr) -> Expr:
        """``sep member`` then ``after``; or, if optional, ``skipped`` instead
        (factored when both continue alike, keeping the text linear)."""
        if req:
            return cat(sep, member, after)
        if after == skipped:
            return cat(either(cat(sep, member), EMPTY), after)
        return either(cat(sep, member, after), skipped)

    def _name_language(self, schema: Any, where: str) -> ByteDFA | None:
        """The quoted names ``propertyNames: schema`` lets appear, as an
        automaton (``None``: every name); refused when names under it are
        not a regular language (the schema lowered as a string schema)."""
        here = join_pointer(where, "propertyNames")
        lowered = self.lower(self._merge(schema, {"type": "string"}, here), here)
        if not isinstance(lowered, Rx):
            raise _unsupported("propertyNames", where, "names that are not a regular language")
        limit = self.options.max_states
        dfa = ByteDFA.from_regex(lowered.text, max_states=limit, node=lowered.ast())
        if dfa.same_language(ByteDFA.from_regex(strings.string_regex(), max_states=limit)):
            return None
        return dfa

    def _pattern_names(self, pattern: str, where: str) -> tuple[ByteDFA, str | None]:
        """``_name_automaton`` of a ``patternProperties`` pattern, made once
        per lowering (an object's declared members and its other names both
        ask for it)."""
        found = self._name_patterns.get(pattern)
        if found is None:
            found = _name_automaton(pattern, where, self.options.max_states)
            self._name_patterns[pattern] = found
        return found

    def _extra_members(
        self,
        names: list[str],
        patterns: dict[str, Any],
        additional: Any,
        where: str,
        allowed: ByteDFA | None = None,
    ) -> Expr | None:
        """One additional member (``None`` if none may appear).

        Names are split into regions by automata: each non-empty combination
        of matching ``patternProperties`` (its value must satisfy all of
        them), and the names no pattern matches (``additionalProperties``);
        declared names are removed from every region. Each region's names are
        printed back as a regex (``dfa_to_regex``). Up to ``_MAX_PATTERNS``
        patterns, split at most ``_MAX_PATTERN_SPLITS`` times. ``allowed``
        (from ``propertyNames``) bounds every region.
        """
        if not patterns and allowed is None:
            if additional is False:
                return None
            value = self.lower(additional, join_pointer(where, "additionalProperties"))
            if value == NOTHING:
                return None
            # (the names' regex grows with the names, linearly: bounded as
            # the whole lowering is, not as a pattern's expansion is)
            other = self._strings_not_in(names)
            return self._member(_quoted_rx(other), value)
        if len(patterns) > _MAX_PATTERNS:
            raise _unsupported("patternProperties", where, f"more than {_MAX_PATTERNS} patterns")
        limit = self.options.max_states
        declared = ByteDFA.from_strings(json.dumps(n, ensure_ascii=False).encode() for n in names)
        keys, texts = [], []
        for p in patterns:
            key, text = self._pattern_names(p, join_pointer(where, "patternProperties", p))
            keys.append(key)
            texts.append(text)
        listed = list(patterns)
        universe = allowed or ByteDFA.from_regex(strings.string_regex(), max_states=limit)
        undeclared = universe.difference(declared, max_states=limit)
        regions: list[tuple[ByteDFA, tuple[int, ...], list[Any], str]] = []
        for region, chosen in _name_regions(
            undeclared, keys, additional is not False, limit, where
        ):
            if chosen:
                here = join_pointer(where, "patternProperties", listed[chosen[-1]])
                regions.append((region, chosen, [patterns[listed[c]] for c in chosen], here))
            else:
                here = join_pointer(where, "additionalProperties")
                regions.append((region, chosen, [additional], here))

        def region_node(chosen: tuple[int, ...]) -> Node:
            # (the region as a set expression, where its regex is too big to print)
            if allowed is not None:
                raise CompileLimitExceeded(
                    "regex_size", self.options.max_regex_chars, None, "a region of names"
                )
            quoted = [strings.quoted_node(strings.pattern_node(p)) for p in listed]
            node: Node = Difference(strings.quoted_node(_ANY_STRING), alt(*declared_nodes))
            for k, key in enumerate(quoted):
                node = Intersect(node, key) if k in chosen else Difference(node, key)
            return node

        declared_nodes = [Literal(json.dumps(n, ensure_ascii=False)) for n in names] or [
            strings.quoted_node(CharSet(()))
        ]
        options = []
        for region, chosen, schemas, here in regions:
            value = self.lower(schemas[0] if len(schemas) == 1 else {"allOf": schemas}, here)
            if value == NOTHING:
                continue
            own = len(chosen) == 1 and texts[chosen[0]] is not None
            if own and region.digest() == keys[chosen[0]].digest():
                # every name the pattern matches, only those (minimal automata
                # of one language are one automaton): its own regex, not the
                # region printed back (counted repeats expand there, past the
                # size bound for a language tag's {5,8}, 4-7 ms a region)
                key = Rx(texts[chosen[0]])
            else:
                key = _printed(region, lambda c=chosen: region_node(c))
            options.append(self._member(key, value))
        return either(*options) if options else None

    def _member(self, key: Expr, value: Expr) -> Expr:
        return cat(key, self.ws, Rx(":"), self.ws, value, self.ws)

    def share(self, expr: Expr) -> Expr:
        """In grammar mode, a big expression becomes a rule (used more than once)."""
        if not self.grammar or size(expr) < _SHARE_CHARS or isinstance(expr, Call):
            return expr
        name = f"s{len(self.rules)}"
        self.rules[name] = expr
        return Call(name)

    # ------------------------------------------------------ any JSON value

    def any_value(self) -> Expr:
        """Any JSON value (grammar mode only): the rules ``json_value``,
        ``json_object`` and ``json_array`` (``_any_value_rules``)."""
        if not self.grammar:
            raise NotRegular
        if "json_value" not in self.rules:
            self.rules.update(_any_value_rules(self.ws))
        return Call("json_value")


# ------------------------------------------------------------------ helpers


@functools.lru_cache(maxsize=16)
def _any_value_rules(ws: Rx) -> tuple[tuple[str, Expr], ...]:
    """The rules of any JSON value with whitespace ``ws`` between tokens,
    as ``(name, expression)`` pairs, made once per process for each
    ``ws``: every schema with an open object or an unconstrained value has
    them, and expressions are immutable, so every lowering shares one set
    (and the ASTs their pieces compose once)."""
    value = Call("json_value")
    sep = cat(Rx(","), ws)
    member = cat(Rx(strings.string_regex()), ws, Rx(":"), ws, value, ws)
    scalar = Rx(f"(?:{strings.string_regex()}|{numbers.NUMBER}|true|false|null)")
    return (
        ("json_value", either(Call("json_object"), Call("json_array"), scalar)),
        ("json_object", cat(Rx("\\{"), ws, separated(member, sep, 0, None), Rx("\\}"))),
        ("json_array", cat(Rx("\\["), ws, separated(cat(value, ws), sep, 0, None), Rx("\\]"))),
    )


core_cache("json any-value rules", _any_value_rules)


def _is_finite_union(s: dict) -> bool:
    """Whether ``_finite_union`` may apply: ``anyOf``/``oneOf`` branches
    beside keywords the usual path reads only in parts."""
    return bool(_union_branches(s)) and bool({"if", "then", "else", "not", *DEPENDENCIES} & set(s))


def _has_marker(x: Any) -> bool:
    """Whether ``x`` holds a key of the lowering's own (``__...``) anywhere."""
    if isinstance(x, dict):
        return any(
            (isinstance(k, str) and k.startswith("__")) or _has_marker(v) for k, v in x.items()
        )
    if isinstance(x, list):
        return any(_has_marker(v) for v in x)
    return False


def _matched(s: dict) -> list[str]:
    """The patterns a string of ``s`` must match: its ``pattern`` and those
    an ``allOf`` merged in beside it (``__patterns__``)."""
    return ([s["pattern"]] if "pattern" in s else []) + list(s.get("__patterns__", ()))


def _name_automaton(pattern: str, where: str, max_states: int) -> tuple[ByteDFA, str | None]:
    """The automaton of the quoted names a ``patternProperties`` pattern
    matches, and their regex (``None`` for a pattern with a lookaround,
    whose names have no regex text)."""
    node = strings.pattern_node(pattern, where=where)
    if has_lookaround(node):
        return ByteDFA.from_node(strings.quoted_node(node), max_states=max_states), None
    text = strings.pattern_regex(pattern, where=where)
    return ByteDFA.from_regex(text, max_states=max_states), text


def _meet(a: Rx, b: Rx, limit: int, product: Callable[[], ByteDFA]) -> bool:
    """Whether some text is in both languages (``True`` where that is past
    the bounds): their product searched on the lazy automata's terms
    (``has_string``: it stops at the first text in both, and walks only the
    pairs of states the two reach together), else ``product()``, the
    intersection of their minimal automata, built."""
    try:
        return has_string(Intersect(a.ast(), b.ast()), max_states=limit)
    except CompileLimitExceeded as e:
        if is_budget_error(e):
            raise
    try:
        return not product().is_empty()
    except CompileLimitExceeded as e:
        if is_budget_error(e):
            raise
    return True


def _name_regions(
    names: ByteDFA, keys: list[ByteDFA], rest: bool, limit: int, where: str
) -> list[tuple[ByteDFA, tuple[int, ...]]]:
    """The non-empty regions the ``keys`` (patterns' automata) cut ``names``
    into, as ``(automaton, chosen)``: for each combination ``chosen`` of
    keys (indices, ascending), the names those keys match and no other
    does; with ``rest``, last, the names no key matches (``chosen == ()``).

    Depth first, each key in or out, a region found empty not split
    further (patterns that exclude each other make a handful of regions,
    not ``2 ** n``); a combination is reached from its first key's names
    (``names`` ∩ that key, less the earlier keys), so the splits work on
    automata no bigger than one pattern's names, and the names no key
    matches are ``names`` less the keys' union, one product: not a chain
    of differences of the big automaton of every other name (19 literal
    patterns beside 53 declared names: 0.46 s). Each region is a minimal
    automaton, numbered canonically, so the same language in the same
    order as any other way of computing it. Past ``_MAX_PATTERN_SPLITS``
    splits: refused (the patterns overlap in too many ways)."""
    splits = 0

    def less(region: ByteDFA, key: ByteDFA) -> tuple[ByteDFA, ByteDFA]:
        # (region ∩ key, region − key); no second product where they are disjoint
        inside = region.intersect(key, max_states=limit)
        if inside.is_empty():
            return inside, region
        return inside, region.difference(key, max_states=limit)

    regions = []
    for first, key in enumerate(keys):
        region = names.intersect(key, max_states=limit)
        for earlier in keys[:first]:
            if region.is_empty():
                break
            region = less(region, earlier)[1]
        todo = [(first + 1, region, (first,))]
        while todo:
            i, region, chosen = todo.pop()
            if region.is_empty():
                continue
            if i == len(keys):
                regions.append((region, chosen))
                continue
            splits += 1
            if splits > _MAX_PATTERN_SPLITS:
                raise _unsupported(
                    "patternProperties", where, "its patterns overlap in too many ways"
                )
            inside, outside = less(region, keys[i])
            todo.append((i + 1, outside, chosen))
            todo.append((i + 1, inside, (*chosen, i)))
    if rest:
        region = names
        if keys:
            matched = keys[0]
            for key in keys[1:]:
                matched = matched.union(key, max_states=limit)
            region = names.difference(matched, max_states=limit)
        if not region.is_empty():
            regions.append((region, ()))
    return regions


def _quoted_name(name: str, quoted: str | None = None) -> Rx:
    """Exactly the JSON spelling of ``name`` (``quoted``: its regex, if known)."""
    text = strings.quote(name) if quoted is None else quoted
    if text == NOTHING.text:
        return NOTHING  # (a lone surrogate: no UTF-8 spelling)
    return Rx(text, node=Literal(json.dumps(name, ensure_ascii=False)))


@functools.cache
def _format_piece(name: str) -> Rx:
    """A supported format's quoted strings as a piece, made once per process
    as its text is (``formats.format_regex``): the same for every schema
    that uses the format, and its AST is the bulk of a small schema's
    lowering (the e-mail format's text is 1,829 characters): the AST it is
    printed from, not its text parsed back. Joinable as a quoted piece is
    (see :func:`_quoted_rx`)."""
    return _quoted_rx(formats.format_piece(name))


def _quoted_rx(piece: tuple[str, Node]) -> Rx:
    """A quoted-string piece from its regex and AST (never nullable; the AST
    spares parsing the text back; joinable as it is: ``"`` + ``to_regex``'s
    text + ``"``, and ``to_regex`` groups every alternation it prints, so
    there is no top-level ``|`` to scan a long text for)."""
    text, node = piece
    return NOTHING if text == NOTHING.text else Rx(text, node=node, joinable=True)


def _positional(s: dict, tuples: bool) -> tuple[list[Any], Any]:
    """``(prefix schemas, schema of the rest)`` of an array schema; ``tuples``:
    a draft whose positional items are a list in ``items`` (no ``prefixItems``)."""
    items = s.get("items", True)
    if isinstance(items, list):
        return list(items), s.get("additionalItems", True)
    return ([] if tuples else list(s.get("prefixItems", []))), items


def _conj(x: Any, y: Any) -> Any:
    if x is True:
        return y
    if y is True:
        return x
    return {"allOf": [x, y]}


def _number_literal(v: int | float) -> str:
    """The spellings of numbers equal to ``v`` (integral ones also as ``v.0``)."""
    exp = repr(v).replace(".", "\\.").replace("+", "\\+") if "e" in repr(v) else None
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    if isinstance(v, int):
        body = ("-?0" if v == 0 else str(v)) + "(?:\\.0+)?"
        return f"(?:{body}|{exp})" if exp else body
    plain = format(Decimal(repr(v)), "f")
    spellings = [plain.replace(".", "\\.") + "0*"]
    if exp:
        spellings.append(exp)
    return "(?:" + "|".join(spellings) + ")"


_CONTAINS_COUNTS = ("minContains", "maxContains")


def _contains_counts(a: dict, b: dict) -> dict:
    """The ``minContains``/``maxContains`` of ``allOf: [a, b]`` merged into
    one schema: a side's counts bound only its own ``contains`` (beside
    none they do nothing), and an unset ``minContains`` is 1, so that
    beside the one ``contains`` both sides share (different ones are not
    merged) they bound its matches as both sides do: ``{contains: X,
    minContains: 0}`` and ``{contains: X, maxContains: 0}`` leave no array."""
    sides = [s for s in (a, b) if "contains" in s]
    if not sides:
        return {}
    low = max(count_keyword(s, "minContains", 1) for s in sides)
    highs = [count_keyword(s, "maxContains") for s in sides if "maxContains" in s]
    counts = {"minContains": low} if low != 1 or any("minContains" in s for s in sides) else {}
    if highs:
        counts["maxContains"] = min(highs)
    return counts


def _trivial(key: str, value: Any) -> bool:
    """A refused keyword whose value asks nothing (e.g. ``dependentRequired: {}``)."""
    if key in ("dependentRequired", "dependencies", "dependentSchemas"):
        return value == {}
    return key == "minContains" and value == 0


def _standard(x: Any) -> Any:
    """``x`` with the lowering's own markers written as the standard
    keywords they stand for, so that the validator judges it as the
    lowering does (it ignores the markers: ``{"enum": ["a"], "__not_string__":
    [{"pattern": "a"}]}`` would keep ``"a"``); ``_NotListed`` for a marker
    with no such form."""
    if not isinstance(x, dict):
        return x
    out: dict = {}
    extra: list = []
    for key, value in x.items():
        kind = SCHEMA_KEYWORDS.get(key)
        if key == "const" and isinstance(value, dict) and "__never__" in value:
            return False
        elif kind == "map" and isinstance(value, dict):  # (names are not keywords)
            out[key] = {name: _standard(sub) for name, sub in value.items()}
        elif kind is not None:
            out[key] = (
                [_standard(v) for v in value] if isinstance(value, list) else _standard(value)
            )
        elif key == "type" and "__none__" in str(value):
            return False
        elif key == "__not_string__":
            extra += [{"not": {"type": "string", **_standard(n)}} for n in value]
        elif key == "__not_strings__":
            extra.append({"not": {"enum": value}})
        elif key == "__fractional__":
            extra.append({"not": {"type": "integer"}})
        elif key == "__patterns__":
            extra += [{"pattern": p} for p in value]
        elif key in ("__allOf__", "__conditionals__"):
            extra += [_standard(part) for part in value]
        elif isinstance(key, str) and key.startswith("__"):
            raise _NotListed(f"the lowering's {key} marker")
        else:  # (values, not schemas: enum, required, bounds...)
            out[key] = value
    if extra:
        out["allOf"] = [*out.get("allOf", []), *extra]
    return out


def _without_list(s: dict, listing: dict) -> dict:
    """``s`` with the ``enum``/``const`` of ``listing`` (``s`` itself or a
    branch of its ``allOf``) left out."""

    def bare(b: dict) -> dict:
        return {k: v for k, v in b.items() if k not in ("enum", "const")}

    if listing is s:
        return bare(s)
    return {**s, "allOf": [bare(b) if b is listing else b for b in s["allOf"]]}


#: ``_tag_values`` of a member that does not tell branches apart by listed values.
_NOT_A_TAG = object()


def _printed(dfa: ByteDFA, node: Callable[[], Node]) -> Rx:
    """The piece of ``dfa``'s language: its regex (state elimination), or,
    too big to print, ``opaque(node())`` (``node``: the same language as a
    set expression, for the automata forms)."""
    try:
        return Rx(dfa_to_regex(dfa))
    except CompileLimitExceeded as e:
        if e.limit != "regex_size" or is_budget_error(e):
            raise
    return opaque(node())


#: Any string's characters (``quoted_node`` spells it).
_ANY_STRING = Repeat(CharSet.any(), 0, None)


#: ``patternProperties``: the most patterns, and the most times the names are
#: split by one (in or out) before the regions are known.
_MAX_PATTERNS = 32
_MAX_PATTERN_SPLITS = 512
#: The most ``if``/``then``/``else`` conditionals of one schema decided by
#: negating their ``if`` (2 ** this cases).
_MAX_CONDITIONS = 4
#: The most elements matching ``contains`` a count (``minContains``/``maxContains``) may name.
_MAX_CONTAINS = 64
#: The most tags ``_exclusive_by_tag`` splits object branches by, one within another.
_MAX_TAG_SPLITS = 3


def _union_branches(s: dict) -> list:
    """The branches of ``s``'s ``anyOf`` (else its ``oneOf``)."""
    branches = s.get("anyOf", s.get("oneOf", []))
    return branches if isinstance(branches, list) else []


def _numeric_bounds(a: dict, b: dict) -> tuple[dict, dict]:
    """``a`` and ``b`` with draft 4's flagged bounds as numbers (``minimum:
    v`` with ``exclusiveMinimum: true`` as ``exclusiveMinimum: v``, a false
    flag dropped) where both bound the same side: merged keyword by
    keyword, ``{"minimum": 1}`` and ``{"minimum": 0.5, "exclusiveMinimum":
    true}`` made the flag the larger bound's. Otherwise as they are. (The
    lowering reads both forms; a validator of draft 4 gets numbers back as
    flags: ``_flagged_bounds``.)"""

    def numeric(s: dict) -> dict:
        out = dict(s)
        for bound, flag in EXCLUSIVE_FLAGS.items():
            if isinstance(out.get(flag), bool):
                value = out.pop(flag)
                if value and bound in out:
                    out[flag] = out.pop(bound)
        return out

    for bound, flag in EXCLUSIVE_FLAGS.items():
        sides = [s for s in (a, b) if bound in s or flag in s]
        if len(sides) == 2 and any(isinstance(s.get(flag), bool) for s in sides):
            a, b = numeric(a), numeric(b)
    return a, b


_BOUND_OF_FLAG = {flag: bound for bound, flag in EXCLUSIVE_FLAGS.items()}


def _flagged_bounds(node: Any) -> Any:
    """``node`` with the lowering's own exclusive bounds (a number, as
    draft 6 on writes them: the ways a value fails listed numbers or
    bounds) in draft 4's words, ``minimum`` and the flag ``exclusiveMinimum:
    true`` in an ``allOf`` beside, for a draft-4 validator, which reads a
    number there as a flag and the bound as absent. A document of draft 4
    has no such number of its own (its meta-schema refuses it). Listed
    values are left as they are."""
    if isinstance(node, list):
        return [_flagged_bounds(v) for v in node]
    if not isinstance(node, dict):
        return node
    out: dict = {}
    flagged = []
    for key, value in node.items():
        bound = _BOUND_OF_FLAG.get(key)
        if bound and isinstance(value, int | float) and not isinstance(value, bool):
            flagged.append({bound: value, key: True})
        elif key in ("enum", "const", "default", "examples"):
            out[key] = value
        else:
            out[key] = _flagged_bounds(value)
    if flagged:
        out["allOf"] = [*out.get("allOf", []), *flagged]
    return out


def _absolute_refs(node: Any) -> Any:
    """``node`` with ``#<pointer>`` references made absolute (for ``jsonschema``)."""
    if isinstance(node, dict):
        out = {k: _absolute_refs(v) for k, v in node.items()}
        if isinstance(node.get("$ref"), str):
            ref = node["$ref"]
            out["$ref"] = ROOT_URI + "#" + _fragment(ref[1:]) if ref.startswith("#") else ref
        return out
    if isinstance(node, list):
        return [_absolute_refs(v) for v in node]
    return node


def _fragment(pointer: str) -> str:
    from urllib.parse import quote

    return quote(pointer, safe="/~")


def rewrite_refs(index: SchemaIndex) -> Any:
    """A copy of the document with every ``$ref`` as ``#<pointer>`` (resolved
    once, base URIs and anchors applied; unresolvable ones as ``!<ref>``):
    those of the schemas the schema keywords hold, and those of the schemas
    references reach elsewhere (under an unknown keyword: ``#/x-types/a``),
    which are read as schemas too (their ``#anchor`` or ``%20`` references
    once reached the lowering as they were written, a bare ``ValueError``)."""

    def walk(node: Any, pointer: str) -> Any:
        if not isinstance(node, dict):
            return node
        out = dict(node)
        if "$ref" in node and not isinstance(node["$ref"], str):
            # (drafts 4-7 leave $ref out of their meta-schemas: the validator
            # itself fails on one that is no string)
            raise ConstraintError(
                "json schema",
                f"$ref must be a string, got {type(node['$ref']).__name__}",
                pointer or "/",
            )
        if isinstance(node.get("$ref"), str):
            try:
                out["$ref"] = "#" + index.resolve(node["$ref"], pointer)
            except UnsupportedConstraint:
                out["$ref"] = "!" + node["$ref"]
        for key, shape in SCHEMA_KEYWORDS.items():
            if key not in node:
                continue
            value = node[key]
            here = join_pointer(pointer, key)
            if shape == "map" and isinstance(value, dict):
                out[key] = {n: walk(v, join_pointer(here, n)) for n, v in value.items()}
            elif shape in ("list", "schema_or_list") and isinstance(value, list):
                out[key] = [walk(v, join_pointer(here, i)) for i, v in enumerate(value)]
            elif shape in ("schema", "schema_or_list"):
                out[key] = walk(value, here)
        return out

    document = walk(index.root, "")
    rewritten: dict[str, Any] = {}  # the targets off the paths (``index.off_path``)
    while pending := sorted(index.off_path.difference(rewritten)):
        for target in pending:  # (their own references may reach further)
            rewritten[target] = walk(index.at(target), target)
    for target in sorted(rewritten, key=lambda p: len(pointer_tokens(p))):  # (outer first)
        document = grafted(document, target, rewritten[target])
    return document


__all__ = ["Lowerer", "NotRegular", "Options", "rewrite_refs"]
