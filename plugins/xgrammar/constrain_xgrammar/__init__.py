"""constrain-api backend ``xgrammar``: the XGrammar engine behind the Checker protocol."""

from .backend import XGrammarBackend

__all__ = ["XGrammarBackend"]
