"""Entry point of the ``fsm`` backend (group ``constrain_api``)."""

from constrain_api import hookimpl

from .backend import FSMBackend


@hookimpl
def constrain_backends():
    """The ``fsm`` backend."""
    return [FSMBackend]
