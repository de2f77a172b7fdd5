"""Behaviours TensorFlow 2's guides (tf.function, autodiff, training loops) rely on, checked eagerly
and under @function where both apply."""
import warnings

import numpy as np
import pytest

import eager as ek
from tracing import TensorSpec, function


# ---------------------------------------------------------------- concrete functions and Python values
def _power_concrete():
    @function
    def pw(a, b):
        return a ** b
    return pw.get_concrete_function(a=TensorSpec(None, ek.float32), b=2)


def test_concrete_function_refuses_a_changed_python_argument():
    sq = _power_concrete()
    assert float(sq(ek.constant(10.0))) == 100.0            # an omitted Python argument takes its traced value
    assert float(sq(ek.constant(10.0), b=2)) == 100.0
    assert float(sq(ek.constant(10.0), 2)) == 100.0
    with pytest.raises(TypeError, match=r"Can not cast 3 to Literal\[2\]"):
        sq(ek.constant(10.0), b=3)
    with pytest.raises(TypeError, match=r"Can not cast 3 to Literal\[2\]"):
        sq(ek.constant(10.0), 3)
    with pytest.raises(TypeError, match=r"Can not cast 2.0 to Literal\[2\]"):
        sq(ek.constant(10.0), 2.0)


def test_concrete_function_type_names_each_parameter():
    sq = _power_concrete()
    params = sq.function_type.parameters
    assert list(params) == ["a", "b"]
    assert params["a"].annotation == TensorSpec(None, ek.float32)
    assert repr(params["b"].annotation) == "Literal[2]"
    assert str(sq.function_type) == "(a: TensorSpec(shape=None, dtype=float32), b: Literal[2])"
    with pytest.raises(TypeError, match="unexpected"):
        sq(ek.constant(1.0), c=1)


# ---------------------------------------------------------------- tapes
def test_gradient_of_a_variable_with_respect_to_itself_is_one():
    v = ek.Variable(3.0)
    with ek.GradientTape() as tape:
        pass
    assert float(tape.gradient(v, v)) == 1.0

    @function
    def inside():
        with ek.GradientTape() as t:
            pass
        return t.gradient(v, v)
    assert float(inside()) == 1.0


def test_watched_variables_survive_gradient():
    v = ek.Variable(2.0)
    with ek.GradientTape() as tape:
        y = v * v
    assert float(tape.gradient(y, v)) == 4.0
    assert tape.watched_variables() == (v,)


def test_gradient_for_an_integer_source_warns():
    x = ek.constant(3)
    with ek.GradientTape() as tape:
        tape.watch(x)
        y = x * 2
    with pytest.warns(UserWarning, match="must be floating.*int32"):
        assert tape.gradient(y, x) is None
    f = ek.constant(3.0)
    with ek.GradientTape() as tape:
        tape.watch(f)
        y = f * 2
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert float(tape.gradient(y, f)) == 2.0


# ---------------------------------------------------------------- cache keys bind defaults first
def test_a_default_passed_explicitly_reuses_the_trace():
    @function
    def f(x, activation="relu", *, scale=1.0):
        return ek.nn.relu(x) * scale if activation == "relu" else x * scale
    x = ek.constant([-1.0, 2.0])
    eager_result = f.python_function(x).numpy()
    for call in (lambda: f(x), lambda: f(x, activation="relu"), lambda: f(x, "relu"), lambda: f(x=x),
                 lambda: f(x, scale=1.0)):
        np.testing.assert_array_equal(call().numpy(), eager_result)
    assert f.experimental_get_tracing_count() == 1
    f(x, activation="linear")
    assert f.experimental_get_tracing_count() == 2
    text = f.explain_retracing()
    assert "activation: python value Python str 'relu' -> 'linear'" in text
    assert "static option" in text and "new argument" not in text


def test_extra_keyword_retrace_advice_names_the_keyword():
    @function
    def g(x, **options):
        return x * len(options)
    g(ek.constant(1.0))
    g(ek.constant(1.0), verbose=True)
    text = g.explain_retracing()
    assert "verbose was passed in one call and not in the other" in text
    assert "argument kinds" not in text


