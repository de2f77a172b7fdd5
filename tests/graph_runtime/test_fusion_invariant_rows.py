"""A straight-line fused kernel hands `maximum`/`minimum`/`fmax`/`fmin` an array of a rank-0 constant (NumPy's
SIMD loop instead of its scalar loop against a stride-0 operand): the bits of the unfused graph, NaN payloads,
signed zeros, infinities and subnormals included; eagerly, under @function and in a Session alike."""
from types import SimpleNamespace

import numpy as np
import pytest

import eager as ek
import graph_runtime as gr
from graph_runtime.fusion import invariant_rows
from tracing import function

from fusion_helpers import fused_and_reference, fused_kernels

SPECIAL32 = np.array([0x80000000, 0, 0x7fc00123, 0xffc00002, 0x7f800000, 0xff800000, 1, 0x80000001],
                     np.uint32).view(np.float32)


def _values(shape, dtype):
    x = np.random.default_rng(3).standard_normal(shape).astype(dtype)
    special = SPECIAL32.astype(dtype) if dtype == np.float64 else SPECIAL32
    flat = x.reshape(-1)
    flat[::5] = np.resize(special, flat[::5].shape)
    return x


def _bits(a):
    a = np.asarray(a)
    return a.view(np.dtype(f"u{a.dtype.itemsize}"))


def _closure_arrays(kernel):
    return [c.cell_contents for c in (kernel.__closure__ or ()) if isinstance(c.cell_contents, np.ndarray)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_bias_relu_and_clips_give_the_unfused_bits(dtype):
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(dtype, (64, 40), name="x")
        b = gr.placeholder(dtype, (40,), name="b")
        h = ek.nn.relu(x + b)
        y = ek.minimum(h * 2.0, -0.0) + ek.maximum(x, 0.5)
    feeds = {x: _values((64, 40), dtype), b: _values((40,), dtype)}
    ref, got, _, plan = fused_and_reference(g, feeds, [h, y], numexpr=False)
    kernels = fused_kernels(plan)
    assert [k.strategy for k in kernels] == ["numpy", "numpy"]
    full = [a for k in kernels for a in _closure_arrays(k) if a.shape == (64, 40)]
    assert len(full) == 3 and not any(a.flags.writeable for a in full)      # 0, -0.0 and 0.5 as arrays
    for r, v in zip(ref, got):
        assert np.array_equal(_bits(r), _bits(v))


def test_a_small_output_keeps_the_rank_0_constant():
    g = gr.Graph()
    with g.as_default():
        s = gr.placeholder(ek.float32, (8,), name="s")
        z = ek.nn.relu(s * 2.0)                 # 8 elements: below FULL_MIN_ELEMENTS
    ref, got, _, plan = fused_and_reference(g, {s: _values((8,), np.float32)}, [z], numexpr=False)
    assert not any(a.shape == (8,) for k in fused_kernels(plan) for a in _closure_arrays(k))
    assert np.array_equal(_bits(ref[0]), _bits(got[0]))


def test_a_constant_used_at_two_shapes_stays_rank_0():
    zero = np.zeros((), np.float32)
    ins = lambda out, args: SimpleNamespace(kind="ufunc", fn=np.maximum, args=args, out=out)   # noqa: E731
    program = SimpleNamespace(instrs=[ins(3, (0, 2)), ins(4, (1, 2))], consts={2: zero}, input_slots=(0, 1))
    shapes = {0: (64, 40), 1: (40, 40), 2: (), 3: (64, 40), 4: (40, 40)}
    assert invariant_rows.full_constants(program, shapes) == {}
    shapes[1] = shapes[4] = (64, 40)
    full = invariant_rows.full_constants(program, shapes)
    assert list(full) == [2] and full[2].shape == (64, 40) and not full[2].flags.writeable


def test_full_constants_bounds():
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, (invariant_rows.FULL_MAX_ELEMENTS + 1,), name="x")
        y = ek.nn.relu(x * 2.0)
    ref, got, _, plan = fused_and_reference(g, {x: _values(x.shape.dims, np.float32)}, [y], numexpr=False,
                                            chunk_bytes=1 << 30)
    kernel = fused_kernels(plan)[0]
    assert kernel.strategy == "numpy" and all(a.shape == () for a in _closure_arrays(kernel))
    assert np.array_equal(_bits(ref[0]), _bits(got[0]))


def test_bias_relu_same_bits_eagerly_under_function_and_in_a_session():
    xv, bv = _values((64, 256), np.float32), _values((256,), np.float32)
    eager_out = ek.nn.relu(ek.constant(xv) + ek.constant(bv)).numpy()
    traced = function(lambda x, b: ek.nn.relu(x + b))(ek.constant(xv), ek.constant(bv)).numpy()
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, (64, 256), name="x")
        b = gr.placeholder(ek.float32, (256,), name="b")
        y = ek.nn.relu(x + b)
    with gr.Session(graph=g) as sess:
        session_out = sess.run(y, {x: xv, b: bv})
    assert np.array_equal(_bits(eager_out), _bits(traced))
    assert np.array_equal(_bits(eager_out), _bits(session_out))
