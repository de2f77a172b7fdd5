"""The op registry: every primitive op is declared here exactly once.

An `OpDef` holds everything any layer needs to know about an op:

- `name`: TensorFlow's op type name (`AddV2`, `MatMul`, ...).
- `kernel(*arrays, **attrs)`: the NumPy implementation.  Returns one array, or
  a tuple of arrays when `num_outputs != 1`.  It is the "CPU" entry of the
  kernel table `kernels` (device type -> kernel; `register_kernel` adds one);
  `kernel_for(opdef, device)` selects the kernel for a device string, for the
  compiler and (host CPU: `opdef.kernel`) eager dispatch.
- `infer(specs, attrs) -> list[Spec]`: static shape and dtype inference.  Each
  input `Spec` has `.shape` (tuple with None for unknown dims, or None for
  unknown rank), `.dtype` (DType) and `.value` (the NumPy value when the input
  is a known constant, else None).  Raise `InvalidArgumentError` on misuse.
- `grad(op, *output_grads) -> list`: the gradient rule, written with the public
  ops, so the same rule builds eager and symbolic gradients.  `op` offers
  `.inputs`, `.outputs`, `.attrs` and `.get_attr(name)`.  Returns one entry per
  input (a Tensor or None).  Output grads that are missing are zeros.
  `grad=GRADIENT_REGISTERED_LATER` declares a differentiable op whose rule a
  module above the op's own registers with `register_gradient(opdef, rule)`
  (TensorFlow's `RegisterGradient`): a rule that builds the op it
  differentiates (Case's gradient is a Case op) then imports the op's module
  instead of the other way round.
- `effect`: what running the op does besides computing its outputs, one of
  `EFFECTS`: "none" (pure: may be folded, merged, hoisted, dropped when
  unused), "input" (a graph input such as `Placeholder`: its value comes from
  a feed, so it is never folded or merged, but it has no side effect and is
  never a run target), "read" (reads state, `ReadVariableOp`: never folded,
  merged or moved, kept in program order with writes, but an unused read may
  be dropped and is never a run target) or "write" (changes the world:
  assigns, prints, random state, asserts: kept in program order, run even when
  nothing uses it).  `stateful` is `effect != "none"`.
- `alias`: the single output IS the single input (`Identity`,
  `StopGradient`): executors and fusion emit nothing for it.
- flags: `differentiable` (False: gradients through it are None),
  `elementwise` and `commutative` (for the optimizer and fusion),
  `rowwise_exact` (opt-in: applying the op once to a batch of rows gives
  the same bits as applying it to each row and stacking: each output element
  is a correctly rounded or exact function of the matching input elements,
  as IEEE-754 +, -, *, /, sqrt, comparisons and casts are; transcendental
  functions are not declared, their vectorized and scalar code paths may
  round differently; `eager.data` runs a `map` before `batch` on whole
  batches when every op of its function is declared so).
- `attrs`: the names of the op's attrs, when the kernel's signature does not
  say them (see below); None: derived from the kernel.
- `extra`: per-layer hooks, e.g. `extra["check_import"](raw_attrs)` raising
  ValueError when a GraphDef node's (still encoded) attrs are unacceptable
  from a file (graph_runtime.graph_import), or `extra["eager_grad"]`, the
  gradient rule on eager values for backprop's direct path (backprop.py).

The predicates over these traits (including ops that hold bodies) live in
`graph_runtime/op_traits.py`; nothing else keeps lists of op names for them.

Declared attrs (`attr_names(opdef, n_inputs)`): the attr names an op node with
`n_inputs` inputs may carry.  They are the kernel's keyword-capable parameters
not taken by the inputs (`Sum(x, axis=None, keepdims=False)`: `axis`,
`keepdims`), or the explicit `attrs` tuple.  A kernel taking `**kwargs` must
declare `attrs` (registration refuses it otherwise); a kernel that is not a
Python function of the project (a NumPy ufunc or function, which would accept
`out=`, `where=`, ...) takes no attrs unless declared.  GraphDef import rejects
any other attr name, and code generation emits only these names (strings of
the op's own code, never of the GraphDef), so no text from a file can become
generated source.

Imports only `errors` (and the standard library).
"""
from __future__ import annotations

import inspect
import keyword
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from .errors import InvalidArgumentError


@dataclass(eq=False)
class Spec:
    """Static description of one value: shape (tuple/None), dtype, constant value."""

    shape: Optional[tuple]
    dtype: Any
    value: Any = None

    def __repr__(self):
        return f"Spec({self.shape}, {self.dtype})"


EFFECTS = ("none", "input", "read", "write")


