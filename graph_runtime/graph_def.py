"""GraphDef: a graph as plain, versioned, JSON-serializable data; export and files.

Format (version 1):

    {"format": "graphjit.GraphDef", "version": 1,
     "nodes": [{"name": "MatMul", "op": "MatMul", "inputs": ["x:0", "w/read:0"],
                "control_inputs": [], "attrs": {"transpose_a": false, ...},
                "device": "", "location": ["model.py", 12, "build"]}, ...],
     "variables": [{"name": "w", "dtype": "float32", "shape": [3, 4], "trainable": true,
                    "initializer": "w/Assign", "value": <array attr, only when no initializer>}],
     "inputs": [], "outputs": []}

Nodes are listed in creation order (a topological order); attrs are encoded by
`attr_codecs` (arrays as base64 with dtype and shape, DTypes and shapes
tagged, variables by name, subgraph bodies as nested GraphDefs).  `inputs` /
`outputs` name the tensors of a function body (empty for plain graphs).
A variable used by the graph but initialized outside it (an eager variable)
carries its current value, so an imported copy starts initialized.

`import_graph_def` (graph_import.py, above `graph.py`: it makes graphs)
validates everything before adding a single node, so a malformed GraphDef
never half-imports.  Errors are `GraphDefError` (an `InvalidArgumentError`,
hence a ValueError).

Imports `eager` and `attr_codecs` only (`graph.py` imports this module).
"""
from __future__ import annotations

import json
import os

from eager.errors import InvalidArgumentError
from eager.variable_storage import snapshot
from eager.shape import brief_repr

from .attr_codecs import EncodeContext, encode_attr

GRAPH_DEF_FORMAT = "graphjit.GraphDef"
GRAPH_DEF_VERSION = 1


class GraphDefError(InvalidArgumentError):
    """A GraphDef is malformed or cannot be imported (the message names the problem)."""


_NOT_IN_NAMES = frozenset("'\"\\`")


def check_name(name: str) -> None:
    """ValueError unless `name` may name a node or variable of a GraphDef: non-empty, printable (no newline
    or other control character), without quotes, backquotes or backslashes.  Looser than the rule for names
    given when building (`building.check_node_name`): graphs can hold names derived from a variable's name
    (`my var/read`), and their GraphDefs must import again.  Export and import check it alike, so a graph
    that exports imports."""
    if not isinstance(name, str) or not name or len(name) > 1024 or not name.isprintable() or \
            not _NOT_IN_NAMES.isdisjoint(name):
        raise ValueError(f"{brief_repr(name)} is not a valid node name: printable text of at most 1,024 "
                         f"characters without quotes, backquotes or backslashes")


def graph_to_graph_def(graph, add_shapes: bool = False, _ctx: EncodeContext = None) -> dict:
    """`graph` as a GraphDef dict (see module docstring).

    Nested bodies share the outer encoding context, so a variable has one name
    throughout and its record appears in every GraphDef that mentions it.
    """
    ctx = _ctx or EncodeContext()
    ctx.encode_graph = lambda g: graph_to_graph_def(g, add_shapes, ctx)
    nodes = []
    for op in graph.get_operations():
        try:
            check_name(op.name)
        except ValueError as e:
            raise GraphDefError(f"cannot export op {op.name!r} ({op.type}): {e}") from None
        attrs = {k: encode_attr(v, ctx, f"op {op.name!r} ({op.type}) attr {k!r}") for k, v in op.attrs.items()}
        node = {"name": op.name, "op": op.type, "inputs": [t.name for t in op.inputs],
                "control_inputs": [c.name for c in op.control_inputs], "attrs": attrs}
        if op.device:
            node["device"] = op.device
        if op._colocate:
            node["colocate_with"] = list(op._colocate)
        loc = op.location
        if loc is not None:
            node["location"] = [loc.filename, loc.lineno, loc.function]
        if add_shapes:
            node["output_shapes"] = [None if o.shape.dims is None else list(o.shape.dims) for o in op.outputs]
        nodes.append(node)
    variables = []
    for name, var in ctx.variables.items():
        try:
            check_name(name)
        except ValueError as e:
            raise GraphDefError(f"cannot export variable {name!r}: {e}") from None
        init = var.initializer
        in_graph = init is not None and init.graph is graph
        rec = {"name": name, "dtype": var.dtype.name,
               "shape": None if var.shape.dims is None else list(var.shape.dims),
               "trainable": bool(var.trainable), "initializer": init.name if in_graph else None}
        if not in_graph and var.is_initialized():
            rec["value"] = encode_attr(snapshot(var), ctx, f"variable {name!r} value")    # an array, uncopied
        variables.append(rec)
    return {"format": GRAPH_DEF_FORMAT, "version": GRAPH_DEF_VERSION, "nodes": nodes, "variables": variables,
            "inputs": [t.name for t in graph.inputs], "outputs": [t.name for t in graph.outputs]}


def write_graph(graph_or_graph_def, logdir: str, name: str, as_text: bool = True) -> str:
    """Write a GraphDef as JSON to `logdir/name` (pretty when `as_text`); returns the path."""
    gd = graph_or_graph_def if isinstance(graph_or_graph_def, dict) else graph_or_graph_def.as_graph_def()
    os.makedirs(logdir or ".", exist_ok=True)
    path = os.path.join(logdir, name)
    with open(path, "w", encoding="utf-8") as f:
        if as_text:
            json.dump(gd, f, indent=1, allow_nan=False)
        else:
            json.dump(gd, f, separators=(",", ":"), allow_nan=False)
    return path


def read_graph(path: str) -> dict:
    """Read a GraphDef written by `write_graph` (checks it is one; full validation happens on import)."""
    with open(path, "rb") as f:
        raw = f.read()
    try:
        gd = json.loads(raw.decode("utf-8"), parse_int=parse_json_int, parse_constant=_refuse_constant)
    except (UnicodeDecodeError, ValueError, RecursionError) as e:   # ValueError: also a 5,000-digit integer
        raise GraphDefError(f"{path} is not a GraphDef: not UTF-8 JSON ({type(e).__name__}: "
                            f"{str(e)[:120]})") from None
    check_header(gd, path)
    return gd


def parse_json_int(text: str) -> int:
    """`json.loads`'s parse_int: integers of at most 20 digits (64 bits); longer ones are refused before
    Python converts them (quadratic in the length) and before any message tries to print them."""
    if len(text) > 21:
        raise ValueError(f"integer literal of {len(text)} characters does not fit in 64 bits")
    return int(text)


def _refuse_constant(name: str):
    raise ValueError(f"non-standard JSON constant {name} (write_graph writes non-finite floats as $float)")


def check_header(gd, where: str = "graph_def") -> None:
    """Raise GraphDefError unless `gd` looks like a GraphDef of a version this code reads."""
    if not isinstance(gd, dict) or gd.get("format") != GRAPH_DEF_FORMAT:
        got = type(gd).__name__ if not isinstance(gd, dict) else f"a dict with format {gd.get('format')!r}"
        raise GraphDefError(f"{where} is not a GraphDef: expected a dict with format {GRAPH_DEF_FORMAT!r}, got "
                            f"{got}")
    v = gd.get("version")
    if type(v) is not int or not 1 <= v <= GRAPH_DEF_VERSION:
        raise GraphDefError(f"{where}: unsupported GraphDef version {brief_repr(v)}; this graphjit reads versions 1.."
                            f"{GRAPH_DEF_VERSION}")
