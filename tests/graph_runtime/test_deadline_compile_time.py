"""A native kernel's first-call compile inside a step does not count against the step's deadline
(deadline.py `overdue`, eager.native.compile_seconds): a fused kernel promoted at its 8th call compiled
inside the RNN's loop and a 40 ms step with a 1 s deadline raised DeadlineExceededError after 2-4 s.
Time that is not compiling still counts."""
import time

import numpy as np
import pytest

import eager as ek
import graph_runtime as gr
from eager import native
from eager.errors import DeadlineExceededError

pytestmark = pytest.mark.skipif(not native.available(), reason="numba (the [native] extra) is not installed")


def _fresh_kernel():
    """A function numba has not seen: its first call compiles (0.1-0.5 s with numba imported)."""
    def kern(a):
        out = np.empty_like(a)
        for i in range(a.size):
            v = a[i] * 0.5 + 1.0
            out[i] = v * v - a[i] if v > 0 else -v
        s = np.float32(0.0)
        for i in range(a.size):
            s += np.tanh(out[i]) if out[i] < 2 else np.sqrt(out[i])
        out[0] = s
        return out
    return native.jit(kern)


def _loop(body_fn):
    """A Session graph: three While iterations, each running `body_fn` on a float32 vector."""
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, (64,), name="x")

        def body(i, a):
            y = ek.py_function(body_fn, [a], ek.float32)
            y.set_shape((64,))
            return i + 1, y
        y = ek.while_loop(lambda i, a: i < 3, body, [ek.constant(0), x])[1]
    return g, x, y


@pytest.mark.parametrize("traced", [False, True])      # the generated loop and the interpreting executor's
def test_a_compile_inside_the_step_is_not_counted_against_its_deadline(traced):
    kern, compiled_before = _fresh_kernel(), native.compile_seconds()
    g, x, y = _loop(lambda a: kern(a.numpy()))
    opts = gr.RunOptions(timeout_in_ms=100, trace_level=gr.RunOptions.FULL_TRACE if traced else 0)
    with gr.Session(graph=g) as sess:
        began = time.monotonic()
        got = sess.run(y, {x: np.ones(64, np.float32)}, options=opts)
        took = time.monotonic() - began
    assert native.compile_seconds() - compiled_before > 0.1, "the kernel did not compile inside the step"
    assert took > 0.1 and got.shape == (64,)


def test_time_that_is_not_compiling_still_counts():
    g, x, y = _loop(lambda a: (time.sleep(0.06), a)[1])
    with gr.Session(graph=g) as sess:
        with pytest.raises(DeadlineExceededError, match="While loop"):
            sess.run(y, {x: np.ones(64, np.float32)}, options=gr.RunOptions(timeout_in_ms=100))
