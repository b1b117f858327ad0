"""The plugin registry: backends, constraint kinds and workloads from installed
distributions (entry-point group ``constrain_api``) and from ``register()``.

Discovery is lazy and fault-tolerant: a plugin that fails to import, whose
hook implementations do not match the hook specifications (a misspelled hook
name, an argument no hook has, no hook at all), or whose hook raises, is
recorded in :meth:`Registry.errors` and the others load. Hooks are called
through pluggy (``pm.subset_hook_caller``), one plugin at a time, so one
plugin's failure never hides another's results.
"""

from __future__ import annotations

import importlib.metadata as md
import itertools
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import pluggy

from . import hookspecs
from .budget import BUDGET_OPTIONS
from .errors import BackendNotFound
from .hookspecs import PROJECT, hookimpl
from .protocols import Backend, Capabilities

_IN_PROCESS = "<in-process>"


@dataclass(frozen=True)
class BackendInfo:
    """An installed backend: its ``name``, the ``distribution`` and ``version``
    that provide it, and the ``capabilities`` of its default configuration."""

    name: str
    distribution: str
    version: str
    capabilities: Capabilities | None
    backend_class: type

    def describe(self) -> str:
        """``name  distribution version  capabilities`` on one line."""
        caps = self.capabilities.describe() if self.capabilities else "?"
        return f"{self.name:<12} {self.distribution} {self.version}  [{caps}]"


@dataclass(frozen=True)
class PluginError:
    """A plugin that could not be loaded: entry point, distribution, the error."""

    plugin: str
    distribution: str
    error: str

    def __str__(self) -> str:
        return f"{self.plugin} ({self.distribution}): {self.error}"


@dataclass(frozen=True)
class _Source:
    distribution: str
    version: str


class _BackendPlugin:
    """Wraps backend classes given to ``register()`` as a pluggy plugin."""

    def __init__(self, classes: list[type]):
        self.classes = classes

    @hookimpl
    def constrain_backends(self) -> list[type]:
        return list(self.classes)


