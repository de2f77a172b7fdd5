"""What `tracing.load` returns: `RestoredFunction`s (dispatch on saved signatures) in a `Loaded` object.

A `RestoredFunction` holds the concrete functions saved for one name.  A call
is matched against each saved call structure: same nesting, tensors (eager
`Tensor`, NumPy array or scalar) with the saved dtype and a compatible shape,
Python values equal to the traced ones (same type), the restored Variable
where a variable was passed.  Keyword arguments that name positional
parameters are moved into place first and omitted parameters get their saved
default values (JSON-able defaults are saved), so `f(x, training=True)`,
`f(x, True)` and `f(x)` (if `training=True` is the default) all match a trace
of any of these forms.  The first match runs; no
match raises TypeError listing the saved signatures.

Called eagerly, the compiled plan replays (through the tape-visible call op
when a GradientTape records, so gradients flow to restored variables).  Called
while a graph is being built (inside another `@function`, or under
`Graph.as_default()`), the saved GraphDef is imported inline into that graph.

Imports `numpy`, `eager`, `graph_runtime` and sibling modules.
"""
from __future__ import annotations

import math

import numpy as np

import eager as ek
from eager import context as _context
from eager import tape_state as _tape_state
from eager.tensor import Tensor

from eager.tensor_spec import TensorSpec

from graph_runtime.graph_import import import_graph_def

from ..call_op import call_recorded



class SavedInput:
    """Marker in a decoded call structure: the `index`-th tensor input, of `spec`."""

    __slots__ = ("index", "spec")

    def __init__(self, index: int, spec: TensorSpec):
        self.index = index
        self.spec = spec

    def __repr__(self):
        return f"<input {self.index}: {self.spec.short()}>"


class RestoredConcrete:
    """One saved trace: the rebuilt ConcreteFunction, its call structure and its GraphDef."""

    def __init__(self, cf, call_structure, graph_def, variables: dict, output_names: list, input_names: list):
        self.cf = cf
        self.call_structure = call_structure      # [args list, kwargs dict] with SavedInput/values/Variables
        self.graph_def = graph_def
        self.variables = variables
        self.output_names = output_names
        self.input_names = input_names

    def bind(self, call) -> list | None:
        """Tensor leaves of `call` (same structure as call_structure) in input order, or None."""
        slots: list = [None] * len(self.cf.inputs)
        if not _match(self.call_structure, call, slots):
            return None
        return slots


def _match(saved, got, slots) -> bool:
    if isinstance(saved, SavedInput):
        if isinstance(got, Tensor):
            dt, shape = got.dtype, got.shape
        elif isinstance(got, (np.ndarray, np.generic)):
            try:
                dt = ek.as_dtype(got.dtype)
            except (TypeError, ValueError):
                return False
            shape = np.shape(got)
        else:
            return False
        if dt is not saved.spec.dtype or not saved.spec.shape.is_compatible_with(shape):
            return False
        slots[saved.index] = got
        return True
    if getattr(saved, "_is_variable", False):
        return got is saved
    if isinstance(saved, dict):
        return isinstance(got, dict) and set(got) == set(saved) and all(_match(saved[k], got[k], slots)
                                                                        for k in saved)
    if isinstance(saved, tuple) and hasattr(type(saved), "_fields"):
        return (isinstance(got, tuple) and type(got).__name__ == type(saved).__name__
                and getattr(type(got), "_fields", None) == type(saved)._fields
                and all(_match(s, g, slots) for s, g in zip(saved, got)))
    if isinstance(saved, (list, tuple)):
        return (type(got) is type(saved) and len(got) == len(saved)
                and all(_match(s, g, slots) for s, g in zip(saved, got)))
    if type(got) is not type(saved):
        return False
    if type(saved) is float and math.isnan(saved):
        return math.isnan(got)
    return got == saved


def canonical_call(args: tuple, kwargs: dict, arg_names: list, defaults: dict) -> list:
    """[positional list, remaining kwargs]: keywords naming the next positional parameters are moved in,
    and omitted ones with a saved default are filled in, so equivalent calls compare equal."""
    args = list(args)
    kwargs = dict(kwargs)
    while len(args) < len(arg_names):
        name = arg_names[len(args)]
        if name in kwargs:
            args.append(kwargs.pop(name))
        elif name in defaults:
            args.append(defaults[name])
        else:
            break
    return [args, kwargs]


