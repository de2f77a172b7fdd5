"""@function: tracing, cache keys, replay, semantics shared with eager execution."""
import collections
import threading

import numpy as np
import pytest

import eager as ek
from tracing import TensorSpec, function


def both(f, *args, **kwargs):
    """Run f eagerly and under @function; return both results as numpy (nested)."""
    eager_out = f(*args, **kwargs)
    traced_out = function(f)(*args, **kwargs)
    return eager_out, traced_out


def assert_same(a, b):
    fa, fb = ek.nest.flatten(a), ek.nest.flatten(b)
    assert len(fa) == len(fb)
    for x, y in zip(fa, fb):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=1e-6)


def test_traces_once_then_replays():
    calls = []

    @function
    def f(x):
        calls.append(1)  # Python side effect: runs only while tracing
        return x * 2.0 + 1.0

    x = ek.constant([1.0, 2.0])
    np.testing.assert_allclose(f(x).numpy(), [3.0, 5.0])
    np.testing.assert_allclose(f(ek.constant([3.0, 4.0])).numpy(), [7.0, 9.0])
    assert len(calls) == 1 and f.experimental_get_tracing_count() == 1
    f(ek.constant([1.0, 2.0, 3.0]))
    assert f.experimental_get_tracing_count() == 2


def test_seed_print_tracing_example(capsys):
    @function
    def f(x):
        print("tracing")
        return x + 1

    f(ek.constant(1))
    f(ek.constant(2))
    f(ek.constant([1, 2]))
    assert capsys.readouterr().out == "tracing\ntracing\n"


def test_python_values_are_keyed_by_type_and_value():
    @function
    def g(x, n):
        return x * n

    x = ek.constant(2.0)
    g(x, 1.0)
    g(x, 1.0)
    g(x, 2.0)
    assert g.experimental_get_tracing_count() == 2

    @function
    def h(v):
        return ek.constant(v)

    assert h(1).dtype is ek.int32
    assert h(True).dtype is ek.bool      # TensorFlow would wrongly reuse the int32 trace here
    assert h(1.0).dtype is ek.float32
    assert h.experimental_get_tracing_count() == 3


def test_nested_arguments_and_outputs():
    P = collections.namedtuple("P", "a b")

    def f(d, pair):
        return {"sum": d["x"] + d["y"], "pair": P(pair.a * 2.0, [pair.b])}

    d = {"x": ek.constant(1.0), "y": ek.constant(2.0)}
    p = P(ek.constant(3.0), ek.constant(4.0))
    e, t = both(f, d, p)
    assert isinstance(t["pair"], P) and isinstance(t["pair"].b, list)
    assert_same(e, t)


def test_unhashable_argument_is_a_clear_error():
    f = function(lambda x, s: x)
    with pytest.raises(TypeError, match="unhashable set"):
        f(ek.constant(1.0), {1, 2})


def test_variables_captured_by_reference():
    v = ek.Variable(1.0)

    @function
    def f(x):
        v.assign_add(x)
        return v.read_value() * 2.0

    assert float(f(ek.constant(1.0))) == 4.0
    assert float(f(ek.constant(1.0))) == 6.0
    v.assign(10.0)
    assert float(f(ek.constant(0.0))) == 20.0
    assert f.experimental_get_tracing_count() == 1


def test_outer_tensor_captured():
    c = ek.constant([1.0, 2.0])
    f = function(lambda x: x + c)
    np.testing.assert_allclose(f(ek.constant([1.0, 1.0])).numpy(), [2.0, 3.0])


def test_input_signature_serves_all_compatible_shapes():
    @function(input_signature=[TensorSpec([None], ek.float32)])
    def f(x):
        return ek.reduce_sum(x)

    for n in (1, 2, 5):
        assert float(f(ek.ones((n,)))) == n
    assert f.experimental_get_tracing_count() == 1
    with pytest.raises(TypeError, match="input_signature"):
        f(ek.ones((2, 2)))
    with pytest.raises(TypeError, match="input_signature"):
        f(ek.constant([1, 2]))


def test_reshape_check_survives_unknown_shapes():
    # TensorFlow 2.21 silently returns [1 2] here; we must raise at run time.
    @function(input_signature=[TensorSpec([None], ek.int32)])
    def f(x):
        return ek.reshape(x, [3])

    assert f(ek.constant([1, 2, 3])).numpy().tolist() == [1, 2, 3]
    with pytest.raises(ek.errors.InvalidArgumentError, match="Reshape"):
        f(ek.constant([1, 2]))


def test_reduce_retracing_generalizes():
    @function(reduce_retracing=True)
    def f(x):
        return x * 2

    for n in range(1, 6):
        f(ek.ones((n,)))
    assert f.experimental_get_tracing_count() == 2


def test_most_specific_trace_is_used():
    f = function(lambda x: ek.shape(x))
    f.get_concrete_function(TensorSpec([None], ek.float32))
    f(ek.ones((3,)))   # served by the [None] trace
    assert f.experimental_get_tracing_count() == 1


def test_stateful_ops_run_every_call_in_program_order(capfd):
    v = ek.Variable(0)

    @function
    def f():
        ek.print("before", v)
        v.assign_add(1)
        ek.print("after", v)
        return ek.constant(0)

    f()
    f()
    err = capfd.readouterr().err
    assert err == "before 0\nafter 1\nbefore 1\nafter 2\n"


def test_random_ops_draw_fresh_values_each_call():
    f = function(lambda: ek.random.normal([3]))
    assert not np.allclose(f().numpy(), f().numpy())


