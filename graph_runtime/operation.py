"""`Operation` (a graph node) and `GraphTensor` (a symbolic tensor: one output of a node).

Invariants:
- An `Operation` is immutable once created: its inputs, attrs and outputs never
  change (passes build new graphs instead of editing nodes).
- `op._id` is the creation index inside its graph; every input and control input
  of an op was created before it, so creation order is a topological order.
- A `GraphTensor` is `eager.Tensor` with `_is_symbolic = True` and `_value = None`;
  it carries its static shape (`TensorShape`), dtype, producing op and output
  index, plus `_static_value` (a NumPy value when shape inference knows it, e.g.
  the output of a `Const`), used only for inference.
- Attrs may hold any Python value the op's kernel accepts; an attr may hold a
  `Graph` (or a list/tuple of graphs) as a subgraph body (functional control
  flow): printing, verification and GraphDef export descend into those.
- `op.location` is where the user created the op: the first stack frame outside
  the project's own packages (eager/, graph_runtime/, tracing/, autograph/).

Graph tensors ARE hashable (by identity), unlike eager tensors: `feed_dict`
keys are graph tensors, as in TensorFlow 1.  Equality stays elementwise (it
builds an `Equal` op), which is safe for dict lookups because identity-based
hashes never collide between live objects.

`GraphBase` is the base of `graph.Graph` that `attr_subgraphs` recognises, so
this module needs nothing above it.  Imports `numpy`, `eager`, `resources` and `run_config`
(the default session) only.
"""
from __future__ import annotations

import contextlib
import os
import sys
import threading
from typing import Any, Optional

import numpy as np

from eager.registry import Spec
from eager.shape import TensorShape
from eager.tensor import Tensor

from .resources import resolve_attrs
from .run_config import get_default_session

# ------------------------------------------------------------------ source locations
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_INTERNAL_PREFIXES: list = [os.path.join(_ROOT, p) + os.sep for p in ("eager", "graph_runtime", "tracing",
                                                                     "autograph")]
_MAX_USER_FRAMES = 8


_SKIPPED: dict = {}     # file name -> is it skipped in locations (framework or contextlib)?


def register_internal_path(prefix: str) -> None:
    """Treat frames whose file name starts with `prefix` as framework code (skipped in locations)."""
    if prefix not in _INTERNAL_PREFIXES:
        _INTERNAL_PREFIXES.append(prefix)
        _SKIPPED.clear()


class SourceLocation:
    """Where user code created an op: file, line and function name (immutable; equal by value).

    Captured locations compute `lineno` only when asked: CPython finds a frame's line by scanning its
    code object's line table from the start, so reading `f_lineno` at op creation would cost time
    proportional to the position in the function: quadratic tracing of long (e.g. unrolled) functions.
    """

    __slots__ = ("filename", "function", "_lineno", "_code", "_lasti", "recorded_here")

    def __init__(self, filename: str, lineno: int, function: str = ""):
        object.__setattr__(self, "filename", filename)
        object.__setattr__(self, "function", function)
        object.__setattr__(self, "_lineno", lineno)
        object.__setattr__(self, "_code", None)
        object.__setattr__(self, "_lasti", -1)
        # False: the location came as data (an imported GraphDef, another process); only a location this
        # process recorded from a running frame names a file whose lines may be shown (visualize_svg)
        object.__setattr__(self, "recorded_here", False)

    @classmethod
    def _of_frame(cls, frame) -> "SourceLocation":
        code = frame.f_code
        loc = cls.__new__(cls)
        object.__setattr__(loc, "filename", code.co_filename)
        object.__setattr__(loc, "function", code.co_name)
        object.__setattr__(loc, "_lineno", None)
        object.__setattr__(loc, "_code", code)
        object.__setattr__(loc, "_lasti", frame.f_lasti)
        object.__setattr__(loc, "recorded_here", True)
        return loc

    @property
    def lineno(self) -> int:
        if self._lineno is None:
            line = None
            for start, end, ln in self._code.co_lines():
                if start <= self._lasti < end:
                    line = ln
                    break
            object.__setattr__(self, "_lineno", line if line is not None else self._code.co_firstlineno)
            object.__setattr__(self, "_code", None)
        return self._lineno

    def __setattr__(self, name, value):
        raise AttributeError(f"SourceLocation is immutable (cannot set {name!r})")

    def _key(self) -> tuple:
        return (self.filename, self.lineno, self.function)

    def __reduce__(self):
        return (SourceLocation, self._key())

    def __eq__(self, other):
        return isinstance(other, SourceLocation) and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def __repr__(self):
        return f"SourceLocation(filename={self.filename!r}, lineno={self.lineno!r}, function={self.function!r})"

    def __str__(self):
        return f"{os.path.basename(self.filename)}:{self.lineno}"


