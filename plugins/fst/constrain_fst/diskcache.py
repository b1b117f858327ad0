"""T_V on disk, in safe formats: the transducer in OpenFst's own binary format
(``Fst.write``/``Fst.read``), its wildcard tables in a NumPy ``.npz`` read with
``allow_pickle=False``. Nothing is ever unpickled.

One pair of files per (vocabulary fingerprint, wildcard class set, UTF-8
class spelling or not), and a third, ``.sha256``, holding the SHA-256 of
both and of the inputs they were built from; written to temporary names and
renamed (the digests last), so a reader never sees half a file. A file is
parsed only after its digest matches (OpenFst aborts the process on some
damaged files; a different valid transducer in its place would be used), and
one that cannot be read back, or whose tables do not fit the vocabulary, is
ignored (and rebuilt by the caller), never trusted.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import tempfile
import zipfile
from pathlib import Path

import numpy as np
import pynini

from constrain_api.automata import CharSet

from .wildcards import Wildcards

#: Bumped whenever T_V's spelling or its tables change meaning: older files are ignored.
FORMAT = 4


def _stem(fingerprint: str, classes: tuple[CharSet, ...], utf8: bool) -> str:
    text = repr([c.ranges for c in classes]).encode()
    kind = "u" if utf8 else "b"
    digest = hashlib.sha256(text).hexdigest()[:16]
    return f"tv{FORMAT}-{fingerprint[:24]}-{digest}-{kind}"


def _inputs(fingerprint: str, classes: tuple[CharSet, ...], utf8: bool, size: int) -> str:
    """The digest of what T_V is built from (the file name holds only a prefix)."""
    text = repr((FORMAT, fingerprint, [c.ranges for c in classes], utf8, size)).encode()
    return hashlib.sha256(text).hexdigest()


def _verified(stem: Path, inputs: str) -> tuple[bytes, bytes] | None:
    """The ``.npz`` and ``.fst`` bytes, if the digests file vouches for them."""
    try:
        with open(stem.with_suffix(".sha256"), "rb") as f:
            digests = json.loads(f.read(4096))
        npz = stem.with_suffix(".npz").read_bytes()
        fst = stem.with_suffix(".fst").read_bytes()
    except (OSError, ValueError):
        return None
    if not isinstance(digests, dict) or digests.get("inputs") != inputs:
        return None
    if digests.get("npz") != hashlib.sha256(npz).hexdigest():
        return None
    if digests.get("fst") != hashlib.sha256(fst).hexdigest():
        return None
    return npz, fst


def load(folder: Path, fingerprint: str, classes: tuple[CharSet, ...], utf8: bool, size: int):
    """(T_V, Wildcards) from ``folder``, or None if absent or not usable."""
    stem = folder / _stem(fingerprint, classes, utf8)
    verified = _verified(stem, _inputs(fingerprint, classes, utf8, size))
    if verified is None:
        return None
    npz, fst_bytes = verified
    try:
        with np.load(io.BytesIO(npz), allow_pickle=False) as data:
            chars, tails, head_ids = data["chars"], data["tails"], data["head_ids"]
            groups = {int(a): (int(b), int(c)) for a, b, c in data["groups"].tolist()}
            heads = {int(a): (int(b), int(c), int(d)) for a, b, c, d in data["heads"].tolist()}
            funnels = {int(a): (int(b), int(c)) for a, b, c in data["funnel_groups"].tolist()}
            stored = str(data["fingerprint"])
            group_of = data["class_group_of"]
            lead_group_of = data["lead_group_of"]
        fst = pynini.Fst.read_from_string(fst_bytes)
    except (OSError, KeyError, ValueError, TypeError, zipfile.BadZipFile, pynini.FstIOError):
        return None
    shape = (len(classes), size)
    if stored != fingerprint or chars.shape != shape or tails.shape != shape:
        return None
    if utf8 != (group_of.shape == (size,)) or lead_group_of.shape != shape:
        return None
    ids = head_ids if head_ids.shape == (size,) else None
    class_groups, class_group_of = {}, None
    if utf8:
        class_group_of = group_of
        class_groups = _members(group_of)
    lead_groups: dict[int, np.ndarray] = {}
    for row in lead_group_of:
        lead_groups.update(_members(row))
    wild = Wildcards(
        classes,
        tuple(chars),
        groups,
        tuple(tails),
        ids,
        heads,
        class_groups,
        class_group_of,
        lead_groups,
        lead_group_of if classes else None,
        funnels,
    )
    return fst, wild


def _members(group_of: np.ndarray) -> dict[int, np.ndarray]:
    """Group label → its tokens, from each token's label (0: none)."""
    order = np.argsort(group_of, kind="stable")
    labels, starts = np.unique(group_of[order], return_index=True)
    split = np.split(order, starts[1:])
    return {label: ids for label, ids in zip(labels.tolist(), split, strict=True) if label}


def store(folder: Path, fingerprint: str, fst: pynini.Fst, wild: Wildcards, size: int) -> None:
    """Write T_V and its tables (atomically: temporary names, then renames)."""
    folder.mkdir(parents=True, exist_ok=True)
    stem = folder / _stem(fingerprint, wild.classes, wild.utf8_classes)
    empty = np.zeros((0, size), dtype=np.int32)
    with tempfile.NamedTemporaryFile(dir=folder, suffix=".npz", delete=False) as f:
        np.savez(
            f,
            chars=np.stack(wild.chars) if wild.chars else empty,
            tails=np.stack(wild.tails) if wild.tails else empty,
            head_ids=wild.head_ids if wild.head_ids is not None else np.zeros(0, np.int32),
            groups=np.array([(a, *g) for a, g in wild.groups.items()], np.int64).reshape(-1, 3),
            heads=np.array([(a, *h) for a, h in wild.heads.items()], np.int64).reshape(-1, 4),
            funnel_groups=np.array(
                [(a, *g) for a, g in wild.funnel_groups.items()], np.int64
            ).reshape(-1, 3),
            class_group_of=wild.class_group_of if wild.utf8_classes else np.zeros(0, np.int64),
            lead_group_of=wild.lead_group_of if wild.lead_group_of is not None else empty,
            fingerprint=np.array(fingerprint),
        )
    tables = f.name
    fst_bytes = fst.write_to_string()
    with tempfile.NamedTemporaryFile(dir=folder, suffix=".fst", delete=False) as f:
        f.write(fst_bytes)
    transducer = f.name
    digests = {
        "inputs": _inputs(fingerprint, wild.classes, wild.utf8_classes, size),
        "npz": hashlib.sha256(Path(tables).read_bytes()).hexdigest(),
        "fst": hashlib.sha256(fst_bytes).hexdigest(),
    }
    with tempfile.NamedTemporaryFile("w", dir=folder, suffix=".sha256", delete=False) as f:
        json.dump(digests, f)
    os.replace(transducer, stem.with_suffix(".fst"))
    os.replace(tables, stem.with_suffix(".npz"))
    os.replace(f.name, stem.with_suffix(".sha256"))
