"""Generated plans and fused kernels show their source in tracebacks while alive, and free it when dead.

Fused kernels are shared between plans through fusion's bounded kernel cache, so theirs lives as long
as that cache holds them."""
import gc
import linecache

import numpy as np

import eager as ek
from graph_runtime import fusion
from tracing import function


def _generated_files():
    return {name for name in linecache.cache if name.startswith("<graphjit-")}


def test_plan_and_kernel_sources_are_evicted_when_their_function_dies():
    gc.collect()
    before = _generated_files()

    def chain(x):
        return ek.tanh(x * 2.0 + 1.0) * 3.0 - 1.0

    with fusion.options(numexpr=False):
        f = function(chain)
        f(ek.constant(np.ones(8, np.float32)))
    plan = f.get_concrete_function(ek.constant(np.ones(8, np.float32)))._plan
    new = _generated_files() - before
    assert plan.filename in new                                   # the plan's own source
    assert any(name.startswith("<graphjit-fused-") for name in new)   # and its fused kernel's
    assert "def " in "".join(linecache.getlines(plan.filename))
    del f, plan
    gc.collect()
    left = _generated_files() - before
    # fused kernels are shared between plans through a bounded process-wide cache; they go with it
    assert left and all(name.startswith("<graphjit-fused-") for name in left)
    fusion.clear_caches()
    gc.collect()
    assert not (_generated_files() - before)


def test_many_retraced_functions_do_not_accumulate_source():
    gc.collect()
    before = len(_generated_files())
    for n in range(30):
        f = function(lambda x, n=n: x * float(n) + 1.0)
        f(ek.constant(1.0))
        del f
    gc.collect()
    assert len(_generated_files()) - before < 5