def is_framework_file(filename: str) -> bool:
    for p in _INTERNAL_PREFIXES:
        if filename.startswith(p):
            return True
    return False


_outer = threading.local()      # .stop: (frame, the user frames above it), see `frames_stop_at`


@contextlib.contextmanager
def frames_stop_at(frame):
    """Within the block, `capture_user_frames` stops its walk at `frame` and appends the user frames above
    it, captured once here.  For a frame that stays suspended in a call for the whole block (the tracer's,
    around the traced function): the frames above it do not move meanwhile, so every op created in the
    block would find the same ones, and the walk's cost would follow the depth of the caller's stack
    (a test runner's or an application's) for each op."""
    prev = getattr(_outer, "stop", None)
    _outer.stop = (frame, _walk(frame, [], None, ()) if prev is None else _walk(frame, [], prev[0], prev[1]))
    try:
        yield
    finally:
        _outer.stop = prev


def capture_user_frames(skip: int = 1) -> tuple:
    """The innermost user frames (not inside the framework), innermost first."""
    try:
        f = sys._getframe(skip)
    except ValueError:  # pragma: no cover
        return ()
    stop = getattr(_outer, "stop", None)
    if stop is None:
        return _walk(f, [], None, ())
    return _walk(f, [], stop[0], stop[1])


def _walk(f, out: list, stop_frame, above: tuple) -> tuple:
    skipped = _SKIPPED
    while f is not None and len(out) < _MAX_USER_FRAMES:
        if f is stop_frame:
            out.extend(above[:_MAX_USER_FRAMES - len(out)])
            break
        fn = f.f_code.co_filename
        skip = skipped.get(fn)
        if skip is None:
            skip = skipped[fn] = is_framework_file(fn) or "contextlib" in fn
        if not skip:
            out.append(SourceLocation._of_frame(f))
        f = f.f_back
    return tuple(out)


# ------------------------------------------------------------------ tensors
class GraphTensor(Tensor):
    """A symbolic tensor: output `value_index` of operation `op` (value known only at run time)."""

    __slots__ = ("_op", "_index", "_shape", "_dtype", "_static_value")
    _is_symbolic = True
    __hash__ = object.__hash__   # identity hash: graph tensors are feed_dict keys

    def __init__(self, op: "Operation", index: int, shape: TensorShape, dtype, static_value=None):
        self._value = None
        self._op = op
        self._index = index
        self._shape = shape
        self._dtype = dtype
        self._static_value = static_value

    @property
    def op(self) -> "Operation":
        return self._op

    @property
    def value_index(self) -> int:
        return self._index

    @property
    def graph(self):
        return self._op._graph

    @property
    def name(self) -> str:
        return f"{self._op._name}:{self._index}"

    @property
    def dtype(self):
        return self._dtype

    @property
    def shape(self) -> TensorShape:
        return self._shape

    @property
    def ndim(self):
        return self._shape.rank

    @property
    def device(self) -> str:
        return self._op._device

    def set_shape(self, shape) -> None:
        """Refine the static shape (must be compatible with the inferred one)."""
        new = TensorShape(shape)
        if not self._shape.is_compatible_with(new):
            raise ValueError(f"set_shape: shape {new} is not compatible with the inferred shape {self._shape} of "
                             f"tensor {self.name!r}")
        self._shape = self._shape.merge_with(new)

    def consumers(self) -> list:
        """Operations (in creation order) that take this tensor as an input."""
        return [o for o in self._op._graph._ops if any(t is self for t in o._inputs)]

    def spec(self) -> Spec:
        return Spec(self._shape.dims, self._dtype, self._static_value)

    @property
    def numpy(self):
        """A symbolic tensor has no `numpy` (AttributeError, as TF's graph tensors): the graph says why and
        what to use instead (Session.run in a graph; eager.print or a return value in a function)."""
        raise AttributeError(self.graph._no_value_message(self))

    def __array__(self, dtype=None, copy=None):
        raise TypeError(f"Cannot convert the symbolic tensor {self.name!r} to a NumPy array: its value is only "
                        f"known when the graph runs (use Session.run)")

    def eval(self, feed_dict=None, session=None):
        """Run the default (or given) session and return this tensor's value."""
        sess = session or get_default_session()
        if sess is None:
            raise ValueError("Tensor.eval() needs a session: pass session=... or use `with sess.as_default():`")
        return sess.run(self, feed_dict)

    def __repr__(self):
        return f"<Tensor '{self.name}' shape={self._shape} dtype={self._dtype.name}>"

    __str__ = __repr__


