"""`function` / `Function`: one cached graph per input signature.

Call path (the hot path, kept lean): `call_key(args, kwargs)` -> dict lookup in
the dispatch table -> `ConcreteFunction._call(args, kwargs)`.  A call with one
tensor argument of a trace with one tensor result, eager and without a tape,
runs the plan in `__call__` itself (three frames less: 1.3 us of a 9 us call).  On a miss, under
a lock (concurrent first calls trace once): find the most specific compatible
existing trace (a `[None]` trace serves every 1-D call; with
`input_signature` the single signature must fit or TypeError; Python values
and NumPy arrays are first converted to its dtypes, as Session feeds are), else trace a
new one, recording why in `trace_log`.  Variables may be created only on the
first call: if the first trace creates variables it is traced again, and a
second creation raises ValueError, as in TensorFlow.
"""
from __future__ import annotations

import functools
import inspect
import logging
import sys
import threading
import time
import warnings

import eager as ek
from eager import context as _context
from eager import tape_state as _tape_state
from eager.tensor import Tensor
from eager.compiler_hook import register_function_compiler, register_python_converter
from eager.tensor_spec import TensorSpec
from eager.gc_pause import no_cyclic_gc

from autograph import convert
from autograph.experimental import optional_features

from . import explain as _explain
from . import run_eagerly as _run_eagerly
from .concrete import ConcreteFunction, trace_concrete
from .retrace_log import RecentCalls, RetraceError, TraceRecord, retrace_forbidden, user_call_site
from .signature import ArgInfo, call_key, cast_to_signature, describe, parameters
from .trace_specs import relaxed_specs, specs_from_signature



_log = logging.getLogger("graphjit.tracing")
# Traces kept per function (and per instance, for methods) before the least recently used is dropped:
# each holds a graph and a compiled plan, so a function called with ever new shapes or Python values
# must not grow without bound.  TF keeps every trace; 128 is far above what a well-keyed function makes.
DEFAULT_MAX_CACHE_SIZE = 128


