"""The single dispatch point: every op goes through `execute`.

`execute(opdef, inputs, attrs, name)` asks the context on top of the stack:
the eager context runs the NumPy kernel now (never showing NumPy's
floating-point warnings, as in graphs: fp_semantics.py) and wraps the result; any other
context (graph building) receives `ctx.add_op(...)` and returns symbolic
tensors.  Afterwards, active gradient tapes record the op.  This function is the
eager hot path: keep it short.  Inputs must already be Tensors (op wrappers
convert Python values first).
"""
from __future__ import annotations

import warnings as _warnings

import numpy as np

from . import context as _context
from . import fp_semantics as _fp
from .errors import InvalidArgumentError, OpError
from .tensor import Tensor
from . import tape_state as _tape_state

_ctx_state = _context._state
_tape_local = _tape_state._state
_tuple_new, _TapeEntry = tuple.__new__, _tape_state.TapeEntry


def execute(opdef, inputs, attrs, name=None):
    """Run or stage one op; returns a Tensor, or a tuple for multi-output ops."""
    ctx = _ctx_state.stack[-1]
    if ctx.is_eager:      # eager values live on the host CPU: `opdef.kernel` is registry.kernel_for(opdef, host)
        try:
            if _warnings.filters[0] is not _fp.FILTER:     # the kernel filter comes first (fp_semantics.py)
                _fp.keep_kernels_quiet()
        except IndexError:
            _fp.keep_kernels_quiet()
        try:
            if opdef.effect == "write":      # never run twice: NumPy's warnings off up front
                with _fp.ignoring():
                    out = opdef.kernel(*[t._value for t in inputs], **attrs)
            elif len(inputs) == 2:       # the common arities without building an argument list
                out = opdef.kernel(inputs[0]._value, inputs[1]._value, **attrs)
            elif len(inputs) == 1:
                out = opdef.kernel(inputs[0]._value, **attrs)
            elif not inputs:             # variable reads
                out = opdef.kernel(**attrs)
            else:
                out = opdef.kernel(*[t._value for t in inputs], **attrs)
        except Exception as e:
            if not isinstance(e, _fp.RAISED) or opdef.effect == "write":
                raise _eager_error(opdef, inputs, attrs, e)
            try:        # a NumPy warning turned into an error, or np.errstate's "raise": NaN and inf are values
                out = _fp.rerun_quietly(e, opdef.kernel, *[t._value for t in inputs], **attrs)
            except Exception as e2:
                raise _eager_error(opdef, inputs, attrs, e2)
        result = Tensor(out) if opdef.num_outputs == 1 else tuple([Tensor(o) for o in out])
    else:
        result = ctx.add_op(opdef, inputs, attrs, name)
    tapes = _tape_local.tapes
    if tapes and opdef.differentiable:       # tape_state.record, inline: every op of a taped forward pass
        outputs = result if isinstance(result, tuple) else (result,)
        if opdef.effect == "read":           # a variable read: the tape maps it back to the variable
            for tape in tapes:
                tape._maybe_record(opdef, inputs, attrs, outputs)
            return result
        for tape in tapes:      # GradientTape._maybe_record for an op that is not a read, without the call
            tracked = tape._tracked
            for t in inputs:
                if id(t) in tracked:
                    tape._entries.append(_tuple_new(_TapeEntry, (opdef, inputs, outputs, attrs)))
                    for o in outputs:
                        tracked.add(id(o))
                    break
    return result


def execute_writes(calls):
    """Run the ops of effect "write" in `calls` ((opdef, inputs, attrs) each) in order; a list of their results.

    Eagerly, what `execute` does for each op (the same kernel call, the same error for a failure, which stops
    the run there, the same tape recording) under one `np.errstate` entry for them all instead of one per op:
    an optimizer step's updates.  Elsewhere (a graph being built) each op goes through `execute`.
    """
    if not _ctx_state.stack[-1].is_eager:
        return [execute(opdef, inputs, attrs) for opdef, inputs, attrs in calls]
    try:
        if _warnings.filters[0] is not _fp.FILTER:
            _fp.keep_kernels_quiet()
    except IndexError:
        _fp.keep_kernels_quiet()
    for opdef, _, _ in calls:
        if opdef.effect != "write":
            raise ValueError(f"execute_writes: {opdef.name} does not write state; use execute")
    results = []
    with _fp.ignoring():
        for opdef, inputs, attrs in calls:
            try:
                if len(inputs) == 2:        # an update's (rate, gradient): no argument list
                    out = opdef.kernel(inputs[0]._value, inputs[1]._value, **attrs)
                else:
                    out = opdef.kernel(*[t._value for t in inputs], **attrs)
            except Exception as e:
                raise _eager_error(opdef, inputs, attrs, e)
            result = Tensor(out) if opdef.num_outputs == 1 else tuple([Tensor(o) for o in out])
            if _tape_local.tapes and opdef.differentiable:
                _tape_state.record(opdef, inputs, attrs, result)
            results.append(result)
    return results


def _eager_error(opdef, inputs, attrs, e):
    """The exception to raise for a failed eager kernel (re-raised as is when already precise)."""
    if any(t._is_symbolic for t in inputs):    # a symbolic tensor has no value: whatever NumPy said about None
        return _symbolic_in_eager(opdef, inputs)
    try:
        raise e
    except OpError:
        return e
    except (ValueError, TypeError, IndexError, np.linalg.LinAlgError):
        return kernel_error(opdef, inputs, attrs, e)
    except BaseException:
        return e


def describe_inputs(inputs) -> str:
    parts = []
    for t in inputs:
        try:
            parts.append(f"{t.dtype.name}{list(t.shape.dims) if t.shape.dims is not None else '[?]'}")
        except Exception:  # pragma: no cover - description must never fail
            parts.append(repr(t))
    return ", ".join(parts)


def kernel_error(opdef, inputs, attrs, exc) -> InvalidArgumentError:
    """Turn a NumPy exception inside a kernel into an error naming op, shapes and dtypes."""
    return InvalidArgumentError(
        f"{opdef.name}: {exc} (inputs: {describe_inputs(inputs)})", op_name=opdef.name)


def _symbolic_in_eager(opdef, inputs):
    for t in inputs:      # one that leaked out of a traced function: its graph says so (TypeError, as in TF)
        leaked = t._is_symbolic and t.graph._out_of_scope_message(t)
        if leaked:
            return TypeError(f"{opdef.name}: {leaked}")
    return InvalidArgumentError(
        f"{opdef.name}: a symbolic graph tensor was passed to an op running eagerly "
        f"(inputs: {describe_inputs(inputs)}). Graph tensors can only be used while building their graph.",
        op_name=opdef.name)
