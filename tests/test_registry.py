"""Plugin discovery through real entry points (installed distribution and
dist-info folders on sys.path), in-process registration, the CLI."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import constrain_api as ca
from constrain_api import BackendNotFound, Registry
from constrain_api.cli import main as cli_main

TEST_BACKEND = "test-choice"
TEST_DIST = "constrain-testplugin"


def make_distribution(root: Path, dist: str, entry_points: dict[str, str], modules: dict[str, str]):
    """A minimal installed distribution: a .dist-info folder plus modules, in ``root``.

    importlib.metadata discovers it exactly as it discovers pip-installed
    packages once ``root`` is on sys.path."""
    info = root / f"{dist.replace('-', '_')}-1.2.3.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.2.3\n")
    lines = "\n".join(f"{name} = {target}" for name, target in entry_points.items())
    (info / "entry_points.txt").write_text(f"[constrain_api]\n{lines}\n")
    for module, source in modules.items():
        (root / f"{module}.py").write_text(textwrap.dedent(source))


GOOD_PLUGIN = """
    import constrain_api as ca

    class Backend(ca.BaseBackend):
        name = "{name}"
        capabilities = ca.Capabilities(kinds={{"regex"}})

        def build(self, spec, vocab, **options):
            raise NotImplementedError

    @ca.hookimpl
    def constrain_backends():
        return [Backend]
"""

RAISING_HOOK = """
    import constrain_api as ca

    @ca.hookimpl
    def constrain_backends():
        raise RuntimeError("hook exploded")
"""


MISSPELLED_HOOK = """
    import constrain_api as ca

    @ca.hookimpl
    def constrain_backend():  # the hook is constrain_backends
        return []
"""

UNKNOWN_ARGUMENT = """
    import constrain_api as ca

    @ca.hookimpl
    def constrain_backends(config):
        return []
"""

NO_HOOKS = """
    def constrain_backends():  # not marked with @hookimpl
        return []
"""

NOT_A_LIST = """
    import constrain_api as ca

    @ca.hookimpl
    def constrain_backends():
        return object()
