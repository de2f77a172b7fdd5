"""`Variable`: mutable state, read and written only through registered ops.

Storage is a NumPy array read and written only through eager/variable_storage.py
(its docstring gives the rule: reads take the variable's lock; an update writes
into the stored array only when nothing but the variable holds it, else it
stores a fresh array, so earlier reads stay valid snapshots).  `ReadVariableOp` and
`Assign*VariableOp` are stateful ops whose attribute `var` is the variable, so
the same ops run eagerly, in graphs and in traced functions (a graph stores a
resource handle in the attr and binds the variable when it compiles a plan:
graph_runtime/resources.py).  In a graph the
context's `create_variable(var, initial_value)` decides how initialization
happens (graph_runtime adds an initializer op; tracing lifts it).  A failed
assign (wrong shape or dtype) raises before anything is changed.

`scatter_nd_update/add/sub` write slices at coordinates (ResourceScatterNd*).
Updates are atomic per variable: every kernel that writes the stored array holds
the variable's `_lock` from the read of the old value to the store of the new
one, so concurrent `assign_add`s from many threads (eagerly, in Sessions, in
traced functions) never lose an increment.  Reads take the lock for the load
of the reference, so a reader sees either the old or the new value, whole,
even while an update writes in place.
"""
from __future__ import annotations

import itertools
import threading

import numpy as np

from . import context as _context
from . import native as _native
from . import variable_storage as _storage
from .variable_scatter import scatter_kernel
from .variable_storage import read_kernel, read_locked, uninitialized as _uninitialized
from . import tape_state as _tape_state
from .convert import convert_to_tensor, constant
from .dispatch import execute
from .dtypes import as_dtype
from .errors import InvalidArgumentError
from .registry import Spec, op
from .shape import TensorShape, as_shape
from .ops.gather import _indices
from .ops.math import cast
from .tensor import Tensor, TensorRef, own_copy

_ids = itertools.count(1)
_ctx_state = _context._state
_tape_local = _tape_state._state


def _shape(x):
    """np.shape(x), without its Python wrapper for NumPy values."""
    return x.shape if isinstance(x, (np.ndarray, np.generic)) else np.shape(x)


def _check_assignable(var, value, opname):
    if value.dtype != var._dtype.np_dtype:
        raise InvalidArgumentError(f"{opname}: cannot assign a {as_dtype(value.dtype).name} value to variable "
                                   f"{var.name} of dtype {var._dtype.name}", op_name=opname)
    if not var._shape.is_compatible_with(np.shape(value)):
        raise InvalidArgumentError(f"{opname}: cannot assign a value of shape {list(np.shape(value))} to "
                                   f"variable {var.name} of shape {var._shape}", op_name=opname)


def assign_kernel(value, var):
    _check_assignable(var, value, "AssignVariableOp")
    _storage.store(var, value)
    return value


def update_kernel(fn, opname, into_delta: bool = False):
    """The kernel `(delta, var)` of a variable update `var <- fn(var, delta)`.

    The new value goes into the stored array when nothing else holds it (eager/variable_storage.py),
    else, with `into_delta`, into `delta`'s buffer when it has the variable's shape and dtype: for
    callers that know nobody else holds `delta` (the memory pass, graph_runtime/passes/memory.py); else
    into a fresh array.  The same ufunc every way, so the same bits.
    """
    def kernel(delta, var):
        with var._lock:             # read, compute and store under one lock: no lost updates
            target = _storage.in_place_target(var, delta)
            if target is not None:
                return fn(target, delta, out=target)
            old = read_locked(var)
            if into_delta and type(delta) is np.ndarray and delta.shape == np.shape(old) and \
                    delta.dtype == old.dtype:
                new = fn(old, delta, out=delta)
                _storage.store_locked(var, new)
                return new
            new = fn(old, delta)
            if _shape(new) != _shape(old):
                raise InvalidArgumentError(f"{opname}: update of shape {list(np.shape(delta))} does not match "
                                           f"variable {var.name} of shape {list(np.shape(old))}", op_name=opname)
            new = new.astype(old.dtype, copy=False) if hasattr(new, "astype") else new
            _storage.store_locked(var, new)
            return new
    return kernel


