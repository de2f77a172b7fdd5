"""The arithmetic simplification rules, as a table (read top to bottom; first match wins per op).

Every rule states when it fires.  The conditions that keep results unchanged:

- Broadcasting: `x * 1 -> x` (and friends) only when the output's static shape
  and dtype equal `x`'s, with `x`'s rank known.  `x + zeros(bigger)` is not `x`
  (its output is bigger), so it stays.  Constants have fully known shapes, so
  a matching static shape means the constant cannot broadcast `x` at run time.
- IEEE: `x * 0` is never folded for floats (inf * 0 is nan, -x * 0 is -0);
  `abs(abs(x))` and `log(exp(x))` are kept (overflow).  Signed zeros too:
  `x + 0.0` is *not* `x` for `x = -0.0` (it gives +0.0), and `0.0 - x` is not
  `-x` for `x = +0.0`; so for floats `x + c -> x` needs `c` to be -0.0, `x - c`
  needs +0.0, and `c - x -> Neg(x)` needs -0.0 (bitwise exact), unless the
  pass option `signed_zeros=False` ("fast math", TensorFlow's behaviour) is
  set.  Integers have no such subtlety.
- NumPy kernels: `pow(x, c)` with a 0-d constant `c` in {2, 1, .5, -1} uses
  NumPy's fast path, which *is* square/copy/sqrt/reciprocal (so `pow(-inf, .5)`
  is nan in our kernel as in `Sqrt`): these rewrites are exact.  An exponent of
  shape (1,) goes through the general `pow` and is left alone.
- `not(x > y) -> x <= y` only for integers and bools: with floats, NaN makes
  both comparisons false (`not(nan > 1)` is true, `nan <= 1` is false).
  `not(x == y) -> x != y` holds for every dtype, NaN included.
- Reshape: `reshape(x, s) -> x` only when `x`'s static shape is fully known
  and equal to `s` (TensorFlow drops `reshape(x, [3])` for `x` of static shape
  `[?]` and returns 2 elements silently; here that reshape stays and raises);
  `reshape(x, shape(x)) -> x` always; `reshape(reshape(x, a), b) ->
  reshape(x, b)` when `a`, `b` are -1-free and of equal size (b's check implies
  a's).
- `cast(cast(x, a), b)`: only when `a` holds every value of `x`'s dtype exactly
  (int32 -> float64 -> int32 is `x`; float32 -> int32 -> float32 is not), and
  never through a float-to-int conversion of a different width.
- Rules marked `exact=False` change rounding (they are more accurate):
  `log(1 + x) -> Log1p`, `exp(x) - 1 -> Expm1`, `log(softmax(x)) -> LogSoftmax`
  (which also stays finite where softmax underflows to 0).  Log1p and Expm1
  keep -0.0 where the originals round it to +0.0, so under `signed_zeros`
  they become `Log1p(x) + 0.0` and `Expm1(x) + 0.0` (a later `1 / y` keeps
  the original's +inf).

Imports `numpy` and the pattern module.
"""
from __future__ import annotations

import numpy as np

from .pattern import C, P, Rule, V

# ------------------------------------------------------------------ constant predicates
def _all_eq(v, x) -> bool:
    return v.size > 0 and v.dtype != object and bool(np.all(v == x))


def is_one(v) -> bool:
    return _all_eq(v, 1)


def is_zero(v) -> bool:
    return _all_eq(v, 0)


def _scalar(x):
    return lambda v: v.ndim == 0 and v.dtype != object and v.dtype.kind in "iuf" and bool(v == x)


def _any(v) -> bool:
    return True


def _is_float(t) -> bool:
    return t._dtype.is_floating


def _zero_ok(b, c, sign: bool) -> bool:
    """Is constant zero `c` usable as the identity element?  `sign`: the needed sign bit for floats."""
    v = b.value(c)
    if not v.dtype.kind == "f":
        return True
    if not b.rw.ctx.option("signed_zeros", True):
        return True
    return bool(np.all(np.signbit(v) == sign))


# ------------------------------------------------------------------ rewrite functions
def _keep_x(b, m):
    x = m["x"]
    return x if b.same_as_output(x) else None


def _add_zero(b, m):
    return _keep_x(b, m) if _zero_ok(b, m["c"], True) else None


def _sub_zero(b, m):
    return _keep_x(b, m) if _zero_ok(b, m["c"], False) else None


def _zero_sub(b, m):
    x = m["x"]
    if not b.same_as_output(x) or not _zero_ok(b, m["c"], True) or x._dtype.is_unsigned or x._dtype.is_bool:
        return None
    return b.emit("Neg", x)


