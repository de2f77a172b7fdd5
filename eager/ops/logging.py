"""`print` (exported as `eager.print`): the stateful `PrintV2` op and tf.print formatting.

`format_tensor(array, summarize)` reproduces TensorFlow's `tf.print` layout:
`[1 2 3]`, `[[1.5 2]\n [3 4]]`, the first and last `summarize` entries of a
long dimension around `...`, floats in the shortest `%g` form that round-trips
(`%.6g` else `%.9g` for float32/float16, `%.15g` else `%.17g` for float64),
bools as `1`/`0`, strings quoted inside tensors (`["a" "b"]`) but bare when a
lone scalar string is printed.

`print(*inputs)` builds a template once (Python values and nested structures
are rendered with `str()` at call time, tensors become slots) and dispatches
`PrintV2(*tensors, template=..., output_stream=..., summarize=...)`, a
stateful op without outputs: eagerly it prints now and returns None; in a
graph it prints at every run and the Operation is returned (`run_effect`).  The streams
`sys.stdout`/`sys.stderr` are stored by name and looked up when the op runs
(so redirection works); other file-like objects are written to directly, and
`'file://path'` appends to a file.  An imported GraphDef or saved function
may only print to stdout/stderr (`_check_import`): a file never chooses which
file of this machine gets written.  Imports: numpy and the eager core.
"""
from __future__ import annotations

import sys

import numpy as np

from .. import context as _context, nest
from ..context import executing_eagerly
from ..convert import convert_to_tensor
from ..dispatch import execute
from ..errors import InvalidArgumentError
from ..registry import op
from ..tensor import Tensor

__all__ = ["print", "format_tensor"]

_builtin_print = print


# ------------------------------------------------------------------ formatting
def _float_str(v, digits):
    s = "%.*g" % (digits[0], v)
    if np.isfinite(v) and type(v)(s) != v:
        s = "%.*g" % (digits[1], v)
    return s


def _element_formatter(dtype, quote_strings):
    kind = dtype.kind
    if kind == "f":
        digits = (15, 17) if dtype == np.float64 else (6, 9)
        ftype = np.float64 if dtype == np.float64 else np.float32
        return lambda v: _float_str(ftype(v), digits)
    if kind == "b":
        return lambda v: "1" if v else "0"
    if kind == "O" or kind in "SU":
        def fmt(v):
            s = v.decode("utf-8", "backslashreplace") if isinstance(v, bytes) else str(v)
            s = s.encode("unicode_escape").decode("ascii").replace('"', '\\"') if quote_strings else s
            return f'"{s}"' if quote_strings else s
        return fmt
    return lambda v: str(v)


def format_tensor(value, summarize: int = 3, quote_strings: bool = True) -> str:
    """A NumPy value laid out like `tf.print` (summarize < 0 prints everything)."""
    arr = np.asarray(value)
    fmt = _element_formatter(arr.dtype, quote_strings)
    out: list[str] = []
    _format_dim(arr[()] if arr.ndim == 0 else arr, 0, arr.ndim, summarize, fmt, out)
    return "".join(out)


def _spacing(dim, ndim):
    """What separates two entries of dimension `dim`: a space, or newlines and indentation."""
    if dim == ndim - 1:
        return " "
    return "\n" * (ndim - dim - 1) + " " * (dim + 1)


def _format_dim(arr, dim, ndim, edge, fmt, out):
    if dim == ndim:
        out.append(fmt(arr))
        return
    n = arr.shape[0]
    if edge < 0 or n <= 2 * edge:
        idx = list(range(n))
    else:
        idx = list(range(edge)) + [None] + list(range(n - edge, n))
    sep = _spacing(dim, ndim)
    out.append("[")
    for k, i in enumerate(idx):
        if i is None:
            out.append("...")
        else:
            _format_dim(arr[i], dim + 1, ndim, edge, fmt, out)
        if k < len(idx) - 1:
            out.append(sep)
    out.append("]")


# ------------------------------------------------------------------ templates
class _Slot:
    """Stands for the k-th tensor while a nested Python structure is rendered with str()."""

    def __init__(self, k: int):
        self.k = k

    def __repr__(self):
        return f"\x00{self.k}\x00"

    __str__ = __repr__


def _is_tensorlike(x) -> bool:
    return isinstance(x, Tensor) or hasattr(x, "_to_tensor")


