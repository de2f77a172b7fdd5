"""Every convolution algorithm against loop references, the cost model's picks, and max-pool gradient routing.

Each algorithm is forced in turn (`conv_algorithms.forced`) and run through the
public API (conv2d under a GradientTape, conv2d_transpose), so all choices the
cost model can make are checked on the same problems.  Max-pool gradients are
checked on windows with ties against a loop that gives each window's gradient
to its first maximum in row-major order, as TensorFlow does.
"""
import itertools

import numpy as np
import pytest

import eager as ek
from eager.dispatch import execute
from eager.ops import conv_algorithms, nn_pool
from eager.ops.windows import geometry

RNG = np.random.default_rng(7)


def ref_conv_all(x, f, dy, strides, padding, dilations):
    """(Conv2D, input gradient, filter gradient) by loops over output pixels and taps, in float64."""
    (oh, pt, _), (ow, pl, _) = geometry(x.shape[1:3], f.shape[:2], strides, dilations, padding, "ref")
    out = np.zeros((x.shape[0], oh, ow, f.shape[3]))
    dx, df = np.zeros(x.shape), np.zeros(f.shape)
    for i, j, a, b in itertools.product(range(oh), range(ow), range(f.shape[0]), range(f.shape[1])):
        r, q = i * strides[0] + a * dilations[0] - pt, j * strides[1] + b * dilations[1] - pl
        if 0 <= r < x.shape[1] and 0 <= q < x.shape[2]:
            out[:, i, j] += x[:, r, q] @ f[a, b]
            if dy is not None:
                dx[:, r, q] += dy[:, i, j] @ f[a, b].T
                df[a, b] += x[:, r, q].T @ dy[:, i, j]
    return out, dx, df


# (x shape, filter shape, strides, padding, dilations)
PROBLEMS = [
    ((2, 6, 5, 1), (3, 3, 1, 4), (1, 1), "SAME", (1, 1)),          # one input channel (the slab im2col)
    ((2, 5, 5, 3), (3, 3, 3, 2), (1, 1), "VALID", (1, 1)),
    ((1, 7, 6, 2), (3, 2, 2, 3), (2, 2), "SAME", (1, 1)),          # strided, non-square filter
    ((2, 7, 7, 2), (3, 3, 2, 2), (1, 1), "SAME", (2, 2)),          # dilated
    ((1, 5, 6, 3), (1, 1, 3, 4), (1, 1), "VALID", (1, 1)),         # 1x1
    ((1, 6, 6, 2), (1, 1, 2, 3), (2, 2), "VALID", (1, 1)),         # strided 1x1
    ((1, 5, 4, 2), (2, 3, 2, 2), (1, 1), ((2, 0), (1, 3)), (1, 1)),  # explicit, asymmetric padding
    ((2, 8, 7, 2), (3, 3, 2, 2), (3, 2), "VALID", (1, 1)),         # stride leaves a remainder
]


def _explicit(padding):
    return padding if isinstance(padding, str) else [[0, 0], list(padding[0]), list(padding[1]), [0, 0]]


@pytest.mark.parametrize("problem", PROBLEMS, ids=lambda p: f"{p[0]}x{p[1]}s{p[2]}{p[3]}d{p[4]}")
@pytest.mark.parametrize("forward,input_,filter_", [("im2col", "col2im", "gemm"), ("taps", "taps", "taps"),
                                                    ("im2col", "transpose", "taps")])
