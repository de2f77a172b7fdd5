"""How op attrs become JSON and back: a small table of per-type codecs.

JSON-native values stay as they are (None, bool, int, finite float, str, list).
Everything else is a one-key object `{"$<tag>": data}`:

| tag | Python value | data |
|---|---|---|
| `tuple` | tuple | list of encoded items |
| `dict` | dict | list of `[key, value]` pairs, both encoded |
| `float` | inf / -inf / nan | "inf", "-inf", "nan" |
| `dtype` | `DType` | its name |
| `shape` | `TensorShape` | list of dims (null = unknown dim) or null (unknown rank) |
| `array` | NumPy array / scalar | `{dtype, shape, data: base64}`; strings: `{..., strings: [base64]}` |
| `variable` | `Variable` | its name (the GraphDef's "variables" table describes it) |
| `graph` | `Graph` (subgraph body) | a nested GraphDef |
| `slice`, `ellipsis` | slice / `...` | `[start, stop, step]` / null |
| `stream` | sys.stdout / sys.stderr | "stdout" / "stderr" (resolved when decoded) |
| `summary_writer` | an `eager.summary` writer | its logdir (export only: summary ops are refused on import) |
| `config` | any object with `to_config()` and a `from_config` classmethod, defined in the project's packages (e.g. random ops' `RandomState`, a dataset shuffle's `SeedGenerator`) | `{class: "module:QualName", config}` |

Other op families register theirs with `register_attr_codec(tag, match,
encode, decode)`: `match` is a type (or tuple of types) or a predicate,
`encode(value, ctx) -> JSON`, `decode(data, ctx) -> value`.  `ctx` is an
`EncodeContext` / `DecodeContext` (variables by name, nested graph hooks).
Later registrations win, so a family can refine a built-in.

Imports `numpy`, `eager`.
"""
from __future__ import annotations

import base64
import math
import sys
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from eager.data.shuffling import SeedGenerator
from eager.dtypes import DType, as_dtype
from eager.ops.random import RandomState
from eager.shape import TensorShape, brief_repr
from eager.summary.writer import SummaryWriter


@dataclass
class EncodeContext:
    variables: dict = field(default_factory=dict)        # export name -> Variable (filled while encoding)
    encode_graph: Callable = None                        # Graph -> nested GraphDef
    _var_names: dict = field(default_factory=dict)       # id(Variable) -> export name

    def variable_name(self, var) -> str:
        """A name for `var` unique within this GraphDef (distinct variables never share one)."""
        name = self._var_names.get(id(var))
        if name is None:
            base = name = var._name
            i = 1
            while name in self.variables:
                name = f"{base}_{i}"
                i += 1
            self.variables[name] = var
            self._var_names[id(var)] = name
        return name


@dataclass
class DecodeContext:
    variables: dict = field(default_factory=dict)        # name -> Variable to use
    decode_graph: Callable = None                        # nested GraphDef -> Graph


@dataclass
class AttrCodec:
    tag: str
    match: Callable
    encode: Callable
    decode: Callable


_CODECS: list = []
_BY_TAG: dict = {}


def register_attr_codec(tag: str, match, encode: Callable, decode: Callable) -> None:
    """Teach GraphDef how to store attrs of a new kind (see module docstring)."""
    if isinstance(match, (type, tuple)):
        types = match
        pred = lambda v: isinstance(v, types)  # noqa: E731
    elif callable(match):
        pred = match
    else:
        raise TypeError(f"register_attr_codec: match must be a type, tuple of types or predicate, got {match!r}")
    codec = AttrCodec(tag, pred, encode, decode)
    _CODECS.insert(0, codec)
    _BY_TAG[tag] = codec


class AttrCodecError(ValueError):
    """An attr value cannot be encoded, or encoded data cannot be decoded."""


def encode_attr(value, ctx: EncodeContext, where: str = "attr") -> Any:
    t = type(value)
    if value is None or t is bool or t is int or t is str:
        return value
    if t is float:
        return value if math.isfinite(value) else {"$float": repr(value)}
    if t is list:
        return [encode_attr(v, ctx, where) for v in value]
    for codec in _CODECS:
        if codec.match(value):
            return {"$" + codec.tag: codec.encode(value, ctx)}
    raise AttrCodecError(f"{where}: a value of type {type(value).__name__} ({_short(value)}) has no GraphDef "
                         f"codec; register one with graph_runtime.register_attr_codec")


def decode_attr(data, ctx: DecodeContext, where: str = "attr") -> Any:
    if data is None or isinstance(data, (bool, int, float, str)):
        return data
    if isinstance(data, list):
        return [decode_attr(v, ctx, where) for v in data]
    if isinstance(data, dict) and len(data) == 1:
        (key, payload), = data.items()
        if isinstance(key, str) and key.startswith("$"):
            codec = _BY_TAG.get(key[1:])
            if codec is None:
                raise AttrCodecError(f"{where}: unknown attr encoding {key!r} (known: "
                                     f"{sorted('$' + k for k in _BY_TAG)})")
            try:
                return codec.decode(payload, ctx)
            except AttrCodecError:
                raise
            except Exception as e:  # noqa: BLE001 - malformed payloads are reported by name
                raise AttrCodecError(f"{where}: malformed {key} attr: {type(e).__name__}: {e}") from None
    raise AttrCodecError(f"{where}: cannot decode attr data {_short(data)}")


def _short(v) -> str:
    return brief_repr(v)


