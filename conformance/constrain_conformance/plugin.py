"""The pytest plugin (entry point ``pytest11``): options, parametrization and
the conformance matrix.

    pytest --pyargs constrain_conformance.suite --backend NAME[:key=value,...]

Without ``--backend`` every installed backend is checked. ``--conformance-vocab``
picks vocabularies (``small``, the default, or ``llama3``, ``llama2``,
``mistral-v3`` from the shared folder); ``--conformance-report PATH`` writes
the Markdown matrix.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from dataclasses import dataclass, field

import pytest

import constrain_api as ca

from . import corpus

_RESULTS = pytest.StashKey[dict]()
#: The last outcome a test recorded (so a failure it did not record still counts).
LAST_OUTCOME = pytest.StashKey[str]()
#: The package whose tests the plugin parametrizes; its conftest holds the fixtures.
SUITE = "constrain_conformance.suite"


def results(config: pytest.Config) -> dict:
    """The matrix being filled: (backend, family) -> Results."""
    return config.stash[_RESULTS]


def pytest_addoption(parser: pytest.Parser) -> None:
    """The suite's command-line options."""
    group = parser.getgroup("constrain-conformance")
    group.addoption(
        "--backend",
        action="append",
        default=[],
        help=(
            "backend to check, as NAME or NAME:key=value,... (repeatable; 'all': every "
            "installed backend with its defaults, the default when none is given)"
        ),
    )
    group.addoption("--oracle", default="naive", help="the oracle backend (default: naive)")
    group.addoption(
        "--conformance-vocab",
        action="append",
        default=[],
        help="small (default), llama3, llama2, mistral-v3 (repeatable)",
    )
    group.addoption("--conformance-report", default=None, help="write the Markdown matrix here")
    group.addoption(
        "--conformance-maskbench",
        type=int,
        default=0,
        help="add this many MaskBench schemas, and as many JSON Schema Test Suite "
        "schemas, from the shared folder to the corpus (default 0)",
    )
    group.addoption(
        "--conformance-generated",
        type=int,
        default=60,
        help="generated regexes, grammars and JSON schemas per backend and kind, judged "
        "against the oracle (generated.py; default 60, 0: none)",
    )
    group.addoption(
        "--conformance-timeout", type=float, default=120.0, help="seconds per case (default 120)"
    )
    group.addoption(
        "--conformance-max-steps",
        type=int,
        default=0,
        help="compare masks over at most this many tokens of each path (default 0: the "
        "whole path); bounds the run on large vocabularies, where one mask may cost 0.1 s",
    )


@dataclass(frozen=True)
class BackendSpec:
    """A backend name and its constructor options, parsed from ``NAME:k=v,...``."""

    name: str
    options: tuple[tuple[str, object], ...] = ()

    @classmethod
    def parse(cls, text: str) -> BackendSpec:
        """``"domino:k=1"`` → ``BackendSpec("domino", (("k", 1),))``."""
        name, _, rest = text.partition(":")
        options = []
        for item in filter(None, rest.split(",")):
            key, _, value = item.partition("=")
            try:
                parsed = ast.literal_eval(value)
            except (ValueError, SyntaxError):
                parsed = value
            options.append((key.strip(), parsed))
        return cls(name.strip(), tuple(options))

    def __str__(self) -> str:
        opts = ",".join(f"{k}={v!r}" for k, v in self.options)
        return f"{self.name}:{opts}" if opts else self.name

    def create(self) -> ca.Backend:
        """A configured backend instance."""
        return ca.get(self.name, **dict(self.options))


@dataclass
class Results:
    """Outcomes per (backend, family): pass/fail counts, checks skipped
    because the backend refused the case's constraint (``refused``), because
    only the oracle did (``unjudged``) or because the backend's capabilities
    exclude its kind (``unsupported``), worst precision and recall, the
    minimal-invasiveness counts, and notes on failures that happened outside
    a check (timeouts, exceptions)."""

    passed: int = 0
    failed: int = 0
    unsupported: int = 0
    refused: int = 0
    unjudged: int = 0
    precision: float = 1.0
    recall: float = 1.0
    reproduced: int = 0  # minimal invasiveness: natural tokenizations reproduced
    targets: int = 0  # ... of this many tried
    notes: set[str] = field(default_factory=set)


def pytest_configure(config: pytest.Config) -> None:
    """Register the marker; start an empty matrix."""
    config.addinivalue_line("markers", "conformance: a conformance case (runs under a timeout)")
    config.stash[_RESULTS] = defaultdict(Results)


def _backend_specs(config: pytest.Config) -> list[BackendSpec]:
    specs: list[BackendSpec] = []
    for text in config.getoption("--backend") or ["all"]:
        more = (
            [BackendSpec(i.name) for i in ca.available()]
            if text == "all"
            else [BackendSpec.parse(text)]
        )
        specs += [s for s in more if s not in specs]
    return specs


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parametrize the suite's tests (only those) over backends, vocabularies and cases."""
    if not metafunc.module.__name__.startswith(SUITE):
        return
    config = metafunc.config
    if "backend_spec" in metafunc.fixturenames:
        specs = _backend_specs(config)
        metafunc.parametrize("backend_spec", specs, ids=[str(s) for s in specs], scope="session")
    if "vocab_name" in metafunc.fixturenames:
        names = config.getoption("--conformance-vocab") or ["small"]
        metafunc.parametrize("vocab_name", names, scope="session")
    if "case" in metafunc.fixturenames:
        extra = config.getoption("--conformance-maskbench")
        cases = corpus.CASES + corpus.maskbench_cases(extra) + corpus.schema_suite_cases(extra)
        metafunc.parametrize("case", cases, ids=[c.name for c in cases])


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    """A suite test that fails without recording ``fail`` (a timeout, an
    exception in the backend, in the test or in its set-up, where the case is
    compiled) is a failure in the matrix too."""
    report = yield
    callspec = getattr(item, "callspec", None)
    if (
        report.when in ("setup", "call")
        and report.failed
        and callspec is not None
        and "backend_spec" in callspec.params
        and item.stash.get(LAST_OUTCOME, "") != "fail"
    ):
        case = callspec.params.get("case")
        family = case.family if case is not None else callspec.params.get("kind", "errors")
        row = results(item.config)[(str(callspec.params["backend_spec"]), family)]
        row.failed += 1
        row.notes.add(f"{item.name}: {call.excinfo.typename if call.excinfo else 'failed'}")
    return report


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Write the matrix when ``--conformance-report`` was given."""
    path = session.config.getoption("--conformance-report")
    results = session.config.stash[_RESULTS]
    if path and results:
        from .report import write_matrix

        config = session.config
        vocabularies = config.getoption("--conformance-vocab") or ["small"]
        write_matrix(
            path,
            results,
            vocabularies,
            config.getoption("--conformance-maskbench"),
            config.getoption("--conformance-max-steps"),
            config.getoption("--conformance-generated"),
        )
