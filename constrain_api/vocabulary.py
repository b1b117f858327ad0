"""Token vocabularies: the exact bytes every token id contributes to the text.

Every backend works on these bytes, never on decoded strings, because a token
can end in the middle of a UTF-8 character. Loaders turn each tokenizer
format into bytes: tiktoken rank files, SentencePiece models (``▁`` and
``<0xNN>`` byte fallback), ``tokenizer.json`` files (byte-level BPE with the
GPT-2 alphabet, or SentencePiece-style decoders) and ``transformers``
tokenizers. Special tokens (EOS, control, unknown, unused) contribute no bytes.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import re
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from .masks import SpecialBits
    from .trie import TokenTrie

__all__ = [
    "LLAMA3_PATTERN",
    "Vocabulary",
    "gpt2_bytes_to_unicode",
    "llama3_special_tokens",
]

#: The Llama-3 pre-tokenizer split pattern (tiktoken ``pat_str``).
LLAMA3_PATTERN = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
    r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)

_SPIECE_SPACE = "\u2581"  # ▁
_BYTE_PIECE = re.compile(r"<0x([0-9A-Fa-f]{2})>")

EosSpec = int | str | Sequence[int | str]


def llama3_special_tokens() -> dict[str, int]:
    """Meta's Llama-3 special tokens: 256 names mapped to ids 128000..128255.

    ``<|begin_of_text|>`` 128000, ``<|end_of_text|>`` 128001,
    ``<|start_header_id|>`` 128006, ``<|end_header_id|>`` 128007,
    ``<|eot_id|>`` 128009; the rest are ``<|reserved_special_token_N|>``.
    """
    names = [
        "<|begin_of_text|>",
        "<|end_of_text|>",
        "<|reserved_special_token_0|>",
        "<|reserved_special_token_1|>",
        "<|reserved_special_token_2|>",
        "<|reserved_special_token_3|>",
        "<|start_header_id|>",
        "<|end_header_id|>",
        "<|reserved_special_token_4|>",
        "<|eot_id|>",
    ]
    names += [f"<|reserved_special_token_{i}|>" for i in range(5, 256 - 5)]
    assert len(names) == 256
    return {name: 128000 + i for i, name in enumerate(names)}


def gpt2_bytes_to_unicode() -> dict[int, str]:
    """The GPT-2 byte-level alphabet: each byte 0..255 -> the character standing for it.

    Printable Latin-1 bytes stand for themselves; the other 68 bytes map, in
    increasing order, to U+0100, U+0101, ... (so the space 0x20 is ``Ġ``).
    """
    printable = [
        *range(ord("!"), ord("~") + 1),
        *range(ord("¡"), ord("¬") + 1),
        *range(ord("®"), ord("ÿ") + 1),
    ]
    table = {b: chr(b) for b in printable}
    extra = 0
    for b in range(256):
        if b not in table:
            table[b] = chr(256 + extra)
            extra += 1
    return dict(sorted(table.items()))


def _ids(spec: Iterable[int] | int, size: int, what: str) -> list[int]:
    items = [spec] if isinstance(spec, int) else list(spec)
    out = []
    for x in items:
        if isinstance(x, bool) or not isinstance(x, (int, np.integer)):
            raise TypeError(f"{what} ids must be integers, got {x!r}")
        i = int(x)
        if not 0 <= i < size:
            raise ValueError(f"{what} id {i} out of range for a vocabulary of {size} tokens")
        out.append(i)
    return out


class Vocabulary:
    """Token id -> exact bytes it contributes to the text, plus EOS and special ids.

    ``tokens[i]`` are the bytes of token ``i``; ids are ``0 .. size - 1``.
    EOS ids are special. Special tokens contribute no bytes (their entry in
    ``tokens`` may hold display text, used only for names). A non-special
    token with empty bytes is an error. ``encoder`` (optional) maps a string to
    the tokenizer's own token ids for it, without BOS/EOS or a dummy-prefix
    space. Instances are immutable; equality and hashing go by
    :attr:`fingerprint`.
    """

    def __init__(
        self,
        tokens: Sequence[bytes],
        eos_ids: Iterable[int],
        special_ids: Iterable[int] = (),
        *,
        names: Mapping[int, str] | None = None,
        encoder: Callable[[str], list[int]] | None = None,
        name: str = "",
    ):
        """Validate and store the vocabulary; see the class docstring for the rules."""
        display: list[bytes] = []
        for i, t in enumerate(tokens):
            if not isinstance(t, (bytes, bytearray, memoryview)):
                raise TypeError(f"token {i} must be bytes, got {type(t).__name__}")
            display.append(bytes(t))
        size = len(display)
        if size == 0:
            raise ValueError("a vocabulary needs at least one token")
        eos = list(dict.fromkeys(_ids(eos_ids, size, "EOS")))
        if not eos:
            raise ValueError("a vocabulary needs at least one EOS id")
        specials = set(_ids(special_ids, size, "special")) | set(eos)
        contributed = list(display)
        for i in specials:
            contributed[i] = b""
        empty = [i for i, t in enumerate(contributed) if not t and i not in specials]
        if empty:
            shown = ", ".join(map(str, empty[:10])) + (" ..." if len(empty) > 10 else "")
            raise ValueError(
                f"token id {empty[0]} has no bytes but is not special "
                f"({len(empty)} such: {shown}); mark empty tokens special"
            )
        self._display = tuple(display)
        self._tokens = tuple(contributed)
        self._eos_id = eos[0]
        self._eos_ids = frozenset(eos)
        self._special_ids = frozenset(specials)
        self._names: dict[int, str] = {}
        for i, n in (names or {}).items():
            (j,) = _ids([i], size, "named")
            self._names[j] = str(n)
        self._encoder = encoder
        self._name = str(name)
        self._normal_ids: np.ndarray | None = None
        self._fingerprint: str | None = None
        self._trie: TokenTrie | None = None
        self._special_bits: SpecialBits | None = None
        self._lock = threading.Lock()

    # ------------------------------------------------------------ basic facts
    @property
    def size(self) -> int:
        """Number of token ids the tokenizer defines (ids are ``0 .. size - 1``)."""
        return len(self._tokens)

    def __len__(self) -> int:
        """Same as :attr:`size`."""
        return len(self._tokens)

    @property
    def name(self) -> str:
        """A label for reports (e.g. the tokenizer's name); not part of equality."""
        return self._name

    @property
    def tokens(self) -> tuple[bytes, ...]:
        """The bytes every id contributes, specials as ``b""``."""
        return self._tokens

    def token_bytes(self, token_id: int) -> bytes:
        """The bytes token ``token_id`` contributes to the text (``b""`` for specials)."""
        if token_id < 0:
            raise IndexError(f"token id {token_id} out of range")
        return self._tokens[token_id]

    @property
    def eos_ids(self) -> frozenset[int]:
        """All end-of-sequence ids."""
        return self._eos_ids

    @property
    def eos_id(self) -> int:
        """The primary EOS id (the first one given)."""
        return self._eos_id

    @property
    def special_ids(self) -> frozenset[int]:
        """Ids that contribute no bytes (EOS included)."""
        return self._special_ids

    def is_special(self, token_id: int) -> bool:
        """Whether ``token_id`` is special (contributes no bytes)."""
        return token_id in self._special_ids

    def normal_ids(self) -> np.ndarray:
        """Sorted ids of the non-special tokens (int32, read-only, cached)."""
        if self._normal_ids is None:
            mask = np.ones(self.size, dtype=bool)
            mask[list(self._special_ids)] = False
            ids = np.flatnonzero(mask).astype(np.int32)
            ids.flags.writeable = False
            self._normal_ids = ids
        return self._normal_ids

    def token_name(self, token_id: int) -> str:
        """A display name: the given name, a special's text, or ``repr`` of the bytes."""
        if token_id < 0 or token_id >= self.size:
            raise IndexError(f"token id {token_id} out of range")
        if token_id in self._names:
            return self._names[token_id]
        if token_id in self._special_ids:
            text = self._display[token_id]
            return text.decode("utf-8", "replace") if text else f"<special:{token_id}>"
        return repr(self._tokens[token_id])

    # ------------------------------------------------------- encode / decode
    def decode(self, ids: Iterable[int]) -> bytes:
        """Concatenate the bytes of ``ids``; special tokens contribute nothing."""
        if isinstance(ids, np.ndarray):
            ids = ids.tolist()
        ids = list(ids)
        if ids and min(ids) < 0:
            raise IndexError(f"token id {min(ids)} out of range")
        toks = self._tokens
        return b"".join([toks[i] for i in ids])

    @property
    def has_encoder(self) -> bool:
        """Whether :meth:`encode` is available."""
        return self._encoder is not None

    def encode(self, text: str, *, check: bool = True) -> list[int]:
        """The tokenizer's own token ids for ``text``: no BOS/EOS, no dummy-prefix space.

        With ``check`` (the default) a ``ValueError`` is raised when the ids'
        bytes do not concatenate to exactly ``text.encode("utf-8")`` (a
        normalizing tokenizer, or a character it cannot represent, such as a
        literal ``▁`` for SentencePiece).
        """
        if self._encoder is None:
            raise ValueError(
                f"vocabulary {self._name or '(unnamed)'} has no encoder; load it with a "
                "tokenizer loader (from_tiktoken, from_sentencepiece, from_tokenizer_json, "
                "from_transformers, from_pretrained) or pass encoder="
            )
        ids = [int(i) for i in self._encoder(text)]
        if check:
            got = self.decode(ids)
            want = text.encode("utf-8")
            if got != want:
                raise ValueError(
                    f"the tokenizer does not reproduce the text exactly: {want[:60]!r} "
                    f"encodes to tokens whose bytes are {got[:60]!r}"
                )
        return ids

    # -------------------------------------------------------------- identity
    @property
    def fingerprint(self) -> str:
        """SHA-256 hex digest of every token's bytes, the special set and the EOS ids.

        Stable across processes; display names, the encoder and the name do not count.
        """
        if self._fingerprint is None:
            h = hashlib.sha256()
            h.update(b"constrain_api.Vocabulary/1\0")
            h.update(self.size.to_bytes(8, "little"))
            h.update(b"".join(len(t).to_bytes(4, "little") + t for t in self._tokens))
            h.update(b"special\0")
            h.update(np.asarray(sorted(self._special_ids), dtype="<i8").tobytes())
            h.update(b"eos\0")
            h.update(self._eos_id.to_bytes(8, "little"))
            h.update(np.asarray(sorted(self._eos_ids), dtype="<i8").tobytes())
            self._fingerprint = h.hexdigest()
        return self._fingerprint

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Vocabulary):
            return NotImplemented
        return self is other or self.fingerprint == other.fingerprint

    def __hash__(self) -> int:
        return hash(self.fingerprint)

    def __repr__(self) -> str:
        eos = ", ".join(self.token_name(i) for i in sorted(self._eos_ids))
        label = f"{self._name!r}, " if self._name else ""
        return (
            f"Vocabulary({label}size={self.size}, eos=[{eos}], specials={len(self._special_ids)})"
        )

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        del state["_lock"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    @property
    def special_bits(self) -> SpecialBits:
        """The bit operations that finish a mask row for this vocabulary
        (special tokens cleared, EOS set when accepting); made once, shared
        by every constraint compiled for it (read-only)."""
        bits = self._special_bits
        if bits is None:
            from .masks import SpecialBits

            bits = self._special_bits = SpecialBits(self)
        return bits

    # ------------------------------------------------------------------ trie
    def trie(self) -> TokenTrie:
        """The byte trie over the normal (non-special) tokens; built once and cached."""
        if self._trie is None:
            with self._lock:
                if self._trie is None:
                    from .trie import TokenTrie

                    toks = self._tokens
                    self._trie = TokenTrie.build((i, toks[i]) for i in self.normal_ids().tolist())
        return self._trie

    def subset(self, ids: Iterable[int]) -> Vocabulary:
        """A smaller vocabulary of the tokens ``ids`` plus the EOS ids, renumbered.

        New id ``k`` is the ``k``-th smallest of ``set(ids) | eos_ids``; bytes,
        specials and names carry over, the encoder does not (its ids would
        differ). Useful to benchmark at several vocabulary sizes.
        """
        keep = sorted(set(_ids(list(ids), self.size, "subset")) | self._eos_ids)
        new_of = {old: new for new, old in enumerate(keep)}
        return Vocabulary(
            [self._display[i] for i in keep],
            [new_of[self._eos_id]] + [new_of[i] for i in sorted(self._eos_ids)],
            [new_of[i] for i in keep if i in self._special_ids],
            names={new_of[i]: n for i, n in self._names.items() if i in new_of},
            name=f"{self._name}[subset {len(keep)}]" if self._name else "",
        )

    # ================================================================ loaders
    @classmethod
    def from_list(
        cls,
        tokens: Sequence[bytes | str],
        eos: EosSpec,
        special: Iterable[int | str] = (),
        *,
        names: Mapping[int, str] | None = None,
        encoder: Callable[[str], list[int]] | None = None,
        name: str = "",
    ) -> Vocabulary:
        """A vocabulary from a plain list; ``str`` items are UTF-8 encoded.

        ``eos`` and ``special`` items are ids, or strings naming a token of the list.
        """
        raw = [t.encode("utf-8") if isinstance(t, str) else bytes(t) for t in tokens]
        index: dict[bytes, int] = {}
        for i, t in enumerate(raw):
            index.setdefault(t, i)

        def lookup(s: str) -> int | None:
            return index.get(s.encode("utf-8"))

        eos_ids = _resolve(eos, lookup, "EOS", len(raw))
        special_ids = _resolve(list(special), lookup, "special", len(raw))
        return cls(raw, eos_ids, special_ids, names=names, encoder=encoder, name=name)

    # ------------------------------------------------------------- tiktoken
    @classmethod
    def from_tiktoken(
        cls,
        path: str | os.PathLike[str],
        special_tokens: Mapping[str, int] | None = None,
        eos: EosSpec | None = None,
        *,
        pattern: str | None = None,
        name: str | None = None,
    ) -> Vocabulary:
        """A vocabulary from a tiktoken rank file (``base64-token rank`` lines).

        Ids are the ranks; ``special_tokens`` maps names to their ids (above
        the ranks). ``eos`` (required) names special tokens or gives ids.
        ``pattern`` is the pre-tokenizer split regex used by :meth:`encode`
        (default: :data:`LLAMA3_PATTERN`). Ids between the ranks and the
        specials that neither defines are special (unused holes).
        """
        import tiktoken

        p = _existing_file(path)
        if eos is None:
            raise ValueError("from_tiktoken needs eos= (a special token name or id)")
        ranks = _read_tiktoken_ranks(p)
        specials = dict(special_tokens or {})
        size = max(max(ranks.values()), max(specials.values(), default=-1)) + 1
        tokens: list[bytes | None] = [None] * size
        for b, r in ranks.items():
            if tokens[r] is not None:
                raise ValueError(f"{p}: rank {r} appears twice")
            tokens[r] = b
        names: dict[int, str] = {}
        for n, i in specials.items():
            if not 0 <= i < size or tokens[i] is not None:
                raise ValueError(f"special token {n!r} id {i} collides with a rank or is negative")
            tokens[i] = n.encode("utf-8")
            names[i] = n
        holes = [i for i, t in enumerate(tokens) if t is None]
        full = [b"" if t is None else t for t in tokens]
        eos_ids = _resolve(eos, specials.get, "EOS", size)
        pat = pattern if pattern is not None else LLAMA3_PATTERN
        label = name if name is not None else p.parent.name or p.stem
        enc = tiktoken.Encoding(
            name=f"constrain_api:{label}",
            pat_str=pat,
            mergeable_ranks=ranks,
            special_tokens=specials,
        )
        return cls(
            full,
            eos_ids,
            [*names, *holes],
            names=names,
            encoder=enc.encode_ordinary,
            name=label,
        )

    @classmethod
    def from_llama3(cls, path: str | os.PathLike[str], *, name: str = "llama3") -> Vocabulary:
        """The Llama-3 vocabulary from Meta's tiktoken ``tokenizer.model``.

        Specials from :func:`llama3_special_tokens`; EOS ``<|end_of_text|>``
        (primary) and ``<|eot_id|>``; split pattern :data:`LLAMA3_PATTERN`.
        """
        return cls.from_tiktoken(
            path,
            llama3_special_tokens(),
            eos=["<|end_of_text|>", "<|eot_id|>"],
            pattern=LLAMA3_PATTERN,
            name=name,
        )

    # --------------------------------------------------------- sentencepiece
    @classmethod
    def from_sentencepiece(
        cls,
        path: str | os.PathLike[str],
        *,
        eos: EosSpec | None = None,
        name: str | None = None,
    ) -> Vocabulary:
        """A vocabulary from a SentencePiece ``.model`` file.

        Control, unknown and unused pieces are special; byte pieces ``<0xNN>``
        are the byte NN; other pieces are their text with ``▁`` read as a
        space. EOS is the model's ``eos_id`` unless ``eos`` (piece names or
        ids) is given. :meth:`encode` uses a copy of the model without the
        dummy-prefix space and without whitespace collapsing.
        """
        p = _existing_file(path)
        label = name if name is not None else p.parent.name or p.stem
        return _from_sentencepiece_proto(cls, p.read_bytes(), eos=eos, name=label)

    # -------------------------------------------------------- tokenizer.json
    @classmethod
    def from_tokenizer_json(
        cls,
        path: str | os.PathLike[str],
        eos: EosSpec | None = None,
        *,
        name: str | None = None,
    ) -> Vocabulary:
        """A vocabulary from a Hugging Face ``tokenizer.json`` (the ``tokenizers`` library).

        Token bytes follow the decoder: ByteLevel (GPT-2 alphabet) or
        SentencePiece-style (Metaspace, Replace ``▁``->space, ByteFallback,
        Fuse, Strip); other decoders raise ``ValueError``. Added tokens marked
        special are special; other added tokens contribute their text.
        Without ``eos``, ``eos_token`` is read from ``tokenizer_config.json``
        beside the file.
        """
        from tokenizers import Tokenizer

        p = _existing_file(path)
        try:
            tok = Tokenizer.from_file(str(p))
        except Exception as exc:
            raise ValueError(f"{p} is not a tokenizer.json file: {exc}") from exc
        if eos is None:
            eos = _eos_from_tokenizer_config(p.parent / "tokenizer_config.json")
            if eos is None:
                raise ValueError(
                    f"no EOS token known for {p}: pass eos= (a token string or id), or put "
                    "a tokenizer_config.json with eos_token beside it"
                )
        label = name if name is not None else p.parent.name or p.stem
        return _from_tokenizers(cls, tok, eos=eos, extra_special=(), name=label)

    @classmethod
    def from_tokenizer(cls, tokenizer: Any, eos: EosSpec, *, name: str = "") -> Vocabulary:
        """A vocabulary from an in-memory ``tokenizers.Tokenizer`` (same rules as
        :meth:`from_tokenizer_json`; ``eos`` is required)."""
        return _from_tokenizers(cls, tokenizer, eos=eos, extra_special=(), name=name)

    # ----------------------------------------------------------- transformers
    @classmethod
    def from_transformers(
        cls,
        tokenizer: Any,
        *,
        eos: EosSpec | None = None,
        name: str | None = None,
    ) -> Vocabulary:
        """A vocabulary from a ``transformers`` tokenizer object.

        Fast tokenizers go through their ``backend_tokenizer`` (the same path
        as :meth:`from_tokenizer_json`); SentencePiece-only tokenizers through
        their model file. EOS is ``tokenizer.eos_token_id`` plus any ``eos``
        given; ``tokenizer.all_special_ids`` and added tokens marked special
        are special.
        """
        label = name if name is not None else str(getattr(tokenizer, "name_or_path", "") or "")
        eos_list: list[int | str] = []
        if getattr(tokenizer, "eos_token_id", None) is not None:
            eos_list.append(int(tokenizer.eos_token_id))
        if eos is not None:
            eos_list += [eos] if isinstance(eos, (int, str)) else list(eos)
        if not eos_list:
            raise ValueError("the tokenizer has no eos_token_id: pass eos= (a token or id)")
        special = [int(i) for i in (getattr(tokenizer, "all_special_ids", None) or [])]
        added = getattr(tokenizer, "added_tokens_decoder", None) or {}

        backend = None
        try:
            backend = tokenizer.backend_tokenizer
        except Exception:
            backend = None
        if backend is not None:
            return _from_tokenizers(cls, backend, eos=eos_list, extra_special=special, name=label)

        proto = _sentencepiece_proto_of(tokenizer)
        if proto is not None:
            overlay = {
                int(i): (str(getattr(t, "content", t)), bool(getattr(t, "special", False)))
                for i, t in added.items()
            }

            def lookup(s: str) -> int | None:
                i = tokenizer.convert_tokens_to_ids(s)
                if i is None or tokenizer.convert_ids_to_tokens(int(i)) != s:
                    return None  # unknown tokens map to the unk id
                return int(i)

            return _from_sentencepiece_proto(
                cls,
                proto,
                eos=_resolve(eos_list, lookup, "EOS", None),
                name=label,
                extra_special=special,
                overlay=overlay,
            )
        raise ValueError(
            f"unsupported tokenizer {type(tokenizer).__name__}: it has neither a "
            "backend_tokenizer (fast tokenizer) nor a SentencePiece model"
        )

    @classmethod
    def from_pretrained(
        cls, name_or_path: str | os.PathLike[str], *, eos: EosSpec | None = None, **kwargs: Any
    ) -> Vocabulary:
        """``transformers.AutoTokenizer.from_pretrained(name_or_path, **kwargs)``, then
        :meth:`from_transformers` (``eos`` adds EOS tokens)."""
        from transformers import AutoTokenizer

        tok = AutoTokenizer.from_pretrained(str(name_or_path), **kwargs)
        return cls.from_transformers(tok, eos=eos, name=str(name_or_path))


# ===================================================================== helpers
def _read_tiktoken_ranks(p: Path) -> dict[bytes, int]:
    """The ``base64-token rank`` lines of ``p``, read from the file itself
    (tiktoken's own loader keeps a copy in ``$TMPDIR/data-gym-cache`` keyed
    by the path and never compares it with the file: a changed or planted
    copy would silently replace the vocabulary). ``ValueError`` for a
    malformed line, a repeated token and a rank out of proportion to the
    file (which would allocate a table that large)."""
    import base64
    import binascii

    lines = p.read_bytes().splitlines()
    bound = 4 * len(lines) + 1024
    ranks: dict[bytes, int] = {}
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            token_b64, rank_text = line.split()
            token, rank = base64.b64decode(token_b64, validate=True), int(rank_text)
        except (ValueError, binascii.Error):
            raise ValueError(f"{p} is not a tiktoken rank file (line {number})") from None
        if not 0 <= rank < bound:
            raise ValueError(
                f"{p}, line {number}: rank {rank} is out of proportion to a file of "
                f"{len(lines)} lines (ranks below {bound} expected)"
            )
        if ranks.setdefault(token, rank) != rank:
            raise ValueError(f"{p}, line {number}: token {token!r} appears twice")
    if not ranks:
        raise ValueError(f"{p} holds no tokens")
    return ranks


def _existing_file(path: str | os.PathLike[str]) -> Path:
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"tokenizer file not found: {p}")
    return p


