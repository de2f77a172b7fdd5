"""`eager.math`: TensorFlow's `tf.math` names for the ops that exist, plus its statistics and segment sums.

Every name is the same function as at `eager.<name>` (or `eager.nn.<name>`);
nothing here is a copy: each is imported from the op module that defines it.
"""
from .ops.division import floordiv, floormod, truncatediv, truncatemod
from .ops.linalg import add_n
from .ops.math import (abs, add, ceil, cos, divide, equal, exp, expm1, floor, greater, greater_equal,  # noqa: A004
                       is_finite, is_nan, less, less_equal, log, log1p, logical_and, logical_not, logical_or,
                       maximum, minimum, multiply, negative, not_equal, pow, reciprocal, round, rsqrt, sigmoid, sign,
                       sin, sqrt, square, squared_difference, subtract, tanh, truediv)
from .ops.nn import log_softmax, softmax, softplus
from .ops.reduction import (argmax, argmin, reduce_all, reduce_any, reduce_logsumexp, reduce_max, reduce_mean,
                            reduce_min, reduce_prod, reduce_sum)
from .ops.sorting import cumsum, top_k
from .ops.tf_math import (cumprod, erf, l2_normalize, reduce_std, reduce_variance, segment_sum,
                          unsorted_segment_sum)

__all__ = ["abs", "add", "add_n", "argmax", "argmin", "ceil", "cos", "cumprod", "cumsum", "divide", "equal", "erf",
           "exp", "expm1", "floor", "floordiv", "floormod", "greater", "greater_equal", "is_finite", "is_nan",
           "l2_normalize", "less", "less_equal", "log", "log1p", "log_softmax", "logical_and", "logical_not",
           "logical_or", "maximum", "minimum", "multiply", "negative", "not_equal", "pow", "reciprocal",
           "reduce_all", "reduce_any", "reduce_logsumexp", "reduce_max", "reduce_mean", "reduce_min", "reduce_prod",
           "reduce_std", "reduce_sum", "reduce_variance", "round", "rsqrt", "segment_sum", "sigmoid", "sign", "sin",
           "softmax", "softplus", "sqrt", "square", "squared_difference", "subtract", "tanh", "top_k", "truediv",
           "truncatediv", "truncatemod", "unsorted_segment_sum"]


from .namespace import public_namespace as _public_namespace  # noqa: E402
_public_namespace(__name__)
