"""The keywords the JSON-schema lowering knows: which can reject a value,
which it refuses by name, which draft defines which, and which apply to one
JSON type only. Any other keyword only annotates."""

from __future__ import annotations

from typing import Any

import jsonschema

#: Keywords the walker lowers. With ``REFUSED``'s (and the lowering's own
#: ``__`` markers) they are the keywords that can reject a value; any other
#: only annotates (or is unknown), and never changes the language.
_HANDLED = {
    "type", "enum", "const", "multipleOf", "maximum", "exclusiveMaximum", "minimum",
    "exclusiveMinimum", "maxLength", "minLength", "pattern", "maxItems", "minItems",
    "uniqueItems", "maxProperties", "minProperties", "required", "allOf", "anyOf",
    "oneOf", "not", "prefixItems", "items", "additionalItems", "properties",
    "patternProperties", "additionalProperties", "propertyNames", "format", "$ref",
    "unevaluatedProperties", "unevaluatedItems", "if", "then", "else", "contains",
    "minContains", "maxContains",
}  # fmt: skip
#: Keywords refused by name, and why, where they remain once the walker has
#: expanded what it can of them (dependencies among a few members).
REFUSED = {
    "dependentRequired": "members required by the presence of others",
    "dependencies": "members required by the presence of others",
    "dependentSchemas": "schemas applied by the presence of members",
    "$dynamicRef": "dynamic scope",
    "$recursiveRef": "dynamic scope",
}
#: The JSON types as ``type`` names them (``integer`` aside).
TYPES = ("null", "boolean", "object", "array", "string", "number")
#: Keywords whose members require others (draft 4-7; 2019-09 on).
DEPENDENCIES = ("dependencies", "dependentRequired", "dependentSchemas")


#: Draft 4's bounds, each with the boolean flag that makes it exclusive
#: (from draft 6 on, ``exclusiveMinimum``/``exclusiveMaximum`` are the bounds).
EXCLUSIVE_FLAGS = {"minimum": "exclusiveMinimum", "maximum": "exclusiveMaximum"}


def keywords_of(draft: Any) -> frozenset[str]:
    """The keywords a ``jsonschema`` validator class's draft defines (its
    ``minContains``/``maxContains`` are read inside ``contains``; draft 4's
    boolean ``exclusiveMinimum``/``exclusiveMaximum`` inside ``minimum``/
    ``maximum``)."""
    extra = {"minContains", "maxContains"} if "unevaluatedItems" in draft.VALIDATORS else set()
    if "exclusiveMinimum" not in draft.VALIDATORS and "minimum" in draft.VALIDATORS:
        extra |= set(EXCLUSIVE_FLAGS.values())
    return frozenset(draft.VALIDATORS) | extra


#: The keywords some draft from 4 to 2020-12 defines and another lacks
#: (``_refuse_other_drafts_keywords``), less those the lowering ignores
#: where the validator does (``additionalItems``) and the dynamic
#: references, refused on their own.
DRAFT_KEYWORDS = frozenset().union(
    *(
        keywords_of(cls)
        for cls in (
            jsonschema.Draft4Validator,
            jsonschema.Draft6Validator,
            jsonschema.Draft7Validator,
            jsonschema.Draft201909Validator,
            jsonschema.Draft202012Validator,
        )
    )
) - {"additionalItems", "$recursiveRef", "$dynamicRef"}


APPLICATORS = {
    "allOf", "anyOf", "oneOf", "not", "$ref", "if", "then", "else", "dependentSchemas",
    "__allOf__",
}  # fmt: skip


def annotation_keywords(s: dict) -> set[str]:
    return {k for k in s if not can_reject({k: s[k]})}


def can_reject(s: dict) -> bool:
    """Whether any keyword of ``s`` can reject a value."""
    return any(k in _HANDLED or k in REFUSED or k.startswith("__") for k in s)


def members_declared(s: dict) -> list[str]:
    """The names ``s`` declares or requires, in that order."""
    properties, required = s.get("properties", {}), s.get("required", [])
    return [*(properties if isinstance(properties, dict) else ()), *required]


#: Applicators whose branches :func:`members_named` reads (the members they
#: name are their branches').
_NAMING_BRANCHES = {"allOf": list, "anyOf": list, "oneOf": list, "not": dict,
                    "if": dict, "then": dict, "else": dict}  # fmt: skip


def members_named(dep: Any, depth: int = 0) -> list[str]:
    """The members a dependent schema names (``properties``, ``required``,
    and those its ``allOf``/``anyOf``/``oneOf``/``not``/conditional
    branches name, in order); one that could name others elsewhere (a
    reference, a pattern, names' schemas) names ``"\0"``, which no schema lists."""
    if not isinstance(dep, dict):
        return []
    naming = APPLICATORS | set(DEPENDENCIES) | {
        "patternProperties", "propertyNames", "unevaluatedProperties",
    }  # fmt: skip
    branches: list[Any] = []
    for k in dep:
        if k not in naming or not can_reject({k: dep[k]}):
            continue
        kind = _NAMING_BRANCHES.get(k)
        if kind is None or not isinstance(dep[k], kind) or depth >= 8:
            return ["\0"]
        branches += dep[k] if kind is list else [dep[k]]
    properties = dep.get("properties", {})
    own = [*(properties if isinstance(properties, dict) else ["\0"]), *dep.get("required", [])]
    return own + [n for b in branches for n in members_named(b, depth + 1)]


def count_keyword(s: dict, key: str, default: int | None = None) -> int | None:
    """A count keyword as an int (``2.0`` is a valid count)."""
    value = s.get(key, default)
    return None if value is None else int(value)


#: Keywords that apply to one JSON type only ("number" with the integers).
KEYWORDS_OF_TYPE = {
    "object": frozenset({
        "properties", "required", "additionalProperties", "patternProperties",
        "minProperties", "maxProperties", "dependencies", "dependentRequired",
        "dependentSchemas", "propertyNames", "unevaluatedProperties",
    }),
    "array": frozenset({
        "items", "prefixItems", "additionalItems", "minItems", "maxItems", "uniqueItems",
        "contains", "minContains", "maxContains", "unevaluatedItems",
    }),
    "string": frozenset({
        "pattern", "__patterns__", "minLength", "maxLength", "format", "__not_string__",
    }),
    "number": frozenset({
        "multipleOf", "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum",
    }),
}  # fmt: skip

__all__ = [
    "APPLICATORS",
    "DEPENDENCIES",
    "DRAFT_KEYWORDS",
    "EXCLUSIVE_FLAGS",
    "KEYWORDS_OF_TYPE",
    "REFUSED",
    "TYPES",
    "annotation_keywords",
    "can_reject",
    "count_keyword",
    "keywords_of",
    "members_declared",
    "members_named",
]
