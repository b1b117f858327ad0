"""constrain-domino: DOMINO's subterminal trees, pruned by an LALR(1) parser."""

from .backend import DominoBackend, DominoChecker, DominoCompiled
from .scanner import ScannerGrammar
from .trees import SubterminalTree, TreeBuilder, VocabTrie, build_tree

__all__ = [
    "DominoBackend",
    "DominoChecker",
    "DominoCompiled",
    "ScannerGrammar",
    "SubterminalTree",
    "TreeBuilder",
    "VocabTrie",
    "build_tree",
]
