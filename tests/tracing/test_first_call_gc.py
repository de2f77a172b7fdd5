"""A first call (conversion, trace, optimize, compile) runs no cyclic collection, and leaves the
collector as the user had it, also when tracing fails (collections would rescan every op
built so far, a share of the first call that grows with the function's length)."""
import gc

import numpy as np
import pytest

import eager as ek
from eager.gc_pause import paused_sections
from tracing import TensorSpec, function


def _long(y):
    for _ in range(60):         # autograph unrolls nothing here: each iteration traces 4 ops
        y = ek.tanh(y) * 0.5 + y
    return y


@pytest.fixture
def collections():
    starts = []
    callback = lambda phase, info: phase == "start" and starts.append(info)  # noqa: E731
    threshold = gc.get_threshold()
    gc.set_threshold(50)        # collections would certainly run while 240 ops are built
    gc.callbacks.append(callback)
    try:
        yield starts
    finally:
        gc.callbacks.remove(callback)
        gc.set_threshold(*threshold)
        gc.enable()


@pytest.mark.parametrize("autograph", [True, False])
def test_first_call_runs_no_collection_and_restores_gc(collections, autograph):
    f = function(_long, autograph=autograph)
    gc.collect()
    collections.clear()
    cf = f.get_concrete_function(TensorSpec([4, 4], ek.float32))
    # (180-340 before) one or two may run right after, when the collector is back on
    assert len(collections) <= 2 and gc.isenabled() and paused_sections() == 0, len(collections)
    x = np.ones((4, 4), np.float32)
    np.testing.assert_allclose(cf(ek.constant(x)).numpy(), _long(ek.constant(x)).numpy(), rtol=1e-6)


def test_first_call_keeps_gc_off_if_the_user_turned_it_off(collections):
    gc.disable()
    function(_long)(ek.ones([2, 2]))
    assert not gc.isenabled() and paused_sections() == 0


def test_failing_trace_restores_gc(collections):
    def bad(y):
        return ek.matmul(y, ek.ones([3, 3]))

    with pytest.raises(Exception):
        function(bad)(ek.ones([2, 2]))
    assert gc.isenabled() and paused_sections() == 0