class Function:
    """A Python function compiled to cached graphs (see docs/api.md, `tracing`)."""

    def __init__(self, python_function, input_signature=None, autograph=True, reduce_retracing=False,
                 max_traces=None, name=None, experimental_autograph_options=None, max_cache_size=None):
        if not callable(python_function):
            raise TypeError(f"function() needs a callable, got {type(python_function).__name__}")
        self.python_function = python_function
        self._name = name or getattr(python_function, "__name__", "function")
        self._autograph = autograph
        self._autograph_options = experimental_autograph_options
        self._reduce_retracing = reduce_retracing
        self._max_traces = max_traces
        self._max_cache_size = DEFAULT_MAX_CACHE_SIZE if max_cache_size is None else max_cache_size
        if not isinstance(self._max_cache_size, int) or self._max_cache_size < 1:
            raise ValueError(f"function(): max_cache_size must be a positive int, got {max_cache_size!r}")
        if input_signature is not None:
            input_signature = tuple(input_signature)
            for s in ek.nest.flatten(list(input_signature)):
                if not isinstance(s, TensorSpec):
                    raise TypeError(f"input_signature must contain only TensorSpec objects, got {s!r}")
        self._input_signature = input_signature
        self._arg_names, self._defaults, self._positional_only, self._kwonly_defaults = \
            parameters(python_function)
        # calls are canonicalized (keywords moved to their positions, defaults filled in) before the cache
        # key is built, so f(x) and f(x, activation="relu") with that default share one trace, as in TF
        self._fill_below = sys.maxsize if self._kwonly_defaults else len(self._arg_names) if self._defaults else 0
        self._first_default = len(self._arg_names) - len(self._defaults)     # Python's defaults are a suffix
        self._default_tail = tuple(self._defaults[n] for n in self._arg_names[self._first_default:])
        self._dispatch: dict = {}          # exact call key -> ConcreteFunction
        self._concrete: list = []          # ConcreteFunctions in trace order
        self._signatures: list = []        # described signature (list[ArgInfo]) per concrete function
        self.trace_log: list[TraceRecord] = []
        self._lock = threading.RLock()
        self._recent = RecentCalls()
        self._created_variables = False
        self._converted = None
        functools.update_wrapper(self, python_function)

    # -------------------------------------------------------------- calling
    def __call__(self, *args, **kwargs):
        if not kwargs and len(args) == 1 and type(args[0]) is Tensor and self._fill_below <= 1:
            # the commonest call, one tensor: the checks of the general path below, inline (a 50-op chain on
            # 4x4 floats spends as long in the call path as in its kernel)
            v = args[0]._value
            cf = self._dispatch.get(((v.shape, v.dtype),))
            if (cf is not None and cf._one_in_one_out and self._input_signature is None
                    and _context.executing_eagerly() and not _tape_state.any_recording()
                    and not _run_eagerly._run_eagerly):
                cf._hits += 1
                self._recent.calls += 1
                ex = cf._executable
                try:
                    return Tensor(ex.fn(v)[0])
                except Exception as e:
                    raise ex.map_error(e) from None
        if not _context.executing_eagerly():
            # called while tracing another function: inline this one into the outer graph
            return self._python_callable()(*args, **kwargs)
        if self._input_signature is not None:
            if kwargs:
                args, kwargs = self._by_position(args, kwargs)
            args = cast_to_signature(self._name, self._input_signature, args, self._arg_names)
        elif kwargs or len(args) < self._fill_below:
            args, kwargs = self._canonicalize(args, kwargs)
        if _run_eagerly._run_eagerly:          # the debugging switch: plain Python on eager tensors
            return self.python_function(*args, **kwargs)
        key = call_key(args, kwargs)
        cf = self._dispatch.get(key)
        if cf is None:
            cf = self._resolve(args, kwargs, key)
        else:
            cf._hits += 1
            self._recent.calls += 1      # a hit, for the frequent-retrace window (RecentCalls)
        return cf._call(args, kwargs)

    def _by_position(self, args, kwargs):
        """Keyword arguments of a function with an input_signature moved to their positions (TF
        canonicalizes calls the same way); a call Python would refuse raises Python's TypeError."""
        names = self._arg_names[:len(self._input_signature)]
        try:
            bound = inspect.signature(self.python_function).bind(*args, **kwargs)
        except (TypeError, ValueError) as e:
            raise TypeError(f"{self._name}(): {e}") from None
        if any(k not in names for k in kwargs):       # a keyword beyond the signature: reported later
            return args, kwargs
        return tuple(bound.arguments[n] for n in names if n in bound.arguments), {}

    def _canonicalize(self, args, kwargs):
        """The call with keywords that name positional parameters moved to their positions and omitted
        parameters given their defaults (what the function receives either way). Stops at the first
        parameter it cannot fill: the call then fails in Python's own binding, as it would uncompiled."""
        n = len(args)
        if not kwargs and self._first_default <= n:      # the common case: trailing defaults omitted
            args = args + self._default_tail[n - self._first_default:]
            return args, (dict(self._kwonly_defaults) if self._kwonly_defaults else kwargs)
        if len(args) < len(self._arg_names):
            args, kwargs = list(args), dict(kwargs)
            for name in self._arg_names[len(args):]:
                if name in kwargs and name not in self._positional_only:
                    args.append(kwargs.pop(name))
                elif name in self._defaults:
                    args.append(self._defaults[name])
                else:
                    break
            args = tuple(args)
        for name, default in self._kwonly_defaults.items():
            if name not in kwargs:
                kwargs = dict(kwargs)
                kwargs[name] = default
        return args, kwargs

    def __get__(self, instance, owner):
        """Methods: one Function per instance, bound to it."""
        if instance is None:
            return self
        attr = f"_graphjit_function_{self._name}_{id(self)}"
        bound = instance.__dict__.get(attr)
        if bound is None:
            bound = Function(functools.partial(self.python_function, instance), self._input_signature,
                             self._autograph, self._reduce_retracing, self._max_traces, self._name,
                             self._autograph_options, self._max_cache_size)
            bound._arg_names = self._arg_names[1:]
            bound._unbound_function = self.python_function
            bound._instance = instance
            instance.__dict__[attr] = bound
        return bound

    def _resolve(self, args, kwargs, key):
        with self._lock:
            cf = self._dispatch.get(key)
            if cf is not None:
                cf._hits += 1
                return cf
            cf = self._find_compatible(args, kwargs)
            if cf is None:
                cf = self._trace(args, kwargs)
            else:
                cf._hits += 1
                self._recent.add(False)
            self._dispatch[key] = cf
            return cf

    def _find_compatible(self, args, kwargs):
        """The most specific existing trace whose signature accepts these arguments."""
        best = None
        for cf in self._concrete:
            if cf._accepts(args, kwargs) and (best is None or cf._is_more_specific_than(best)):
                best = cf
        if best is None and self._input_signature is not None and self._concrete:
            raise TypeError(self._signature_mismatch(args, kwargs))
        return best

    def _signature_mismatch(self, args, kwargs) -> str:
        got, _ = describe(args, kwargs, self._arg_names)
        return (f"{self._name}: the arguments do not match its input_signature "
                f"{list(self._input_signature)}: got ({', '.join(f'{a.path}: {a.describe()}' for a in got)})")

    # -------------------------------------------------------------- tracing
    def _trace(self, args, kwargs, reason=None):
        infos, _ = describe(args, kwargs, self._arg_names)
        record_changes, suggestions = [], []
        if self._concrete:
            closest_index, record_changes = _explain.closest(self._signatures, infos)
            suggestions = _explain.suggest(record_changes, self._signatures[closest_index], infos,
                                           self._reduce_retracing)
            explanation = _explain.changes_text(record_changes, suggestions)
            if retrace_forbidden():
                raise RetraceError(f"{self._name} would retrace inside no_retrace()", explanation)
            if self._max_traces is not None and len(self.trace_log) >= self._max_traces:
                raise RetraceError(f"{self._name} would trace a {_explain.ordinal(len(self.trace_log) + 1)} graph but "
                                   f"max_traces={self._max_traces}", explanation)
        specs = self._trace_specs(args, kwargs, infos)
        call_site = user_call_site()
        t0 = time.perf_counter()
        # conversion, trace, optimize, compile: all they build stays alive, so a collection meanwhile would
        # only rescan it (a share of the first call that grows with the function's length)
        with no_cyclic_gc():
            cf = self._build(args, kwargs, specs)
        elapsed = time.perf_counter() - t0
        cf._hits = 1
        self._evict_least_recently_used()
        self._concrete.append(cf)
        self._signatures.append(infos)
        if reason is None:
            reason = "first call" if not self.trace_log else \
                "; ".join(str(c) for c in record_changes) or "no compatible trace"
        cf._trace_record = TraceRecord(len(self.trace_log) + 1, cf.pretty_printed_signature(verbose=False),
                                       reason, call_site, elapsed, cf.nodes_before, cf.nodes_after,
                                       record_changes, suggestions, cf.phases)
        self.trace_log.append(cf._trace_record)
        cf._hits_seen, cf._used_at = cf._hits, len(self.trace_log)
        if self._recent.add(True):
            warnings.warn(f"{self._name} retraced {self._recent.threshold} times in its last 10 calls. "
                          f"Latest: {reason}. " + (" ".join(suggestions) if suggestions else ""),
                          RetraceWarning, stacklevel=4)
        return cf

    def _evict_least_recently_used(self):
        """Make room for one more trace: past `max_cache_size`, forget the trace used least recently.

        Recency is kept at trace granularity so that a cache hit costs nothing extra: a trace is stamped
        with its own number when made, and at every new trace, one whose hit count moved since the previous
        trace is stamped just after that previous trace's number."""
        now = len(self.trace_log) + 0.5
        for cf in self._concrete:
            if cf._hits != cf._hits_seen:
                cf._hits_seen, cf._used_at = cf._hits, now
        cf = None
        while len(self._concrete) >= self._max_cache_size:
            i = min(range(len(self._concrete)), key=lambda k: (self._concrete[k]._used_at, self._concrete[k]._hits))
            cf = self._concrete.pop(i)
            del self._signatures[i]
            self._dispatch = {k: v for k, v in self._dispatch.items() if v is not cf}
            _log.warning("%s: %d traces are cached (max_cache_size=%d); dropped the least recently used, %s "
                         "(trace #%d). Calls with that signature will trace again.", self._name,
                         len(self._concrete) + 1, self._max_cache_size, cf._trace_record.signature,
                         cf._trace_record.index)

    def _trace_specs(self, args, kwargs, infos: list[ArgInfo]):
        """Specs for the tensor leaves of this call: exact, from input_signature, or relaxed."""
        if self._input_signature is not None and not any(isinstance(a, TensorSpec)
                                                           for a in ek.nest.flatten(list(args))):
            return specs_from_signature(self._name, self._input_signature, args, kwargs, self._signature_mismatch)
        if self._reduce_retracing and self._signatures:
            return relaxed_specs(self._signatures, infos)
        return None  # exact shapes of the call

    def _build(self, args, kwargs, specs):
        creating_first = not self.trace_log     # variables may be created only by the very first trace
        cf, created = trace_concrete(self, args, kwargs, specs, allow_variable_creation=creating_first)
        if created:
            self._created_variables = True
            cf2, created2 = trace_concrete(self, args, kwargs, specs, allow_variable_creation=False)
            cf2.phases.merge(cf.phases)      # the first trace's time is part of this call's cost too
            cf = cf2
        return cf

    def _python_callable(self):
        """The function to trace: converted by autograph when enabled (cached)."""
        if not self._autograph:
            return self.python_function
        if self._converted is None:
            self._converted = convert(self.python_function, self._autograph_options)
        return self._converted

    # -------------------------------------------------------------- introspection
    def get_concrete_function(self, *args, **kwargs) -> ConcreteFunction:
        """The concrete function for these arguments (tensors or TensorSpecs), tracing if needed."""
        if not args and not kwargs and self._input_signature is not None:
            args = self._input_signature
        elif self._input_signature is None:
            args, kwargs = self._canonicalize(args, kwargs)
        if not any(isinstance(a, TensorSpec) for a in ek.nest.flatten([list(args), kwargs])):
            key = call_key(args, kwargs)
            return self._dispatch.get(key) or self._resolve(args, kwargs, key)
        with self._lock:
            for cf in self._concrete:
                if cf._matches_specs(args, kwargs):
                    return cf
            cf = self._trace(args, kwargs, reason="get_concrete_function")
            cf._hits = cf._hits_seen = 0
            return cf

    def experimental_get_tracing_count(self) -> int:
        return len(self.trace_log)

    def pretty_printed_concrete_signatures(self, verbose=True) -> str:
        return "\n\n".join(cf.pretty_printed_signature(verbose) for cf in self._concrete)

    def cache_stats(self, timing: bool = False) -> dict:
        """Calls served per traced signature (the trace's own call counts as one).

        `timing=True`: per signature, `{"hits": n, "trace_seconds": s, "phases": {...}}` with the seconds
        of each phase of its trace (`PhaseTimes.as_dict()`: autograph, trace, optimize and each pass as
        `optimize/<pass>`, compile)."""
        if not timing:
            return {cf.pretty_printed_signature(verbose=False): cf._hits for cf in self._concrete}
        out = {}
        for cf in self._concrete:
            rec = cf._trace_record
            out[cf.pretty_printed_signature(verbose=False)] = {
                "hits": cf._hits, "trace_seconds": rec.trace_seconds, "phases": rec.phases.as_dict()}
        return out

    def explain_retracing(self) -> str:
        """For every trace after the first: each argument that differed, how, and a fix; then, for every
        trace, where its time went (autograph, trace, each optimizer pass, compile)."""
        return _explain.retracing_report(self._name, self.trace_log)

    def __repr__(self):
        return f"<graphjit.Function {self._name} ({len(self._concrete)} traces)>"


