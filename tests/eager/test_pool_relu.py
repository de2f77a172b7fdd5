"""ReluMaxPoolGrad(z, y, dy) gives exactly the bits of ReluGrad(MaxPoolGrad(relu(z), y, dy), relu(z)):
ties, zeros of both signs, NaN (payloads too) and infinities in z and dy, uncovered borders, overlapping and
padded windows, on the mask path, the native path (numba, when installed) and the composition."""
import numpy as np
import pytest

from eager import native
from eager.ops import nn_pool_relu
from eager.registry import get

SPECIAL = np.array([0x80000000, 0, 0x7fc00001, 0xffc00002, 0x7f800000, 0xff800000, 0x3f800000, 0xbf800000],
                   np.uint32).view(np.float32)


def _bits(a):
    return a.view(np.dtype(f"u{a.dtype.itemsize}"))


def _data(shape, seed, special_z=False, special_dy=False, dy_shape=(1,)):
    rng = np.random.default_rng(seed)
    z = rng.integers(-2, 3, shape).astype(np.float32)        # many ties, many zeros
    z[rng.random(shape) < 0.1] = -0.0
    if special_z:
        z.reshape(-1)[::37] = np.resize(SPECIAL, z.reshape(-1)[::37].shape)
    dy = rng.standard_normal(dy_shape).astype(np.float32)
    if special_dy:
        dy.reshape(-1)[::5] = np.resize(SPECIAL, dy.reshape(-1)[::5].shape)
    return z, dy


def _unfused(z, dy, attrs):
    h = get("Relu").kernel(z)
    y = get("MaxPool").kernel(h, **attrs)
    return y, get("ReluGrad").kernel(get("MaxPoolGrad").kernel(h, y, dy, **attrs), h)


CASES = [  # (input shape, ksize, strides, padding)
    ((4, 8, 8, 3), (2, 2), (2, 2), "VALID"),
    ((3, 9, 7, 2), (2, 2), (2, 2), "VALID"),       # uncovered last row and column
    ((2, 9, 9, 4), (3, 3), (3, 3), "VALID"),
    ((2, 8, 8, 2), (3, 3), (2, 2), "VALID"),       # overlapping windows: the composition
    ((2, 7, 7, 2), (2, 2), (2, 2), "SAME"),        # padded windows: the composition
]


@pytest.mark.parametrize("native_on", [False, True])
@pytest.mark.parametrize("special", [(False, False), (True, False), (False, True), (True, True)])
@pytest.mark.parametrize("case", CASES)
def test_fused_gradient_bits_equal_the_composition(case, special, native_on):
    if native_on and not native.available():
        pytest.skip("numba not installed")
    shape, ksize, strides, padding = case
    attrs = {"ksize": ksize, "strides": strides, "padding": padding}
    z, _ = _data(shape, 0)
    y_shape = get("MaxPool").kernel(z, **attrs).shape
    for seed in range(3):
        z, dy = _data(shape, seed, *special, dy_shape=y_shape)
        with native.options(enabled=native_on, min_bytes=0), np.errstate(all="ignore"):
            y, want = _unfused(z, dy, attrs)
            got = nn_pool_relu._relu_max_pool_grad_kernel(z, y, dy, **attrs)
        assert got.dtype == want.dtype and got.shape == want.shape
        assert np.array_equal(_bits(got), _bits(want)), (case, special, native_on, seed)


def test_relu_after_pool_has_the_bits_of_pool_after_relu():
    for seed in range(3):
        z, _ = _data((4, 9, 9, 3), seed, special_z=True)
        for ksize, strides, padding in [((2, 2), (2, 2), "VALID"), ((3, 3), (2, 2), "SAME")]:
            attrs = {"ksize": ksize, "strides": strides, "padding": padding}
            a = get("MaxPool").kernel(get("Relu").kernel(z), **attrs)
            b = get("Relu").kernel(get("MaxPool").kernel(z, **attrs))
            assert np.array_equal(_bits(a), _bits(b))


def test_float64_and_mixed_dtypes_take_the_composition():
    z, dy = _data((2, 4, 4, 2), 1, dy_shape=(2, 2, 2, 2))
    attrs = {"ksize": (2, 2), "strides": (2, 2), "padding": "VALID"}
    for zz, dd in [(z.astype(np.float64), dy.astype(np.float64)), (z, dy.astype(np.float64))]:
        y, want = _unfused(zz, dd, attrs)
        got = nn_pool_relu._relu_max_pool_grad_kernel(zz, y, dd, **attrs)
        assert got.dtype == want.dtype and np.array_equal(_bits(got), _bits(want))


def test_max_pool_keeps_row_major_maximum_order():
    """MaxPool's bits are np.maximum applied window offset by offset in row-major order (the first NaN
    of a window wins, between equal values such as -0.0 and +0.0 the later one)."""
    z, _ = _data((3, 9, 9, 2), 4, special_z=True)
    for ksize, strides, padding in [((2, 2), (2, 2), "VALID"), ((3, 3), (2, 2), "VALID"), ((1, 2), (1, 2), "VALID")]:
        got = get("MaxPool").kernel(z, ksize=ksize, strides=strides, padding=padding)
        oh, ow = got.shape[1:3]
        want = None
        for i in range(ksize[0]):
            for j in range(ksize[1]):
                s = z[:, i:i + strides[0] * (oh - 1) + 1:strides[0], j:j + strides[1] * (ow - 1) + 1:strides[1]]
                want = s.copy() if want is None else np.maximum(want, s)
        assert np.array_equal(_bits(got), _bits(want)), ksize