def _resolve(
    spec: EosSpec | Sequence[int | str],
    lookup: Callable[[str], int | None],
    what: str,
    size: int | None,
) -> list[int]:
    """Turn ids and token strings into ids (order kept)."""
    items = [spec] if isinstance(spec, (int, str)) else list(spec)
    out: list[int] = []
    for x in items:
        if isinstance(x, str):
            i = lookup(x)
            if i is None:
                raise ValueError(f"{what} token {x!r} is not in the vocabulary")
            out.append(int(i))
        elif isinstance(x, (int, np.integer)) and not isinstance(x, bool):
            if size is not None and not 0 <= int(x) < size:
                raise ValueError(f"{what} id {int(x)} out of range for {size} tokens")
            out.append(int(x))
        else:
            raise TypeError(f"{what} must be token strings or ids, got {x!r}")
    return out


def _eos_from_tokenizer_config(path: Path) -> str | None:
    if not path.is_file():
        return None
    try:
        cfg = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(f"cannot read {path}: {exc}") from exc
    tok = cfg.get("eos_token")
    if isinstance(tok, dict):
        tok = tok.get("content")
    return tok if isinstance(tok, str) and tok else None


# ---------------------------------------------------------------- sentencepiece
def _sentencepiece_proto_of(tokenizer: Any) -> bytes | None:
    vocab_file = getattr(tokenizer, "vocab_file", None)
    if isinstance(vocab_file, (str, os.PathLike)) and Path(vocab_file).is_file():
        return Path(vocab_file).read_bytes()
    sp = getattr(tokenizer, "sp_model", None)
    if sp is not None and hasattr(sp, "serialized_model_proto"):
        return bytes(sp.serialized_model_proto())
    return None


