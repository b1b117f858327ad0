"""Brute-force oracles for the naive backend's tests, independent of its code.

A language is sampled as the set of its strings up to a length bound (by
Python's ``re`` for regexes, by a bottom-up dynamic programme over lengths for
grammars); the allowed tokens after ``text`` are the tokens ``t`` such that
``text + bytes(t)`` is a byte prefix of a sampled string. This equals the true
mask whenever every viable prefix considered can be completed within the
bound — each test picks its bound so that holds.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable
from functools import cache

import constrain_api as ca


def strings_over(alphabet: str, max_len: int) -> Iterable[str]:
    """Every string over ``alphabet`` of length ``<= max_len``."""
    for n in range(max_len + 1):
        for chars in itertools.product(alphabet, repeat=n):
            yield "".join(chars)


def regex_language(pattern: str, alphabet: str, max_len: int) -> set[str]:
    """The strings of length ``<= max_len`` over ``alphabet`` that fully match."""
    compiled = re.compile(pattern)
    return {s for s in strings_over(alphabet, max_len) if compiled.fullmatch(s)}


def regex_viable(pattern: str, data: bytes, alphabet: str, max_completion: int) -> bool:
    """Whether some completion of at most ``max_completion`` characters over
    ``alphabet`` makes ``data`` (bytes, possibly ending inside a character) a
    full match of ``pattern`` under Python's ``re``. Exact when every viable
    prefix completes within that many characters (each test picks it so)."""
    compiled = re.compile(pattern)
    for cut in range(min(4, len(data)) + 1):  # split off an incomplete last character
        head, partial = data[: len(data) - cut], data[len(data) - cut :]
        try:
            text = head.decode()
        except UnicodeDecodeError:
            continue
        firsts = [c for c in alphabet if c.encode().startswith(partial) and c.encode() != partial]
        firsts += _outside(partial, alphabet)
        if not partial:
            firsts = [""]
        elif not firsts:
            continue
        for first in firsts:
            for rest in strings_over(alphabet, max_completion - (1 if first else 0)):
                if compiled.fullmatch(text + first + rest):
                    return True
        return False
    return False


@cache
def _outside(partial: bytes, alphabet: str) -> list[str]:
    """Characters outside ``alphabet`` whose encoding starts with ``partial``:
    the lowest, highest and middle one. The test patterns treat every character
    outside their alphabet alike ([^a], .), so these represent all of them."""
    if not partial:
        return []
    lead = partial[0]
    width = (
        2
        if 0xC2 <= lead <= 0xDF
        else 3
        if 0xE0 <= lead <= 0xEF
        else 4
        if 0xF0 <= lead <= 0xF4
        else 0
    )
    missing = width - len(partial)
    if missing <= 0:
        return []
    tails = [bytes(t) for t in itertools.product(range(0x80, 0xC0), repeat=missing)]
    found = []
    for ordering in (tails, reversed(tails)):
        for tail in ordering:
            try:
                found.append((partial + tail).decode())
                break
            except UnicodeDecodeError:
                continue
    if found:
        middle = chr((ord(found[0]) + ord(found[-1])) // 2)
        if middle.encode().startswith(partial):
            found.append(middle)
    return sorted({c for c in found if c not in alphabet})


def prefix_set(language: Iterable[str]) -> set[bytes]:
    """Every byte prefix of every string's UTF-8 encoding."""
    out = set()
    for s in language:
        data = s.encode()
        out.update(data[:i] for i in range(len(data) + 1))
    return out


def allowed(tokens: list[bytes], normal: Iterable[int], text: bytes, prefixes: set[bytes]):
    """Ids of normal tokens that keep ``text`` a prefix of the sampled language."""
    return {i for i in normal if text + tokens[i] in prefixes}


