"""Entry point of the ``xgrammar`` backend (group ``constrain_api``)."""

from constrain_api import hookimpl

from .backend import XGrammarBackend


@hookimpl
def constrain_backends():
    """The ``xgrammar`` backend."""
    return [XGrammarBackend]
