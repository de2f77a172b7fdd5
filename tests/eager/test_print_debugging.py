"""eager.print (tf.print formatting, streams) and eager.debugging (Assert, assert_equal, check_numerics)."""
import io
import sys

import numpy as np
import pytest

import eager as ek
from eager import registry
from eager.errors import InvalidArgumentError
from eager.ops.logging import format_tensor


def printed(*inputs, **kwargs):
    buf = io.StringIO()
    assert ek.print(*inputs, output_stream=buf, **kwargs) is None
    return buf.getvalue()


# ------------------------------------------------------------------ formatting
@pytest.mark.parametrize("value,text", [
    (np.array([1, 2, 3], np.int32), "[1 2 3]"),
    (np.array([[1.5, 2.0]], np.float32), "[[1.5 2]]"),
    (np.array([[1, 2], [3, 4]]), "[[1 2]\n [3 4]]"),
    (np.arange(8).reshape(2, 2, 2), "[[[0 1]\n  [2 3]]\n\n [[4 5]\n  [6 7]]]"),
    (np.arange(10), "[0 1 2 ... 7 8 9]"),
    (np.arange(7), "[0 1 2 ... 4 5 6]"),
    (np.arange(6), "[0 1 2 3 4 5]"),
    (np.arange(16).reshape(8, 2), "[[0 1]\n [2 3]\n [4 5]\n ...\n [10 11]\n [12 13]\n [14 15]]"),
    (np.array(3.0, np.float32), "3"),
    (np.array(1 / 3, np.float32), "0.333333343"),
    (np.array(0.1, np.float32), "0.1"),
    (np.array(1 / 3, np.float64), "0.33333333333333331"),
    (np.array([1e-10, 1e20, 1e6, 100000.0], np.float32), "[1e-10 1e+20 1e+06 100000]"),
    (np.array([np.inf, -np.inf, np.nan]), "[inf -inf nan]"),
    (np.array([True, False]), "[1 0]"),
    (np.array([b"a", b'q"'], dtype=object), '["a" "q\\""]'),
    (np.zeros((0,)), "[]"),
    (np.zeros((2, 0)), "[[]\n []]"),
    (np.array(-7, np.int64), "-7"),
])
def test_format_like_tf_print(value, text):
    assert format_tensor(value) == text


def test_summarize():
    assert format_tensor(np.arange(10), summarize=1) == "[0 ... 9]"
    assert format_tensor(np.arange(10), summarize=-1) == "[0 1 2 3 4 5 6 7 8 9]"
    assert printed(ek.range(10), summarize=2) == "[0 1 ... 8 9]\n"


# ------------------------------------------------------------------ print
def test_print_tensors_python_values_and_structures():
    assert printed(ek.constant([1, 2, 3])) == "[1 2 3]\n"
    assert printed(ek.constant([[1.5, 2.0]])) == "[[1.5 2]]\n"
    assert printed("loss:", ek.constant(0.25), 7, None) == "loss: 0.25 7 None\n"
    assert printed({"a": ek.constant([1, 2]), "b": 3}) == "{'a': [1 2], 'b': 3}\n"
    assert printed([ek.constant(1), "s"]) == "[1, 's']\n"
    assert printed("a", "b", sep="-", end="!") == "a-b!"
    assert printed(ek.Variable([1.0, 2.5])) == "[1 2.5]\n"


def test_print_strings():
    assert printed(ek.constant("hello")) == "hello\n"               # a lone scalar string prints bare
    assert printed("x", ek.constant("hello")) == 'x "hello"\n'
    assert printed(ek.constant(["a", "b"])) == '["a" "b"]\n'


def test_print_defaults_to_the_current_stderr(capsys):
    ek.print("to", ek.constant([1, 2]))
    ek.print("out", output_stream=sys.stdout)
    captured = capsys.readouterr()
    assert captured.err == "to [1 2]\n"
    assert captured.out == "out\n"


def test_print_to_file(tmp_path):
    path = tmp_path / "log.txt"
    ek.print("a", ek.constant(1), output_stream=f"file://{path}")
    ek.print("b", output_stream=f"file://{path}")
    assert path.read_text() == "a 1\nb\n"


