"""The repository's conftest: with CONSTRAIN_REQUIRE_SHARED set, a skip for
absent shared data is a failure; without it, a skip; other skips stay skips."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

ROOT_CONFTEST = Path(__file__).resolve().parents[1] / "conftest.py"

TESTS = """
import pytest
from constrain_api import shared

def test_needs_the_data():
    try:
        shared.shared_file("no/such/file")
    except FileNotFoundError as e:
        pytest.skip(str(e))

def test_skips_for_another_reason():
    pytest.skip("no CUDA device here")

@pytest.mark.xfail(reason="CONSTRAIN_SHARED named in an expected failure")
def test_expected_to_fail():
    assert False
"""


@pytest.fixture
def suite(pytester, monkeypatch, tmp_path):
    pytester.makeconftest(ROOT_CONFTEST.read_text())
    pytester.makepyfile(test_inner=TESTS)
    monkeypatch.setenv("CONSTRAIN_SHARED", str(tmp_path / "empty"))
    return pytester


def test_absent_data_fails_when_required(suite, monkeypatch):
    monkeypatch.setenv("CONSTRAIN_REQUIRE_SHARED", "1")
    result = suite.runpytest_inprocess("-rA")
    result.assert_outcomes(failed=1, skipped=1, xfailed=1)
    result.stdout.fnmatch_lines(
        ["*CONSTRAIN_REQUIRE_SHARED is set, but the shared data is absent*"]
    )
    failed = [r.nodeid for r in result.reprec.getreports("pytest_runtest_logreport") if r.failed]
    assert failed == ["test_inner.py::test_needs_the_data"]


@pytest.mark.parametrize("value", [None, "", "0"])
def test_absent_data_skips_otherwise(suite, monkeypatch, value):
    if value is None:
        monkeypatch.delenv("CONSTRAIN_REQUIRE_SHARED", raising=False)
    else:
        monkeypatch.setenv("CONSTRAIN_REQUIRE_SHARED", value)
    suite.runpytest_inprocess().assert_outcomes(skipped=2, xfailed=1)


def test_ci_requires_the_data():
    """CI has the shared data beside the clone: its run must not pass by skipping."""
    ci = (ROOT_CONFTEST.parent / ".ci" / "run").read_text()
    assert "CONSTRAIN_REQUIRE_SHARED=1" in ci
