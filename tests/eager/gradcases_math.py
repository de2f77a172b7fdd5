"""Gradient cases for eager/ops/math.py, reduction.py, constant.py and _define.py."""
import numpy as np

import eager as ek
from gradcheck import GradCase, grad_of



pos = lambda *shapes: (lambda rng: [rng.uniform(0.5, 2.0, s) for s in shapes])

CASES = [
    GradCase("AddV2", ek.add, [(3, 1), (1, 4)], id="add_broadcast"),
    GradCase("Sub", ek.subtract, [(2, 3), (3,)]),
    GradCase("Mul", ek.multiply, [(2, 3), ()], id="mul_scalar"),
    GradCase("RealDiv", ek.divide, make_inputs=pos((2, 3), (2, 1))),
    GradCase("Pow", ek.pow, make_inputs=pos((2, 3), (2, 3))),
    GradCase("Maximum", ek.maximum, [(4,), (4,)]),
    GradCase("Minimum", ek.minimum, [(4,), (4,)]),
    GradCase("SquaredDifference", ek.squared_difference, [(2, 3), (3,)]),
    GradCase("Neg", ek.negative, [(3,)]),
    GradCase("Abs", ek.abs, [(5,)]),
    GradCase("Exp", ek.exp, [(2, 2)]),
    GradCase("Expm1", ek.expm1, [(2, 2)]),
    GradCase("Log", ek.log, make_inputs=pos((3,))),
    GradCase("Log1p", ek.log1p, make_inputs=pos((3,))),
    GradCase("Sqrt", ek.sqrt, make_inputs=pos((3,))),
    GradCase("Rsqrt", ek.rsqrt, make_inputs=pos((3,))),
    GradCase("Square", ek.square, [(3,)]),
    GradCase("Reciprocal", ek.reciprocal, make_inputs=pos((3,))),
    GradCase("Sin", ek.sin, [(3,)]),
    GradCase("Cos", ek.cos, [(3,)]),
    GradCase("Tanh", ek.tanh, [(3, 2)]),
    GradCase("Sigmoid", ek.sigmoid, [(3, 2)]),
    GradCase("Cast", lambda x: ek.cast(ek.cast(x, "float32"), "float64"), [(3,)], eps=1e-2, rtol=1e-3, atol=1e-3),
    GradCase("MatMul", ek.matmul, [(2, 3), (3, 4)], id="matmul"),
    GradCase("MatMul", lambda a, b: ek.matmul(a, b, transpose_a=True), [(3, 2), (3, 4)], id="matmul_ta"),
    GradCase("MatMul", lambda a, b: ek.matmul(a, b, transpose_b=True), [(2, 3), (4, 3)], id="matmul_tb"),
    GradCase("MatMul", lambda a, b: ek.matmul(a, b, transpose_a=True, transpose_b=True), [(3, 2), (4, 3)],
             id="matmul_tatb"),
    GradCase("AddN", lambda a, b, c: ek.add_n([a, b, c]), [(2, 2)] * 3),
    GradCase("ClipByValue", lambda x: ek.clip_by_value(x, -0.5, 0.5),
             make_inputs=lambda rng: [np.array([-1.0, -0.2, 0.3, 0.9])]),
    GradCase("Identity", ek.identity, [(3,)]),
    GradCase("Sum", lambda x: ek.reduce_sum(x, axis=1), [(3, 4)]),
    GradCase("Sum", lambda x: ek.reduce_sum(x, axis=[0], keepdims=True), [(3, 4)], id="sum_keepdims"),
    GradCase("Mean", lambda x: ek.reduce_mean(x, axis=0), [(3, 4)]),
    GradCase("Max", lambda x: ek.reduce_max(x, axis=1), [(3, 4)]),
    GradCase("Min", lambda x: ek.reduce_min(x), [(3, 4)]),
    GradCase("Prod", lambda x: ek.reduce_prod(x, axis=1), make_inputs=pos((2, 3))),
    # second-order cases: ops that only appear inside gradient computations
    GradCase("ReduceGrad", grad_of(lambda x: ek.reduce_sum(x * x * x, axis=1)), [(2, 3)], id="reduce_grad"),
    GradCase("SumToLike", grad_of(lambda x: ek.reduce_sum(ek.square(x + ek.constant(np.ones((2, 3)))))),
             [(3,)], id="sum_to_like"),
]


@ek.custom_gradient
def _clipped_square(x):
    y = x * x

    def grad(dy):
        return dy * 2.0 * x

    return y, grad


CASES.append(GradCase("CustomGradient", _clipped_square, [(3,)], id="custom_gradient"))