def test_get_concrete_function_keys_on_python_values_too():
    @function
    def pw(a, b):
        return a ** b
    spec = TensorSpec(None, ek.float32)
    c2 = pw.get_concrete_function(spec, 2)
    c3 = pw.get_concrete_function(spec, 3)
    assert c3 is not c2 and float(c3(ek.constant(2.0))) == 8.0
    assert pw.get_concrete_function(a=spec, b=2) is c2


# ---------------------------------------------------------------- Module
class _Dense(ek.Module):
    def __init__(self, name):
        super().__init__(name=name)
        self.w = ek.Variable(1.0, name=name + "_w")
        self.b = ek.Variable(0.0, name=name + "_b")


class _Net(ek.Module):
    def __init__(self):
        super().__init__()
        self.zeta = ek.Variable(3.0, name="zeta")
        self.layers = [_Dense("l0"), _Dense("l1")]
        self.alpha = ek.Variable(2.0, name="alpha", trainable=False)
        self.config = {"y": ek.Variable(5.0, name="y"), "x": ek.Variable(4.0, name="x")}


def test_module_variables_in_sorted_attribute_order_like_tf_module():
    net = _Net()
    names = [v.name.split(":")[0] for v in net.variables]
    # own attributes sorted (alpha, config by sorted key, layers..., zeta), then each sub-module depth first
    assert names == ["alpha", "x", "y", "zeta", "l0_b", "l0_w", "l1_b", "l1_w"]
    assert [v.name.split(":")[0] for v in net.trainable_variables] == ["x", "y", "zeta", "l0_b", "l0_w",
                                                                        "l1_b", "l1_w"]
    assert [m.name for m in net.submodules] == ["l0", "l1"]


# ---------------------------------------------------------------- formatting
@pytest.mark.parametrize("value, spec", [(1.23456, ".2f"), (1.23456, ">9.3e"), (7, "d"), (7, "04d"),
                                         (0.5, "%"), (-2.0, "+.1f"), (1.23456, "")])
def test_format_a_scalar_tensor_as_numpy_does(value, spec):
    t = ek.constant(value)
    expected = format(t.numpy()[()], spec) if spec else str(t.numpy())
    assert format(t, spec) == expected
    assert format(ek.Variable(value), spec) == expected
    assert format(function(lambda x: x * 1)(t), spec) == expected     # a traced function's result too


def test_format_refusals_name_the_cause():
    with pytest.raises(TypeError, match="unsupported format string"):
        f"{ek.constant([1.0, 2.0]):.2f}"                    # NumPy refuses a format spec for an array

    @function
    def inside(x):
        return ek.constant(f"{x:.2f}")
    with pytest.raises(TypeError, match="symbolic tensor.*eager.print"):
        inside(ek.constant(1.0))


# ---------------------------------------------------------------- symbolic tensors have no value
def test_numpy_inside_a_function_says_what_to_use_there():
    @function
    def f(x):
        return x.numpy()
    with pytest.raises(AttributeError, match=r"function 'f'.*being traced.*eager.print.*result") as info:
        f(ek.constant(1.0))
    assert "Session.run" not in str(info.value)


def test_a_leaked_tensor_is_out_of_scope():
    leaked = []

    @function
    def f(x):
        y = x * 2.0
        leaked.append(y)
        return y
    assert float(f(ek.constant(1.0))) == 2.0
    t = leaked[0]
    try:                                       # user code catches AttributeError, as with TF
        t.numpy()
        raise AssertionError("numpy() of a leaked tensor must raise")
    except AttributeError as e:
        assert "out of scope" in str(e) and "tracing function 'f'" in str(e)
    assert not hasattr(t, "numpy")
    with pytest.raises(TypeError, match="out of scope and cannot be used here"):
        function(lambda a: a + t)(ek.constant(1.0))
    with pytest.raises(TypeError, match="out of scope and cannot be used here"):
        function(lambda a: ek.cond(a > 0, lambda: a + t, lambda: a))(ek.constant(1.0))
    with pytest.raises(TypeError, match="out of scope"):
        t + 1.0                                 # eagerly


