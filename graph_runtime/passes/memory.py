"""Memory pass: let big elementwise ops write their result into a dead input's buffer.

`y = tanh(a @ b)` allocates a fresh array for `tanh` although `a @ b` is dead
right after: for large arrays the allocation (page faults included) costs as
much as the math.  This pass rewrites such an op into `InplaceElementwise`
(attrs `op_type`, the original type, and `index`, the input whose buffer is
reused), whose kernel is `ufunc(*inputs, out=inputs[index])`.  It keeps the
op's name, location and outputs; the executor needs no change (the op is an
ordinary kernel: the buffer handed to it is simply overwritten).

An input buffer is reused only when all of this holds (so no other reader can
ever see the overwrite):
- the op's kernel *is* a NumPy ufunc (`AddV2`, `Mul`, `Tanh`, ...), or its
  OpDef gives the same computation writing into `out`
  (`extra["inplace"](*inputs, out=...)`: `Relu`, `ReluGrad`), and it has
  one output with a fully known static shape of at least `memory_min_bytes`
  (default 128 KiB; below that NumPy's allocator is cheaper than the check);
- the input has the output's dtype and exact static shape (no broadcasting
  into it), and is consumed by this op only, once, and is neither preserved
  (fetched or fed) nor a graph output;
- the input's producer allocates a fresh array on every run: a ufunc op or
  `MatMul`/`Conv2D`/`Softmax`-style kernels, the convolution and pooling
  gradients -- never a `Const`, a feed, a
  variable read, an alias (`Identity`, `Reshape`, `Transpose` may return views).

Variable updates too: `AssignSubVariableOp` / `AssignAddVariableOp` whose
delta is big, dead after the update and made fresh by its producer (a ufunc
op, a fused kernel's ufunc output, `MatMul`, ...) become
`InplaceAssignUpdate`, which stores `var - delta` into the delta's buffer
(plain SGD's `w - lr * g` then allocates nothing new), unless the variable's
own array may be written (eager/variable_storage.py).  And plain SGD's
`AssignSubVariableOp(var, Mul(g, lr))`, with `lr` a scalar and `g` big, dead
after the product and made fresh, becomes `InplaceApplyGradientDescent(lr, g)`:
one op that writes `w - g * lr` into the variable's array in one pass when the
native kernel is available (eager/native.py), else computes the product into
`g`'s buffer first (the same bits either way).

`import_graph_def` refuses `InplaceElementwise` and `InplaceAssignUpdate`
nodes (GraphDefError): a file never decides an in-place write.  A distributed session's master ships
partitions optimized without this pass; each task runs it on its own.

Runs once, last (it is not iterative).  Imports sibling pass modules, `eager`.
"""
from __future__ import annotations

import numpy as np

from eager.errors import InvalidArgumentError
from eager.registry import get, lookup, op
from eager.variables import gradient_descent_kernel, update_kernel

from .core import GraphPass, PassContext, make_stats, register_pass
from .rewriter import Rewriter, is_stateful

DEFAULT_MIN_BYTES = 128 * 1024
_FRESH = frozenset({"MatMul", "Conv2D", "Softmax", "LogSoftmax", "Sigmoid", "BiasAdd", "Relu", "ReluGrad",
                    "InplaceElementwise", "Conv2DBackpropInput", "Conv2DBackpropFilter", "MaxPool", "MaxPoolGrad",
                    "AvgPool", "AvgPoolGrad", "ReluMaxPoolGrad"})
_UFUNCS: dict = {}


def _ufunc_of(op_type: str):
    u = _UFUNCS.get(op_type)
    if u is None:
        od = get(op_type)
        u = _UFUNCS[op_type] = od.extra.get("inplace", od.kernel)
    return u


def _inplace_kernel(*xs, op_type, index):
    u = _UFUNCS.get(op_type)
    if u is None:
        u = _ufunc_of(op_type)
    return u(*xs, out=xs[index])


def _infer_inplace(specs, attrs):
    od = lookup(attrs["op_type"]) if type(attrs["op_type"]) is str else None
    if od is None or not _is_ufunc_op(od):            # attrs may come from a GraphDef: name a ufunc op only
        raise InvalidArgumentError(f"InplaceElementwise: op_type {attrs['op_type']!r:.60} is not an op whose kernel "
                                   f"is a NumPy ufunc", op_name="InplaceElementwise")
    index = attrs["index"]
    if type(index) is not int or not 0 <= index < len(specs):
        raise InvalidArgumentError(f"InplaceElementwise: index {index!r:.20} is not an input index (0..{len(specs) - 1})",
                                   op_name="InplaceElementwise")
    return od.infer(specs, {})


