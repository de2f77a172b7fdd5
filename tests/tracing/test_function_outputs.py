"""Every non-None output of a traced function is a Tensor, as in TensorFlow.

`tf.function(lambda x: x + 1)(1)` returns `<tf.Tensor: numpy=2>`; None stays
None and the structure (lists, tuples, dicts, namedtuples) is kept.
"""
import collections

import numpy as np
import pytest

import eager as ek
from tracing import function, load, save

Pair = collections.namedtuple("Pair", "a b")


def test_python_number_result_is_a_tensor():
    f = function(lambda x: x + 1)
    out = f(1)
    assert isinstance(out, ek.Tensor) and out.dtype is ek.int32 and out.numpy() == 2
    out = f(2.5)
    assert isinstance(out, ek.Tensor) and out.dtype is ek.float32 and out.numpy() == 3.5
    assert isinstance(f(1), ek.Tensor)             # the cached trace returns a tensor too


def test_nested_outputs_keep_structure_and_none():
    @function
    def f(x):
        return {"t": x, "none": None, "list": [1, "a", (2.0, None)], "pair": Pair(3, x * 2), "arr": np.eye(2)}

    for _ in range(2):                              # traced call, then the cached plan
        out = f(ek.constant(1.0))
        assert out["none"] is None and out["list"][2][1] is None
        assert isinstance(out["list"], list) and isinstance(out["list"][2], tuple)
        assert isinstance(out["pair"], Pair)
        leaves = [out["t"], out["list"][0], out["list"][1], out["list"][2][0], out["pair"].a, out["pair"].b,
                  out["arr"]]
        assert all(isinstance(t, ek.Tensor) for t in leaves)
        assert [t.dtype for t in leaves] == [ek.float32, ek.int32, ek.string, ek.float32, ek.int32, ek.float32,
                                             ek.float64]
        assert out["list"][1].numpy() == b"a" and out["pair"].b.numpy() == 2.0
        np.testing.assert_array_equal(out["arr"].numpy(), np.eye(2))


def test_outputs_are_tensors_under_a_gradient_tape():
    v = ek.Variable(2.0)
    f = function(lambda: (v * 3.0, 7))
    with ek.GradientTape() as tape:
        y, seven = f()
    assert isinstance(seven, ek.Tensor) and seven.numpy() == 7
    assert float(tape.gradient(y, v)) == 3.0


def test_unconvertible_output_names_its_path():
    f = function(lambda x: (x, {"k": [object()]}))
    with pytest.raises(TypeError, match=r"output\[1\]\['k'\]\[0\] is a object that cannot be converted"):
        f(ek.ones(()))


def test_saved_function_returns_tensors(tmp_path):
    @function
    def f(x):
        return x * 2.0, 5, None

    f(ek.ones((2,)))
    save(f, str(tmp_path / "m"))
    g = load(str(tmp_path / "m"))
    doubled, five, nothing = g(ek.ones((2,)))
    assert nothing is None and isinstance(five, ek.Tensor) and five.numpy() == 5
    np.testing.assert_array_equal(doubled.numpy(), [2.0, 2.0])
