"""Skip marks for tests of the compiled (numba, `[native]`) kernels that run them by default, and a probe of
which compiled loops ran (`compiled_loop_results`).

Such a test skips, saying why, where numba is not installed or where the environment turns native
kernels off (`GRAPHJIT_NATIVE=0`: a run of the suite on the NumPy path, where those kernels never run
and the test would check them against themselves or fail).  Deciding needs neither numba's import nor
the switch's process-wide setting: collecting a file must not import numba (about a second on every
xdist worker), and a test that turns the switch on or off for itself stays free to.
"""
from __future__ import annotations

import importlib.util

import pytest

from eager.switches import env_flag


def why_native_is_off() -> str:
    """Why compiled kernels do not run by default in this process ("" when they do)."""
    if importlib.util.find_spec("numba") is None:
        return "numba (the [native] extra) is not installed"
    if not env_flag("GRAPHJIT_NATIVE"):
        return "native kernels are turned off in the environment (GRAPHJIT_NATIVE=0)"
    return ""


needs_native = pytest.mark.skipif(bool(why_native_is_off()), reason=why_native_is_off() or "native kernels on")


def compiled_loop_results(monkeypatch) -> list:
    """The results of the compiled loops' calls (None where a loop refused its operands), from the loops
    generated after this call; the module is imported here, not at collection, since it may import numba."""
    from graph_runtime.control_flow import compiled_loop
    results, make = [], compiled_loop.loop_call

    def wrapped(*spec):
        call = make(*spec)

        def count(*args):
            results.append(call(*args))
            return results[-1]
        return count
    monkeypatch.setattr(compiled_loop, "loop_call", wrapped)
    return results
