"""User functions of a dataset (`map`, `filter`, `reduce`, `scan`), traced once through `@function`.

`StructuredFunction(fn, arg_spec, what)` compiles `fn` with the registered
graph compiler (`eager.compiler_hook.function_compiler()`: `@function` with
AutoGraph) and an `input_signature` made from the element spec, and traces it
right away, as `tf.data` does when the dataset is built: the Python body runs
once, and every element afterwards replays the compiled graph.  Inside a graph
being built (the staged form of a dataset loop) that traced graph is copied in
(`ConcreteFunction.inline`), so the Python does not run again.  Eagerly, `call_element` runs that graph
on the element's arrays directly (`ConcreteFunction.flat_call`): the element
already has the traced specs, so `@function`'s per-call work (cache key,
argument checks, tapes: tf.data's functions are never recorded) is skipped;
`flat_arrays` (arrays in, arrays out, no tensors made) serves a map over
tensor slices that `batch` stacks.

Arguments follow `tf.data`: an element that is exactly a `tuple` is unpacked
into positional arguments; a dict, a namedtuple or a tensor is one argument.
`output_spec` is the spec of the traced outputs (lists become tuples, Python
numbers tensors).  Elements that hold datasets (`window`) cannot be traced, so
those functions run in Python (TF builds a dataset graph there instead).

`dataset_function(fn)`: a `flat_map`/`interleave` function converted by
AutoGraph (`eager.compiler_hook.python_converter()`), so that its Python
`if`/`for` on tensors become graph ops where a staged loop calls it.
`dataset_probe(fn, element_spec, ...)`: the dataset a `flat_map`/`interleave`
function returns, built once on placeholders of the element spec inside a
trace, so its `element_spec` keeps the unknown dimensions of the input (a
dataset built on a zeros sample would report them as 0), and its nodes tell
the staged form which state an inner dataset carries.
"""
from __future__ import annotations

from .. import context as _context
from .. import nest
from ..compiler_hook import function_compiler, python_converter
from ..convert import constant
from ..errors import OperatorNotAllowedInGraphError
from ..tensor import Tensor
from ..tensor_spec import TensorSpec
from . import structure


def unpack(spec_or_value) -> bool:
    return type(spec_or_value) is tuple


def _has_datasets(spec) -> bool:
    return any(isinstance(s, structure.DatasetSpec) for s in nest.flatten(spec))


class StructuredFunction:
    """`fn` compiled for arguments of spec `arg_specs` (a tuple of per-argument specs)."""

    def __init__(self, fn, arg_specs: tuple, what: str):
        if not callable(fn):
            raise TypeError(f"{what}: expected a callable, got {type(fn).__name__}")
        self.python_function = fn
        self.what = what
        self.arg_specs = tuple(arg_specs)
        self.traced = not _has_datasets(self.arg_specs)
        if self.traced:
            self.compiled = function_compiler()(fn, input_signature=list(self.arg_specs))
            concrete = self.compiled.get_concrete_function()
            # a compiler whose concrete functions can be inlined lets staged loops reuse this trace;
            # otherwise the compiled function is called there, which runs its Python again
            self.inline = getattr(concrete, "inline", None)
            # eager elements already have the traced specs: run the graph on their arrays directly
            self._flat_call = getattr(concrete, "flat_call", None)
            # flat input arrays -> flat output arrays, for `batch` to stack (None: not every output a tensor)
            self.flat_arrays = concrete.flat_arrays if getattr(concrete, "returns_only_tensors", False) else None
            outputs = concrete.structured_outputs
            self.output_spec = _output_spec(outputs, what)
        else:
            self.compiled, self.inline, self._flat_call, self.flat_arrays = fn, None, None, None
            self.output_spec = None   # known after the first call

    def __call__(self, *args):
        if self.traced and not _context.executing_eagerly() and self.inline is not None:
            # staging a dataset loop: copy the graph traced when the dataset was built (no Python runs)
            return structure.normalize_output(self.inline(*args), self.what)
        return structure.normalize_output(self.compiled(*args), self.what)

    def call_element(self, element):
        """Call with one dataset element, unpacking a tuple into positional arguments."""
        if self._flat_call is not None and _context.executing_eagerly():
            t = type(element)
            if t is Tensor:
                arrays = [element._value]
            elif t is tuple and structure.is_flat_tuple(element):
                arrays = [x._value for x in element]
            else:
                arrays = [x._value for x in nest.flatten(element)]
            return structure.normalize_output(self._flat_call(arrays), self.what)
        return self(*element) if unpack(element) else self(element)


def _output_spec(outputs, what):
    if isinstance(outputs, list):
        outputs = tuple(outputs)

    def leaf(x):
        if hasattr(x, "shape") and hasattr(x, "dtype"):
            return TensorSpec(x.shape, x.dtype)
        if x is None:
            raise TypeError(f"{what}: the function returned None; dataset functions must return tensors "
                            f"(or tuples/dicts of them)")
        return structure.spec_of(structure.normalize(x, what))
    return nest.map_structure(leaf, outputs)


def element_function(fn, element_spec, what: str) -> StructuredFunction:
    """`fn` called per element (tuple elements unpacked into arguments)."""
    args = element_spec if unpack(element_spec) else (element_spec,)
    return StructuredFunction(fn, args, what)


def dataset_function(fn, what: str):
    """A `flat_map`/`interleave` function converted by AutoGraph (as TF converts them): it is called per
    element, also while a staged loop is built, where its `if`/`for` on tensors must become graph ops."""
    if not callable(fn):
        raise TypeError(f"{what}: expected a callable, got {type(fn).__name__}")
    return python_converter()(fn)


def dataset_probe(fn, element_spec, node_of, sample_of, what: str):
    """The node of the dataset `fn` returns for an element of `element_spec` (see the module docstring)."""
    if not callable(fn):
        raise TypeError(f"{what}: expected a callable, got {type(fn).__name__}")
    if _has_datasets(element_spec):         # window's datasets: called on a sample, in Python
        element = sample_of(element_spec)
        return node_of(fn(*element) if unpack(element) else fn(element), what)
    made = []

    def probe(*args):
        made.append(node_of(fn(*args), what))
        return constant(0)                  # what the trace returns does not matter, only what fn built
    args = element_spec if unpack(element_spec) else (element_spec,)
    try:
        function_compiler()(probe, input_signature=list(args)).get_concrete_function()
    except (OperatorNotAllowedInGraphError, NotImplementedError, TypeError, ValueError) as e:
        # fn needs concrete values (e.g. `repeat(int(x))`): it runs on a zeros sample, and eagerly only
        element = sample_of(element_spec)
        node = node_of(fn(*element) if unpack(element) else fn(element), what)
        node.untraceable = f"{type(e).__name__}: {e}"
        return node
    return made[-1]
