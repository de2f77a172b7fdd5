"""An RNN-shaped counted While and its backward walk run as one compiled call each (control_flow/
compiled_loop.py, compiled_walk.py): the same bits as the Python loop and walk they replace (the graph
generated with them off) in a Session and under `@function`, for partial and empty ranges, a cell reading
`h`, operands they were not compiled for (the Python loop or walk runs) and a step with a deadline (the
Python loop runs, checking it).  Needs numba (the [native] extra); the tests of what runs compiled skip
where the environment turns native kernels off."""
import time

import numpy as np
import pytest

import eager as ek
import graph_runtime as gr
from eager import native
from graph_runtime.control_flow import compiled_loop, compiled_walk
from graph_runtime.control_flow.plans import compiled_plans
from graph_runtime.control_flow.stacked_history import StackedHistory
from graph_runtime.fusion.fast_tanh import tanh32_numpy
from tracing import function

from native_marks import compiled_loop_results, needs_native

pytestmark = pytest.mark.skipif(not native.available() or compiled_loop.blas() is None,
                                reason="numba (the [native] extra) or NumPy's cblas_sgemm not found")

RNG = np.random.default_rng(41)
STEPS, BATCH, INPUTS, HIDDEN = 9, 16, 8, 64
XS = RNG.standard_normal((STEPS, BATCH, INPUTS)).astype(np.float32)
WX = (RNG.standard_normal((INPUTS, HIDDEN)) * 0.4).astype(np.float32)
WH = (RNG.standard_normal((HIDDEN, HIDDEN)) * 0.2).astype(np.float32)
B = (RNG.standard_normal(HIDDEN) * 0.3).astype(np.float32)


def rnn(x, bias, start=0, stop=STEPS, residual=False, array=False):
    """`(t, h)` after the loop; the step input is `x[t]`, or with `array` a TensorArray's `read(t)`."""
    wx, wh = ek.constant(WX), ek.constant(WH)
    rows = ek.TensorArray("float32", size=STEPS).unstack(x) if array else None

    def body(t, h):
        new = ek.tanh(ek.matmul(rows.read(t) if array else x[t], wx) + ek.matmul(h, wh) + bias)
        return t + 1, (h + new if residual else new)
    return ek.while_loop(lambda t, h: t < stop, body, [ek.constant(start), ek.zeros((BATCH, HIDDEN))])


def numpy_rnn(xs, start=0, stop=STEPS, residual=False):
    h = np.zeros((BATCH, HIDDEN), np.float32)
    for t in range(start, stop):
        new = tanh32_numpy(np.matmul(xs[t], WX) + np.dot(h, WH) + B)
        h = h + new if residual else new
    return h


def session(on, feed=XS, options=None, with_grads=False, **kw):
    """`(h, the loop's generated sources)` of the RNN in a new graph generated with the compiled loop `on`;
    `with_grads`: `([t, h, d/dWx, d/dWh, d/db], sources)` (the forward loop saves its iterations)."""
    was = compiled_loop.ENABLED
    compiled_loop.ENABLED = on
    try:
        g = gr.Graph()
        with g.as_default():
            x, bias = gr.placeholder("float32", XS.shape), gr.placeholder("float32", B.shape)
            t, h = rnn(x, bias, **kw)
            weights = [op.outputs[0] for op in g.get_operations() if op.type == "Const"
                       and op.outputs[0].shape.rank == 2][:2]
            fetch = [t, h] + gr.gradients(ek.reduce_sum(h * h), weights + [bias]) if with_grads else h
        with gr.Session(graph=g) as sess:
            got = sess.run(fetch, {x: feed, bias: B}, options=options)
        body = next(o for o in g.get_operations() if o.type in ("While", "StatelessWhile")).get_attr("body")
        return got, [p.source for p in compiled_plans(body, "loop")]
    finally:
        compiled_loop.ENABLED = was


@pytest.mark.parametrize("start, stop, residual", [(0, STEPS, False), (3, 7, False), (5, 5, False),
                                                   (0, STEPS, True)])
@needs_native
def test_compiled_loop_has_the_python_loops_bits(start, stop, residual):
    got, sources = session(True, start=start, stop=stop, residual=residual)
    assert any("_cl" in s for s in sources)
    want, others = session(False, start=start, stop=stop, residual=residual)
    assert not any("_cl" in s for s in others)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got, numpy_rnn(XS, start, stop, residual))


