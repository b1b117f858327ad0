"""Lark's bundled grammars, trimmed to what a grammar imports from them.

``%import common.WS`` makes lark parse the whole of its ``common.lark`` (60
lines) for every grammar that imports from it: most of loading a small
grammar (DOMINO's JSON: 3.6 of 4.4 ms). :func:`loader` hands lark only the
definitions the imported names need (their closure over the names their
bodies mention), so lark builds the same grammar from less text, and keeps
every rule of its own (mangling, aliases, what it drops as unused).

A bundled file is trimmed only when every line of it is blank, a comment or
a one-line definition (``common.lark`` and ``unicode.lark`` are), and only
when it defines every name imported from it; anything else is lark's to load
as it is. The caller loads again without the loader if the trimmed load
fails, so an error is always lark's own.
"""

from __future__ import annotations

import functools
import pkgutil
import re
from collections.abc import Callable

from lark.load_grammar import PackageResource

__all__ = ["loader"]

_DEFINITION = re.compile(r"([A-Za-z_]\w*)(?:\.-?\d+)?\s*:(.*)")
_NAME = re.compile(r"[A-Za-z_]\w*")
#: ``%import a.b.NAME``, ``%import a.NAME -> ALIAS``, ``%import a (N1, N2)``
_IMPORT = re.compile(r"^[ \t]*%import[ \t]+([A-Za-z_][\w.]*)[ \t]*(?:\(([^)]*)\))?", re.MULTILINE)


@functools.cache
def _bundled(path: str) -> dict[str, tuple[str, frozenset[str]]] | None:
    """Lark's ``grammars/<path>`` as name → (its line, the names its body
    mentions), in file order; ``None`` when lark has no such file or a line
    of it is not a one-line definition."""
    try:
        data = pkgutil.get_data("lark", f"grammars/{path}")
    except OSError:
        return None
    if data is None:
        return None
    definitions: dict[str, tuple[str, frozenset[str]]] = {}
    for line in data.decode("utf-8").splitlines():
        text = line.strip()
        if not text or text.startswith("//"):
            continue
        m = _DEFINITION.fullmatch(text)
        if m is None or line[0].isspace():
            return None
        definitions[m[1]] = (text, frozenset(_NAME.findall(m[2])))
    return definitions


def _imports(text: str) -> dict[str, set[str]]:
    """The bundled files ``text`` imports from (``common.lark``) and the
    names it imports from each."""
    wanted: dict[str, set[str]] = {}
    for m in _IMPORT.finditer(text):
        path, group = m[1], m[2]
        if group is not None:
            module, names = path, [n.strip() for n in group.split(",") if n.strip()]
        else:
            module, _, name = path.rpartition(".")
            names = [name]
        if module:
            wanted.setdefault(module.replace(".", "/") + ".lark", set()).update(names)
    return wanted


def loader(text: str) -> Callable[[str | None, str], tuple[PackageResource, str]] | None:
    """An import source for ``lark.load_grammar`` that gives each bundled
    file ``text`` imports from as the definitions its imported names need
    (``OSError`` for any other file: lark then looks where it always does);
    ``None`` when there is nothing to trim."""
    trimmed: dict[str, str] = {}
    for path, names in _imports(text).items():
        definitions = _bundled(path)
        if definitions is None or not names <= definitions.keys():
            continue
        needed, todo = set(names), list(names)
        while todo:
            for name in definitions[todo.pop()][1]:
                if name in definitions and name not in needed:
                    needed.add(name)
                    todo.append(name)
        trimmed[path] = "".join(line + "\n" for n, (line, _) in definitions.items() if n in needed)
    if not trimmed:
        return None

    def source(base_path: str | None, grammar_path: str) -> tuple[PackageResource, str]:
        if base_path is None and grammar_path in trimmed:
            return PackageResource("lark", f"grammars/{grammar_path}"), trimmed[grammar_path]
        raise OSError(grammar_path)

    return source
