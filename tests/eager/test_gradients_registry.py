"""Every differentiable op in the registry has a numerically checked gradient.

Cases live in `gradcases_*.py` files beside this one (one per op family).
An op registered later without a case makes `test_every_differentiable_op_has_a_case` fail.
"""
import importlib
import pkgutil
import pathlib

import pytest

import eager as ek
from eager import registry

from gradcheck import check_case

_HERE = pathlib.Path(__file__).parent
CASES = []
for info in pkgutil.iter_modules([str(_HERE)]):
    if info.name.startswith("gradcases_"):
        CASES.extend(importlib.import_module(info.name).CASES)

# ops whose gradient is exercised elsewhere because they cannot run on plain float inputs
EXEMPT = {
    "ReadVariableOp": "variables are sources; covered by test_tape.py",
    "PartitionedCall": "a traced function called under a tape; covered by tests/tracing (numeric comparison "
                       "with the eager tape)",
    **{name: "functional control flow exists only in graphs (eagerly cond/while_loop/switch_case run Python); "
             "gradients checked numerically in tests/graph_runtime/test_control_flow_gradients.py"
       for name in ("If", "StatelessIf", "Case", "StatelessCase", "While", "StatelessWhile")},
    "PartitionedCallGrad": "backward op of a traced function call; its gradient (nested tapes around @function "
                           "calls) is checked numerically in tests/tracing/test_higher_order.py",
    "PartitionedCallSavedGrad": "backward op of a tape-recorded traced call, from the values its forward saved; "
                                "second derivatives through it are checked against the eager tape in "
                                "tests/tracing/test_tape_call_saving.py",
    "CFSavedValues": "graph-only (unpacks an If/Case op's saved values for its gradient); second and third "
                     "derivatives checked numerically in tests/graph_runtime/test_control_flow_higher_order.py",
    "WhileGrad": "graph-only gradient op of While; its own gradient (second/third derivatives through "
                 "while_loop) is checked in tests/graph_runtime/test_control_flow_higher_order.py",
    **{name: "graph-only (eagerly the axis is a concrete value: the static-axis op); first and second "
             "derivatives checked against the static-axis op's in tests/eager/test_reduction_dynamic_axis.py"
       for name in ("ReduceDynamic", "ReduceGradDynamic")},
    "CFSavedStacks": "graph-only (a While op's saved values, stacked, for higher-order gradients); checked in "
                     "tests/graph_runtime/test_control_flow_higher_order.py",
}


def test_every_differentiable_op_has_a_case():
    covered = {c.op_name for c in CASES}
    missing = sorted(o.name for o in registry.all_ops()
                     if o.differentiable and o.name not in covered and o.name not in EXEMPT)
    assert not missing, f"differentiable ops without a gradient check: {missing}"


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id or c.op_name)
def test_gradient_matches_finite_differences(case):
    check_case(case)


def test_gradient_registered_later_by_a_higher_module():
    """`grad=GRADIENT_REGISTERED_LATER` + `register_gradient`: the control-flow ops get their rules this way."""
    import numpy as np
    from eager.ops._define import infer_same
    sq = registry.op("RegistryTestLaterSquare", np.square, infer_same, registry.GRADIENT_REGISTERED_LATER)
    x = ek.constant([1.0, 2.0])
    with ek.GradientTape() as tape:
        tape.watch(x)
        y = ek.dispatch.execute(sq, (x,), {})
    with pytest.raises(NotImplementedError, match="RegistryTestLaterSquare.*register_gradient"):
        tape.gradient(y, x)
    registry.register_gradient(sq, lambda op, dy: [dy * 2.0 * op.inputs[0]])
    with ek.GradientTape() as tape:
        tape.watch(x)
        y = ek.dispatch.execute(sq, (x,), {})
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), [2.0, 4.0])
    with pytest.raises(ValueError, match="already has a gradient rule"):
        registry.register_gradient(sq, lambda op, dy: [dy])
    for name in ("If", "StatelessIf", "Case", "StatelessCase", "While", "StatelessWhile", "WhileGrad"):
        import graph_runtime  # noqa: F401 - registers the control-flow ops and their rules
        assert not isinstance(registry.get(name).grad, registry._UnregisteredGradient), name