def test_print_bad_stream():
    with pytest.raises(InvalidArgumentError, match="output_stream"):
        ek.print("x", output_stream="nowhere")
    with pytest.raises(InvalidArgumentError, match="write"):
        ek.print("x", output_stream=42)


# ------------------------------------------------------------------ debugging
def test_assert_and_assert_equal():
    assert ek.debugging.Assert(ek.constant(True), ["never"]) is None
    with pytest.raises(InvalidArgumentError, match=r"assertion failed: \[x is\] \[\[1 2\]\]"):
        ek.debugging.Assert(ek.constant([True, False]), ["x is", ek.constant([1, 2])])
    assert ek.debugging.assert_equal(ek.constant([1, 2]), ek.constant([1, 2])) is None
    assert ek.debugging.assert_equal(ek.constant([[2, 2]]), 2) is None
    with pytest.raises(InvalidArgumentError) as e:
        ek.debugging.assert_equal(ek.constant([1, 2, 3]), ek.constant([1, 0, 3]), message="mismatch!")
    msg = str(e.value)
    assert "mismatch!" in msg and "[1 2 3]" in msg and "[1 0 3]" in msg and "x == y" in msg
    with pytest.raises(InvalidArgumentError):
        ek.debugging.assert_equal(ek.constant([1, 2]), ek.constant([1, 2, 3]))
    with pytest.raises(InvalidArgumentError, match="bool"):
        ek.debugging.Assert(ek.constant(1), ["x"])


def test_check_numerics():
    x = ek.constant([1.0, 2.0])
    np.testing.assert_array_equal(ek.debugging.check_numerics(x, "fine").numpy(), [1.0, 2.0])
    with pytest.raises(InvalidArgumentError, match="my tensor : Tensor had NaN values"):
        ek.debugging.check_numerics(ek.constant([1.0, np.nan]), "my tensor")
    with pytest.raises(InvalidArgumentError, match="Tensor had Inf values"):
        ek.debugging.check_numerics(ek.constant([np.inf]), "m")
    with pytest.raises(InvalidArgumentError, match="Inf and NaN"):
        ek.debugging.check_numerics(ek.constant([np.inf, np.nan]), "m")
    with pytest.raises(InvalidArgumentError, match="floating"):
        ek.debugging.check_numerics(ek.constant([1]), "m")


@pytest.mark.filterwarnings("ignore:divide by zero")
def test_check_numerics_checks_gradients_too():
    x = ek.constant([0.0, 1.0])
    with ek.GradientTape() as tape:
        tape.watch(x)
        y = ek.sqrt(ek.debugging.check_numerics(x, "x"))
    with pytest.raises(InvalidArgumentError, match="detected in gradient. x"):
        tape.gradient(y, x)


def test_effect_ops_are_stateful():
    for name in ("PrintV2", "Assert", "CheckNumerics"):
        assert registry.get(name).stateful


# ------------------------------------------------------------------ in a graph: effects happen at run time
@pytest.mark.filterwarnings("ignore:divide by zero")
def test_print_and_assert_run_at_every_graph_run():
    gr = pytest.importorskip("graph_runtime")
    buf = io.StringIO()
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.int32, [None])
        p = ek.print("x =", x, output_stream=buf)
        a = ek.debugging.assert_equal(x, 1)
        c = ek.debugging.check_numerics(ek.cast(x, ek.float32) / 0.0, "div")
    assert buf.getvalue() == ""                         # nothing printed while building
    with gr.Session(graph=g) as s:
        s.run(p, {x: [1, 2]})
        s.run(p, {x: [3]})
        s.run(a, {x: [1, 1]})
        with pytest.raises(InvalidArgumentError, match=r"\[1 2\]"):
            s.run(a, {x: [1, 2]})
        with pytest.raises(InvalidArgumentError, match="div : Tensor had"):
            s.run(c, {x: [1]})
    assert buf.getvalue() == "x = [1 2]\nx = [3]\n"