def _infer_read(specs, attrs):
    v = attrs["var"]            # the Variable (eager) or, in a graph, its resource handle: both have these
    return [Spec(v.shape.dims, v.dtype)]


READ = op("ReadVariableOp", read_kernel, _infer_read, lambda op, *dy: [], effect="read")
ASSIGN = op("AssignVariableOp", assign_kernel, _infer_read, effect="write")
ASSIGN_ADD = op("AssignAddVariableOp", update_kernel(np.add, "AssignAddVariableOp"), _infer_read,
                effect="write", extra={"update_ufunc": np.add})
ASSIGN_SUB = op("AssignSubVariableOp", update_kernel(np.subtract, "AssignSubVariableOp"), _infer_read,
                effect="write", extra={"update_ufunc": np.subtract})


def locked(variables, fn):
    """`fn()` holding the locks of all `variables` (taken in creation order, so two updates never deadlock)."""
    ordered = sorted(variables, key=lambda v: v._unique_id)
    for v in ordered:
        v._lock.acquire()
    try:
        return fn()
    finally:
        for v in reversed(ordered):
            v._lock.release()


def gradient_descent_kernel(donate_delta: bool = False):
    """The kernel `(alpha, delta, var)` of var <- var - delta * alpha: Mul then AssignSubVariableOp's arithmetic.

    Into the stored array when nothing else holds it (eager/variable_storage.py) and the native SGD kernel
    does it in one pass (big arrays, eager/native.py, the same bits).  Otherwise the product goes into a
    temporary and the new value into that temporary: writing the product's difference back into the
    stored array instead was 2-4% slower on the quiet machine (MLP step, eagerly and under @function).
    The temporary is `delta`'s own buffer with `donate_delta` (for a caller that knows nobody else holds
    `delta`: the memory pass), else a fresh array: an input is never written otherwise.
    """
    opname = "ResourceApplyGradientDescent"

    def kernel(alpha, delta, var):
        with var._lock:
            old = _storage.load_locked(var)
            if old is None:
                _uninitialized(var)
            dt = var._dtype._np         # the stored array's dtype (assignments check it)
            if delta.dtype != dt or alpha.dtype != dt:
                raise InvalidArgumentError(f"{opname}: alpha ({as_dtype(alpha.dtype).name}) and delta "
                                           f"({as_dtype(delta.dtype).name}) must have the dtype of variable "
                                           f"{var.name} ({var._dtype.name})", op_name=opname)
            if alpha.ndim == 0 and type(delta) is np.ndarray and 3 * delta.nbytes >= _native.MIN_BYTES and \
                    delta.flags.c_contiguous and _native.use(3 * delta.nbytes, dt):   # small: one test
                old = None          # in_place_target counts the references to the stored array
                target = _storage.in_place_target(var, delta)
                if target is not None and delta.shape == target.shape:
                    _native.sgd_update(target, delta, alpha)
                    return target
                old = _storage.load_locked(var)
            own = donate_delta and type(delta) is np.ndarray
            step = np.multiply(delta, alpha, out=delta) if own else np.multiply(delta, alpha)
            if type(step) is np.ndarray and step.shape == (old.shape if type(old) is np.ndarray else np.shape(old)):
                new = np.subtract(old, step, out=step)    # `step` is a temporary nobody else holds
            else:
                new = np.subtract(old, step)
                if _shape(new) != _shape(old):
                    raise InvalidArgumentError(f"{opname}: update of shape {list(np.shape(delta))} does not match "
                                               f"variable {var.name} of shape {list(np.shape(old))}", op_name=opname)
            _storage.store_locked(var, new)
            return new
    return kernel


APPLY_GRADIENT_DESCENT = op("ResourceApplyGradientDescent", gradient_descent_kernel(), _infer_read, effect="write",
                            doc="var -= alpha * delta (inputs alpha, delta; attr `var`): plain SGD in one op.")


