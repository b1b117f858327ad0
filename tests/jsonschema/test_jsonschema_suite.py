"""The lowering against the JSON Schema Test Suite (draft 2020-12) and MaskBench.

Every case either raises ``UnsupportedConstraint`` or gets every instance
right: valid instances (canonical compact text) in the language, invalid ones
out. ``wrong`` must stay 0. Counts go to ``docs/jsonschema.md`` when
``CONSTRAIN_JSONSCHEMA_REPORT`` names that file (``nox -s jsonschema``).
Every MaskBench schema runs (the lazy recognizers decide all 1,120 in well
under a minute). Coverage may not fall below the figures the file
documents (the Test Suite's less a small margin, ``SUITE_MARGIN``; MaskBench's
exactly: no limit of the lowering depends on time): regenerating it raises
the floors.
"""

from __future__ import annotations

import json
import math
import os
import re
import statistics
from collections import Counter
from pathlib import Path

import pytest
from jsonschema_harness import run_schema

from constrain_api.shared import shared_dir

# Keywords the front end refuses, with the file names of the suite that test them.
SUITE = "json-schema-test-suite/tests/draft2020-12"


def _suite_dir() -> Path:
    base = shared_dir()
    path = None if base is None else base / SUITE
    if path is None or not path.is_dir():
        pytest.skip(f"JSON Schema Test Suite not found under $CONSTRAIN_SHARED ({SUITE})")
    return path


def _maskbench_files() -> list[Path]:
    base = shared_dir()
    path = None if base is None else base / "maskbench" / "data"
    if path is None or not path.is_dir():
        pytest.skip("MaskBench data not found under $CONSTRAIN_SHARED (maskbench/data)")
    return sorted(path.glob("*.json"))


#: How far below the figures docs/jsonschema.md documents a run may fall
#: (the floors rise whenever ``nox -s jsonschema`` regenerates the file).
SUITE_MARGIN = 0.01  # of the Test Suite's cases
DOCUMENTED = Path(__file__).resolve().parents[2] / "docs" / "jsonschema.md"


def _documented(section: str, pattern: str) -> re.Match:
    """The figure docs/jsonschema.md states in ``section`` (read before a
    regenerating run rewrites it)."""
    text = DOCUMENTED.read_text(encoding="utf-8")
    begin, end = f"<!-- {section} -->", f"<!-- /{section} -->"
    block = text.split(begin, 1)[1].split(end, 1)[0] if begin in text else ""
    found = re.search(pattern, block)
    if found is None:
        pytest.fail(f"docs/jsonschema.md states no figure for {section!r} ({pattern})")
    return found


def _report(section: str, lines: list[str]) -> None:
    target = os.environ.get("CONSTRAIN_JSONSCHEMA_REPORT")
    if not target:
        return
    path = Path(target)
    text = path.read_text() if path.exists() else ""
    begin, end = f"<!-- {section} -->", f"<!-- /{section} -->"
    block = "\n".join([begin, *lines, end])
    if begin in text and end in text:
        head, rest = text.split(begin, 1)
        text = head + block + rest.split(end, 1)[1]
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    path.write_text(text)


def test_json_schema_test_suite() -> None:
    files = sorted(_suite_dir().glob("*.json"))
    documented = int(_documented("suite", r"\*\*(\d+) supported\*\*").group(1))
    counts: Counter[str] = Counter()
    per_file: dict[str, Counter[str]] = {}
    wrong: list[str] = []
    for f in files:
        c = per_file.setdefault(f.stem, Counter())
        for case in json.loads(f.read_text()):
            # Format is an annotation in the 2020-12 default vocabulary.
            out = run_schema(case["schema"], case["tests"], format_assertion=False)
            status = "wrong" if out.wrong else out.status
            counts[status] += 1
            c[status] += 1
            wrong += [f"{f.stem}: {case['description']}: {w}" for w in out.wrong]
    assert not wrong, "\n".join(wrong[:50])
    assert counts["error"] == 0
    total = sum(counts.values())
    lines = [
        f"{total} cases in {len(files)} files: **{counts['supported']} supported**, "
        f"{counts['unsupported']} unsupported, {counts['limit']} over a limit, "
        f"{counts['wrong']} wrong.",
        "",
        "| file | supported | unsupported | wrong |",
        "|---|---:|---:|---:|",
    ]
    for name, c in per_file.items():
        lines.append(
            f"| {name} | {c['supported']} | {c['unsupported'] + c['limit']} | {c['wrong']} |"
        )
    floor = documented - math.ceil(SUITE_MARGIN * total)
    _report("suite", lines)
    assert counts["supported"] >= floor, (
        f"{counts['supported']} Test Suite cases supported, documented {documented}"
    )


def test_maskbench() -> None:
    files = _maskbench_files()
    documented = int(_documented("maskbench", r"\*\*(\d+) supported").group(1))
    counts: Counter[str] = Counter()
    kinds: Counter[str] = Counter()
    reasons: Counter[str] = Counter()
    seconds: list[float] = []
    wrong: list[str] = []
    instances = 0
    for f in files:
        data = json.loads(f.read_text())
        out = run_schema(data["schema"], data["tests"])
        seconds.append(out.seconds)
        status = "wrong" if out.wrong else out.status
        counts[status] += 1
        kinds[out.kind] += bool(out.kind)
        kinds["recognizer limit"] += bool(out.kind) and out.status == "limit"
        instances += out.checked
        if out.status != "supported":
            reasons[out.reason.split(" at ")[0][:70]] += 1
        wrong += [f"{f.name}: {w}" for w in out.wrong]
    assert not wrong, "\n".join(wrong[:50])
    assert counts["error"] == 0, counts
    n = len(files)
    share = counts["supported"] / n
    lines = [
        f"{n} schemas, {instances} instances checked: **{counts['supported']} supported "
        f"({share:.1%})**; lowered to {kinds['regex']} regexes and {kinds['grammar']} "
        f"grammars, {kinds['recognizer limit']} of them then over the test recognizer's "
        f"limits; {counts['unsupported']} unsupported, {counts['limit']} over a limit, "
        f"{counts['wrong']} wrong.",
        "",
        f"Lowering time per schema: median {statistics.median(seconds) * 1e3:.1f} ms, "
        f"p95 {sorted(seconds)[int(0.95 * (n - 1))] * 1e3:.1f} ms, "
        f"max {max(seconds) * 1e3:.0f} ms.",
        "",
        "| most frequent reasons for unsupported | schemas |",
        "|---|---:|",
        *(f"| {r} | {k} |" for r, k in reasons.most_common(15)),
    ]
    _report("maskbench", lines)
    assert counts["supported"] >= documented, (
        f"{counts['supported']} MaskBench schemas supported, documented {documented}"
    )
