"""The plugin hooks. A plugin is a module (or object) with functions marked
``@hookimpl`` and registered under the entry-point group ``constrain_api``::

    [project.entry-points.constrain_api]
    mybackend = "my_package.plugin"

Each hook returns a list; the registry calls every plugin's implementation
separately, so one plugin that fails is reported and the others still load.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:  # pragma: no cover
    from .protocols import Backend
    from .specs import Constraint
    from .workloads import Workload

#: Entry-point group and pluggy project name.
PROJECT = "constrain_api"

hookspec = pluggy.HookspecMarker(PROJECT)
#: Decorator for plugin hook implementations.
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec
def constrain_backends() -> list[type[Backend]]:
    """Backend classes this plugin provides. Each has a unique ``name`` and
    ``capabilities``, and is constructed as ``cls(**options)``."""


@hookspec
def constrain_spec_kinds() -> list[type[Constraint]]:
    """Constraint classes (subclasses of ``Constraint`` with a new ``kind``)."""


@hookspec
def constrain_workloads() -> list[Workload]:
    """Benchmark workloads this plugin adds to the throughput suite."""
