"""`eager.math`: TensorFlow's `tf.math` names for the ops that exist, plus its statistics and segment sums.

Every name is the same function as at `eager.<name>` (or `eager.nn.<name>`);
nothing here is a copy.  Imported last by `eager/__init__.py`, after those names exist.
"""
from . import (abs, add, add_n, argmax, argmin, ceil, cos, cumsum, divide, equal, exp, expm1,  # noqa: A004
               floor, floordiv, floormod, greater, greater_equal, is_finite, is_nan, less, less_equal, log, log1p,
               logical_and, logical_not, logical_or, maximum, minimum, multiply, negative, not_equal, pow,
               reciprocal, reduce_all, reduce_any, reduce_logsumexp, reduce_max, reduce_mean, reduce_min,
               reduce_prod, reduce_sum, round, rsqrt, sigmoid, sign, sin, sqrt, square, squared_difference,
               subtract, tanh, top_k, truediv, truncatediv, truncatemod)
from .ops.nn import log_softmax, softmax, softplus
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
