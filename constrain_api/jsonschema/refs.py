"""``$ref`` resolution: one pass that makes every reference an in-document pointer.

``index_schema(root)`` walks the schema once, tracking base URIs (``$id``,
draft-04 ``id``), and returns a ``SchemaIndex`` whose ``resolve(ref, base)``
turns any reference (``#/$defs/x``, ``#anchor``, ``other.json#/...`` naming
an embedded ``$id``) into a JSON pointer into ``root``. References to
documents that are not embedded raise ``UnsupportedConstraint`` (nothing is
fetched). ``draft`` is read from the root's ``$schema``: up to draft 7,
keywords beside ``$ref`` are ignored, as those drafts say; from 2019-09 on
they apply together with the reference.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urldefrag, urljoin

import jsonschema

from ..errors import ConstraintError, UnsupportedConstraint
from ..specs import _meta_valid_fast

#: Keywords whose value is a schema, a list of schemas or a map of schemas.
SCHEMA_KEYWORDS = {
    "items": "schema_or_list",
    "additionalItems": "schema",
    "prefixItems": "list",
    "contains": "schema",
    "additionalProperties": "schema",
    "unevaluatedProperties": "schema",
    "unevaluatedItems": "schema",
    "propertyNames": "schema",
    "not": "schema",
    "if": "schema",
    "then": "schema",
    "else": "schema",
    "allOf": "list",
    "anyOf": "list",
    "oneOf": "list",
    "properties": "map",
    "patternProperties": "map",
    "$defs": "map",
    "definitions": "map",
    "dependentSchemas": "map",
    "dependencies": "map",  # (drafts 4-7: a schema, or a list of names, per member)
}

_BASE = "urn:constrain-api:root"
_LEGACY = ("draft-03", "draft-04", "draft-06", "draft-07")


def pointer_tokens(pointer: str) -> list[str]:
    """``/a~1b/0`` → ``["a/b", "0"]``."""
    if not pointer:
        return []
    if not pointer.startswith("/"):
        raise ValueError(pointer)
    return [t.replace("~1", "/").replace("~0", "~") for t in pointer[1:].split("/")]


def join_pointer(pointer: str, *tokens: object) -> str:
    """``pointer`` extended by ``tokens`` (escaped)."""
    return pointer + "".join("/" + str(t).replace("~", "~0").replace("/", "~1") for t in tokens)


@dataclass
class SchemaIndex:
    """Where each base URI and anchor of a schema document lives."""

    root: Any
    legacy_ref: bool
    ids: dict[str, str] = field(default_factory=dict)  # absolute URI → pointer
    bases: dict[str, str] = field(default_factory=dict)  # pointer → base URI
    #: the targets a ``$ref`` reaches off the schema keywords' paths (under an
    #: unknown keyword), each checked against the draft's meta-schema once
    off_path: set[str] = field(default_factory=set)

    def at(self, pointer: str, root: Any = None) -> Any:
        """The schema at ``pointer`` (in ``root``, default the indexed one)."""
        node = self.root if root is None else root
        for token in pointer_tokens(pointer):
            node = node[int(token)] if isinstance(node, list) else node[token]
        return node

    def base_of(self, pointer: str) -> str:
        """The base URI in force at ``pointer``."""
        while pointer not in self.bases:
            pointer = pointer[: pointer.rfind("/")]
        return self.bases[pointer]

    def resolve(self, ref: str, pointer: str) -> str:
        """The pointer that ``ref`` (found at ``pointer``) refers to."""
        base = self.base_of(pointer)
        # urljoin does not resolve fragments against non-hierarchical URIs (urn:)
        target = urldefrag(base)[0] + ref if ref.startswith("#") else _join(base, ref, pointer)
        doc, fragment = urldefrag(target)
        if doc not in self.ids:
            raise UnsupportedConstraint(
                "json_schema",
                f"$ref {ref!r} at {pointer or '/'}",
                "remote references are not fetched",
            )
        fragment = unquote(fragment)
        if not fragment or fragment.startswith("/"):
            where = self.ids[doc] + fragment
            try:
                target = self.at(where)
            except (KeyError, IndexError, ValueError, TypeError):
                raise ConstraintError(
                    "json schema", f"$ref {ref!r} points nowhere", pointer or "/"
                ) from None
            if not _through_schema_keywords(self.root, where):
                self._check_unread(target, where)
            return where
        anchor = f"{doc}#{fragment}"
        if anchor not in self.ids:
            raise ConstraintError("json schema", f"$ref {ref!r}: no such anchor", pointer or "/")
        return self.ids[anchor]

    def _check_unread(self, target: Any, where: str) -> None:
        """``ConstraintError`` unless ``target`` is a valid schema of the
        root's draft: a ``$ref`` into a place no schema keyword leads to (an
        unknown keyword's value, ``{"x-types": {"a": {...}}}``) reaches a
        schema the meta-schema check never read, and a malformed one there
        (``required: [[]]``) raised bare ``TypeError``s in the lowering."""
        if where in self.off_path:
            return
        self.off_path.add(where)
        draft = self.root.get("$schema") if isinstance(self.root, dict) else None
        if isinstance(target, dict) and _meta_valid_fast(
            target if draft is None else {**target, "$schema": draft}
        ):
            return
        default = jsonschema.Draft202012Validator
        cls = jsonschema.validators.validator_for(self.root, default=default)
        try:
            cls.check_schema(target)
        except jsonschema.SchemaError as e:
            inner = join_pointer(where, *e.absolute_path)
            raise ConstraintError("json schema", e.message, inner or "/") from None


def subschemas(node: Any, pointer: str = "") -> Iterator[tuple[str, dict]]:
    """``node`` and every schema inside it through the schema keywords
    (``SCHEMA_KEYWORDS``), as ``(pointer, schema)``, objects only, depth
    first; siblings of a ``$ref`` included (the drafts that ignore them
    still hold schemas there, ``definitions`` that references reach)."""
    todo = [(pointer, node)]
    while todo:
        here, node = todo.pop()
        if not isinstance(node, dict):
            continue
        yield here, node
        inside: list[tuple[str, Any]] = []
        for key, shape in SCHEMA_KEYWORDS.items():
            if key not in node:
                continue
            value, at = node[key], join_pointer(here, key)
            if shape == "map" and isinstance(value, dict):
                inside += [(join_pointer(at, name), sub) for name, sub in value.items()]
            elif shape in ("list", "schema_or_list") and isinstance(value, list):
                inside += [(join_pointer(at, i), sub) for i, sub in enumerate(value)]
            elif shape in ("schema", "schema_or_list"):
                inside.append((at, value))
        todo += reversed(inside)  # (popped in the keywords' order: pre-order)


def grafted(doc: Any, pointer: str, value: Any) -> Any:
    """A copy of ``doc`` with ``value`` at ``pointer`` (which must exist):
    the containers on the way are copied, ``doc`` itself is left alone."""
    tokens = pointer_tokens(pointer)
    if not tokens:
        return value
    rest = join_pointer("", *tokens[1:])
    if isinstance(doc, list):
        i = int(tokens[0])
        return [*doc[:i], grafted(doc[i], rest, value), *doc[i + 1 :]]
    return {**doc, tokens[0]: grafted(doc[tokens[0]], rest, value)}


def _through_schema_keywords(root: Any, pointer: str) -> bool:
    """Whether ``pointer`` leads from ``root`` through schema keywords only
    (``/properties/a/items``), so that the meta-schema check read the
    schema there; ``False`` where it passes an unknown keyword (``/x-types/a``)."""
    node, expect = root, "schema"
    for token in pointer_tokens(pointer):
        if expect == "schema":
            if not isinstance(node, dict) or token not in SCHEMA_KEYWORDS:
                return False
            node, expect = node[token], SCHEMA_KEYWORDS[token]
            if expect == "schema_or_list":
                expect = "list" if isinstance(node, list) else "schema"
            continue
        if expect == "map" and isinstance(node, dict):
            node, expect = node[token], "schema"
        elif expect == "list" and isinstance(node, list):
            node, expect = node[int(token)], "schema"
        else:
            return False
    return expect == "schema"


def _join(base: str, reference: str, pointer: str, keyword: str = "$ref") -> str:
    """``reference`` resolved against ``base``; ``ConstraintError`` (naming the
    keyword and where) for one that is no URI reference (``http://[x/``)."""
    try:
        return urljoin(base, reference)
    except ValueError as e:
        raise ConstraintError(
            "json schema", f"{keyword} {reference!r} is not a URI reference: {e}", pointer or "/"
        ) from None


def index_schema(root: Any) -> SchemaIndex:
    """Index ``root``'s ``$id``s and anchors (see the module docstring)."""
    draft = root.get("$schema", "") if isinstance(root, dict) else ""
    index = SchemaIndex(root, legacy_ref=any(d in draft for d in _LEGACY))
    _walk(index, root, "", _BASE)
    index.ids.setdefault(_BASE, "")
    return index


def _walk(index: SchemaIndex, node: Any, pointer: str, base: str) -> None:
    if not isinstance(node, dict):
        return
    if index.legacy_ref and "$ref" in node:
        index.bases.setdefault(pointer, base)
        return  # siblings of $ref, $id included, are ignored up to draft 7
    ident = node.get("$id", node.get("id") if index.legacy_ref else None)
    if isinstance(ident, str):
        keyword = "$id" if "$id" in node else "id"
        uri, fragment = urldefrag(_join(base, ident, pointer, keyword))
        if fragment and not uri:
            uri = base
        if fragment and ident.startswith("#"):  # draft-04/07 plain-name anchor
            index.ids.setdefault(f"{urldefrag(base)[0]}#{fragment}", pointer)
        else:
            base = uri
            index.ids.setdefault(uri, pointer)
    index.bases[pointer] = base
    for key in ("$anchor", "$dynamicAnchor"):
        if isinstance(node.get(key), str):
            index.ids.setdefault(f"{urldefrag(base)[0]}#{node[key]}", pointer)
    for key, shape in SCHEMA_KEYWORDS.items():
        if key not in node:
            continue
        value = node[key]
        here = join_pointer(pointer, key)
        if shape == "map" and isinstance(value, dict):
            for name, sub in value.items():
                _walk(index, sub, join_pointer(here, name), base)
        elif shape in ("list", "schema_or_list") and isinstance(value, list):
            for i, sub in enumerate(value):
                _walk(index, sub, join_pointer(here, i), base)
        elif shape in ("schema", "schema_or_list"):
            _walk(index, value, here, base)
