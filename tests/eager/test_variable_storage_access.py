"""Only eager/variable_storage.py touches a Variable's stored array (attribute `_stored`).

Every read of the stored array must take the variable's lock (the in-place
update rule depends on it: eager/variable_storage.py), so a read that loads the
attribute directly, anywhere else, would be a reader that can see an update
half done.  This scans every module of the four packages, the benchmarks and
the examples for the attribute, spelled as an attribute or as a string
(`getattr(v, "_stored")`).
"""
from __future__ import annotations

import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCANNED = ("eager", "graph_runtime", "autograph", "tracing", "benchmarks", "examples", "scripts")
OWNER = ROOT / "eager" / "variable_storage.py"
ATTR = "_stored"


def direct_uses(source: str, filename: str) -> list:
    """(line, text) of each use of the attribute in `source`."""
    found = []
    for node in ast.walk(ast.parse(source, filename)):
        if isinstance(node, ast.Attribute) and node.attr == ATTR:
            found.append((node.lineno, ast.unparse(node)))
        elif isinstance(node, ast.Constant) and node.value == ATTR:
            found.append((node.lineno, repr(node.value)))
    return found


def test_no_module_but_the_storage_module_touches_the_stored_array():
    offenders = []
    for pkg in SCANNED:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            if path == OWNER:
                continue
            offenders += [f"{path.relative_to(ROOT)}:{line}: {text}" for line, text in
                          direct_uses(path.read_text(), str(path))]
    assert not offenders, ("read or write a Variable's stored array through eager/variable_storage.py "
                           "(load/store under the variable's lock), not directly:\n" + "\n".join(offenders))


def test_the_scan_finds_a_direct_read_and_a_getattr():
    src = "def f(v):\n    a = v._stored\n    return getattr(v, '_stored')\n"
    assert [line for line, _ in direct_uses(src, "<test>")] == [2, 3]


def test_the_storage_module_is_where_the_attribute_lives():
    assert direct_uses(OWNER.read_text(), str(OWNER))
