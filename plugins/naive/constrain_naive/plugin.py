"""Entry point of the ``naive`` backend (group ``constrain_api``)."""

from constrain_api import hookimpl

from .backend import NaiveBackend


@hookimpl
def constrain_backends():
    """The ``naive`` backend."""
    return [NaiveBackend]
