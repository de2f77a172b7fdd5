"""The `graphjit` command line (console script `graphjit = "tracing.cli:main"`).

    graphjit demo [--quick]                 guided tour (under 30 s)
    graphjit bench [--only NAME]            the benchmark suite as tables (needs the source checkout)
    graphjit show PATH [--timing]           a saved function directory: signatures, ops, variables
                                            (--timing: load it and report import/optimize/compile time)
    graphjit show FILE:FUNC --timing [--shape x=2,3 ...]   trace FUNC once: time per phase and pass
    graphjit convert FILE:FUNC              AutoGraph's converted source of FUNC
    graphjit graph FILE:FUNC [--out g.html] [--shape x=2,3 ...] [--dtype x=int32 ...] [--optimized]
                             [--logdir DIR] [--graphviz]
    graphjit trace FILE:FUNC [--out trace.json] [--shape x=2,3 ...] [--dtype x=int32 ...] [--seed N]

`FILE:FUNC` names a function in a Python file (`model.py:predict`, or
`model.py:net.call` for a method of a module-level object `net`; the file is
imported, so its top-level code runs).  `graph` traces FUNC to draw it: a `@function` with an
`input_signature`, or a function without parameters, needs nothing more;
otherwise give one `--shape NAME=D1,D2` per tensor parameter (`?` or `None`
for an unknown dimension, `--shape x=` for a scalar) and optionally
`--dtype NAME=float64` (default float32).  The output format follows the
extension of `--out`: .svg/.png/.pdf (Graphviz `dot`), .dot, or .html (a
self-contained page whose drawing is laid out in Python, so it needs no
Graphviz: `--graphviz` asks for Graphviz's drawing when `dot` is installed; for
traced functions the page shows the optimizer pass by pass).  `--logdir DIR`
writes the graph as a TensorBoard event file into DIR (`tensorboard --logdir
DIR`, graph dashboard; needs the `tensorboard` extra); without `--out` it
writes only that.  `trace` traces FUNC the same way, runs its graph once in
a `Session` with `RunOptions.FULL_TRACE` on random inputs (standard normal
floats, small integers, `--seed`; every dimension must be known) and writes
the run as Chrome trace JSON (`graph_runtime.Timeline`), which
chrome://tracing and ui.perfetto.dev open.

Exit status: 0 on success, 1 on a user error (the message says what to fix),
2 on bad command-line usage.  Imports `graph_runtime`, `autograph` and the rest
of `tracing`.
"""
from __future__ import annotations

import argparse
import importlib.util
import inspect
import os
import subprocess
import sys
from typing import Optional

import numpy as np

from eager import summary
from eager.tensor_spec import TensorSpec

import graph_runtime as gr
from graph_runtime import visualize, visualize_html
from graph_runtime.passes import optimize
from graph_runtime.visualize_html import write_html

from autograph import to_code

from .demo import run_demo
from .function import Function, function
from .save import load
from .save.format import SavedModelError
from .save.inspect_saved import describe_saved
from .timing import Progress


class CLIError(Exception):
    """A user-facing error: printed as `graphjit: error: ...`, exit status 1."""


# ------------------------------------------------------------------ FILE:FUNC
def load_target(spec: str):
    """The object named by `FILE:FUNC` (dotted attribute paths allowed after the colon)."""
    path, sep, attr = spec.rpartition(":")
    if not sep or not path or not attr:
        raise CLIError(f"expected FILE:FUNC (e.g. model.py:predict), got {spec!r}")
    if not os.path.isfile(path):
        raise CLIError(f"no such file: {path}")
    name = "graphjit_cli_" + "".join(c if c.isalnum() else "_" for c in os.path.splitext(os.path.basename(path))[0])
    module_spec = importlib.util.spec_from_file_location(name, os.path.abspath(path))
    if module_spec is None or module_spec.loader is None:
        raise CLIError(f"{path} is not a Python file")
    module = importlib.util.module_from_spec(module_spec)
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    try:
        sys.modules[name] = module
        module_spec.loader.exec_module(module)
    except Exception as e:
        raise CLIError(f"importing {path} failed: {type(e).__name__}: {e}") from e
    finally:
        sys.path.pop(0)
    obj = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            have = sorted(n for n in vars(module) if not n.startswith("_"))
            raise CLIError(f"{path} has no {attr!r} (top-level names: {', '.join(have[:20])})")
        obj = getattr(obj, part)
    return obj


