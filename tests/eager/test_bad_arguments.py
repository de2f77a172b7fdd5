"""Bad shape and axis arguments raise clear errors (naming the op, the argument and what was expected),
eagerly and while building a graph, instead of being truncated or passed to NumPy."""
import numpy as np
import pytest

import eager as ek
import graph_runtime as gr
from tracing import TensorSpec, function


def _in_every_mode(build):
    """Run `build()` eagerly, in a graph, and traced by @function; return the three exceptions."""
    errors = []
    for mode in ("eager", "graph", "function"):
        with pytest.raises(Exception) as info:
            if mode == "eager":
                build()
            elif mode == "graph":
                with gr.Graph().as_default():
                    build()
            else:
                function(build, autograph=False)()
        errors.append(info.value)
    return errors


X = np.ones((2, 3), np.float32)


@pytest.mark.parametrize("build, op", [
    (lambda: ek.reduce_sum(X, axis=1.5), "Sum"),
    (lambda: ek.reduce_mean(X, axis=[0.5]), "Mean"),
    (lambda: ek.reduce_max(X, axis=1.0), "Max"),
    (lambda: ek.argmax(X, axis=1.5), "ArgMax"),
    (lambda: ek.squeeze(np.ones((2, 1)), axis=1.5), "Squeeze"),
    (lambda: ek.expand_dims(X, axis=1.5), "ExpandDims"),
    (lambda: ek.stack([X, X], axis=1.5), "Pack"),
    (lambda: ek.unstack(X, axis=0.5), "Unpack"),
    (lambda: ek.nn.softmax(X, axis=1.5), "Softmax"),
    (lambda: ek.zeros((2.5, 3)), "zeros"),
    (lambda: ek.ones((2.0, 3)), "ones"),
    (lambda: ek.reshape(X, (3.0, 2)), "Reshape"),
    (lambda: ek.random.normal((2.5, 2), seed=1), "RandomStandardNormal"),
])
def test_non_integer_axes_and_dims_are_refused(build, op):
    for e in _in_every_mode(build):
        assert isinstance(e, TypeError), e
        assert op in str(e) and "must be" in str(e) and "int" in str(e), str(e)


def test_negative_and_huge_dims_name_the_op():
    for build, op in ((lambda: ek.zeros((-1, 2)), "zeros"), (lambda: ek.ones([3, -2]), "ones")):
        for e in _in_every_mode(build):
            assert isinstance(e, ek.errors.InvalidArgumentError) and op in str(e) and "negative" in str(e), e
    for e in _in_every_mode(lambda: ek.zeros((10 ** 300, 2))):
        assert isinstance(e, ValueError) and "zeros" in str(e) and "int64" in str(e), e
        assert len(str(e)) < 200                       # the 301-digit number is not printed


def test_placeholder_and_spec_dims_must_be_int64_integers():
    g = gr.Graph()
    with g.as_default():
        with pytest.raises(TypeError, match="dimension must be an int or None, got 2.5"):
            gr.placeholder(ek.float32, [2.5, 3])
        with pytest.raises(ValueError, match="at most 2\\*\\*63 - 1"):
            gr.placeholder(ek.float32, [10 ** 300, 3])
        assert gr.placeholder(ek.float32, [np.int64(2), None, -1]).shape.dims == (2, None, None)
    assert g.get_operations() and all(o.type == "Placeholder" for o in g.get_operations())
    with pytest.raises(TypeError, match="got 3.0"):
        TensorSpec([3.0], ek.float32)


def test_integer_like_arguments_still_work():
    assert ek.reduce_sum(X, axis=np.int64(1)).shape == (2,)
    assert ek.reduce_sum(X, axis=ek.constant(1)).shape == (2,)
    assert ek.reshape(X, np.array([3, 2])).shape == (3, 2)
    assert ek.zeros([]).shape == () and ek.zeros(np.array([2, 0])).shape == (2, 0)
    assert ek.stack([X, X], axis=np.int32(1)).shape == (2, 2, 3)


@pytest.mark.parametrize("reduce", [ek.reduce_sum, ek.reduce_mean, ek.reduce_prod, ek.reduce_max, ek.reduce_min,
                                    ek.argmax, ek.argmin, ek.reduce_logsumexp])
def test_reductions_refuse_strings_in_every_mode(reduce):
    """TensorFlow's reductions take numbers only: a string tensor is refused, not reduced to garbage."""
    errors = _in_every_mode(lambda: reduce(ek.constant(["a", "b"])))
    with gr.Graph().as_default():                         # a symbolic input, its value unknown
        errors += _in_every_mode(lambda: reduce(gr.placeholder(ek.string, [None])))
    for e in errors:
        assert isinstance(e, ek.errors.InvalidArgumentError), e
        assert "string" in str(e), e


def test_an_imported_string_reduction_is_refused():
    from graph_runtime.graph_def import GraphDefError
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, [2], name="x")
        ek.reduce_sum(x, name="s")
    gd = g.as_graph_def()
    gd["nodes"][0]["attrs"]["dtype"] = {"$dtype": "string"}
    with pytest.raises(GraphDefError, match="Sum: cannot reduce a string tensor"):
        gr.import_graph_def(gd, graph=gr.Graph())