def build_template(inputs, sep: str = " ", end: str = ""):
    """(template, tensors): template is a tuple of literal strings and int slots into tensors."""
    tensors: list = []
    pieces: list = []

    def slot(x):
        tensors.append(convert_to_tensor(x))
        return _Slot(len(tensors) - 1)

    for i, x in enumerate(inputs):
        if i:
            pieces.append(sep)
        if _is_tensorlike(x):
            pieces.append(slot(x).k)
        elif nest.is_nested(x):
            rendered = str(nest.map_structure(lambda v: slot(v) if _is_tensorlike(v) else v, x))
            for j, part in enumerate(rendered.split("\x00")):
                pieces.append(int(part) if j % 2 else part)
        else:
            pieces.append(x if isinstance(x, str) else str(x))
    pieces.append(end)
    merged: list = []
    for p in pieces:
        if isinstance(p, str) and merged and isinstance(merged[-1], str):
            merged[-1] += p
        elif p != "":
            merged.append(p)
    return tuple(merged), tensors


def render(template, arrays, summarize: int, quote_strings: bool = True) -> str:
    return "".join(p if isinstance(p, str) else format_tensor(arrays[p], summarize, quote_strings)
                   for p in template)


# ------------------------------------------------------------------ PrintV2
def _stream_attr(output_stream):
    if output_stream is None or output_stream is sys.stderr or output_stream is sys.__stderr__:
        return "stderr"
    if output_stream is sys.stdout or output_stream is sys.__stdout__:
        return "stdout"
    if isinstance(output_stream, str):
        if output_stream in ("stdout", "stderr") or output_stream.startswith("file://"):
            return output_stream
        raise InvalidArgumentError(f"print: output_stream must be sys.stdout, sys.stderr, a file-like object or "
                                   f"'file://path', got {output_stream!r}", op_name="PrintV2")
    if not hasattr(output_stream, "write") and not callable(output_stream):
        raise InvalidArgumentError(f"print: output_stream {output_stream!r} has no write() method",
                                   op_name="PrintV2")
    return output_stream


def _write(stream, text):
    if stream == "stderr":
        sys.stderr.write(text)
    elif stream == "stdout":
        sys.stdout.write(text)
    elif isinstance(stream, str):
        with open(stream[len("file://"):], "a", encoding="utf-8") as f:
            f.write(text)
    elif hasattr(stream, "write"):
        stream.write(text)
    else:
        stream(text)


def _print_kernel(*arrays, template, output_stream, summarize, quote_strings):
    _write(output_stream, render(template, arrays, summarize, quote_strings))
    return ()


def _check_import(raw_attrs):
    """GraphDef import: a file may print to stdout/stderr only, never choose a file of this machine to write."""
    stream = raw_attrs.get("output_stream")
    if stream not in ("stdout", "stderr", {"$stream": "stdout"}, {"$stream": "stderr"}):
        raise ValueError(f"attr 'output_stream' is {stream!r:.80}: an imported PrintV2 may only write to "
                         f"stdout or stderr ('file://' streams are refused: a GraphDef or saved function must "
                         f"not pick a file to append to)")


PRINT = op("PrintV2", _print_kernel, lambda specs, attrs: [], num_outputs=0, effect="write",
           extra={"check_import": _check_import},
           doc="Write the rendered template (attrs template, output_stream, summarize) at every run.")


def print(*inputs, sep=" ", end="\n", output_stream=None, summarize=3, name=None):  # noqa: A001
    """Print tensors (formatted like tf.print) and Python values, separated by `sep`, followed by `end`.

    `output_stream` defaults to the *current* sys.stderr (None means stderr, looked up at run time).
    """
    template, tensors = build_template(inputs, str(sep), str(end))
    lone_string = len(inputs) == 1 and len(tensors) == 1 and tensors[0].dtype.is_string and \
        tensors[0].shape.rank == 0
    attrs = {"template": template, "output_stream": _stream_attr(output_stream),
             "summarize": 3 if summarize is None else int(summarize), "quote_strings": not lone_string}
    return run_effect(PRINT, tensors, attrs, name)


def run_effect(opdef, inputs, attrs, name=None):
    """Dispatch an op without outputs: None eagerly; in a graph, the Operation.

    `execute` can only hand back an op's outputs (none here), so the graph
    context is asked for the Operation itself (`Context.add_node`), which
    callers can fetch or use as a control dependency.
    """
    if executing_eagerly():
        execute(opdef, tuple(inputs), attrs, name)
        return None
    return _context.current().add_node(opdef, tuple(inputs), attrs, name)