# ------------------------------------------------------------------ built-in codecs
def _enc_array(v, ctx):
    a = np.asarray(v)
    out = {"dtype": as_dtype(a.dtype).name, "shape": list(a.shape)}
    if isinstance(v, np.generic):
        out["scalar"] = True
    if a.dtype.kind == "O":
        out["strings"] = [base64.b64encode(x if isinstance(x, bytes) else str(x).encode()).decode("ascii")
                          for x in a.reshape(-1)]
    else:
        out["data"] = base64.b64encode(np.ascontiguousarray(a).astype(a.dtype.newbyteorder("<")).tobytes()) \
            .decode("ascii")
    return out


def _dec_array(d, ctx):
    dt = as_dtype(d["dtype"])
    shape = TensorShape(d["shape"]).dims        # ints only (2.5 is not a dim), int64 at most
    if "strings" in d:
        flat = np.empty(len(d["strings"]), dtype=object)
        for i, s in enumerate(d["strings"]):
            flat[i] = base64.b64decode(s)
        a = flat.reshape(shape)
    else:
        raw = base64.b64decode(d["data"])
        a = np.frombuffer(raw, dtype=dt.np_dtype.newbyteorder("<")).astype(dt.np_dtype).reshape(shape)
    return a[()] if d.get("scalar") else np.array(a)


_CONFIG_CLASSES: dict = {}   # "module:QualName" -> class: the only classes a GraphDef may name


def register_config_class(cls) -> None:
    """Allow attrs of type `cls` (with `to_config()` / `cls.from_config(config)`) in GraphDefs.

    Decoding looks the class up in this table only: a file can never make the
    loader import a module or reach an attribute it names.
    """
    _CONFIG_CLASSES[f"{cls.__module__}:{cls.__qualname__}"] = cls


def _is_config_object(v) -> bool:
    return f"{type(v).__module__}:{type(v).__qualname__}" in _CONFIG_CLASSES


def _enc_config(v, ctx):
    t = type(v)
    return {"class": f"{t.__module__}:{t.__qualname__}", "config": encode_attr(v.to_config(), ctx)}


def _dec_config(d, ctx):
    cls = _CONFIG_CLASSES.get(str(d.get("class")))
    if cls is None:
        raise AttrCodecError(f"refusing to restore an object of class {d.get('class')!r}: only registered "
                             f"classes ({sorted(_CONFIG_CLASSES)}) can be restored from a GraphDef")
    return cls.from_config(decode_attr(d["config"], ctx))


def _dec_variable(name, ctx):
    try:
        return ctx.variables[name]
    except KeyError:
        raise AttrCodecError(f"attr refers to variable {name!r}, which the GraphDef's variables table does not "
                             f"describe") from None


def _dec_stream(name, ctx):
    if name == "stdout":
        return sys.stdout
    if name == "stderr":
        return sys.stderr
    raise AttrCodecError(f"unknown stream {name!r}")


def _enc_stream(v, ctx):
    if v is sys.stdout or v is sys.__stdout__:
        return "stdout"
    return "stderr"


register_attr_codec("config", _is_config_object, _enc_config, _dec_config)
register_attr_codec("stream", lambda v: v is sys.stdout or v is sys.stderr or v is sys.__stdout__
                    or v is sys.__stderr__, _enc_stream, _dec_stream)
register_attr_codec("ellipsis", lambda v: v is Ellipsis, lambda v, c: None, lambda d, c: Ellipsis)
register_attr_codec("slice", slice, lambda v, c: [encode_attr(v.start, c), encode_attr(v.stop, c),
                                                  encode_attr(v.step, c)],
                    lambda d, c: slice(*[decode_attr(x, c) for x in d]))
register_attr_codec("graph", lambda v: type(v).__name__ in ("Graph",) or hasattr(v, "_create_op"),
                    lambda v, c: c.encode_graph(v), lambda d, c: c.decode_graph(d))
register_attr_codec("variable", lambda v: getattr(v, "_is_variable", False),
                    lambda v, c: c.variable_name(v), _dec_variable)
register_attr_codec("array", (np.ndarray, np.generic), _enc_array, _dec_array)
register_attr_codec("shape", TensorShape, lambda v, c: None if v.dims is None else list(v.dims),
                    lambda d, c: TensorShape(d))     # refuses non-integer dims (2.5 would become 2)
register_attr_codec("dtype", DType, lambda v, c: v.name, lambda d, c: as_dtype(d))
# a float subclass (np.float64) as a plain float: NumPy's repr, 'np.float64(0.9)', does not read back
register_attr_codec("float", float, lambda v, c: repr(float(v)), lambda d, c: float(d))
register_attr_codec("dict", dict, lambda v, c: [[encode_attr(k, c), encode_attr(x, c)] for k, x in v.items()],
                    lambda d, c: {_hashable(decode_attr(k, c)): decode_attr(x, c) for k, x in d})
register_attr_codec("tuple", tuple, lambda v, c: [encode_attr(x, c) for x in v],
                    lambda d, c: tuple(decode_attr(x, c) for x in d))


def _hashable(k):
    return tuple(k) if isinstance(k, list) else k


def _dec_summary_writer(logdir, ctx):
    raise AttrCodecError(f"a summary writer (logdir {str(logdir)[:200]!r}) cannot be restored from a GraphDef: an "
                         f"imported graph never chooses a directory to write into")


def _register_builtin_config_classes() -> None:
    register_config_class(RandomState)
    register_config_class(SeedGenerator)
    register_attr_codec("summary_writer", SummaryWriter, lambda v, c: v.logdir, _dec_summary_writer)


_register_builtin_config_classes()