@dataclass(eq=False)
class OpDef:
    name: str
    kernel: Callable
    infer: Callable
    grad: Optional[Callable] = None
    num_outputs: int = 1
    effect: str = "none"             # one of EFFECTS (see the module docstring)
    alias: bool = False              # output is the input value (Identity, StopGradient)
    differentiable: bool = True
    elementwise: bool = False
    commutative: bool = False
    rowwise_exact: bool = False      # batched application == per-row application, bit for bit (see above)
    numpy_ufunc: Any = None          # the ufunc behind an elementwise kernel, for fusion
    doc: str = ""
    extra: dict = field(default_factory=dict)
    attrs: Optional[tuple] = None    # declared attr names (required when the kernel takes **kwargs)
    kernels: dict = field(default_factory=dict)   # device type ("CPU", ...) -> kernel; "CPU" is `kernel`

    def __post_init__(self):
        if self.effect not in EFFECTS:
            raise ValueError(f"op {self.name!r}: effect must be one of {EFFECTS}, got {self.effect!r}")
        self.kernels = dict(self.kernels)
        self.kernels.setdefault("CPU", self.kernel)

    @property
    def stateful(self) -> bool:
        """Not pure: never folded or merged (an input, a read or a write)."""
        return self.effect != "none"

    def __repr__(self):
        return f"<OpDef {self.name}>"


_REGISTRY: dict[str, OpDef] = {}

GRADIENT_REGISTERED_LATER = object()     # `grad=` of an op whose rule `register_gradient` attaches


