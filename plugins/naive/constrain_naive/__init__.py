"""constrain-naive: full-vocabulary scanning, the exact oracle of constrain-api."""

from .backend import DFAChecker, DFACompiled, EarleyChecker, EarleyCompiled, NaiveBackend
from .earley import EarleyRecognizer

__all__ = [
    "DFAChecker",
    "DFACompiled",
    "EarleyChecker",
    "EarleyCompiled",
    "EarleyRecognizer",
    "NaiveBackend",
]
