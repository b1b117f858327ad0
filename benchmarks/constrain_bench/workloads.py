"""What the throughput suite runs: the seed workloads of the literature, the
ones installed plugins add (``constrain_workloads``), and the vocabularies."""

from __future__ import annotations

import os
from pathlib import Path

from constrain_conformance import corpus

import constrain_api as ca

#: The JSON answer format of DOMINO's GSM8K experiment (our own spelling).
GSM8K_SCHEMA = {
    "type": "object",
    "properties": {
        "reasoning": {"type": "string", "maxLength": 400},
        "answer": {"type": "integer"},
    },
    "required": ["reasoning", "answer"],
    "additionalProperties": False,
}

#: Regexes in the style of the Outlines README examples.
PHONE = r"\+?[1-9][0-9]{7,14}"
EMAIL = r"[a-z0-9._%+-]{1,20}@[a-z0-9-]{1,20}(\.[a-z]{2,6}){1,2}"

SEEDS: tuple[ca.Workload, ...] = (
    ca.Workload(
        "koo-multiple-choice",
        ca.Regex(corpus.MULTIPLE_CHOICE),
        ("The answer is (B).",),
        "Koo et al. C.4: a multiple-choice answer",
    ),
    ca.Workload(
        "koo-iso-date-time",
        ca.Regex(corpus.DATE_TIME),
        ("2024-11-22T01:23:45Z",),
        "Koo et al. C.4: ISO 8601 date-time",
    ),
    ca.Workload(
        "koo-ipv4", ca.Regex(corpus.IPV4), ("192.168.0.1",), "Koo et al. C.4: IPv4 address"
    ),
    ca.Workload(
        "koo-quoted-text",
        ca.Regex(corpus.QUOTED_TEXT),
        ('"The quick brown fox jumps over the dog"',),
        "Koo et al. C.4: free text in quotes (a wide character class)",
    ),
    ca.Workload(
        "koo-json-object",
        ca.JsonSchema(corpus.PERSON_SCHEMA),
        ('{"name":"Ada","age":36,"email":"ada@example.com","tags":["a","c"]}',),
        "Koo et al. C.4: a JSON object schema (lowered to a regex)",
    ),
    ca.Workload(
        "outlines-phone",
        ca.Regex(PHONE),
        ("+4915123456789",),
        "Outlines-style regex: a phone number",
    ),
    ca.Workload(
        "outlines-email",
        ca.Regex(EMAIL),
        ("ada.lovelace@example.co.uk",),
        "Outlines-style regex: an e-mail address",
    ),
    ca.Workload(
        "domino-json",
        ca.Grammar(corpus.JSON_GRAMMAR),
        ('{"name": "Ada", "tags": ["x", 1.5e3, true, null], "n": {"k": []}}',),
        "DOMINO: JSON grammar (lark's common terminals)",
    ),
    ca.Workload(
        "domino-gsm8k-json",
        ca.JsonSchema(GSM8K_SCHEMA),
        ('{"reasoning":"She has 3 apples and buys 4 more, so 3 + 4 = 7.","answer":7}',),
        "DOMINO: the GSM8K answer schema",
    ),
    ca.Workload(
        "domino-c-subset",
        ca.Grammar(corpus.C_SUBSET_GRAMMAR),
        (
            "int add(int a, int b) {\n  int c = a + b;\n"
            "  if (c > 10) { return 10; }\n  return c;\n}",
        ),
        "DOMINO: a C subset",
    ),
    ca.Workload(
        "domino-xml",
        ca.Grammar(corpus.XML_SCHEMA_GRAMMAR),
        ("<person><name>Ada Lovelace</name><age>36</age><email>ada@example.com</email></person>",),
        "DOMINO: an XML document constrained by its schema",
    ),
)

#: The subset ``--quick`` runs.
QUICK = ("koo-iso-date-time", "koo-json-object", "domino-json")

VOCABULARIES = ("small", "llama3", "llama2", "mistral-v3")


def workloads(quick: bool = False) -> list[ca.Workload]:
    """The seeds (``QUICK`` only when ``quick``) and the plugins' workloads;
    names must be unique (``ValueError`` names a clash)."""
    chosen = [w for w in SEEDS if not quick or w.name in QUICK]
    seen = {w.name for w in chosen}
    for w in ca.plugin_workloads():
        if w.name in seen:
            raise ValueError(f"two workloads are named {w.name!r}")
        seen.add(w.name)
        chosen.append(w)
    return chosen


