"""Dtype conversion rules, Tensor protocol, TensorShape, and error messages."""
import re

import numpy as np
import pytest

import eager as ek
from eager.errors import InvalidArgumentError


@pytest.mark.parametrize("value,dtype", [
    (1.5, ek.float32), (2, ek.int32), (True, ek.bool), ("a", ek.string), (b"a", ek.string),
    ([1.0, 2.0], ek.float32), ([[1, 2]], ek.int32), (np.float64(1.0), ek.float64),
    (np.arange(3, dtype=np.int64), ek.int64), (np.zeros(2, np.float16), ek.float16), (2 ** 40, ek.int64),
])
def test_literal_dtypes(value, dtype):
    assert ek.constant(value).dtype is dtype


def test_dtype_properties():
    assert ek.float32.is_floating and not ek.float32.is_integer
    assert ek.int8.is_integer and ek.int8.min == -128 and ek.int8.max == 127
    assert ek.bool.is_bool and ek.as_dtype("float64") is ek.float64 and ek.as_dtype(np.int32) is ek.int32
    assert ek.float32.as_numpy_dtype is np.float32
    with pytest.raises(TypeError, match="unknown dtype"):
        ek.as_dtype("float128x")


def test_no_silent_promotion():
    with pytest.raises(InvalidArgumentError, match=r"AddV2.*float32.*int32"):
        ek.constant([1.0]) + ek.constant([1])
    with pytest.raises(InvalidArgumentError, match="float64"):
        ek.multiply(ek.constant([1.0]), ek.constant(np.array([1.0])))


def test_python_scalar_takes_tensor_dtype():
    x = ek.constant([1, 2], dtype=ek.int64)
    assert (x + 1).dtype is ek.int64
    h = ek.constant([1.0], dtype=ek.float16)
    assert (h * 2.5).dtype is ek.float16 and (2.5 * h).dtype is ek.float16
    with pytest.raises(TypeError, match="int32"):
        ek.constant([1, 2]) + 2.5


