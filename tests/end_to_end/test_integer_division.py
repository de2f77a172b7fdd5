"""Integer division by zero raises, in every mode; floats keep IEEE values.

TensorFlow's integer FloorDiv/FloorMod/TruncateDiv/TruncateMod raise
InvalidArgumentError("Integer division by zero"); NumPy warns and returns 0.
Checked eagerly, converted, under `@function` (with and without fusion), in a
Session, through constant folding (the folded op must stay and raise at run
time) and through rank-0 arithmetic (emitted as Python operators on scalars).
"""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import autograph
import eager as ek
import graph_runtime as gr
from graph_runtime import fusion
from tracing import function

def _floordiv(a, b):
    return a // b


def _floormod(a, b):
    return a % b


OPS = {"//": _floordiv, "%": _floormod, "truncatediv": ek.truncatediv, "truncatemod": ek.truncatemod}
ZERO = "Integer division by zero"


def _modes(fn, *arrays):
    """Callables running fn on `arrays` eagerly, converted, under @function (fused and unfused), in a Session."""
    tensors = [ek.constant(a) for a in arrays]

    def session():
        g = gr.Graph()
        with g.as_default():
            phs = [gr.placeholder(ek.as_dtype(np.asarray(a).dtype), np.shape(a)) for a in arrays]
            out = autograph.to_graph(fn)(*phs)
        with gr.Session(graph=g) as s:
            return s.run(out, dict(zip(phs, arrays)))

    def traced(**opts):
        def run():
            f = function(fn)
            with fusion.options(**opts):
                return f(*tensors)
        return run

    return {"eager": lambda: fn(*tensors), "converted": lambda: autograph.to_graph(fn)(*tensors),
            "function": traced(), "function unfused": traced(enabled=False), "session": session}


def _fused_expression(op):
    def fn(a, b):
        return OPS[op](a * 3 + 1, b) - 2       # an elementwise group: fused under @function
    return fn


@pytest.mark.parametrize("op", sorted(OPS))
@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint8])
def test_integer_division_by_zero_raises_in_every_mode(op, dtype):
    a = np.array([[7, 5], [3, 1]], dtype)
    b = np.array([[2, 0], [1, 3]], dtype)
    for mode, run in _modes(_fused_expression(op), a, b).items():
        with pytest.raises(ek.errors.InvalidArgumentError, match=ZERO):
            run()
            pytest.fail(f"{op} {dtype.__name__} by zero did not raise in mode {mode}")


def test_fused_kernel_raises():
    f = function(_fused_expression("//"))
    a, b = ek.constant(np.ones((2, 2), np.int32)), ek.constant(np.zeros((2, 2), np.int32))
    with pytest.raises(ek.errors.InvalidArgumentError, match=ZERO):
        f(a, b)
    assert "FusedElementwise" in [s.op.type for s in f.get_concrete_function(a, b)._plan.steps]


@pytest.mark.parametrize("op", sorted(OPS))
def test_constant_folding_leaves_the_op_to_raise_at_run_time(op):
    @function
    def f():
        return OPS[op](ek.constant([4, 5]), ek.constant([2, 0]))
    with pytest.raises(ek.errors.InvalidArgumentError, match=ZERO):
        f()


def test_rank0_scalar_arithmetic_raises():
    @function
    def f(n, d):
        total = ek.constant(0)
        for i in ek.range(n):
            total = total + (i // d) + (i % d)
        return total
    assert int(f(ek.constant(4), ek.constant(2)).numpy()) == sum(i // 2 + i % 2 for i in range(4))
    with pytest.raises(ek.errors.InvalidArgumentError, match=ZERO):
        f(ek.constant(4), ek.constant(0))


def test_float_division_keeps_ieee_values():
    def fn(a, b):
        return a / b, a // b, a % b, ek.truncatediv(a, b), ek.truncatemod(a, b)
    a = np.array([1.0, -1.0, 0.0], np.float32)
    b = np.zeros(3, np.float32)
    want = [[np.inf, -np.inf, np.nan], [np.inf, -np.inf, np.nan], [np.nan] * 3, [np.inf, -np.inf, np.nan],
            [np.nan] * 3]
    for mode, run in _modes(fn, a, b).items():
        with np.errstate(all="ignore"):
            got = run()
        for g, w in zip(got, want):
            np.testing.assert_array_equal(np.asarray(g), np.float32(w), err_msg=mode)


def test_real_div_on_integers_is_rejected():
    from eager.ops.math import REALDIV
    g = gr.Graph()
    with g.as_default(), pytest.raises(ek.errors.InvalidArgumentError, match="RealDiv: inputs must be floating"):
        ek.dispatch.execute(REALDIV, (ek.constant([1]), ek.constant([2])), {})


def _truncating(x, y):
    return ek.truncatediv(x, y), ek.truncatemod(x, y)


@settings(deadline=None, max_examples=30)
@given(st.lists(st.tuples(st.integers(-1000, 1000), st.integers(-50, 50).filter(bool)), min_size=1, max_size=8))
def test_truncating_division_matches_c_semantics(pairs):
    a = np.array([p[0] for p in pairs], np.int64)
    b = np.array([p[1] for p in pairs], np.int64)
    want_q = np.array([int(x / y) if abs(x) < 2 ** 52 else None for x, y in pairs], np.int64)
    want_r = a - want_q * b
    for mode, run in _modes(_truncating, a, b).items():
        q, r = run()
        np.testing.assert_array_equal(np.asarray(q), want_q, err_msg=mode)
        np.testing.assert_array_equal(np.asarray(r), want_r, err_msg=mode)