@needs_native
@pytest.mark.parametrize("array", [True, False], ids=["ta_read", "x_t"])
@pytest.mark.parametrize("start, stop", [(0, STEPS), (2, 6)])
def test_the_loop_saving_its_iterations_gives_the_same_gradients_and_counter(start, stop, array):
    # `x[t]`: its gradient saves the index and slice bounds only for the cotangent of `x`, which nobody asks
    # for here: the unused_outputs pass drops them from the loop's saves, so that loop runs compiled too
    got, sources = session(True, with_grads=True, start=start, stop=stop, array=array)
    assert any("_cl" in s and "hist = _sh" in s for s in sources)       # the loop saving, compiled
    want, _ = session(False, with_grads=True, start=start, stop=stop, array=array)
    assert got[0] == want[0] == stop and got[0].dtype == want[0].dtype
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(got[1], numpy_rnn(XS, start, stop))
    other, _ = session(True, with_grads=True, start=start, stop=stop, array=not array)
    for a, b in zip(got, other):                 # the two ways to read the step input: the same bits
        np.testing.assert_array_equal(a, b)


@needs_native
def test_compiled_loop_under_function():
    traced = function(lambda x, bias: rnn(x, bias)[1])
    np.testing.assert_array_equal(traced(XS, B).numpy(), numpy_rnn(XS))


@needs_native
def test_operands_it_was_not_compiled_for_run_the_python_loop(monkeypatch):
    strided = np.stack([XS, -XS], axis=3)[..., 0]                     # XS, not contiguous
    assert not strided.flags.c_contiguous and np.array_equal(strided, XS)
    results = compiled_loop_results(monkeypatch)
    got, _ = session(True, feed=strided)
    np.testing.assert_array_equal(got, numpy_rnn(XS))
    assert results == [None]           # the loop got the strided feed and refused it
    got, _ = session(True)
    assert results[-1] is not None
    np.testing.assert_array_equal(got, numpy_rnn(XS))


@needs_native
def test_a_step_with_a_deadline_runs_the_python_loop(monkeypatch):
    results = compiled_loop_results(monkeypatch)
    got, _ = session(True, options=gr.RunOptions(timeout_in_ms=60_000))
    assert results == []
    np.testing.assert_array_equal(got, numpy_rnn(XS))
    got, _ = session(True)
    assert len(results) == 1 and results[0] is not None
    np.testing.assert_array_equal(got, numpy_rnn(XS))


@needs_native
def test_without_numpys_sgemm_the_python_loop_is_generated(monkeypatch):
    monkeypatch.setattr(compiled_loop, "_BLAS", [None])
    got, sources = session(True)
    assert not any("_cl" in s for s in sources)
    np.testing.assert_array_equal(got, numpy_rnn(XS))


def test_the_search_for_numpys_blas_counts_as_compiling(monkeypatch):
    # the search (with its bit check: 4 ms here, made slow) runs once per process, when the first loop that could
    # run compiled is generated; like a kernel's first compile, a step's deadline must not count it (deadline.py)
    same_bits = compiled_loop._same_bits
    monkeypatch.setattr(compiled_loop, "_BLAS", [])
    monkeypatch.setattr(compiled_loop, "_same_bits", lambda fn: time.sleep(0.2) or same_bits(fn))
    compiled_before = native.compile_seconds()
    assert compiled_loop.blas() is not None
    assert native.compile_seconds() - compiled_before >= 0.2
    assert compiled_loop.blas() is compiled_loop._BLAS[0]          # once per process


def test_a_blas_call_with_other_bits_is_refused():
    def wrong(order, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc):
        out = np.ctypeslib.as_array((np.ctypeslib.ctypes.c_float * (m * n)).from_address(c))
        out[:] = 0.0
    assert compiled_loop._same_bits(compiled_loop.blas())
    assert not compiled_loop._same_bits(wrong)


