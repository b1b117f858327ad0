"""The mutation check's runner: a fault the tests catch is killed, one they
miss survives, a snippet that no longer occurs is stale, and the report
block replaces its earlier self in the page (the matrix keeps it)."""

from __future__ import annotations

from pathlib import Path

from constrain_conformance import mutants
from constrain_conformance.mutants import Mutant, report_block, run_mutant, write_block


def _project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "plugins").mkdir(parents=True)
    calc = "def double(x):\n    return 2 * x\n\n\ndef half(x):\n    return x / 2\n"
    (root / "calc.py").write_text(calc)
    test = "import calc\n\n\ndef test_double():\n    assert calc.double(3) == 6\n"
    (root / "test_calc.py").write_text(test)
    return root


def test_killed_survived_and_stale(tmp_path):
    root = _project(tmp_path)
    caught = Mutant("double adds", "calc.py", "return 2 * x", "return 2 + x", ("test_calc.py",))
    missed = Mutant("half doubles", "calc.py", "return x / 2", "return x * 2", ("test_calc.py",))
    gone = Mutant("not there", "calc.py", "return 3 * x", "return x", ("test_calc.py",))
    outcomes = [run_mutant(m, root, timeout=120) for m in (caught, missed, gone)]
    assert [o.status for o in outcomes] == ["killed", "survived", "stale"]
    assert "return 2 * x" in (root / "calc.py").read_text()  # the tree is never touched


def test_every_listed_mutant_applies_to_this_tree():
    root = Path(mutants.__file__).resolve().parents[2]
    for m in mutants.MUTANTS:
        assert (root / m.path).read_text().count(m.old) == 1, m.name
        assert m.old != m.new, m.name


def test_the_block_replaces_its_earlier_self(tmp_path):
    page = tmp_path / "conformance.md"
    page.write_text("# Matrix\n\n<!-- matrix -->\n\nprose\n")
    m = Mutant("f", "a.py", "x", "y", ("t",))
    write_block(page, report_block([mutants.Outcome(m, "survived", 1.0)]))
    write_block(page, report_block([mutants.Outcome(m, "killed", 1.0)]))
    text = page.read_text()
    assert text.count(mutants.BEGIN) == 1 and "1 of 1 killed" in text and "prose" in text
