"""`input_signature` converts Python values and NumPy arrays as Session feeds do.

TensorFlow converts a nested list or a float64 array to a `TensorSpec([None, 3],
float32)`; it never converts a Tensor of another dtype.  One rule serves
`@function(input_signature=...)` and `Session.run` feeds: each case below is
checked in both, and both must agree (same value, or the same error text).
"""
import collections

import numpy as np
import pytest

import eager as ek
import graph_runtime as gr
from tracing import TensorSpec, function

ACCEPTED = [
    ("nested list", [[1.0, 2.0, 3.0]], ek.float32, [[1.0, 2.0, 3.0]]),
    ("float64 array", np.ones((2, 3)), ek.float32, np.ones((2, 3))),
    ("int list to float", [[1, 2, 3]], ek.float32, [[1.0, 2.0, 3.0]]),
    ("integral floats to int", np.array([[1.0, 2.0, 3.0]]), ek.int32, [[1, 2, 3]]),
    ("int64 array to int32", np.array([[1, 2, 3]], np.int64), ek.int32, [[1, 2, 3]]),
]

REJECTED = [
    ("float64 tensor", ek.constant(np.ones((1, 3))), ek.float32,
     "expected dtype float32, got a tensor of dtype float64"),
    ("int32 tensor", ek.constant([[1, 2, 3]]), ek.float32, "expected dtype float32, got a tensor of dtype int32"),
    ("float variable", ek.Variable(np.ones((1, 3))), ek.float32,
     "expected dtype float32, got a variable of dtype float64"),
    ("lossy float to int", [[1.5, 2.0, 3.0]], ek.int32, "without losing its value"),
    ("lossy float array to int", np.array([[1.5, 2.0, 3.0]]), ek.int32, "without losing its value"),
    ("out of range", np.array([[2 ** 40, 0, 0]]), ek.int32, "out of range for dtype int32"),
    ("mixed types", [[1, "a", 3]], ek.float32, "mixed types"),
    ("string", [["a", "b", "c"]], ek.float32, "cannot convert string value"),
]


def in_function(value, dtype):
    f = function(lambda x: x * 2, input_signature=[TensorSpec([None, 3], dtype)])
    return f(value).numpy()


def in_session(value, dtype):
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(dtype, [None, 3])
        y = x * 2
    with gr.Session(graph=g) as sess:
        return sess.run(y, {x: value})


@pytest.mark.parametrize("case", ACCEPTED, ids=[c[0] for c in ACCEPTED])
def test_signature_and_feeds_convert_the_same_values(case):
    _, value, dtype, expected = case
    for run in (in_function, in_session):
        out = run(value, dtype)
        assert out.dtype == dtype.np_dtype, run.__name__
        np.testing.assert_array_equal(out, np.asarray(expected) * 2)


@pytest.mark.parametrize("case", REJECTED, ids=[c[0] for c in REJECTED])
def test_signature_and_feeds_reject_the_same_values(case):
    _, value, dtype, message = case
    with pytest.raises(TypeError, match="argument x \\(input_signature TensorSpec") as e:
        in_function(value, dtype)
    assert message in str(e.value)
    with pytest.raises(ek.errors.InvalidArgumentError, match="Cannot feed the value for tensor") as e:
        in_session(value, dtype)
    assert message in str(e.value)


def test_converted_calls_share_one_trace():
    f = function(lambda x: ek.reduce_sum(x), input_signature=[TensorSpec([None, 3], ek.float32)])
    assert float(f([[1.0, 2.0, 3.0]])) == 6.0
    assert float(f(np.ones((2, 3)))) == 6.0
    assert float(f(ek.ones((4, 3)))) == 12.0
    assert f.experimental_get_tracing_count() == 1


def test_nested_signature_converts_leaves_and_names_the_path():
    Pair = collections.namedtuple("Pair", "a b")
    sig = [{"p": Pair(TensorSpec([], ek.float32), TensorSpec([2], ek.int32))}]

    @function(input_signature=sig)
    def f(d):
        return d["p"].a + ek.cast(ek.reduce_sum(d["p"].b), ek.float32)

    assert float(f({"p": Pair(1, [2, 3])})) == 6.0
    assert float(f({"p": Pair(np.float64(0.5), np.array([1, 1]))})) == 2.5
    assert f.experimental_get_tracing_count() == 1
    with pytest.raises(TypeError, match=r"argument d\['p'\]\.b .*expected dtype int32, got a tensor of dtype "
                                        r"float32"):
        f({"p": Pair(1.0, ek.constant([1.0, 2.0]))})
    with pytest.raises(TypeError, match="do not match its input_signature"):
        f({"q": Pair(1.0, [1, 2])})