@needs_native
@pytest.mark.parametrize("start, stop", [(0, STEPS), (2, 6)])
def test_the_backward_walk_runs_compiled_with_the_python_walks_bits(monkeypatch, start, stop):
    specs, results = [], []
    make = compiled_walk.walk_call

    def wrapped(spec):
        specs.append(spec)
        call = make(spec)
        return lambda *args: results.append(call(*args)) or results[-1]
    monkeypatch.setattr(compiled_walk, "walk_call", wrapped)
    got, _ = session(True, with_grads=True, start=start, stop=stop, array=True)
    assert len(results) == 1 and results[0][1] is not None
    monkeypatch.setattr(compiled_walk, "ENABLED", False)
    want, _ = session(True, with_grads=True, start=start, stop=stop, array=True)
    assert len(results) == 1
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)
    # a weight of another layout than compiled for: refused (the Python walk runs)
    d0, dz = make(specs[0])(np.zeros((3, BATCH, HIDDEN), np.float32), np.ones((BATCH, HIDDEN), np.float32),
                            np.asfortranarray(WH))
    assert dz is None and np.array_equal(d0, np.ones((BATCH, HIDDEN)))


def test_a_kernel_compiled_for_other_shapes_than_the_loop_hands_it_is_not_used():
    # numba checks no index: a cell compiled for other shapes would read or write past its arrays
    class Cell:
        full, want = (16, 64), ((16, 64), (16, 64), (64,))
    shapes = (16, 8, 64, 64, 64)          # B, I, N, K, H
    assert compiled_loop._fits(Cell, ("row", "mm", 0), shapes)
    Cell.full = (16, 32)
    assert not compiled_loop._fits(Cell, ("row", "mm", 0), shapes)
    Cell.full, Cell.want = (16, 64), ((16, 64), (1, 64), (64,))
    assert not compiled_loop._fits(Cell, ("row", "mm", 0), shapes)
    Cell.want = ((16, 64), (16, 64), (64,))
    assert not compiled_loop._fits(Cell, ("row", "mm", 0), (16, 8, 64, 32, 64))


@needs_native
@pytest.mark.parametrize("start, stop", [(0, STEPS), (2, 6)])
def test_the_walk_takes_the_saved_values_from_the_loops_stacked_states(monkeypatch, start, stop):
    # the saved states (1: the step input's rows, 2: the previous state) and the walk's S are views of the
    # compiled loop's one array (no copy; the rows one copy), in walk order: each the history's entries
    # t = n-1 ... 0 stacked, so the sums see the same rows in the same order
    seen = []
    rows, make = compiled_walk.walk_rows, compiled_walk.walk_call

    def checked_rows(hist, n, i):
        got = rows(hist, n, i)
        np.testing.assert_array_equal(got, np.concatenate([hist[t][i] for t in range(n - 1, -1, -1)]))
        seen.append((i, hist.__class__ is StackedHistory and got.base is hist.states))
        return got

    def wrapped(spec):
        call = make(spec)
        return lambda stack, *args: seen.insert(0, ("S", stack.base is not None and stack.base.shape[0] ==
                                                    stop - start + 1)) or call(stack, *args)
    monkeypatch.setattr(compiled_walk, "walk_rows", checked_rows)
    monkeypatch.setattr(compiled_walk, "walk_call", wrapped)
    got, _ = session(True, with_grads=True, start=start, stop=stop, array=True)
    assert ("S", True) in seen and sorted(seen[1:]) == [(1, False), (2, True)]
    monkeypatch.setattr(compiled_walk, "ENABLED", False)
    want, _ = session(True, with_grads=True, start=start, stop=stop, array=True)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)


def test_a_history_of_another_length_than_its_stack_is_stacked_from_its_entries():
    states = np.arange(4 * 2 * 3, dtype=np.float32).reshape(4, 2, 3)
    hist = StackedHistory(states, np.zeros((5, 2, 3), np.float32), 0, ("new", "count"))
    hist.extend([(states[2], 0), (states[1], 1), (states[0], 2)])
    np.testing.assert_array_equal(hist.walk_rows(0, 3), states[:3])
    assert hist.walk_rows(1, 3) is None                      # the counter: not stacked
    hist.append((states[0], 3))                               # four entries, three stacked states
    assert hist.walk_rows(0, 4) is None
    np.testing.assert_array_equal(compiled_walk.walk_rows(hist, 4, 0),
                                  np.concatenate([states[0], states[0], states[1], states[2]]))
