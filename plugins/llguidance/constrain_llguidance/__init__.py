"""constrain-api backend ``llguidance``: the Guidance engine behind the Checker protocol."""

from .backend import LLGuidanceBackend

__all__ = ["LLGuidanceBackend"]