def _from_sentencepiece_proto(
    cls: type[Vocabulary],
    data: bytes,
    *,
    eos: EosSpec | None,
    name: str,
    extra_special: Iterable[int] = (),
    overlay: Mapping[int, tuple[str, bool]] | None = None,
) -> Vocabulary:
    """Shared SentencePiece path; ``overlay`` maps ids to (text, special) added tokens."""
    import sentencepiece as spm
    from sentencepiece import sentencepiece_model_pb2

    try:
        sp = spm.SentencePieceProcessor(model_proto=data)
        model = sentencepiece_model_pb2.ModelProto()
        model.ParseFromString(data)
    except Exception as exc:
        raise ValueError(f"not a SentencePiece model: {exc}") from exc
    n = sp.get_piece_size()
    escape = model.normalizer_spec.escape_whitespaces
    tokens: list[bytes] = []
    special: set[int] = set(extra_special)
    names: dict[int, str] = {}
    for i in range(n):
        piece = sp.id_to_piece(i)
        if sp.is_control(i) or sp.is_unknown(i) or sp.is_unused(i):
            tokens.append(piece.encode("utf-8"))
            special.add(i)
            names[i] = piece
        elif sp.is_byte(i):
            m = _BYTE_PIECE.fullmatch(piece)
            if m is None:
                raise ValueError(f"byte piece {i} has unexpected text {piece!r}")
            tokens.append(bytes([int(m.group(1), 16)]))
        else:
            text = piece.replace(_SPIECE_SPACE, " ") if escape else piece
            tokens.append(text.encode("utf-8"))
    # added tokens (transformers): special ones stay special, new ids get their text
    extra: list[bytes | None] = []
    for i, (content, is_special) in (overlay or {}).items():
        if i < 0:
            raise ValueError(f"added token {content!r} has a negative id {i}")
        if i >= n:
            extra.extend([None] * (i + 1 - n - len(extra)))
            extra[i - n] = content.encode("utf-8")
        if is_special:
            special.add(i)
            names[i] = content
    for k, t in enumerate(extra):
        tokens.append(b"" if t is None else t)
        if t is None:
            special.add(n + k)  # an id no added token defines
    special = {i for i in special if 0 <= i < len(tokens)}

    def lookup(s: str) -> int | None:
        i = sp.piece_to_id(s)
        if i == sp.unk_id() and s != sp.id_to_piece(i):
            for j, (content, _) in (overlay or {}).items():
                if content == s:
                    return j
            return None
        return i

    if eos is None:
        if sp.eos_id() < 0:
            raise ValueError("the SentencePiece model defines no EOS piece: pass eos=")
        eos_ids = [sp.eos_id()]
    else:
        eos_ids = _resolve(eos, lookup, "EOS", len(tokens))

    enc_model = sentencepiece_model_pb2.ModelProto()
    enc_model.CopyFrom(model)
    enc_model.normalizer_spec.add_dummy_prefix = False
    enc_model.normalizer_spec.remove_extra_whitespaces = False
    enc_sp = spm.SentencePieceProcessor(model_proto=enc_model.SerializeToString())
    return cls(tokens, eos_ids, special, names=names, encoder=enc_sp.encode, name=name)