def test_variable_creation_only_on_first_call():
    class Model:
        def __init__(self):
            self.v = None

        @function
        def __call__(self, x):
            if self.v is None:
                self.v = ek.Variable(ek.ones((2,)))
            return x * self.v

    m = Model()
    np.testing.assert_allclose(m(ek.constant([1.0, 2.0])).numpy(), [1.0, 2.0])
    np.testing.assert_allclose(m(ek.constant([3.0, 4.0])).numpy(), [3.0, 4.0])

    @function
    def bad(x):
        v = ek.Variable(1.0)
        return x * v

    with pytest.raises(ValueError, match="first call"):
        bad(ek.constant(1.0))


def test_methods_get_their_own_cache():
    class A:
        def __init__(self, k):
            self.k = k

        @function
        def f(self, x):
            return x * self.k

    a, b = A(2.0), A(3.0)
    assert float(a.f(ek.constant(1.0))) == 2.0
    assert float(b.f(ek.constant(1.0))) == 3.0


def test_concurrent_first_calls_trace_once():
    count = []

    @function
    def f(x):
        count.append(1)
        return x + 1.0

    x = ek.constant(1.0)
    threads = [threading.Thread(target=f, args=(x,)) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(count) == 1


def test_concrete_function_api():
    f = function(lambda x, y: x @ y)
    cf = f.get_concrete_function(TensorSpec([2, 3]), TensorSpec([3, None]))
    assert len(cf.inputs) == 2 and cf.outputs[0].shape.as_list() == [2, None]
    out = cf(ek.ones((2, 3)), ek.ones((3, 4)))
    np.testing.assert_allclose(out.numpy(), np.full((2, 4), 3.0))
    assert "TensorSpec" in cf.pretty_printed_signature() or "f32" in cf.pretty_printed_signature()
    assert any(op.type == "MatMul" for op in cf.graph.get_operations())


def test_gradient_tape_inside_and_outside():
    @function
    def grad_inside(x):
        with ek.GradientTape() as t:
            t.watch(x)
            y = x * x * x
        return t.gradient(y, x)

    assert float(grad_inside(ek.constant(2.0))) == pytest.approx(12.0)

    f = function(lambda x: ek.sin(x) * x)
    x = ek.constant(0.7)
    with ek.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    assert float(tape.gradient(y, x)) == pytest.approx(np.cos(0.7) * 0.7 + np.sin(0.7), rel=1e-5)


def test_tape_outside_differentiates_variables_read_inside():
    w = ek.Variable([[1.0], [2.0]])
    b = ek.Variable([0.5])

    @function
    def model(x):
        return ek.reduce_sum(ek.tanh(ek.matmul(x, w) + b))

    x = ek.constant([[0.1, 0.2], [0.3, -0.4]])
    with ek.GradientTape() as tape:
        y = model(x)
    gw, gb = tape.gradient(y, [w, b])
    with ek.GradientTape() as tape:
        y_eager = model.python_function(x)
    ew, eb = tape.gradient(y_eager, [w, b])
    np.testing.assert_allclose(float(y), float(y_eager), rtol=1e-6)
    np.testing.assert_allclose(gw.numpy(), ew.numpy(), rtol=1e-5)
    np.testing.assert_allclose(gb.numpy(), eb.numpy(), rtol=1e-5)
    assert model.experimental_get_tracing_count() == 1


def test_trace_time_op_errors_name_the_user_line():
    @function
    def h(x):
        s = ek.constant(0)
        return ek.reduce_sum(x) > s   # float32 vs int32

    with pytest.raises(ek.errors.InvalidArgumentError, match=r"while tracing h, at .*test_function_tracing.py:\d+"):
        h(ek.constant([1.0]))


def test_input_signature_arity_errors():
    f = function(lambda x, y: x + y, input_signature=[TensorSpec([2]), TensorSpec([2])])
    with pytest.raises(TypeError, match="1 positional and 0 keyword arguments, but input_signature has 2"):
        f(ek.ones((2,)))
    np.testing.assert_array_equal(f(ek.ones((2,)), y=ek.ones((2,))).numpy(), [2.0, 2.0])   # as in TF


def test_input_signature_takes_keyword_arguments_like_positional_ones():
    calls = []

    @function(input_signature=[TensorSpec([2], ek.float32), TensorSpec([2], ek.float32)])
    def f(x, y):
        calls.append(1)
        return x * 2.0 + y

    a = ek.constant([1.0, 2.0])
    for call in (lambda: f(a, [3.0, 4.0]), lambda: f(a, y=[3.0, 4.0]), lambda: f(x=[1.0, 2.0], y=[3.0, 4.0]),
                 lambda: f(y=ek.constant([3.0, 4.0]), x=a)):
        np.testing.assert_array_equal(call().numpy(), [5.0, 8.0])
    assert len(calls) == 1                                   # one trace serves every spelling of the call
    with pytest.raises(TypeError, match=r"f\(\): multiple values for argument 'y'"):
        f(a, a, y=a)


def test_a_broken_autograph_install_fails_loudly():
    # tracing imports autograph at import time: nothing can catch the ImportError and run functions unconverted
    import os
    import subprocess
    import sys
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    code = ("import sys\nsys.modules['autograph'] = None\n"          # `import autograph` raises ImportError
            "try:\n    import tracing\nexcept ImportError:\n    sys.exit(3)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": root})
    assert proc.returncode == 3, proc.stderr[-2000:]
