"""Every differentiable op's case (the `gradcases_*.py` files) gives the same values eagerly, under
`@function`, and in a Session on a graph whose placeholders have known or unknown dimensions; the graph's
static dtypes and shapes agree with what the run produces."""
import importlib
import pkgutil
import os

import numpy as np
import pytest

import eager as ek
import graph_runtime as gr
from tracing import function

_HERE = os.path.dirname(os.path.abspath(__file__))
CASES = []
for _info in pkgutil.iter_modules([_HERE]):
    if _info.name.startswith("gradcases_"):
        CASES.extend(importlib.import_module(_info.name).CASES)

# ops whose Python wrapper needs a static size TensorFlow also asks for (unstack's `num`)
NEEDS_STATIC_SHAPE = {"Unpack"}


def _flat(out):
    return list(out) if isinstance(out, (list, tuple)) else [out]


def _same(got, want, what):
    got = np.asarray(got)
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype} != eager {want.dtype}"
    assert got.shape == want.shape, f"{what}: shape {got.shape} != eager {want.shape}"
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12, equal_nan=True, err_msg=what)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id or c.op_name)
def test_eager_function_and_session_agree(case):
    arrays = case.inputs(np.random.default_rng(0))
    want = [np.asarray(o.numpy()) for o in _flat(case.fn(*[ek.constant(a) for a in arrays], *case.constants))]
    traced = function(lambda *xs: case.fn(*xs, *case.constants))
    for got, w in zip(_flat(traced(*[ek.constant(a) for a in arrays])), want):
        _same(got.numpy(), w, "@function")
    for unknown in (False, True):
        if unknown and case.op_name in NEEDS_STATIC_SHAPE:
            continue
        g = gr.Graph()
        with g.as_default():
            phs = [gr.placeholder("float64", [None] * a.ndim if unknown else a.shape) for a in arrays]
            outs = _flat(case.fn(*phs, *case.constants))
        with gr.Session(graph=g) as sess:
            got = sess.run(outs, dict(zip(phs, arrays)))
        for t, v, w in zip(outs, got, want):
            what = f"Session ({'unknown' if unknown else 'known'} input shapes)"
            _same(v, w, what)
            assert t.dtype.as_numpy_dtype == np.asarray(v).dtype, f"{what}: static dtype {t.dtype.name}"
            assert t.shape.is_compatible_with(np.shape(v)), f"{what}: static shape {t.shape} vs {np.shape(v)}"