# ------------------------------------------------------------------ operations
class Operation:
    """One node of a `Graph`: op type, inputs, attrs, outputs, control inputs."""

    __slots__ = ("_graph", "_name", "_opdef", "_inputs", "_outputs", "_control_inputs", "_attrs", "_device",
                 "_id", "_frames", "_colocate", "__weakref__")

    def __init__(self, graph, name: str, opdef, inputs: tuple, attrs: dict, control_inputs: tuple,
                 device: str, op_id: int, frames: tuple):
        self._graph = graph
        self._name = name
        self._opdef = opdef
        self._inputs = inputs
        self._attrs = attrs
        self._control_inputs = control_inputs
        self._device = device
        self._id = op_id
        self._frames = frames
        self._outputs: tuple = ()
        self._colocate: tuple = ()      # names of the ops it must share a device with (`Graph.colocate_with`)

    # -- description ---------------------------------------------------------
    @property
    def name(self) -> str:
        return self._name

    @property
    def type(self) -> str:
        return self._opdef.name

    @property
    def opdef(self):
        return self._opdef

    @property
    def graph(self):
        return self._graph

    @property
    def inputs(self) -> tuple:
        return self._inputs

    @property
    def outputs(self) -> tuple:
        return self._outputs

    def values(self) -> tuple:
        return self._outputs

    @property
    def control_inputs(self) -> tuple:
        return self._control_inputs

    @property
    def device(self) -> str:
        return self._device

    def colocation_groups(self) -> list:
        """TensorFlow's colocation groups: `["loc:@NAME", ...]` (the op's own name when it has none)."""
        return [f"loc:@{n}" for n in (self._colocate or (self._name,))]

    @property
    def attrs(self) -> dict:
        """The attribute dict (read-only by convention: ops are immutable).  A variable attr is stored as a
        resource handle (`_attrs`); this view gives the variable it names in the graph's resource table."""
        return resolve_attrs(self)

    def get_attr(self, name: str) -> Any:
        """One attr's value, variables resolved (as `attrs`)."""
        try:
            return resolve_attrs(self)[name]
        except KeyError:
            raise ValueError(f"Operation {self._name!r} ({self.type}) has no attr named {name!r}; it has "
                             f"{sorted(self._attrs)}") from None

    @property
    def location(self) -> Optional[SourceLocation]:
        """The user's file:line where this op was created (None if unknown)."""
        return self._frames[0] if self._frames else None

    @property
    def traceback(self) -> tuple:
        """User frames (innermost first) active when the op was created."""
        return self._frames

    @property
    def stateful(self) -> bool:
        return self._opdef.stateful

    def describe(self) -> str:
        """`` `dense/MatMul` (MatMul, created at model.py:12) `` for error messages."""
        loc = self.location
        where = f", created at {loc}" if loc is not None else ""
        return f"`{self._name}` ({self.type}{where})"

    def run(self, feed_dict=None, session=None):
        """Run this op in the default (or given) session."""
        sess = session or get_default_session()
        if sess is None:
            raise ValueError("Operation.run() needs a session: pass session=... or use `with sess.as_default():`")
        sess.run(self, feed_dict)

    def __repr__(self):
        return f"<Operation '{self._name}' type={self.type}>"


class GraphBase:
    """The base class of `graph.Graph`: what an attr holding a subgraph body is an instance of.

    It lets the modules below `graph.py` (printing, verification, GraphDef
    export) recognise bodies without importing `graph.py`.
    """

    __slots__ = ()


def attr_subgraphs(attrs: dict) -> list:
    """`(attr_name, graph)` for every attr holding a Graph (or a list/tuple of graphs): nested bodies."""
    if not attrs:
        return []
    out = []
    for k in sorted(attrs):
        v = attrs[k]
        if isinstance(v, GraphBase):
            out.append((k, v))
        elif isinstance(v, (list, tuple)):
            for i, g in enumerate(v):
                if isinstance(g, GraphBase):
                    out.append((f"{k}[{i}]", g))
    return out


def const_value_of(t) -> Optional[np.ndarray]:
    """The static value of a graph tensor when known at build time, else None."""
    return getattr(t, "_static_value", None)
