"""Every public name is documented, and the plugin-facing API is importable
from the top-level package alone."""

from __future__ import annotations

import inspect

import pytest

import constrain_api as ca


def _public_members(obj):
    for name, member in vars(obj).items():
        if name.startswith("_"):
            continue
        if isinstance(member, property):
            yield name, member.fget
        elif inspect.isfunction(member) or isinstance(member, classmethod | staticmethod):
            yield name, getattr(member, "__func__", member)


@pytest.mark.parametrize("name", ca.__all__)
def test_public_name_has_a_docstring(name):
    obj = getattr(ca, name)
    if isinstance(obj, str | int | frozenset):  # constants are documented where defined
        return
    assert inspect.getdoc(obj), f"constrain_api.{name} has no docstring"
    if inspect.isclass(obj):
        undocumented = [
            member
            for member, func in _public_members(obj)
            if func is not None and func.__module__.startswith("constrain_api") and not func.__doc__
        ]
        assert not undocumented, f"{name}: undocumented {undocumented}"


def test_all_names_exist():
    assert len(set(ca.__all__)) == len(ca.__all__)
    for name in ca.__all__:
        assert hasattr(ca, name), name
