"""The project's modules import each other as a DAG, and imports only point down.

Rules, read from the source with `ast` (nothing is imported), for each of the
four packages (eager <- graph_runtime <- autograph <- tracing):

- module-level imports between a package's modules are acyclic;
- counting function-level imports too, they are still acyclic: a
  function-level import never holds a cycle together (`ALLOWED_UPWARD` would
  list an exception with its reason; it is empty and should stay so);
- across packages, every import (module- or function-level) points down:
  `eager` imports nothing from the other three, `graph_runtime` only `eager`,
  `autograph` `eager` and `graph_runtime`;
- no package has a function-level import of a project module at all; the
  function-level imports of other modules (the optional extras: numexpr, ray,
  tensorboard, grandalf; a version-dependent part of gast) each carry a comment
  saying why.

An edge `a -> b` exists for `import b`, `from b import name` and
`from b import submodule` (also `a -> b.submodule`, since importing a submodule
first runs its package's `__init__`).  A module importing a submodule of one
of its own enclosing packages (`from . import sibling`) does not depend on
that package: the package is already being initialized.
"""
from __future__ import annotations

import ast
import functools
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PROJECT = ("eager", "graph_runtime", "autograph", "tracing")     # lowest first: each may import those before it

# (importer, imported) -> why the import has to stay function-level.  Keep this empty: where a lower module
# must reach a higher one, give it a seam instead (a hook stored on the object, a registration).
ALLOWED_UPWARD: dict = {}


@functools.lru_cache(maxsize=None)
def _modules(package: str) -> dict:
    """Dotted module name -> (path, is_package) for every module of `package`."""
    mods = {}
    for dirpath, _dirs, files in os.walk(os.path.join(ROOT, package)):
        for f in files:
            if not f.endswith(".py"):
                continue
            path = os.path.join(dirpath, f)
            name = os.path.relpath(path, ROOT)[:-3].replace(os.sep, ".")
            is_pkg = name.endswith(".__init__")
            mods[name[:-len(".__init__")] if is_pkg else name] = (path, is_pkg)
    return mods


def _targets(mods: dict, importer: str, is_pkg: bool, node) -> set:
    """The package modules that `node` (an Import / ImportFrom) makes `importer` depend on."""
    ancestors = {".".join(importer.split(".")[:i]) for i in range(1, importer.count(".") + 1)}
    if is_pkg:
        ancestors.add(importer)
    out = set()
    if isinstance(node, ast.Import):
        for alias in node.names:
            parts = alias.name.split(".")
            out.update(".".join(parts[:i]) for i in range(1, len(parts) + 1))
        return {m for m in out if m in mods and m not in ancestors}
    if node.level:
        base = importer.split(".") if is_pkg else importer.split(".")[:-1]
        base = base[:len(base) - (node.level - 1)]
        source = ".".join(base + ([node.module] if node.module else []))
    else:
        source = node.module or ""
    parts = source.split(".")
    out.update(".".join(parts[:i]) for i in range(1, len(parts)))     # enclosing packages run first
    names_only = False
    for alias in node.names:
        sub = f"{source}.{alias.name}"
        if sub in mods:
            out.add(sub)
        else:
            names_only = True
    out = {m for m in out if m not in ancestors}
    if names_only or source not in ancestors:
        out.add(source)
    return {m for m in out if m in mods and m != importer}


@functools.lru_cache(maxsize=None)
def import_edges(package: str = "graph_runtime") -> tuple:
    """`(module_level, function_level)` edges inside `package`: dicts importer -> {(imported, line)}."""
    mods = _modules(package)
    top: dict = {m: set() for m in mods}
    late: dict = {m: set() for m in mods}

    for name, (path, is_pkg) in mods.items():
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), path)
        work = [(tree, False)]
        while work:
            node, in_function = work.pop()
            for child in ast.iter_child_nodes(node):
                if isinstance(child, (ast.Import, ast.ImportFrom)):
                    for t in _targets(mods, name, is_pkg, child):
                        (late if in_function else top)[name].add((t, child.lineno))
                nested = isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
                work.append((child, in_function or nested))
    return top, late


