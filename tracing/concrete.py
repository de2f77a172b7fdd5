"""`ConcreteFunction`: one traced graph plus its compiled replay plan.

`trace_concrete(function, args, kwargs, specs, allow_variable_creation)` runs
the Python function once inside a `FuncGraph`: each tensor leaf of the call
(eager tensor, ndarray or TensorSpec) becomes a placeholder, Python leaves are
passed as they are, variables are used by reference, and an argument whose
trace type passes tensors (`trace_type.py`: a dataset's handle) gets one
placeholder per tensor, fed from the argument at every call.  Stateful ops are kept as
targets so they run on every call, in creation (program) order.  Variables
created while tracing are initialized right away ("lifted"): their initial
value is computed from the trace graph, and those initializer ops are not
replayed.  The graph is then optimized and compiled to an `Executable`
(graph_runtime/runtime.py, what Sessions run too) that takes the flat list of
argument arrays and returns the flat tuple of output arrays, naming the op and
the user's line when a kernel fails.
Every output leaf but None becomes a tensor (a Python `2` is returned as an
int32 scalar tensor, as TensorFlow does); the structure (lists, tuples, dicts,
namedtuples) is kept.
"""
from __future__ import annotations

import sys
import time
import types

import numpy as np

import eager as ek
from eager import tape_state as _tape_state
from eager.errors import OpError
from eager.tensor import Tensor
from graph_runtime.op_traits import run_targets
from graph_runtime.operation import frames_stop_at, is_framework_file
from graph_runtime import placeholder

from .inline import inline as _inline
from graph_runtime.pipeline import prepare
from graph_runtime.runtime import Executable, request_for

from .call_op import call_recorded
from .func_graph import FuncGraph, inline_only_plan, leaf_spec, placeholder_name, traced_value
from .function_type import FunctionType, Literal
from .retrace_log import PhaseTimes
from .signature import describe
from .trace_type import component_arrays, component_tensors, serves, tracing_type
from eager.tensor_spec import TensorSpec



def _is_tensor_leaf(x) -> bool:
    return isinstance(x, (Tensor, np.ndarray, np.generic, TensorSpec))


def _flat_call(args, kwargs) -> list:
    if kwargs:
        return ek.nest.flatten([list(args), {k: kwargs[k] for k in sorted(kwargs)}])
    return ek.nest.flatten(list(args))


