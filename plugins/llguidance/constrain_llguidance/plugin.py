"""Entry point of the ``llguidance`` backend (group ``constrain_api``)."""

from constrain_api import hookimpl

from .backend import LLGuidanceBackend


@hookimpl
def constrain_backends():
    """The ``llguidance`` backend."""
    return [LLGuidanceBackend]
