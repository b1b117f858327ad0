"""Backend ``fst``: constraints as automata composed with a detokenizing transducer (Koo et al.)."""

from .backend import FSTBackend

__all__ = ["FSTBackend"]
