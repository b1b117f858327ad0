"""Every test run of the repository: a skip for absent shared data can be made a failure.

Tests that need the data beside the project (``../shared``, or
``$CONSTRAIN_SHARED``) skip when it is absent, saying so: their skip reason
names ``CONSTRAIN_SHARED`` (``constrain_api.shared.shared_file``'s error
does). A newcomer without the data gets skips; with
``CONSTRAIN_REQUIRE_SHARED=1`` in the environment (``.ci/run`` sets it,
since CI has the data) such a skip is reported as a failure instead, so a
run that could not see the data never passes for one that checked it.
"""

from __future__ import annotations

import os

import pytest

#: What every skip for absent shared data says.
SHARED_MARK = "CONSTRAIN_SHARED"
#: The environment variable that turns those skips into failures.
REQUIRE_ENV = "CONSTRAIN_REQUIRE_SHARED"


def _skip_reason(report: pytest.TestReport) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2])
    return str(longrepr)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    outcome = yield
    report = outcome.get_result()
    if not report.skipped or os.environ.get(REQUIRE_ENV, "") in ("", "0"):
        return
    if hasattr(report, "wasxfail"):
        return
    reason = _skip_reason(report)
    if SHARED_MARK in reason:
        report.outcome = "failed"
        report.longrepr = f"{REQUIRE_ENV} is set, but the shared data is absent: {reason}"
