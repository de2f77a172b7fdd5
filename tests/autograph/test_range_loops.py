"""`for t in ek.range(...)` under `@function` counts with the loop's counter, as TensorFlow's autograph
iterates `tf.range`: `t` is `start + i * delta` of the counter `i`, not row `i` of the range constant, so
`xs[t]` in the body indexes by the counter (an RNN's loop then runs as one compiled call,
graph_runtime/control_flow/compiled_loop.py) with the same values and dtypes as before and as eagerly."""
import numpy as np
import pytest

import eager as ek
from tracing import TensorSpec, function

XS = np.arange(5 * 2 * 3, dtype=np.float32).reshape(5, 2, 3) / 7.0


def _body_ops(traced, *args):
    graph = traced.get_concrete_function(*args).graph
    loop = next(op for op in graph.get_operations() if op.type in ("While", "StatelessWhile"))
    return [op.type for op in loop.get_attr("body").get_operations()]


def rows_summed(xs):
    total = ek.zeros((2, 3))
    for t in ek.range(5):
        total = total * 0.5 + xs[t]
    return total


def test_the_range_loops_index_is_its_counter_and_results_stay_the_same():
    traced = function(rows_summed)
    np.testing.assert_array_equal(traced(XS).numpy(), rows_summed(ek.constant(XS)).numpy())
    # one slice (`xs[t]`): no gather of `t` from the range constant before it
    assert _body_ops(traced, XS).count("StridedSlice") == 1


def test_a_range_of_tensor_bounds_counts_with_the_counter_too():
    @function(input_signature=[TensorSpec([None, 2, 3], ek.float32)])
    def rows(xs):
        total = ek.zeros((2, 3))
        for t in ek.range(ek.shape(xs)[0]):
            total = total * 0.5 + xs[t]
        return total
    np.testing.assert_array_equal(rows(XS).numpy(), rows_summed(ek.constant(XS)).numpy())
    assert _body_ops(rows, XS).count("StridedSlice") == 1


@pytest.mark.parametrize("bounds", [(2, 11, 3), (7, -2, -4), (0, 4, 1)])
@pytest.mark.parametrize("dtype", [ek.int32, ek.int64])
def test_range_items_of_tensor_bounds_have_the_eager_values_and_dtype(bounds, dtype):
    @function
    def items(start, limit, delta):
        out = ek.TensorArray(dtype, size=0, dynamic_size=True)
        k = 0
        for t in ek.range(start, limit, delta):
            out = out.write(k, t)
            k += 1
        return out.stack()
    got = items(*[ek.constant(b, dtype) for b in bounds])
    assert got.dtype == dtype and got.numpy().tolist() == np.arange(*bounds).tolist()


@pytest.mark.parametrize("args, dtype", [((5,), None), ((2, 11, 3), None), ((7, -2, -4), None),
                                         ((3, 9, 2), ek.int64)])
def test_range_items_have_the_eager_values_and_dtype(args, dtype):
    def items():
        out = ek.TensorArray(dtype or ek.int32, size=0, dynamic_size=True)
        k = 0
        for t in ek.range(*args, dtype=dtype):
            out = out.write(k, t)
            k += 1
        return out.stack()
    got = function(items)()
    want = np.arange(*args, dtype=np.int64 if dtype is ek.int64 else np.int32)
    assert got.dtype == (dtype or ek.int32) and got.numpy().tolist() == want.tolist()


def _not_sorted():
    return ek.constant([3, 1, 2])


def _not_evenly_spaced():
    return ek.constant([4, 6, 9, 13])


def _floats():
    return ek.range(0.0, 1.0, 0.25)


@pytest.mark.parametrize("make", [_not_sorted, _not_evenly_spaced, _floats])
def test_other_constants_still_iterate_their_rows(make):
    def total():
        values = make()                       # a constant of the traced graph, like a range's
        s = ek.zeros_like(values[0])
        for v in values:
            s = s * 2 + v
        return s
    assert function(total)().numpy() == total().numpy()
