"""Edge values through every fusion strategy agree with eager: sign(-0.0) is +0.0, and sigmoid keeps full
relative accuracy in both tails (no cancellation to 0 below -17 in float32), its gradient too."""
import numpy as np
import pytest

import eager as ek
import graph_runtime as gr
from graph_runtime import fusion
from graph_runtime.fusion import numexpr_backend
from tracing import function

from fusion_helpers import fused_and_reference, fused_kernels

STRATEGIES = ["numpy", "chunked"] + (["numexpr"] if numexpr_backend.available() else [])
EDGES = np.array([-np.inf, -100.0, -20.0, -1.0, -0.0, 0.0, 1e-30, 2.0, 20.0, 100.0, np.inf, np.nan])


def _fused(build, x, force):
    """build(x) run as one fused group with strategy `force`: (result, the strategy the kernel used)."""
    g = gr.Graph()
    with g.as_default():
        p = gr.placeholder(ek.as_dtype(x.dtype), x.shape, name="x")
        y = build(p)
    ref, got, _, plan = fused_and_reference(g, {p: x}, [y], force=force, chunk_bytes=1024)
    kernels = fused_kernels(plan)
    assert kernels, "nothing was fused"
    return ref[0], got[0], kernels[0].strategy


def _sized(x, force):
    """`x`, repeated past one chunk (1,024 elements) for the chunked strategy."""
    return np.resize(x, 4099) if force == "chunked" else x


def _assert_same_bits(a, b):
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype and a.shape == b.shape
    assert np.array_equal(a, b, equal_nan=True), (a, b)
    assert np.array_equal(np.signbit(a), np.signbit(b)), (a, b)        # -0.0 and +0.0 told apart


@pytest.mark.parametrize("force", STRATEGIES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sign_of_negative_zero_is_positive_zero_in_every_mode(force, dtype):
    x = _sized(EDGES.astype(dtype), force)
    eager = ek.sign(x).numpy()
    assert not np.signbit(eager[4]) and np.array_equal(eager, np.sign(x), equal_nan=True)
    eager = eager * dtype(1.5)
    ref, got, strategy = _fused(lambda t: ek.sign(t) * 1.5, x, force)   # -0.0 * 1.5 keeps the sign
    assert strategy == force
    _assert_same_bits(ref, eager)
    _assert_same_bits(got, eager)
    with fusion.options(force=force):
        traced = function(lambda t: ek.sign(t) * 1.5, autograph=False)(ek.constant(x)).numpy()
    _assert_same_bits(traced, eager)


def _reference_sigmoid(x):
    x = np.asarray(x, np.float64)
    with np.errstate(over="ignore"):
        return np.where(x >= 0, 1 / (1 + np.exp(-x)), np.exp(x) / (1 + np.exp(x)))


def _tails(dtype):
    lo = -80.0 if dtype == np.float32 else -700.0           # results stay normal numbers (not denormals)
    return np.concatenate([np.linspace(lo, -10, 301), np.linspace(-10, 10, 201), np.linspace(10, 40, 31)]) \
        .astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sigmoid_is_accurate_in_both_tails_eagerly(dtype):
    x = _tails(dtype)
    y = ek.sigmoid(x).numpy()
    ulp = np.spacing(np.asarray(_reference_sigmoid(x), dtype))
    assert np.max(np.abs(y - _reference_sigmoid(x)) / ulp) <= 4     # exp's error, then one division
    assert ek.sigmoid(np.array(-20.0, np.float32)).numpy() > 0       # was 0 with (tanh(x/2)+1)/2
    logs = ek.log(ek.sigmoid(x)).numpy()
    assert np.all(np.isfinite(logs))
    np.testing.assert_allclose(logs[x < -30], x[x < -30], rtol=1e-6)  # log(sigmoid(x)) ~ x far left
    edges = ek.sigmoid(EDGES.astype(dtype)).numpy()
    np.testing.assert_array_equal(edges[[0, 4, 5, 10]], [0.0, 0.5, 0.5, 1.0])
    assert np.isnan(edges[-1])


@pytest.mark.parametrize("force", STRATEGIES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fused_sigmoid_agrees_with_eager(force, dtype):
    """NumPy strategies: the unfused kernel's very bits. numexpr: its two exp calls are libm's, each within
    the documented TRANSCENDENTAL_MAX_ULP of NumPy's, and nothing cancels afterwards."""
    wide = (np.random.default_rng(0).standard_normal(2000) * 30).astype(dtype)
    x = _sized(np.concatenate([_tails(dtype), EDGES.astype(dtype), wide]), force)
    ref, got, strategy = _fused(lambda t: ek.sigmoid(t) * 1.5, x, force)
    assert strategy == force
    eager = ek.sigmoid(x).numpy() * dtype(1.5)
    _assert_same_bits(ref, eager)
    if force != "numexpr":
        _assert_same_bits(got, eager)
    else:
        nan = np.isnan(eager)
        assert np.array_equal(nan, np.isnan(got))
        np.testing.assert_array_max_ulp(got[~nan], eager[~nan], maxulp=2 * fusion.TRANSCENDENTAL_MAX_ULP)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sigmoid_gradient_in_the_tails(dtype):
    x = ek.constant(_tails(dtype))
    with ek.GradientTape() as tape:
        tape.watch(x)
        y = ek.sigmoid(x)
    g = tape.gradient(y, x).numpy()
    s = _reference_sigmoid(x.numpy())
    want = s * (1 - s)
    left = x.numpy() < 0                     # y * (1 - y): y small, nothing cancels
    np.testing.assert_allclose(g[left], want[left], rtol=5 * np.finfo(dtype).eps)
    np.testing.assert_allclose(g, want, rtol=1e-6 if dtype == np.float64 else 1e-5,
                               atol=4 * np.finfo(dtype).eps)      # right: 1 - y rounds as TensorFlow's does
    traced = function(lambda t: ek.sigmoid(t), autograph=False)
    with ek.GradientTape() as tape:
        tape.watch(x)
        y2 = traced(x)
    np.testing.assert_array_equal(tape.gradient(y2, x).numpy(), g)


@pytest.mark.parametrize("force", STRATEGIES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_relu_gradient_fuses_as_ufunc_calls_with_eager_bits(force, dtype):
    # ReluGrad's kernel traces into ufunc instructions (np.greater, then the multiply), so a fused kernel runs
    # it in place per chunk instead of calling the kernel and copying its fresh result; the bits stay eager's
    # (NaN, signed zeros and infinities in both the gradient and the activation)
    from eager.dispatch import execute
    from eager.registry import get

    def build(t):
        return execute(get("ReluGrad"), (t * 1.5, ek.nn.relu(t - 1.0)), {})
    x = _sized(EDGES.astype(dtype), force)
    eager = build(ek.constant(x)).numpy()
    ref, got, strategy = _fused(build, x, force)
    assert strategy == force
    _assert_same_bits(ref, eager)
    _assert_same_bits(got, eager)
    g = gr.Graph()
    with g.as_default():
        p = gr.placeholder(ek.as_dtype(x.dtype), x.shape, name="x")
        y = build(p)
    _, _, _, plan = fused_and_reference(g, {p: x}, [y], force=force, chunk_bytes=1024)
    programs = [s.op.get_attr("program") for s in plan.steps if s.op.type == "FusedElementwise"]
    assert [i.op_type for i in programs[0].instrs if i.kind == "opaque"] == []
    assert "ReluGrad" in {i.op_type for i in programs[0].instrs}