def _one_div(b, m):
    x = m["x"]
    return b.emit("Reciprocal", x) if b.same_as_output(x) and _is_float(x) else None


def _neg_neg(b, m):
    return m["x"]      # also reshape(x, shape(x)): whatever x's run-time shape, it is x


def _transpose_transpose(b, m):
    x = m["x"]
    r = x._shape.rank
    if r is None:
        return None            # an invalid perm must still fail at run time
    p1 = [int(q) % max(r, 1) for q in b.value(m["p1"]).reshape(-1)]
    p2 = [int(q) % max(r, 1) for q in b.value(m["p2"]).reshape(-1)]
    if sorted(p1) != list(range(r)) or sorted(p2) != list(range(r)):
        return None
    p = [p1[q] for q in p2]
    if p == list(range(r)):
        return x if b.same_as_output(x) else None
    return b.emit("Transpose", x, b.const(np.array(p, dtype=b.value(m["p2"]).dtype)))


# src dtype -> dtypes that hold all its values exactly
_LOSSLESS = {
    "bool": {"int8", "uint8", "int16", "int32", "int64", "float16", "float32", "float64"},
    "int8": {"int16", "int32", "int64", "float16", "float32", "float64"},
    "uint8": {"int16", "int32", "int64", "float16", "float32", "float64"},
    "int16": {"int32", "int64", "float32", "float64"},
    "int32": {"int64", "float64"},
    "float16": {"float32", "float64"},
    "float32": {"float64"},
}


def _cast_cast(b, m):
    x, inner = m["x"], m["inner"]
    src, mid, dst = x._dtype, inner._dtype, b.attrs["dtype"]
    if mid.name not in _LOSSLESS.get(src.name, ()):
        return None
    if dst is src:
        return x
    if src.is_floating and not dst.is_floating:
        return None
    return b.emit("Cast", x, dtype=dst)


def _square(b, m):
    return b.emit("Square", m["x"])


def _pow_to(unary, floats_only=False):
    def fn(b, m):
        x = m["x"]
        if not b.same_as_output(x) or (floats_only and not _is_float(x)):
            return None
        return x if unary is None else b.emit(unary, x)
    return fn


def _zero_signed_as_rounded(b, t):
    """`t + 0.0` unless the pass may ignore signed zeros: log1p(-0.0) and expm1(-0.0) are -0.0 where
    log(1 + -0.0) and exp(-0.0) - 1 give +0.0, and a later division would turn that into an inf of the
    other sign; adding +0.0 makes -0.0 +0.0 and changes no other value."""
    if not b.rw.ctx.option("signed_zeros", True):
        return t
    return b.emit("AddV2", t, b.const(np.zeros((), t._dtype.np_dtype)))


def _log1p(b, m):
    x = m["x"]
    if not (_is_float(x) and b.same_as_output(x) and m["add"]._shape == x._shape):
        return None
    return _zero_signed_as_rounded(b, b.emit("Log1p", x))


def _expm1(b, m):
    x = m["x"]
    return _zero_signed_as_rounded(b, b.emit("Expm1", x)) if _is_float(x) and b.same_as_output(x) else None


def _log_softmax(b, m):
    return b.emit("LogSoftmax", m["x"], **m["sm_op"]._attrs)


_INVERSE = {"Greater": "LessEqual", "LessEqual": "Greater", "Less": "GreaterEqual", "GreaterEqual": "Less",
            "Equal": "NotEqual", "NotEqual": "Equal"}


def _not_compare(b, m):
    x = m["x"]
    cmp = m["cmp_op"]._opdef.name
    if cmp not in ("Equal", "NotEqual") and not (x._dtype.is_integer or x._dtype.is_bool):
        return None            # NaN: not(nan > 1) is True but nan <= 1 is False
    return b.emit(_INVERSE[cmp], x, m["y"])


def _add_neg(b, m):
    return b.emit("Sub", m["x"], m["y"])


def _sub_neg(b, m):
    return b.emit("AddV2", m["x"], m["y"])


def _squared_difference(b, m):
    return b.emit("SquaredDifference", m["x"], m["y"])


