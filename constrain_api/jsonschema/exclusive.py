"""``oneOf`` made exclusive: when two branches can share no value, and how
a value of one branch fails the others.

The lowering writes ``oneOf`` as a union of branches that no value matches
twice. :func:`disjoint_by_schema` and :class:`Shape` say where branches are
disjoint already (by type, listed values, member counts or names);
:func:`failures` lists the ways a value fails a schema, as schemas (what
``not`` lowers to as well), so that :func:`exclusive_failing` and
:func:`exclusive_objects` can give each branch the ways of failing every
other one; an object's ways are made disjoint from the ones before them
(:func:`apart`). Every function here reads and writes schemas only; the
walker (``lower.Lowerer``) lowers what they return."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from decimal import Decimal
from typing import Any, NamedTuple

from .keywords import (
    KEYWORDS_OF_TYPE,
    TYPES,
    annotation_keywords,
    can_reject,
    count_keyword,
    members_declared,
)
from .refs import SCHEMA_KEYWORDS
from .values import (
    EVERY_TYPE,
    enum_values,
    json_equal,
    listed_values,
    types_of,
    value_type,
    value_types,
)


class Shape(NamedTuple):
    """What every value of a schema has (``Lowerer._shape``): one of
    ``types``; as an object, ``least`` to ``most`` members (``None``: no
    most), each named in ``names`` (``None``: any name)."""

    types: frozenset[str]
    least: int
    most: int | None
    names: frozenset[str] | None = None

    def meet(self, other: Shape) -> Shape:
        """What values of both have."""
        mosts = [m for m in (self.most, other.most) if m is not None]
        names = [n for n in (self.names, other.names) if n is not None]
        return Shape(
            self.types & other.types,
            max(self.least, other.least),
            min(mosts, default=None),
            frozenset.intersection(*names) if names else None,
        )

    def disjoint(self, other: Shape) -> bool:
        """Whether no value has both shapes: no type in common, or only
        objects in common (one takes nothing else) with counts apart, or
        with no name in common and a member required."""
        common = self.types & other.types
        if not common:
            return True
        if common != {"object"}:
            return False
        met = self.meet(other)
        return (met.most is not None and met.least > met.most) or (
            met.names == frozenset() and met.least > 0
        )

    def only_empty_object_in_common(self, other: Shape) -> bool:
        """Whether a value of both can only be ``{}`` (objects only in
        common, no name in common)."""
        return self.types & other.types == {"object"} and self.meet(other).names == frozenset()


#: The shape of a schema nothing is known of.
ANY_SHAPE = Shape(EVERY_TYPE, 0, None)


def _same_schema(a: Any, b: Any) -> bool:
    """Whether two schemas are the same up to annotations (``description``,
    ``title``...), so that they accept the same values: the same validating
    keywords, subschemas compared this way, other values as JSON. ``False``
    may still be two schemas of one language; ``True`` never is two."""
    if not isinstance(a, dict) or not isinstance(b, dict):
        return json_equal(a, b)
    keys = set(a) - annotation_keywords(a)
    if keys != set(b) - annotation_keywords(b):
        return False
    for key in keys:
        x, y, kind = a[key], b[key], SCHEMA_KEYWORDS.get(key)
        if kind == "map" and isinstance(x, dict) and isinstance(y, dict):
            same = x.keys() == y.keys() and all(_same_schema(x[k], y[k]) for k in x)
        elif kind is not None and isinstance(x, list) and isinstance(y, list):
            same = len(x) == len(y) and all(map(_same_schema, x, y))
        elif kind in ("schema", "schema_or_list"):
            same = _same_schema(x, y)
        else:
            same = json_equal(x, y)
        if not same:
            return False
    return True


def disjoint_by_schema(a: Any, b: Any, judged: Callable[[Any, list], list] | None = None) -> bool:
    """Whether no value can satisfy both (cheap sufficient checks only).
    ``judged(schema, values)``: the values the schema accepts (a required
    member's listed values are then those its other keywords let through:
    ``{"enum": [...], "pattern": "final"}``)."""
    if not isinstance(a, dict) or not isinstance(b, dict):
        return a is False or b is False
    ta, tb = value_types(a), value_types(b)
    if ta is not None and tb is not None and not (ta & tb):
        return True
    if ta == {"object"} or tb == {"object"}:
        if any(_forbids(y, n) for x, y in ((a, b), (b, a)) for n in x.get("required", [])):
            return True
        pa, pb = a.get("properties", {}), b.get("properties", {})
        for name in set(pa) & set(pb):
            if name in a.get("required", []) and name in b.get("required", []):
                ea, eb = listed_values(pa[name]), listed_values(pb[name])
                known = ea is not None and eb is not None
                if known and judged is not None:
                    ea, eb = judged(pa[name], ea), judged(pb[name], eb)
                if known and not any(json_equal(x, y) for x in ea for y in eb):
                    return True
    if ("enum" in a or "const" in a) and ("enum" in b or "const" in b):
        ea, eb = enum_values(a, None), enum_values(b, None)
        return not any(json_equal(x, y) for x in ea for y in eb)
    return False


def closed_names(s: dict) -> frozenset[str] | None:
    """The only member names objects of ``s`` may have, where ``s`` is
    closed (``additionalProperties: false``, no patterns): its declared
    ``properties``; ``None`` (any name) otherwise."""
    properties = s.get("properties", {})
    closed = s.get("additionalProperties", True) is False and not s.get("patternProperties")
    return frozenset(properties) if closed and isinstance(properties, dict) else None


def _forbids(s: dict, name: Any) -> bool:
    """Whether no object of ``s`` has a member ``name`` (cheap sufficient
    checks: ``properties: {name: false}``, or a closed ``s`` that does not
    declare it)."""
    properties = s.get("properties", {})
    if not isinstance(properties, dict) or not isinstance(name, str):
        return False
    if name in properties:
        return properties[name] is False
    return closed_names(s) is not None


def role_on_type(s: Any, tau: str) -> str:
    """How schema ``s`` treats the values of JSON type ``tau`` (``"number"``
    with the integers): ``"empty"`` (takes none), ``"universal"`` (takes
    every one: no keyword of ``s`` applies to ``tau``) or ``"constrained"``
    (some, or not known)."""
    if s is False or s is True:
        return "empty" if s is False else "universal"
    names = types_of(s)
    if tau not in names and not (tau == "number" and "integer" in names):
        return "empty"
    role = "constrained" if tau == "number" and "number" not in names else "universal"
    if "enum" in s or "const" in s:
        if not any(value_type(v) == tau for v in enum_values(s, None)):
            return "empty"
        role = "constrained"
    for key, value in s.items():
        if key in ("type", "enum", "const") or not can_reject({key: value}):
            continue
        if key in ("allOf", "__allOf__", "anyOf") and isinstance(value, list) and value:
            roles = [role_on_type(b, tau) for b in value]
            if key == "anyOf":  # (the union's: every branch empty, or one universal)
                if "universal" in roles:
                    continue
                if all(r == "empty" for r in roles):
                    return "empty"
            else:  # (the conjunction's: a conjunct empty, or all universal)
                if "empty" in roles:
                    return "empty"
                if all(r == "universal" for r in roles):
                    continue
            role = "constrained"
            continue
        owner = next((t for t, keys in KEYWORDS_OF_TYPE.items() if key in keys), None)
        if owner is None or owner == tau:
            role = "constrained"
    return role


def exclusive_required(branches: list[dict]) -> list[dict] | None:
    """Object branches that differ only in ``required`` (and annotations),
    each made to match where no other does: branch i holds its names, so it
    fails branch j iff a name j requires beyond i's is absent — for one such
    name ``properties: {name: false}``, for several ``not: {required:
    names}`` (the objects lacking one of them; a branch whose values all
    match another is dropped). ``None`` when the branches differ otherwise,
    or the choices of absent names would multiply past ``_MAX_ABSENT_CHOICES``."""

    def rest(b: dict) -> dict:
        return {k: v for k, v in b.items() if k != "required" and k not in annotation_keywords(b)}

    if any(rest(b) != rest(branches[0]) for b in branches[1:]):
        return None
    out = []
    for i, mine in enumerate(branches):
        have = set(mine.get("required", []))
        beyond = [
            [n for n in dict.fromkeys(other.get("required", [])) if n not in have]
            for j, other in enumerate(branches)
            if j != i
        ]
        if any(not names for names in beyond):
            continue  # every value of branch i matches that other branch too
        if math.prod(len(names) for names in beyond) > _MAX_ABSENT_CHOICES:
            return None
        properties = dict(mine.get("properties", {}))
        properties.update(dict.fromkeys((n[0] for n in beyond if len(n) == 1), False))
        lacking = [{"not": {"required": names}} for names in beyond if len(names) > 1]
        branch = {**mine, "properties": properties}
        out.append({"allOf": [branch, *lacking]} if lacking else branch)
    return out


def tag_cases(branches: list[dict], tag: str, takes: list) -> list[list[dict]]:
    """The cases of member ``tag`` (see ``Lowerer._exclusive_by_tag``), each
    the branches that take its values with the tag pinned to them: one case
    per group of listed values that the same branches take, the tag with
    none of the listed values, the tag absent."""
    listed: list = []
    for v in (v for t in takes if isinstance(t, list) for v in t):
        if not any(json_equal(v, w) for w in listed):
            listed.append(v)
    groups: dict[tuple[int, ...], list] = {}
    for v in listed:
        key = tuple(
            i for i, t in enumerate(takes) if t is True or (t and any(json_equal(v, w) for w in t))
        )
        groups.setdefault(key, []).append(v)

    def pinned(i: int, sub: Any, present: bool) -> dict:
        b = branches[i]
        required = [*b.get("required", []), *([tag] if present else [])]
        return {
            **b,
            "properties": {**b.get("properties", {}), tag: sub},
            "required": list(dict.fromkeys(required)),
        }

    cases = [[pinned(i, {"enum": values}, True) for i in key] for key, values in groups.items()]
    cases.append(
        [pinned(i, {"not": {"enum": listed}}, True) for i, t in enumerate(takes) if t is True]
    )
    cases.append(
        [
            pinned(i, False, False)
            for i, b in enumerate(branches)
            if tag not in b.get("required", [])
        ]
    )
    return cases


def _typed(ways: list | None) -> bool:
    """Whether ``ways`` (``failures``'s) are there and each names one JSON
    type, so that splitting them by type keeps them all."""
    return ways is not None and all(
        isinstance(w, dict) and isinstance(w.get("type"), str) for w in ways
    )


def _of_type(ways: list, tau: str) -> list:
    """The ways (``_typed``) of JSON type ``tau``: a way of ``integer``
    values (a negated ``type: integer``'s) is one of ``number``'s."""
    return [w for w in ways if w["type"] == tau or (tau == "number" and w["type"] == "integer")]


def exclusive_failing(
    branches: list[dict], tau: str, resolve: Resolver | None = None
) -> list[dict] | None:
    """Branches restricted to JSON type ``tau`` (not objects: see
    ``exclusive_objects``), each made to match where no other does: branch
    i and, for every other branch, ``anyOf`` the ways a value of ``tau``
    fails it (``failures``). A branch no value of which fails another is
    dropped; ``None`` when a branch has no such ways or past
    ``_MAX_ABSENT_CHOICES`` combinations per branch."""
    failing = []
    for b in branches:
        ways = failures(b, resolve)
        if not _typed(ways):
            return None  # (a way of no one type: not split here)
        failing.append(_of_type(ways, tau))
    kept = _failing_the_others(len(branches), lambda i, j: failing[j])
    if kept is None:
        return None
    return [{"allOf": [branches[i], *failing]} if failing else branches[i] for i, failing in kept]


def _failing_the_others(
    count: int, ways: Callable[[int, int], list | None]
) -> list[tuple[int, list[dict]]] | None:
    """For each of ``count`` branches i that some value of it fails every
    other branch j, ``(i, [anyOf of ways(i, j) for each j])`` — the schemas a
    value of branch i must also match to match no other. ``ways(i, j)``:
    the schemas whose union is "a value of i fails j", ``[True]`` when every
    value of i does, ``[]`` when none does (branch i is then dropped),
    ``None`` when not expressible (then ``None``, as past
    ``_MAX_ABSENT_CHOICES`` combinations for a branch)."""
    out = []
    for i in range(count):
        choices = []
        for j in range(count):
            if j != i:
                found = ways(i, j)
                if found is None:
                    return None
                choices.append(found)
        if any(not found for found in choices):
            continue  # every value of branch i matches that other branch too
        if math.prod(len(found) for found in choices) > _MAX_ABSENT_CHOICES:
            return None
        out.append((i, [{"anyOf": found} for found in choices if found != [True]]))
    return out


def failures(neg: dict, resolve: Resolver | None = None, depth: int = 0) -> list | None:
    """Schemas whose union is exactly the values that fail ``neg``, one JSON
    type at a time: every value of a type ``neg`` does not take; strings
    failing its string keywords; numbers outside its bounds or between its
    listed numbers (ranges: plain decimal spellings); arrays too short, too
    long or containing an element that fails ``items``; objects lacking a
    required member, too small or large, or with a member whose value
    fails its subschema (``not`` again: it must be expressible in turn);
    values of a listed type that are not listed; for integers, the numbers
    that are not (``__fractional__``); with ``resolve``, the values failing
    an ``anyOf`` (or a ``oneOf`` of disjoint branches) beside them: those
    failing the other keywords, and, of each type, those passing them that
    fail every branch (``_failures_of_union``). Each way names its type.
    ``None`` for keywords with no such form here (``multipleOf``, ``not``
    beside others, a closed object's names, positional items, ...)."""
    keys = {k for k in neg if can_reject({k: neg[k]})}
    if keys == {"not"}:
        return [neg["not"]]
    if keys & {"anyOf", "oneOf"}:
        if resolve is None or depth >= _MAX_NEGATED_UNIONS or keys >= {"anyOf", "oneOf"}:
            return None
        return _failures_of_union(neg, resolve, depth)
    names = types_of(neg)
    integral = "integer" in names and "number" not in names
    listed = enum_values(neg, None) if keys & {"enum", "const"} else None
    kinds = {"string": _STRING_FAILS, "number": _NUMBER_FAILS, "array": _ARRAY_FAILS}
    kinds["object"] = _OBJECT_FAILS
    known = {"type", "enum", "const"}.union(*kinds.values())
    if keys - known:
        return None
    ways: list = []
    for tau in TYPES:
        if tau not in names and not (tau == "number" and integral):
            ways.append({"type": tau})
            continue
        if tau == "number" and integral:
            ways.append({"type": "number", "__fractional__": True})
        if listed is not None:
            mine = [v for v in listed if value_type(v) == tau]
            if not mine:
                ways.append({"type": tau})
                continue
            outside = _unlisted(tau, mine)
            if outside is None:
                return None
            ways += outside
        own = {k: neg[k] for k in keys if k in kinds.get(tau, ())}
        if own:
            failing = _type_failures(tau, own)
            if failing is None:
                return None
            ways += failing
    return ways


#: ``resolve`` for ``failures``: a branch with its ``$ref`` and ``allOf``
#: merged in (``None`` where that has no merge).
Resolver = Callable[[Any], Any]
#: ``anyOf``/``oneOf`` nested in a negation, at most (each multiplies the ways).
_MAX_NEGATED_UNIONS = 3


def _failures_of_union(neg: dict, resolve: Resolver, depth: int) -> list | None:
    """The ways a value fails ``neg`` that has an ``anyOf`` (or a ``oneOf``
    whose branches are disjoint, ``disjoint_by_schema``: then it fails
    exactly when it fails every branch) beside its other keywords (the
    *base*): the ways it fails the base, and, for each JSON type, one way
    holding the values of that type that pass the base and fail every
    branch (``allOf`` of each branch's ways of that type; none where some
    branch takes every value of the type). The two kinds are disjoint, as
    the lowering's unions should be. ``None`` where a branch or the base
    has no ways, or a ``oneOf``'s branches may overlap."""
    key = "anyOf" if "anyOf" in neg else "oneOf"
    base = {k: v for k, v in neg.items() if k != key}
    branches = []
    for branch in neg[key]:
        branch = resolve(branch)
        if branch is None:
            return None
        if branch is not False:
            branches.append(branch)
    if key == "oneOf" and not all(
        disjoint_by_schema(a, b) for a, b in itertools.combinations(branches, 2)
    ):
        return None  # (a value matching two branches fails the oneOf too)
    validating = can_reject(base)
    ways = failures(base, resolve, depth + 1) if validating else []
    if ways is None or any(b is True for b in branches):
        return ways  # (a branch taking every value: only the base can fail)
    failing = [failures(b, resolve, depth + 1) for b in branches]
    if not all(map(_typed, failing)):
        return None  # (a way of no one type, a double negation's: not split by type)
    for tau in TYPES:
        if role_on_type(base, tau) == "empty":
            continue  # (its values fail the base: among the ways above)
        fails_all: list = [base] if validating else []
        for found in failing:
            mine = _of_type(found, tau)
            if not mine:
                break  # (no value of this type fails that branch)
            if not any(w == {"type": tau} for w in mine):  # (else all of them do)
                fails_all.append({"anyOf": mine} if len(mine) > 1 else mine[0])
        else:
            ways.append({"type": tau, "allOf": fails_all} if fails_all else {"type": tau})
    return ways


_STRING_FAILS = frozenset({"pattern", "__patterns__", "minLength", "maxLength", "format"})
_NUMBER_FAILS = frozenset({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"})
_ARRAY_FAILS = frozenset({"items", "minItems", "maxItems"})
_OBJECT_FAILS = frozenset(
    {"properties", "required", "additionalProperties", "minProperties", "maxProperties"}
)


def _unlisted(tau: str, values: list) -> list | None:
    """The values of type ``tau`` not among ``values`` (of that type)."""
    if tau == "string":  # (the marker, not a `not`: beside other keywords that `not`
        # would come back here, a schema met inside itself, lowered as no string)
        return [{"type": "string", "__not_strings__": values}]
    if tau in ("boolean", "null"):
        return [{"type": tau, "not": {"enum": values}}]
    if tau != "number":
        return None
    if any(not _plain_number(v) for v in values):
        return None
    points = sorted(values, key=lambda v: Decimal(repr(v)))
    ways = [{"type": "number", "exclusiveMaximum": points[0]}]
    ways += [
        {"type": "number", "exclusiveMinimum": a, "exclusiveMaximum": b}
        for a, b in itertools.pairwise(points)
        if a != b
    ]
    ways.append({"type": "number", "exclusiveMinimum": points[-1]})
    return ways


def takes_all(x: Any) -> bool:
    """Whether schema ``x`` accepts every value (``true`` or annotations only)."""
    return x is True or (isinstance(x, dict) and not can_reject(x))


def _plain_number(v: Any) -> bool:
    """Whether a bound at ``v`` is exact: an integer a float holds exactly,
    or a float whose shortest spelling has no exponent."""
    if isinstance(v, int):
        return abs(v) < 2**53
    return isinstance(v, float) and math.isfinite(v) and "e" not in repr(v)


def _type_failures(tau: str, own: dict) -> list | None:
    """The values of type ``tau`` failing ``own`` (its keywords of that type)."""
    if tau == "string":
        return [{"type": "string", "__not_string__": [own]}]
    if tau == "number":
        if any(isinstance(v, bool) or not _plain_number(v) for v in own.values()):
            return None
        flip = {
            "minimum": "exclusiveMaximum",
            "exclusiveMinimum": "maximum",
            "maximum": "exclusiveMinimum",
            "exclusiveMaximum": "minimum",
        }
        return [{"type": "number", flip[k]: v} for k, v in own.items()]
    ways: list = []
    if tau == "array":
        items = own.get("items", True)
        if isinstance(items, list):
            return None
        if items is False:
            ways.append({"type": "array", "minItems": 1})
        elif not takes_all(items):
            ways.append({"type": "array", "contains": {"not": items}})
        low, high = "minItems", "maxItems"
    else:
        if not takes_all(own.get("additionalProperties", True)):
            return None  # (a member outside the declared names)
        properties = own.get("properties", {})
        if not isinstance(properties, dict):
            return None
        for name in dict.fromkeys(own.get("required", [])):
            ways.append({"type": "object", "properties": {name: False}})
        for name, sub in properties.items():
            if sub is False:
                ways.append({"type": "object", "required": [name]})
            elif not takes_all(sub):
                fails = {name: {"not": sub}}
                ways.append({"type": "object", "required": [name], "properties": fails})
        low, high = "minProperties", "maxProperties"
    if count_keyword(own, low, 0):
        ways.append({"type": tau, high: count_keyword(own, low) - 1})
    if own.get(high) is not None:
        ways.append({"type": tau, low: count_keyword(own, high) + 1})
    return apart(ways) if tau == "object" else ways


def exclusive_objects(branches: list[dict], default_open: bool = True) -> list[dict] | None:
    """Object branches of plain member keywords (``properties``, ``required``,
    a boolean ``additionalProperties``), each made to match where no other
    does: branch i, and for every other branch j ``anyOf`` the ways a value
    of branch i fails j — a name j requires is absent, a member j declares
    is present with a value j's subschema rejects (``not``), or (j closed,
    i closed) a member only i declares is present; every value of i fails
    a closed j when i requires a name j does not declare. The ways are the exact
    negation of j, so the branches are exact; they overlap each other in
    no value (each holds its own and fails the others). A branch every one
    of whose values matches another is dropped. ``None`` when a branch has
    other keywords, when j is closed and i open without such a name (the
    names j excludes are any), or past ``_MAX_ABSENT_CHOICES`` combinations per branch; the
    caller lowers the branches and refuses where a negation is not
    expressible. ``default_open``: ``additionalProperties`` where a branch
    has none (``JsonSchema(additional_properties=...)``)."""
    shapes = object_shapes(branches, default_open)
    if shapes is None:
        return None
    kept = _failing_the_others(
        len(shapes), lambda i, j: apart(_ways_to_fail(*shapes[i], *shapes[j]))
    )
    if kept is None:
        return None
    named = in_one_order(branches, shapes)
    return [{"allOf": [named[i], *failing]} if failing else named[i] for i, failing in kept]


def object_shapes(branches: list[dict], default_open: bool) -> list[tuple] | None:
    """Each object branch of plain member keywords (``properties``,
    ``required``, a boolean ``additionalProperties``) as ``(properties,
    required, open)``; ``None`` when a branch has other keywords."""
    plain = {"type", "properties", "required", "additionalProperties"}
    shapes = []
    for b in branches:
        rest = set(b) - plain - annotation_keywords(b)
        additional = b.get("additionalProperties", default_open)
        if takes_all(additional):
            additional = True
        properties = b.get("properties", {})
        if rest or additional not in (True, False) or not isinstance(properties, dict):
            return None
        shapes.append((properties, list(dict.fromkeys(b.get("required", []))), additional))
    return shapes


def in_one_order(branches: list[dict], shapes: list[tuple]) -> list[dict]:
    """The branches, each open one declaring every name any branch names
    (``True`` for those not its own: an allowed name, so no value changes)
    after its own and those it requires: one order for the members, so every
    branch spells a member another names at the same place (``instance_text``'s)."""
    order = [n for b in branches for n in members_declared(b)]
    out = []
    for branch, (mine, have, open_b) in zip(branches, shapes, strict=True):
        if open_b:
            named = {**mine, **{n: True for n in [*have, *order] if n not in mine}}
            branch = {**branch, "properties": named}
        out.append(branch)
    return out


def apart(ways: list | None) -> list | None:
    """Ways an object fails a schema (``_ways_to_fail``'s, the object ones
    of ``_type_failures``) made disjoint, their union unchanged: each way
    with the ones before it negated (``_negated_way``). Overlapping ways
    would make the lowered grammar ambiguous (a document matching two of
    them), which an LR parser cannot take."""
    if not ways or ways == [True]:
        return ways
    out, negated = [], []
    for way in ways:
        if negated:  # (typed as the way is: callers split the ways by type)
            typed = {"type": way["type"]} if "type" in way else {}
            out.append({**typed, "allOf": [*negated, way]})
        else:
            out.append(way)
        negated.append(_negated_way(way))
    return out


def _negated_way(way: dict) -> dict:
    """The objects that do not fail ``way`` (one of the forms of
    ``_ways_to_fail`` and ``_type_failures``: a member absent, present, or
    present with a rejected value; too few or too many members)."""
    typed = {"type": way["type"]} if "type" in way else {}
    if "minProperties" in way:  # too many -> at most that many
        return {**typed, "maxProperties": way["minProperties"] - 1}
    if "maxProperties" in way:  # too few -> at least that many
        return {**typed, "minProperties": way["maxProperties"] + 1}
    (name,) = way.get("required") or way["properties"]
    value = way.get("properties", {}).get(name)
    if "required" not in way:  # absent -> present
        return {**typed, "required": [name]}
    if value is None:  # present -> absent
        return {**typed, "properties": {name: False}}
    return {**typed, "properties": {name: value["not"]}}  # present and failing -> absent or passing


def _ways_to_fail(
    mine: dict, have: list, open_i: bool, theirs: dict, needs: list, open_j: bool
) -> list | None:
    """The schemas whose union is "a value of branch i (``mine`` declared,
    ``have`` required, ``open_i``: other names allowed) fails branch j";
    ``[True]`` when every such value fails j, ``[]`` when none does, ``None``
    when not expressible here (see ``exclusive_objects``)."""
    ways: list = []

    def present(name: str) -> bool:  # whether branch i's values may have the member
        return mine[name] is not False if name in mine else open_i

    for name in needs:
        if name in have:
            continue
        if not present(name):
            return [True]
        ways.append({"properties": {name: False}})
    for name, sub in theirs.items():
        if not present(name) or takes_all(sub):
            continue
        if name in mine and _same_schema(mine[name], sub):
            continue  # (the same subschema: no value of i's fails j's; its negation unneeded)
        if sub is False:
            if name in have:
                return [True]
            ways.append({"required": [name]})
        else:
            ways.append({"required": [name], "properties": {name: {"not": sub}}})
    if not open_j:
        if any(n not in theirs for n in have):
            return [True]  # (a member i requires is one j excludes)
        if open_i:
            return None
        outside = [n for n in mine if n not in theirs and mine[n] is not False]
        if any(n in have for n in outside):
            return [True]
        ways += [{"required": [n]} for n in outside]
    return ways


#: The most combinations of absent members ``exclusive_required`` builds per branch.
_MAX_ABSENT_CHOICES = 64


__all__ = [
    "ANY_SHAPE",
    "Shape",
    "apart",
    "closed_names",
    "disjoint_by_schema",
    "exclusive_failing",
    "exclusive_objects",
    "exclusive_required",
    "failures",
    "in_one_order",
    "object_shapes",
    "role_on_type",
    "tag_cases",
    "takes_all",
]
