"""Our graphs as TensorBoard's GraphDef proto, for the graph dashboard (`summary.graph`).

`to_tensorboard_graph_def(graph)` reads a graph through its public methods
(`get_operations()`, `op.name/type/inputs/control_inputs/device/attrs/outputs/
location`, `graph.inputs/outputs`), so this module needs no import of
graph_runtime (eager imports nothing above it).  Each op becomes a `NodeDef`:

- `name` keeps its name scopes (`dense/MatMul`: the dashboard groups by them);
- inputs in TensorFlow's form (`x` for output 0, `x:1`, control inputs `^op`);
- `device` as set on the op;
- attrs the dashboard shows: `dtype`/`T` (output dtype), `shape` and
  `_output_shapes` (edge labels), a Const's `value` (content only up to
  `MAX_CONST_ELEMENTS` elements; larger constants keep dtype and shape),
  scalar attrs (bool, int, float, str), tuples of those, other values by a
  short description (variables by name, a summary writer by its logdir), and
  `_source` = "file:line (function)" of the user's code;
- a cond/while/case body attr becomes a function in the library, referenced
  by name from the op (`then_branch`, `body`, ...), bodies nested to any depth.

Imports `tensorboard` (lazily, by the caller) and nothing of the project.
"""
from __future__ import annotations

import re

import numpy as np

MAX_CONST_ELEMENTS = 16
_DT = {"float16": "DT_HALF", "float32": "DT_FLOAT", "float64": "DT_DOUBLE", "int8": "DT_INT8",
       "int16": "DT_INT16", "int32": "DT_INT32", "int64": "DT_INT64", "uint8": "DT_UINT8", "bool": "DT_BOOL",
       "string": "DT_STRING", "complex64": "DT_COMPLEX64", "complex128": "DT_COMPLEX128"}


def _protos():
    # tensorboard is an optional extra: imported when a graph is first written, never by `import eager`
    from tensorboard.compat.proto import (attr_value_pb2, function_pb2, graph_pb2, node_def_pb2, op_def_pb2,
                                          tensor_shape_pb2, types_pb2, versions_pb2)
    from tensorboard.util import tensor_util
    return dict(attr=attr_value_pb2, fn=function_pb2, graph=graph_pb2, node=node_def_pb2, opdef=op_def_pb2,
                shape=tensor_shape_pb2, types=types_pb2, versions=versions_pb2, tensor_util=tensor_util)


def _is_graph(v) -> bool:
    return hasattr(v, "get_operations") and hasattr(v, "inputs")


def _dtype_enum(P, dtype) -> int:
    return P["types"].DataType.Value(_DT.get(getattr(dtype, "name", ""), "DT_INVALID"))


def _shape_proto(P, shape):
    dims = getattr(shape, "dims", shape)
    if dims is None:
        return P["shape"].TensorShapeProto(unknown_rank=True)
    return P["shape"].TensorShapeProto(dim=[P["shape"].TensorShapeProto.Dim(size=-1 if d is None else int(d))
                                            for d in dims])


def _ref(t, args) -> str:
    """A tensor as TensorFlow names an input: 'op' (output 0) or 'op:k'; a function argument by its name."""
    if id(t) in args:
        return args[id(t)]
    name = t.name
    return name[:-2] if name.endswith(":0") else name