"""


@pytest.fixture
def invalid_plugins(tmp_path, monkeypatch):
    """Distributions whose hook implementations do not match the specifications."""
    for dist, module, source in [
        ("misspelled-plugin", "misspelled_mod", MISSPELLED_HOOK),
        ("argument-plugin", "argument_mod", UNKNOWN_ARGUMENT),
        ("hookless-plugin", "hookless_mod", NO_HOOKS),
        ("notalist-plugin", "notalist_mod", NOT_A_LIST),
    ]:
        name = dist.removesuffix("-plugin")
        make_distribution(tmp_path, dist, {name: module}, {module: source})
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


@pytest.fixture
def extra_plugins(tmp_path, monkeypatch):
    """Three more distributions: one that fails to import, one whose hook
    raises, one that claims the name of the installed test backend."""
    make_distribution(tmp_path, "broken-plugin", {"broken": "no_such_module_xyz"}, {})
    make_distribution(
        tmp_path, "raising-plugin", {"raising": "raising_mod"}, {"raising_mod": RAISING_HOOK}
    )
    make_distribution(
        tmp_path,
        "squatting-plugin",
        {"zz_squat": "squat_mod"},
        {"squat_mod": GOOD_PLUGIN.format(name=TEST_BACKEND)},
    )
    make_distribution(
        tmp_path,
        "other-plugin",
        {"other": "other_mod"},
        {"other_mod": GOOD_PLUGIN.format(name="other")},
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def test_installed_test_plugin_is_found_by_get_and_available():
    registry = Registry()
    backend = registry.get(TEST_BACKEND)
    assert backend.name == TEST_BACKEND
    assert isinstance(backend, ca.Backend)
    (info,) = [i for i in registry.available() if i.name == TEST_BACKEND]
    assert info.distribution == TEST_DIST and info.version == "0.0.1"
    assert info.capabilities.is_exact("choice")
    assert TEST_BACKEND in info.describe() and TEST_DIST in info.describe()


def test_module_level_api_uses_the_default_registry():
    assert any(i.name == TEST_BACKEND for i in ca.available())
    assert ca.get(TEST_BACKEND).name == TEST_BACKEND


def test_unknown_backend_lists_installed_ones():
    with pytest.raises(BackendNotFound) as info:
        Registry().get("no-such-backend")
    assert TEST_BACKEND in info.value.installed
    assert "no-such-backend" in str(info.value) and TEST_BACKEND in str(info.value)
    assert isinstance(info.value, LookupError)


def test_broken_plugins_are_reported_and_do_not_break_others(extra_plugins):
    registry = Registry()
    assert {TEST_BACKEND, "other"} <= set(registry.names())
    errors = {e.plugin: e for e in registry.errors()}
    assert "ModuleNotFoundError" in errors["broken"].error
    assert errors["broken"].distribution == "broken-plugin"
    assert "hook exploded" in errors["raising"].error
    # The name clash keeps the first provider and reports the second.
    assert "already provided" in errors[TEST_BACKEND].error
    assert registry.available()[0].name  # listing still works
    with pytest.raises(BackendNotFound) as info:
        registry.get("missing")
    assert "broken (broken-plugin)" in str(info.value)


def test_hook_implementations_are_checked_against_the_specifications(invalid_plugins):
    registry = Registry()
    errors = {e.plugin: e for e in registry.errors()}
    assert "unknown hook 'constrain_backend'" in errors["misspelled"].error
    assert errors["misspelled"].distribution == "misspelled-plugin"
    assert "config" in errors["argument"].error
    assert "implements none of the hooks" in errors["hookless"].error
    assert "returned object, not a list" in errors["notalist"].error
    assert TEST_BACKEND in registry.names()  # the valid plugins still load


def test_in_process_registration_of_an_invalid_plugin_raises_and_registers_nothing():
    import pluggy

    class Misspelled:
        @ca.hookimpl
        def constrain_workload(self):
            return []

    registry = Registry()
    before = registry.names(), registry.workloads()
    with pytest.raises(pluggy.PluginValidationError, match="unknown hook 'constrain_workload'"):
        registry.register(Misspelled())
    with pytest.raises(pluggy.PluginValidationError, match="implements none of the hooks"):
        registry.register(object())
    assert (registry.names(), registry.workloads()) == before and registry.errors() == []
    # nothing is left pending: a valid plugin registers after the refusals
    registry.register(Configurable)
    assert "configurable" in registry.names()


class Configurable(ca.BaseBackend):
    name = "configurable"
    capabilities = ca.Capabilities(kinds={"regex"})

    def __init__(self, k: int = 0):
        self.k = k


def test_options_reach_the_backend_constructor():
    registry = Registry()
    unregister = registry.register(Configurable)
    assert registry.get("configurable", k=3).k == 3
    with pytest.raises(TypeError):
        registry.get("configurable", nonsense=1)
    unregister()
    with pytest.raises(BackendNotFound):
        registry.get("configurable")
    assert TEST_BACKEND in registry.names()  # entry points unaffected


def test_register_a_pluggy_plugin_object_with_spec_kinds_and_workloads():
    class Kind(ca.Constraint):
        kind = "toy"

    workload = ca.Workload("toy-digits", ca.Regex("[0-9]+"), documents=["42"])

    class Plugin:
        @ca.hookimpl
        def constrain_spec_kinds(self):
            return [Kind]

        @ca.hookimpl
        def constrain_workloads(self):
            return [workload]

    registry = Registry()
    registry.register(Plugin())
    kinds = registry.spec_kinds()
    assert kinds["toy"] is Kind and kinds["regex"] is ca.Regex
    assert workload in registry.workloads()


def test_cli_list_shows_installed_backends(capsys):
    assert cli_main(["list"]) == 0
    out = capsys.readouterr().out
    assert TEST_BACKEND in out and TEST_DIST in out and "choice" in out


def test_constrain_command_runs_as_a_program(extra_plugins):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(extra_plugins), *sys.path]))
    proc = subprocess.run(
        [sys.executable, "-m", "constrain_api", "list"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert TEST_BACKEND in proc.stdout and "other" in proc.stdout
    assert "failed to load broken (broken-plugin)" in proc.stderr
    script = Path(sys.executable).with_name("constrain")
    assert script.exists(), "the console script `constrain` is installed with the package"
    proc = subprocess.run([str(script), "list"], capture_output=True, text=True, check=False)
    assert proc.returncode == 0 and TEST_BACKEND in proc.stdout
