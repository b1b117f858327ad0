"""The exceptions of the API. They are part of the contract every backend keeps."""

from __future__ import annotations

from collections.abc import Sequence


class ConstrainError(Exception):
    """Base class of every error this library raises on purpose."""


class ConstraintError(ConstrainError, ValueError):
    """A regex, grammar, schema or predicate is malformed.

    ``what`` names the constraint kind, ``where`` the position (a character
    offset, ``line:column`` or a JSON pointer) when one is known.
    """

    def __init__(self, what: str, message: str, where: str | int | None = None):
        self.what = what
        self.where = where
        self.message = message
        at = f" at {where}" if where is not None else ""
        super().__init__(f"invalid {what}{at}: {message}")


class UnsupportedConstraint(ConstrainError):
    """A backend cannot express this constraint exactly.

    Raised instead of compiling a different language. ``construct`` names the
    feature (a regex construct, a grammar directive, a schema keyword).
    """

    def __init__(self, backend: str, construct: str, reason: str = ""):
        self.backend = backend
        self.construct = construct
        self.reason = reason
        tail = f": {reason}" if reason else ""
        super().__init__(f"backend {backend!r} does not support {construct}{tail}")


class TokenRejected(ConstrainError):
    """``Checker.update`` was given a token the constraint does not allow.

    The checker's state is unchanged. ``index`` is the position of the
    offending token in the sequence passed to ``update``.
    """

    def __init__(self, token_id: int, index: int = 0, reason: str = "not allowed here"):
        self.token_id = token_id
        self.index = index
        super().__init__(f"token {token_id} (position {index} of the update) rejected: {reason}")


class BackendNotFound(ConstrainError, LookupError):
    """No installed backend has this name. The message lists the installed ones
    and the plugins that failed to load (with their errors)."""

    def __init__(self, name: str, installed: Sequence[str], failed: Sequence[str] = ()):
        self.name = name
        self.installed = list(installed)
        self.failed = list(failed)
        listing = ", ".join(sorted(self.installed)) or "none"
        msg = f"no backend named {name!r}; installed backends: {listing}"
        if self.failed:
            msg += "; plugins that failed to load: " + "; ".join(self.failed)
        super().__init__(msg)


class CompileLimitExceeded(ConstrainError):
    """Compilation would exceed a bound (states, memory, seconds).

    ``limit`` names the bound, ``value`` the size reached when it stopped.
    """

    def __init__(self, limit: str, bound: float, value: float | None = None, detail: str = ""):
        self.limit = limit
        self.bound = bound
        self.value = value
        reached = f" (reached {value})" if value is not None else ""
        tail = f": {detail}" if detail else ""
        super().__init__(f"compile limit {limit}={bound} exceeded{reached}{tail}")
