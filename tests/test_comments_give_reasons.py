"""Comments and docstrings give the reason itself, never an issue number: the
number means nothing to a reader without the tracker, and the reason is what they need.

Read from the source with `tokenize` and `ast` (nothing is imported): every comment, and every
docstring of a module, class or function, in the project's packages, tests, benchmarks, examples and
scripts.
"""
from __future__ import annotations

import ast
import io
import os
import re
import tokenize

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DIRS = ("eager", "graph_runtime", "autograph", "tracing", "tests", "benchmarks", "examples", "scripts")

# "issue 12", "issues 4 and 9", "issue #27", "(#27)", "PR #3"; not a colour ("#2563eb")
CITATION = re.compile(r"\b(?:issues?|PR|pull request)\s*#?\d+|(?:^|[\s(\[])#\d+\b(?![0-9a-fA-F])", re.I)


def _python_files():
    for top in DIRS:
        for dirpath, _dirs, files in os.walk(os.path.join(ROOT, top)):
            for f in sorted(files):
                if f.endswith(".py"):
                    yield os.path.join(dirpath, f)


def _texts(path: str):
    """(line, text) of every comment and docstring of the file at `path`."""
    with open(path, encoding="utf-8") as f:
        src = f.read()
    if not CITATION.search(src):        # most files: no candidate at all, no need to tokenize
        return
    for tok in tokenize.generate_tokens(io.StringIO(src).readline):
        if tok.type == tokenize.COMMENT:
            yield tok.start[0], tok.string
    for node in ast.walk(ast.parse(src, path)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node, clean=False)
            if doc:
                yield (node.body[0].lineno if node.body else 1), doc


def citations(path: str) -> list:
    return [f"{os.path.relpath(path, ROOT)}:{line}: {m.group(0).strip()!r}"
            for line, text in _texts(path) for m in CITATION.finditer(text)]


def test_no_comment_or_docstring_cites_an_issue_number():
    found = [c for p in _python_files() if p != os.path.abspath(__file__) for c in citations(p)]
    assert not found, "give the reason instead of the issue number: " + "; ".join(found)


@pytest.mark.parametrize("text, cites", [
    ("# collections would rescan them (issue 18)", True),
    ("# see #27", True),
    ('"""Fusion (issues 9 and 12)."""', True),
    ("# fixed in PR #3", True),
    ("# colour #2563eb", False),
    ('x = "#27"  # a string, not a comment', False),
    ("# node #3 is the first", True),
    ("# an issue with the old order", False),
])
def test_citation_pattern(tmp_path, text, cites):
    path = tmp_path / "m.py"
    path.write_text(text + "\n")
    assert bool(citations(str(path))) == cites
