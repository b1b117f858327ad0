"""Subterminal trees on disk (``DominoBackend(cache_dir=...)``): trees read
back give the masks of trees built (and the oracle's), keys are tight
enough that another grammar or another position never gets a tree not its
own, and a damaged, foreign or unwritable file costs a rebuild, never a
wrong mask."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import numpy as np
import pytest
from constrain_conformance import checks, corpus, paths
from constrain_domino import treecache

import constrain_api as ca

SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 12},
        "tags": {"type": "array", "items": {"enum": ["red", "green"]}},
        "size": {"type": "integer"},
    },
    "required": ["name"],
    "additionalProperties": {"type": "number"},
}
SPECS = {
    # (a grammar's terminals by their patterns; a regex by its automaton's start)
    "json grammar": (
        ca.Grammar(corpus.JSON_GRAMMAR),
        ['{"a": [1, 2.5, {"b": null}], "c": "x y"}', "[true,false]"],
    ),
    "json schema": (
        ca.JsonSchema(SCHEMA),
        ['{"name":"ab","tags":["red"],"extra":2.5}', '{"name":"x y z","size":-3,"more":1e3}'],
    ),
    "regex": (ca.Regex(r"[a-z]{2,30}@(?:[a-z]+\.)+(?:com|org)"), ["ann@mail.example.org"]),
}


@pytest.fixture(scope="module")
def vocab() -> ca.Vocabulary:
    return corpus.small_vocabulary()


@pytest.fixture(autouse=True)
def store_every_tree(monkeypatch):
    """The small vocabulary's trees build in well under ``STORE_SECONDS``."""
    monkeypatch.setattr(treecache, "STORE_SECONDS", 0.0)


def _compile(spec, vocab, folder):
    ca.clear_caches()  # (a first compile: nothing shared with the last one)
    return ca.get("domino", cache_dir=folder).compile(spec, vocab)


def _masks(compiled, paths_) -> list[np.ndarray]:
    """Every mask along the paths (before each token and after the last),
    the writes of the trees built finished."""
    rows = []
    bitmask = ca.allocate_bitmask(1, compiled.vocab.size)
    for path in paths_:
        checker = compiled.checker()
        for step in range(len(path) + 1):
            checker.fill_mask(bitmask, 0)
            rows.append(bitmask[0].copy())
            if step < len(path):
                checker.update([path[step]])
    treecache.flush_tree_writes()
    return rows


def _same(a: list[np.ndarray], b: list[np.ndarray]) -> bool:
    return len(a) == len(b) and all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))


def _files(folder: Path) -> list[Path]:
    return sorted(folder.rglob("*.tree"))


@pytest.mark.parametrize("name", sorted(SPECS))
def test_trees_from_disk_give_the_masks_of_trees_built(vocab, tmp_path, name):
    spec, docs = SPECS[name]
    oracle = ca.get("naive").compile(spec, vocab)
    paths_ = paths.sample_paths(vocab, oracle, docs, name)
    wanted = [m.words for path in paths_ for m in checks.oracle_masks(oracle, path)]
    fresh = _masks(ca.get("domino").compile(spec, vocab), paths_)
    assert _same(fresh, wanted)

    first = _compile(spec, vocab, tmp_path)
    assert _same(_masks(first, paths_), wanted)
    stored = first.tree_disk.stored
    assert stored == first.trees_built == len(_files(tmp_path)) > 1

    second = _compile(spec, vocab, tmp_path)  # (another compile: no tree in memory)
    assert _same(_masks(second, paths_), wanted)
    assert second.trees_built == 0  # every tree came from disk
    assert second.tree_disk.loaded == stored and second.tree_disk.rejected == 0


def test_built_automata_key_their_states_by_table(vocab, tmp_path):
    """Terminals whose automata were built whole (``fsm`` compiled the
    grammar first: ``regex_automaton`` hands domino the built ones) key
    their states by number and table: read back by a compile that gets the
    same built automata; a compile with lazy ones instead gets the
    oracle's masks too (its keys differ: a miss, never another's tree)."""
    from constrain_api import ByteDFA

    spec, docs = SPECS["json grammar"]
    oracle = ca.get("naive").compile(spec, vocab)
    paths_ = paths.sample_paths(vocab, oracle, docs, "built")
    wanted = [m.words for path in paths_ for m in checks.oracle_masks(oracle, path)]

    def compiled_after_fsm():
        ca.clear_caches()
        ca.get("fsm").compile(spec, vocab)
        return ca.get("domino", cache_dir=tmp_path).compile(spec, vocab)

    first = compiled_after_fsm()
    assert any(isinstance(d, ByteDFA) for d in first.grammar.dfas)
    assert _same(_masks(first, paths_), wanted) and first.tree_disk.stored > 0
    again = compiled_after_fsm()
    assert _same(_masks(again, paths_), wanted)
    assert again.trees_built == 0 and again.tree_disk.loaded == first.tree_disk.stored
    lazy = _compile(spec, vocab, tmp_path)
    assert not any(isinstance(d, ByteDFA) for d in lazy.grammar.dfas)
    assert _same(_masks(lazy, paths_), wanted)