# ---------------------------------------------------------------- TF 2 spellings and settings
def test_tf2_function_options_are_accepted():
    @function(jit_compile=True)
    def f(x):
        return x * 2.0
    assert float(f(ek.constant(2.0))) == 4.0

    g = function(lambda x: ek.reduce_sum(x), experimental_relax_shapes=True)
    for n in (1, 2, 3, 4):
        assert float(g(ek.ones((n,)))) == n
    assert g.experimental_get_tracing_count() == 2          # the second call relaxed to [None]


def test_public_namespaces_list_only_public_names():
    for ns in (ek.nn, ek.random, ek.debugging, ek.strings, ek.summary, ek.errors, ek.nest, ek.data, ek.linalg,
               ek.math, ek.optimizers):
        names = dir(ns)
        assert names == sorted(ns.__all__), ns.__name__
        assert all(not n.startswith("_") and hasattr(ns, n) for n in names)
    assert "relu" in dir(ek.nn) and "np" not in dir(ek.nn) and "RELU" not in dir(ek.nn)
    assert "Dataset" in dir(ek.data) and "shuffling" not in dir(ek.data) and "transforms" not in dir(ek.data)


def test_max_traces_counts_in_english():
    from tracing import RetraceError
    f = function(lambda x: x + 1, max_traces=2)
    f(ek.ones((1,)))
    f(ek.ones((1, 1)))
    with pytest.raises(RetraceError, match="a 3rd graph"):
        f(ek.ones((1, 1, 1)))


def test_retrace_advice_fits_reduce_retracing():
    f = function(lambda x: x + 1, reduce_retracing=True)
    f(ek.ones((2,)))
    f(ek.ones((3,)))
    text = f.explain_retracing()
    assert "reduce_retracing is on" in text and "use reduce_retracing=True" not in text
    g = function(lambda x: x + 1)
    g(ek.ones((2,)))
    g(ek.ones((3,)))
    assert "use reduce_retracing=True" in g.explain_retracing()


# ---------------------------------------------------------------- names the guides use
def test_unconnected_gradients_enum():
    x, v = ek.constant([1.0, 2.0]), ek.Variable(1.0)
    with ek.GradientTape(persistent=True) as tape:
        y = x * 2.0
    tape.watch(x)
    grads = tape.gradient(y, [x, v], unconnected_gradients=ek.UnconnectedGradients.ZERO)
    assert grads[1] is not None and float(grads[1]) == 0.0
    assert tape.gradient(y, [v], unconnected_gradients=ek.UnconnectedGradients.NONE) == [None]
    jac = tape.jacobian(y, v, unconnected_gradients=ek.UnconnectedGradients.ZERO)
    np.testing.assert_array_equal(jac.numpy(), [0.0, 0.0])


def _np_square_and_index(x):
    return np.square(x.numpy()), np.argmax(x.numpy()).astype(np.int32)


def test_py_function_eagerly_and_traced():
    x = ek.constant([1.0, 3.0, 2.0])
    eager = ek.py_function(_np_square_and_index, [x], [ek.float32, ek.int32])
    calls = []

    @function
    def f(x):
        sq, i = ek.py_function(_np_square_and_index, [x], [ek.float32, ek.int32])
        one = ek.py_function(lambda t: calls.append(1) or t * 2.0, [x], ek.float32)   # a single Tout
        return sq + 1.0, i, one
    for _ in range(2):                      # runs at every call, not at trace time only
        sq, i, one = f(x)
        np.testing.assert_array_equal(sq.numpy(), eager[0].numpy() + 1.0)
        assert int(i) == int(eager[1]) == 1
        assert one.numpy().tolist() == [2.0, 6.0, 4.0] and sq.numpy().shape == (3,)
    assert len(calls) == 2
    with pytest.raises(ek.errors.InvalidArgumentError, match="returned 1 value.*Tout lists 2"):
        ek.py_function(lambda t: t, [x], [ek.float32, ek.float32])


