"""eager.TensorArray: functional writes, reads, stack/unstack/gather/concat, sizes, nest carrying, errors."""
import numpy as np
import pytest

import eager as ek
from eager import nest
from eager.errors import InvalidArgumentError


def test_write_read_stack():
    ta = ek.TensorArray(ek.float32, size=3)
    ta2 = ta.write(0, [1.0, 2.0]).write(2, ek.constant([5.0, 6.0]))
    assert isinstance(ta2, ek.TensorArray) and ta2 is not ta
    np.testing.assert_array_equal(ta2.stack().numpy(), [[1, 2], [0, 0], [5, 6]])
    np.testing.assert_array_equal(ta2.read(2).numpy(), [5, 6])
    np.testing.assert_array_equal(ta2.read(ek.constant(0)).numpy(), [1, 2])
    assert int(ta2.size()) == 3 and ta2.dtype is ek.float32
    assert ta2.element_shape == [2]
    assert ta.element_shape.rank is None                      # unknown until the first write


def test_known_element_shape_and_scalars():
    ta = ek.TensorArray(ek.int32, size=2, element_shape=[])
    np.testing.assert_array_equal(ta.stack().numpy(), [0, 0])
    ta = ta.write(1, 7)
    np.testing.assert_array_equal(ta.stack().numpy(), [0, 7])
    assert ta.read(1).dtype is ek.int32


def test_dynamic_size_grows():
    ta = ek.TensorArray(ek.float32, size=0, dynamic_size=True)
    for i in range(4):
        ta = ta.write(i, ek.fill([2], float(i)))
    assert int(ta.size()) == 4 and ta.dynamic_size
    np.testing.assert_array_equal(ta.stack().numpy()[:, 0], [0, 1, 2, 3])
    ta = ta.write(6, [9.0, 9.0])
    assert ta.stack().shape == (7, 2)


def test_unstack_gather_concat():
    x = np.arange(12, dtype=np.float32).reshape(3, 2, 2)
    ta = ek.TensorArray(ek.float32, size=3).unstack(x)
    np.testing.assert_array_equal(ta.read(1).numpy(), x[1])
    np.testing.assert_array_equal(ta.gather([2, 0]).numpy(), x[[2, 0]])
    np.testing.assert_array_equal(ta.concat().numpy(), x.reshape(6, 2))
    ta = ek.TensorArray(ek.float32, size=3).scatter([2, 0], ek.constant(x[:2]))
    np.testing.assert_array_equal(ta.stack().numpy(), [x[1], np.zeros((2, 2)), x[0]])


def test_errors():
    ta = ek.TensorArray(ek.float32, size=2)
    with pytest.raises(InvalidArgumentError, match="index 2 of a TensorArray of size 2.*dynamic_size=True"):
        ta.write(2, 1.0)
    with pytest.raises(InvalidArgumentError, match="read index 5"):
        ta.write(0, 1.0).read(5)
    with pytest.raises(InvalidArgumentError, match="holds float32.*int32"):
        ta.write(0, ek.constant(1))
    with pytest.raises(InvalidArgumentError, match=r"shape \[3\].*elements have shape \[2\]"):
        ta.write(0, [1.0, 2.0]).write(1, [1.0, 2.0, 3.0])
    with pytest.raises(InvalidArgumentError, match="unstack 3 elements into a TensorArray of size 2"):
        ta.unstack(ek.ones([3]))
    with pytest.raises(InvalidArgumentError, match="index must be an integer"):
        ta.read(0.5)


def test_gradients_flow_through_writes_and_reads():
    x = ek.constant([1.0, 2.0])
    with ek.GradientTape() as tape:
        tape.watch(x)
        ta = ek.TensorArray(ek.float32, size=3).write(0, x * 2.0).write(1, x * x)
        ta = ta.write(0, x * 3.0)                  # overwrite: the x * 2 write no longer contributes
        y = ek.reduce_sum(ta.stack()) + ek.reduce_sum(ta.read(1))
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), 3.0 + 2 * 2 * x.numpy())


def test_nest_carries_it_as_its_flow_tensor():
    ta = ek.TensorArray(ek.float32, size=2, dynamic_size=True).write(0, [1.0])
    flat = nest.flatten({"ta": ta, "n": ek.constant(1)})
    assert len(flat) == 2 and any(t is ta.flow for t in flat)
    rebuilt = nest.pack_sequence_as({"ta": ta, "n": 0}, flat)
    assert type(rebuilt["ta"]) is type(ta) and rebuilt["ta"].dynamic_size
    assert rebuilt["ta"].flow is ta.flow
    assert nest.same_structure(ta, ta.write(1, [2.0]))
    assert not nest.same_structure(ta, ek.TensorArray(ek.float32, size=2))   # dynamic vs fixed


def test_eager_while_loop():
    def body(i, ta):
        return i + 1, ta.write(i, ek.cast(i, ek.float32) * 10.0)
    _, ta = ek.while_loop(lambda i, ta: i < 4, body, [ek.constant(0), ek.TensorArray(ek.float32, size=4)])
    np.testing.assert_array_equal(ta.stack().numpy(), [0, 10, 20, 30])


def test_in_a_graph():
    gr = pytest.importorskip("graph_runtime")
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, [None, 2])
        ta = ek.TensorArray(ek.float32, size=2, element_shape=[2]).write(1, x[0]).write(0, x[0] * 2.0)
        dyn = ek.TensorArray(ek.float32, size=0, dynamic_size=True).write(2, x[0])
        unknown = ek.TensorArray(ek.float32, size=2)
        assert ta.flow.shape.as_list() == [2, 2] and dyn.flow.shape.as_list() == [None, 2]
        assert unknown.flow.shape.rank is None and unknown.write(0, x[0]).flow.shape.as_list() == [None, 2]
        fetches = [ta.stack(), ta.read(1), ta.size(), dyn.stack()]
    with gr.Session(graph=g) as s:
        st, r, n, d = s.run(fetches, {x: [[1.0, 2.0]]})
    np.testing.assert_array_equal(st, [[2, 4], [1, 2]])
    np.testing.assert_array_equal(r, [1, 2])
    assert n == 2 and d.shape == (3, 2)
