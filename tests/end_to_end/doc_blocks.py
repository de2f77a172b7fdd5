"""The Python code blocks of the README and docs/*.md, and a runner that runs them as printed.

Every ```python block must run on its own, as a reader would paste it: its imports included, nothing
from another block.  A block that cannot run here (it needs a real cluster's address, say) is preceded by
the line `<!-- docs-test: skip, <reason> -->`; the reason is required.  Blocks that start Ray
(`ray://local`) run with the distributed tests (tests/distributed/test_docs_cluster.py), in the process
that already holds Ray; the others run in one fresh Python process, each block written to a file of its own
(AutoGraph reads a function's source, as it would from a reader's script) and run as `__main__` in a
fresh namespace, in a temporary directory (blocks may write files such as checkpoints and logs).
"""
from __future__ import annotations

import json
import os
import re
import runpy
import subprocess
import sys
from dataclasses import dataclass

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SKIP = re.compile(r"<!--\s*docs-test:\s*skip,\s*(\S.*?)\s*-->")
_FENCE = re.compile(r"^```python\s*$")


@dataclass(frozen=True)
class Block:
    doc: str           # path relative to the repository
    line: int          # line of the opening fence
    code: str
    skip: str          # the reason given by a skip marker, or ""

    @property
    def where(self) -> str:
        return f"{self.doc}:{self.line}"

    @property
    def filename(self) -> str:
        """A file name that says where the block comes from (`README_md_L32.py`)."""
        return re.sub(r"\W", "_", self.doc) + f"_L{self.line}.py"

    def write(self, directory: str) -> str:
        path = os.path.join(directory, self.filename)
        with open(path, "w", encoding="utf-8") as f:
            f.write(self.code)
        return path

    @property
    def needs_ray(self) -> bool:
        return "ray://" in self.code


def documents() -> list:
    docs = ["README.md"] + sorted(os.path.join("docs", f) for f in os.listdir(os.path.join(REPO, "docs"))
                                  if f.endswith(".md"))
    return [d for d in docs if os.path.isfile(os.path.join(REPO, d))]


def blocks(doc: str) -> list:
    lines = open(os.path.join(REPO, doc), encoding="utf-8").read().splitlines()
    out, i = [], 0
    while i < len(lines):
        if _FENCE.match(lines[i]):
            start = i
            j = i + 1
            while j < len(lines) and lines[j].strip() != "```":
                j += 1
            prev = next((lines[k] for k in range(start - 1, -1, -1) if lines[k].strip()), "")
            m = SKIP.search(prev)
            out.append(Block(doc, start + 1, "\n".join(lines[start + 1:j]) + "\n", m.group(1) if m else ""))
            i = j + 1
        else:
            i += 1
    return out


_RUNNER = r"""
import json, runpy, sys, traceback
results = []
for where, path in json.load(sys.stdin):
    try:
        runpy.run_path(path, run_name="__main__")
        results.append([where, None])
    except BaseException:
        results.append([where, traceback.format_exc(limit=-6)])
print("\n@@RESULTS@@" + json.dumps(results))
"""


def run_in_fresh_process(blocks_: list, cwd: str, timeout: float = 300) -> dict:
    """{where: None or the traceback} for each block, run in order in one new Python process."""
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    todo = [[b.where, b.write(cwd)] for b in blocks_]
    proc = subprocess.run([sys.executable, "-c", _RUNNER], input=json.dumps(todo), cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)
    marker = proc.stdout.rfind("@@RESULTS@@")
    if marker < 0:
        raise AssertionError(f"the docs runner died (exit {proc.returncode}): {proc.stderr[-2000:]}")
    return dict(json.loads(proc.stdout[marker + len("@@RESULTS@@"):]))


def run_here(block: Block, directory: str) -> None:
    """Run one block in this process from a file in `directory` (for blocks that share this process's Ray)."""
    runpy.run_path(block.write(directory), run_name="__main__")
