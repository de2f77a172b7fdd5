"""`GradientTape`: records ops on watched values and differentiates them.

Recording happens in `dispatch.execute` (eager and graph-building alike) via
`tape_state.record`, so a tape works inside traced functions too.  Variables
are sources through their reads: each `ReadVariableOp` output of a watched
variable is mapped back to the variable.  Nested tapes work because gradient
computation runs through the public ops, which the outer tapes record.
"""
from __future__ import annotations

import contextlib
import enum
import warnings

import numpy as np

from . import context as _context
from . import nest, tape_state
from .backprop import backprop
from .convert import constant, convert_to_tensor
from .errors import InvalidArgumentError
from .ops.array import ONES_LIKE, ones_like, reshape, stack, zeros, zeros_like
from .tensor import Tensor


_tuple_new, _TapeEntry = tuple.__new__, tape_state.TapeEntry


def _is_variable(x) -> bool:
    return getattr(x, "_is_variable", False)


class UnconnectedGradients(enum.Enum):
    """What `gradient` returns for a source the target does not depend on (TF's enum; the strings work too)."""

    NONE = "none"
    ZERO = "zero"


def _unconnected(value) -> str:
    if isinstance(value, UnconnectedGradients):
        return value.value
    if value not in ("none", "zero"):
        raise ValueError(f"unconnected_gradients must be UnconnectedGradients.NONE or .ZERO ('none' or 'zero'), "
                         f"got {value!r}")
    return value


def _seed(target):
    """ones_like(target), the default output gradient (OnesLike is never recorded: not differentiable)."""
    if type(target) is Tensor and _context._state.stack[-1].is_eager:     # executing_eagerly(), inline
        v = target._value
        if isinstance(v, np.generic) or type(v) is np.ndarray and v.flags.c_contiguous:
            ones = np.empty(v.shape, v.dtype)     # np.ones_like's array (same layout) without its Python calls
            ones.fill(1)
            return Tensor(ones)
        return Tensor(ONES_LIKE.kernel(v))
    return ones_like(target)


def _warn_not_floating(source) -> None:
    """TF logs this too: an integer or bool source never gets a gradient, which is easy to miss."""
    what = f"variable {source.name!r:.60}" if _is_variable(source) else f"tensor of shape {source.shape}"
    warnings.warn(f"GradientTape.gradient: the dtype of a source must be floating (e.g. float32) to get a "
                  f"gradient; got a {what} of dtype {source.dtype.name}, whose gradient is None. "
                  f"Cast it to a float dtype before the tape records its uses.", UserWarning, stacklevel=4)


