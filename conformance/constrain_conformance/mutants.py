"""A small mutation check: does a one-line fault in a hot or shared path fail a test?

Each :class:`Mutant` names a file of the repository, a snippet that occurs
in it exactly once, its faulty replacement and the tests that should catch
it. :func:`run_mutant` copies the source tree to a temporary folder, applies
the fault there (the working tree is never touched) and runs the tests
against the copy (``PYTHONPATH`` puts the copied packages first). A mutant
is ``killed`` when the tests fail, ``survived`` when they pass; ``stale``
when its snippet no longer occurs exactly once (the list must follow the
code), ``error`` when pytest could not run (exit status other than 0 or 1)
or ran past the timeout.

``nox -s mutants`` runs :data:`MUTANTS` and writes the outcome into
docs/conformance.md between ``<!-- mutants -->`` markers (the conformance
matrix keeps that block when it is regenerated). Not in CI: it runs the
chosen tests once per mutant (a few minutes).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

__all__ = ["MUTANTS", "Mutant", "Outcome", "report_block", "run_mutant", "write_block"]

BEGIN, END = "<!-- mutants -->", "<!-- /mutants -->"

#: What is not copied: history, environments, build outputs, the docs.
_IGNORED = (".git", ".nox", "build", "dist", "*.egg-info", "__pycache__", "docs", "site")


@dataclass(frozen=True)
class Mutant:
    """A fault: ``old`` (once in ``path``) becomes ``new``; ``tests``: pytest arguments."""

    name: str
    path: str
    old: str
    new: str
    tests: tuple[str, ...]


@dataclass(frozen=True)
class Outcome:
    mutant: Mutant
    status: str  # killed, survived, stale, error
    seconds: float
    detail: str = ""


def _suite(backend: str, selection: str) -> tuple[str, ...]:
    return ("--pyargs", "constrain_conformance.suite", f"--backend={backend}", "-k", selection)


MUTANTS: tuple[Mutant, ...] = (
    Mutant(
        "allOf merges maximum with max",
        "constrain_api/jsonschema/lower.py",
        '"maximum", "maxLength", "maxItems", "maxProperties"):\n            return min(x, y)',
        '"maximum", "maxLength", "maxItems", "maxProperties"):\n            return max(x, y)',
        ("tests/jsonschema/test_judge.py",),
    ),
    Mutant(
        "a listed value beside a draft-7 $ref counts",
        "constrain_api/jsonschema/lower.py",
        'if legacy and "$ref" in s:\n            return None',
        "if False:\n            return None",
        ("tests/jsonschema/test_lowering.py", "-k", "listed or lists or ignores"),
    ),
    Mutant(
        "oneOf's object ways left overlapping",
        "constrain_api/jsonschema/exclusive.py",
        'out.append({**typed, "allOf": [*negated, way]})',
        "out.append(way)",
        ("tests/jsonschema",),
    ),
    Mutant(
        "a tag split drops the tag-absent case",
        "constrain_api/jsonschema/exclusive.py",
        '            if tag not in b.get("required", [])\n',
        "            if False\n",
        ("tests/jsonschema",),
    ),
    Mutant(
        "JSON equality takes true for 1",
        "constrain_api/jsonschema/values.py",
        "if isinstance(a, bool) or isinstance(b, bool):\n"
        "        return type(a) is type(b) and a == b",
        "if isinstance(a, bool) or isinstance(b, bool):\n        return a == b",
        ("tests/jsonschema",),
    ),
    Mutant(
        "the lowering's own markers count as annotations",
        "constrain_api/jsonschema/keywords.py",
        'or k in REFUSED or k.startswith("__") for k in s',
        "or k in REFUSED for k in s",
        ("tests/jsonschema",),
    ),
    Mutant(
        "apply_bitmask_ keeps columns past the vocabulary (with indices too)",
        "constrain_api/masks.py",
        "    n = min(vocab_size, width)",
        "    n = width",
        ("tests/test_masks.py",),
    ),
    Mutant(
        "finish_row leaves the padding bits",
        "constrain_api/masks.py",
        "row[self._pad_word] &= self._pad_keep",
        "row[self._pad_word] |= 0",
        ("tests/test_masks.py", "tests/test_base.py"),
    ),
    Mutant(
        "the CPU blend leaves the first column past the vocabulary",
        "constrain_api/masks.py",
        "        ints[:, n:] = minus_inf",
        "        ints[:, n + 1 :] = minus_inf",
        ("tests/test_masks.py",),
    ),
    Mutant(
        "StateChecker's shortcut takes a bitmask wider than the vocabulary",
        "constrain_api/base.py",
        "            and bitmask.shape[1] == words.shape[0]\n",
        "",
        ("tests/test_base.py",),
    ),
    Mutant(
        "sole_tokens reads 64-bit words as 32-bit ones",
        "constrain_api/decoding/masking.py",
        "            out[one[single]] = first[single] * bits + bit",
        "            out[one[single]] = first[single] * 32 + bit",
        ("tests/decoding",),
    ),
    Mutant(
        "a forced chain passes max_len",
        "constrain_api/decoding/sampling.py",
        "row.forced += 1\n            if len(row.tokens) >= loop.max_len:",
        "row.forced += 1\n            if len(row.tokens) > loop.max_len:",
        ("tests/decoding",),
    ),
    Mutant(
        "beam search passes max_len",
        "constrain_api/decoding/beams.py",
        "if len(child.tokens) >= self.loop.max_len:",
        "if len(child.tokens) > self.loop.max_len:",
        ("tests/decoding",),
    ),
    Mutant(
        "a rejected draft's first slot stays attended",
        "constrain_api/decoding/batch.py",
        "        self.attn[index, start:stop] = 0",
        "        self.attn[index, start + 1 : stop] = 0",
        ("tests/decoding",),
    ),
    Mutant(
        "the cache is trimmed of a slot a row keeps",
        "constrain_api/decoding/batch.py",
        "        count = self.attn.shape[1] - end\n",
        "        count = self.attn.shape[1] - end + 1\n",
        ("tests/decoding",),
    ),
    Mutant(
        "a pass carries drafts while a row has none",
        "constrain_api/decoding/drafts.py",
        "        if all(row.draft for row in rows) and",
        "        if any(row.draft for row in rows) and",
        ("tests/decoding",),
    ),
    Mutant(
        "the prompt lookup drafts from the earliest occurrence",
        "constrain_api/decoding/lookup.py",
        "                after[tuple(seq[end - n : end])] = end",
        "                after.setdefault(tuple(seq[end - n : end]), end)",
        ("tests/decoding/test_lookup.py",),
    ),
    Mutant(
        "LazyDFA forgets what follows a nullable head",
        "constrain_api/automata/lazy.py",
        "            if self.nullable[a]:\n                f += self.form(b)",
        "            if False:\n                f += self.form(b)",
        ("tests/test_automata.py", "-k", "lazy"),
    ),
    Mutant(
        "a product shown live by a string the other side only begins",
        "constrain_api/automata/lazy.py",
        "        return any(self.nullable[t] for t in at)\n\n    def _witness",
        "        return True\n\n    def _witness",
        ("tests/test_automata_lookaround.py", "-k", "product"),
    ),
    Mutant(
        "fst's state_finished only at the dead state",
        "plugins/fst/constrain_fst/backend.py",
        "return state < 0 or not self.compiled.state(state).has_tokens",
        "return state < 0",
        _suite("fst", "test_masks_match_the_oracle and small"),
    ),
    Mutant(
        "fsm's state_finished only at the dead state",
        "plugins/fsm/constrain_fsm/backend.py",
        "return state == _DEAD or not self.compiled.row(state).any()",
        "return state == _DEAD",
        _suite("fsm", "test_masks_match_the_oracle and small"),
    ),
    Mutant(
        "domino's lookahead k off by one",
        "plugins/domino/constrain_domino/backend.py",
        "if k is not None and depth >= k:",
        "if k is not None and depth > k:",
        ("plugins/domino/tests",),
    ),
    Mutant(
        "naive: the start state never accepts",
        "plugins/naive/constrain_naive/backend.py",
        "return state >= 0 and self.compiled.accept[state]",
        "return state > 0 and self.compiled.accept[state]",
        ("plugins/naive/tests",),
    ),
    Mutant(
        "a tree file for another vocabulary is read",
        "plugins/domino/constrain_domino/treecache.py",
        "        if (words, vocab_size, terminals) != expected or min(meta) < 0 or nodes < 1:",
        "        if min(meta) < 0 or nodes < 1:",
        ("plugins/domino/tests/test_treecache.py",),
    ),
    Mutant(
        "a tree file listing ids past the vocabulary is read",
        "plugins/domino/constrain_domino/treecache.py",
        "            if not bool(np.all((listed >= 0) & (listed < vocab_size))):",
        "            if not bool(np.all(listed >= 0)):",
        ("plugins/domino/tests/test_treecache.py",),
    ),
    Mutant(
        "fst's disk cache takes files made for other inputs",
        "plugins/fst/constrain_fst/diskcache.py",
        '    if not isinstance(digests, dict) or digests.get("inputs") != inputs:',
        "    if not isinstance(digests, dict):",
        ("plugins/fst/tests/test_fst.py", "-k", "tampered"),
    ),
)


def _python_path(root: Path) -> str:
    entries = [root, root / "conformance", root / "benchmarks"]
    entries += sorted(p for p in (root / "plugins").iterdir() if p.is_dir())
    return os.pathsep.join(str(e) for e in entries)


def run_mutant(mutant: Mutant, root: Path, timeout: float = 600.0) -> Outcome:
    """Apply ``mutant`` to a copy of ``root`` and run its tests there."""
    start = time.perf_counter()
    source = (root / mutant.path).read_text(encoding="utf-8")
    count = source.count(mutant.old)
    if count != 1:
        detail = f"its snippet occurs {count} times in {mutant.path}"
        return Outcome(mutant, "stale", 0.0, detail)
    with tempfile.TemporaryDirectory(prefix="mutant-") as tmp:
        copy = Path(tmp) / "src"
        shutil.copytree(root, copy, ignore=shutil.ignore_patterns(*_IGNORED))
        (copy / mutant.path).write_text(source.replace(mutant.old, mutant.new), encoding="utf-8")
        env = {**os.environ, "PYTHONPATH": _python_path(copy), "PYTHONDONTWRITEBYTECODE": "1"}
        command = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider"]
        try:
            done = subprocess.run(
                [*command, *mutant.tests],
                cwd=copy,
                env=env,
                capture_output=True,
                text=True,
                timeout=timeout,
            )
        except subprocess.TimeoutExpired:
            return Outcome(mutant, "error", time.perf_counter() - start, f"over {timeout:g} s")
    seconds = time.perf_counter() - start
    tail = (done.stdout.strip().splitlines() or [""])[-1]
    if done.returncode == 1:
        return Outcome(mutant, "killed", seconds, tail)
    if done.returncode == 0:
        return Outcome(mutant, "survived", seconds, tail)
    return Outcome(mutant, "error", seconds, f"pytest exit {done.returncode}: {tail}")


def report_block(outcomes: list[Outcome], command: str = "nox -s mutants") -> str:
    """The Markdown block (markers included) that reports ``outcomes``."""
    killed = sum(o.status == "killed" for o in outcomes)
    lines = [
        BEGIN,
        "## Mutation check",
        "",
        f"Produced by `{command}` (constrain_conformance/mutants.py): one-line faults in "
        "hot and shared paths, each run against the tests named for it in a copy of the "
        f"source tree. **{killed} of {len(outcomes)} killed**; survivors are faults no "
        "test catches yet.",
        "",
        "| fault | file | tests | outcome |",
        "|---|---|---|---|",
    ]
    for o in outcomes:
        tests = " ".join(o.mutant.tests)
        status = o.status if o.status == "killed" else f"**{o.status}**"
        lines.append(f"| {o.mutant.name} | `{o.mutant.path}` | `{tests}` | {status} |")
    lines.append(END)
    return "\n".join(lines) + "\n"


def write_block(path: Path, block: str) -> None:
    """Put ``block`` in ``path`` in place of its mutants block, or at its end."""
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        tail = rest.split(END, 1)[1].lstrip("\n")
        text = head + block + ("\n" + tail if tail else "")
    else:
        text = text.rstrip("\n") + ("\n\n" if text else "") + block
    path.write_text(text, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    """Run every mutant; write the block into docs/conformance.md; exit 1 on a
    stale or erroring mutant (survivors are reported, not failed)."""
    root = Path.cwd()
    outcomes = []
    for mutant in MUTANTS:
        outcome = run_mutant(mutant, root)
        print(f"{outcome.status:9s} {outcome.seconds:6.1f} s  {mutant.name}  ({outcome.detail})")
        outcomes.append(outcome)
    write_block(root / "docs" / "conformance.md", report_block(outcomes))
    return 1 if any(o.status in ("stale", "error") for o in outcomes) else 0


if __name__ == "__main__":
    raise SystemExit(main())
