"""The `FusedElementwise` op and the generation of its kernel when a plan is compiled.

`FUSED_ELEMENTWISE` is a registered OpDef whose attr `program` (program.py)
holds the group's expression program.  It only appears in optimized graphs
(the fusion pass creates it after differentiation, on the copy of the graph a
plan is compiled from), so it is not differentiable and has no gradient rule.
Its `kernel` is the reference interpreter (used only if something runs the op
outside a compiled plan); plans use `extra["lower"]`: `lower(op, ctx)` builds
the real kernel ONCE, when the plan is compiled:

- all input shapes static: `make_kernel` picks a strategy with the cost model
  (cost.py) and generates that kernel now;
- some dims unknown: a small dispatcher generates (and caches, per program) a
  kernel for each distinct tuple of input shapes it sees at run time.

Generated kernels are shared (`shared_kernel`) by all programs with the same
signature, input shapes and options: an unrolled loop's identical groups call
one function.

A chunked kernel of at least `NATIVE_MIN_ELEMENTS` elements is wrapped in
`Promoting`: at its `PROMOTE_AFTER`-th call, with numba installed, it tries
its compiled variant (native_backend.py) and keeps it if the bits match and
it measures faster.

Large chunked kernels may split their chunk range across the kernel pool
(`eager.parallel`: one thread per core, shared with the convolution and
pooling kernels; NumPy releases the GIL inside ufunc loops).  Whether that pays depends on the
machine (on a shared 2-vCPU VM it does not), so with `threads=None` the kernel
autotunes: its first calls alternate between serial and threaded runs, the
faster (median of the last 3 timings) runs, and every 16th call runs the
other one to check the choice (the load of the machine changes).  `threads=1`
never uses threads.

Imports `numpy`, `eager` (`parallel`, `registry`) and sibling modules.
"""
from __future__ import annotations

import collections
import statistics
import threading
import time
from typing import Callable, Optional

import numpy as np

from eager import parallel
from eager.registry import op

from . import native_backend, numexpr_backend
from .cost import choose
from .numpy_backend import build_chunked, build_straight, chunk_layout, run_serial
from .options import FusionOptions, get_options
from .program import interpret

MAX_DYNAMIC_KERNELS = 32
THREAD_MIN_ELEMENTS = 1 << 20
NATIVE_MIN_ELEMENTS = 1 << 20     # a chunked kernel this big may promote to compiled loops (`Promoting`)
PROMOTE_AFTER = 8                 # ... at its 8th call: tests and examples never pay numba's start-up


def _kernel(*arrays, program):
    return interpret(program, *arrays)


def _infer(specs, attrs):
    return attrs["program"].infer(specs)


def _lower(operation, ctx) -> Callable:
    program = operation.get_attr("program")
    return make_kernel(program, [t.shape.dims for t in operation.inputs], scalars=constant_scalars(operation))


def constant_scalars(operation) -> dict:
    """{input position: value} of the fused op's rank-0 inputs made by `Const` ops (a numexpr kernel compiles
    them into its expressions)."""
    out = {}
    for k, t in enumerate(operation.inputs):
        if t.op.type == "Const" and t.shape.dims == ():
            value = np.asarray(t.op.get_attr("value"))
            if value.shape == () and value.dtype == t.dtype.np_dtype:
                out[k] = value
    return out


FUSED_ELEMENTWISE = op(
    "FusedElementwise", _kernel, _infer, None, differentiable=False, num_outputs=-1, extra={"lower": _lower},
    doc="A group of elementwise ops fused into one kernel by the fusion pass (optimized graphs only; "
        "attr `program` holds the expression program).")