# ------------------------------------------------------------------- tokenizers
def _decoder_scheme(cfg: Mapping[str, Any]) -> tuple[str, str, bool]:
    """(kind, space replacement, byte fallback) from a tokenizer.json config.

    kind is ``"byte_level"`` or ``"spiece"``.
    """
    model = cfg.get("model") or {}
    byte_fallback = bool(model.get("byte_fallback", False))

    def flat(node: Any) -> list[dict[str, Any]]:
        if not node:
            return []
        if node.get("type") == "Sequence":
            subs = node.get("decoders") or node.get("pretokenizers") or []
            return [d for s in subs for d in flat(s)]
        return [node]

    decoders = flat(cfg.get("decoder"))
    if not decoders:
        pre = flat(cfg.get("pre_tokenizer"))
        types = {p.get("type") for p in pre}
        if "ByteLevel" in types:
            return "byte_level", " ", False
        for p in pre:
            if p.get("type") == "Metaspace":
                return "spiece", p.get("replacement", _SPIECE_SPACE), byte_fallback
        raise ValueError(
            "unsupported tokenizer: it has no decoder and no ByteLevel or Metaspace "
            "pre-tokenizer, so the bytes of its tokens are unknown"
        )
    types = [d.get("type") for d in decoders]
    if "ByteLevel" in types:
        others = set(types) - {"ByteLevel"}
        if others:
            raise ValueError(f"unsupported decoder type(s) {sorted(others)} beside ByteLevel")
        return "byte_level", " ", False
    replacement: str | None = None
    fused = False
    for d in decoders:
        t = d.get("type")
        if t == "Metaspace":
            replacement = d.get("replacement", _SPIECE_SPACE)
        elif t == "Replace":
            pat = (d.get("pattern") or {}).get("String")
            if d.get("content") != " " or pat is None or len(pat) != 1:
                raise ValueError(f"unsupported Replace decoder {d!r}")
            replacement = pat
        elif t == "ByteFallback":
            byte_fallback = True
        elif t == "Fuse":
            fused = True
        elif t == "Strip":
            # strips the start/end of the whole text once tokens are fused: a
            # decode-time artefact (the dummy-prefix space), not token bytes
            if not fused and len(decoders) > 1:
                raise ValueError("unsupported decoder: Strip applied to each token")
        else:
            raise ValueError(
                f"unsupported decoder type {t!r}: only ByteLevel and SentencePiece-style "
                "decoders (Metaspace, Replace, ByteFallback, Fuse, Strip) are supported"
            )
    if replacement is None:
        raise ValueError(
            f"unsupported decoder {types}: no ByteLevel, Metaspace or Replace(▁, ' ') step"
        )
    return "spiece", replacement, byte_fallback


