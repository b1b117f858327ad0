"""Backend ``fsm``: FSM indexing (Willard & Louf) on outlines-core."""

from .backend import FSMBackend

__all__ = ["FSMBackend"]
