"""eager.math / eager.nn additions: values against NumPy in every mode, gradients against finite differences."""
import math

import numpy as np
import pytest

import eager as ek
import graph_runtime as gr
from tracing import function

RNG = np.random.default_rng(2)
X = RNG.uniform(0.5, 2.0, (3, 4))
V = RNG.standard_normal(5)
IDS = np.array([0, 0, 2], np.int32)
ERF = np.vectorize(math.erf)

CASES = {
    "cumprod": (lambda x: ek.math.cumprod(x, axis=1), [X], lambda x: np.cumprod(x, axis=1)),
    "cumprod_ex_rev": (lambda x: ek.math.cumprod(x, axis=1, exclusive=True, reverse=True), [X],
                       lambda x: np.flip(np.concatenate([np.ones((3, 1)), np.cumprod(np.flip(x, 1), 1)[:, :-1]], 1),
                                         1)),
    "segment_sum": (lambda x: ek.math.segment_sum(x, IDS), [X], lambda x: np.stack([x[0] + x[1], 0 * x[0], x[2]])),
    "unsorted_segment_sum": (lambda x: ek.math.unsorted_segment_sum(x, [1, 0, 1], 3), [X],
                             lambda x: np.stack([x[1], x[0] + x[2], 0 * x[0]])),
    "erf": (lambda v: ek.math.erf(v), [V], ERF),
    "reduce_variance": (lambda x: ek.math.reduce_variance(x, axis=1), [X], lambda x: np.var(x, axis=1)),
    "reduce_std": (lambda x: ek.math.reduce_std(x, axis=0, keepdims=True), [X],
                   lambda x: np.std(x, axis=0, keepdims=True)),
    "l2_normalize": (lambda x: ek.math.l2_normalize(x, axis=1), [X],
                     lambda x: x / np.sqrt(np.sum(x * x, axis=1, keepdims=True))),
    "gelu": (lambda v: ek.nn.gelu(v), [V], lambda v: 0.5 * v * (1 + ERF(v / np.sqrt(2)))),
    "gelu_tanh": (lambda v: ek.nn.gelu(v, approximate=True), [V],
                  lambda v: 0.5 * v * (1 + np.tanh(np.sqrt(2 / np.pi) * (v + 0.044715 * v ** 3)))),
    "moments_mean": (lambda x: ek.nn.moments(x, [0])[0], [X], lambda x: x.mean(0)),
    "moments_var": (lambda x: ek.nn.moments(x, [0, 1], keepdims=True)[1], [X], lambda x: x.var(keepdims=True)),
    "batch_normalization": (lambda x: ek.nn.batch_normalization(x, 1.0, 4.0, 0.5, 2.0, 1e-3), [X],
                            lambda x: (x - 1.0) * 2.0 / np.sqrt(4.0 + 1e-3) + 0.5),
    "embedding_lookup": (lambda x: ek.nn.embedding_lookup(x, [2, 0, 2]), [X], lambda x: x[[2, 0, 2]]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_in_every_mode(name):
    fn, arrays, ref = CASES[name]
    got = fn(*[ek.constant(a) for a in arrays]).numpy()
    np.testing.assert_allclose(got, ref(*arrays), rtol=1e-10, atol=1e-12)
    # numexpr fusion may move transcendental results by a few ulp (README): compare closely, not bitwise
    np.testing.assert_allclose(function(fn, autograph=False)(*[ek.constant(a) for a in arrays]).numpy(), got,
                               rtol=1e-13, atol=1e-15)
    g = gr.Graph()
    with g.as_default():
        phs = [gr.placeholder(ek.float64, a.shape) for a in arrays]
        out = fn(*phs)
    with gr.Session(graph=g) as sess:
        np.testing.assert_allclose(sess.run(out, dict(zip(phs, arrays))), got, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("name", sorted(n for n in CASES if n != "moments_var"))   # TF stops that gradient
def test_gradients_match_finite_differences(name):
    fn, arrays, _ = CASES[name]
    w = np.random.default_rng(1).standard_normal(np.shape(fn(*[ek.constant(a) for a in arrays]).numpy()))
    x = ek.constant(arrays[0])
    with ek.GradientTape() as tape:
        tape.watch(x)
        y = ek.reduce_sum(fn(x) * w)
    analytic = tape.gradient(y, x).numpy()
    numeric = np.zeros_like(arrays[0])
    for idx in np.ndindex(arrays[0].shape):
        d = np.zeros_like(arrays[0])
        d[idx] = 1e-6
        numeric[idx] = (np.sum(fn(ek.constant(arrays[0] + d)).numpy() * w) -
                        np.sum(fn(ek.constant(arrays[0] - d)).numpy() * w)) / 2e-6
    np.testing.assert_allclose(analytic, numeric, rtol=1e-5, atol=1e-7)


def test_bad_segment_ids_and_names():
    with pytest.raises(ek.errors.InvalidArgumentError, match="sorted"):
        ek.math.segment_sum(X, [1, 0, 0])
    with pytest.raises(ek.errors.InvalidArgumentError, match="in \\[0, 2\\)"):
        ek.math.unsorted_segment_sum(X, [0, 5, 1], 2)
    assert ek.math.reduce_sum is ek.reduce_sum and ek.math.softplus is ek.nn.softplus
    assert all(hasattr(ek.math, n) for n in ek.math.__all__)