def _is_leading_double(node: dict[str, Any]) -> bool:
    """A ``Replace`` of a leading ``▁`` by two: the dummy prefix as transformers
    5 spells it for text that already starts with a space, since a Metaspace
    ``prepend_scheme: first`` adds none there."""
    pattern = node.get("pattern") or {}
    regex = pattern.get("Regex") if isinstance(pattern, dict) else None
    if node.get("type") != "Replace" or not isinstance(regex, str):
        return False
    for anchor in ("\\A", "^"):
        mark = regex.removeprefix(anchor)
        if mark != regex and len(mark) == 1 and node.get("content") == mark * 2:
            return True
    return False


def _without_prefix_space(cfg: dict[str, Any]) -> bool:
    """Turn off dummy-prefix spaces in a tokenizer.json config in place; True if changed."""
    changed = False

    def fix_normalizer(node: Any) -> Any:
        nonlocal changed
        if not isinstance(node, dict):
            return node
        if node.get("type") == "Prepend" or _is_leading_double(node):
            changed = True
            return None
        if node.get("type") == "Sequence":
            subs = [fix_normalizer(s) for s in node.get("normalizers", [])]
            node["normalizers"] = [s for s in subs if s is not None]
        return node

    def fix_pre(node: Any) -> None:
        nonlocal changed
        if not isinstance(node, dict):
            return
        t = node.get("type")
        if t == "Sequence":
            for s in node.get("pretokenizers", []):
                fix_pre(s)
        elif t == "Metaspace":
            if node.get("prepend_scheme", "never") != "never":
                node["prepend_scheme"] = "never"
                changed = True
            if node.get("add_prefix_space"):
                node["add_prefix_space"] = False
                changed = True
        elif t == "ByteLevel" and node.get("add_prefix_space"):
            node["add_prefix_space"] = False
            changed = True

    cfg["normalizer"] = fix_normalizer(cfg.get("normalizer"))
    fix_pre(cfg.get("pre_tokenizer"))
    return changed