class Registry:
    """Backends and spec kinds from the entry-point ``group`` and from ``register``."""

    def __init__(self, group: str = PROJECT):
        self.group = group
        self._counter = itertools.count()
        self._reset()

    def _reset(self) -> None:
        self._pm = pluggy.PluginManager(PROJECT)
        self._pm.add_hookspecs(hookspecs)
        self._sources: dict[str, _Source] = {}
        self._load_errors: list[PluginError] = []
        self._loaded = False
        self._backends: dict[str, tuple[type, _Source]] | None = None
        self._hook_errors: list[PluginError] = []

    def reload(self) -> None:
        """Forget everything and discover the entry points again (keeps nothing
        registered in-process)."""
        self._reset()

    # -- discovery -----------------------------------------------------------------
    def _load_entry_points(self) -> None:
        if self._loaded:
            return
        self._loaded = True
        for ep in sorted(md.entry_points(group=self.group), key=lambda e: e.name):
            dist = ep.dist.name if ep.dist is not None else "?"
            version = ep.dist.version if ep.dist is not None else "?"
            try:
                self._register_checked(ep.load(), f"entrypoint:{ep.name}")
            except Exception as exc:  # a broken plugin must not break the others
                self._load_errors.append(PluginError(ep.name, dist, f"{type(exc).__name__}: {exc}"))
                continue
            self._sources[f"entrypoint:{ep.name}"] = _Source(dist, version)

    def _register_checked(self, plugin: Any, name: str) -> None:
        """Register ``plugin`` under ``name`` and validate it against the hook
        specifications; on failure unregister it and raise
        ``pluggy.PluginValidationError``. pluggy's ``register`` refuses an
        argument no hook has; ``check_pending`` refuses an implementation of
        an unknown hook (a misspelled name would otherwise never be called)."""
        self._pm.register(plugin, name=name)
        try:
            self._pm.check_pending()
            if not self._pm.get_hookcallers(plugin):
                hooks = ", ".join(sorted(n for n in dir(hookspecs) if n.startswith("constrain_")))
                raise pluggy.PluginValidationError(
                    plugin, f"implements none of the hooks ({hooks}) with @hookimpl"
                )
        except Exception:
            self._pm.unregister(name=name)
            raise

    def _call_each(self, hook_name: str) -> list[tuple[Any, _Source]]:
        """Call one hook through pluggy on every plugin separately (a plugin's
        error is recorded, the others' results kept); collect (item, source)."""
        self._load_entry_points()
        results = []
        plugins = dict(self._pm.list_name_plugin())
        for impl in getattr(self._pm.hook, hook_name).get_hookimpls():
            source = self._sources.get(impl.plugin_name, _Source(_IN_PROCESS, ""))
            others = [p for n, p in plugins.items() if n != impl.plugin_name]
            call = self._pm.subset_hook_caller(hook_name, remove_plugins=others)
            plugin_name = impl.plugin_name.removeprefix("entrypoint:")
            try:
                results_of_one = call()  # pluggy drops a None result
            except Exception as exc:
                error = f"{hook_name} raised {type(exc).__name__}: {exc}"
                self._hook_errors.append(PluginError(plugin_name, source.distribution, error))
                continue
            if not results_of_one:
                continue
            (result,) = results_of_one
            if not isinstance(result, list | tuple):
                error = f"{hook_name} returned {type(result).__name__}, not a list"
                self._hook_errors.append(PluginError(plugin_name, source.distribution, error))
                continue
            results.extend((item, source) for item in result)
        return results

    def _backend_table(self) -> dict[str, tuple[type, _Source]]:
        if self._backends is None:
            self._hook_errors = []
            table: dict[str, tuple[type, _Source]] = {}
            for cls, source in self._call_each("constrain_backends"):
                name = getattr(cls, "name", None)
                if not isinstance(name, str) or not name:
                    self._hook_errors.append(
                        PluginError(repr(cls), source.distribution, "backend class has no name")
                    )
                elif name in table and table[name][0] is not cls:
                    other = table[name][1].distribution
                    self._hook_errors.append(
                        PluginError(
                            name,
                            source.distribution,
                            f"backend name {name!r} is already provided by {other}",
                        )
                    )
                else:
                    table[name] = (cls, source)
            self._backends = table
        return self._backends

    # -- public --------------------------------------------------------------------
    def names(self) -> list[str]:
        """Names of the backends that loaded, sorted."""
        return sorted(self._backend_table())

    def get(self, name: str, **options: Any) -> Backend:
        """A new instance of backend ``name`` configured with ``options``
        (``max_seconds`` and ``max_memory_mb`` go to its ``set_budget``).

        Raises ``BackendNotFound`` (listing what is installed and what failed
        to load) for an unknown name."""
        table = self._backend_table()
        if name not in table:
            raise BackendNotFound(name, sorted(table), [str(e) for e in self.errors()])
        cls, _ = table[name]
        bounds = {k: options.pop(k) for k in BUDGET_OPTIONS if k in options}
        backend = cls(**options)
        if bounds:
            if not hasattr(backend, "set_budget"):
                raise TypeError(f"backend {name!r} takes no {sorted(bounds)} (not a BaseBackend)")
            backend.set_budget(**bounds)
        return backend

    def available(self) -> list[BackendInfo]:
        """Every backend that loaded, with its default capabilities, sorted by name."""
        infos = []
        for name, (cls, source) in sorted(self._backend_table().items()):
            caps = getattr(cls, "capabilities", None)
            if not isinstance(caps, Capabilities):
                try:
                    caps = cls().capabilities
                except Exception:
                    caps = None
            infos.append(BackendInfo(name, source.distribution, source.version, caps, cls))
        return infos

    def errors(self) -> list[PluginError]:
        """Plugins that failed to import, and hooks that raised."""
        self._backend_table()
        return [*self._load_errors, *self._hook_errors]

    def spec_kinds(self) -> dict[str, type]:
        """Constraint kinds: the built-in ones plus those plugins add."""
        from .specs import spec_kinds

        kinds = dict(spec_kinds())
        for cls, _source in self._call_each("constrain_spec_kinds"):
            kinds.setdefault(cls.kind, cls)
        return kinds

    def workloads(self) -> list[Any]:
        """Benchmark workloads contributed by plugins."""
        return [w for w, _source in self._call_each("constrain_workloads")]

    def register(self, plugin: Any) -> Callable[[], None]:
        """Register a backend class, a list of them, or a pluggy plugin object
        in this process (tests, notebooks). Returns a function that unregisters it.

        Raises ``pluggy.PluginValidationError`` (and registers nothing) when the
        plugin's hook implementations do not match the hook specifications."""
        self._load_entry_points()
        if isinstance(plugin, type) and hasattr(plugin, "compile"):
            plugin = _BackendPlugin([plugin])
        elif isinstance(plugin, Iterable) and not isinstance(plugin, str | bytes):
            plugin = _BackendPlugin(list(plugin))
        name = f"inprocess:{next(self._counter)}"
        self._register_checked(plugin, name)
        self._backends = None

        def unregister() -> None:
            if self._pm.get_plugin(name) is not None:
                self._pm.unregister(name=name)
                self._backends = None

        return unregister


#: The process-wide registry behind ``constrain_api.get`` and friends.
default_registry = Registry()


def get(name: str, **options: Any) -> Backend:
    """The installed backend ``name``, constructed with ``options``."""
    return default_registry.get(name, **options)


def available() -> list[BackendInfo]:
    """The installed backends (name, distribution, version, capabilities)."""
    return default_registry.available()


def register(plugin: Any) -> Callable[[], None]:
    """Register a backend class or plugin in-process; returns its unregister function."""
    return default_registry.register(plugin)


def plugin_workloads() -> list[Any]:
    """Benchmark workloads the installed plugins contribute (``constrain_workloads``)."""
    return default_registry.workloads()


def plugin_errors() -> list[PluginError]:
    """Plugins that failed to load, with their errors."""
    return default_registry.errors()