def _python_function(obj):
    return obj.python_function if isinstance(obj, Function) else obj


# ------------------------------------------------------------------ commands
def cmd_demo(args) -> int:
    run_demo(quick=args.quick)
    return 0


def cmd_convert(args) -> int:
    fn = _python_function(load_target(args.target))
    try:
        sys.stdout.write(to_code(fn))
    except Exception as e:  # ConversionError, TypeError: say why, no traceback
        raise CLIError(f"cannot convert {args.target}: {type(e).__name__}: {e}") from e
    return 0


def parse_specs(fn, shapes: list, dtypes: list) -> Optional[list]:
    """TensorSpecs for `fn`'s parameters from `--shape name=2,3` / `--dtype name=int32` options."""
    shape_of, dtype_of = {}, {}
    for item, table, what in [(s, shape_of, "--shape") for s in shapes] + [(d, dtype_of, "--dtype") for d in dtypes]:
        key, eq, value = item.partition("=")
        if not eq or not key:
            raise CLIError(f"{what} expects NAME=VALUE, got {item!r}")
        table[key.strip()] = value.strip()
    try:
        params = [p for p in inspect.signature(fn).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        params = []
    if params and params[0].name == "self":
        params = params[1:]
    names = [p.name for p in params]
    unknown = sorted(set(shape_of) - set(names)) + sorted(set(dtype_of) - set(names))
    if unknown:
        raise CLIError(f"--shape/--dtype name(s) {unknown} are not parameters of the function ({names})")
    specs = []
    for p in params:
        if p.name not in shape_of:
            if p.default is not p.empty:
                break
            raise CLIError(f"parameter {p.name!r} needs a shape: add --shape {p.name}=2,3 (use ? for unknown "
                           f"dims, `--shape {p.name}=` for a scalar) and optionally --dtype {p.name}=float64")
        text = shape_of[p.name]
        dims = []
        for d in filter(None, (x.strip() for x in text.split(","))):
            if d in ("?", "None", "none", "-1"):
                dims.append(None)
            elif d.isdigit():
                dims.append(int(d))
            else:
                raise CLIError(f"--shape {p.name}={text}: {d!r} is not a dimension (use integers or ?)")
        try:
            specs.append(TensorSpec(dims, dtype_of.get(p.name, "float32"), name=p.name))
        except (TypeError, ValueError) as e:
            raise CLIError(f"--dtype {p.name}: {e}") from e
    return specs


def _concrete_for(obj, shapes, dtypes):
    fn = obj if isinstance(obj, Function) else function(obj) if callable(obj) else None
    if fn is None:
        raise CLIError(f"{obj!r} is not a function")
    if fn._input_signature is not None and not shapes:
        return fn.get_concrete_function()
    specs = parse_specs(fn.python_function, shapes, dtypes)
    try:
        return fn.get_concrete_function(*specs)
    except Exception as e:
        raise CLIError(f"tracing failed: {type(e).__name__}: {e}") from e


def cmd_graph(args) -> int:
    obj = load_target(args.target)
    func_name = args.target.rpartition(":")[2]
    out = args.out or (None if args.logdir else f"{func_name.replace('.', '_')}.html")
    if out is None:
        return _graph_to_logdir(_concrete_for(obj, args.shape, args.dtype), args)
    ext = os.path.splitext(out)[1].lower().lstrip(".")
    if ext not in ("svg", "png", "pdf", "dot", "gv", "html", "htm"):
        raise CLIError(f"--out {out}: unknown format {ext!r}; use .svg, .png, .pdf, .dot or .html")
    if ext in ("svg", "png", "pdf") and not visualize.dot_available():
        raise CLIError(visualize.MISSING_DOT)
    cf = _concrete_for(obj, args.shape, args.dtype)
    graph = cf.graph
    if args.optimized:
        names = [t.name for t in cf.inputs] + [t.name for t in cf.outputs]
        graph, _ = optimize(graph, names, keep_stateful=True)
    if ext in ("html", "htm"):
        write_html([cf] if not args.optimized else [graph], out, title=f"graphjit: {func_name}",
                   graphviz=args.graphviz)
    else:
        visualize_html.render(graph, out, ext, title=cf.pretty_printed_signature(verbose=False))
    # the graph drawn (optimized or not), counted as the page counts it
    print(f"{cf.pretty_printed_signature(verbose=False)}: {len(graph.get_operations())} ops at top level"
          f"{' after optimization' if args.optimized else ''} -> {out}")
    return _graph_to_logdir(cf, args, graph) if args.logdir else 0


def _graph_to_logdir(cf, args, graph=None) -> int:
    try:
        writer = summary.create_file_writer(args.logdir)
    except ImportError as e:
        raise CLIError(str(e)) from None
    with writer.as_default():
        summary.graph(graph if graph is not None else cf.graph)
    writer.close()
    print(f"{cf.pretty_printed_signature(verbose=False)}: graph written to {args.logdir} "
          f"(tensorboard --logdir {args.logdir})")
    return 0


def _random_value(t, rng):
    dims = t.shape.dims
    if dims is None or any(d is None for d in dims):
        raise CLIError(f"trace: input {t.name!r} has shape {t.shape}; give every dimension with --shape so a "
                       f"random input can be made")
    dt = t.dtype
    if dt.is_floating:
        return rng.standard_normal(tuple(dims)).astype(dt.np_dtype)
    if dt.is_integer:
        return rng.integers(0, 4, size=tuple(dims)).astype(dt.np_dtype)
    if dt.is_bool:
        return rng.integers(0, 2, size=tuple(dims)).astype(bool)
    raise CLIError(f"trace: cannot make a random value of dtype {dt.name} for input {t.name!r}")


def cmd_trace(args) -> int:
    obj = load_target(args.target)
    func_name = args.target.rpartition(":")[2]
    out = args.out or f"{func_name.replace('.', '_')}.trace.json"
    cf = _concrete_for(obj, args.shape, args.dtype)
    rng = np.random.default_rng(args.seed)
    feeds = {t: _random_value(t, rng) for t in cf.inputs}
    md = gr.RunMetadata()
    with gr.Session(graph=cf.graph) as sess:
        try:
            sess.run(list(cf.outputs), feeds, options=gr.RunOptions(trace_level=gr.RunOptions.FULL_TRACE),
                     run_metadata=md)
        except Exception as e:
            raise CLIError(f"running {func_name} failed: {type(e).__name__}: {e}") from e
    if not md.step_stats:
        raise CLIError(f"{func_name}: its graph ran no op (nothing to trace)")
    text = gr.Timeline(md).generate_chrome_trace_format()
    with open(out, "w", encoding="utf-8") as f:
        f.write(text)
    print(f"{cf.pretty_printed_signature(verbose=False)}: {len(md.step_stats)} ops, {md.total_us:.0f} us -> {out} "
          f"(open in chrome://tracing or ui.perfetto.dev)")
    return 0


def _timing_text(cf) -> str:
    return (f"{cf.pretty_printed_signature(verbose=False)}: {cf.nodes_before} -> {cf.nodes_after} ops, "
            f"first call {cf.phases.total * 1e3:.1f} ms\n{cf.phases.table(indent='  ')}")


def cmd_show(args) -> int:
    if not os.path.isdir(args.path) and ":" in args.path:
        if not args.timing:
            raise CLIError(f"show {args.path}: a FILE:FUNC target needs --timing (show PATH describes a "
                           f"directory written by tracing.save)")
        cf = _concrete_for(load_target(args.path), args.shape, args.dtype)
        print(_timing_text(cf))
        return 0
    sys.stdout.write(describe_saved(args.path) + "\n")
    if args.timing:
        loaded = load(args.path)
        print("\nload time per function (import, optimize, compile):")
        for fn in loaded.functions.values():
            for rc in fn._concretes:
                print(_timing_text(rc.cf))
    return 0


def benchmarks_dir() -> Optional[str]:
    """The `benchmarks/` folder of a source checkout: next to this package, or in the current directory."""
    for root in (os.path.dirname(os.path.dirname(os.path.abspath(__file__))), os.getcwd()):
        d = os.path.join(root, "benchmarks")
        if os.path.isfile(os.path.join(d, "harness.py")):
            return d
    return None


def cmd_bench(args) -> int:
    d = benchmarks_dir()
    if d is None:
        raise CLIError("graphjit bench runs the benchmark suite in benchmarks/, which is part of the source "
                       "checkout, not of the installed package: clone the repository and run `graphjit bench` "
                       "(or `python -m benchmarks.bench_eager`) in its top directory. `graphjit demo` has a small speed "
                       "table that works anywhere.")
    scripts = sorted(f[:-3] for f in os.listdir(d) if f.startswith("bench_") and f.endswith(".py"))
    if args.only:
        scripts = [s for s in scripts if args.only in s]
        if not scripts:
            raise CLIError(f"no benchmark script matches {args.only!r}")
    peers = [name for name in ("tensorflow", "jax") if importlib.util.find_spec(name) is not None]
    print(f"graphjit benchmarks ({len(scripts)} scripts; ratios are against NumPy measured in the same run; "
          f"peer columns: {', '.join(peers) if peers else 'none (TensorFlow/JAX not installed)'})")
    root = os.path.dirname(d)
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    failed = []
    with Progress(len(scripts), "bench") as bar:
        for s in scripts:
            bar.start(s)
            proc = subprocess.run([sys.executable, "-m", f"benchmarks.{s}"], cwd=root, env=env,
                                  capture_output=True, text=True)
            bar.step(s)
            print(f"\n## {s}\n")
            if proc.returncode != 0:
                failed.append(s)
                print(f"(failed with exit status {proc.returncode})\n{proc.stderr.strip()[-2000:]}")
            else:
                print(proc.stdout.rstrip())
    return 1 if failed else 0


# ------------------------------------------------------------------ entry point
def _spec_arguments(p, dims: str) -> None:
    p.add_argument("--shape", action="append", default=[], metavar="NAME=D1,D2",
                   help=f"shape of a tensor parameter ({dims}; NAME= for a scalar)")
    p.add_argument("--dtype", action="append", default=[], metavar="NAME=DTYPE", help="dtype (default float32)")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="graphjit", description="graphjit: eager tensors and a tracing JIT.")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    d = sub.add_parser("demo", help="a guided tour (under 30 seconds)")
    d.add_argument("--quick", action="store_true", help="shorter timings")
    d.set_defaults(run=cmd_demo)
    b = sub.add_parser("bench", help="run the benchmark suite (source checkout)")
    b.add_argument("--only", help="run only scripts whose name contains this text")
    b.set_defaults(run=cmd_bench)
    s = sub.add_parser("show", help="inspect a directory written by tracing.save (--timing: where load or "
                                    "first-call time goes)")
    s.add_argument("path", metavar="PATH|FILE:FUNC")
    s.add_argument("--timing", action="store_true",
                   help="time per phase (autograph, trace or import, each optimizer pass, compile)")
    _spec_arguments(s, "with FILE:FUNC; ? = unknown dim")
    s.set_defaults(run=cmd_show)
    c = sub.add_parser("convert", help="print AutoGraph's converted code of FILE:FUNC")
    c.add_argument("target", metavar="FILE:FUNC")
    c.set_defaults(run=cmd_convert)
    g = sub.add_parser("graph", help="draw the traced graph of FILE:FUNC",
                       description="Trace FILE:FUNC and draw its graph. Functions with an input_signature or "
                                   "without parameters need no options; otherwise give --shape per parameter.")
    g.add_argument("target", metavar="FILE:FUNC")
    g.add_argument("--out", help="output file: .svg .png .pdf (Graphviz), .dot, or .html (default FUNC.html)")
    _spec_arguments(g, "? = unknown dim")
    g.add_argument("--optimized", action="store_true", help="draw the graph after the optimizer passes")
    g.add_argument("--logdir", help="also (or, without --out, only) write the graph for TensorBoard into DIR")
    g.add_argument("--graphviz", action="store_true", help="in .html pages, draw with Graphviz when installed")
    g.set_defaults(run=cmd_graph)
    t = sub.add_parser("trace", help="run FILE:FUNC once, traced, and write Chrome trace JSON",
                       description="Trace FILE:FUNC, run its graph once on random inputs with per-op timing, and "
                                   "write the run as Chrome trace JSON (chrome://tracing, ui.perfetto.dev).")
    t.add_argument("target", metavar="FILE:FUNC")
    t.add_argument("--out", help="output file (default FUNC.trace.json)")
    _spec_arguments(t, "every dimension known")
    t.add_argument("--seed", type=int, default=0, help="seed of the random inputs (default 0)")
    t.set_defaults(run=cmd_trace)
    return p


def main(argv: Optional[list] = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "run", None) is None:
        parser.print_help()
        return 2
    try:
        return args.run(args)
    except (CLIError, SavedModelError) as e:
        print(f"graphjit: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("graphjit: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