def _from_tokenizers(
    cls: type[Vocabulary],
    tok: Any,
    *,
    eos: EosSpec,
    extra_special: Iterable[int],
    name: str,
) -> Vocabulary:
    """Shared path for ``tokenizers.Tokenizer`` objects (tokenizer.json and transformers)."""
    raw = tok.to_str()
    cfg = json.loads(raw)
    kind, replacement, byte_fallback = _decoder_scheme(cfg)
    model = cfg.get("model") or {}
    model_vocab = model.get("vocab")
    base: list[tuple[str, int]]
    if isinstance(model_vocab, dict):  # BPE, WordPiece, WordLevel
        base = [(str(t), int(i)) for t, i in model_vocab.items()]
    elif isinstance(model_vocab, list):  # Unigram: [piece, score] in id order
        base = [(str(entry[0]), i) for i, entry in enumerate(model_vocab)]
    else:
        base = list(tok.get_vocab(with_added_tokens=False).items())
    added_tokens = cfg.get("added_tokens") or []
    ids = [i for _, i in base] + [int(a["id"]) for a in added_tokens]
    if not ids:
        raise ValueError("the tokenizer has an empty vocabulary")
    if min(ids) < 0:
        raise ValueError(f"the tokenizer has a negative token id {min(ids)}")
    size = max(ids) + 1
    tokens: list[bytes | None] = [None] * size
    if kind == "byte_level":
        char_to_byte = {c: b for b, c in gpt2_bytes_to_unicode().items()}
        for text, i in base:
            try:
                tokens[i] = bytes([char_to_byte[c] for c in text])
            except KeyError:  # not in the byte alphabet: the decoder keeps its UTF-8
                tokens[i] = text.encode("utf-8")
    else:
        for text, i in base:
            m = _BYTE_PIECE.fullmatch(text) if byte_fallback else None
            if m is not None:
                tokens[i] = bytes([int(m.group(1), 16)])
            else:
                tokens[i] = text.replace(replacement, " ").encode("utf-8")

    special: set[int] = {i for i in extra_special if 0 <= i < size}
    names: dict[int, str] = {}
    for added in added_tokens:
        i = int(added["id"])
        content = str(added["content"])
        tokens[i] = content.encode("utf-8")
        if added.get("special"):
            special.add(i)
            names[i] = content
    unk = model.get("unk_token")
    unk_id = tok.token_to_id(unk) if isinstance(unk, str) else model.get("unk_id")
    if isinstance(unk_id, int) and 0 <= unk_id < size:
        special.add(unk_id)
    holes = [i for i, t in enumerate(tokens) if t is None]
    special.update(holes)
    for i in special:
        names.setdefault(i, (tokens[i] or b"").decode("utf-8", "replace") or f"<special:{i}>")
    full = [b"" if t is None else t for t in tokens]
    eos_ids = _resolve(eos, tok.token_to_id, "EOS", size)

    # a copy of the tokenizer for encode(), without the dummy-prefix space
    enc_cfg = dict(cfg)
    for key in ("normalizer", "pre_tokenizer"):
        enc_cfg[key] = copy.deepcopy(cfg.get(key))
    changed = _without_prefix_space(enc_cfg)
    encoder = _TokenizersEncoder(json.dumps(enc_cfg) if changed else raw)
    return cls(full, eos_ids, special, names=names, encoder=encoder, name=name)


class _TokenizersEncoder:
    """Picklable ``text -> ids`` through a ``tokenizers.Tokenizer`` built (on first use)
    from a tokenizer.json string: no specials added, and text that looks like a
    special token encoded as ordinary text."""

    def __init__(self, config_json: str):
        self._json = config_json
        self._tok: Any = None
        self._lock = threading.Lock()

    def _tokenizer(self) -> Any:
        if self._tok is None:
            with self._lock:
                if self._tok is None:
                    from tokenizers import Tokenizer

                    tok = Tokenizer.from_str(self._json)
                    tok.encode_special_tokens = True
                    self._tok = tok
        return self._tok

    def __call__(self, text: str) -> list[int]:
        return self._tokenizer().encode(text, add_special_tokens=False).ids

    def __getstate__(self) -> dict[str, Any]:
        return {"json": self._json}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["json"])
