"""The ``constrain`` command line."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from .registry import default_registry


def _list(args: argparse.Namespace) -> int:
    infos = default_registry.available()
    errors = default_registry.errors()
    if not infos:
        print("no backends installed (install constrain-naive, constrain-fsm, ...)")
    for info in infos:
        print(info.describe())
    if infos:
        print("(kinds marked ~ have inexact masks: never too permissive, maybe too strict)")
    for error in errors:
        print(f"failed to load {error}", file=sys.stderr)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``constrain``; returns the exit status."""
    parser = argparse.ArgumentParser(prog="constrain", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("list", help="installed backends and their capabilities").set_defaults(
        run=_list
    )
    args = parser.parse_args(argv)
    return args.run(args)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
