"""Entry point of the ``fst`` backend (group ``constrain_api``)."""

from constrain_api import hookimpl

from .backend import FSTBackend


@hookimpl
def constrain_backends():
    """The ``fst`` backend."""
    return [FSTBackend]
