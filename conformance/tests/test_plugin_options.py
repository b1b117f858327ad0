"""Command-line options of the conformance plugin."""

from __future__ import annotations

from constrain_conformance.plugin import BackendSpec, _backend_specs

import constrain_api as ca


class _Config:
    def __init__(self, backends):
        self.backends = backends

    def getoption(self, name):
        assert name == "--backend"
        return self.backends


def test_backend_all_is_every_installed_backend_and_variants_add_to_it():
    installed = [BackendSpec(info.name) for info in ca.available()]
    assert _backend_specs(_Config([])) == installed
    variant = "xgrammar:json_schema='engine'"
    specs = _backend_specs(_Config(["all", variant, "naive"]))
    assert specs == [*installed, BackendSpec.parse(variant)]  # no duplicate naive
    assert _backend_specs(_Config(["naive"])) == [BackendSpec("naive")]
