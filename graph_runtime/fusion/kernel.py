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

Large chunked kernels may split their chunk range across the kernel pool
(`eager.parallel`: one thread per core, shared with the convolution and
pooling kernels; NumPy releases the GIL inside ufunc loops), and a chunked
kernel of at least `NATIVE_MIN_ELEMENTS` elements whose program and layout the
compiled loops take (`will_compile`: numba installed and on), at its
`PROMOTE_AFTER`-th call, tries its compiled variant (native_backend.py), kept
only if its bits match; any other stays the plain kernel, untimed unless it
may split over the pool.  Such a kernel of at least
`FAST_TANH_MIN_ELEMENTS` elements computes a float32
tanh with the vectorized function of fast_tanh.py in every variant, from its
first call (option `fast_tanh`, on by default; within 1 ulp of `np.tanh`; the
NumPy form is slow, but runs only until the promotion, after which only the
compiled variants run).  All these variants give the same bits; which one runs
is timed at run time (autotune.py: `TunedKernel`, medians of alternating
timings, rechecked, with a margin before a switch).  `threads=None` lets the
timings choose serial or split (whether splitting pays depends on the machine
and on its load), `threads=1` never splits, `threads=n` always does.

Imports `numpy`, `eager` (`native`, `parallel`, `registry`) and sibling modules.
"""
from __future__ import annotations

import threading
from typing import Callable, Optional

import numpy as np

from eager import native, parallel
from eager.registry import op

from . import native_backend, numexpr_backend
from .autotune import TunedKernel
from .cost import choose
from .numpy_backend import build_chunked, build_straight, chunk_layout, run_serial
from .options import FusionOptions, get_options
from .program import interpret

MAX_DYNAMIC_KERNELS = 32
THREAD_MIN_ELEMENTS = 1 << 20
# a chunked kernel this big may promote to compiled loops (autotune.py): the CNN's relu/loss-gradient kernel
# (401,408 elements) runs 3x faster compiled, and processes with such tensors already start numba for
# eager.native's convolution and pooling kernels
NATIVE_MIN_ELEMENTS = 1 << 18
FAST_TANH_MIN_ELEMENTS = 1 << 20  # ... and computes float32 tanh with fast_tanh.py (1 ulp) only from this size
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
        fn = _tuned_chunked(program, shapes, layout_box[-1], opts, choice.elements)
    elif fn is None:
        fn = build_straight(program, shapes, scalars)
    try:
        fn.strategy = choice.strategy
        fn.choice = choice
    except AttributeError:  # pragma: no cover - plain functions accept attributes
        pass
    return fn


def _tuned_chunked(program, shapes, layout, opts: FusionOptions, elements: int) -> Callable:
    """The chunked kernel with its runners: serial, and split over the pool if big enough and allowed
    (`opts.threads`: None lets the timings choose, 1 never splits, more always splits)."""
    # only a kernel that can compile pays for the timing wrapper: one that cannot stays the plain kernel
    promote = elements >= NATIVE_MIN_ELEMENTS and will_compile(program, layout)
    fast = (elements >= FAST_TANH_MIN_ELEMENTS and promote and opts.fast_tanh
            and native_backend.fast_tanh_program(program))
    if fast:
        # every variant computes the compiled loops' tanh, from the first call: results never depend on
        # which variant ran or on how many calls came before
        program = fast
    straight = build_straight(program, shapes)
    chunked = build_chunked(program, shapes, layout, straight)
    threads = opts.threads if opts.threads is not None else min(parallel.cores(), 8)
    runners = [("serial", run_serial)]
    if threads > 1 and elements >= THREAD_MIN_ELEMENTS:
        split = (f"{threads} threads", make_threaded_runner(threads))
        runners = [runners[0], split] if opts.threads is None else [split]
    make_native = None
    if promote:
        make_native = lambda: native_backend.build(program, shapes, layout)  # noqa: E731
    elif len(runners) == 1:          # nothing to choose: the plain kernel, no timing
        return _bind_runner(chunked, runners[0][1])
    return TunedKernel(chunked, runners, make_native, PROMOTE_AFTER, keep_numpy=not fast)


def will_compile(program, layout) -> bool:
    """Whether a big chunked kernel of this program will be promoted to compiled loops (numba installed and
    enabled, a layout and instructions `native_backend.build` takes), decided without importing numba."""
    return native.enabled() and native.installed() and native_backend.compilable(program, layout)


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
