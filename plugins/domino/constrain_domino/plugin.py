"""Entry point of the ``domino`` backend (group ``constrain_api``)."""

from constrain_api import hookimpl

from .backend import DominoBackend


@hookimpl
def constrain_backends():
    """The ``domino`` backend."""
    return [DominoBackend]