class ConcreteFunction:
    """A traced graph with fixed input specs; callable with tensors of those specs."""

    def __init__(self, name, graph, inputs, input_specs, structured_input_signature, outputs,
                 structured_outputs, output_template, executable, nodes_before, nodes_after, python_function=None):
        self._name = name
        self.graph = graph
        self.inputs = inputs                  # placeholders, in flat argument order
        self._input_specs = input_specs
        self.structured_input_signature = structured_input_signature
        self.outputs = outputs                # fetched graph tensors
        self.structured_outputs = structured_outputs
        self._output_template = output_template
        self._executable = executable         # of the traced graph: argument arrays -> output arrays
        self._single = (len(output_template) == 1 and output_template[0][0] == "t"
                        and not ek.nest.is_nested(structured_outputs))
        # a flat tuple or list of tensors is packed without nest (eager.data calls this once per element)
        self._flat_type = type(structured_outputs) if type(structured_outputs) in (tuple, list) and all(
            k == "t" for k, _ in output_template) and len(output_template) == len(structured_outputs) else None
        # one tensor in, one tensor out: `Function.__call__` runs the plan itself (see `_run`)
        self._one_in_one_out = self._single and len(inputs) == 1
        self.nodes_before = nodes_before
        self.nodes_after = nodes_after
        self._hits = 0
        self._hits_seen = 0     # the owning Function's LRU bookkeeping (hits at its last trace, that trace)
        self._used_at = 0
        self._trace_record = None
        self._python_function = python_function

    phases = None       # PhaseTimes of the trace (or load) that built it: where its first call's time went
    _components = False  # some argument passes tensors through its trace type (see the module docstring)

    # -- calling ---------------------------------------------------------------
    _tape_info = None

    def _call(self, args, kwargs):
        if _tape_state.any_recording():
            return self._call_recorded(args, kwargs)
        arrays = [a._value for a in args if type(a) is Tensor]
        if kwargs or len(arrays) != len(args) or len(arrays) != len(self.inputs):
            arrays = []
            for x in _flat_call(args, kwargs):
                if isinstance(x, Tensor):
                    arrays.append(x._value)
                elif isinstance(x, (np.ndarray, np.generic)):
                    arrays.append(np.asarray(x))
                elif self._components and tracing_type(x) is not None:
                    arrays.extend(component_arrays(x))
        return self._run(arrays)

    def _call_recorded(self, args, kwargs):
        inputs = []
        for x in _flat_call(args, kwargs):
            if _is_tensor_leaf(x):
                inputs.append(ek.convert_to_tensor(x))
            elif self._components and tracing_type(x) is not None:
                inputs.extend(component_tensors(x))
        outs = call_recorded(self, inputs)
        return self._pack(outs)

    def _pack(self, tensors):
        if self._single:
            return tensors[0]
        out = [tensors[ref] if kind == "t" else ref for kind, ref in self._output_template]
        return ek.nest.pack_sequence_as(self.structured_outputs, out)

    @property
    def _plan(self):
        """The compiled plan (its steps and generated source, for tests and benchmarks)."""
        return self._executable.plan

    def _run(self, arrays):
        ex = self._executable
        try:                    # Executable.call, one frame less: the hot path of a traced call
            results = ex.fn(*arrays)
        except Exception as e:
            raise ex.map_error(e) from None
        if self._single:
            return Tensor(results[0])
        if self._flat_type is not None:
            return self._flat_type([Tensor(results[ref]) for _, ref in self._output_template])
        # template entries: ("t", fetch index) or ("c", a Python value returned as is)
        out = [Tensor(results[ref]) if kind == "t" else ref for kind, ref in self._output_template]
        return ek.nest.pack_sequence_as(self.structured_outputs, out)

    function_type = None    # FunctionType: a TensorSpec or Literal[value] per parameter (None when unknown)

    def __call__(self, *args, **kwargs):
        """Call with tensors matching this function's input specs, and the traced Python values (checked)."""
        if self.function_type is not None:
            tensors = self.function_type.bind(args, kwargs, len(self.inputs))
        else:
            flat = [x for x in _flat_call(args, kwargs) if _is_tensor_leaf(x)]
            if len(flat) != len(self.inputs):
                raise TypeError(f"{self._name}: expected {len(self.inputs)} tensor arguments, got {len(flat)}")
            tensors = [ek.convert_to_tensor(x) for x in flat]
            for t, spec in zip(tensors, self._input_specs):
                if not spec.is_compatible_with(t):
                    raise TypeError(f"{self._name}: argument {t.dtype.name}{t.shape} is not compatible with "
                                    f"{spec!r}")
        if _tape_state.any_recording():     # differentiable, as a call through the Function is
            return self._pack(call_recorded(self, tensors))
        return self._run([t._value for t in tensors])

    def flat_call(self, arrays: list):
        """The outputs on flat input arrays (NumPy values of the traced specs, in `inputs` order), neither
        checked nor recorded by a tape: `eager.data` runs a dataset's map function per element this way."""
        return self._run(arrays)

    def flat_arrays(self, arrays: list) -> list:
        """`flat_call`'s outputs as NumPy arrays in flat (nest) order, no tensors made; only for a function
        whose outputs are all tensors (`returns_only_tensors`).  `eager.data` stacks a map's per-element
        outputs into batches this way."""
        results = self._executable.call(*arrays)
        return [results[ref] for _, ref in self._output_template]

    @property
    def returns_only_tensors(self) -> bool:
        return all(kind == "t" for kind, _ in self._output_template)

    def inline(self, *args, **kwargs):
        """While another graph is being built: this function's traced ops copied into it on these
        arguments, without running the Python again (`inline.py`)."""
        return self._pack(_inline(self, [x for x in _flat_call(args, kwargs) if _is_tensor_leaf(x)]))

    # -- introspection -----------------------------------------------------------
    def _accepts(self, args, kwargs) -> bool:
        """Do these call arguments fit this trace (for relaxed/None-dim lookups)?"""
        return self._accept_key is not None and self._accept_key(args, kwargs)

    _accept_key = None

    def _is_more_specific_than(self, other: "ConcreteFunction") -> bool:
        return all(a.is_subtype_of(b) for a, b in zip(self._input_specs, other._input_specs))

    def _matches_specs(self, args, kwargs=None) -> bool:
        """Was this trace made for exactly these specs and Python values (get_concrete_function reuse)?"""
        traced = getattr(self, "_traced_call", None)
        if traced is not None:
            call = [list(args), dict(kwargs or {})]
            if not ek.nest.same_structure(ek.nest.lists_for_sequences(call), ek.nest.lists_for_sequences(traced)):
                return False
            for x, t in zip(ek.nest.flatten(call), ek.nest.flatten(traced)):
                if isinstance(t, TensorSpec) != _is_tensor_leaf(x):
                    return False
                if not isinstance(t, TensorSpec) and not Literal(t).accepts(x):
                    return False
        flat = [x for x in ek.nest.flatten([list(args), dict(kwargs or {})]) if _is_tensor_leaf(x)]
        specs = [x if isinstance(x, TensorSpec) else TensorSpec(np.shape(x) if not isinstance(x, Tensor)
                                                                else x.shape, ek.as_dtype(x.dtype)) for x in flat]
        return len(specs) == len(self._input_specs) and all(a == b for a, b in zip(specs, self._input_specs))

    def pretty_printed_signature(self, verbose: bool = True) -> str:
        args = ", ".join(self.structured_input_signature)
        head = f"{self._name}({args})"
        if not verbose:
            return head
        outs = ", ".join(f"{t.dtype.name}{t.shape}" for t in self.outputs) or "()"
        return f"{head}\n  Returns: {outs}"

    def __repr__(self):
        return f"<ConcreteFunction {self.pretty_printed_signature(verbose=False)}>"


