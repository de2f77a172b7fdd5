"""eager.linalg: values against NumPy, the same eagerly / under @function / in a Session, gradients checked
numerically (central differences in float64)."""
import numpy as np
import pytest

import eager as ek
import graph_runtime as gr
from tracing import function

RNG = np.random.default_rng(0)
SQ = RNG.standard_normal((3, 3)) + 3 * np.eye(3)
SPD = SQ @ SQ.T + np.eye(3)
TALL = RNG.standard_normal((4, 3))
B = RNG.standard_normal((3, 2))
VEC = RNG.standard_normal(3)


def sym(x):
    return (x + ek.linalg.matrix_transpose(x)) * 0.5


CASES = {
    "inv": (lambda a: ek.linalg.inv(a), [SQ], lambda a: np.linalg.inv(a)),
    "inv_adjoint": (lambda a: ek.linalg.inv(a, adjoint=True), [SQ], lambda a: np.linalg.inv(a.T)),
    "solve": (lambda a, b: ek.linalg.solve(a, b), [SQ, B], lambda a, b: np.linalg.solve(a, b)),
    "solve_adjoint": (lambda a, b: ek.linalg.solve(a, b, adjoint=True), [SQ, B], lambda a, b: np.linalg.solve(a.T, b)),
    "cholesky": (lambda a: ek.linalg.cholesky(sym(a)), [SPD], lambda a: np.linalg.cholesky(a)),
    "det": (lambda a: ek.linalg.det(a), [SQ], np.linalg.det),
    "slogdet": (lambda a: ek.linalg.slogdet(a)[1], [SQ], lambda a: np.linalg.slogdet(a)[1]),
    "logdet": (lambda a: ek.linalg.logdet(sym(a)), [SPD], lambda a: np.linalg.slogdet(a)[1]),
    "svd_s": (lambda a: ek.linalg.svd(a, compute_uv=False), [TALL], lambda a: np.linalg.svd(a, compute_uv=False)),
    "qr_q": (lambda a: ek.linalg.qr(a)[0], [TALL], lambda a: np.linalg.qr(a)[0]),
    "qr_r": (lambda a: ek.linalg.qr(a)[1], [TALL], lambda a: np.linalg.qr(a)[1]),
    "eigh_e": (lambda a: ek.linalg.eigh(sym(a))[0], [SPD], lambda a: np.linalg.eigh(a)[0]),
    "eigh_v_abs": (lambda a: ek.abs(ek.linalg.eigh(sym(a))[1]), [SPD], lambda a: np.abs(np.linalg.eigh(a)[1])),
    "diag": (lambda v: ek.linalg.diag(v), [VEC], np.diag),
    "diag_part": (lambda a: ek.linalg.diag_part(a), [TALL], lambda a: np.diagonal(a)),
    "set_diag": (lambda a, v: ek.linalg.set_diag(a, v), [SQ, VEC],
                 lambda a, v: a - np.diag(np.diag(a)) + np.diag(v)),
    "trace": (lambda a: ek.linalg.trace(a), [SQ], np.trace),
    "matvec": (lambda a, v: ek.linalg.matvec(a, v), [SQ, VEC], lambda a, v: a @ v),
    "matmul": (lambda a, b: ek.linalg.matmul(a, b), [SQ, B], lambda a, b: a @ b),
    "norm": (lambda v: ek.linalg.norm(v), [VEC], np.linalg.norm),
    "norm_1": (lambda v: ek.linalg.norm(v, ord=1), [VEC], lambda v: np.linalg.norm(v, 1)),
    "norm_3": (lambda v: ek.linalg.norm(v, ord=3), [VEC], lambda v: np.linalg.norm(v, 3)),
    "norm_fro": (lambda a: ek.linalg.norm(a, "fro", axis=(-2, -1)), [TALL], lambda a: np.linalg.norm(a, "fro")),
    "norm_mat1": (lambda a: ek.linalg.norm(a, 1, axis=[0, 1]), [TALL], lambda a: np.linalg.norm(a, 1)),
    "norm_matinf": (lambda a: ek.linalg.norm(a, np.inf, axis=[0, 1]), [TALL], lambda a: np.linalg.norm(a, np.inf)),
    "norm_mat2": (lambda a: ek.linalg.norm(a, 2, axis=(-2, -1)), [TALL], lambda a: np.linalg.norm(a, 2)),
}


