"""Stage the documentation site's sources: ``python docs/site.py DEST``.

The pages link across the repository (the README to ``docs/``, the docs to
the plugins' READMEs and to source files), and MkDocs only resolves links
inside its ``docs_dir``, which may not contain its own config. So the site
is built from a copy of the repository's tracked files at their own paths:
every link that works on the repository works on the site, and a broken
one fails ``mkdocs build --strict`` (``nox -s docs``).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: Not part of the site: CI scripts and the raw benchmark results.
SKIP = (".ci/", "docs/bench/raw/", "mkdocs.yml")


def tracked_files() -> list[str]:
    """The repository's files, as git knows them (untracked new pages too)."""
    out = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return [f for f in out.splitlines() if not f.startswith(SKIP) and (ROOT / f).is_file()]


def main(dest: str) -> None:
    target = Path(dest).resolve()
    if target.exists():
        shutil.rmtree(target)
    for name in tracked_files():
        (target / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, target / name)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "build/site-src")
