"""`Tensor.numpy()` is a copy and `np.asarray(tensor)` a read-only view, as a TensorFlow port expects;
`copy=False` keeps NumPy 2's contract (a view, or ValueError where a copy is needed).

A value tensor of a variable holds the variable's own array (updates write in
place when nothing else holds it), so a writeable alias handed to the user
would let a port's `w = v.value().numpy(); w[w < 0] = 0` change the variable
before any assign.  Each case runs eagerly, on a `@function` result and on a
Session fetch where that applies.
"""
import numpy as np
import pytest

import eager as ek
import graph_runtime as gr
from tracing import function


def _edit_and_check(get_array, v, expect):
    a = get_array()
    a[a < 2] = -1                       # what a port does with TensorFlow's copy before assigning it back
    np.testing.assert_array_equal(v.numpy(), expect)


def test_numpy_of_a_value_tensor_is_a_copy_eagerly_and_in_a_function():
    v = ek.Variable(np.arange(4.0, dtype=np.float32))
    v.assign_add(np.zeros(4, np.float32))                # the variable now owns an array it updates in place
    start = np.arange(4.0, dtype=np.float32)
    _edit_and_check(lambda: v.value().numpy(), v, start)
    _edit_and_check(lambda: v.read_value().numpy(), v, start)
    read = function(lambda: v.read_value())
    _edit_and_check(lambda: read().numpy(), v, start)
    _edit_and_check(lambda: read().numpy(), v, start)    # the cached plan's second run
    v.assign(np.where(start < 2, -1, start))
    np.testing.assert_array_equal(v.numpy(), [-1, -1, 2, 3])


def test_numpy_of_an_op_result_is_a_fresh_array_each_time():
    t = ek.constant([1.0, 2.0]) * 2.0
    a, b = t.numpy(), t.numpy()
    a[0] = 100.0
    assert b[0] == 2.0 and t.numpy()[0] == 2.0 and not np.shares_memory(a, b)
    s = ek.reduce_sum(t)
    assert s.numpy() == 6.0


def test_asarray_is_a_read_only_view_and_a_write_raises():
    v = ek.Variable(np.arange(3.0))
    v.assign_add(np.zeros(3))
    t = v.value()
    view = np.asarray(t)
    assert np.shares_memory(view, t.numpy()) is False     # numpy() copies ...
    assert view.flags.writeable is False                  # ... asarray does not, and cannot be written
    with pytest.raises(ValueError, match="read-only"):
        view[0] = 7.0
    with pytest.raises(ValueError, match="read-only"):
        np.add(view, 1.0, out=view)
    np.testing.assert_array_equal(v.numpy(), [0.0, 1.0, 2.0])


def test_np_array_and_dtype_conversions_are_writeable_copies():
    t = ek.constant([1.0, 2.0])
    a = np.array(t)
    a[0] = 5.0
    d = np.asarray(t, dtype=np.float64)
    d[1] = 9.0
    assert a.flags.writeable and d.dtype == np.float64
    np.testing.assert_array_equal(t.numpy(), [1.0, 2.0])
    with pytest.raises(ValueError, match="float32.*needs a copy|needs a copy"):
        np.asarray(t, dtype=np.float64, copy=False)
    assert np.asarray(ek.constant(2.5)).item() == 2.5          # a rank-0 value converts too


def test_as_numpy_iterator_yields_read_only_values_and_the_data_stays_intact():
    data = np.arange(6.0, dtype=np.float32).reshape(3, 2)
    ds = ek.data.Dataset.from_tensor_slices(data)
    first = next(iter(ds.as_numpy_iterator()))
    with pytest.raises(ValueError, match="read-only"):
        first[0] = -1.0                                    # TensorFlow's elements are read-only too
    again = [x.tolist() for x in ds.as_numpy_iterator()]
    assert again == data.tolist()


