"""The shared decoding loop (needs torch): one loop for every backend.

    >>> from constrain_api.decoding import generate, sample, tiny_model
    >>> result = generate(tiny_model(vocab), vocab, [[vocab.eos_id]], compiled, sample(4))

``generate`` drives any :class:`CausalLM` (``HFCausalLM`` wraps a
``transformers`` model; ``tiny_model`` and ``ScriptedLM`` are made in-process
for tests and the default benchmark). ``ConstrainedLogitsProcessor`` plugs a
compiled constraint into ``transformers``' own ``generate``.
"""

from .decoders import Decoder, Sampling, argmax, beam, beam_sample, sample
from .hf import MODEL_SHAPES, HFCausalLM, from_pretrained, random_model, tiny_model
from .loop import generate
from .model import CausalLM
from .processor import ConstrainedLogitsProcessor
from .results import FINISH_REASONS, Generation, GenerationResult, StepRecord
from .scripted import ScriptedLM

__all__ = [
    "FINISH_REASONS",
    "MODEL_SHAPES",
    "CausalLM",
    "ConstrainedLogitsProcessor",
    "Decoder",
    "Generation",
    "GenerationResult",
    "HFCausalLM",
    "Sampling",
    "ScriptedLM",
    "StepRecord",
    "argmax",
    "beam",
    "beam_sample",
    "from_pretrained",
    "generate",
    "random_model",
    "sample",
    "tiny_model",
]
