"""Elementwise math and casts (matmul, add_n, clip: `linalg.py`; comparisons and logic: `comparison.py`,
re-exported here).

Each primitive is declared once (kernel, inference, gradient, flags); the
public functions below convert their arguments and dispatch.  Gradients are
written with these same public functions, so they work eagerly and in graphs.
Integer `divide`/`truediv` cast to float first (int8/int16 -> float32,
int32/int64 -> float64), as TensorFlow does; `//`, `%`, `truncatediv` and
`truncatemod` are in `division.py`.
"""
from __future__ import annotations

import numpy as np

from ..convert import convert_to_tensor
from ..dispatch import execute
from ..dtypes import bool_, float32, float64, string
from ..errors import InvalidArgumentError
from ..registry import Spec, op
from ..tensor import Tensor
from ._define import (EMPTY, binary_operands, call_binary, call_unary, infer_same, infer_same_float,
                      infer_same_numeric, make_infer_broadcast)
from .array import sum_to_like
from .casting import CAST, cast  # noqa: F401 - public here too (`eager.cast`), declared below for array.py
from .comparison import (equal, greater, greater_equal, less, less_equal, logical_and,  # noqa: F401 - public here
                         logical_not, logical_or, not_equal)

__all__ = [
    "add", "subtract", "multiply", "divide", "truediv", "pow", "maximum", "minimum",
    "squared_difference", "negative", "abs", "sign", "exp", "expm1", "log", "log1p", "sqrt", "rsqrt", "square",
    "reciprocal", "sin", "cos", "tanh", "sigmoid", "round", "floor", "ceil", "equal", "not_equal", "less",
    "less_equal", "greater", "greater_equal", "logical_and", "logical_or", "logical_not", "cast", "is_nan", "is_finite",
]


# ------------------------------------------------------------------ binary
# The rules below skip inputs listed in `op.skip_input_indices` (backprop sets it for inputs whose
# gradient nobody needs, e.g. data or constants), like TensorFlow's binary-op gradients.
def _g_add(op, dy):
    x, y = op.inputs
    skip = getattr(op, "skip_input_indices", ())
    return [None if 0 in skip else sum_to_like(dy, x), None if 1 in skip else sum_to_like(dy, y)]


def _g_sub(op, dy):
    x, y = op.inputs
    skip = getattr(op, "skip_input_indices", ())
    return [None if 0 in skip else sum_to_like(dy, x), None if 1 in skip else sum_to_like(negative(dy), y)]


def _g_mul(op, dy):
    x, y = op.inputs
    skip = getattr(op, "skip_input_indices", ())
    return [None if 0 in skip else sum_to_like(multiply(dy, y), x),
            None if 1 in skip else sum_to_like(multiply(dy, x), y)]


def _g_div(op, dy):
    x, y = op.inputs
    return [sum_to_like(divide(dy, y), x),
            sum_to_like(negative(multiply(dy, divide(divide(x, y), y))), y)]


def _g_pow(op, dy):
    x, y = op.inputs
    z = op.outputs[0]
    dx = multiply(dy, multiply(y, pow(x, subtract(y, 1))))
    safe_log = log(where_positive(x))
    dyy = multiply(dy, multiply(z, safe_log))
    return [sum_to_like(dx, x), sum_to_like(dyy, y)]


def where_positive(x):
    """x where x > 0, else 1 (so log() of it is finite): used by the pow gradient."""
    return execute(_WHERE_POS, (x,), EMPTY)


_WHERE_POS = op("PositiveOrOne", lambda x: np.where(x > 0, x, np.ones_like(x)), infer_same,
                doc="x where x > 0 else 1; helper of the Pow gradient.")


def _g_max(op, dy):
    x, y = op.inputs
    mask = cast(greater_equal(x, y), dy.dtype)
    return [sum_to_like(multiply(dy, mask), x), sum_to_like(multiply(dy, subtract(1, mask)), y)]


def _g_min(op, dy):
    x, y = op.inputs
    mask = cast(less_equal(x, y), dy.dtype)
    return [sum_to_like(multiply(dy, mask), x), sum_to_like(multiply(dy, subtract(1, mask)), y)]


def _g_sqdiff(op, dy):
    x, y = op.inputs
    d = multiply(multiply(dy, 2), subtract(x, y))
    return [sum_to_like(d, x), sum_to_like(negative(d), y)]


def _binop(name, ufunc, grad, commutative=False, **flags):
    return op(name, ufunc, make_infer_broadcast(name), grad, elementwise=True, commutative=commutative,
              numpy_ufunc=ufunc, **flags)