def test_each_algorithm_matches_loops(problem, forward, input_, filter_):
    xs, fs, strides, padding, dilations = problem
    x, f = RNG.standard_normal(xs), RNG.standard_normal(fs)
    out_ref, _, _ = ref_conv_all(x, f, None, strides, padding, dilations)
    dy = RNG.standard_normal(out_ref.shape)
    _, dx_ref, df_ref = ref_conv_all(x, f, dy, strides, padding, dilations)
    xt, ft = ek.constant(x), ek.constant(f)
    with conv_algorithms.forced(forward=forward, input=input_, filter=filter_):
        with ek.GradientTape() as tape:
            tape.watch([xt, ft])
            y = ek.nn.conv2d(xt, ft, list(strides), _explicit(padding), dilations=list(dilations))
        dx, df = tape.gradient(y, [xt, ft], output_gradients=ek.constant(dy))
        xt2 = ek.nn.conv2d_transpose(ek.constant(dy), ft, list(xs), list(strides), _explicit(padding),
                                     dilations=list(dilations))
    np.testing.assert_allclose(y.numpy(), out_ref, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(dx.numpy(), dx_ref, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(xt2.numpy(), dx_ref, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(df.numpy(), df_ref, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("kind", sorted(conv_algorithms.ALGORITHMS))
def test_algorithms_agree_in_float32(kind):
    x = RNG.standard_normal((4, 9, 9, 5)).astype(np.float32)
    f = RNG.standard_normal((3, 3, 5, 6)).astype(np.float32)
    dy = RNG.standard_normal((4, 9, 9, 6)).astype(np.float32)
    results = {}
    for name in conv_algorithms.ALGORITHMS[kind]:
        with conv_algorithms.forced(**{kind: name}):
            if kind == "forward":
                r = ek.nn.conv2d(x, f, 1, "SAME")
            elif kind == "input":
                r = ek.nn.conv2d_transpose(dy, f, x.shape, 1, "SAME")
            else:
                xt = ek.constant(x)
                with ek.GradientTape() as tape:
                    tape.watch(xt)
                    y = ek.nn.conv2d(xt, ek.constant(f), 1, "SAME")
                r = tape.gradient(y, xt, output_gradients=ek.constant(dy))
        assert r.dtype is ek.float32
        results[name] = r.numpy()
    first = next(iter(results.values()))
    for name, r in results.items():
        np.testing.assert_allclose(r, first, rtol=2e-5, atol=2e-5, err_msg=name)


@pytest.mark.parametrize("problem", PROBLEMS, ids=lambda p: f"{p[0]}x{p[1]}s{p[2]}{p[3]}d{p[4]}")
def test_taps_input_gradient_is_contiguous_and_sums_the_taps_in_order(problem):
    # written unpadded (no cropped view of a padded buffer, which slows whatever reads it), with the bits
    # of adding each tap's product into a zero padded buffer in row-major tap order and cropping
    xs, fs, strides, padding, dilations = problem
    x, f = RNG.standard_normal(xs).astype(np.float32), RNG.standard_normal(fs).astype(np.float32)
    gh, gw = geometry(xs[1:3], fs[:2], strides, dilations, padding, "ref")
    dy = RNG.standard_normal((xs[0], gh[0], gw[0], fs[3])).astype(np.float32)
    with conv_algorithms.forced(input="taps"):
        dx = ek.nn.conv2d_transpose(ek.constant(dy), ek.constant(f), list(xs), list(strides), _explicit(padding),
                                    dilations=list(dilations)).numpy()
    assert dx.flags.c_contiguous
    dxp = np.zeros((xs[0], xs[1] + gh[1] + gh[2], xs[2] + gw[1] + gw[2], xs[3]), np.float32)
    for i, j in itertools.product(range(fs[0]), range(fs[1])):
        hi, wj = i * dilations[0], j * dilations[1]
        dxp[:, hi:hi + strides[0] * (gh[0] - 1) + 1:strides[0], wj:wj + strides[1] * (gw[0] - 1) + 1:strides[1]] += \
            (dy.reshape(-1, fs[3]) @ f[i, j].T).reshape(dy.shape[:3] + (xs[3],))
    np.testing.assert_array_equal(dx, dxp[:, gh[1]:gh[1] + xs[1], gw[1]:gw[1] + xs[2]])


def test_chunked_im2col_gives_the_same_results(monkeypatch):
    x, f = RNG.standard_normal((5, 6, 6, 3)), RNG.standard_normal((3, 3, 3, 2))
    dy = RNG.standard_normal((5, 6, 6, 2))
    _, dx_ref, df_ref = ref_conv_all(x, f, dy, (1, 1), "SAME", (1, 1))
    monkeypatch.setattr(conv_algorithms, "COLS_BYTES", 6 * 6 * 9 * 3 * 8 * 2)   # two images per chunk
    xt, ft = ek.constant(x), ek.constant(f)
    with conv_algorithms.forced(forward="im2col", input="col2im", filter="gemm"):
        with ek.GradientTape() as tape:
            tape.watch([xt, ft])
            y = ek.nn.conv2d(xt, ft, 1, "SAME")
        dx, df = tape.gradient(y, [xt, ft], output_gradients=ek.constant(dy))
    np.testing.assert_allclose(y.numpy(), ref_conv_all(x, f, None, (1, 1), "SAME", (1, 1))[0], rtol=1e-10)
    np.testing.assert_allclose(dx.numpy(), dx_ref, rtol=1e-10)
    np.testing.assert_allclose(df.numpy(), df_ref, rtol=1e-10)


def test_results_do_not_share_scratch_memory():
    f = RNG.standard_normal((3, 3, 2, 2))
    x1, x2 = RNG.standard_normal((1, 5, 5, 2)), RNG.standard_normal((1, 5, 5, 2))
    y1 = ek.nn.conv2d(x1, f, 1, "SAME")
    want = y1.numpy().copy()
    ek.nn.conv2d(x2, f, 1, "SAME")
    ek.nn.conv2d_transpose(RNG.standard_normal((1, 5, 5, 2)), f, [1, 5, 5, 2], 1, "SAME")
    np.testing.assert_array_equal(y1.numpy(), want)


def test_cost_model_picks_are_valid_cached_and_forcing_is_checked():
    shapes = [(64, 1, 16, 3, 3, 28, 28, 28, 28, (1, 1)), (64, 16, 32, 3, 3, 14, 14, 14, 14, (1, 1)),
              (64, 16, 32, 3, 3, 14, 14, 28, 28, (2, 2)), (64, 32, 64, 1, 1, 14, 14, 14, 14, (1, 1))]
    for kind in conv_algorithms.ALGORITHMS:
        for s in shapes:
            name = conv_algorithms.choose(kind, *s)
            assert name in conv_algorithms.ALGORITHMS[kind]
            assert conv_algorithms.choose(kind, *s) == name            # deterministic per shape
            assert not (name == "transpose" and s[-1] != (1, 1))
            est = conv_algorithms.estimates(kind, *s)
            assert est[name] == min(est.values())
    assert "transpose" not in conv_algorithms.estimates("input", *shapes[2])
    # the one-input-channel first layer: one im2col GEMM, not nine outer products
    assert conv_algorithms.choose("forward", *shapes[0]) == "im2col"
    with conv_algorithms.forced(input="transpose"):                  # not applicable to strides 2: the model picks
        assert conv_algorithms.choose("input", *shapes[2]) in ("col2im", "taps")
        assert conv_algorithms.choose("input", *shapes[1]) == "transpose"
    with pytest.raises(ValueError, match="unknown forward convolution algorithm 'fft'"):
        with conv_algorithms.forced(forward="fft"):
            pass


def test_input_gradient_pick_costs_col2im_at_numpys_scatter_speed():
    # shapes where numba's scatter made col2im the fastest but NumPy's is the slowest (CPU ms, one BLAS thread:
    # col2im without numba 25.4 / 28.9 / 3.5 against taps 20.2 / 15.0 / 2.0): the pick cannot depend on numba
    # (other sums), so it must not assume numba's speed; one-channel inputs keep col2im (NumPy's add runs along
    # the row there: 2.2 against 2.6 for taps)
    for x_shape, f_shape in [((64, 16, 16, 32), (3, 3, 32, 64)), ((64, 28, 28, 8), (3, 3, 8, 32)),
                             ((64, 14, 14, 3), (3, 3, 3, 16)), ((64, 28, 28, 1), (3, 3, 1, 16))]:
        n, h, w, c = x_shape
        problem = (n, c, f_shape[3], f_shape[0], f_shape[1], h, w, h, w, (1, 1))
        want = "col2im" if c == 1 else "taps"
        assert conv_algorithms.choose("input", *problem) == want, (x_shape, conv_algorithms.estimates("input", *problem))


# ------------------------------------------------------------------ max-pool gradients: first max wins
def ref_max_pool_grads(x, dy, g, k, s, padding):
    """(MaxPoolGrad, MaxPoolGradGrad) by loops: each window's first maximum (row-major) is the one routed.

    Where windows overlap, an input element can receive several windows' gradients; they are summed tap
    by tap (every window whose maximum sits at tap (0, 0), then (0, 1), ...), the kernel's order, so that
    the comparison is bitwise in float16 too (another order rounds differently)."""
    (oh, pt, _), (ow, pl, _) = geometry(x.shape[1:3], (k, k), (s, s), (1, 1), padding, "ref")
    dx, gg = np.zeros(x.shape, dy.dtype), np.zeros(dy.shape, g.dtype)
    routed = {}                                      # tap -> [(input element, window)]
    for b, i, j, c in itertools.product(range(x.shape[0]), range(oh), range(ow), range(x.shape[3])):
        best = None
        for a, e in itertools.product(range(k), range(k)):
            r, q = i * s + a - pt, j * s + e - pl
            if 0 <= r < x.shape[1] and 0 <= q < x.shape[2] and (best is None or x[b, r, q, c] > x[b, best[0], best[1], c]):
                best, tap = (r, q), (a, e)
        routed.setdefault(tap, []).append(((b, best[0], best[1], c), (b, i, j, c)))
        gg[b, i, j, c] = g[b, best[0], best[1], c]
    for tap in sorted(routed):
        for element, window in routed[tap]:
            dx[element] += dy[window]
    return dx, gg


def tied(shape, dtype):
    """Small integers: most windows hold ties, many are all equal."""
    return RNG.integers(0, 3, shape).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16])
@pytest.mark.parametrize("hw,k,s,padding", [((6, 8), 2, 2, "VALID"),      # non-overlapping: the mask path
                                            ((7, 8), 3, 3, "VALID"),      # non-overlapping with a remainder
                                            ((6, 6), 3, 3, "SAME"),       # SAME without padding: mask path
                                            ((5, 7), 2, 2, "SAME"),       # padded: the argmax path
                                            ((6, 6), 3, 2, "VALID")])     # overlapping: the argmax path
def test_max_pool_gradients_route_ties_to_the_first_max(dtype, hw, k, s, padding):
    x = tied((2,) + hw + (3,), dtype)
    y = ek.nn.max_pool2d(x, k, s, padding)
    dy = RNG.standard_normal(y.shape.as_list()).astype(dtype)
    g = RNG.standard_normal(x.shape).astype(dtype)
    attrs = {"ksize": (k, k), "strides": (s, s), "padding": padding}
    dx = execute(nn_pool.MAX_POOL_GRAD, (ek.constant(x), y, ek.constant(dy)), attrs)
    gg = execute(nn_pool.MAX_POOL_GRAD_GRAD, (ek.constant(x), y, ek.constant(g)), attrs)
    dx_ref, gg_ref = ref_max_pool_grads(x, dy, g, k, s, padding)
    np.testing.assert_array_equal(dx.numpy(), dx_ref)
    np.testing.assert_array_equal(gg.numpy(), gg_ref)


def test_max_pool_gradient_through_the_tape_on_an_all_equal_window():
    x = ek.constant(np.zeros((1, 2, 4, 1), np.float32))
    with ek.GradientTape() as tape:
        tape.watch(x)
        y = ek.nn.max_pool2d(x, 2, 2, "VALID")
    dx = tape.gradient(y, x, output_gradients=ek.constant(np.array([3.0, 5.0], np.float32).reshape(1, 1, 2, 1)))
    np.testing.assert_array_equal(dx.numpy().reshape(2, 4), [[3, 0, 5, 0], [0, 0, 0, 0]])


def test_max_pool_gradient_keeps_inf_where_it_goes_and_nowhere_else():
    x = np.arange(16, dtype=np.float32).reshape(1, 4, 4, 1)
    dy = np.array([np.inf, -np.inf, 1, 2], np.float32).reshape(1, 2, 2, 1)
    dx = execute(nn_pool.MAX_POOL_GRAD, (ek.constant(x), ek.nn.max_pool2d(x, 2, 2, "VALID"), ek.constant(dy)),
                 {"ksize": (2, 2), "strides": (2, 2), "padding": "VALID"}).numpy()
    assert not np.isnan(dx).any()                    # no 0 * inf at the non-maxima
    assert dx[0, 1, 1, 0] == np.inf and dx[0, 1, 3, 0] == -np.inf and np.count_nonzero(dx) == 4


def test_max_pool_gradient_with_nan_matches_the_argmax_path():
    x = RNG.standard_normal((1, 4, 4, 2))
    x[0, 0, 1, 0] = np.nan          # second in its window: the window's max stays the first finite maximum
    x[0, 2, 2, 1] = np.nan          # first in its window: it takes the gradient
    dy = RNG.standard_normal((1, 2, 2, 2))
    attrs = {"ksize": (2, 2), "strides": (2, 2), "padding": "VALID"}
    assert nn_pool._route_to_first_max(x, dy, nn_pool._non_overlapping(x, attrs)) is None   # NaN: the argmax path
    dx = execute(nn_pool.MAX_POOL_GRAD, (ek.constant(x), ek.nn.max_pool2d(x, 2, 2, "VALID"), ek.constant(dy)),
                 attrs).numpy()
    assert dx[0, 2, 2, 1] == dy[0, 1, 1, 1] and dx[0, 0, 1, 0] == 0
    assert np.count_nonzero(dx) == dy.size


def test_convolutions_in_threads_use_their_own_scratch_memory():
    import threading
    f = RNG.standard_normal((3, 3, 4, 3))
    inputs = [RNG.standard_normal((2, 9, 9, 4)) for _ in range(4)]
    want = [ref_conv_all(x, f, None, (1, 1), "SAME", (1, 1))[0] for x in inputs]
    errors = []

    def work(k):
        for _ in range(30):
            got = ek.nn.conv2d(inputs[k], f, 1, "SAME").numpy()
            if not np.allclose(got, want[k], rtol=1e-10, atol=1e-10):
                errors.append(k)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