SCATTER_ND_UPDATE = op("ResourceScatterNdUpdate", scatter_kernel("update", "ResourceScatterNdUpdate"),
                       _infer_read, effect="write", doc="var[indices] = updates (attr `var`).")
SCATTER_ND_ADD = op("ResourceScatterNdAdd", scatter_kernel("add", "ResourceScatterNdAdd"), _infer_read,
                    effect="write", doc="var[indices] += updates, duplicates summed (attr `var`).")
SCATTER_ND_SUB = op("ResourceScatterNdSub", scatter_kernel("sub", "ResourceScatterNdSub"), _infer_read,
                    effect="write", doc="var[indices] -= updates, duplicates summed (attr `var`).")


class Variable:
    """A mutable tensor-valued container (see docs/api.md)."""

    _is_variable = True
    __array_priority__ = 100

    def __init__(self, initial_value=None, trainable=True, name=None, dtype=None, shape=None):
        if initial_value is None:
            raise ValueError("Variable: initial_value must be given")
        self._name = _context.current_name_scope() + (name or "Variable")
        self._unique_id = next(_ids)
        self._lock = threading.Lock()      # taken by every read and write of the stored array
        self.trainable = bool(trainable)
        self.initializer = None
        ctx = _context.current()
        if callable(initial_value) and not isinstance(initial_value, Tensor):
            with _context.init_scope() if ctx.is_eager else _nullcontext():
                initial_value = initial_value()
        init = convert_to_tensor(initial_value, dtype=dtype) if not isinstance(initial_value, Tensor) or \
            dtype is None else _cast_initial(initial_value, dtype)
        self._dtype = init.dtype
        self._shape = as_shape(shape) if shape is not None else init.shape
        if not self._shape.is_compatible_with(init.shape):
            raise ValueError(f"Variable {self._name}: initial value of shape {init.shape} does not match the "
                             f"declared shape {self._shape}")
        _storage.init(self, None)
        if ctx.is_eager:
            if init._is_symbolic:
                raise ValueError(f"Variable {self._name}: initial value is a graph tensor but no graph is "
                                 f"being built")
            _storage.init(self, init._value)
        else:
            ctx.create_variable(self, init)

    # -- description -------------------------------------------------------
    @property
    def name(self) -> str:
        return self._name + ":0"

    @property
    def dtype(self):
        return self._dtype

    @property
    def shape(self) -> TensorShape:
        return self._shape

    @property
    def ndim(self):
        return self._shape.rank

    def get_shape(self):
        return self._shape

    def ref(self):
        return TensorRef(self)

    __hash__ = None

    # -- reading ------------------------------------------------------------
    def value(self) -> Tensor:
        """Read the current value (a snapshot tensor; in graphs, a ReadVariableOp)."""
        v = _storage.load(self)
        if v is not None and _ctx_state.stack[-1].is_eager:
            # what `execute(READ, ...)` does eagerly (read_kernel: the stored array), without dispatching
            t = Tensor(v)
            if _tape_local.tapes:
                for tape in _tape_local.tapes:      # as tape_state.record does for a read, without its attrs
                    tape._record_read(self, t)
            return t
        return execute(READ, (), {"var": self})

    read_value = value
    _to_tensor = value

    def numpy(self):
        """A copy of the current value (a NumPy scalar for rank 0), as TensorFlow's `Variable.numpy()`:
        writing into it never changes the variable."""
        return own_copy(read_kernel(self))

    def __array__(self, dtype=None, copy=None):
        """`np.asarray(v)` / `np.array(v)`: a fresh, writeable copy of the current value, as TensorFlow's.
        `copy=False` raises ValueError (NumPy 2's contract: never a copy, an error when one is needed): a
        zero-copy array would be a snapshot that later assigns do not reach, not the variable; a read-only
        view of the current value without a copy is `np.asarray(v.value())`."""
        if copy is False:
            raise ValueError(f"np.asarray(variable {self.name!r}, copy=False): a variable converts to a copy of "
                             f"its current value (later assigns would not reach a view); use "
                             f"np.asarray(v.value()) for a read-only view of the current value")
        return np.array(read_kernel(self), dtype=dtype, copy=True)

    def is_initialized(self) -> bool:
        return _storage.load(self) is not None

    # -- raw storage (runtimes that snapshot and restore variables, e.g. a distributed task's undo log) ---
    def stored_array(self):
        """The stored NumPy array itself (no copy, None when uninitialized).  While the caller holds it no
        update writes into it (eager/variable_storage.py), so it is a stable snapshot that
        `replace_stored_array` can compare."""
        return _storage.load(self)

    def replace_stored_array(self, new, expected=None, check: bool = True) -> bool:
        """Store array `new` under the variable's lock, without recording anything; returns True.

        `expected` (an array `stored_array` returned): store only if the variable still holds exactly
        that array (compare-and-set), else change nothing and return False.  `check`: refuse a value
        of the wrong dtype or shape (InvalidArgumentError), as an assign does."""
        if check:
            _check_assignable(self, new, "AssignVariableOp")
        return _storage.compare_and_store(self, new, expected)

    # -- writing ------------------------------------------------------------
    def _as_update(self, value, opname):
        if isinstance(value, Tensor) or hasattr(value, "_to_tensor"):
            t = convert_to_tensor(value)
            if t.dtype is not self._dtype:
                raise InvalidArgumentError(f"{opname}: cannot assign a {t.dtype.name} value to variable "
                                           f"{self.name} of dtype {self._dtype.name}", op_name=opname)
            return t
        try:
            return constant(value, self._dtype)
        except TypeError as e:
            raise InvalidArgumentError(f"{opname}: {e} (variable {self.name} has dtype {self._dtype.name})",
                                       op_name=opname) from None

    def _update(self, opdef, value, read_value):
        t = self._as_update(value, opdef.name)
        out = execute(opdef, (t,), {"var": self})
        if _context.current().is_eager:
            return self if read_value else None
        return out

    def assign(self, value, use_locking=None, name=None, read_value=True):
        return self._update(ASSIGN, value, read_value)

    def assign_add(self, delta, use_locking=None, name=None, read_value=True):
        return self._update(ASSIGN_ADD, delta, read_value)

    def assign_sub(self, delta, use_locking=None, name=None, read_value=True):
        return self._update(ASSIGN_SUB, delta, read_value)

    def scatter_nd_update(self, indices, updates, name=None):
        """Write `updates` at the coordinates in the last dimension of `indices` (atomic, like every update)."""
        return self._scatter(SCATTER_ND_UPDATE, indices, updates)

    def scatter_nd_add(self, indices, updates, name=None):
        return self._scatter(SCATTER_ND_ADD, indices, updates)

    def scatter_nd_sub(self, indices, updates, name=None):
        return self._scatter(SCATTER_ND_SUB, indices, updates)

    def _scatter(self, opdef, indices, updates):
        out = execute(opdef, (_indices(indices, opdef.name), self._as_update(updates, opdef.name)), {"var": self})
        return self if _context.current().is_eager else out

    def __repr__(self):
        v = _storage.load(self)
        if v is None:
            return f"<Variable '{self.name}' shape={self._shape} dtype={self._dtype.name} (uninitialized)>"
        return (f"<Variable '{self.name}' shape={tuple(np.shape(v))} dtype={self._dtype.name}, "
                f"numpy={np.asarray(v)!r}>")

    def __bool__(self):
        return bool(self.value())

    def __format__(self, format_spec):
        return format(self.value(), format_spec)

    def __float__(self):
        return float(read_kernel(self))

    def __int__(self):
        return int(read_kernel(self))

    def __index__(self):
        return int(read_kernel(self))

    def __len__(self):
        return len(self.value())

    def __iter__(self):
        return iter(self.value())

    def __deepcopy__(self, memo):
        return self


class _nullcontext:
    def __enter__(self):
        return None

    def __exit__(self, *a):
        return False


def _cast_initial(t, dtype):
    return cast(t, dtype)