class _UnregisteredGradient:
    """The gradient rule of an op declared with `GRADIENT_REGISTERED_LATER`, until one is registered."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __call__(self, op, *output_grads):
        raise NotImplementedError(f"op {self.name!r}: its gradient rule was declared to be registered later "
                                  f"(registry.register_gradient), but the module registering it was not imported")


def register(opdef: OpDef) -> OpDef:
    """Add an op to the registry; each name may be registered once."""
    if opdef.name in _REGISTRY:
        raise ValueError(f"op {opdef.name!r} is already registered")
    if opdef.grad is GRADIENT_REGISTERED_LATER:
        opdef.grad = _UnregisteredGradient(opdef.name)
    if opdef.differentiable and opdef.grad is None:
        raise ValueError(f"op {opdef.name!r} is differentiable but declares no gradient rule")
    if opdef.attrs is not None:
        bad = [a for a in opdef.attrs if not _is_identifier(a)]
        if bad:
            raise ValueError(f"op {opdef.name!r}: declared attr names must be Python identifiers, got {bad}")
    elif _takes_var_keywords(opdef.kernel):
        raise ValueError(f"op {opdef.name!r}: its kernel takes **kwargs, so it must declare its attr names "
                         f"(OpDef(attrs=(...)))")
    _REGISTRY[opdef.name] = opdef
    return opdef


def op(name: str, kernel: Callable, infer: Callable, grad: Optional[Callable] = None, **flags) -> OpDef:
    """Declare and register an op in one call: `ADD = op("AddV2", np.add, infer_broadcast, grad_add)`."""
    if grad is None and "differentiable" not in flags:
        flags["differentiable"] = False
    return register(OpDef(name=name, kernel=kernel, infer=infer, grad=grad, **flags))


def register_gradient(opdef: OpDef, grad: Callable) -> None:
    """Attach the rule of an op declared with `grad=GRADIENT_REGISTERED_LATER` (once)."""
    if not isinstance(opdef.grad, _UnregisteredGradient):
        raise ValueError(f"op {opdef.name!r} already has a gradient rule; only an op declared with "
                         f"grad=GRADIENT_REGISTERED_LATER gets one from register_gradient")
    opdef.grad = grad


def device_type(device: str) -> str:
    """The device type of a device string: "/gpu:0" and "/job:w/device:GPU:0" -> "GPU"; "" -> "CPU"."""
    for part in reversed(device.split("/")):
        if not part or part.split(":", 1)[0] in ("job", "replica", "task"):
            continue
        fields = part.split(":")
        kind = fields[1] if fields[0] == "device" and len(fields) > 1 else fields[0]
        return kind.upper()
    return "CPU"


def register_kernel(opdef: OpDef, device_type_name: str, kernel: Callable) -> None:
    """Give `opdef` its own kernel for a device type (same signature and results as the CPU kernel)."""
    kind = device_type_name.upper()
    opdef.kernels[kind] = kernel
    if kind == "CPU":
        opdef.kernel = kernel


def kernel_for(opdef: OpDef, device: str = "") -> Callable:
    """The kernel that runs `opdef` on `device` (a device string): the one place kernels are selected.

    Until placement exists every op runs on the host, so a device type without a kernel of its own
    uses the CPU entry (today's behaviour for `/gpu:0` requests).  Eager execution runs on the host
    CPU and calls `opdef.kernel`, which is `opdef.kernels["CPU"]` (kept as a field: the eager hot path).
    """
    if not device:
        return opdef.kernel
    return opdef.kernels.get(device_type(device), opdef.kernel)


def get(name: str) -> OpDef:
    try:
        return _REGISTRY[name]
    except KeyError:
        raise InvalidArgumentError(f"unknown op type {name!r}") from None


def lookup(name: str) -> Optional[OpDef]:
    return _REGISTRY.get(name)


def all_ops() -> list[OpDef]:
    return list(_REGISTRY.values())


# ------------------------------------------------------------------ declared attrs
def _is_identifier(name) -> bool:
    return type(name) is str and name.isidentifier() and not keyword.iskeyword(name)


def _parameters(kernel):
    try:
        return list(inspect.signature(kernel).parameters.values())
    except (TypeError, ValueError):
        return None


def _takes_var_keywords(kernel) -> bool:
    params = _parameters(kernel) if _python_kernel(kernel) else None
    return bool(params) and any(p.kind is p.VAR_KEYWORD for p in params)


def _python_kernel(kernel) -> bool:
    """A Python function (or partial of one) not from NumPy: its signature names its attrs."""
    fn = kernel.func if hasattr(kernel, "func") and hasattr(kernel, "keywords") else kernel
    return inspect.isfunction(fn) and not str(getattr(fn, "__module__", "") or "").startswith("numpy")


_ATTR_NAMES: dict = {}      # id(opdef) -> (opdef, positional parameter names, keyword-capable names)
_ATTR_TABLES: dict = {}     # (id(opdef), inputs that take parameters) -> (opdef, table)


def _kernel_params(opdef: OpDef) -> tuple:
    hit = _ATTR_NAMES.get(id(opdef))
    if hit is None or hit[0] is not opdef:
        if opdef.attrs is not None:
            positional, names = (), tuple(opdef.attrs)
        elif not _python_kernel(opdef.kernel):
            positional, names = (), ()
        else:
            params = _parameters(opdef.kernel) or []
            positional = tuple(p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD))
            names = tuple(p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY))
        hit = _ATTR_NAMES[id(opdef)] = (opdef, positional, tuple(n for n in names if _is_identifier(n)))
    return hit


def attr_names(opdef: OpDef, n_inputs: int) -> dict:
    """`{name: name}` of the attrs a node of `opdef` with `n_inputs` inputs may carry (see module docstring).

    Keys and values are the same strings, taken from the op's code (declaration or kernel signature), so
    callers emitting source look a name up and emit the value: text of a GraphDef never gets through.
    """
    _, positional, names = _kernel_params(opdef)
    n = min(max(int(n_inputs), 0), len(positional))
    hit = _ATTR_TABLES.get((id(opdef), n))
    if hit is None or hit[0] is not opdef:
        taken = set(positional[:n])
        hit = _ATTR_TABLES[(id(opdef), n)] = (opdef, {k: k for k in names if k not in taken})
    return hit[1]


def check_attr_names(opdef: OpDef, n_inputs: int, names) -> Optional[str]:
    """None when every name in `names` is a declared attr of the op, else a message naming the first bad one."""
    table = attr_names(opdef, n_inputs)
    for k in names:
        if type(k) is not str or k not in table:
            return _unknown_attr(opdef, table, k)
    return None


def check_call(opdef: OpDef, n_inputs: int, attrs: dict) -> Optional[str]:
    """None when a node with `n_inputs` inputs and `attrs` fits the op's kernel (number of inputs,
    required attrs), else a message saying what does not (for `create_op` and GraphDef import)."""
    kernel = opdef.kernel
    nin = getattr(kernel, "nin", None)
    if nin is not None and getattr(kernel, "nout", None) is not None:         # a NumPy ufunc
        return None if n_inputs == nin else f"takes {nin} input(s), got {n_inputs}"
    params = _parameters(kernel) if _python_kernel(kernel) else None
    if not params:
        return None
    try:
        inspect.Signature(params).bind(*range(n_inputs), **attrs)
    except TypeError as e:
        return f"{n_inputs} input(s) and attrs {sorted(attrs)} do not fit the op: {e}"
    return None


def attr_keywords(opdef: OpDef, n_inputs: int, attrs: dict, where: str = "") -> list:
    """`(keyword, value)` per attr, for generated calls: the keyword is the op's own declared name.

    InvalidArgumentError on an undeclared name (GraphDef import refuses those first: this is the
    second line of defence, where source is generated).
    """
    table = attr_names(opdef, n_inputs)
    out = []
    for k, v in attrs.items():
        kw = table.get(k) if type(k) is str else None
        if kw is None:
            raise InvalidArgumentError(f"{where or opdef.name}: {_unknown_attr(opdef, table, k)}; refusing to "
                                       f"generate code for it", op_name=where or opdef.name)
        out.append((kw, v))
    return out


def _unknown_attr(opdef: OpDef, table: dict, name) -> str:
    r = repr(name)
    r = r if len(r) <= 100 else r[:97] + "..."
    return f"unknown attr {r} for op {opdef.name} (its attrs: {', '.join(sorted(table)) or 'none'})"
