"""Vocabulary: exact token bytes from every loader, checked against the tokenizer libraries."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from constrain_api.vocabulary import (
    LLAMA3_PATTERN,
    Vocabulary,
    gpt2_bytes_to_unicode,
    llama3_special_tokens,
)

LLAMA3 = "vocab/llama3/tokenizer.model"
LLAMA2 = "vocab/llama2/tokenizer.model"
MISTRAL = "vocab/mistral-v3/tokenizer.model"


# ------------------------------------------------------------------ test strings
def _rand_chars(rng: random.Random, lo: int, hi: int, n: int) -> str:
    return "".join(chr(rng.randint(lo, hi)) for _ in range(n))


def _json_value(rng: random.Random, depth: int = 0):
    kind = rng.randrange(7 if depth < 3 else 4)
    if kind == 0:
        return rng.randint(-(10**12), 10**12)
    if kind == 1:
        return round(rng.uniform(-1e6, 1e6), rng.randint(0, 8))
    if kind == 2:
        return rng.choice([True, False, None])
    if kind == 3:
        return "".join(rng.choice('abc xyz"\\\n\té日🙂/') for _ in range(rng.randint(0, 12)))
    if kind in (4, 5):
        return {
            f"k{rng.randint(0, 99)}": _json_value(rng, depth + 1) for _ in range(rng.randint(0, 4))
        }
    return [_json_value(rng, depth + 1) for _ in range(rng.randint(0, 4))]


WORDS = [
    "the",
    "quick",
    "brown",
    "fox",
    "jumps",
    "over",
    "lazy",
    "dog",
    "hello",
    "world",
    "token",
    "byte",
    "constrained",
    "decoding",
    "JSON",
    "schema",
    "grammar",
    "regex",
    "Hello",
    "WORLD",
    "I'm",
    "you're",
    "they'll",
    "we've",
    "don't",
    "it's",
]


def _one(rng: random.Random, kind: int) -> str:
    n = rng.randint(1, 12)
    if kind == 0:  # ASCII words and punctuation
        return " ".join(rng.choice(WORDS) for _ in range(n)) + rng.choice(["", ".", "!", "?"])
    if kind == 1:  # JSON snippets, compact or indented
        value = _json_value(rng)
        indent = rng.choice([None, None, 2, 4])
        return json.dumps(value, ensure_ascii=rng.random() < 0.3, indent=indent)
    if kind == 2:  # whitespace runs
        return "".join(
            rng.choice([" ", "  ", "\t", "\n", "\r\n", "\n\n", "    "]) for _ in range(n)
        )
    if kind == 3:  # text with newlines
        return "\n".join(rng.choice(WORDS) * rng.randint(1, 2) for _ in range(n)) + "\n"
    if kind == 4:  # digits
        return " ".join(str(rng.randint(0, 10 ** rng.randint(1, 15))) for _ in range(n))
    if kind == 5:  # CJK (common and rare)
        return _rand_chars(rng, 0x4E00, 0x9FFF, n) + _rand_chars(rng, 0x3040, 0x30FF, 2)
    if kind == 6:  # emoji, some with skin tones and ZWJ sequences
        out = _rand_chars(rng, 0x1F300, 0x1FAFF, n)
        return out + rng.choice(["", "\U0001f44d\U0001f3fd", "\U0001f468\u200d\U0001f4bb"])
    if kind == 7:  # accented Latin, precomposed and combining
        return _rand_chars(rng, 0xC0, 0x17F, n) + rng.choice(["", "e\u0301", "n\u0303"])
    if kind == 8:  # Cyrillic words
        return " ".join(_rand_chars(rng, 0x430, 0x44F, rng.randint(1, 8)) for _ in range(n))
    if kind == 9:  # rare: controls, astral symbols, Greek, Arabic, special-token look-alikes
        parts = [
            "\x00",
            "\x07",
            "\x7f",
            "\u00a0",
            "\u200b",
            "\ufeff",
            "\U00010348",
            "\U0001d11e",
            "αβγ",
            "مرحبا",
            "<|eot_id|>",
            "</s>",
            "<s>",
            "[INST]",
            "<unk>",
            "<0x0A>",
        ]
        return "".join(rng.choice(parts) for _ in range(n))
    # mixed
    return "".join(_one(rng, rng.randrange(10)) for _ in range(rng.randint(2, 4)))


def sample_strings(count: int, seed: int = 1234) -> list[str]:
    """Deterministic test strings covering the categories above (never empty, no ``▁``)."""
    rng = random.Random(seed)
    out = []
    for k in range(count):
        s = _one(rng, k % 11)
        out.append(s.replace("\u2581", "_") or "x")
    return out


STRINGS = sample_strings(2500)


# --------------------------------------------------------------------- fixtures
@pytest.fixture(scope="module")
def llama3(shared_file) -> Vocabulary:
    return Vocabulary.from_llama3(shared_file(LLAMA3))


@pytest.fixture(scope="module")
def llama2(shared_file) -> Vocabulary:
    return Vocabulary.from_sentencepiece(shared_file(LLAMA2))


@pytest.fixture(scope="module")
def mistral(shared_file) -> Vocabulary:
    return Vocabulary.from_sentencepiece(shared_file(MISTRAL))


@pytest.fixture(scope="module")
def tiktoken_llama3(shared_file):
    """An Encoding built here, independently of the loader."""
    import tiktoken
    import tiktoken.load

    ranks = tiktoken.load.load_tiktoken_bpe(str(shared_file(LLAMA3)))
    return tiktoken.Encoding(
        name="test-llama3",
        pat_str=LLAMA3_PATTERN,
        mergeable_ranks=ranks,
        special_tokens=llama3_special_tokens(),
    )


def _sp(path: Path):
    import sentencepiece as spm

    return spm.SentencePieceProcessor(model_file=str(path))


# ------------------------------------------------------------ plain vocabularies
def test_from_list_basics():
    v = Vocabulary.from_list(["a", b"b", "ab", "é", b"\xc3", "<eos>", ""], eos="<eos>", special=[6])
    assert v.size == len(v) == 7
    assert v.eos_id == 5 and v.eos_ids == frozenset({5})
    assert v.special_ids == frozenset({5, 6})
    assert v.is_special(5) and v.is_special(6) and not v.is_special(0)
    assert v.tokens == (b"a", b"b", b"ab", "é".encode(), b"\xc3", b"", b"")
    assert v.token_bytes(3) == b"\xc3\xa9" and v.token_bytes(5) == b""
    assert v.normal_ids().tolist() == [0, 1, 2, 3, 4]
    assert v.normal_ids().dtype == np.int32
    assert v.decode([2, 5, 4, 1, 6]) == b"ab\xc3b"
    assert v.decode(np.array([0, 1], dtype=np.int64)) == b"ab"
    assert v.decode([]) == b""
    assert v.token_name(5) == "<eos>"
    assert v.token_name(0) == repr(b"a")
    assert v.token_name(6).startswith("<special")
    assert not v.has_encoder
    assert "size=7" in repr(v)


def test_eos_first_is_primary_and_special():
    v = Vocabulary([b"x", b"y", b"<a>", b"<b>"], eos_ids=[3, 2], special_ids=[])
    assert v.eos_id == 3 and v.eos_ids == frozenset({2, 3})
    assert v.special_ids == frozenset({2, 3})
    assert v.tokens[2:] == (b"", b"")
    assert v.token_name(2) == "<a>"
    named = Vocabulary([b"x", b""], eos_ids=[1], names={1: "<|end|>"})
    assert named.token_name(1) == "<|end|>"


def test_errors():
    with pytest.raises(ValueError, match="EOS"):
        Vocabulary([b"a", b"b"], eos_ids=[])
    with pytest.raises(ValueError, match="out of range"):
        Vocabulary([b"a", b"b"], eos_ids=[2])
    with pytest.raises(ValueError, match="out of range"):
        Vocabulary([b"a", b"b"], eos_ids=[1], special_ids=[-1])
    with pytest.raises(ValueError, match="token id 1 has no bytes"):
        Vocabulary([b"a", b"", b"</s>"], eos_ids=[2])
    with pytest.raises(ValueError, match="not in the vocabulary"):
        Vocabulary.from_list(["a", "b"], eos="</s>")
    with pytest.raises(TypeError):
        Vocabulary(["a", "b"], eos_ids=[1])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="at least one token"):
        Vocabulary([], eos_ids=[])
    v = Vocabulary.from_list(["a", "</s>"], eos="</s>")
    with pytest.raises(ValueError, match="no encoder"):
        v.encode("a")
    with pytest.raises(IndexError):
        v.decode([-1])
    with pytest.raises(IndexError):
        v.decode([2])


def test_missing_files(tmp_path: Path):
    missing = tmp_path / "nope.model"
    with pytest.raises(FileNotFoundError):
        Vocabulary.from_tiktoken(missing, {}, eos=0)
    with pytest.raises(FileNotFoundError):
        Vocabulary.from_llama3(missing)
    with pytest.raises(FileNotFoundError):
        Vocabulary.from_sentencepiece(missing)
    with pytest.raises(FileNotFoundError):
        Vocabulary.from_tokenizer_json(tmp_path / "tokenizer.json", eos=0)
    garbage = tmp_path / "garbage.model"
    garbage.write_bytes(b"\x00\x01not a model")
    with pytest.raises(ValueError):
        Vocabulary.from_sentencepiece(garbage)


def test_custom_encoder_is_checked():
    v = Vocabulary.from_list(["a", "b", "</s>"], eos="</s>", encoder=lambda s: [0] * len(s))
    assert v.has_encoder
    assert v.encode("aa") == [0, 0]
    with pytest.raises(ValueError, match="does not reproduce"):
        v.encode("ab")
    assert v.encode("ab", check=False) == [0, 0]


def test_fingerprint_equality_and_hash():
    a = Vocabulary.from_list(["a", "b", "</s>"], eos="</s>", name="one")
    b = Vocabulary.from_list([b"a", b"b", b"</s>"], eos=2, names={2: "EOS"}, name="two")
    c = Vocabulary.from_list(["a", "b", "</s>"], eos="</s>", special=[1])
    d = Vocabulary.from_list(["a", "c", "</s>"], eos="</s>")
    assert a.fingerprint == b.fingerprint and a == b and hash(a) == hash(b)
    assert len({a.fingerprint, c.fingerprint, d.fingerprint}) == 3
    assert a != c and a != d
    assert len({a, b, c, d}) == 3
    assert len(a.fingerprint) == 64 and int(a.fingerprint, 16) >= 0


def test_fingerprint_stable_across_processes():
    here = Vocabulary.from_list(["a", "é", b"\xff", "</s>"], eos="</s>").fingerprint
    module = Path(__file__).resolve().parent.parent / "constrain_api" / "vocabulary.py"
    code = (
        "import importlib.util, sys\n"
        f"spec = importlib.util.spec_from_file_location('vocab_alone', {str(module)!r})\n"
        "m = importlib.util.module_from_spec(spec); sys.modules['vocab_alone'] = m\n"
        "spec.loader.exec_module(m)\n"
        "print(m.Vocabulary.from_list(['a', 'é', b'\\xff', '</s>'], eos='</s>').fingerprint)\n"
    )
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    assert out.stdout.strip() == here


def test_trie_is_cached_and_excludes_specials():
    v = Vocabulary.from_list(["a", "ab", "b", "<s>", "</s>", "ab"], eos="</s>", special=["<s>"])
    t = v.trie()
    assert t is v.trie()
    assert sorted(t.tokens_under(0).tolist()) == v.normal_ids().tolist() == [0, 1, 2, 5]
    assert t.find(b"<") is None
    assert t.tokens_at(t.find(b"ab")).tolist() == [1, 5]


def test_subset():
    v = Vocabulary.from_list(["a", "b", "c", "<s>", "</s>"], eos="</s>", special=["<s>"])
    s = v.subset([3, 2, 0])
    assert s.size == 4
    assert s.tokens == (b"a", b"c", b"", b"")
    assert s.eos_id == 3 and s.special_ids == frozenset({2, 3})
    assert s.token_name(2) == "<s>"


def test_gpt2_alphabet():
    table = gpt2_bytes_to_unicode()
    assert len(table) == 256 and len(set(table.values())) == 256
    assert table[ord("A")] == "A" and table[ord("!")] == "!" and table[0xFF] == "ÿ"
    assert table[0x20] == "Ġ" and table[0x0A] == "Ċ" and table[0x00] == "Ā"
    assert table[0xAD] == "Ń"  # soft hyphen is the last of the 68 remapped bytes
    from tokenizers import pre_tokenizers

    assert set(table.values()) == set(pre_tokenizers.ByteLevel.alphabet())


def test_llama3_special_map():
    m = llama3_special_tokens()
    assert len(m) == 256 and sorted(m.values()) == list(range(128000, 128256))
    assert m["<|begin_of_text|>"] == 128000
    assert m["<|end_of_text|>"] == 128001
    assert m["<|start_header_id|>"] == 128006 and m["<|end_header_id|>"] == 128007
    assert m["<|reserved_special_token_4|>"] == 128008
    assert m["<|eot_id|>"] == 128009
    assert m["<|reserved_special_token_5|>"] == 128010
    assert m["<|reserved_special_token_250|>"] == 128255


# ------------------------------------------------------------------- real: llama3
@pytest.mark.shared
def test_llama3_facts(llama3: Vocabulary):
    assert llama3.size == 128256
    assert llama3.eos_ids == frozenset({128001, 128009}) and llama3.eos_id == 128001
    assert llama3.special_ids == frozenset(range(128000, 128256))
    assert len(llama3.normal_ids()) == 128000
    assert llama3.token_name(128009) == "<|eot_id|>"
    assert llama3.token_name(128000) == "<|begin_of_text|>"
    assert llama3.token_bytes(128009) == b""
    assert llama3.token_bytes(0) == b"!"
    assert llama3.has_encoder
    assert llama3.name == "llama3"


@pytest.mark.shared
def test_llama3_tokens_match_tiktoken(llama3: Vocabulary, tiktoken_llama3):
    enc = tiktoken_llama3
    assert all(enc.decode_single_token_bytes(i) == llama3.token_bytes(i) for i in range(128000))


@pytest.mark.shared
def test_llama3_round_trip(llama3: Vocabulary, tiktoken_llama3):
    for s in STRINGS:
        ids = llama3.encode(s)
        assert llama3.decode(ids) == s.encode("utf-8"), s
        assert ids == tiktoken_llama3.encode_ordinary(s), s
        assert not llama3.special_ids.intersection(ids)
    assert llama3.encode("<|eot_id|>") == tiktoken_llama3.encode_ordinary("<|eot_id|>")


@pytest.mark.shared
def test_llama3_tokens_split_utf8_characters(llama3: Vocabulary):
    partial = {i for i in llama3.normal_ids().tolist() if not _is_utf8(llama3.token_bytes(i))}
    assert len(partial) > 1000  # e.g. b"\xa1", b" \xe7\xa2"
    # find text whose own tokenization uses a token that ends inside a character
    rng = random.Random(7)
    candidates = ["🤗", "龘", "𝄞"] + [_rand_chars(rng, 0x4E00, 0x9FFF, 3) for _ in range(200)]
    found = [s for s in candidates if partial.intersection(llama3.encode(s))]
    assert found, "no test string tokenized with a partial-UTF-8 token"
    for s in found:
        ids = llama3.encode(s)
        assert llama3.decode(ids) == s.encode("utf-8")
        # decoding token by token as text loses information: bytes are the only truth
        as_text = "".join(llama3.token_bytes(i).decode("utf-8", "replace") for i in ids)
        assert as_text != s


def _is_utf8(b: bytes) -> bool:
    try:
        b.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


# ------------------------------------------------------------ real: sentencepiece
@pytest.mark.shared
def test_llama2_facts(llama2: Vocabulary):
    assert llama2.size == 32000
    assert llama2.eos_ids == frozenset({2}) and llama2.eos_id == 2
    assert llama2.special_ids == frozenset({0, 1, 2})  # <unk>, <s>, </s>
    assert llama2.token_name(0) == "<unk>" and llama2.token_name(2) == "</s>"
    # byte fallback pieces <0x00>..<0xFF> are ids 3..258
    assert [llama2.token_bytes(3 + b) for b in range(256)] == [bytes([b]) for b in range(256)]
    assert llama2.token_bytes(13) == b"\n"


@pytest.mark.shared
def test_mistral_facts(mistral: Vocabulary):
    assert mistral.size == 32768
    assert mistral.eos_ids == frozenset({2}) and mistral.eos_id == 2
    # <unk>, <s>, </s> and the control tokens [INST] ... [control_748] (ids 3..750)
    assert mistral.special_ids == frozenset(range(0, 751))
    assert mistral.token_name(3) == "[INST]" and mistral.token_bytes(3) == b""
    # user-defined pieces are ordinary text that SentencePiece matches whole
    assert mistral.token_bytes(770) == b"[REFERENCE_DOC_0]"
    assert mistral.encode("[REFERENCE_DOC_0]") == [770]
    assert [mistral.token_bytes(771 + b) for b in range(256)] == [bytes([b]) for b in range(256)]


@pytest.mark.shared
@pytest.mark.parametrize("which", ["llama2", "mistral"])
def test_sentencepiece_tokens_match_library(which, request, shared_file):
    vocab: Vocabulary = request.getfixturevalue(which)
    sp = _sp(shared_file(LLAMA2 if which == "llama2" else MISTRAL))
    a = sp.piece_to_id("a")
    ids = [i for i in vocab.normal_ids().tolist() if not sp.is_byte(i)]
    # decoding after a plain "a" keeps the token's leading space
    texts = sp.decode([[a, i] for i in ids])
    assert all(
        t == "a" + vocab.token_bytes(i).decode("utf-8") for t, i in zip(texts, ids, strict=True)
    )


@pytest.mark.shared
@pytest.mark.parametrize("which", ["llama2", "mistral"])
def test_sentencepiece_round_trip(which, request, shared_file):
    vocab: Vocabulary = request.getfixturevalue(which)
    sp = _sp(shared_file(LLAMA2 if which == "llama2" else MISTRAL))
    for s, with_prefix in zip(STRINGS, sp.encode(STRINGS), strict=True):
        ids = vocab.encode(s)
        assert vocab.decode(ids) == s.encode("utf-8"), s
        assert not vocab.special_ids.intersection(ids)
        # the library's own encoding (with its dummy prefix) is the same text after a space
        assert vocab.decode(with_prefix) == b" " + s.encode("utf-8"), s
    # no dummy prefix: text starts where it starts
    assert vocab.token_bytes(vocab.encode("hello")[0]).startswith(b"h")
    assert vocab.decode(vocab.encode(" hello")) == b" hello"


@pytest.mark.shared
def test_sentencepiece_byte_fallback_splits_characters(llama2: Vocabulary):
    s = "\U0001f917 \u9f98"  # emoji and a rare CJK character, not pieces of the model
    ids = llama2.encode(s)
    assert llama2.decode(ids) == s.encode("utf-8")
    assert any(len(llama2.token_bytes(i)) == 1 and llama2.token_bytes(i)[0] >= 0x80 for i in ids)


@pytest.mark.shared
def test_sentencepiece_cannot_represent_the_metaspace_character(llama2: Vocabulary):
    with pytest.raises(ValueError, match="does not reproduce"):
        llama2.encode("a\u2581b")


@pytest.mark.shared
def test_tiktoken_loader_options(shared_file):
    path = shared_file(LLAMA3)
    with pytest.raises(ValueError, match="eos"):
        Vocabulary.from_tiktoken(path, llama3_special_tokens())
    v = Vocabulary.from_tiktoken(path, {"<|end|>": 128100}, eos="<|end|>", name="holes")
    assert v.size == 128101 and v.eos_id == 128100
    assert v.special_ids == frozenset(range(128000, 128101))  # unused ids are special holes
    assert v.encode("hello world") == Vocabulary.from_llama3(path).encode("hello world")


# ------------------------------------------------------------------ tokenizer.json
CORPUS = [
    "The quick brown fox jumps over the lazy dog.",
    "Grüße aus Köln — naïve café, déjà vu.",
    "日本語のテキストと中文文本。",
    "emoji 😀🎉 and more 🙂",
    '{"key": [1, 2, 3], "nested": {"a": null, "b": true}}',
    "    indented code\n\treturn x + 1\n",
    "Привет, мир! Как дела?",
]


def _train_byte_level(add_prefix_space: bool = False):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=add_prefix_space)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=500,
        special_tokens=["<|endoftext|>", "<pad>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(CORPUS * 10, trainer)
    tok.add_tokens(["hello world"])  # a non-special added token
    return tok


@pytest.fixture(scope="module")
def byte_level(tmp_path_factory):
    tok = _train_byte_level()
    folder = tmp_path_factory.mktemp("bytelevel")
    tok.save(str(folder / "tokenizer.json"))
    (folder / "tokenizer_config.json").write_text(
        json.dumps({"eos_token": {"content": "<|endoftext|>", "special": True}})
    )
    return tok, folder / "tokenizer.json"


def test_tokenizer_json_byte_level(byte_level):
    tok, path = byte_level
    v = Vocabulary.from_tokenizer_json(path)  # eos from tokenizer_config.json
    assert v.size == tok.get_vocab_size()
    assert v.eos_id == tok.token_to_id("<|endoftext|>")
    assert v.special_ids == frozenset({tok.token_to_id("<|endoftext|>"), tok.token_to_id("<pad>")})
    assert v.token_bytes(tok.token_to_id("hello world")) == b"hello world"
    assert v.token_bytes(tok.token_to_id("Ġ")) == b" "
    # the library's decoder agrees on every token (lossy decode of partial UTF-8 included)
    for i in v.normal_ids().tolist():
        assert tok.decode([i]) == v.token_bytes(i).decode("utf-8", "replace")
    assert any(not _is_utf8(v.token_bytes(i)) for i in v.normal_ids().tolist())
    for s in STRINGS[:600]:
        ids = v.encode(s)
        assert v.decode(ids) == s.encode("utf-8"), s
        if "<|endoftext|>" not in s and "<pad>" not in s:
            assert ids == tok.encode(s, add_special_tokens=False).ids
    # special-token text is encoded as ordinary text
    ids = v.encode("a<|endoftext|>b")
    assert v.decode(ids) == b"a<|endoftext|>b" and v.eos_id not in ids


def test_tokenizer_json_byte_level_prefix_space(tmp_path: Path):
    tok = _train_byte_level(add_prefix_space=True)
    tok.save(str(tmp_path / "tokenizer.json"))
    v = Vocabulary.from_tokenizer_json(tmp_path / "tokenizer.json", eos="<|endoftext|>")
    assert tok.decode(tok.encode("hello").ids) in ("hello", " hello")
    assert v.decode(tok.encode("hello").ids) == b" hello"  # the library adds a space
    assert v.decode(v.encode("hello")) == b"hello"  # encode does not
    for s in STRINGS[:200]:
        assert v.decode(v.encode(s)) == s.encode("utf-8")


def test_tokenizer_json_eos_required(tmp_path: Path):
    tok = _train_byte_level()
    tok.save(str(tmp_path / "tokenizer.json"))
    with pytest.raises(ValueError, match="eos="):
        Vocabulary.from_tokenizer_json(tmp_path / "tokenizer.json")
    v = Vocabulary.from_tokenizer_json(tmp_path / "tokenizer.json", eos=["<pad>", "<|endoftext|>"])
    assert v.eos_id == tok.token_to_id("<pad>") and len(v.eos_ids) == 2
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"eos_token": "<pad>"}))
    assert Vocabulary.from_tokenizer_json(tmp_path / "tokenizer.json").eos_id == v.eos_id


def test_tokenizer_json_unsupported_decoder(tmp_path: Path):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    vocab = {"[UNK]": 0, "[SEP]": 1, "hello": 2, "##s": 3, "world": 4}
    tok = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.decoder = decoders.WordPiece()
    tok.save(str(tmp_path / "tokenizer.json"))
    with pytest.raises(ValueError, match="unsupported decoder type 'WordPiece'"):
        Vocabulary.from_tokenizer_json(tmp_path / "tokenizer.json", eos="[SEP]")
    tok.decoder = None
    tok.save(str(tmp_path / "tokenizer.json"))
    with pytest.raises(ValueError, match="unsupported"):
        Vocabulary.from_tokenizer_json(tmp_path / "tokenizer.json", eos="[SEP]")


def test_tokenizer_json_sentencepiece_style_built_in_process(tmp_path: Path):
    """A BPE with byte fallback, Metaspace pre-tokenizer and the Llama-2 decoder chain."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE(byte_fallback=True, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first")
    tok.decoder = decoders.Sequence(
        [
            decoders.Replace("▁", " "),
            decoders.ByteFallback(),
            decoders.Fuse(),
            decoders.Strip(" ", 1, 0),
        ]
    )
    bytes_pieces = [f"<0x{b:02X}>" for b in range(256)]
    trainer = trainers.BpeTrainer(
        vocab_size=600, special_tokens=["<unk>", "<s>", "</s>", *bytes_pieces], show_progress=False
    )
    tok.train_from_iterator(CORPUS * 10, trainer)
    # the byte pieces must be ordinary model tokens, not special added tokens
    cfg = json.loads(tok.to_str())
    cfg["added_tokens"] = [
        a for a in cfg["added_tokens"] if a["content"] in ("<unk>", "<s>", "</s>")
    ]
    (tmp_path / "tokenizer.json").write_text(json.dumps(cfg))
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"eos_token": "</s>"}))
    v = Vocabulary.from_tokenizer_json(tmp_path / "tokenizer.json")
    lib = Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    assert v.eos_id == lib.token_to_id("</s>")
    assert v.special_ids == frozenset(lib.token_to_id(t) for t in ("<unk>", "<s>", "</s>"))
    assert v.token_bytes(lib.token_to_id("<0x0A>")) == b"\n"
    assert v.token_bytes(lib.token_to_id("<0xE6>")) == b"\xe6"
    assert v.token_bytes(lib.token_to_id("▁")) == b" "
    for s in STRINGS[:400]:
        ids = v.encode(s)
        assert v.decode(ids) == s.encode("utf-8"), s
        if any(t in s for t in ("<s>", "</s>", "<unk>")):
            continue  # the library matches special-token text
        # the library itself prepends "▁" to the text
        assert v.decode(lib.encode(s, add_special_tokens=False).ids) in (
            s.encode("utf-8"),
            b" " + s.encode("utf-8"),
        )

    # transformers 5 spells the dummy prefix of text starting with a space as
    # a normalizer doubling the leading "▁" (Metaspace "first" adds none there)
    cfg["normalizer"] = {
        "type": "Sequence",
        "normalizers": [
            {"type": "Replace", "pattern": {"String": " "}, "content": "▁"},
            {"type": "Replace", "pattern": {"Regex": "\\A▁"}, "content": "▁▁"},
        ],
    }
    (tmp_path / "tokenizer.json").write_text(json.dumps(cfg))
    v5 = Vocabulary.from_tokenizer_json(tmp_path / "tokenizer.json")
    lib5 = Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    assert v5.decode(lib5.encode("   x", add_special_tokens=False).ids) == b"    x"
    for s in ["   \n\n", " a", "  b c", "x  "]:
        assert v5.decode(v5.encode(s)) == s.encode("utf-8"), s