class RestoredFunction:
    """A loaded function: callable, dispatching on the saved input signatures."""

    def __init__(self, name: str, arg_names: list, defaults: dict, concretes: list):
        self._name = name
        self._arg_names = list(arg_names)
        self._defaults = dict(defaults)
        self._concretes = concretes          # list[RestoredConcrete]
        self.__name__ = name

    @property
    def concrete_functions(self) -> list:
        return [rc.cf for rc in self._concretes]

    def _select(self, args, kwargs):
        call = canonical_call(args, kwargs, self._arg_names, self._defaults)
        for rc in self._concretes:
            slots = rc.bind(call)
            if slots is not None:
                return rc, slots
        got = ", ".join([_describe(a) for a in args] + [f"{k}={_describe(v)}" for k, v in kwargs.items()])
        sigs = "\n".join("  " + rc.cf.pretty_printed_signature(verbose=False) for rc in self._concretes)
        raise TypeError(f"{self._name}: no saved signature matches the arguments ({got}). A loaded function only "
                        f"runs the signatures it was saved with (it cannot retrace without the Python source). "
                        f"Saved signatures:\n{sigs}")

    def __call__(self, *args, **kwargs):
        rc, slots = self._select(args, kwargs)
        if not _context.executing_eagerly():
            return self._call_in_graph(rc, slots)
        cf = rc.cf
        if _tape_state.any_recording():
            return cf._pack(call_recorded(cf, [ek.convert_to_tensor(x) for x in slots]))
        return cf._run([x._value if isinstance(x, Tensor) else np.asarray(x) for x in slots])

    def _call_in_graph(self, rc, slots):
        graph = _context.current()
        input_map = dict(rc.variables)
        for name, x in zip(rc.input_names, slots):
            input_map[name] = graph._as_graph_input(ek.convert_to_tensor(x))
        outs = import_graph_def(rc.graph_def, input_map=input_map, return_elements=list(rc.output_names),
                                name=self._name, graph=graph)
        return rc.cf._pack(outs)

    def get_concrete_function(self, *args, **kwargs):
        """The saved ConcreteFunction whose signature accepts these arguments (tensors or TensorSpecs)."""
        flat = ek.nest.flatten([list(args), kwargs])
        if any(isinstance(x, TensorSpec) for x in flat):
            for rc in self._concretes:
                specs = [x for x in ek.nest.flatten(rc.call_structure) if isinstance(x, SavedInput)]
                want = [x for x in flat if isinstance(x, TensorSpec)]
                if len(specs) == len(want) and all(s.spec == w for s, w in zip(specs, want)):
                    return rc.cf
            raise TypeError(f"{self._name}: no saved signature has the specs {want}")
        return self._select(args, kwargs)[0].cf

    def pretty_printed_concrete_signatures(self, verbose: bool = True) -> str:
        return "\n\n".join(rc.cf.pretty_printed_signature(verbose) for rc in self._concretes)

    def __repr__(self):
        return f"<RestoredFunction {self._name} ({len(self._concretes)} saved signatures)>"


def _describe(x) -> str:
    if isinstance(x, Tensor):
        return f"{x.dtype.name}{list(x.shape)}" if x.shape.dims is not None else x.dtype.name
    if isinstance(x, (np.ndarray, np.generic)):
        return f"ndarray {x.dtype}{list(np.shape(x))}"
    if isinstance(x, (list, tuple, dict)):
        return type(x).__name__ + "(...)"
    return f"{type(x).__name__} {x!r:.30}"


class Loaded:
    """The result of `tracing.load`: saved functions as attributes, restored variables.

    Callable directly when exactly one function was saved (or a Module's
    `__call__` was).  When a Module was saved, its variables keep their
    attribute paths, so `restore_checkpoint(loaded, ckpt)` accepts a
    checkpoint written by `save_checkpoint(module, ckpt)`.  `functions` maps
    every saved name to its RestoredFunction (names that clash with the
    attributes below are reachable only there).
    """

    _RESERVED = frozenset({"functions", "variables", "trainable_variables", "path", "saved_object"})

    def __init__(self, path: str, functions: dict, variables: dict, saved_object: dict, paths: dict = None):
        self.path = path
        self.functions = dict(functions)
        self._variables = dict(variables)
        self._checkpoint_paths = dict(paths or {})     # attribute path in the saved Module -> Variable
        self.saved_object = saved_object
        for name, fn in functions.items():
            if name not in self._RESERVED and not name.startswith("_"):
                setattr(self, name, fn)

    @property
    def variables(self) -> tuple:
        return tuple(self._variables.values())

    @property
    def trainable_variables(self) -> tuple:
        return tuple(v for v in self._variables.values() if v.trainable)

    def __call__(self, *args, **kwargs):
        if "__call__" in self.functions:
            return self.functions["__call__"](*args, **kwargs)
        if len(self.functions) != 1:
            raise TypeError(f"this saved object holds {len(self.functions)} functions "
                            f"({', '.join(sorted(self.functions))}); call one of them by name")
        (fn,) = self.functions.values()
        return fn(*args, **kwargs)

    def __repr__(self):
        return f"<Loaded {self.saved_object.get('type', '?')} from {self.path}: {', '.join(self.functions)}>"