# ------------------------------------------------------------------ tracing
def _make_acceptor(leaves, specs):
    """A predicate: do call arguments fit this trace (same Python leaves, compatible tensors)?"""
    template = []
    it = iter(specs)
    for x in leaves:
        if _is_tensor_leaf(x):
            template.append(("t", next(it)))
        elif getattr(x, "_is_variable", False):
            template.append(("v", x))
        elif tracing_type(x) is not None:
            template.append(("tt", tracing_type(x)))
        else:
            template.append(("p", (type(x), x)))

    def accepts(args, kwargs) -> bool:
        flat = _flat_call(args, kwargs)
        if len(flat) != len(template):
            return False
        for x, (kind, ref) in zip(flat, template):
            if kind == "t":
                if not _is_tensor_leaf(x) or isinstance(x, TensorSpec):
                    return False
                dt = x.dtype if isinstance(x, Tensor) else ek.as_dtype(np.asarray(x).dtype)
                if dt is not ref.dtype or not ref.shape.is_compatible_with(np.shape(x) if not isinstance(x, Tensor)
                                                                            else x.shape):
                    return False
            elif kind == "v":
                if x is not ref:
                    return False
            elif kind == "tt":
                if not serves(ref, x):
                    return False
            else:
                try:
                    if type(x) is not ref[0] or x != ref[1]:
                        return False
                except Exception:
                    return False
        return True
    return accepts


_LAZY = (types.GeneratorType, types.CoroutineType, types.AsyncGeneratorType)


def _reject_lazy_result(result, python_function, name) -> None:
    """A generator (or coroutine) result would run its body after tracing ends: TypeError, as in TF."""
    if not isinstance(result, _LAZY):
        return
    result.close()
    code = getattr(getattr(python_function, "__wrapped__", python_function), "__code__", None)
    where = f" (defined at {code.co_filename}:{code.co_firstlineno})" if code is not None else ""
    raise TypeError(f"{name}{where} returned a {type(result).__name__}: functions traced by @function must "
                    f"return tensors, nested structures of tensors, or None. A generator's body runs lazily, "
                    f"after tracing has ended, so it cannot be traced; collect the values in a list and return "
                    f"them (e.g. eager.stack(values)) instead.")


def _at_user_line(exc, function_name):
    """The same OpError, its message ending with the user's file:line where the failing op was built."""
    where = None
    tb = exc.__traceback__
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename
        if not is_framework_file(filename) and "contextlib" not in filename:
            where = f"{filename}:{tb.tb_lineno}"
        tb = tb.tb_next
    if where is None or where in exc.message:
        return exc
    new = type(exc)(f"{exc.message} (while tracing {function_name}, at {where})", exc.op_name)
    new.__traceback__ = exc.__traceback__
    return new


def _output_to_tensor(name, result, index, leaf):
    """A Python output leaf as a (Const) tensor, as TensorFlow converts every non-None output."""
    try:
        return ek.convert_to_tensor(leaf)
    except (TypeError, ValueError) as e:
        path = ek.nest.flatten_with_paths(result, "output")[index][0]
        raise TypeError(f"{name}: a traced function must return tensors, values convertible to tensors, or None "
                        f"(in lists, tuples, dicts and namedtuples); {path} is a {type(leaf).__name__} that cannot "
                        f"be converted: {e}") from None


