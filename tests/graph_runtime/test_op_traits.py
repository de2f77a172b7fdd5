"""Op traits (`OpDef.effect`, `OpDef.alias`, graph_runtime/op_traits.py): one answer everywhere."""
from __future__ import annotations

import sys

import numpy as np

import eager as ek
import graph_runtime as gr
from eager.dispatch import execute
from eager.ops._define import infer_same
from eager.registry import EFFECTS, all_ops, get, op
from graph_runtime import op_traits
from graph_runtime.passes import optimize
from tracing import function

from fusion_helpers import assert_bitwise, fused_and_reference, fused_kernels

# a composite elementwise kernel no fusion table knows about: fusion must expand the kernel itself
SQ_PLUS_HALF = op("TraitsTestSquarePlusHalf", lambda x: np.add(np.multiply(x, x), 0.5), infer_same,
                  elementwise=True)
WHERE_POS = op("TraitsTestWherePositive", lambda x: np.where(x > 0, x, np.zeros((), x.dtype)), infer_same,
               elementwise=True)


def test_every_op_declares_a_known_effect_and_the_flags_agree():
    assert {o.effect for o in all_ops()} <= set(EFFECTS)
    assert get("Placeholder").effect == get("PlaceholderWithDefault").effect == "input"
    assert get("ReadVariableOp").effect == "read"
    for name in ("AssignVariableOp", "AssignAddVariableOp", "ResourceApplyGradientDescent", "PrintV2", "Assert",
                 "RandomUniform", "While", "If"):
        assert get(name).effect == "write", name
    assert get("StatelessWhile").effect == "none" and not get("StatelessWhile").stateful
    assert [o.name for o in all_ops() if o.alias] == ["Identity", "StopGradient"]


def test_reads_keep_program_order_but_are_not_run_targets():
    v = ek.Variable(1.0, name="traits_v")

    @function
    def f():
        a = v.read_value()
        v.assign(2.0)
        b = v.read_value()
        v.read_value()                  # unused: no effect, dropped
        return a, b

    a, b = f()
    assert (float(a), float(b)) == (1.0, 2.0)
    graph = f.get_concrete_function().graph
    assert [o.type for o in op_traits.run_targets(graph)] == ["AssignVariableOp"]
    reads = [o for o in graph.get_operations() if o.type == "ReadVariableOp"]
    assert all(op_traits.is_ordered(r.opdef) and op_traits.is_pinned(r) for r in reads)
    assert not any(op_traits.has_side_effects(r) for r in reads)
    v.assign(5.0)
    assert [float(t) for t in f()] == [5.0, 2.0]


def test_placeholder_with_default_is_an_input_never_a_target_nor_chained():
    def branch():
        d = gr.placeholder_with_default(ek.constant(3.0), [])
        ek.print("b", output_stream=sys.stdout)
        return d * 2.0

    g = gr.Graph()
    with g.as_default():
        out = ek.cond(ek.constant(True), branch, lambda: ek.constant(0.0))
    body = out.op.get_attr("then_branch")
    pwd = next(o for o in body.get_operations() if o.type == "PlaceholderWithDefault")
    assert op_traits.is_input(pwd.opdef) and not op_traits.is_ordered(pwd.opdef)
    assert pwd.control_inputs == ()
    assert [o.type for o in op_traits.run_targets(body)] == ["PrintV2"]
    assert gr.Session(graph=g).run(out) == 6.0


def test_stop_gradient_is_an_alias_for_the_executor_and_for_fusion():
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, [8], name="x")
        y = ek.exp(ek.stop_gradient(ek.sin(x))) * 2.0
    ref, got, _, plan = fused_and_reference(g, {x: np.linspace(-1, 1, 8, dtype=np.float32)}, [y], numexpr=False)
    assert_bitwise(ref, got)
    assert [s.op.type for s in plan.steps] == ["FusedElementwise"]   # one group across the StopGradient
    plain = gr.compile_plan(g, [x], [y])
    assert "StopGradient" not in [s.op.type for s in plain.steps]


def test_fusion_expands_an_ops_own_kernel_not_a_copy():
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, [8], name="x")
        y = execute(SQ_PLUS_HALF, (ek.sigmoid(ek.sin(x)),), {})
        z = execute(WHERE_POS, (ek.cos(y),), {})
    xv = np.linspace(-3, 3, 8, dtype=np.float32)
    ref, got, _, plan = fused_and_reference(g, {x: xv}, [z], numexpr=False)
    assert_bitwise(ref, got)
    (kernel,) = fused_kernels(plan)
    out, _ = optimize(g, ["x", z.name], passes=["fusion"])
    prog = next(o for o in out.get_operations() if o.type == "FusedElementwise").get_attr("program")
    kinds = [(i.kind, i.op_type) for i in prog.instrs]
    # Sigmoid and the test op become the ufunc calls their eager kernels make; np.where is not a ufunc
    assert ("opaque", "TraitsTestSquarePlusHalf") not in kinds and ("opaque", "Sigmoid") not in kinds
    assert [k for k, t in kinds if t == "TraitsTestSquarePlusHalf"] == ["ufunc", "ufunc"]
    assert [k for k, t in kinds if t == "TraitsTestWherePositive"] == ["opaque"]
    assert [k for k, t in kinds if t == "Sigmoid"] == ["ufunc"] * 7      # min, exp, abs, neg, exp, add, div