def _out_of_place(attrs) -> tuple:
    """(opdef, attrs) of the plain op an InplaceElementwise stands for (it allocates its output)."""
    return get(attrs["op_type"]), {}


def _refuse_import(raw_attrs, kind="InplaceElementwise"):
    # whether a buffer may be overwritten depends on who else holds it (a fed array, a variable's value):
    # only this pass, looking at the graph that runs, may decide; a GraphDef never does
    raise ValueError(f"{kind} writes into its input's buffer, which only the memory pass may decide "
                     "for a buffer its own plan made; a GraphDef may not carry it (write the plain op, "
                     f"{raw_attrs.get('op_type')!r:.40}; the memory pass decides again when the graph runs)")


def _refuse_update_import(raw_attrs):
    _refuse_import(raw_attrs, "InplaceAssignUpdate")


# `extra["writes_input"]`: the attr naming the input whose buffer the kernel overwrites, and how to make the
# op out of place; partition.py uses it when that input arrives from another device (a buffer that may be
# read-only, e.g. one Ray deserialized without a copy)
INPLACE = op("InplaceElementwise", _inplace_kernel, _infer_inplace,
             doc="ufunc op `op_type` writing into input `index` (made by the memory pass for dead inputs).",
             extra={"writes_input": ("index", _out_of_place), "check_import": _refuse_import})


def _is_ufunc_op(od) -> bool:
    """The op computes one elementwise ufunc call that can write into `out` (module docstring)."""
    return od.elementwise and ((isinstance(od.kernel, np.ufunc) and od.kernel is od.numpy_ufunc) or
                               callable(od.extra.get("inplace")))


def _fresh(op) -> bool:
    od = op._opdef
    return (isinstance(od.kernel, np.ufunc) and od.kernel is od.numpy_ufunc and od.elementwise
            and od.name != "Identity") or od.name in _FRESH


# ------------------------------------------------------------------ variable updates into their delta
_UPDATE_KERNELS: dict = {}


def _inplace_update_kernel(delta, var, op_type, index=0):
    k = _UPDATE_KERNELS.get(op_type)
    if k is None:
        k = _UPDATE_KERNELS[op_type] = update_kernel(get(op_type).extra["update_ufunc"], op_type, into_delta=True)
    return k(delta, var)


def _infer_inplace_update(specs, attrs):
    od = lookup(attrs["op_type"]) if type(attrs["op_type"]) is str else None
    if od is None or "update_ufunc" not in od.extra:        # attrs may come from a GraphDef: a known update only
        raise InvalidArgumentError(f"InplaceAssignUpdate: op_type {attrs['op_type']!r:.60} is not a variable "
                                   f"update (AssignAddVariableOp, AssignSubVariableOp)", op_name="InplaceAssignUpdate")
    return od.infer(specs, {"var": attrs["var"]})


def _update_out_of_place(attrs) -> tuple:
    return get(attrs["op_type"]), {"var": attrs["var"]}


INPLACE_UPDATE = op("InplaceAssignUpdate", _inplace_update_kernel, _infer_inplace_update, effect="write",
                    doc="Variable update `op_type` (AssignSub/AssignAdd) writing the new value into its delta's "
                        "buffer (made by the memory pass for a dead, freshly made delta).",
                    extra={"writes_input": ("index", _update_out_of_place), "check_import": _refuse_update_import})


def _apply_gd_out_of_place(attrs) -> tuple:
    return get("ResourceApplyGradientDescent"), {"var": attrs["var"]}


def _infer_apply_gd(specs, attrs):
    if attrs.get("index") != 1:
        raise InvalidArgumentError("InplaceApplyGradientDescent: index must be 1 (the gradient's buffer)",
                                   op_name="InplaceApplyGradientDescent")
    return get("ResourceApplyGradientDescent").infer(specs, {"var": attrs["var"]})


def _refuse_apply_gd_import(raw_attrs):
    _refuse_import(raw_attrs, "InplaceApplyGradientDescent")


_donated_gd = gradient_descent_kernel(donate_delta=True)


def _inplace_apply_gd_kernel(alpha, delta, var, index=1):
    return _donated_gd(alpha, delta, var)


INPLACE_APPLY_GD = op("InplaceApplyGradientDescent", _inplace_apply_gd_kernel, _infer_apply_gd,
                      effect="write",
                      doc="var -= delta * alpha (inputs alpha, delta; attrs var, index=1) using delta's buffer for "
                          "the product (made by the memory pass for plain SGD's dead, freshly made gradient).",
                      extra={"writes_input": ("index", _apply_gd_out_of_place),
                             "check_import": _refuse_apply_gd_import})