def test_integer_division_is_float_like_tensorflow():
    r = ek.constant([3, 4]) / 2
    assert r.dtype is ek.float64
    np.testing.assert_allclose(r.numpy(), [1.5, 2.0])
    assert (ek.constant([7]) // 2).numpy().tolist() == [3]
    assert (ek.constant([-7]) % 3).numpy().tolist() == [2]


def test_repr_and_protocols():
    t = ek.constant([1.0, 2.0])
    assert repr(t) == "<Tensor: shape=(2,), dtype=float32, numpy=array([1., 2.], dtype=float32)>"
    assert np.asarray(t).tolist() == [1.0, 2.0]
    assert len(t) == 2 and [float(v) for v in t] == [1.0, 2.0]
    assert float(ek.constant(2.5)) == 2.5 and int(ek.constant(3)) == 3
    assert [0, 1, 2, 3][ek.constant(2)] == 2
    assert t.shape == (2,) and t.shape == [2] and t.ndim == 1
    with pytest.raises(TypeError):
        hash(t)
    assert {t.ref(): 1}[t.ref()] == 1


def test_bool_of_multi_element_tensor_is_an_error():
    assert bool(ek.constant([True]))
    with pytest.raises(ValueError, match="ambiguous"):
        bool(ek.constant([True, False]))


def test_tensor_shape():
    s = ek.TensorShape([None, 3])
    assert s.rank == 2 and s.as_list() == [None, 3]
    assert s.is_compatible_with([5, 3]) and not s.is_compatible_with([5, 4])
    assert ek.TensorShape([2, 3]).most_specific_compatible_shape([4, 3]) == [None, 3]
    assert ek.TensorShape(None).rank is None
    assert ek.TensorShape([1, 2]).most_specific_compatible_shape([1, 2, 3]).rank is None


def test_string_concatenation():
    s = ek.constant(["a", "b"]) + "c"
    assert s.numpy().tolist() == [b"ac", b"bc"]
    assert (ek.constant("x") + ek.constant("y")).numpy() == b"xy"


def test_constant_shape_argument():
    assert ek.constant(0.0, shape=[2, 3]).numpy().shape == (2, 3)
    assert ek.constant([1, 2, 3, 4], shape=[2, 2]).numpy().tolist() == [[1, 2], [3, 4]]
    with pytest.raises(TypeError, match="shape"):
        ek.constant([1, 2, 3], shape=[2, 2])


def test_bad_value_is_a_clear_error():
    with pytest.raises(TypeError, match="cannot convert"):
        ek.constant(object())
    with pytest.raises(TypeError, match="int32"):
        ek.constant(2.5, dtype=ek.int32)


def test_matmul_shape_error_names_shapes():
    with pytest.raises(InvalidArgumentError, match=r"MatMul.*\[2, 3\].*\[2, 3\]"):
        ek.matmul(ek.ones((2, 3)), ek.ones((2, 3)))


def test_broadcast_error_names_op_and_shapes():
    with pytest.raises(InvalidArgumentError, match=r"AddV2.*\[2\].*\[3\]"):
        ek.ones((2,)) + ek.ones((3,))


def test_executing_eagerly():
    assert ek.executing_eagerly()


def test_scalar_repr_like_tensorflow():
    assert repr(ek.constant(54.0)) == "<Tensor: shape=(), dtype=float32, numpy=54.0>"
    assert repr(ek.constant(3)) == "<Tensor: shape=(), dtype=int32, numpy=3>"


def test_static_inference_rejects_mixed_dtypes_and_missing_dtype():
    # what graph building and GraphDef import rely on when no Python wrapper checked the operands
    from eager.registry import Spec, get
    with pytest.raises(InvalidArgumentError, match=r"AddV2.*float32 and int32"):
        get("AddV2").infer([Spec((2,), ek.float32), Spec((2,), ek.int32)], {})
    with pytest.raises(InvalidArgumentError, match=r"Less.*float32 and float64"):
        get("Less").infer([Spec((2,), ek.float32), Spec((2,), ek.float64)], {})
    with pytest.raises(TypeError, match="dtype is required"):
        ek.as_dtype(None)


# -- TensorFlow's rules for nested Python lists ----------------------------------------------------
@pytest.mark.parametrize("value, mix", [
    ([1, "a"], "numbers (int) and strings (str)"),
    (["a", 1], "numbers (int) and strings (str)"),
    ([[b"x"], [2.5]], "numbers (float) and strings (bytes)"),
    ([True, 1], "bools (bool) and numbers (int)"),
    ([1.5, True], "bools (bool) and numbers (float)"),
])
def test_constant_rejects_mixed_python_types(value, mix):
    with pytest.raises(ValueError, match=r"Can't convert Python sequence with mixed types to Tensor.*" +
                       re.escape(mix)):
        ek.constant(value)


@pytest.mark.parametrize("value", [[[1, 2], [3]], [["a", "b"], ["c"]], [[1, 2], 3], [[[1], [2]], [[3], []]]])
def test_constant_rejects_ragged_lists(value):
    with pytest.raises(ValueError, match="Can't convert non-rectangular Python sequence to Tensor"):
        ek.constant(value)


def test_constant_accepts_what_tensorflow_accepts():
    t = ek.constant([1, 2.5])                       # ints and floats mix: float32
    assert t.dtype is ek.float32 and t.numpy().tolist() == [1.0, 2.5]
    assert ek.constant([[1, 2], (3, 4)]).numpy().tolist() == [[1, 2], [3, 4]]
    assert ek.constant([b"x", "y"]).numpy().tolist() == [b"x", b"y"]
    assert ek.constant([np.array([1, 2]), [3, 4]]).numpy().tolist() == [[1, 2], [3, 4]]
    assert ek.constant([np.float32(1), 2]).dtype is ek.float32
    assert ek.constant([[]]).shape == (1, 0)
    assert ek.constant([True, np.bool_(False)]).dtype is ek.bool


def test_mixed_types_raise_the_same_error_in_every_mode():
    import graph_runtime as gr
    from tracing import function

    def make():
        return ek.constant([1, "a"])

    with pytest.raises(ValueError, match="mixed types"):
        function(make)()
    with gr.Graph().as_default(), pytest.raises(ValueError, match="mixed types"):
        make()
    with pytest.raises(ValueError, match="mixed types"):     # a Python operand takes the same path
        ek.constant([1, 2]) + [1, "a"]


FLOAT_ONLY = ["exp", "expm1", "log", "log1p", "sqrt", "rsqrt", "sin", "cos", "tanh", "sigmoid", "floor", "ceil"]


@pytest.mark.parametrize("name", FLOAT_ONLY)
@pytest.mark.parametrize("dtype", ["int32", "int64", "bool"])
def test_float_only_ops_refuse_other_dtypes_the_same_way_in_every_mode(name, dtype):
    """TF registers these for floating types only; NumPy would promote (eagerly float64, while a graph
    inferred the input dtype): every mode now raises TF's error, create_op included."""
    import graph_runtime as gr
    from eager.errors import InvalidArgumentError
    from tracing import function
    fn = getattr(ek, name) if hasattr(ek, name) else getattr(ek.math, name)
    value = np.array([1, 0], dtype)
    match = rf"value for attr 'T' of {dtype} is not in the list of allowed values: float16, float32, float64"
    with pytest.raises(InvalidArgumentError, match=match):
        fn(ek.constant(value))
    with pytest.raises(InvalidArgumentError, match=match):
        function(fn)(ek.constant(value))
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(dtype, [2])
        with pytest.raises(InvalidArgumentError, match=match):
            fn(x)
        n = len(g.get_operations())
        op_type = {"exp": "Exp", "expm1": "Expm1", "log": "Log", "log1p": "Log1p", "sqrt": "Sqrt", "rsqrt": "Rsqrt",
                   "sin": "Sin", "cos": "Cos", "tanh": "Tanh", "sigmoid": "Sigmoid", "floor": "Floor",
                   "ceil": "Ceil"}[name]
        with pytest.raises(InvalidArgumentError, match=match):
            g.create_op(op_type, [x])
        assert len(g.get_operations()) == n
    assert fn(ek.constant(value.astype(np.float32))).dtype is ek.float32


NUMERIC_ONLY = {"negative": ("Neg", 1), "abs": ("Abs", 1), "sign": ("Sign", 1), "square": ("Square", 1),
                "reciprocal": ("Reciprocal", 1), "round": ("Round", 1), "add": ("AddV2", 2),
                "subtract": ("Sub", 2), "multiply": ("Mul", 2), "maximum": ("Maximum", 2),
                "minimum": ("Minimum", 2), "pow": ("Pow", 2), "floordiv": ("FloorDiv", 2),
                "floormod": ("FloorMod", 2), "squared_difference": ("SquaredDifference", 2)}


@pytest.mark.parametrize("name", sorted(NUMERIC_ONLY))
def test_arithmetic_on_bool_is_refused_the_same_way_in_every_mode(name):
    """TF's arithmetic kernels take no bool; NumPy computed Square/Pow/FloorDiv/Round on bool in int8 or
    float16 while a graph inferred bool, and `x * x` (rewritten to Square) changed dtype under @function."""
    import graph_runtime as gr
    from eager.errors import InvalidArgumentError
    from tracing import function
    op_type, arity = NUMERIC_ONLY[name]
    fn = getattr(ek, name)
    value = np.array([True, False])
    match = rf"{op_type}: value for attr 'T' of bool is not in the list of allowed values: float16, float32, " \
            rf"float64, int8, int16, int32, int64, uint8"
    args = [ek.constant(value)] * arity
    with pytest.raises(InvalidArgumentError, match=match):
        fn(*args)
    with pytest.raises(InvalidArgumentError, match=match):
        function(fn)(*args)
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder("bool", [2])
        with pytest.raises(InvalidArgumentError, match=match):
            g.create_op(op_type, [x] * arity)
    assert fn(*[ek.constant(np.array([1, 2], np.int32))] * arity).dtype is ek.int32