ADD = _binop("AddV2", np.add, _g_add, commutative=True, rowwise_exact=True)
SUB = _binop("Sub", np.subtract, _g_sub, rowwise_exact=True)
MUL = _binop("Mul", np.multiply, _g_mul, commutative=True, rowwise_exact=True)
def _infer_realdiv(specs, attrs):
    for s in specs:
        if not s.dtype.is_floating:     # TensorFlow registers RealDiv for floating types only
            raise InvalidArgumentError(f"RealDiv: inputs must be floating point, got {s.dtype.name} (divide() casts "
                                       f"integers to float; floordiv and truncatediv divide integers)",
                                       op_name="RealDiv")
    return make_infer_broadcast("RealDiv")(specs, attrs)


REALDIV = op("RealDiv", np.true_divide, _infer_realdiv, _g_div, elementwise=True, numpy_ufunc=np.true_divide,
             rowwise_exact=True)
POW = _binop("Pow", np.power, _g_pow)
MAXIMUM = _binop("Maximum", np.maximum, _g_max, commutative=True, rowwise_exact=True)
MINIMUM = _binop("Minimum", np.minimum, _g_min, commutative=True, rowwise_exact=True)
SQUARED_DIFFERENCE = op("SquaredDifference", lambda x, y: np.square(np.subtract(x, y)),
                        make_infer_broadcast("SquaredDifference"), _g_sqdiff, elementwise=True,
                        commutative=True)


def _string_add(x, y):
    return np.char.add(x.astype(bytes), y.astype(bytes)).astype(object) if np.ndim(x) or np.ndim(y) \
        else np.asarray(x + y, dtype=object)


STRING_ADD = op("StringAdd", _string_add, make_infer_broadcast("StringAdd"),
                doc="Elementwise concatenation of string tensors (`+` on strings).")


def add(x, y, name=None):
    if type(x) is Tensor and x._value.dtype.kind not in "OUS":     # fast path: certainly not strings
        ty = type(y)
        if (ty is Tensor and y._value.dtype.kind not in "OUS") or ty is float or ty is int or \
                (getattr(ty, "_is_variable", False) and y._dtype is not string):
            return call_binary(ADD, x, y, name)
    x_, y_ = _string_operands(x, y)
    if x_ is not None:
        return execute(STRING_ADD, (x_, y_), EMPTY, name)
    return call_binary(ADD, x, y, name)


def _string_operands(x, y):
    """Return converted operands if this is string concatenation, else (None, None)."""
    is_str = lambda v: (isinstance(v, (str, bytes)) or
                        (hasattr(v, "dtype") and getattr(v.dtype, "name", None) == "string"))
    if is_str(x) or is_str(y):
        return convert_to_tensor(x, "string"), convert_to_tensor(y, "string")
    return None, None


def subtract(x, y, name=None):
    return call_binary(SUB, x, y, name)


def multiply(x, y, name=None):
    return call_binary(MUL, x, y, name)


def _float_for_division(x, y):
    x, y = binary_operands(REALDIV, x, y)
    if x.dtype.is_integer:
        target = float32 if x.dtype.name in ("int8", "int16", "uint8") else float64
        x, y = cast(x, target), cast(y, target)
    return x, y


def divide(x, y, name=None):
    """x / y; integer inputs are cast to float first (like TensorFlow's truediv)."""
    x, y = _float_for_division(x, y)
    return execute(REALDIV, (x, y), EMPTY, name)


truediv = divide


def pow(x, y, name=None):
    return call_binary(POW, x, y, name)


def maximum(x, y, name=None):
    return call_binary(MAXIMUM, x, y, name)


def minimum(x, y, name=None):
    return call_binary(MINIMUM, x, y, name)


def squared_difference(x, y, name=None):
    return call_binary(SQUARED_DIFFERENCE, x, y, name)


# ------------------------------------------------------------------ unary
def _unop(name, fn, grad=None, ufunc=None, floats_only=False, **flags):
    """An elementwise unary op; `floats_only`: registered for float16/32/64 only, as in TensorFlow (NumPy
    would promote an int input to float64, so eager and graph results would disagree on the dtype);
    otherwise numeric types (bool refused: NumPy would compute in int8 or float16)."""
    infer = infer_same_float(name) if floats_only else infer_same_numeric(name)
    return op(name, fn, infer, grad, elementwise=True, numpy_ufunc=ufunc or fn, **flags)


def _sigmoid_kernel(x):
    # exp(min(x, 0)) / (1 + exp(-|x|)): 1/(1+e^-x) for x >= 0, e^x/(1+e^x) for x < 0.  Neither exp
    # overflows and nothing cancels, so both tails keep full relative accuracy ((tanh(x/2)+1)/2 gave 0 below
    # about -17 in float32, and log(sigmoid) -inf).  Only ufunc calls: fusion expands this very kernel.
    num = np.exp(np.minimum(x, 0))
    den = np.add(np.exp(np.negative(np.absolute(x))), 1, dtype=x.dtype)
    return np.divide(num, den, dtype=x.dtype)


