"""Subterminal trees on disk, keyed by content (``DominoBackend(cache_dir=...)``).

A tree is a function of four things: the scanner grammar (its terminals'
languages, its rules, the ``%ignore``d terminals), the language of the
position it starts from, the vocabulary, and the code that builds it. A
tree's file is named by a digest of the four: the grammar's terminals by
their patterns where it has them, else by their automata (a lazy
automaton's start terms, ``LazyDFA.state_digest``; a built one's table,
``ByteDFA.digest``); the position by its state's terms (lazy) or by its
number and its automaton's table (built); the vocabulary by its
fingerprint; the code by a digest of the modules that make terms and
trees. None of them depends on the order in
which a process found its states, so a tree built while decoding one
document in one process is found again by another process decoding
another document of the same constraint.

A safe format: one file of plain little-endian int32s per tree behind a
short header (its key, its payload's digest), read with
``numpy.frombuffer`` (nothing is ever unpickled or evaluated), written to
a temporary name and renamed, so a reader never sees half a file. A file
that cannot be read, whose key is not the one asked for, whose digest
fails, or whose numbers do not fit the grammar and the vocabulary is not
used: the tree is built again and the file replaced.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import hashlib
import os
import queue
import threading
import warnings
from pathlib import Path

import numpy as np

from constrain_api import ByteDFA, LazyDFA, automata

from .scanner import BOUNDARY, ScannerGrammar
from .trees import SubterminalTree

#: Bumped whenever a file's layout or meaning changes: older files are not read.
FORMAT = 1

#: A file: these bytes, the key (64 hex digits), the payload's digest (32
#: bytes), the payload: little-endian int32s, ``_META`` numbers first, then
#: the nodes' parents, labels and free groups' sizes, the checked groups'
#: (node, terminal, size) triples, the free groups' data, the checked ones'.
_MAGIC = f"domino-tree-{FORMAT}\n".encode()
_KEY_BYTES, _DIGEST_BYTES = 64, 32
_HEAD = len(_MAGIC) + _KEY_BYTES + _DIGEST_BYTES
#: num_nodes, words, walk_states, sliced, vocabulary size, terminals,
#: checked groups, free data, checked data
_META = 9
_INT32 = np.dtype("<i4")

#: A tree built faster than this is not stored: reading a file back costs
#: 0.1-0.5 ms (opening, checking, unpacking), what a small tree's build does.
STORE_SECONDS = 0.001

#: the largest file read back (a tree's groups are bounded by ``tree_bytes``)
MAX_FILE_BYTES = 1 << 30


@functools.cache
def code_digest() -> bytes:
    """A digest of the source of the modules whose behaviour a stored tree
    records (the automata's terms, the scanner, the trees' walk): a change
    to any of them makes every stored tree a miss. Sources that cannot be
    read (a zipped or frozen install) give a digest of this process alone:
    its trees are then never found by another."""
    from . import kernels, scanner, trees

    h = hashlib.sha256(f"domino trees {FORMAT}".encode() + automata.code_digest())
    try:
        for module in (kernels, scanner, trees):
            h.update(Path(module.__file__).read_bytes())
    except (OSError, TypeError):  # (TypeError: a module without a file)
        h.update(os.urandom(32))
    return h.digest()


def grammar_digest(grammar: ScannerGrammar) -> bytes:
    """A digest of what a scanner grammar's trees depend on: its terminals'
    names and languages (their patterns where the grammar has them, else
    their automata), rules, ignored terminals and start symbol."""
    h = hashlib.sha256(repr((grammar.names, grammar.rules, sorted(grammar.ignore))).encode())
    h.update(repr(grammar.start).encode())
    if grammar.sources is not None:
        h.update(b"sources" + repr(grammar.sources).encode())
        return h.digest()
    for dfa in grammar.dfas:
        if isinstance(dfa, LazyDFA):
            h.update(b"lazy" + (dfa.state_digest(dfa.start) if dfa.start >= 0 else b"empty"))
        elif isinstance(dfa, ByteDFA):
            h.update(b"built" + dfa.digest())
        else:  # (a scanner has no other kind)
            raise TypeError(f"no digest for a {type(dfa).__name__}")
    return h.digest()


class TreeDiskCache:
    """The trees of one compiled constraint in ``folder``: :meth:`find` a
    position's (``None`` when absent or not usable), :meth:`keep` one just
    built (written by a background thread; :func:`flush_tree_writes`
    waits for it); ``loaded``, ``stored`` and ``rejected`` (files found but
    not used) count what happened. The grammar's digest is taken, and its
    folder listed, on the first :meth:`find`: only the files listed then are
    read (a tree another process stores later is found by the next
    compile), and only the terminals with files have their states' digests
    taken (a digest walks the regex parts the state holds: tenths of a
    millisecond for a large one, more than a small tree's build). Callers
    serialize :meth:`find` and :meth:`keep` (the tree builder's lock)."""

    def __init__(
        self,
        folder: str | os.PathLike[str],
        grammar: ScannerGrammar,
        vocab_fingerprint: str,
        vocab_size: int,
        words: int,
        slices: bool = True,
    ):
        self.root = Path(folder) / f"domino-trees-v{FORMAT}"
        self.grammar = grammar
        self._inputs = (vocab_fingerprint, vocab_size, words, slices)
        self.vocab_size, self.words = vocab_size, words
        self._folder: Path | None = None
        self._grammar_key = b""
        self._files: frozenset[str] = frozenset()  # the folder's files when first listed
        self._listed: frozenset[str] = frozenset()  # the terminals with files (tags)
        self._tables: dict[int, bytes] = {}  # built automata's digests, by terminal
        self.loaded = self.stored = self.rejected = 0
        self._warned = self._made = False

    def _open(self) -> Path:
        """The grammar's folder (its digest taken, its files listed, once)."""
        if self._folder is None:
            h = hashlib.sha256(code_digest() + grammar_digest(self.grammar))
            h.update(repr(self._inputs).encode())
            self._grammar_key = h.digest()
            folder = self.root / h.hexdigest()[:32]
            try:
                names = os.listdir(folder)
            except OSError:  # (none yet)
                names = []
            self._files = frozenset(names)
            self._listed = frozenset(name.partition("-")[0] for name in names)
            self._folder = folder
        return self._folder

    @staticmethod
    def _tag(position: tuple[int, int]) -> str:
        return "b" if position == BOUNDARY else str(position[0])

    def key(self, position: tuple[int, int]) -> str:
        """The digest (hex) naming ``position``'s tree: the grammar's, and
        the position's state (``tree_position``'s: relaxed where lazy)."""
        self._open()
        h = hashlib.sha256(self._grammar_key)
        t, q = position
        if position == BOUNDARY:
            h.update(b"boundary")
        else:
            dfa = self.grammar.dfas[t]
            if isinstance(dfa, LazyDFA):
                state = b"lazy" + dfa.state_digest(q)
            else:  # (a state number means something in its own table only)
                table = self._tables.get(t)
                if table is None:
                    table = self._tables[t] = dfa.digest()
                state = b"built" + table + repr(q).encode()
            h.update(repr(t).encode() + b":" + state)
        return h.hexdigest()

    def path(self, position: tuple[int, int], key: str) -> Path:
        """The file of ``position``'s tree, whose key is ``key``."""
        return self._open() / f"{self._tag(position)}-{key[:40]}.tree"

    def find(self, position: tuple[int, int]) -> SubterminalTree | None:
        """``position``'s tree from its file, or ``None`` (no file, or one
        not usable: unreadable, stored under another key, damaged, not
        fitting this grammar and vocabulary, which counts in ``rejected``)."""
        self._open()
        if self._tag(position) not in self._listed:
            return None
        key = self.key(position)
        path = self.path(position, key)
        if path.name not in self._files:  # (opening a file that is not there costs more)
            return None
        try:
            with open(path, "rb") as f:
                # (a file too large to be a tree is not read into memory)
                too_large = os.fstat(f.fileno()).st_size > MAX_FILE_BYTES
                data = b"" if too_large else f.read(MAX_FILE_BYTES + 1)
        except FileNotFoundError:
            return None
        except OSError:
            data = b""
        tree = self._tree(data, key)
        if tree is None:
            self.rejected += 1
            return None
        self.loaded += 1
        return tree

    def keep(self, position: tuple[int, int], tree: SubterminalTree) -> None:
        """Have ``tree`` written as ``position``'s if its build took
        ``STORE_SECONDS`` or more (``tree.seconds``), by the writer thread."""
        if self._warned or tree.seconds < STORE_SECONDS:
            return
        key = self.key(position)
        # (the file's bytes made here: the writer thread then only makes
        # system calls, which release the GIL, instead of contending for it)
        payload = _payload(tree, self.vocab_size, len(self.grammar.names))
        digest = hashlib.blake2b(payload, digest_size=_DIGEST_BYTES).digest()
        _WRITER.put(self, self.path(position, key), _MAGIC + key.encode() + digest + payload)

    def _tree(self, data: bytes, key: str) -> SubterminalTree | None:
        """The tree in ``data`` if it is what :meth:`keep` had written for
        ``key`` and fits this grammar and vocabulary, else ``None``."""
        if (
            len(data) > MAX_FILE_BYTES
            or len(data) < _HEAD + 4 * _META
            or (len(data) - _HEAD) % 4
            or not data.startswith(_MAGIC)
            or data[len(_MAGIC) : len(_MAGIC) + _KEY_BYTES] != key.encode()
        ):
            return None
        payload = memoryview(data)[_HEAD:]
        if (
            hashlib.blake2b(payload, digest_size=_DIGEST_BYTES).digest()
            != data[_HEAD - _DIGEST_BYTES : _HEAD]
        ):
            return None
        numbers = np.frombuffer(payload, dtype=_INT32).astype(np.int32, copy=False)  # (native)
        meta = numbers[:_META].tolist()
        nodes, words, walk_states, sliced, vocab_size, terminals, n_checked, n_free, n_data = meta
        expected = (self.words, self.vocab_size, len(self.grammar.names))
        if (words, vocab_size, terminals) != expected or min(meta) < 0 or nodes < 1:
            return None
        if numbers.size != _META + 3 * nodes + 3 * n_checked + n_free + n_data:
            return None
        parent, label, free_sizes = numbers[_META : _META + 3 * nodes].reshape(3, nodes)
        at = _META + 3 * nodes
        checked = numbers[at : at + 3 * n_checked].reshape(n_checked, 3)
        at += 3 * n_checked
        free_data, checked_data = numbers[at : at + n_free], numbers[at + n_free :]
        where, terms, sizes = checked[:, 0], checked[:, 1], checked[:, 2]
        if not (
            parent[0] == -1
            and label[0] == -1
            and bool(np.all((parent[1:] >= 0) & (parent[1:] < np.arange(1, nodes))))
            and bool(np.all((label[1:] >= 0) & (label[1:] < terminals)))
            and bool(np.all((free_sizes >= -1) & (free_sizes <= words)))
            and bool(np.all((where >= 0) & (where < nodes)))
            and bool(np.all((terms >= 0) & (terms < terminals)))
            and bool(np.all((sizes >= 0) & (sizes <= words)))
            and int(np.maximum(free_sizes, 0).sum()) == n_free
            and int(sizes.sum()) == n_data
        ):
            return None
        tree = SubterminalTree(words=words)
        tree.walk_states, tree.sliced = walk_states, sliced
        children: list[dict[int, int]] = [{} for _ in range(nodes)]
        for node, (up, terminal) in enumerate(zip(parent.tolist(), label.tolist(), strict=True)):
            if node:
                children[up][terminal] = node
        tree.children, tree.label = children, label.tolist()
        groups = []
        for flat, sizes_of in ((free_data, free_sizes), (checked_data, sizes)):
            ids = (sizes_of >= 0) & (sizes_of < words)  # (groups of ids, not packed rows)
            listed = flat[np.repeat(ids, np.maximum(sizes_of, 0))]
            if not bool(np.all((listed >= 0) & (listed < vocab_size))):
                return None  # (token ids that are no tokens)
            ends = np.cumsum(np.maximum(sizes_of, 0)).tolist()
            groups.append(
                [
                    None if n < 0 else flat[end - n : end]
                    for n, end in zip(sizes_of.tolist(), ends, strict=True)
                ]
            )  # (read-only views)
        tree.free = groups[0]
        tree.checked = [[] for _ in range(nodes)]
        for node, terminal, group in zip(where.tolist(), terms.tolist(), groups[1], strict=True):
            tree.checked[node].append((terminal, group))
        tree.freeze()
        return tree

    def write(self, path: Path, data: bytes) -> None:
        """Write a file's ``data`` at ``path`` (to a temporary name, then
        renamed). A folder that cannot be written warns once, and this
        cache writes no more."""
        if self._warned:
            return
        temporary = f"{path}.{os.getpid()}.tmp"  # (one writer thread per process)
        try:
            if not self._made:
                path.parent.mkdir(parents=True, exist_ok=True)
                self._made = True
            fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            try:
                try:
                    view = memoryview(data)
                    while view:  # (a write may take part of it)
                        view = view[os.write(fd, view) :]
                finally:
                    os.close(fd)
                os.replace(temporary, path)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(temporary)
                raise
        except OSError as e:
            self._warned = True
            warnings.warn(
                f"domino: cannot store subterminal trees in {self.root} ({e}); "
                "trees are kept in memory only",
                RuntimeWarning,
                stacklevel=2,
            )
            return
        self.stored += 1


class _Writer:
    """One daemon thread that writes the trees every cache hands it, in
    order, off the decoding thread (file writes release the GIL); pending
    writes are finished at exit. A forked child starts afresh (its parent's
    thread and queue are not its own)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._reset()
        atexit.register(self.join)

    def _reset(self) -> None:
        self._queue: queue.Queue = queue.Queue()
        self._thread: threading.Thread | None = None

    def put(self, cache: TreeDiskCache, path: Path, data: bytes) -> None:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, args=(self._queue,), name="domino-tree-writer", daemon=True
                )
                self._thread.start()
            self._queue.put((cache, path, data))

    def join(self) -> None:
        """Wait until every tree put so far is written."""
        self._queue.join()

    @staticmethod
    def _run(todo: queue.Queue) -> None:
        while True:
            cache, path, data = todo.get()
            try:
                cache.write(path, data)
            except Exception as e:  # (a bug here must not kill the thread)
                warnings.warn(
                    f"domino: a tree was not stored ({e!r})", RuntimeWarning, stacklevel=1
                )
            finally:
                todo.task_done()


_WRITER = _Writer()
os.register_at_fork(after_in_child=_WRITER._reset)


def flush_tree_writes() -> None:
    """Wait until every tree handed to a cache's :meth:`TreeDiskCache.keep` is written."""
    _WRITER.join()


def _payload(tree: SubterminalTree, vocab_size: int, terminals: int) -> bytes:
    """A tree as its file's payload (see ``_MAGIC``)."""
    nodes = tree.num_nodes
    parent = np.full(nodes, -1, dtype=_INT32)
    for node, kids in enumerate(tree.children):
        for _, child in kids:
            parent[child] = node
    free = [group for group in tree.free if group is not None]
    checked = [
        (node, terminal, group)
        for node, groups in enumerate(tree.checked)
        for terminal, group in groups
    ]
    free_data = _joined(free)
    checked_data = _joined([group for _, _, group in checked])
    meta = [
        nodes,
        tree.words,
        tree.walk_states,
        tree.sliced,
        vocab_size,
        terminals,
        len(checked),
        free_data.size,
        checked_data.size,
    ]
    parts = [
        np.array(meta, dtype=_INT32),
        parent,
        np.array(tree.label, dtype=_INT32),
        np.array([-1 if g is None else g.size for g in tree.free], dtype=_INT32),
        np.array([(n, t, g.size) for n, t, g in checked], dtype=_INT32).reshape(-1),
        free_data,
        checked_data,
    ]
    return np.concatenate(parts).astype(_INT32, copy=False).tobytes()


def _joined(groups: list[np.ndarray]) -> np.ndarray:
    if not groups:
        return np.zeros(0, dtype=_INT32)
    return np.concatenate([g.view(np.int32) for g in groups]).astype(_INT32, copy=False)
