"""Sessions: ``nox -s tests`` (the test suite, with the conformance suite on the
small vocabularies), ``nox -s lint`` (ruff), ``nox -s conformance`` (the
conformance suite on the real vocabularies too, writing docs/conformance.md),
``nox -s jsonschema`` (the JSON Schema lowering over the whole JSON Schema
Test Suite and all of MaskBench, writing docs/jsonschema.md), ``nox -s bench``
(the side-by-side throughput report, docs/bench/REPORT.md), ``nox -s micro``
(a developer micro-benchmark file of benchmarks/), ``nox -s fuzz`` (hostile
inputs against every backend, docs/reliability.md), ``nox -s docs``
(the documentation site with the API reference, strict: a broken link or
cross-reference fails it)."""

from __future__ import annotations

from pathlib import Path

import nox

nox.options.sessions = ["tests", "lint"]
nox.options.reuse_existing_virtualenvs = True

# The exact pin matters: on our machines it resolves to a local CPU wheel; any
# looser spec makes pip download CUDA builds of several GB.
TORCH = "torch==2.13.0"
EXTRAS = ".[tokenizers,transformers,test]"
# The built-in backends: each its own distribution, found through its entry point.
PLUGINS = [
    "plugins/naive",
    "plugins/fsm",
    "plugins/fst",
    "plugins/domino",
    "plugins/llguidance",
    "plugins/xgrammar",
]


def _install_project(session: nox.Session, test_plugin: bool = True) -> None:
    session.install(TORCH)
    session.install("-e", EXTRAS)
    for plugin in PLUGINS:
        session.install("-e", plugin)
    session.install("-e", "conformance")
    session.install("-e", "benchmarks")  # constrain_bench: the report command and its tests
    # A real distribution with an entry point, so registry tests discover it
    # the way users' plugins are discovered (not in the report: a test fixture).
    if test_plugin:
        session.install("./tests/plugin_dist")
    # The example third-party package of docs/plugins.md: its tests certify it.
    session.install("-e", "docs/examples/constrain-choicetrie")


@nox.session
def tests(session: nox.Session) -> None:
    """The unit and integration tests (skips the ../shared data when absent)."""
    _install_project(session)
    session.run("pytest", *session.posargs)
    session.run(
        "pytest", "--pyargs", "constrain_conformance.suite", "--conformance-maskbench=6", "-q"
    )


@nox.session
def conformance(session: nox.Session) -> None:
    """Every installed backend against the oracle, on the small and the real
    vocabularies (those in ../shared); the matrix goes to docs/conformance.md.
    Exits non-zero while a configuration fails: today only the opt-in
    ``xgrammar:json_schema='engine'`` (XGrammar's own JSON converter allows
    documents the schema forbids; pinned in plugins/xgrammar)."""
    _install_project(session)
    vocabularies = ["small", "llama3", "llama2", "mistral-v3"]
    # the engines' other JSON modes are measured too
    variants = ["llguidance:json_schema='lowering'", "xgrammar:json_schema='engine'"]
    session.run(
        "pytest",
        "--pyargs",
        "constrain_conformance.suite",
        "--backend=all",
        *[f"--backend={v}" for v in variants],
        *[f"--conformance-vocab={v}" for v in vocabularies],
        "--conformance-report=docs/conformance.md",
        "--conformance-maskbench=10",
        # a mask costs up to 0.3 s on a 128k vocabulary for some engines
        # (xgrammar's counted repetitions): bound the walk, not the documents
        "--conformance-max-steps=64",
        "--conformance-generated=300",
        "-q",
        *session.posargs,
    )


@nox.session
def mutants(session: nox.Session) -> None:
    """The mutation check (constrain_conformance/mutants.py): one-line faults
    in hot and shared paths, each run against the tests named for it in a
    copy of the source tree; the outcome goes to docs/conformance.md. A few
    minutes; not in CI. Exits non-zero when a mutant no longer applies."""
    _install_project(session)
    session.run("python", "-m", "constrain_conformance.mutants")


@nox.session
def fuzz(session: nox.Session) -> None:
    """The hostile-input corpus (constrain_conformance/hostile.py) against every
    installed backend, each case in a process of its own with a timeout and a
    memory cap; the table of outcomes goes to docs/reliability.md. Exits
    non-zero on any crash, hang, memory blow-up, wrong mask or undocumented
    error. Options after ``--`` (``python -m constrain_conformance.fuzz --help``)."""
    _install_project(session, test_plugin=False)
    session.run(
        "python",
        "-m",
        "constrain_conformance.fuzz",
        "--out",
        "docs/reliability.md",
        *session.posargs,
    )


# Pinned: the site's strictness (links, cross-references) depends on their checks.
DOCS = ["mkdocs==1.6.1", "mkdocstrings==1.0.8", "mkdocstrings-python==2.0.11"]


@nox.session
def docs(session: nox.Session) -> None:
    """The documentation site (build/site): the guides, the plugins' READMEs,
    the reports and the API reference from the docstrings; warnings are errors."""
    session.install(*DOCS)
    session.run("python", "docs/site.py", "build/site-src")
    session.run("mkdocs", "build", "--strict")


@nox.session
def jsonschema(session: nox.Session) -> None:
    """The JSON Schema front end over the JSON Schema Test Suite and all 1,120
    MaskBench schemas (what the tests session checks too); the counts and
    timings go to docs/jsonschema.md."""
    _install_project(session)
    session.run(
        "pytest",
        "tests/jsonschema/test_jsonschema_suite.py",
        "-q",
        *session.posargs,
        env={"CONSTRAIN_JSONSCHEMA_REPORT": "docs/jsonschema.md"},
    )


@nox.session
def lint(session: nox.Session) -> None:
    """ruff lint and format check."""
    session.install("ruff")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")


@nox.session
def bench(session: nox.Session) -> None:
    """The side-by-side report of every installed backend (docs/bench/REPORT.md):
    ``nox -s bench`` for the full run, ``nox -s bench -- --quick`` for a few
    minutes; other options after ``--`` (``python -m constrain_bench --help``)."""
    _install_project(session, test_plugin=False)
    session.run("python", "-m", "constrain_bench", *session.posargs)


@nox.session
def micro(session: nox.Session) -> None:
    """A developer micro-benchmark file of ``benchmarks/`` (the figures in the
    READMEs name theirs): ``nox -s micro -- benchmarks/bench_masks.py``; every
    file when none is given."""
    _install_project(session, test_plugin=False)
    files = session.posargs or sorted(str(p) for p in Path("benchmarks").glob("bench_*.py"))
    session.run("pytest", *files, "--benchmark-only", "-q", "-p", "no:cacheprovider")