def test_a_tree_built_in_under_store_seconds_is_not_stored(vocab, tmp_path, monkeypatch):
    monkeypatch.setattr(treecache, "STORE_SECONDS", 3600.0)
    spec, docs = SPECS["json grammar"]
    compiled = _compile(spec, vocab, tmp_path)
    _masks(compiled, [paths.longest_match(vocab, docs[0])])
    assert compiled.trees_built > 0 and compiled.tree_disk.stored == 0
    assert not _files(tmp_path)


# Two grammars alike but for one terminal: a position inside N has the same
# state (and state digest) in both, but its tree differs (a token "1z"
# completes N and starts S in one only). A key without the grammar's
# terminals would hand one grammar the other's tree.
NUMBER_THEN_WORD = """
start: N S
N: /[0-9]+/
S: /[{letters}]+/
"""
TOKENS = [b"1", b"2", b"z", b"a", b"1z", b"12", b"2a", b"za", b"<eos>"]


def test_another_grammar_never_gets_a_tree_not_its_own(tmp_path):
    vocab = ca.Vocabulary.from_list(TOKENS, eos=["<eos>"], special=["<eos>"])
    wide = ca.Grammar(NUMBER_THEN_WORD.format(letters="a-z"))
    narrow = ca.Grammar(NUMBER_THEN_WORD.format(letters="a-y"))
    path = [TOKENS.index(b"1"), TOKENS.index(b"2")]
    wide_masks = _masks(_compile(wide, vocab, tmp_path), [path])
    narrow_fresh = _masks(ca.get("domino").compile(narrow, vocab), [path])
    assert not _same(wide_masks, narrow_fresh)  # (so the test can tell)
    narrow_compiled = _compile(narrow, vocab, tmp_path)
    assert _same(_masks(narrow_compiled, [path]), narrow_fresh)
    assert narrow_compiled.tree_disk.loaded == 0
    oracle = ca.get("naive").compile(narrow, vocab)
    assert _same(narrow_fresh, [m.words for m in checks.oracle_masks(oracle, path)])