class GradientTape:
    """Record operations for automatic differentiation (see docs/api.md)."""

    def __init__(self, persistent: bool = False, watch_accessed_variables: bool = True):
        self._persistent = persistent
        self._watch_accessed = watch_accessed_variables
        self._reset()
        self._recording = False
        self._used = False

    def _reset(self, keep_watched_variables=False):
        self._entries: list = []
        self._tracked: set = set()
        self._keep: list = []            # watched tensors kept alive so ids stay valid
        if not keep_watched_variables:
            self._watched_vars: dict = {}    # id(var) -> var
        self._var_reads: dict = {}       # id(var) -> [read output tensors]

    # -- context management ------------------------------------------------
    def __enter__(self):
        if self._recording:
            raise ValueError("this GradientTape is already recording")
        self._recording = True
        tape_state.push(self)
        return self

    def __exit__(self, *exc):
        self._recording = False
        tape_state.remove(self)
        return False

    @contextlib.contextmanager
    def stop_recording(self):
        """Temporarily stop recording ops on this tape."""
        if not self._recording:
            raise ValueError("stop_recording() can only be used while the tape is recording")
        tape_state.remove(self)
        try:
            yield
        finally:
            tape_state.push(self)

    def reset(self):
        """Forget everything recorded so far."""
        self._reset()

    # -- watching ---------------------------------------------------------
    def watch(self, tensor):
        """Track a tensor, variable, or nested structure of them."""
        for t in nest.flatten(tensor):
            if _is_variable(t):
                self._watched_vars[id(t)] = t
            elif isinstance(t, Tensor):
                if not (t.dtype.is_floating):
                    continue  # like TF: non-float tensors cannot carry gradients
                self._tracked.add(id(t))
                self._keep.append(t)
            else:
                raise TypeError(f"GradientTape.watch: expected tensors or variables, got {type(t).__name__}")

    def watched_variables(self):
        return tuple(self._watched_vars.values())

    def _maybe_record(self, opdef, inputs, attrs, outputs):
        var = attrs.get("var") if opdef.name == "ReadVariableOp" else None
        if var is not None:
            self._record_read(var, outputs[0])
            return
        tracked = self._tracked
        for t in inputs:
            if id(t) in tracked:
                break
        else:
            return
        self._entries.append(_tuple_new(_TapeEntry, (opdef, inputs, outputs, attrs)))     # tape_state.new_entry
        for o in outputs:
            tracked.add(id(o))

    def _record_read(self, var, t):
        """Record `t`, a read of `var`, when the variable is watched (explicitly, or as an accessed
        trainable variable): eager reads call this directly (`Variable.value`)."""
        if id(var) not in self._watched_vars:
            if not (self._watch_accessed and var.trainable):
                return
            self._watched_vars[id(var)] = var
        reads = self._var_reads.get(id(var))
        if reads is None:
            self._var_reads[id(var)] = [t]
        else:
            reads.append(t)
        self._tracked.add(id(t))

    # -- differentiation ----------------------------------------------------
    def gradient(self, target, sources, output_gradients=None, unconnected_gradients="none"):
        """d(sum of target)/d(sources), same structure as `sources`."""
        if type(unconnected_gradients) is not str or unconnected_gradients != "none":    # the default: no check
            unconnected_gradients = _unconnected(unconnected_gradients)
        if self._used and not self._persistent:
            raise RuntimeError("A non-persistent GradientTape can only be used to compute one set of "
                               "gradients; use GradientTape(persistent=True) to call gradient() again.")
        was_recording = self._recording
        if was_recording:
            tape_state.remove(self)
        try:
            result = self._gradient(target, sources, output_gradients, unconnected_gradients)
        finally:
            if was_recording:
                tape_state.push(self)
        if not self._persistent:
            self._used = True
            self._reset(keep_watched_variables=True)     # as TF: watched_variables() still lists them
        return result

    def _gradient(self, target, sources, output_gradients, unconnected):
        targets, target_reads = [], {}
        for t in ((target,) if type(target) is Tensor else nest.flatten(target)):
            if _is_variable(t):     # a variable target is its value; d(v)/d(v) is the output gradient
                t = target_reads.setdefault(id(t), t.value())
            targets.append(t if type(t) is Tensor else convert_to_tensor(t))
        if output_gradients is None:
            tgrads = [_seed(t) for t in targets]
        else:
            tgrads = [convert_to_tensor(g, dtype=t.dtype) for g, t in zip(nest.flatten(output_gradients), targets)]
            if len(tgrads) != len(targets):
                raise ValueError(f"output_gradients has {len(tgrads)} entries for {len(targets)} targets")
        plain = type(sources) is list      # the common case: a flat list of sources
        if plain:
            for s in sources:
                if isinstance(s, (list, tuple, dict)):      # nest.is_nested
                    plain = False
                    break
        flat_sources = sources if plain else nest.flatten(sources)
        groups = []
        reads = self._var_reads
        for s in flat_sources:
            if getattr(s, "_is_variable", False):
                group = list(map(id, reads[id(s)])) if id(s) in reads else []
                if id(s) in target_reads:
                    group.append(id(target_reads[id(s)]))
                groups.append(group)
                floating = s._dtype.is_floating         # `dtype`, without the property's call
            elif isinstance(s, Tensor):
                groups.append([id(s)])
                floating = s.dtype.is_floating
            else:
                raise TypeError(f"GradientTape.gradient: sources must be tensors or variables, got "
                                f"{type(s).__name__}")
            if not floating:
                _warn_not_floating(s)
        grads = backprop(self._entries, targets, tgrads, groups)
        out = []
        for s, g in zip(flat_sources, grads):
            if g is None and unconnected == "zero":
                g = zeros_like(s.value() if _is_variable(s) else s)
            out.append(g)
        return out if plain else nest.pack_sequence_as(sources, out)

    def jacobian(self, target, sources, unconnected_gradients="none", experimental_use_pfor=False):
        """Full Jacobian: result[i] has shape target.shape + source_i.shape."""
        unconnected_gradients = _unconnected(unconnected_gradients)
        target = convert_to_tensor(target)
        if not target.shape.is_fully_defined():
            raise InvalidArgumentError(f"jacobian needs a target with a fully known shape, got {target.shape}")
        n = target.shape.num_elements()
        flat_sources = nest.flatten(sources)
        rows = [[] for _ in flat_sources]
        persistent, self._persistent = self._persistent, True
        try:
            for i in range(n):
                seed = constant(np.eye(1, n, i, dtype=target.dtype.as_numpy_dtype).reshape(
                    target.shape.as_list()))
                gs = self.gradient(target, flat_sources, output_gradients=seed,
                                   unconnected_gradients=unconnected_gradients)
                for r, g in zip(rows, gs):
                    r.append(g)
        finally:
            self._persistent = persistent
        out = []
        tshape = target.shape.as_list()
        for s, r in zip(flat_sources, rows):
            sval = s.value() if _is_variable(s) else s
            if any(g is None for g in r):
                out.append(None if unconnected_gradients == "none" else zeros(tshape + sval.shape.as_list(),
                                                                                sval.dtype))
                continue
            st = stack(r) if r else zeros([0] + sval.shape.as_list(), sval.dtype)
            out.append(reshape(st, tshape + sval.shape.as_list()))
        if not self._persistent:
            self._used = True
            self._reset(keep_watched_variables=True)
        return nest.pack_sequence_as(sources, out)