def load_vocabulary(name: str) -> ca.Vocabulary:
    """``small`` (a BPE of 400 tokens trained in-process, always available), a
    real vocabulary of the shared folder (``FileNotFoundError`` when absent),
    a ``tokenizer.json`` or SentencePiece ``.model`` file, or else a
    ``transformers`` tokenizer name (loaded with ``Vocabulary.from_pretrained``)."""
    if name == "small":
        return corpus.small_vocabulary()
    if name in corpus.REAL_VOCABULARIES:
        return corpus.real_vocabulary(name)
    path = Path(name)
    if path.suffix == ".json" and path.is_file():
        return ca.Vocabulary.from_tokenizer_json(path)
    if path.suffix == ".model" and path.is_file():
        return ca.Vocabulary.from_sentencepiece(path)
    if path.exists():
        raise ValueError(f"{name}: not a tokenizer.json or SentencePiece .model file")
    return ca.Vocabulary.from_pretrained(name)


def selected_vocabularies() -> list[str]:
    """``$CONSTRAIN_BENCH_VOCABS`` (comma-separated), else small and llama3."""
    names = os.environ.get("CONSTRAIN_BENCH_VOCABS", "small,llama3")
    return [n.strip() for n in names.split(",") if n.strip()]


def selected_backends() -> list[str]:
    """``$CONSTRAIN_BENCH_BACKENDS`` (comma-separated), else every installed backend."""
    names = os.environ.get("CONSTRAIN_BENCH_BACKENDS", "")
    if names.strip():
        return [n.strip() for n in names.split(",") if n.strip()]
    return [info.name for info in ca.available()]


def loop_budget_s() -> float:
    """``$CONSTRAIN_BENCH_LOOP_BUDGET_S``, else 120: the seconds of masks a
    backend's decoding loop on one workload may be projected to take."""
    return float(os.environ.get("CONSTRAIN_BENCH_LOOP_BUDGET_S", "120"))


def loop_rounds(default: int) -> int:
    """``$CONSTRAIN_BENCH_LOOP_ROUNDS``, else ``default``: the rounds of the
    end-to-end stage (pairs of loops; the speculative stage runs twice as
    many). ``ValueError`` unless a positive whole number."""
    text = os.environ.get("CONSTRAIN_BENCH_LOOP_ROUNDS", "").strip()
    if not text:
        return default
    if not text.isdigit() or int(text) < 1:
        raise ValueError(f"CONSTRAIN_BENCH_LOOP_ROUNDS must be a positive integer, got {text!r}")
    return int(text)


def speculative_seconds(default: tuple[float, float]) -> tuple[float, float]:
    """``$CONSTRAIN_BENCH_SPECULATIVE_S`` (``"10"``, or ``"10-30"``), else
    ``default``: how long each case of the speculative stage goes on after
    its rounds, at least, and at most while its speed-up is not yet resolved.
    ``ValueError`` unless one or two non-negative numbers, the least first."""
    text = os.environ.get("CONSTRAIN_BENCH_SPECULATIVE_S", "").strip()
    if not text:
        return default
    try:
        parts = [float(part) for part in text.split("-")]
    except ValueError:
        parts = []
    if len(parts) not in (1, 2) or min(parts) < 0 or parts[0] > parts[-1]:
        raise ValueError(
            "CONSTRAIN_BENCH_SPECULATIVE_S must be seconds (10) or least-most seconds (10-30), "
            f"got {text!r}"
        )
    return parts[0], parts[-1]


def quick() -> bool:
    """Whether ``$CONSTRAIN_BENCH_QUICK`` asks for the short run."""
    return os.environ.get("CONSTRAIN_BENCH_QUICK", "") not in ("", "0")


def loop_model() -> str:
    """``$CONSTRAIN_BENCH_LOOP_MODEL``, else ``tiny``: the model of the
    end-to-end stage, the embedded ``tiny_model`` or a key of
    ``constrain_api.decoding.MODEL_SHAPES`` (random weights, that shape)."""
    return os.environ.get("CONSTRAIN_BENCH_LOOP_MODEL", "tiny")


def loop_prompts(vocab: ca.Vocabulary, batch: int) -> list[list[int]]:
    """The end-to-end stage's prompts: per row, the EOS id, then a normal
    token of its own (so the rows of a batch decode different texts under
    argmax)."""
    normal = vocab.normal_ids()
    return [[vocab.eos_id, int(normal[(97 * i) % len(normal)])] for i in range(batch)]


def build_loop_model(vocab: ca.Vocabulary, name: str):
    """The model ``name`` (as :func:`loop_model` gives it) for ``vocab``:
    the embedded ``tiny_model`` or random weights of that shape, seed 0, on
    CUDA when present."""
    from constrain_api.decoding import random_model, tiny_model

    return tiny_model(vocab, seed=0) if name == "tiny" else random_model(vocab, name, seed=0)