def test_device_scope_eagerly_and_traced():
    with ek.device("/cpu:0"):
        assert float(ek.constant(1.0) + 1.0) == 2.0

    @function
    def f(x):
        with ek.device("/cpu:0"):
            return x + 1.0
    assert float(f(ek.constant(1.0))) == 2.0
    ops = f.get_concrete_function(ek.constant(1.0)).graph.get_operations()
    assert any(op.type == "AddV2" and op.device == "/device:CPU:0" for op in ops)
    with pytest.raises(RuntimeError, match="device functions"):
        with ek.device(lambda op: "/cpu:0"):
            pass


class _FruitTraceType(__import__("tracing").TraceType):
    def __init__(self, fruit):
        self.fruit_type = type(fruit)

    def __eq__(self, other):
        return type(other) is _FruitTraceType and self.fruit_type is other.fruit_type

    def __hash__(self):
        return hash(self.fruit_type)


class _Fruit:
    def __tf_tracing_type__(self, context):
        return _FruitTraceType(self)


class _Apple(_Fruit):
    flavor = ek.constant([1, 2])


class _Mango(_Fruit):
    flavor = ek.constant([3, 4])


def test_tf_tracing_type_protocol_defines_the_retrace_key():
    @function
    def mixed(a, b):
        return a.flavor + b.flavor
    np.testing.assert_array_equal(mixed(_Apple(), _Mango()).numpy(), [4, 6])
    np.testing.assert_array_equal(mixed(_Apple(), _Mango()).numpy(), [4, 6])    # new objects, same types
    assert mixed.experimental_get_tracing_count() == 1
    np.testing.assert_array_equal(mixed(_Mango(), _Mango()).numpy(), [6, 8])
    assert mixed.experimental_get_tracing_count() == 2
    assert "a: trace type" in mixed.explain_retracing()
    cf = mixed.get_concrete_function(_Apple(), _Mango())
    np.testing.assert_array_equal(cf(_Apple(), _Mango()).numpy(), [4, 6])
    with pytest.raises(TypeError, match="Can not cast"):
        cf(_Mango(), _Mango())


def test_a_single_output_of_a_variadic_op_keeps_its_shape_in_a_graph():
    x = ek.constant([[1.0, 2.0]])
    for fn in (lambda t: ek.split(t, 1)[0] * 2.0, lambda t: ek.unstack(t)[0] * 2.0):
        expected = fn(x).numpy()
        traced = function(fn, autograph=False)(x)
        assert traced.numpy().tolist() == expected.tolist() and traced.shape == expected.shape


class _Scaled:
    """A value made of one tensor, keyed by its shape: its trace type passes the tensor into the graph."""

    def __init__(self, values, scale):
        self.values, self.scale = ek.constant(values), scale

    def __tf_tracing_type__(self, context):
        return _ScaledType(tuple(self.values.shape), self.scale)


class _ScaledType(__import__("tracing").TraceType):
    def __init__(self, shape, scale):
        self.shape, self.scale = shape, scale

    def __eq__(self, other):
        return type(other) is _ScaledType and (self.shape, self.scale) == (other.shape, other.scale)

    def __hash__(self):
        return hash((self.shape, self.scale))

    def flatten(self):
        return [ek.TensorSpec(self.shape, ek.float32)]

    def to_tensors(self, value):
        return [value.values]

    def from_tensors(self, tensors):
        traced = _Scaled.__new__(_Scaled)
        traced.values, traced.scale = next(tensors), self.scale
        return traced


def test_a_trace_type_passes_tensors_into_the_graph_with_to_tensors_and_from_tensors():
    @function
    def total(s, x):
        return ek.reduce_sum(s.values) * s.scale + x
    assert float(total(_Scaled([1.0, 2.0], 10.0), ek.constant(1.0))) == 31.0
    assert float(total(_Scaled([5.0, 5.0], 10.0), ek.constant(1.0))) == 101.0    # its own values, same trace
    assert total.experimental_get_tracing_count() == 1
    assert float(total(_Scaled([5.0, 5.0], 2.0), ek.constant(0.0))) == 20.0     # another trace type
    assert total.experimental_get_tracing_count() == 2
    cf = total.get_concrete_function(_Scaled([0.0, 0.0], 2.0), ek.constant(0.0))
    assert float(cf(_Scaled([3.0, 4.0], 2.0), ek.constant(0.5))) == 14.5
