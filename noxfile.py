"""Sessions: ``nox -s tests`` (the test suite, with the conformance suite on the
small vocabularies), ``nox -s lint`` (ruff), ``nox -s conformance`` (the
conformance suite on the real vocabularies too, writing docs/conformance.md),
``nox -s jsonschema`` (the JSON Schema lowering over the whole JSON Schema
Test Suite and all of MaskBench, writing docs/jsonschema.md), ``nox -s bench``
(the throughput suite in benchmarks/)."""

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
PLUGINS = ["plugins/naive", "plugins/fsm", "plugins/fst"]


def _install_project(session: nox.Session) -> None:
    session.install(TORCH)
    session.install("-e", EXTRAS)
    for plugin in PLUGINS:
        session.install("-e", plugin)
    session.install("-e", "conformance")
    # A real distribution with an entry point, so registry tests discover it
    # the way users' plugins are discovered.
    session.install("./tests/plugin_dist")


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
    vocabularies (those in ../shared); the matrix goes to docs/conformance.md."""
    _install_project(session)
    vocabularies = ["small", "llama3", "llama2", "mistral-v3"]
    session.run(
        "pytest",
        "--pyargs",
        "constrain_conformance.suite",
        *[f"--conformance-vocab={v}" for v in vocabularies],
        "--conformance-report=docs/conformance.md",
        "--conformance-maskbench=10",
        "-q",
        *session.posargs,
    )


@nox.session
def jsonschema(session: nox.Session) -> None:
    """The JSON Schema front end over the JSON Schema Test Suite and all 1,120
    MaskBench schemas (the tests session runs a quarter of MaskBench); the
    counts and timings go to docs/jsonschema.md."""
    _install_project(session)
    session.run(
        "pytest",
        "tests/jsonschema/test_jsonschema_suite.py",
        "-q",
        *session.posargs,
        env={"CONSTRAIN_MASKBENCH": "all", "CONSTRAIN_JSONSCHEMA_REPORT": "docs/jsonschema.md"},
    )


@nox.session
def lint(session: nox.Session) -> None:
    """ruff lint and format check."""
    session.install("ruff")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")


@nox.session
def bench(session: nox.Session) -> None:
    """The micro benchmarks in benchmarks/; JSON results go to reports/."""
    _install_project(session)
    Path("reports").mkdir(exist_ok=True)
    session.run(
        "pytest",
        "benchmarks",
        "--benchmark-only",
        "--benchmark-json=reports/bench.json",
        *session.posargs,
    )
