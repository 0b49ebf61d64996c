"""The Python package has no import circle (issue 39 point 3, as crates/ssdlab/tests/architecture.rs
checks for the core): no module imports, however indirectly, a module that imports it back.

Every import counts, at the top of a file or inside a function (a lazy import is an arrow all the
same). A package's ``__init__.py`` is the package's face: it gathers its modules' names and
they may take shared types from it, so it takes no part in a circle, as a folder's mod.rs in the
core's test.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "python" / "ssdlab"


def _modules() -> dict[str, Path]:
    """Every module of the package by its dotted name (a package by its own name)."""
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The package's modules that module `name` imports."""
    is_package = path.name == "__init__.py"
    package = name if is_package else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name in modules)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target not in modules:
                continue
            found.add(target)
            # `from . import x` where x is a module names that module.
            named = (f"{target}.{a.name}" for a in node.names)
            found.update(m for m in named if m in modules)
    return found


def _faces(modules: dict[str, Path]) -> set[str]:
    return {name for name, path in modules.items() if path.name == "__init__.py"}


def circles() -> list[list[str]]:
    """Each circle as the modules along it (strongly connected groups of more than one module,
    or a module that imports itself)."""
    modules = _modules()
    faces = _faces(modules)
    graph = {
        name: sorted(_imports(name, path, modules) - faces)
        for name, path in modules.items()
        if name not in faces
    }
    # A circle is a group of modules each reachable from the others: with about a hundred
    # modules, the set each one reaches is cheap to walk.
    reach = {name: _reachable(graph, name) for name in graph}
    found: list[list[str]] = []
    for name in graph:
        group = sorted(m for m in reach[name] if name in reach[m])
        if group and group[0] == name:  # each circle once, from its first member
            found.append(group)
    return found


def _reachable(graph: dict[str, list[str]], start: str) -> set[str]:
    """The modules `start` imports, directly or through others (itself only round a circle)."""
    seen: set[str] = set()
    todo = list(graph[start])
    while todo:
        name = todo.pop()
        if name in seen or name not in graph:
            continue
        seen.add(name)
        todo.extend(graph[name])
    return seen


def test_no_module_of_the_package_imports_one_that_imports_it_back() -> None:
    assert circles() == [], (
        "import circles in python/ssdlab (move what both sides need into a module below both):"
        f" {circles()}"
    )


def test_the_check_sees_a_circle_and_a_lazy_import(tmp_path, monkeypatch) -> None:
    """The check itself: two modules that import each other, one lazily inside a function, are
    found; the package's face importing them is not a circle."""
    package = tmp_path / "ssdlab"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("from .a import f\n")
    (package / "a.py").write_text("from .sub.b import g\n\ndef f():\n    return g()\n")
    (package / "sub" / "__init__.py").write_text("from .b import g\n")
    (package / "sub" / "b.py").write_text("def g():\n    from ..a import f\n    return f\n")
    monkeypatch.setitem(globals(), "PACKAGE", package)
    assert circles() == [["ssdlab.a", "ssdlab.sub.b"]]
    (package / "sub" / "b.py").write_text("def g():\n    return 1\n")
    assert circles() == []
