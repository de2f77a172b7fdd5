"""Gradient cases for eager/ops/matrix.py (linalg) and eager/ops/tf_math.py (cumprod, segment sums, erf)."""
import numpy as np

import eager as ek
from gradcheck import GradCase


def well_conditioned(n):
    return lambda rng: [rng.standard_normal((n, n)) + n * np.eye(n)]


def spd(n):
    def make(rng):
        a = rng.standard_normal((n, n))
        return [a @ a.T + n * np.eye(n)]
    return make


def sym(x):
    return (x + ek.linalg.matrix_transpose(x)) * 0.5


CASES = [
    GradCase("MatrixInverse", ek.linalg.inv, make_inputs=well_conditioned(3)),
    GradCase("MatrixSolve", ek.linalg.solve, make_inputs=lambda rng: well_conditioned(3)(rng) +
             [rng.standard_normal((3, 2))]),
    GradCase("Cholesky", lambda a: ek.linalg.cholesky(sym(a)), make_inputs=spd(3)),
    GradCase("MatrixDeterminant", ek.linalg.det, make_inputs=well_conditioned(3)),
    GradCase("LogMatrixDeterminant", lambda a: ek.linalg.slogdet(a)[1], make_inputs=well_conditioned(3)),
    GradCase("Svd", lambda a: ek.linalg.svd(a, compute_uv=False), shapes=[(4, 3)]),
    GradCase("Qr", lambda a: ek.linalg.qr(a), shapes=[(4, 3)]),
    GradCase("SelfAdjointEigV2", lambda a: ek.linalg.eigh(sym(a))[0], make_inputs=spd(3)),
    GradCase("MatrixDiag", ek.linalg.diag, shapes=[(2, 3)]),
    GradCase("MatrixDiagPart", ek.linalg.diag_part, shapes=[(3, 4)]),
    GradCase("MatrixSetDiag", ek.linalg.set_diag, shapes=[(3, 3), (3,)]),
    GradCase("Cumprod", lambda x: ek.math.cumprod(x, axis=1, reverse=True),
             make_inputs=lambda rng: [rng.uniform(0.5, 2.0, (2, 4))]),
    GradCase("SegmentSum", lambda x: ek.math.segment_sum(x, [0, 0, 1]), shapes=[(3, 2)]),
    GradCase("UnsortedSegmentSum", lambda x: ek.math.unsorted_segment_sum(x, [2, 0, 2], 3), shapes=[(3, 2)]),
    GradCase("Erf", ek.math.erf, shapes=[(5,)]),
]