class _Converter:
    def __init__(self, P):
        self.P = P
        self.library = P["fn"].FunctionDefLibrary()
        self.fn_names: set = set()

    def function_name(self, base: str) -> str:
        name = re.sub(r"[^A-Za-z0-9_.\-]", "_", base) or "body"
        out, i = name, 1
        while out in self.fn_names:
            out, i = f"{name}_{i}", i + 1
        self.fn_names.add(out)
        return out

    def attr_value(self, key, v):
        A = self.P["attr"].AttrValue
        if isinstance(v, bool) or isinstance(v, np.bool_):
            return A(b=bool(v))
        if isinstance(v, (int, np.integer)):
            return A(i=int(v))
        if isinstance(v, (float, np.floating)):
            return A(f=float(v))
        if isinstance(v, str):
            return A(s=v.encode("utf-8", "backslashreplace"))
        if type(v).__name__ == "DType":
            return A(type=_dtype_enum(self.P, v))
        if type(v).__name__ == "TensorShape":
            return A(shape=_shape_proto(self.P, v))
        if isinstance(v, (tuple, list)) and v and all(isinstance(x, (int, np.integer)) and not isinstance(x, bool)
                                                      for x in v):
            return A(list=A.ListValue(i=[int(x) for x in v]))
        if isinstance(v, np.ndarray):
            return A(s=f"array {v.dtype}{list(v.shape)}".encode())
        if getattr(v, "_is_variable", False):
            return A(s=f"variable {getattr(v, '_name', '?')}".encode())
        if hasattr(v, "logdir"):
            return A(s=f"summary writer {v.logdir}".encode("utf-8", "backslashreplace"))
        r = repr(v)
        return A(s=(r if len(r) <= 200 else r[:197] + "...").encode("utf-8", "backslashreplace"))

    def node(self, op, args):
        P = self.P
        A = P["attr"].AttrValue
        nd = P["node"].NodeDef(name=op.name, op=op.type, device=op.device or "")
        nd.input.extend([_ref(t, args) for t in op.inputs] + ["^" + c.name for c in op.control_inputs])
        outs = list(op.outputs)
        for k, v in op.attrs.items():
            if _is_graph(v):
                fname = self.function(v, f"{op.name}_{k}")
                nd.attr[k].CopyFrom(A(func=P["attr"].NameAttrList(name=fname)))
            elif isinstance(v, (list, tuple)) and v and all(_is_graph(b) for b in v):     # Case branches
                funcs = [P["attr"].NameAttrList(name=self.function(b, f"{op.name}_{k}_{i}")) for i, b in enumerate(v)]
                nd.attr[k].CopyFrom(A(list=A.ListValue(func=funcs)))
            elif k == "value" and isinstance(v, (np.ndarray, np.generic)):
                nd.attr[k].CopyFrom(A(tensor=self.tensor(np.asarray(v))))
            else:
                nd.attr[k].CopyFrom(self.attr_value(k, v))
        if outs and "dtype" not in nd.attr:
            nd.attr["T" if op.type != "Const" else "dtype"].CopyFrom(A(type=_dtype_enum(P, outs[0].dtype)))
        if outs:
            nd.attr["_output_shapes"].CopyFrom(A(list=A.ListValue(shape=[_shape_proto(P, o.shape) for o in outs])))
        loc = op.location
        if loc is not None:
            nd.attr["_source"].CopyFrom(A(s=f"{loc.filename}:{loc.lineno} ({loc.function})"
                                            .encode("utf-8", "backslashreplace")))
        return nd

    def tensor(self, arr):
        tu = self.P["tensor_util"]
        if arr.dtype.kind not in "biuf":
            return self.P["tensor_util"].make_tensor_proto(np.zeros(0, np.float32)) if arr.size == 0 else \
                tu.make_tensor_proto(np.array([str(x) for x in arr.reshape(-1)[:MAX_CONST_ELEMENTS]]))
        if arr.size <= MAX_CONST_ELEMENTS:
            return tu.make_tensor_proto(arr)
        proto = tu.make_tensor_proto(np.zeros((), arr.dtype))
        proto.ClearField("tensor_content")
        for f in ("float_val", "double_val", "int_val", "int64_val", "bool_val", "half_val"):
            proto.ClearField(f)
        proto.tensor_shape.CopyFrom(_shape_proto(self.P, arr.shape))
        return proto

    def function(self, body, base: str) -> str:
        P = self.P
        name = self.function_name(base)
        fdef = self.library.function.add()
        fdef.signature.name = name
        args = {}
        inputs = list(body.inputs)
        input_ops = {id(t.op) for t in inputs}
        for i, t in enumerate(inputs):
            arg = f"{re.sub(r'[^A-Za-z0-9_]', '_', t.op.name)}_{i}"
            args[id(t)] = arg
            fdef.signature.input_arg.add(name=arg, type=_dtype_enum(P, t.dtype))
        for op in body.get_operations():
            if id(op) not in input_ops:
                fdef.node_def.append(self.node(op, args))
        for i, t in enumerate(body.outputs):
            out = f"output_{i}"
            fdef.signature.output_arg.add(name=out, type=_dtype_enum(P, t.dtype))
            fdef.ret[out] = _ref(t, args)
        return name


def to_tensorboard_graph_def(graph):
    """TensorBoard's `GraphDef` proto for `graph` (see module docstring)."""
    P = _protos()
    conv = _Converter(P)
    gd = P["graph"].GraphDef(versions=P["versions"].VersionDef(producer=1))
    for op in graph.get_operations():
        gd.node.append(conv.node(op, {}))
    if conv.library.function:
        gd.library.CopyFrom(conv.library)
    return gd
