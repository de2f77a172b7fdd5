"""The project's docs live in the repository: links resolve inside it, nothing points outside, and every
Python code block in the README and docs/*.md runs as printed (doc_blocks.py says how)."""
import os
import re
import subprocess

import pytest

import doc_blocks

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def _tracked(*patterns):
    out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", *patterns], cwd=REPO, capture_output=True, text=True)
    if out.returncode != 0:             # not a git checkout (e.g. an sdist): walk the tree
        return [os.path.relpath(os.path.join(d, f), REPO) for d, _, fs in os.walk(REPO) for f in fs
                if f.endswith((".md", ".py")) and ".venv" not in d and ".git" not in d]
    return out.stdout.split()


def test_markdown_links_resolve_inside_the_repository():
    docs = [p for p in _tracked("*.md") if os.path.exists(os.path.join(REPO, p))]
    assert "README.md" in docs and "docs/architecture.md" in docs and "docs/api.md" in docs
    for doc in docs:
        text = open(os.path.join(REPO, doc), encoding="utf-8").read()
        for target in _LINK.findall(text):
            if "://" in target or target.startswith("mailto:"):
                continue
            full = os.path.normpath(os.path.join(REPO, os.path.dirname(doc), target))
            assert full.startswith(REPO + os.sep), f"{doc} links outside the repository: {target}"
            assert os.path.exists(full), f"{doc} links to {target}, which does not exist"
    readme = open(os.path.join(REPO, "README.md"), encoding="utf-8").read()
    assert "docs/architecture.md" in readme and "docs/api.md" in readme


def test_no_reference_to_files_outside_the_repository():
    for path in _tracked("*.md", "*.py"):
        full = os.path.join(REPO, path)
        if not os.path.exists(full) or path == "tests/end_to_end/test_docs.py":
            continue
        text = open(full, encoding="utf-8").read()
        for bad in ("../shared", "shared/DESIGN", "shared/API", "TF_SEMANTICS.md"):
            assert bad not in text, f"{path} refers to {bad!r}, which a clone does not have"


def test_every_code_block_runs_as_printed(tmp_path):
    """Each ```python block of README.md and docs/*.md, on its own, in a fresh namespace (blocks starting
    Ray run in tests/distributed/test_docs_cluster.py)."""
    found = [b for doc in doc_blocks.documents() for b in doc_blocks.blocks(doc)]
    assert len(found) >= 7 and {b.doc for b in found} >= {"README.md", "docs/api.md"}
    for b in found:
        assert not b.skip or len(b.skip) > 10, f"{b.where}: a skipped block must say why"
    local = [b for b in found if not b.skip and not b.needs_ray]
    if any("summary." in b.code for b in local):
        pytest.importorskip("tensorboard")           # the optional extra the summary blocks use
    failures = {w: tb for w, tb in doc_blocks.run_in_fresh_process(local, str(tmp_path)).items() if tb}
    assert not failures, "\n\n".join(f"{w}:\n{tb}" for w, tb in failures.items())


def test_the_block_extractor_reads_fences_and_skip_markers(tmp_path, monkeypatch):
    (tmp_path / "docs").mkdir()
    (tmp_path / "README.md").write_text("text\n```python\nx = 1\n```\n<!-- docs-test: skip, needs a real "
                                        "cluster address -->\n\n```python\nraise SystemExit\n```\n```\nnot python\n```\n")
    monkeypatch.setattr(doc_blocks, "REPO", str(tmp_path))
    got = doc_blocks.blocks("README.md")
    assert [(b.line, b.code, b.skip) for b in got] == [(2, "x = 1\n", ""),
                                                       (7, "raise SystemExit\n", "needs a real cluster address")]
    results = doc_blocks.run_in_fresh_process([got[0], doc_blocks.Block("d.md", 1, "1/0\n", "")], str(tmp_path))
    assert results["README.md:2"] is None and "ZeroDivisionError" in results["d.md:1"]
    assert "d_md_L1.py" in results["d.md:1"]                  # the traceback names the block's place