# ----------------------------------------------------------------- transformers
@pytest.fixture(scope="module")
def llama2_converted(shared_file, tmp_path_factory):
    """The Llama-2 SentencePiece model converted to a fast tokenizer by transformers."""
    pytest.importorskip("transformers")
    from transformers import LlamaTokenizer

    folder = tmp_path_factory.mktemp("llama2-hf")
    (folder / "tokenizer.model").symlink_to(shared_file(LLAMA2).resolve())
    return folder, LlamaTokenizer.from_pretrained(str(folder))


@pytest.mark.shared
def test_tokenizer_json_converted_llama2(llama2_converted, llama2: Vocabulary, tmp_path: Path):
    _, hf = llama2_converted
    path = tmp_path / "tokenizer.json"
    hf.backend_tokenizer.save(str(path))
    cfg = json.loads(path.read_text())
    assert cfg["pre_tokenizer"]["type"] == "Metaspace"
    v = Vocabulary.from_tokenizer_json(path, eos="</s>")
    assert v == llama2  # same bytes, specials and EOS as the SentencePiece loader

    # the legacy Llama-2 tokenizer.json: a Prepend("▁") + Replace(" ", "▁") normalizer
    cfg["normalizer"] = {
        "type": "Sequence",
        "normalizers": [
            {"type": "Prepend", "prepend": "▁"},
            {"type": "Replace", "pattern": {"String": " "}, "content": "▁"},
        ],
    }
    cfg["pre_tokenizer"] = None
    legacy_path = tmp_path / "legacy.json"
    legacy_path.write_text(json.dumps(cfg))
    legacy = Vocabulary.from_tokenizer_json(legacy_path, eos=2)
    assert legacy == llama2

    # a Metaspace decoder instead of the Replace/ByteFallback chain
    cfg["decoder"] = {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always"}
    meta_path = tmp_path / "metaspace.json"
    meta_path.write_text(json.dumps(cfg))
    assert Vocabulary.from_tokenizer_json(meta_path, eos=2) == llama2

    for s in STRINGS[::5]:
        want = s.encode("utf-8")
        assert v.decode(v.encode(s)) == want, s
        assert legacy.decode(legacy.encode(s)) == want, s
    assert v.token_bytes(v.encode("hello")[0]).startswith(b"h")
    assert legacy.token_bytes(legacy.encode("hello")[0]).startswith(b"h")


@pytest.mark.shared
def test_from_pretrained_converts_sentencepiece(llama2_converted, llama2: Vocabulary):
    folder, hf = llama2_converted
    v = Vocabulary.from_pretrained(folder)
    assert v == llama2
    assert Vocabulary.from_transformers(hf) == llama2
    for s in STRINGS[:300]:
        assert v.decode(v.encode(s)) == s.encode("utf-8"), s


@pytest.mark.shared
def test_from_transformers_sentencepiece_only_tokenizer(shared_file, llama2: Vocabulary):
    """A slow (SentencePiece) tokenizer without a backend tokenizer, with extra added tokens."""
    pytest.importorskip("transformers")
    from transformers.models.bert_generation.tokenization_bert_generation import (
        BertGenerationTokenizer,
    )

    hf = BertGenerationTokenizer(vocab_file=str(shared_file(LLAMA2)))
    v = Vocabulary.from_transformers(hf)
    assert v.size == len(hf) == 32002
    assert v.eos_id == hf.eos_token_id == 2
    assert v.special_ids == frozenset(hf.all_special_ids)
    assert v.token_name(32001) == "<pad>"
    assert v.tokens[:32000] == llama2.tokens
    for s in STRINGS[:300]:
        assert v.decode(v.encode(s)) == s.encode("utf-8"), s


def test_from_transformers_and_pretrained_byte_level(tmp_path: Path):
    pytest.importorskip("transformers")
    from transformers import PreTrainedTokenizerFast

    hf = PreTrainedTokenizerFast(
        tokenizer_object=_train_byte_level(), eos_token="<|endoftext|>", pad_token="<pad>"
    )
    v = Vocabulary.from_transformers(hf, name="tiny")
    assert v.name == "tiny"
    assert v.eos_id == hf.eos_token_id
    assert v.special_ids == frozenset(hf.all_special_ids)
    hf.save_pretrained(str(tmp_path))
    loaded = Vocabulary.from_pretrained(tmp_path)
    assert loaded == v
    assert Vocabulary.from_pretrained(tmp_path, eos="<pad>").eos_ids == frozenset(
        {hf.eos_token_id, hf.pad_token_id}
    )
    for s in STRINGS[:300]:
        ids = loaded.encode(s)
        assert loaded.decode(ids) == s.encode("utf-8"), s
        assert hf.decode(ids) == s or "<|endoftext|>" in s or "<pad>" in s


def test_from_transformers_unsupported():
    class NotATokenizer:
        eos_token_id = 0
        all_special_ids = (0,)

    with pytest.raises(ValueError, match="unsupported tokenizer"):
        Vocabulary.from_transformers(NotATokenizer())


def test_pickle_keeps_bytes_and_encoder(byte_level, shared_dir):
    import pickle

    _, path = byte_level
    vocabs = [
        Vocabulary.from_list(["a", "b", "</s>"], eos="</s>"),
        Vocabulary.from_tokenizer_json(path),
    ]
    for rel, load in [(LLAMA3, Vocabulary.from_llama3), (LLAMA2, Vocabulary.from_sentencepiece)]:
        if (shared_dir / rel).exists():
            vocabs.append(load(shared_dir / rel))
    for v in vocabs:
        v.trie()
        w = pickle.loads(pickle.dumps(v))
        assert w == v and w.tokens == v.tokens and w.name == v.name
        assert w.trie().num_nodes == v.trie().num_nodes
        if v.has_encoder:
            for s in STRINGS[:50]:
                assert w.encode(s) == v.encode(s)
            assert w.decode(w.encode("x<|endoftext|></s>")) == b"x<|endoftext|></s>"


@pytest.mark.shared
def test_tokenizer_json_converted_llama3(llama3: Vocabulary, shared_file, tmp_path: Path):
    """Byte-level BPE at full size: transformers' tiktoken converter, then tokenizer.json."""
    pytest.importorskip("transformers")
    from transformers.convert_slow_tokenizer import TikTokenConverter

    converter = TikTokenConverter(
        vocab_file=str(shared_file(LLAMA3)),
        pattern=LLAMA3_PATTERN,
        extra_special_tokens=list(llama3_special_tokens()),
    )
    path = tmp_path / "tokenizer.json"
    converter.converted().save(str(path))
    v = Vocabulary.from_tokenizer_json(path, eos=["<|end_of_text|>", "<|eot_id|>"])
    assert v == llama3
    for s in STRINGS[::3]:
        assert v.encode(s) == llama3.encode(s), s


def test_tokenizer_json_unigram(tmp_path: Path):
    """A Unigram model (vocabulary stored as a list) with byte fallback and a Metaspace decoder."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    pieces = [("<unk>", 0.0), ("</s>", 0.0), ("▁", -2.0), ("a", -3.0), ("b", -3.0)]
    pieces += [("▁ab", -1.0), ("ab", -1.5), ("▁a", -2.5)]
    pieces += [(f"<0x{b:02X}>", -10.0) for b in range(256)]
    tok = Tokenizer(models.Unigram(pieces, unk_id=0, byte_fallback=True))
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always")
    tok.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always")
    tok.add_special_tokens(["</s>"])
    tok.save(str(tmp_path / "tokenizer.json"))
    v = Vocabulary.from_tokenizer_json(tmp_path / "tokenizer.json", eos="</s>")
    assert v.size == len(pieces)
    assert v.special_ids == frozenset({0, 1})  # the unk id is special
    assert v.tokens[2:8] == (b" ", b"a", b"b", b" ab", b"ab", b" a")
    assert v.token_bytes(8 + 0xE9) == b"\xe9"
    assert v.decode(tok.encode("ab ab").ids) == b" ab ab"  # the library's prefix space
    for s in ["ab ab", "ba\n", " aab  b", "é ab", "abc"]:
        ids = v.encode(s)
        assert v.decode(ids) == s.encode("utf-8"), s


def _rank_file(path: Path, tokens: list[bytes]) -> Path:
    import base64

    path.write_bytes(b"".join(base64.b64encode(t) + b" %d\n" % i for i, t in enumerate(tokens)))
    return path


def test_a_tiktoken_file_is_read_from_the_file_itself(tmp_path: Path, monkeypatch):
    """tiktoken's loader keeps a copy keyed by the path in its cache directory
    and never compares it with the file: a changed file kept its old tokens
    and a planted copy replaced the vocabulary."""
    import hashlib

    cache = tmp_path / "cache"
    cache.mkdir()
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(cache))
    path = _rank_file(tmp_path / "ranks.tiktoken", [b"a", b"b", b"ab"])
    assert Vocabulary.from_tiktoken(path, {"<eos>": 3}, eos="<eos>").tokens[:3] == (
        b"a",
        b"b",
        b"ab",
    )
    _rank_file(path, [b"x", b"y", b"xy"])  # the file changes
    planted = _rank_file(tmp_path / "planted", [b"p", b"q", b"pq"]).read_bytes()
    (cache / hashlib.sha1(str(path).encode()).hexdigest()).write_bytes(planted)
    vocab = Vocabulary.from_tiktoken(path, {"<eos>": 3}, eos="<eos>")
    assert vocab.tokens[:3] == (b"x", b"y", b"xy")


def test_a_tiktoken_file_with_absurd_ranks_is_refused_before_allocating(tmp_path: Path):
    huge = tmp_path / "huge.tiktoken"
    huge.write_bytes(b"YQ== 1000000000\n")  # 16 bytes asking for a billion slots
    with pytest.raises(ValueError, match="out of proportion"):
        Vocabulary.from_tiktoken(huge, {"<eos>": 0}, eos="<eos>")
    bad = tmp_path / "bad.tiktoken"
    bad.write_bytes(b"YQ== 0\nnot-base64!! 1\n")
    with pytest.raises(ValueError, match="line 2"):
        Vocabulary.from_tiktoken(bad, {"<eos>": 2}, eos="<eos>")
    twice = _rank_file(tmp_path / "twice.tiktoken", [b"a", b"a"])
    with pytest.raises(ValueError, match="appears twice"):
        Vocabulary.from_tiktoken(twice, {"<eos>": 2}, eos="<eos>")


def test_special_bits_are_made_once_per_vocabulary_and_finish_its_rows():
    """Every constraint compiled for a vocabulary shares its ``special_bits``
    (made on first use); another vocabulary has its own."""
    import constrain_api as ca

    v = Vocabulary.from_list([b"a", b"b", b"<eos>", b"<pad>"], eos=2, special=[2, 3])
    w = Vocabulary.from_list([b"a", b"<eos>"], eos=1)
    assert v.special_bits is v.special_bits and w.special_bits is not v.special_bits
    compiled = [ca.get("naive").compile(ca.Regex(r), v) for r in ("a", "b")]
    assert all(c.special_bits is v.special_bits for c in compiled)
    row = np.full(1, -1, dtype=np.int32)
    v.special_bits.finish_row(row, accepting=False)
    assert row.tolist() == [0b0011]  # specials and padding cleared
    w.special_bits.finish_row(row, accepting=True)
    assert row.tolist() == [0b0011]  # its EOS (id 1) set