# ------------------------------------------------------------------ threads
def make_threaded_runner(threads: int) -> Callable:
    """`run(body, args, extent, step)` splitting the range over the kernel pool (`eager.parallel`).

    The pool is the one every split kernel shares (one worker per core but one).  A range already
    running on a pool thread, or a busy pool, runs serially.
    """
    def run(body, args, extent, step):
        # each of the body's steps (about chunk_bytes per buffer) counts as one pool chunk's traffic, so the
        # range is cut into several chunks per thread, taken in turns, not one per thread: a thread the OS
        # runs late then holds a small share, not half the work
        traffic = -(-extent // step) * parallel.CHUNK_BYTES
        parallel.for_range(lambda lo, hi: body(*args, lo, hi), extent, traffic, min_bytes=0, threads_=threads)
    return run


class Autotuned:
    """Time candidate kernels on the first calls, run the fastest, and keep checking the choice.

    The first calls alternate between the candidates until each has `SAMPLES` timings; from then on the
    candidate with the lowest median of its last `SAMPLES` timings runs, and every `RECHECK`-th call runs
    another one instead, so a choice made while other work held the cores (serial wins then) is revisited
    once a core is free, and the other way round.  A recheck costs at most one slower call in `RECHECK`;
    timing a call costs two clock reads, nothing beside a kernel big enough to be split.
    """

    SAMPLES = 3
    RECHECK = 16

    def __init__(self, candidates: list, labels: list):
        self.candidates = candidates
        self.labels = labels
        self.times: list = [collections.deque(maxlen=self.SAMPLES) for _ in candidates]
        self.calls = 0
        self.chosen = None            # the index of the candidate in use (None while sampling)
        self.chosen_label = None

    def __call__(self, *args):
        self.calls += 1
        k = self._next()
        t0 = time.perf_counter()
        res = self.candidates[k](*args)
        self.times[k].append(time.perf_counter() - t0)
        # choose after sampling and after each recheck (the chosen one's own timings are then as recent)
        if k != self.chosen and all(len(t) == self.SAMPLES for t in self.times):
            best = min(range(len(self.candidates)), key=lambda i: statistics.median(self.times[i]))
            self.chosen, self.chosen_label = best, self.labels[best]
        return res

    def _next(self) -> int:
        """The candidate this call runs: the chosen one, or one due for sampling or a recheck."""
        n = len(self.candidates)
        if self.chosen is None:
            return (self.calls - 1) % n
        if n > 1 and self.calls % self.RECHECK == 0:
            return (self.chosen + 1 + (self.calls // self.RECHECK) % (n - 1)) % n     # the others in turn
        return self.chosen


# ------------------------------------------------------------------ kernels
def build_for_shapes(program, input_shapes, opts: FusionOptions, scalars: Optional[dict] = None) -> Callable:
    """Generate the kernel for concrete input shapes (strategy from the cost model); `scalars`: {input position:
    0-d value} of inputs known when the plan is compiled (`constant_scalars`)."""
    shapes = program.shapes_for(input_shapes)
    layout_box: list = []

    def layout_possible() -> bool:
        lay = chunk_layout(program, shapes, opts.chunk_bytes)
        layout_box.append(lay)
        return lay is not None

    ne_ok = opts.numexpr and numexpr_backend.available() and numexpr_backend.expressible(program)
    choice = choose(program, shapes, opts.chunk_bytes, ne_ok, layout_possible, opts.force,
                    lambda: numexpr_backend.stage_count(program))
    fn = None
    if choice.strategy == "numexpr":
        fn = numexpr_backend.build(program, shapes, scalars)
        if fn is None:
            choice.strategy = "numpy"
    if choice.strategy == "chunked":
        straight = build_straight(program, shapes)
        chunked = build_chunked(program, shapes, layout_box[-1], straight)
        if choice.elements >= NATIVE_MIN_ELEMENTS:
            layout = layout_box[-1]
            chunked = Promoting(chunked, lambda: native_backend.build(program, shapes, layout))
        serial = _bind_runner(chunked, run_serial)
        threads = opts.threads if opts.threads is not None else min(parallel.cores(), 8)
        if threads > 1 and choice.elements >= THREAD_MIN_ELEMENTS:
            threaded = _bind_runner(chunked, make_threaded_runner(threads))
            if opts.threads is None:
                fn = Autotuned([serial, threaded], ["serial", f"{threads} threads"])
            else:
                fn = threaded
        else:
            fn = serial
        fn.source = chunked.source
    elif fn is None:
        fn = build_straight(program, shapes)
    try:
        fn.strategy = choice.strategy
        fn.choice = choice
    except AttributeError:  # pragma: no cover - plain functions accept attributes
        pass
    return fn


class Promoting:
    """A big chunked kernel that, once called `PROMOTE_AFTER` times, tries its compiled variant
    (native_backend.py: the arithmetic runs as numba loops; only with the `[native]` extra) and keeps it
    if it measures faster.

    At the promoting call the variant is built (numba's start-up and compile: seconds, once) and run beside
    the NumPy kernel on that call's inputs: it is kept only if every output is bitwise equal.  The next
    calls alternate between the two, `SAMPLES` timings each, and the lower median runs from then on.  A
    kernel of a process that never calls it that often never imports numba."""

    SAMPLES = 3

    def __init__(self, chunked: Callable, make_native: Callable):
        self.fn = self.numpy = chunked
        self.source = chunked.source
        self.make_native = make_native
        self.native = None
        self.calls = 0
        self.times: tuple = ([], [])       # the NumPy kernel's, the native one's
        self.state = "numpy"               # "numpy" -> ("trial" ->) "settled"
        self._lock = threading.Lock()

    def __call__(self, run, *arrays):
        if self.state != "settled":
            self.calls += 1
            if self.state == "trial":
                return self._timed(run, arrays)
            if self.calls >= PROMOTE_AFTER:
                return self._promote(run, arrays)
        return self.fn(run, *arrays)

    def _promote(self, run, arrays):
        with self._lock:
            if self.state != "numpy":
                return self.fn(run, *arrays)
            self.state = "settled"
            want = self.numpy(run, *arrays)
            native = self.make_native()
            if native is not None and _same_bits(want, native(run_serial, *arrays)):
                self.native = native
                self.state = "trial"
            return want

    def _timed(self, run, arrays):
        k = self.calls % 2
        t0 = time.perf_counter()
        res = (self.numpy, self.native)[k](run, *arrays)
        self.times[k].append(time.perf_counter() - t0)
        if min(len(t) for t in self.times) >= self.SAMPLES and self.state == "trial":
            faster = statistics.median(self.times[1]) < statistics.median(self.times[0])
            self.fn = self.native if faster else self.numpy
            self.state = "settled"
        return res


def _same_bits(a, b) -> bool:
    """Equal dtypes, shapes and bits, NaN at the same places (any NaN equals any NaN: the fusion's documented
    equality; a NaN's sign may differ)."""
    a, b = (a, b) if isinstance(a, tuple) else ((a,), (b,))
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        x, y = np.asarray(x), np.asarray(y)
        if x.dtype != y.dtype or x.shape != y.shape:
            return False
        if x.dtype.kind == "f":
            nan = np.isnan(x)
            if not np.array_equal(nan, np.isnan(y)):
                return False
            x, y = x[~nan], y[~nan]
        if x.tobytes() != y.tobytes():
            return False
    return True


def _bind_runner(chunked: Callable, run: Callable) -> Callable:
    def kernel(*arrays):
        return chunked(run, *arrays)
    kernel.source = chunked.source
    return kernel


_shared_lock = threading.Lock()
_SHARED: dict = {}          # (program signature, input shapes, options) -> kernel
MAX_SHARED_KERNELS = 1024


def shared_kernel(program, input_shapes: tuple, opts: FusionOptions, scalars: Optional[dict] = None) -> Callable:
    """The kernel for these shapes, shared by every program with the same signature.

    An unrolled loop produces many identical groups; sharing one generated function (instead of
    one per group) generates code once and keeps the interpreter's caches warm.
    """
    key = (program.signature(), input_shapes, opts, numexpr_backend.available(), _scalars_key(scalars))
    fn = _SHARED.get(key)
    if fn is None:
        fn = build_for_shapes(program, input_shapes, opts, scalars)
        with _shared_lock:
            if len(_SHARED) >= MAX_SHARED_KERNELS:
                _SHARED.clear()
            fn = _SHARED.setdefault(key, fn)
    return fn


def _scalars_key(scalars: Optional[dict]) -> tuple:
    return tuple((k, v.dtype.str, v.tobytes()) for k, v in sorted(scalars.items())) if scalars else ()


def clear_caches() -> None:
    """Forget every generated kernel and compiled numexpr stage (a benchmark of a true first call)."""
    with _shared_lock:
        _SHARED.clear()
    numexpr_backend.clear_cache()


def make_kernel(program, static_input_shapes, opts: FusionOptions = None, scalars: Optional[dict] = None) -> Callable:
    """The kernel a plan calls for this program: generated now if shapes are static, else per shape.
    `scalars`: see `build_for_shapes`."""
    opts = opts or get_options()
    if all(dims is not None and None not in dims for dims in static_input_shapes):
        return shared_kernel(program, tuple(tuple(d) for d in static_input_shapes), opts, scalars)
    cache = program.cache
    lock = threading.Lock()

    known = _scalars_key(scalars)
    mine: dict = {}         # this op's kernels by shapes alone: hashing `opts` cost as much as the look-up

    def dynamic(*arrays):
        shapes = tuple([a.shape for a in arrays])
        fn = mine.get(shapes)
        if fn is None:
            key = (shapes, opts, known)         # the program's cache is shared by its ops
            with lock:
                fn = cache.get(key)
                if fn is None:
                    if len(cache) >= MAX_DYNAMIC_KERNELS:
                        cache.clear()
                    fn = cache[key] = shared_kernel(program, shapes, opts, scalars)
                if len(mine) >= MAX_DYNAMIC_KERNELS:
                    mine.clear()
                mine[shapes] = fn
        return fn(*arrays)
    dynamic.strategy = "dynamic"
    return dynamic


def plan_strategy(program, opts: FusionOptions = None) -> str:
    """The strategy the cost model would pick for the program's static shapes (for reports)."""
    opts = opts or get_options()
    dims = [program.static_shapes[s] for s in program.input_slots]
    if any(d is None or None in d for d in dims):
        return "dynamic (per run-time shape)"
    shapes = program.shapes_for(dims)
    ne_ok = opts.numexpr and numexpr_backend.available() and numexpr_backend.expressible(program)
    return choose(program, shapes, opts.chunk_bytes, ne_ok,
                  lambda: chunk_layout(program, shapes, opts.chunk_bytes) is not None, opts.force,
                  lambda: numexpr_backend.stage_count(program)).describe()