def in_graph(fn, arrays):
    g = gr.Graph()
    with g.as_default():
        phs = [gr.placeholder(ek.float64, a.shape) for a in arrays]
        out = fn(*phs)
    with gr.Session(graph=g) as sess:
        return sess.run(out, dict(zip(phs, arrays)))


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_in_every_mode(name):
    fn, arrays, ref = CASES[name]
    got = fn(*[ek.constant(a) for a in arrays]).numpy()
    np.testing.assert_allclose(got, ref(*arrays), rtol=1e-9, atol=1e-12)
    np.testing.assert_array_equal(function(fn, autograph=False)(*[ek.constant(a) for a in arrays]).numpy(), got)
    np.testing.assert_allclose(in_graph(fn, arrays), got, rtol=1e-12, atol=1e-14)


def numeric_gradient(f, arrays, k, eps=1e-6):
    out = np.zeros_like(arrays[k])
    for idx in np.ndindex(arrays[k].shape):
        plus = [a.copy() for a in arrays]
        minus = [a.copy() for a in arrays]
        plus[k][idx] += eps
        minus[k][idx] -= eps
        out[idx] = (f(*plus) - f(*minus)) / (2 * eps)
    return out


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradients_match_finite_differences(name):
    fn, arrays, _ = CASES[name]
    w = np.random.default_rng(1).standard_normal(np.shape(fn(*[ek.constant(a) for a in arrays]).numpy()))

    def loss(*xs):
        return ek.reduce_sum(fn(*xs) * w)

    def value(*arrs):
        return float(loss(*[ek.constant(a) for a in arrs]).numpy())
    xs = [ek.constant(a) for a in arrays]
    with ek.GradientTape() as tape:
        for x in xs:
            tape.watch(x)
        y = loss(*xs)
    grads = tape.gradient(y, xs)
    for k, g in enumerate(grads):
        np.testing.assert_allclose(g.numpy(), numeric_gradient(value, arrays, k), rtol=1e-5, atol=1e-6)
    traced = function(lambda *xs: _grads(loss, xs), autograph=False)
    for a, b in zip(traced(*[ek.constant(a) for a in arrays]), grads):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12, atol=1e-14)


def _grads(loss, xs):
    with ek.GradientTape() as tape:
        for x in xs:
            tape.watch(x)
        y = loss(*xs)
    return tape.gradient(y, list(xs))


def test_batches_errors_and_the_svd_gradient_limit():
    batch = np.stack([SQ, SPD])
    np.testing.assert_allclose(ek.linalg.det(batch).numpy(), np.linalg.det(batch))
    np.testing.assert_allclose(ek.linalg.inv(batch).numpy(), np.linalg.inv(batch))
    with pytest.raises(ek.errors.InvalidArgumentError, match="square"):
        ek.linalg.inv(TALL)
    with pytest.raises(ek.errors.InvalidArgumentError, match="float32, float64"):
        ek.linalg.det(np.eye(2, dtype=np.int32))
    with pytest.raises(ek.errors.InvalidArgumentError, match="Cholesky"):
        ek.linalg.cholesky(-np.eye(2))
    s, u, v = ek.linalg.svd(TALL)
    np.testing.assert_allclose((u.numpy() * s.numpy()) @ v.numpy().T, TALL, atol=1e-12)
    x = ek.constant(TALL)
    with ek.GradientTape() as tape:
        tape.watch(x)
        y = ek.reduce_sum(ek.linalg.svd(x)[1])
    with pytest.raises(NotImplementedError, match="through u or v"):
        tape.gradient(y, x)