def _sgd_product(o, uses, outputs, ctx, min_bytes):
    """(alpha, gradient, Mul op) when `o` is AssignSubVariableOp(var, Mul(g, alpha)) with a rank-0 float `alpha`
    and a big `g` whose buffer the product may take (dead after it, made fresh); else None."""
    if o._opdef.name != "AssignSubVariableOp" or len(o._inputs) != 1:
        return None
    t = o._inputs[0]
    m = t._op
    if (m._opdef.name != "Mul" or uses.get(id(t)) != 1 or id(t) in outputs or m._name in ctx.preserve
            or t._dtype.np_dtype.kind != "f"):
        return None
    idx = _reusable_input(m, uses, outputs, ctx, min_bytes)
    if idx is None:
        return None
    alpha = m._inputs[1 - idx]
    if alpha._shape.rank != 0 or alpha._dtype is not t._dtype:
        return None
    return alpha, m._inputs[idx], m


def _fresh_output(t) -> bool:
    """Does `t`'s producer make a new array for it on every run, held by nobody else?"""
    p = t._op
    if is_stateful(p):
        return False
    if p._opdef.name == "FusedElementwise":     # an output computed by a ufunc into a buffer of its own
        prog = p._attrs["program"]
        slot = prog.outputs[t._index]
        return prog.outputs.count(slot) == 1 and any(i.out == slot and i.kind == "ufunc" for i in prog.instrs)
    return _fresh(p)


def _donated_delta(o, uses, outputs, ctx, min_bytes) -> bool:
    """May the variable update `o` write the new value into its delta input's buffer?"""
    if "update_ufunc" not in o._opdef.extra or len(o._inputs) != 1:
        return False
    t, out = o._inputs[0], o._outputs[0]
    n = out._shape.num_elements()
    return (n is not None and out._shape.rank != 0 and n * out._dtype.np_dtype.itemsize >= min_bytes and
            t._dtype is out._dtype and t._shape == out._shape and uses.get(id(t)) == 1 and id(t) not in outputs
            and t._op._name not in ctx.preserve and _fresh_output(t))


def plan_memory(graph, ctx: PassContext):
    rw = Rewriter(graph, ctx)
    min_bytes = int(ctx.option("memory_min_bytes", DEFAULT_MIN_BYTES))
    uses: dict = {}
    for o in graph._ops:
        for t in o._inputs:
            uses[id(t)] = uses.get(id(t), 0) + 1
    outputs = {id(t) for t in graph.outputs}
    for o in graph._ops:
        sgd = _sgd_product(o, uses, outputs, ctx, min_bytes)
        if sgd is not None:             # the Mul, emitted before, is left dead: finish() drops it
            alpha, g, m = sgd
            new = rw.emit(INPLACE_APPLY_GD, [rw.t(alpha), rw.t(g)], {"var": o._attrs["var"], "index": 1}, like=o,
                          name=o._name, control_inputs=tuple(dict.fromkeys(rw.controls(o) + rw.controls(m))))
        elif _donated_delta(o, uses, outputs, ctx, min_bytes):
            new = rw.emit(INPLACE_UPDATE, rw.inputs(o), {"op_type": o._opdef.name, "var": o._attrs["var"], "index": 0},
                          like=o, name=o._name, control_inputs=rw.controls(o))
        else:
            idx = _reusable_input(o, uses, outputs, ctx, min_bytes)
            if idx is None:
                rw.copy(o)
                continue
            new = rw.emit(INPLACE, rw.inputs(o), {"op_type": o._opdef.name, "index": idx}, like=o, name=o._name,
                          control_inputs=rw.controls(o))
        rw._origin[id(new)] = o
        rw._t[id(o._outputs[0])] = new._outputs[0]
        rw._ctrl[id(o)] = (new,)
        rw._count("in_place")
    out = rw.finish()
    return out, make_stats("memory", graph, out, rw)


def _reusable_input(o, uses, outputs, ctx, min_bytes):
    od = o._opdef
    if not _is_ufunc_op(od) or len(o._outputs) != 1 or is_stateful(o):
        return None
    out = o._outputs[0]
    n = out._shape.num_elements()
    if n is None or out._shape.rank == 0 or n * out._dtype.np_dtype.itemsize < min_bytes:
        return None
    for i, t in enumerate(o._inputs):
        p = t._op
        if (t._dtype is out._dtype and t._shape == out._shape and uses.get(id(t)) == 1 and id(t) not in outputs
                and p._name not in ctx.preserve and _fresh(p) and not is_stateful(p)):
            return i
    return None


MEMORY = register_pass(GraphPass("memory", plan_memory,
                                 "Big elementwise ops and variable updates write into a dead input's buffer "
                                 "(InplaceElementwise, InplaceAssignUpdate).",
                                 iterative=False))
