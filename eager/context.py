"""The execution-context stack: who receives an op when it is dispatched.

The bottom of every thread's stack is the eager context (run ops now).  Graph
building (`graph_runtime`) pushes a `Context`: the declared protocol below,
every method `eager` calls on a context that is not eager (graph_runtime's
`GraphBuilder`, the base of every `Graph`, implements it; `push` refuses
anything else).  `eager` never imports the code that pushes those contexts.
Imports nothing from the project.
"""
from __future__ import annotations

import abc
import contextlib
import threading


class Context(abc.ABC):
    """What a graph-building context provides to `eager` (dispatch, variables, control flow).

    `eager.dispatch.execute` hands every op to `add_op` when the context on top of the
    stack is not eager; `Variable` asks `create_variable`; `eager.cond` / `while_loop` /
    `switch_case` trace their callables with `trace_body` / `trace_bodies` and dispatch one
    If / While / Case op holding the bodies (eager/staged_control_flow.py).
    """

    is_eager = False

    @abc.abstractmethod
    def add_op(self, opdef, inputs, attrs, name=None):
        """Stage one op; its output tensor (a tuple for ops whose `num_outputs` is not 1)."""

    @abc.abstractmethod
    def add_node(self, opdef, inputs, attrs, name=None):
        """Stage one op and return the operation itself (ops without outputs: prints, asserts, writes)."""

    @abc.abstractmethod
    def create_variable(self, var, init_tensor) -> None:
        """Make `var` (a new `Variable`) part of the graph, initialized from `init_tensor`."""

    @abc.abstractmethod
    def device(self, device_name):
        """A context manager: ops created in the block request `device_name` (`eager.device` in a graph)."""

    @abc.abstractmethod
    def trace_body(self, name: str, fn, make_args):
        """Trace `fn(*make_args(body))` into a new body of this graph; returns `(body, fn's result)`.

        The body is itself a context (current while `fn` runs) with `inputs` (`add_input(dtype,
        shape, name)` appends one), settable `outputs`, `captures` (the outer tensors its trailing
        inputs stand for; `capture(t)` adds one, or returns `t` when it is the body's own) and
        `has_effects()`.  Tapes are paused while tracing (the op as a whole is recorded)."""

    @abc.abstractmethod
    def trace_bodies(self, parts: list) -> list:
        """Trace bodies that run in turn, repeatedly (a loop's cond and body): `parts` lists
        `(name, fn, make_args)`; returns the bodies (see `trace_body`)."""


class EagerContext:
    """Run every op immediately with its NumPy kernel."""

    is_eager = True

    def __repr__(self):
        return "<EagerContext>"


EAGER = EagerContext()


class _State(threading.local):
    def __init__(self):
        self.stack = [EAGER]


_state = _State()


def current():
    """The context on top of this thread's stack."""
    return _state.stack[-1]


def executing_eagerly() -> bool:
    """True when ops run immediately (no graph is being built on this thread)."""
    return _state.stack[-1].is_eager


def graphs_being_built() -> list:
    """The graph-building contexts on top of this thread's stack, innermost last (none when eager)."""
    stack = _state.stack
    i = len(stack)
    while i > 0 and not stack[i - 1].is_eager:
        i -= 1
    return stack[i:]


def push(ctx) -> None:
    """Put `ctx` (a `Context`, or `EAGER`) on top of this thread's stack."""
    if ctx is not EAGER and not isinstance(ctx, Context):
        raise TypeError(f"push: {ctx!r} does not implement eager.context.Context")
    _state.stack.append(ctx)


def pop(ctx) -> None:
    top = _state.stack[-1]
    if top is not ctx:
        raise RuntimeError(f"context stack corrupted: expected {ctx!r} on top, found {top!r}")
    _state.stack.pop()


@contextlib.contextmanager
def scope(ctx):
    """`with scope(ctx):` makes `ctx` the current context for the block."""
    push(ctx)
    try:
        yield ctx
    finally:
        pop(ctx)


@contextlib.contextmanager
def init_scope():
    """Run the block eagerly even while a graph is being built (variable init)."""
    push(EAGER)
    try:
        yield
    finally:
        pop(EAGER)


@contextlib.contextmanager
def device(device_name):
    """`with eager.device("/cpu:0"):` (TF's `tf.device`), usable everywhere.

    While a graph is being built (a traced function, a `Graph.as_default()` block) it is that graph's
    device scope: the ops created in the block request the device.  Eagerly every op runs on the host
    CPU, as TensorFlow's eager soft placement would run them on a CPU-only machine, so the block changes
    nothing; a device function (a callable) is refused eagerly, as in TF.
    """
    ctx = current()
    if not ctx.is_eager:
        with ctx.device(device_name):
            yield
        return
    if callable(device_name) and not hasattr(device_name, "to_string"):
        raise RuntimeError("eager.device does not support device functions when executing eagerly")
    if device_name is not None and not isinstance(device_name, str) and not hasattr(device_name, "to_string"):
        raise TypeError(f"eager.device expects a device string, a DeviceSpec or None, got "
                        f"{type(device_name).__name__}")
    yield


# ---------------------------------------------------------------- name scopes
def _name_stack():
    st = getattr(_state, "names", None)
    if st is None:
        st = _state.names = []
    return st


@contextlib.contextmanager
def name_scope(name: str):
    """Prefix the names of ops and variables created in the block with `name/`.

    As in TensorFlow, `''` resets the block to the root scope, and a name
    ending in '/' (e.g. one `current_name_scope()` returned) is absolute: the
    block re-enters that scope instead of nesting in the current one.
    """
    if not isinstance(name, str):
        raise ValueError(f"name_scope needs a string, got {name!r} (a {type(name).__name__})")
    if not name or name.endswith("/"):
        with absolute_name_scope(name) as scope:
            yield scope
        return
    st = _name_stack()
    st.append(name.lstrip("/"))
    try:
        yield current_name_scope()
    finally:
        st.pop()


def current_name_scope() -> str:
    """The active prefix, e.g. 'dense/' (empty string at top level)."""
    st = _name_stack()
    return "".join(n + "/" for n in st)


@contextlib.contextmanager
def absolute_name_scope(full_name: str):
    """Make `full_name` ('outer/inner') the whole active scope for the block (not nested in the current one)."""
    st = _name_stack()
    saved = list(st)
    st[:] = [p for p in full_name.strip("/").split("/") if p]
    try:
        yield current_name_scope()
    finally:
        st[:] = saved