def find_cycle(graph: dict):
    """One cycle of `graph` (node -> iterable of nodes) as a list of nodes, or None."""
    state: dict = {}
    for start in sorted(graph):
        if start in state:
            continue
        stack = [(start, iter(sorted(graph.get(start, ()))))]
        path = [start]
        state[start] = "open"
        while stack:
            node, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                state[node] = "done"
                stack.pop()
                path.pop()
            elif state.get(nxt) == "open":
                return path[path.index(nxt):] + [nxt]
            elif nxt not in state:
                state[nxt] = "open"
                path.append(nxt)
                stack.append((nxt, iter(sorted(graph.get(nxt, ())))))
    return None


def _names(edges: dict) -> dict:
    return {m: {t for t, _ in ts} for m, ts in edges.items()}


@pytest.mark.parametrize("package", PROJECT)
def test_module_level_imports_are_acyclic(package):
    top, _late = import_edges(package)
    cycle = find_cycle(_names(top))
    assert cycle is None, f"module-level import cycle in {package}: " + " -> ".join(cycle)


@pytest.mark.parametrize("package", PROJECT)
def test_function_level_imports_point_down_unless_allowed(package):
    top, late = import_edges(package)
    graph = _names(top)
    for m, ts in late.items():
        for t, _line in ts:
            if (m, t) not in ALLOWED_UPWARD:
                graph[m].add(t)
    cycle = find_cycle(graph)
    where = ""
    if cycle:
        lines = [f"{a} line {ln} imports {b}" for a, b in zip(cycle, cycle[1:])
                 for t, ln in late[a] if t == b]
        where = "; function-level: " + ", ".join(lines)
    assert cycle is None, (f"{package} imports form a cycle (counting function-level imports not in "
                           "ALLOWED_UPWARD): " + " -> ".join(cycle) + where)


def test_allow_list_is_current():
    present = {(m, t) for p in PROJECT for m, ts in import_edges(p)[1].items() for t, _ in ts}
    stale = sorted(set(ALLOWED_UPWARD) - present)
    assert not stale, f"ALLOWED_UPWARD lists imports that no longer exist: {stale}"
    assert all(isinstance(r, str) and r for r in ALLOWED_UPWARD.values())


@pytest.mark.parametrize("graph, has_cycle", [
    ({"a": {"b"}, "b": {"c"}, "c": set()}, False),
    ({"a": {"b"}, "b": {"c"}, "c": {"a"}}, True),
    ({"a": {"a"}}, True),
    ({"a": {"b", "c"}, "b": {"d"}, "c": {"d"}, "d": set()}, False),
])
def test_find_cycle(graph, has_cycle):
    assert (find_cycle(graph) is not None) == has_cycle


def test_edges_follow_the_import_rules():
    top, late = import_edges()
    names = _names(top)
    # `from . import numexpr_backend` inside the fusion package: the sibling, not the package being initialized
    assert "graph_runtime.fusion.numexpr_backend" in names["graph_runtime.fusion.kernel"]
    assert "graph_runtime.fusion" not in names["graph_runtime.fusion.kernel"]
    # the package imports its submodules; a module outside it depends on the package __init__ too
    assert "graph_runtime.passes.manager" in names["graph_runtime.passes"]
    assert "graph_runtime.operation" in names["graph_runtime.graph"]

    eager_top = _names(import_edges("eager")[0])
    # conversion sits below the op wrappers: it uses the Const and Pack primitives only
    assert {m for m in eager_top["eager.convert"] if m.startswith("eager.ops.")} == {"eager.ops._const",
                                                                                   "eager.ops._pack"}


def _imports_sentence(path: str):
    """The docstring's "Imports ..." sentence (whitespace collapsed), or None."""
    with open(path, encoding="utf-8") as f:
        doc = ast.get_docstring(ast.parse(f.read(), path)) or ""
    text = " ".join(doc.split())
    start = text.find("Imports ")
    if start < 0:
        return None
    end = text.find(". ", start)
    return text[start:] if end < 0 else text[start:end + 1]


