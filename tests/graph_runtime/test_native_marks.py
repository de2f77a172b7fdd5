"""The suite passes on the NumPy path: under `GRAPHJIT_NATIVE=0` the tests of compiled kernels that run them
by default skip, saying why (native_marks.py), instead of failing.

Checked in a fresh process (the environment decides the switch's default once per process), over the test
files of compiled kernels; about 2-4 s, most of it the fresh process's imports."""
from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest

from native_marks import why_native_is_off

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
FILES = [str(HERE / name) for name in
         ("test_compiled_loop.py", "test_fusion_native.py", "test_fusion_fast_tanh.py", "test_loop_kernels.py")]


def test_why_native_is_off_reads_the_environment(monkeypatch):
    monkeypatch.setenv("GRAPHJIT_NATIVE", "0")
    assert why_native_is_off() in ("native kernels are turned off in the environment (GRAPHJIT_NATIVE=0)",
                                   "numba (the [native] extra) is not installed")
    monkeypatch.setenv("GRAPHJIT_NATIVE", "1")
    assert "GRAPHJIT_NATIVE" not in why_native_is_off()


def test_the_compiled_kernels_tests_skip_when_the_environment_turns_native_off():
    # From the repository's root, which goes first on sys.path: from tests/graph_runtime, with the package
    # installed in editable mode and no PYTHONPATH (as CI runs), `import eager` found the directory tests/eager
    # (pytest puts tests/ on sys.path) as a namespace package before the installed package.
    env = dict(os.environ, GRAPHJIT_NATIVE="0", PYTHONPATH=os.pathsep.join(
        [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    env.pop("PYTEST_XDIST_WORKER", None)
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", *FILES],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    if why_native_is_off() != "numba (the [native] extra) is not installed":
        assert "GRAPHJIT_NATIVE=0" in run.stdout          # they skipped for that reason, not another
