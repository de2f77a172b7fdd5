"""The declared context protocol (`eager.context.Context`) and the public tape and variable entry points
that graph layers use instead of eager's private state."""
from __future__ import annotations

import numpy as np
import pytest

import eager as ek
import graph_runtime as gr
from eager import context, tape_state
from eager.errors import InvalidArgumentError


def test_only_a_declared_context_can_be_pushed():
    class NotAContext:
        is_eager = False

        def add_op(self, *args):
            return None
    with pytest.raises(TypeError, match="does not implement eager.context.Context"):
        context.push(NotAContext())
    assert context.executing_eagerly()


def test_a_context_missing_a_method_cannot_be_made():
    class Partial(context.Context):
        def add_op(self, opdef, inputs, attrs, name=None):
            return None
    with pytest.raises(TypeError, match="abstract"):
        Partial()


def test_the_graph_context_implements_the_protocol():
    g = gr.Graph()
    assert isinstance(g, context.Context)
    with g.as_default():
        assert context.current() is g and not context.executing_eagerly()


def test_recording_with_suspends_and_restores_tapes():
    x = ek.constant(2.0)
    with ek.GradientTape(persistent=True) as tape:
        tape.watch(x)
        outer = tape_state.active_tapes()
        assert tape_state.any_recording()
        with tape_state.recording_with([]):
            assert not tape_state.any_recording()
            y_hidden = x * x                      # not recorded
        assert tape_state.active_tapes() is outer
        y = x * x
    assert tape.gradient(y, x).numpy() == 4.0
    assert tape.gradient(y_hidden, x) is None


def test_stored_array_and_compare_and_set():
    v = ek.Variable(np.zeros(2, np.float32))
    first = v.stored_array()
    v.assign([1.0, 2.0])
    assert not v.replace_stored_array(np.ones(2, np.float32), expected=first)     # someone wrote meanwhile
    np.testing.assert_array_equal(v.numpy(), [1.0, 2.0])
    assert v.replace_stored_array(first, expected=v.stored_array())
    np.testing.assert_array_equal(v.numpy(), [0.0, 0.0])
    with pytest.raises(InvalidArgumentError, match="shape"):
        v.replace_stored_array(np.zeros(3, np.float32))


def test_control_flow_reaches_the_context_through_the_one_dispatch_point():
    seen = []

    class Recording(gr.Graph):
        def add_op(self, opdef, inputs, attrs, name=None):
            seen.append((opdef.name, sorted(k for k, v in attrs.items() if isinstance(v, (gr.Graph, tuple)))))
            return super().add_op(opdef, inputs, attrs, name)

    g = Recording()
    with g.as_default():
        x = gr.placeholder("float32", [2])
        ek.cond(ek.reduce_sum(x) > 0, lambda: x * 2.0, lambda: x)
        ek.while_loop(lambda i: i < 3, lambda i: i + 1, [ek.constant(0)])
        ek.switch_case(ek.constant(1), [lambda: x, lambda: x + 1.0])
    kinds = {name: keys for name, keys in seen if name.endswith(("If", "While", "Case"))}
    assert set(kinds) == {"StatelessIf", "StatelessWhile", "StatelessCase"}
    assert {"then_branch", "else_branch"} <= set(kinds["StatelessIf"])
    assert "branches" in kinds["StatelessCase"]
    assert not hasattr(context.Context, "build_cond") and not hasattr(g, "build_while")