def grammar_language(
    rules: dict[str, list[list[str]]],
    terminals: dict[str, str | set[str]],
    start: str,
    alphabet: str,
    max_len: int,
) -> set[str]:
    """Sentences of length ``<= max_len`` of a CFG whose terminals are regexes.

    ``rules`` maps a non-terminal to its alternatives (lists of symbols);
    symbols in ``terminals`` are regexes over ``alphabet`` or, given as a set,
    the terminal's strings themselves. Computed bottom-up:
    ``derive(X, n)`` is the set of strings of length exactly ``n`` from ``X``,
    iterated to a fixpoint (left recursion and nullable rules included).
    """
    term_strings = {
        name: set(p)
        if isinstance(p, set)
        else {s for s in strings_over(alphabet, max_len) if re.fullmatch(p, s)}
        for name, p in terminals.items()
    }
    table: dict[tuple[str, int], set[str]] = {
        (x, n): set() for x in rules for n in range(max_len + 1)
    }

    def of(symbol: str, n: int) -> set[str]:
        if symbol in term_strings:
            return {s for s in term_strings[symbol] if len(s) == n}
        return table[(symbol, n)]

    @cache
    def splits(n: int, k: int) -> list[tuple[int, ...]]:
        if k == 0:
            return [()] if n == 0 else []
        return [(i, *rest) for i in range(n + 1) for rest in splits(n - i, k - 1)]

    changed = True
    while changed:
        changed = False
        for x, alternatives in rules.items():
            for n in range(max_len + 1):
                current = table[(x, n)]
                for alt in alternatives:
                    for lengths in splits(n, len(alt)):
                        parts = [of(sym, m) for sym, m in zip(alt, lengths, strict=True)]
                        if not all(parts):
                            continue
                        for combo in itertools.product(*parts):
                            s = "".join(combo)
                            if s not in current:
                                current.add(s)
                                changed = True
    return set().union(*(table[(start, n)] for n in range(max_len + 1)))


def make_vocab(alphabet: str, max_len: int = 2, extra: tuple[bytes, ...] = ()) -> ca.Vocabulary:
    """EOS (id 0), a special <pad> (id 1), then every string over ``alphabet``
    up to ``max_len`` characters, every strict byte prefix/suffix of a
    multi-byte character, and ``extra`` tokens."""
    tokens: list[bytes] = [b"<eos>", b"<pad>"]
    seen = set()
    for n in range(1, max_len + 1):
        for chars in itertools.product(alphabet, repeat=n):
            tokens.append("".join(chars).encode())
    for ch in alphabet:
        data = ch.encode()
        for i in range(1, len(data)):
            tokens.extend([data[:i], data[i:]])
    tokens.extend(extra)
    unique = []
    for t in tokens:
        if t not in seen:
            seen.add(t)
            unique.append(t)
    return ca.Vocabulary.from_list(unique, eos=0, special=[1])


def assert_masks_match(compiled, expected_fn, depth: int) -> int:
    """Walk every token path the expected masks allow, up to ``depth`` tokens,
    comparing mask, accepts, is_accepting and is_finished at each step.
    ``expected_fn(text) -> (allowed ids without EOS, accepting)``."""
    vocab = compiled.vocab
    checked = 0
    stack = [(b"", [])]
    while stack:
        text, path = stack.pop()
        want, accepting = expected_fn(text)
        checker = compiled.checker()
        checker.update(path)
        got = set(checker.mask().allowed_ids().tolist())
        expected = set(want) | (vocab.eos_ids if accepting else set())
        assert got == expected, (text, path, sorted(got ^ expected))
        assert checker.is_accepting() == accepting, text
        assert checker.is_finished() == (not want), text
        refused = [t for t in range(vocab.size) if t not in want and not vocab.is_special(t)]
        for t in [*sorted(want)[:5], *refused[:5], 1]:  # allowed, refused, the special <pad>
            assert checker.accepts(t) == (t in want), (text, t)
        checked += 1
        if len(path) < depth:
            stack.extend((text + vocab.token_bytes(t), [*path, t]) for t in sorted(want))
    return checked