def _reshape_noop(b, m):
    """reshape(x, s) -> x when x's static shape is FULLY known and equals s (never merely compatible:
    TensorFlow's bug is to drop reshape(x, [3]) for an x of static shape [?])."""
    x = m["x"]
    dims = x._shape._dims
    if dims is None or None in dims:
        return None
    target = [int(d) for d in b.value(m["s"]).reshape(-1)]
    if target.count(-1) == 1:
        rest = int(np.prod([d for d in target if d != -1]))
        n = int(np.prod(dims))
        if rest == 0 or n % rest:
            return None
        target = [n // rest if d == -1 else d for d in target]
    return x if tuple(target) == tuple(dims) and b.same_as_output(x) else None


def _reshape_reshape(b, m):
    """reshape(reshape(x, s1), s2) -> reshape(x, s2) when s1 and s2 have no -1 and the same size (the outer
    check then implies the inner one)."""
    s1 = b.value(m["s1"]).reshape(-1)
    s2 = b.value(m["s2"]).reshape(-1)
    if (s1 < 0).any() or (s2 < 0).any() or int(np.prod(s1)) != int(np.prod(s2)):
        return None
    return b.emit("Reshape", m["x"], m["s2"])


def _add_n(b, m):
    x, y, z = m["x"], m["y"], m["z"]
    s = x._shape
    if not s.is_fully_defined() or y._shape != s or z._shape != s or not b.single_use(m["inner"]):
        return None
    return b.emit("AddN", x, y, z)        # AddN sums left to right: (x + y) + z, bitwise the same


def _full_fill_value(b, m, y):
    """The one-element value `s` every element of ReduceGrad(dy, x) holds when it reduces all of x's axes
    (dy for a sum, dy * (1/n) for a mean, as its kernel computes per element), or None."""
    dy, x, rg = m["dy"], m["x"], m["rg_op"]
    dims = x._shape._dims
    if not (_is_float(y) and b.same_as_output(y) and dims is not None and None not in dims
            and dy._dtype is y._dtype):
        return None
    ddims = dy._shape._dims
    axis = rg._attrs.get("axis")
    reduced = set(range(len(dims))) if axis is None else {a % max(len(dims), 1) for a in axis}
    if ddims is None or None in ddims or int(np.prod(ddims)) != 1 or reduced != set(range(len(dims))):
        return None
    if not rg._attrs.get("mean"):
        return dy
    n = max(int(np.prod(dims)), 1)
    return b.emit("Mul", dy, b.const(np.asarray(y._dtype.np_dtype.type(1.0 / n))))


def _mul_reduce_grad(b, m):
    """y * ReduceGrad(dy, x) over all of x's axes -> y * s, s = dy (sum) or dy * (1/n) (mean) as one element.

    ReduceGrad's output is s broadcast to x's shape (its kernel computes `dy * (1/n)` per element), so
    multiplying y by the one-element s gives the same bits without filling an x-sized array; the fusion
    pass can then put the product in the group of y's producer.  Floats only (integer means divide);
    y must have the product's exact static shape (s must not broadcast y).
    """
    y = m["y"]
    if m["x"]._shape._dims is None or tuple(m["x"]._shape._dims) != tuple(y._shape._dims or ()):
        return None
    s = _full_fill_value(b, m, y)
    return None if s is None else b.emit("Mul", y, s)


def _mul_reshaped_reduce_grad(b, m):
    """y * ExpandDims(ReduceGrad(dy, x)) (or a Reshape of it) over all of x's axes -> y * s.

    A per-example loss's mean (softmax cross-entropy) reaches its backprop as `expand_dims(g, -1) *
    backprop` with g that fill: every element of the reshaped fill is still s, and y has the product's
    static shape (same_as_output), so y * s gives the same bits without the fill and the reshape.
    """
    y = m["y"]
    s = _full_fill_value(b, m, y)
    return None if s is None else b.emit("Mul", y, s)


def _ones_like_small(b, m):
    """ones_like(x) -> a constant when x's static shape is fully known and small (a gradient's seed for a
    scalar loss): what follows can then fold or fuse with the forward.  Big ones stay a fill: a constant
    would hold the memory for the graph's lifetime."""
    dims = m["x"]._shape._dims
    if dims is None or None in dims or int(np.prod(dims)) > 64 or not b.same_as_output(m["x"]):
        return None
    return b.const(np.ones(tuple(dims), m["x"]._dtype.np_dtype))


RULES = [
    # identities (broadcast- and IEEE-safe)
    Rule("mul_one", P("Mul", V("x"), C("c", is_one), commute=True), _keep_x, doc="x * 1 -> x"),
    Rule("div_one", P("RealDiv", V("x"), C("c", is_one)), _keep_x, doc="x / 1 -> x"),
    Rule("add_zero", P("AddV2", V("x"), C("c", is_zero), commute=True), _add_zero, doc="x + 0 -> x"),
    Rule("sub_zero", P("Sub", V("x"), C("c", is_zero)), _sub_zero, doc="x - 0 -> x"),
    Rule("pow_one", P("Pow", V("x"), C("c", _scalar(1))), _pow_to(None), doc="pow(x, 1) -> x"),
    Rule("neg_neg", P("Neg", P("Neg", V("x"))), _neg_neg, doc="--x -> x"),
    Rule("transpose_transpose", P("Transpose", P("Transpose", V("x"), C("p1", _any)), C("p2", _any)),
         _transpose_transpose, doc="transpose(transpose(x, p1), p2) -> x or one transpose"),
    Rule("cast_cast", P("Cast", P("Cast", V("x"), name="inner")), _cast_cast,
         doc="cast(cast(x, lossless), b) -> cast(x, b) or x"),
    Rule("reshape_of_own_shape", P("Reshape", V("x"), P("Shape", V("x"))), _neg_neg,
         doc="reshape(x, shape(x)) -> x"),
    Rule("reshape_noop", P("Reshape", V("x"), C("s", _any)), _reshape_noop,
         doc="reshape(x, s) -> x when x's static shape is fully known and equal to s"),
    Rule("reshape_reshape", P("Reshape", P("Reshape", V("x"), C("s1", _any)), C("s2", _any)), _reshape_reshape,
         doc="reshape(reshape(x, s1), s2) -> reshape(x, s2) (same size, no -1)"),
    # cheaper forms
    Rule("zero_sub", P("Sub", C("c", is_zero), V("x")), _zero_sub, doc="0 - x -> Neg(x)"),
    Rule("one_div", P("RealDiv", C("c", is_one), V("x")), _one_div, doc="1 / x -> Reciprocal(x)"),
    Rule("mul_self", P("Mul", V("x"), V("x")), _square, doc="x * x -> Square(x)"),
    Rule("pow_two", P("Pow", V("x"), C("c", _scalar(2))), _pow_to("Square"), doc="pow(x, 2) -> Square(x)"),
    Rule("pow_half", P("Pow", V("x"), C("c", _scalar(0.5))), _pow_to("Sqrt", True), doc="pow(x, .5) -> Sqrt"),
    Rule("pow_minus_one", P("Pow", V("x"), C("c", _scalar(-1))), _pow_to("Reciprocal", True),
         doc="pow(x, -1) -> Reciprocal(x)"),
    Rule("not_compare", P("LogicalNot", P(tuple(_INVERSE), V("x"), V("y"), name="cmp")), _not_compare,
         doc="not(x > y) -> x <= y (ints/bools); not(x == y) -> x != y"),
    Rule("add_neg", P("AddV2", V("x"), P("Neg", V("y")), commute=True), _add_neg, doc="x + (-y) -> x - y"),
    Rule("sub_neg", P("Sub", V("x"), P("Neg", V("y"))), _sub_neg, doc="x - (-y) -> x + y"),
    Rule("squared_difference", P("Square", P("Sub", V("x"), V("y"))), _squared_difference,
         doc="(x - y)^2 -> SquaredDifference(x, y)"),
    Rule("add_n", P("AddV2", P("AddV2", V("x"), V("y"), name="inner"), V("z"), commute=True), _add_n,
         doc="(x + y) + z -> AddN(x, y, z) (same static shapes)"),
    Rule("mul_reduce_grad", P("Mul", V("y"), P("ReduceGrad", V("dy"), V("x"), name="rg"), commute=True),
         _mul_reduce_grad, doc="y * ReduceGrad(dy, x) over every axis -> y * (dy or dy * 1/n): no x-sized fill"),
    Rule("mul_expanded_reduce_grad",
         P("Mul", V("y"), P("ExpandDims", P("ReduceGrad", V("dy"), V("x"), name="rg")), commute=True),
         _mul_reshaped_reduce_grad, doc="y * expand_dims(ReduceGrad(dy, x)) over every axis -> y * s: no fill"),
    Rule("mul_reshaped_reduce_grad",
         P("Mul", V("y"), P("Reshape", P("ReduceGrad", V("dy"), V("x"), name="rg"), V("shape")), commute=True),
         _mul_reshaped_reduce_grad, doc="y * reshape(ReduceGrad(dy, x)) over every axis -> y * s: no fill"),
    Rule("ones_like_small", P("OnesLike", V("x")), _ones_like_small,
         doc="ones_like(x) -> constant ones when x's static shape is known and at most 64 elements"),
    # more accurate forms (not bitwise)
    Rule("log1p", P("Log", P("AddV2", V("x"), C("c", is_one), commute=True, name="add")), _log1p, exact=False,
         doc="log(1 + x) -> Log1p(x)"),
    Rule("expm1", P("Sub", P("Exp", V("x")), C("c", is_one)), _expm1, exact=False, doc="exp(x) - 1 -> Expm1(x)"),
    Rule("log_softmax", P("Log", P("Softmax", V("x"), name="sm")), _log_softmax, exact=False,
         doc="log(softmax(x)) -> LogSoftmax(x)"),
]
