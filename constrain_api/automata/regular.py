"""The regex AST of a regular constraint, for backends built on automata.

``regular_node(spec, backend=...)`` gives the AST (``parse_regex``'s node
types) of a ``Regex``, a ``Choice`` (an alternation of its literal options)
or a ``JsonSchema`` whose lowering is a regex. Anything else — a grammar, a
schema lowering to a grammar, a construct ``parse_regex`` refuses — raises
``UnsupportedConstraint`` in the backend's name.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import UnsupportedConstraint
from .regex import Literal, Node, alt, parse_regex

if TYPE_CHECKING:  # pragma: no cover
    from ..specs import Constraint

__all__ = ["regular_node"]


def regular_node(spec: Constraint, *, backend: str) -> Node:
    """The AST of ``spec``'s language (see the module docstring)."""
    from ..jsonschema import lower_json_schema  # the front end imports automata

    try:
        if spec.kind == "json_schema":
            lowered = lower_json_schema(spec)
            if lowered.kind != "regex":
                raise UnsupportedConstraint(
                    backend,
                    "JSON schema that lowers to a grammar",
                    "the backend compiles regular constraints only",
                )
            spec = lowered
        if spec.kind == "choice":
            return alt(*(Literal(option) for option in spec.options))
        if spec.kind == "regex":
            return parse_regex(spec.pattern)
    except UnsupportedConstraint as e:
        raise UnsupportedConstraint(backend, e.construct, e.reason) from e
    raise UnsupportedConstraint(backend, f"{spec.kind} constraints", "not a regular constraint")