def trace_concrete(function, args, kwargs, specs, allow_variable_creation):
    """Trace `function` for this call; returns (ConcreteFunction, created_variables)."""
    name = function._name
    leaves = _flat_call(args, kwargs)
    tensor_leaves = [x for x in leaves if _is_tensor_leaf(x)]
    if specs is not None and len(specs) != len(tensor_leaves):
        raise TypeError(f"{name}: {len(tensor_leaves)} tensor arguments for {len(specs)} signature entries")
    infos, _ = describe(args, kwargs, function._arg_names)
    tensor_paths = [i.path for i in infos if i.kind == "tensor"]
    typed_paths = iter([i.path for i in infos if i.kind == "trace type"])
    t_start = time.perf_counter()
    phases = PhaseTimes()
    graph = FuncGraph(name, allow_variable_creation)
    used: set = set()
    placeholders, input_specs, tensor_specs = [], [], []
    with graph.as_default():
        new_leaves = []
        k = 0
        for x in leaves:
            if _is_tensor_leaf(x):
                spec = leaf_spec(x, None if specs is None else specs[k])
                path = tensor_paths[k] if k < len(tensor_paths) else f"arg{k}"
                ph = placeholder(spec.dtype, spec.shape.dims, name=placeholder_name(path, used))
                placeholders.append(ph)
                input_specs.append(spec)
                tensor_specs.append(spec)
                new_leaves.append(ph)
                k += 1
            else:
                new_leaves.append(traced_value(x, typed_paths, used, placeholders, input_specs))
        structure = [list(args), {kk: kwargs[kk] for kk in sorted(kwargs)}] if kwargs else list(args)
        rebuilt = ek.nest.pack_sequence_as(structure, new_leaves)
        call_args, call_kwargs = (rebuilt[0], rebuilt[1]) if kwargs else (rebuilt, {})
        try:
            t0 = time.perf_counter()
            python_callable = function._python_callable()       # autograph conversion, cached after the first
            phases.add("autograph", time.perf_counter() - t0)
            with frames_stop_at(sys._getframe()):     # ops' locations: the frames above are walked once
                result = python_callable(*call_args, **call_kwargs)
        except OpError as e:
            raise _at_user_line(e, name) from None
        finally:
            graph.tracing_done = True
        _reject_lazy_result(result, function.python_function, name)
        fetches, template = [], []
        out_leaves = ek.nest.flatten(result)
        for leaf in out_leaves:
            if getattr(leaf, "_is_variable", False):
                leaf = leaf.value()
            if leaf is None:
                template.append(("c", None))
                continue
            if not isinstance(leaf, Tensor):
                leaf = _output_to_tensor(name, result, len(template), leaf)
            t = leaf if (leaf._is_symbolic and leaf.graph is graph) else graph.capture(leaf)
            template.append(("t", len(fetches)))
            fetches.append(t)
    targets = run_targets(graph, graph.lifted_ops)
    nodes_before = len(graph.get_operations())
    phases.add("trace", time.perf_counter() - t_start - phases.phases.get("autograph", 0.0))
    captured = [ph for _, ph in graph.captures]       # tensors of a graph being built (func_graph.py)
    executable, nodes_after = _compile(graph, placeholders + captured, fetches, targets, phases=phases)
    if captured:        # only inlined into that graph: making its plan (so calling it) raises, saying why
        executable = Executable(None, executable.request, make=inline_only_plan(name, graph.captures))
    cf = ConcreteFunction(
        name, graph, placeholders, input_specs,
        [f"{p}: {s.short()}" for p, s in zip(tensor_paths, tensor_specs)] +
        [f"{i.path}: {i.describe()}" for i in infos if i.kind != "tensor"],
        fetches, result, template, executable, nodes_before, nodes_after, function.python_function)
    cf.phases = phases
    cf._components = len(input_specs) > len(tensor_specs)
    cf._accept_key = _make_acceptor(leaves, tensor_specs)
    spec_it = iter(tensor_specs)  # the call as traced, tensors replaced by specs (used by tracing.save)
    cf._traced_call = ek.nest.pack_sequence_as([list(args), dict(kwargs)],
                                               [next(spec_it) if _is_tensor_leaf(x) else x for x in leaves])
    cf.function_type = FunctionType.from_trace(name, function.python_function, cf._traced_call)
    return cf, bool(graph.created_variables)


def _compile(graph, feeds, fetches, targets, config=None, phases=None):
    """Through the pipeline `Session` uses (`prepare`); returns (`Executable`, node count after
    optimization)."""
    timings: dict = {}
    plan = prepare(graph, feeds, fetches, targets, config, check_feeds=False, timings=timings)
    report = plan.optimization_report
    if phases is not None:
        phases.add_report(report, timings["optimize"])
        phases.add("compile", timings["compile"])
    executable = Executable(None, request_for(graph, feeds, fetches, targets), plan, report=report)
    return executable, report.nodes_after if report is not None else len(graph.get_operations())