def _project_imports(path: str, module: str, is_pkg: bool) -> set:
    """Dotted names of the project modules/packages `path` imports anywhere (functions included)."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module != "__future__":
            if node.level:
                base = module.split(".") if is_pkg else module.split(".")[:-1]
                base = base[:len(base) - (node.level - 1)]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module
            out.update(f"{source}.{a.name}" for a in node.names)
    return {m for m in out if m.split(".")[0] in PROJECT}


def _covered(name: str, allowed: list) -> bool:
    parts = name.split(".")
    return any(a == name or name.startswith(a + ".") or a in parts for a in allowed)


def test_docstring_imports_lines_that_promise_a_limit_are_true():
    """'Imports nothing from the project' and 'Imports `a` and `b` only' are checked against the source.

    Lines naming "sibling modules", "submodules" or "core" modules are not precise enough to check.
    """
    checked = 0
    for name, (path, is_pkg) in sorted(m for p in PROJECT for m in _modules(p).items()):
        line = _imports_sentence(path)
        if line is None:
            continue
        used = _project_imports(path, name, is_pkg)
        if "nothing from the project" in line:
            assert not used, f"{path}: docstring says {line!r} but it imports {sorted(used)}"
            checked += 1
        elif " only" in line and not any(w in line for w in ("sibling", "submodule", "core")):
            allowed = [a.split("(")[0].strip() for a in line.split("`")[1::2]]
            bad = sorted(m for m in used if not _covered(m, allowed))
            assert not bad, f"{path}: docstring says {line!r} but it also imports {bad}"
            checked += 1
    assert checked >= 10


def _all_imports(path: str):
    """(line, imported dotted name, in_function, comment_near) for every import of the file at `path`."""
    with open(path, encoding="utf-8") as f:
        src = f.read()
    lines = src.splitlines()
    out = []
    work = [(ast.parse(src, path), False)]
    while work:
        node, in_function = work.pop()
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import):
                names = [a.name for a in child.names]
            elif isinstance(child, ast.ImportFrom):
                names = [("." * child.level) + (child.module or "")]
            else:
                names = []
            for n in names:
                near = " ".join(lines[max(child.lineno - 4, 0):child.end_lineno])    # the line or the 3 before
                out.append((child.lineno, n, in_function, "#" in near))
            nested = isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            work.append((child, in_function or nested))
    return out


def _package_of(name: str, importer_package: str):
    if name.startswith("."):
        return importer_package
    top = name.split(".")[0]
    return top if top in PROJECT else None


@pytest.mark.parametrize("package", PROJECT)
def test_imports_between_packages_point_down(package):
    """eager <- graph_runtime <- autograph <- tracing, for module- and function-level imports alike."""
    allowed = PROJECT[:PROJECT.index(package) + 1]
    bad = []
    for name, (path, _is_pkg) in sorted(_modules(package).items()):
        for line, imported, _in_fn, _comment in _all_imports(path):
            target = _package_of(imported, package)
            if target is not None and target not in allowed:
                bad.append(f"{path}:{line} imports {imported}")
    assert not bad, f"{package} may import only {allowed}: " + "; ".join(bad)


@pytest.mark.parametrize("package", PROJECT)
def test_function_level_imports_are_optional_dependencies_only(package):
    """No function-level import of a project module anywhere; the optional extras (numexpr, ray,
    tensorboard, grandalf, a version-dependent part of gast) are imported late, each with a comment
    saying why."""
    bad = []
    for name, (path, _is_pkg) in sorted(_modules(package).items()):
        for line, imported, in_fn, comment in _all_imports(path):
            if not in_fn:
                continue
            if _package_of(imported, package) is not None:
                if not any(m == name and imported.lstrip(".").endswith(t.split(".")[-1]) for m, t in ALLOWED_UPWARD):
                    bad.append(f"{path}:{line} imports {imported} inside a function")
            elif not comment:
                bad.append(f"{path}:{line} imports {imported} late without a comment saying why")
    assert not bad, "; ".join(bad)