def _damage(files: list[Path]) -> int:
    """Damage the files five ways (garbage, empty, cut short, one payload
    byte flipped, another position's tree in its place); returns how many."""
    assert len(files) >= 6
    files[0].write_bytes(b"not a tree at all" * 10)
    files[1].write_bytes(b"")
    data = files[2].read_bytes()
    files[2].write_bytes(data[: len(data) // 2])
    data = bytearray(files[3].read_bytes())
    data[-1] ^= 0x01
    files[3].write_bytes(bytes(data))
    shutil.copyfile(files[5], files[4])
    return 5


def test_damaged_and_foreign_files_are_rebuilt_and_replaced(vocab, tmp_path):
    spec, docs = SPECS["json schema"]
    oracle = ca.get("naive").compile(spec, vocab)
    paths_ = paths.sample_paths(vocab, oracle, docs, "damaged")
    wanted = [m.words for path in paths_ for m in checks.oracle_masks(oracle, path)]
    first = _compile(spec, vocab, tmp_path)
    assert _same(_masks(first, paths_), wanted)
    damaged = _damage(_files(tmp_path))

    second = _compile(spec, vocab, tmp_path)
    assert _same(_masks(second, paths_), wanted)
    assert second.tree_disk.rejected == damaged
    assert second.trees_built == damaged
    assert second.tree_disk.stored == damaged  # written again

    third = _compile(spec, vocab, tmp_path)
    assert _same(_masks(third, paths_), wanted)
    assert third.trees_built == 0 and third.tree_disk.rejected == 0


def test_a_file_too_large_to_be_a_tree_is_not_read(vocab, tmp_path, monkeypatch):
    """A file past ``MAX_FILE_BYTES`` (here lowered to 1 MiB; a sparse
    file) is rejected by its size, before anything is read into memory."""
    monkeypatch.setattr(treecache, "MAX_FILE_BYTES", 1 << 20)
    spec, docs = SPECS["json grammar"]
    path = paths.longest_match(vocab, docs[0])
    wanted = _masks(_compile(spec, vocab, tmp_path), [path])
    big = _files(tmp_path)[0]
    with open(big, "r+b") as f:
        f.truncate((1 << 20) + 1)
    reads = []
    real_open = open

    def watched_open(file, mode="r", *args, **kwargs):
        handle = real_open(file, mode, *args, **kwargs)
        if Path(file) == big:
            real_read = handle.read
            handle.read = lambda *a: reads.append(a) or real_read(*a)
        return handle

    monkeypatch.setattr("builtins.open", watched_open)
    compiled = _compile(spec, vocab, tmp_path)
    assert _same(_masks(compiled, [path]), wanted)
    assert compiled.tree_disk.rejected == 1 and not reads


def test_a_folder_that_cannot_be_written_warns_and_masks_stay_exact(vocab, tmp_path):
    spec, docs = SPECS["json grammar"]
    not_a_folder = tmp_path / "file"
    not_a_folder.write_text("a file where the cache's folder would be")
    path = paths.longest_match(vocab, docs[0])
    compiled = ca.get("domino", cache_dir=not_a_folder).compile(spec, vocab)
    with pytest.warns(RuntimeWarning, match="cannot store subterminal trees"):
        rows = _masks(compiled, [path])
    assert _same(rows, _masks(ca.get("domino").compile(spec, vocab), [path]))
    assert compiled.tree_disk.stored == 0


# Two terminals whose positions after their first byte read the same rest
# ("b"): the same state digest, but a token "bx" completes A and starts the
# "x" only A is followed by. A key without the position's terminal would
# hand the position in B the tree of the position in A.
SAME_REST = """
start: A X | B Y
A: "ab"
B: "cb"
X: "x"
Y: "y"
"""
REST_TOKENS = [b"a", b"b", b"c", b"x", b"y", b"bx", b"by", b"<eos>"]


def test_another_terminal_never_gets_a_tree_not_its_own(tmp_path):
    vocab = ca.Vocabulary.from_list(REST_TOKENS, eos=["<eos>"], special=["<eos>"])
    spec = ca.Grammar(SAME_REST)
    in_a, in_b = [REST_TOKENS.index(b"a")], [REST_TOKENS.index(b"c")]
    first = _compile(spec, vocab, tmp_path)
    _masks(first, [in_a])  # stores the tree of the position after "a" in A
    dfas = first.grammar.dfas
    a, b = (first.grammar.names.index(name) for name in ("A", "B"))
    after_a, after_c = dfas[a].run(b"a"), dfas[b].run(b"c")
    assert dfas[a].state_digest(after_a) == dfas[b].state_digest(after_c)  # (so the test can tell)
    second = _compile(spec, vocab, tmp_path)
    oracle = ca.get("naive").compile(spec, vocab)
    assert _same(_masks(second, [in_b]), [m.words for m in checks.oracle_masks(oracle, in_b)])


def _forge(path: Path, edit) -> bool:
    """Rewrite a stored tree file as a writer that knows the format would:
    its numbers changed by ``edit`` (False: nothing to change there) and the
    digest made again over them, so only the checks of what the numbers say
    can refuse it."""
    data = path.read_bytes()
    head, payload = data[: treecache._HEAD - treecache._DIGEST_BYTES], data[treecache._HEAD :]
    numbers = np.frombuffer(payload, dtype=treecache._INT32).copy()
    if not edit(numbers):
        return False
    payload = numbers.astype(treecache._INT32).tobytes()
    digest = hashlib.blake2b(payload, digest_size=treecache._DIGEST_BYTES).digest()
    path.write_bytes(head + digest + payload)
    return True


def _another_vocabulary(numbers: np.ndarray) -> bool:
    numbers[4] += 1  # (the vocabulary's size in the header)
    return True


def _an_id_past_the_vocabulary(numbers: np.ndarray) -> bool:
    """The first listed token id (a group of ids, not a packed row) made
    one past the vocabulary."""
    nodes, words, vocab_size, n_checked = (int(numbers[i]) for i in (0, 1, 4, 6))
    free_sizes = numbers[treecache._META + 2 * nodes : treecache._META + 3 * nodes]
    at = treecache._META + 3 * nodes
    checked_sizes = numbers[at : at + 3 * n_checked].reshape(n_checked, 3)[:, 2]
    at += 3 * n_checked  # (the free groups' data, then the checked groups')
    for size in [*free_sizes.tolist(), *checked_sizes.tolist()]:
        if 0 < size < words:
            numbers[at] = vocab_size
            return True
        at += max(size, 0)
    return False


@pytest.mark.parametrize("forge", [_another_vocabulary, _an_id_past_the_vocabulary])
def test_a_file_whose_numbers_do_not_fit_is_rebuilt(vocab, tmp_path, forge):
    """Past its digest, a file is read only where what it says fits this
    grammar and vocabulary: a tree for another vocabulary, or one listing a
    token id the vocabulary has not (which the compiled walk would write
    out of its row), is rebuilt, never used."""
    spec, docs = SPECS["json schema"]
    oracle = ca.get("naive").compile(spec, vocab)
    paths_ = paths.sample_paths(vocab, oracle, docs, "forged")
    wanted = [m.words for path in paths_ for m in checks.oracle_masks(oracle, path)]
    _masks(_compile(spec, vocab, tmp_path), paths_)
    forged = sum(_forge(path, forge) for path in _files(tmp_path))
    assert forged > 0
    second = _compile(spec, vocab, tmp_path)
    assert _same(_masks(second, paths_), wanted)
    assert second.tree_disk.rejected == forged and second.trees_built == forged
