"""`eager.native.compile_seconds()` counts numba's one-off work on a kernel's first call, not only its compiles.

A step deadline does not count that clock (graph_runtime/deadline.py).  Two parts of a first call lay outside
numba's compile events: before its first compile in a process numba scans every installed package's entry
points for numba extensions (5-20 ms here), and a `cache=True` kernel's first call loads it from numba's disk
cache under its compiler lock with no compile event at all.  Each case runs in a fresh process, since numba's
start-up happens once per process.
"""
import json
import os
import subprocess
import sys
import textwrap

import pytest

from eager import native

pytestmark = pytest.mark.skipif(not native.installed(), reason="numba (the [native] extra) is not installed")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

KERNEL = """
def total(a):
    s = 0.0
    for i in range(a.size):
        s += a[i] * 1.5
    return s
"""

FIRST_CALLS = """
import importlib.metadata, json
import numpy as np
from eager import native
assert native.available()
scans = []
scan = importlib.metadata.entry_points
importlib.metadata.entry_points = lambda *a, **k: (scans.append(1), scan(*a, **k))[1]
import numba, kernel_module
a = np.ones(8, np.float32)
began = native.compile_seconds()
compiled = numba.njit(cache=True)(kernel_module.total)
compiled(a)                                  # the process's first compile; saves the kernel to the disk cache
between = native.compile_seconds()
loaded = numba.njit(cache=True)(kernel_module.total)
loaded(a)                                    # the same kernel from the disk cache: no compile
print(json.dumps({"scans_at_first_compile": len(scans), "compile": between - began,
                  "load": native.compile_seconds() - between, "hits": sum(loaded.stats.cache_hits.values()),
                  "misses": sum(loaded.stats.cache_misses.values())}))
"""


def test_the_extension_scan_and_a_disk_cache_load_are_counted(tmp_path):
    (tmp_path / "kernel_module.py").write_text(textwrap.dedent(KERNEL))
    path = os.pathsep.join(p for p in [ROOT, str(tmp_path), os.environ.get("PYTHONPATH", "")] if p)
    env = dict(os.environ, PYTHONPATH=path, NUMBA_CACHE_DIR=str(tmp_path / "cache"))
    out = subprocess.run([sys.executable, "-c", FIRST_CALLS], capture_output=True, text=True, env=env, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout.splitlines()[-1])
    assert got["scans_at_first_compile"] == 0, "numba's extension scan ran at the first compile, uncounted"
    assert got["compile"] > 0.0
    assert (got["hits"], got["misses"]) == (1, 0), "the second kernel did not come from the disk cache"
    assert got["load"] > 0.0, "loading a kernel from numba's disk cache was not counted"
