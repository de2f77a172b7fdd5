"""eager.clip_by_norm / global_norm / clip_by_global_norm / clip_by_value: TF's formulas, in every mode."""
import numpy as np
import pytest

import eager as ek
import graph_runtime as gr
from tracing import function

A = np.array([[3.0, 4.0], [0.0, 12.0]], np.float32)
B = np.array([1.0, -2.0, 2.0], np.float32)


def in_modes(fn, *arrays):
    """fn's result eagerly, under @function and in a Session (all must agree bit for bit)."""
    eager = fn(*[ek.constant(a) for a in arrays])
    traced = function(fn)(*[ek.constant(a) for a in arrays])
    g = gr.Graph()
    with g.as_default():
        phs = [gr.placeholder(ek.float32, a.shape) for a in arrays]
        out = fn(*phs)
    with gr.Session(graph=g) as sess:
        graph = sess.run(out, dict(zip(phs, arrays)))
    flat = lambda r: [np.asarray(x) for x in (ek.nest.flatten(r) if isinstance(r, (list, tuple)) else [r])]  # noqa
    for other in (traced, graph):
        for x, y in zip(flat(eager), flat(other)):
            np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
    return [np.asarray(x) for x in flat(eager)]


def test_clip_by_norm_whole_and_per_axis():
    (whole,) = in_modes(lambda a: ek.clip_by_norm(a, 6.5), A)
    np.testing.assert_allclose(whole, A * 6.5 / 13.0, rtol=1e-6)
    (rows,) = in_modes(lambda a: ek.clip_by_norm(a, 5.0, axes=[1]), A)
    np.testing.assert_allclose(rows, [[3.0, 4.0], [0.0, 5.0]], rtol=1e-6)
    (zero,) = in_modes(lambda a: ek.clip_by_norm(a * 0.0, 1.0), A)
    np.testing.assert_array_equal(zero, np.zeros_like(A))


def test_global_norm_and_clip_by_global_norm():
    norm = np.sqrt(np.sum(A ** 2) + np.sum(B ** 2))
    def clip(a, b):
        (ca, none, cb), used = ek.clip_by_global_norm([a, None, b], 2.0)
        assert none is None
        return ca, cb, used
    clipped_a, clipped_b, used = in_modes(clip, A, B)
    np.testing.assert_allclose(used, norm, rtol=1e-6)
    np.testing.assert_allclose(clipped_a, A * 2.0 / norm, rtol=1e-6)
    np.testing.assert_allclose(clipped_b, B * 2.0 / norm, rtol=1e-6)
    np.testing.assert_allclose(ek.global_norm([ek.constant(A), None, ek.constant(B)]).numpy(), norm, rtol=1e-6)
    kept, _ = ek.clip_by_global_norm([ek.constant(B)], 100.0)
    np.testing.assert_allclose(kept[0].numpy(), B, rtol=1e-6)
    nan, _ = ek.clip_by_global_norm([ek.constant([np.inf, 1.0])], 1.0)     # TF: an infinite norm gives NaN
    assert np.isnan(nan[0].numpy()).all()
    with pytest.raises(ValueError, match="every entry is None"):
        ek.global_norm([None])


def test_clipping_gradients_match_finite_differences():
    x0 = np.array([0.3, -1.2, 2.0], np.float64)

    def loss(x):
        clipped, _ = ek.clip_by_global_norm([x * x], 1.5)
        return ek.reduce_sum(ek.clip_by_norm(x, 1.0) * clipped[0])
    x = ek.constant(x0)
    with ek.GradientTape() as tape:
        tape.watch(x)
        y = loss(x)
    analytic = tape.gradient(y, x).numpy()
    eps = 1e-6
    numeric = [(loss(ek.constant(x0 + eps * e)).numpy() - loss(ek.constant(x0 - eps * e)).numpy()) / (2 * eps)
               for e in np.eye(3)]
    np.testing.assert_allclose(analytic, numeric, rtol=1e-5, atol=1e-7)