NEG = _unop("Neg", np.negative, lambda op, dy: [negative(dy)], rowwise_exact=True)
ABS = _unop("Abs", np.abs, lambda op, dy: [multiply(dy, sign(op.inputs[0]))], rowwise_exact=True)
SIGN = _unop("Sign", np.sign)
EXP = _unop("Exp", np.exp, lambda op, dy: [multiply(dy, op.outputs[0])], floats_only=True)
EXPM1 = _unop("Expm1", np.expm1, lambda op, dy: [multiply(dy, add(op.outputs[0], 1))], floats_only=True)
LOG = _unop("Log", np.log, lambda op, dy: [divide(dy, op.inputs[0])], floats_only=True)
LOG1P = _unop("Log1p", np.log1p, lambda op, dy: [divide(dy, add(op.inputs[0], 1))], floats_only=True)
SQRT = _unop("Sqrt", np.sqrt, lambda op, dy: [divide(multiply(dy, 0.5), op.outputs[0])], floats_only=True,
             rowwise_exact=True)
RSQRT = _unop("Rsqrt", lambda x: np.reciprocal(np.sqrt(x)),
              lambda op, dy: [multiply(dy, multiply(-0.5, pow(op.outputs[0], 3)))], ufunc=None, floats_only=True)
SQUARE = _unop("Square", np.square, lambda op, dy: [multiply(dy, multiply(op.inputs[0], 2))], rowwise_exact=True)
RECIPROCAL = _unop("Reciprocal", np.reciprocal,
                   lambda op, dy: [negative(multiply(dy, square(op.outputs[0])))])
SIN = _unop("Sin", np.sin, lambda op, dy: [multiply(dy, cos(op.inputs[0]))], floats_only=True)
COS = _unop("Cos", np.cos, lambda op, dy: [negative(multiply(dy, sin(op.inputs[0])))], floats_only=True)
TANH = _unop("Tanh", np.tanh, lambda op, dy: [multiply(dy, subtract(1, square(op.outputs[0])))],
             floats_only=True)
SIGMOID = _unop("Sigmoid", _sigmoid_kernel,
                lambda op, dy: [multiply(dy, multiply(op.outputs[0], subtract(1, op.outputs[0])))], ufunc=None,
                floats_only=True)
ROUND = _unop("Round", np.round, ufunc=np.rint, rowwise_exact=True)
FLOOR = _unop("Floor", np.floor, floats_only=True, rowwise_exact=True)
CEIL = _unop("Ceil", np.ceil, floats_only=True, rowwise_exact=True)


def negative(x, name=None):
    return call_unary(NEG, x, name)


def abs(x, name=None):  # noqa: A001 - TensorFlow's name
    return call_unary(ABS, x, name)


def sign(x, name=None):
    return call_unary(SIGN, x, name)


def exp(x, name=None):
    return call_unary(EXP, x, name)


def expm1(x, name=None):
    return call_unary(EXPM1, x, name)


def log(x, name=None):
    return call_unary(LOG, x, name)


def log1p(x, name=None):
    return call_unary(LOG1P, x, name)


def sqrt(x, name=None):
    return call_unary(SQRT, x, name)


def rsqrt(x, name=None):
    return call_unary(RSQRT, x, name)


def square(x, name=None):
    return call_unary(SQUARE, x, name)


def reciprocal(x, name=None):
    return call_unary(RECIPROCAL, x, name)


def sin(x, name=None):
    return call_unary(SIN, x, name)


def cos(x, name=None):
    return call_unary(COS, x, name)


def tanh(x, name=None):
    return call_unary(TANH, x, name)


def sigmoid(x, name=None):
    return call_unary(SIGMOID, x, name)


def round(x, name=None):  # noqa: A001 - TensorFlow's name (half to even)
    return call_unary(ROUND, x, name)


def floor(x, name=None):
    return call_unary(FLOOR, x, name)


def ceil(x, name=None):
    return call_unary(CEIL, x, name)


IS_NAN = op("IsNan", np.isnan, lambda s, a: [Spec(s[0].shape, bool_)], elementwise=True, numpy_ufunc=np.isnan)
IS_FINITE = op("IsFinite", np.isfinite, lambda s, a: [Spec(s[0].shape, bool_)], elementwise=True,
               numpy_ufunc=np.isfinite)


def is_nan(x, name=None):
    return call_unary(IS_NAN, x, name)


def is_finite(x, name=None):
    return call_unary(IS_FINITE, x, name)
