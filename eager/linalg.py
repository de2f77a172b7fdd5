"""`eager.linalg`: TensorFlow's `tf.linalg` names (primitives in `ops/matrix.py`, products in `ops/linalg.py`).

`norm`, `matvec`, `trace` and `logdet` are compositions of public ops (so they differentiate
through them); everything else is a primitive with TensorFlow's gradient.
"""
from .ops.clipping import global_norm
from .ops.linalg import matmul
from .ops.matrix import (adjoint, cholesky, det, diag, diag_part, eigh, eigvalsh, inv, matrix_transpose, qr, set_diag,
                         slogdet, solve, svd)
from .ops.array import expand_dims, squeeze
from .ops.math import abs as _abs, log as _log, multiply as _multiply, pow as _pow, sqrt as _sqrt, square as _square
from .ops.reduction import reduce_max, reduce_sum
from .convert import convert_to_tensor

__all__ = ["norm", "matmul", "matvec", "inv", "solve", "cholesky", "det", "slogdet", "logdet", "svd", "qr", "eigh",
           "eigvalsh", "diag", "diag_part", "set_diag", "trace", "matrix_transpose", "adjoint", "global_norm"]


def trace(x, name=None):
    """The sum of each matrix's diagonal."""
    return reduce_sum(diag_part(x), axis=-1)


def logdet(matrix, name=None):
    """log(det(matrix)) of positive-definite matrices, through the Cholesky factor (TF's `linalg.logdet`)."""
    return _multiply(2.0, reduce_sum(_log(diag_part(cholesky(matrix))), axis=-1))


def matvec(a, b, transpose_a=False, adjoint_a=False, name=None):
    """a @ b for a (batch of) matrix a and vector b."""
    b = convert_to_tensor(b)
    return squeeze(matmul(a, expand_dims(b, -1), transpose_a=transpose_a or adjoint_a), -1)


def _vector_norm(x, ord, axis, keepdims):
    if ord in ("euclidean", "fro", 2, 2.0):
        return _sqrt(reduce_sum(_square(x), axis, keepdims=keepdims))
    if ord == 1:
        return reduce_sum(_abs(x), axis, keepdims=keepdims)
    if ord == float("inf"):
        return reduce_max(_abs(x), axis, keepdims=keepdims)
    if isinstance(ord, (int, float)) and ord > 0:
        return _pow(reduce_sum(_pow(_abs(x), float(ord)), axis, keepdims=keepdims), 1.0 / ord)
    raise ValueError(f"norm: ord must be 'euclidean', 'fro', 1, 2, inf or a positive number, got {ord!r}")


def norm(tensor, ord="euclidean", axis=None, keepdims=None, name=None):
    """TF's `linalg.norm`: a vector norm over `axis` (an int, or every element when None) or a matrix norm
    over a pair of axes ('fro'/'euclidean', 1, inf, and 2 = the largest singular value of the last two axes)."""
    x = convert_to_tensor(tensor)
    keep = bool(keepdims)
    if not isinstance(axis, (list, tuple)) or len(axis) == 1:
        ax = axis[0] if isinstance(axis, (list, tuple)) else axis
        if ord == "fro" and ax is not None:
            raise ValueError("norm: 'fro' is a matrix norm: give axis as a pair of axes")
        return _vector_norm(x, ord, ax, keep)
    if len(axis) != 2:
        raise ValueError(f"norm: axis must be None, an int or a pair of ints, got {axis!r}")
    rank = x.shape.rank
    a0, a1 = (a % rank if rank is not None else a for a in axis)
    if ord in ("euclidean", "fro"):
        return _sqrt(reduce_sum(_square(x), [a0, a1], keepdims=keep))
    if ord == 1:
        out = reduce_max(reduce_sum(_abs(x), a0, keepdims=True), a1, keepdims=True)
    elif ord == float("inf"):
        out = reduce_max(reduce_sum(_abs(x), a1, keepdims=True), a0, keepdims=True)
    elif ord in (2, 2.0):
        if rank is None or (a0, a1) != (rank - 2, rank - 1):
            raise ValueError("norm: ord=2 over a matrix needs axis=(-2, -1)")
        out = expand_dims(expand_dims(reduce_max(svd(x, compute_uv=False), -1), -1), -1)
    else:
        raise ValueError(f"norm: a matrix norm's ord must be 'fro', 'euclidean', 1, 2 or inf, got {ord!r}")
    return out if keep else squeeze(out, [a0, a1])


from .namespace import public_namespace as _public_namespace  # noqa: E402
_public_namespace(__name__)
