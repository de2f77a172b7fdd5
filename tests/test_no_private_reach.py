"""No module of one package reaches into another package's private names.

The four packages (eager <- graph_runtime <- autograph <- tracing) talk through
public, documented entry points only.  This scans every module's source: an
import of another package's `_private` module or name fails, and so does
`mod._private` where `mod` is a module of another package bound by an import
(e.g. `from eager import tape_state as _ts; _ts._state`).  The allow-list is
empty on purpose: add the public entry point instead.
"""
from __future__ import annotations

import ast
import importlib
import inspect
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGES = ("eager", "graph_runtime", "autograph", "tracing")
ALLOWED: frozenset = frozenset()


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _is_module(qualname: str) -> bool:
    mod, _, attr = qualname.rpartition(".")
    try:
        return inspect.ismodule(getattr(importlib.import_module(mod), attr)) if mod else True
    except (ImportError, AttributeError):
        try:
            importlib.import_module(qualname)
            return True
        except ImportError:
            return False


def reaches(path: pathlib.Path, pkg: str) -> list:
    """`(line, what)` for each private reach of module `path` (of package `pkg`) into another package."""
    tree = ast.parse(path.read_text(), str(path))
    found, modules = [], {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module.split(".")[0] in PACKAGES and node.module.split(".")[0] != pkg:
                if any(_private(p) for p in node.module.split(".")):
                    found.append((node.lineno, f"from {node.module} import ..."))
                for a in node.names:
                    if _private(a.name):
                        found.append((node.lineno, f"from {node.module} import {a.name}"))
                    elif _is_module(f"{node.module}.{a.name}"):
                        modules[a.asname or a.name] = f"{node.module}.{a.name}"
        elif isinstance(node, ast.Import):
            for a in node.names:
                top = a.name.split(".")[0]
                if top in PACKAGES and top != pkg:
                    if any(_private(p) for p in a.name.split(".")):
                        found.append((node.lineno, f"import {a.name}"))
                    modules[a.asname or top] = a.name if a.asname else top
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _private(node.attr):
            base, chain = node.value, [node.attr]
            while isinstance(base, ast.Attribute):
                chain.append(base.attr)
                base = base.value
            if isinstance(base, ast.Name) and base.id in modules:
                found.append((node.lineno, f"{modules[base.id]}.{'.'.join(reversed(chain))}"))
    return found


def _modules():
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            yield pkg, path


def test_no_module_reaches_into_another_packages_private_names():
    bad = [f"{path.relative_to(ROOT)}:{line}: {what}" for pkg, path in _modules()
           for line, what in reaches(path, pkg) if f"{path.relative_to(ROOT)}: {what}" not in ALLOWED]
    assert not bad, "private reaches across packages (add a public entry point):\n" + "\n".join(sorted(set(bad)))


@pytest.mark.parametrize("source, expected", [
    ("from eager.variables import _read_kernel\n", "from eager.variables import _read_kernel"),
    ("from eager.ops._define import broadcast_shapes\n", "from eager.ops._define import ..."),
    ("from eager import tape_state as _ts\n_ts._state.tapes = []\n", "eager.tape_state._state"),
    ("import eager\neager.context._state\n", "eager.context._state"),
])
def test_the_scanner_finds_each_kind_of_reach(tmp_path, source, expected):
    path = tmp_path / "mod.py"
    path.write_text(source)
    assert expected in [what for _, what in reaches(path, "graph_runtime")]


def test_the_scanner_ignores_a_packages_own_private_names_and_non_modules(tmp_path):
    path = tmp_path / "mod.py"
    path.write_text("from eager.variables import _read_kernel\nfrom eager.registry import op\nop._attrs\n")
    assert reaches(path, "eager") == []          # its own package
    assert [w for _, w in reaches(path, "tracing")] == ["from eager.variables import _read_kernel"]
