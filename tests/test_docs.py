"""The user and plugin-author guides say what the code does: their examples
run, the names they cite exist, the example package's entry point is the one
the guide shows. (Links and API cross-references: ``nox -s docs``, strict.)"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

import constrain_api as ca

ROOT = Path(__file__).resolve().parent.parent
USAGE = (ROOT / "docs" / "usage.md").read_text()
PLUGINS = (ROOT / "docs" / "plugins.md").read_text()
EXAMPLE = ROOT / "docs" / "examples" / "constrain-choicetrie"


def python_block(text: str, first_line: str) -> str:
    (block,) = re.findall(rf"```python\n({re.escape(first_line)}.*?)```", text, re.S)
    return block


def test_the_constraint_examples_build_specs():
    namespace: dict = {}
    exec(python_block(USAGE, "import constrain_api as ca\n\nca.Regex"), namespace)
    specs = re.findall(r"^(ca\.\w+\(.*\))  #", python_block(USAGE, "import constrain_api"), re.M)
    assert len(specs) == 5
    for text in specs:
        assert isinstance(eval(text, namespace), ca.Constraint), text


def test_every_vocabulary_loader_in_the_table_exists():
    loaders = set(re.findall(r"`ca\.Vocabulary\.(from_\w+)\(", USAGE))
    assert len(loaders) == 8
    for name in loaders:
        assert callable(getattr(ca.Vocabulary, name)), name
    missing = {n for n in dir(ca.Vocabulary) if n.startswith("from_")} - loaders
    assert not missing, f"loaders the usage page does not list: {sorted(missing)}"


def test_every_exception_in_the_table_is_public_and_a_constrain_error():
    names = re.findall(r"^\| `(\w+)`", USAGE.split("## Errors", 1)[1], re.M)
    assert set(names) == {
        "ConstraintError",
        "UnsupportedConstraint",
        "CompileLimitExceeded",
        "TokenRejected",
        "BackendNotFound",
    }
    for name in names:
        assert issubclass(getattr(ca, name), ca.ConstrainError), name


def test_the_step_by_step_example_runs():
    torch = pytest.importorskip("torch")
    vocab = ca.Vocabulary.from_list([b"a", b"b", b"ab", b"</s>"], eos=[3], special=[3])
    compiled = ca.get("naive").compile(ca.Regex("(ab)+"), vocab)
    namespace = {"ca": ca, "compiled": compiled, "vocab": vocab, "batch_size": 2, "row": 1}
    namespace |= {"logits": torch.zeros(2, vocab.size), "token": 2}
    exec(python_block(USAGE, "checker = compiled.checker()"), namespace)
    assert namespace["checker"].rollback_depth == 0 and namespace["twin"].rollback_depth == 0
    assert torch.isinf(namespace["logits"][1]).tolist() == [False, True, False, True]


def test_the_guide_shows_the_example_packages_entry_point():
    project = tomllib.loads((EXAMPLE / "pyproject.toml").read_text())["project"]
    assert project["entry-points"]["constrain_api"] == {"choicetrie": "constrain_choicetrie"}
    assert '[project.entry-points.constrain_api]\nchoicetrie = "constrain_choicetrie"' in PLUGINS
    hooks = re.findall(r"def (constrain_\w+)\(\)", PLUGINS)
    import constrain_api.hookspecs as hookspecs

    assert set(hooks) <= {n for n in dir(hookspecs) if n.startswith("constrain_")}


def test_the_guide_names_the_base_class_methods_a_subclass_writes():
    for cls in (ca.StateChecker, ca.MatcherChecker):
        abstract = set(cls.__abstractmethods__)
        cited = {m for m in re.findall(r"`(\w+)\(?", PLUGINS) if m in abstract}
        assert cited == abstract, f"{cls.__name__}: {sorted(abstract - cited)} not in the guide"
