"""The conformance matrix as Markdown."""

from __future__ import annotations

import datetime
from pathlib import Path

FAMILIES = ["regex", "choice", "where", "grammar", "json_schema", "errors"]


def _cell(row) -> str:
    """A matrix cell: checks passed or failed, then the checks skipped because
    the backend refused the constraint or only the oracle did (a refusal is
    never shown as a pass)."""
    if row is None:
        return "—"
    skipped = [
        f"{count} {what}"
        for count, what in ((row.refused, "refused"), (row.unjudged, "unjudged"))
        if count
    ]
    if row.failed:
        verdict = f"**FAIL** ({row.failed} of {row.failed + row.passed})"
    elif row.passed:
        verdict = f"pass ({row.passed})"
    elif skipped:
        return ", ".join(skipped)
    else:
        return "unsupported"
    if skipped:
        verdict += ", " + ", ".join(skipped)
    if row.precision < 1.0 or row.recall < 1.0:
        verdict += f", P={row.precision:.3f} R={row.recall:.3f}"
    return verdict


def _share(row) -> str:
    if row is None or not row.targets:
        return "—"
    return f"{row.reproduced}/{row.targets} ({row.reproduced / row.targets:.0%})"


def write_matrix(
    path: str,
    results: dict,
    vocabularies: list[str],
    schemas: int = 0,
    max_steps: int = 0,
    generated: int = 0,
) -> None:
    """Write backend × family outcomes to ``path`` (Markdown); ``schemas``: the
    ``--conformance-maskbench`` count the corpus ran with; ``max_steps``: the
    ``--conformance-max-steps`` bound on mask comparisons (0: none);
    ``generated``: the ``--conformance-generated`` count."""
    backends = sorted({backend for backend, _ in results})
    lines = [
        "# Conformance matrix",
        "",
        f"Produced by `nox -s conformance` on {datetime.date.today().isoformat()}; "
        f"vocabularies: {', '.join(vocabularies)}; corpus: the built-in cases"
        + (f" and up to {schemas} MaskBench and {schemas} Test Suite schemas" if schemas else "")
        + (
            f"; {generated} generated regexes, grammars and schemas per backend and kind "
            "(on the generated vocabulary), one check each"
            if generated
            else ""
        )
        + "."
        + (
            f" Masks are compared over the first {max_steps} tokens of each path "
            "(acceptance and rejection walk whole documents)."
            if max_steps
            else ""
        )
        + " Each cell counts the checks that ran "
        "(mask exactness per path kind, acceptance/rejection, state operations, "
        "concurrency); P and R are the worst precision and recall against the oracle "
        "(shown when below 1); *refused* counts the checks skipped because the backend "
        "refused the case's constraint (`UnsupportedConstraint` or `CompileLimitExceeded` "
        "for a kind it declares), *unjudged* those skipped because only the oracle did.",
        "",
        "| backend | " + " | ".join(FAMILIES) + " |",
        "|---|" + "---|" * len(FAMILIES),
    ]
    for backend in backends:
        cells = [_cell(results.get((backend, family))) for family in FAMILIES]
        lines.append(f"| `{backend}` | " + " | ".join(cells) + " |")
    lines += [
        "",
        "Minimal invasiveness: of the valid documents' natural tokenizations, how many a "
        "scripted model that wants them gets exactly, under constrained argmax decoding.",
        "",
        "| backend | " + " | ".join(FAMILIES[:-1]) + " |",
        "|---|" + "---|" * (len(FAMILIES) - 1),
    ]
    for backend in backends:
        cells = [_share(results.get((backend, family))) for family in FAMILIES[:-1]]
        lines.append(f"| `{backend}` | " + " | ".join(cells) + " |")
    notes = [
        f"- `{backend}` ({family}): {note}"
        for (backend, family), row in sorted(results.items())
        for note in sorted(row.notes)
    ]
    if notes:
        lines += [
            "",
            "Failures outside the checks' own verdicts (timeouts, exceptions):",
            "",
            *notes,
        ]
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    text = Path(path).read_text() if Path(path).exists() else ""
    marker = "<!-- matrix -->"
    table = "\n".join(lines) + "\n"
    if marker in text:  # keep the hand-written part of the page below the marker
        table += "\n" + marker + text.split(marker, 1)[1]
    Path(path).write_text(table)