def test_session_fetch_of_a_variable_is_not_an_alias_a_write_reaches():
    g = gr.Graph()
    with g.as_default():
        v = ek.Variable(np.arange(3.0, dtype=np.float32))
        read = v.read_value()
        init = gr.global_variables_initializer()
    with gr.Session(graph=g) as sess:
        sess.run(init)
        got = sess.run(read)
        got[:] = -1.0
        np.testing.assert_array_equal(sess.run(read), [0.0, 1.0, 2.0])


def test_rank_0_values_are_numpy_scalars_as_in_tensorflow():
    # a port counts labels with `counts[y.numpy()] += 1`: a 0-d array is unhashable, a NumPy scalar is not
    ds = ek.data.Dataset.from_tensor_slices((np.zeros((4, 2), np.float32), np.array([0, 1, 1, 2])))
    counts = {}
    for _, y in ds:
        counts[y.numpy()] = counts.get(y.numpy(), 0) + 1
    assert counts == {0: 1, 1: 2, 2: 1}
    scalars = [ek.constant(3), ek.constant(2.5) * 2.0, ek.reduce_sum(ek.constant([1, 2])),
               function(lambda: ek.constant(1.5) + 1.0)()]
    for t in scalars:
        assert isinstance(t.numpy(), np.generic) and t.numpy().dtype == t.dtype.as_numpy_dtype
    assert isinstance(ek.Variable(1.0).numpy(), np.float32)
    assert [type(v) for v in ek.data.Dataset.range(2).as_numpy_iterator()] == [np.int64, np.int64]
    assert ek.constant("ab").numpy() == b"ab"


def test_variable_conversion_with_copy_false_raises_and_other_conversions_copy():
    # NumPy 2: copy=False never copies and raises where a copy is needed; a variable converts to a copy of
    # its value (a view would be a snapshot later assigns do not reach), so it raises instead of copying
    v = ek.Variable(np.arange(3.0, dtype=np.float32), name="w")
    v.assign_add(np.zeros(3, np.float32))
    for convert in (lambda: np.asarray(v, copy=False), lambda: np.array(v, copy=False),
                    lambda: np.asarray(v, dtype=np.float64, copy=False)):
        with pytest.raises(ValueError, match="'w.*copy=False.*v.value"):
            convert()
    for a in (np.asarray(v), np.array(v), np.array(v, copy=True), np.asarray(v, dtype=np.float64)):
        assert a.flags.writeable and not np.shares_memory(a, np.asarray(v.value()))
        a[:] = -1.0
    assert np.asarray(v, dtype=np.float64).dtype == np.float64
    np.testing.assert_array_equal(v.numpy(), [0.0, 1.0, 2.0])
    view = np.asarray(v.value(), copy=False)            # the documented zero-copy read
    assert view.flags.writeable is False and np.shares_memory(view, np.asarray(v.value()))


def _copy_false_keeps_the_contract(t):
    """np.asarray(t, copy=False) is a view of what np.asarray(t) gives, or raises ValueError: True if a view."""
    try:
        got = np.asarray(t, copy=False)
    except ValueError as e:
        assert "copy" in str(e)
        return False
    assert np.shares_memory(got, np.asarray(t)) and not got.flags.writeable
    return True


def test_tensor_conversion_with_copy_false_never_copies():
    g = gr.Graph()
    with g.as_default():
        fed = gr.placeholder(ek.float32, [2])
        total = ek.reduce_sum(fed * 2.0)
    with gr.Session(graph=g) as sess:
        fetched = sess.run(total, {fed: np.ones(2, np.float32)})
    tensors = [ek.constant([1.0, 2.0]), ek.constant(2.5), ek.constant(2.5) * 2.0,
               ek.reduce_sum(ek.constant([1.0, 2.0])), function(lambda: ek.constant([1.0]) + 1.0)(),
               function(lambda: ek.reduce_sum(ek.constant([1.0, 2.0])))(), ek.constant(fetched)]
    views = [_copy_false_keeps_the_contract(t) for t in tensors]
    assert any(views) and not all(views)                # rank-0 results held as NumPy scalars need a copy