class RetraceWarning(UserWarning):
    """Emitted when a function retraces on 5 of its last 10 calls."""


def function(func=None, input_signature=None, autograph=True, reduce_retracing=False, max_traces=None, *,
             experimental_autograph_options=None, jit_compile=None, experimental_relax_shapes=None,
             max_cache_size=None):
    """Decorator: compile `func` into cached graphs (`@function` or `@function(...)`).

    `experimental_autograph_options`: an `autograph.experimental.Feature` or a sequence of them, the
    optional conversions to run (e.g. BUILTIN_FUNCTIONS: `print` of a tensor prints every call).
    TF 2 spellings are accepted: `experimental_relax_shapes` is the old name of `reduce_retracing`;
    `jit_compile` is accepted and ignored: no XLA is involved, every function is compiled by graphjit's own
    optimizer and executor either way."""
    if experimental_relax_shapes is not None:
        reduce_retracing = reduce_retracing or bool(experimental_relax_shapes)

    if experimental_autograph_options is not None:
        optional_features(experimental_autograph_options)      # refuse a bad option now, not at the first call

    def decorate(f):
        return Function(f, input_signature, autograph, reduce_retracing, max_traces,
                        experimental_autograph_options=experimental_autograph_options, max_cache_size=max_cache_size)
    if func is not None:
        return decorate(func)
    return decorate


# eager-level libraries (eager.data, eager.keras) compile their traced parts through this
register_function_compiler(function)
register_python_converter(convert)
