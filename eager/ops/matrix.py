"""Linear-algebra primitives (`eager.linalg`): inverse, solve, Cholesky, determinants, SVD, QR, eigh, diagonals.

Each is one op with a NumPy kernel over the last two dimensions (batches in
front), declared once so it runs eagerly, in graphs and under `@function`.
The gradients are TensorFlow's (`linalg_grad.py`): inverse, solve,
determinant, log-determinant and the diagonal ops are written with public
ops; Cholesky, QR and eigh use one NumPy gradient op each (`CholeskyGrad`,
`QrGrad`, `EighGrad`: first derivatives only).  As in TensorFlow, Cholesky and
eigh read only the lower triangle, and their gradients are symmetric (eigh's
is lower triangular).  SVD differentiates through its singular values only;
a gradient reaching `u` or `v` raises NotImplementedError.  QR's gradient
needs rows >= columns or `full_matrices=False` with that shape, as in TF.
Inputs must be float32 or float64.

Imports numpy and `eager` modules.
"""
from __future__ import annotations

import numpy as np

from ..convert import convert_to_tensor
from ..dispatch import execute
from ..errors import InvalidArgumentError
from ..registry import Spec, op
from ._define import EMPTY, dtype_error, is_known_zero
from .array import expand_dims, zeros_like
from .linalg import matmul
from .manipulation import transpose
from .math import multiply, negative

__all__ = ["inv", "solve", "cholesky", "det", "slogdet", "svd", "qr", "eigh", "eigvalsh", "diag", "diag_part",
           "set_diag", "matrix_transpose", "adjoint"]


def _square(opname, shape):
    if shape is not None and (len(shape) < 2 or None not in shape[-2:] and shape[-1] != shape[-2]):
        raise InvalidArgumentError(f"{opname}: input must be a square matrix or a batch of them, got shape "
                                   f"{list(shape)}", op_name=opname)


def _float(opname, spec):
    if spec.dtype.name not in ("float32", "float64"):
        raise dtype_error(opname, spec.dtype, "float32, float64")


def _same_square(opname):
    def infer(specs, attrs):
        _float(opname, specs[0])
        _square(opname, specs[0].shape)
        return [Spec(specs[0].shape, specs[0].dtype)]
    return infer


def _linalg_error(opname):
    def wrap(kernel):
        def run(*args, **kw):
            try:
                return kernel(*args, **kw)
            except np.linalg.LinAlgError as e:
                raise InvalidArgumentError(f"{opname}: {e} (input is singular or not positive definite)",
                                           op_name=opname) from None
        return run
    return wrap


def _arg(opname, x, square=True):
    """`x` as a tensor, checked eagerly as inference checks it in graphs (eager dispatch skips inference)."""
    t = convert_to_tensor(x)
    spec = Spec(None if t.shape.rank is None else tuple(t.shape.as_list()), t.dtype)
    _float(opname, spec)
    if square:
        _square(opname, spec.shape)
    elif spec.shape is not None and len(spec.shape) < 2:
        raise InvalidArgumentError(f"{opname}: input must have rank >= 2, got shape {list(spec.shape)}",
                                   op_name=opname)
    return t


def _mt(x):
    return np.swapaxes(x, -1, -2)


def matrix_transpose(a, name=None):
    """Swap the last two dimensions (TF's `linalg.matrix_transpose`; `adjoint` for real inputs)."""
    a = convert_to_tensor(a)
    rank = a.shape.rank
    if rank is None or rank < 2:
        raise InvalidArgumentError(f"matrix_transpose: input must have a known rank >= 2, got {a.shape}")
    return transpose(a, list(range(rank - 2)) + [rank - 1, rank - 2])


adjoint = matrix_transpose


def _outer_scalar(s):
    """s[..., None, None]."""
    return expand_dims(expand_dims(s, -1), -1)


# ------------------------------------------------------------------ inverse and solve
def _g_inv(op, dy):
    ainv = op.outputs[0]
    return [negative(matmul(ainv, matmul(dy, ainv, transpose_b=True), transpose_a=True))]


INV = op("MatrixInverse", _linalg_error("MatrixInverse")(np.linalg.inv), _same_square("MatrixInverse"), _g_inv,
         attrs=())


def inv(input, adjoint=False, name=None):
    x = _arg("MatrixInverse", input)
    return execute(INV, (matrix_transpose(x) if adjoint else x,), EMPTY, name)


def _infer_solve(specs, attrs):
    a, b = specs
    _float("MatrixSolve", a)
    _square("MatrixSolve", a.shape)
    if a.dtype is not b.dtype:
        raise InvalidArgumentError(f"MatrixSolve: matrix is {a.dtype.name} but rhs is {b.dtype.name}",
                                   op_name="MatrixSolve")
    if a.shape is not None and b.shape is not None and (len(b.shape) < 2 or None not in (a.shape[-1], b.shape[-2])
                                                        and a.shape[-1] != b.shape[-2]):
        raise InvalidArgumentError(f"MatrixSolve: matrix {list(a.shape)} and rhs {list(b.shape)} do not fit",
                                   op_name="MatrixSolve")
    return [Spec(b.shape, b.dtype)]


def _solve_kernel(a, b, adjoint=False):
    return np.linalg.solve(_mt(a) if adjoint else a, b)


def _g_solve(op, dx):
    a, x = op.inputs[0], op.outputs[0]
    adj = op.get_attr("adjoint")
    db = execute(SOLVE, (a, dx), {"adjoint": not adj})
    da = negative(matmul(x, db, transpose_b=True) if adj else matmul(db, x, transpose_b=True))
    return [da, db]


SOLVE = op("MatrixSolve", _linalg_error("MatrixSolve")(_solve_kernel), _infer_solve, _g_solve, attrs=("adjoint",))


def solve(matrix, rhs, adjoint=False, name=None):
    a, b = _arg("MatrixSolve", matrix), convert_to_tensor(rhs)
    _infer_solve([Spec(tuple(a.shape.as_list()), a.dtype), Spec(tuple(b.shape.as_list()), b.dtype)], EMPTY)
    return execute(SOLVE, (a, b), {"adjoint": bool(adjoint)}, name)


# ------------------------------------------------------------------ Cholesky
def _cholesky_grad_kernel(l, grad):
    middle = np.matmul(_mt(l), grad)
    diag = np.diagonal(middle, axis1=-2, axis2=-1)
    middle = np.tril(middle) - 0.5 * _diag_embed(diag)
    l_inv = np.linalg.inv(l)
    g = np.matmul(np.matmul(_mt(l_inv), middle), l_inv)
    return ((g + _mt(g)) * 0.5).astype(l.dtype)


def _diag_embed(d):
    n = d.shape[-1]
    out = np.zeros(d.shape + (n,), d.dtype)
    idx = np.arange(n)
    out[..., idx, idx] = d
    return out


CHOLESKY_GRAD = op("CholeskyGrad", _cholesky_grad_kernel, lambda s, a: [Spec(s[0].shape, s[0].dtype)])
CHOLESKY = op("Cholesky", _linalg_error("Cholesky")(np.linalg.cholesky), _same_square("Cholesky"),
              lambda op, dy: [execute(CHOLESKY_GRAD, (op.outputs[0], dy), EMPTY)], attrs=())


def cholesky(input, name=None):
    """The lower-triangular L with L @ L^T = input (only the lower triangle of input is read)."""
    return execute(CHOLESKY, (_arg("Cholesky", input),), EMPTY, name)


# ------------------------------------------------------------------ determinants
def _infer_det(specs, attrs):
    _float("MatrixDeterminant", specs[0])
    _square("MatrixDeterminant", specs[0].shape)
    shape = None if specs[0].shape is None else specs[0].shape[:-2]
    return [Spec(shape, specs[0].dtype)]


def _g_det(op, dy):
    a, d = op.inputs[0], op.outputs[0]
    return [multiply(_outer_scalar(multiply(dy, d)), inv(a, adjoint=True))]


DET = op("MatrixDeterminant", lambda a: np.asarray(np.linalg.det(a), a.dtype), _infer_det, _g_det)


def det(input, name=None):
    return execute(DET, (_arg("MatrixDeterminant", input),), EMPTY, name)


def _slogdet_kernel(a):
    sign, logabs = np.linalg.slogdet(a)
    return np.asarray(sign, a.dtype), np.asarray(logabs, a.dtype)


def _g_slogdet(op, dsign, dlog):
    return [multiply(_outer_scalar(dlog), inv(op.inputs[0], adjoint=True))]


SLOGDET = op("LogMatrixDeterminant", _slogdet_kernel, lambda s, a: _infer_det(s, a) * 2, _g_slogdet, num_outputs=2)


def slogdet(input, name=None):
    """(sign, log|det|) of each matrix."""
    return execute(SLOGDET, (_arg("LogMatrixDeterminant", input),), EMPTY, name)


# ------------------------------------------------------------------ SVD
def _infer_svd(specs, attrs):
    _float("Svd", specs[0])
    shape = specs[0].shape
    if shape is not None and len(shape) < 2:
        raise InvalidArgumentError(f"Svd: input must have rank >= 2, got shape {list(shape)}", op_name="Svd")
    if shape is None or None in shape[-2:]:
        return [Spec(None, specs[0].dtype)] * 3
    m, n = shape[-2:]
    k = min(m, n)
    full = attrs.get("full_matrices", False)
    batch = tuple(shape[:-2])
    return [Spec(batch + (k,), specs[0].dtype), Spec(batch + (m, m if full else k), specs[0].dtype),
            Spec(batch + (n, n if full else k), specs[0].dtype)]


def _svd_kernel(a, full_matrices=False):
    u, s, vh = np.linalg.svd(a, full_matrices=full_matrices)
    return s.astype(a.dtype), u.astype(a.dtype), _mt(vh).astype(a.dtype)


def _g_svd(op, ds, du, dv):
    if not (is_known_zero(du) and is_known_zero(dv)):
        raise NotImplementedError("the gradient of svd through u or v is not implemented (TensorFlow has it); "
                                  "differentiate through the singular values s only")
    s, u, v = op.outputs
    k = s.shape[-1] if s.shape.rank is not None else None
    if op.get_attr("full_matrices") and k is not None:
        u, v = u[..., :k], v[..., :k]
    return [matmul(multiply(u, expand_dims(ds, -2)), v, transpose_b=True)]


SVD = op("Svd", _linalg_error("Svd")(_svd_kernel), _infer_svd, _g_svd, num_outputs=3, attrs=("full_matrices",))


def svd(tensor, full_matrices=False, compute_uv=True, name=None):
    """TF's `linalg.svd`: s (descending), and with compute_uv (s, u, v) where tensor = u @ diag(s) @ v^T."""
    s, u, v = execute(SVD, (_arg("Svd", tensor, square=False),), {"full_matrices": bool(full_matrices)}, name)
    return (s, u, v) if compute_uv else s


# ------------------------------------------------------------------ QR
def _infer_qr(specs, attrs):
    _float("Qr", specs[0])
    shape = specs[0].shape
    if shape is None or None in shape[-2:]:
        return [Spec(None, specs[0].dtype)] * 2
    m, n = shape[-2:]
    k = m if attrs.get("full_matrices", False) else min(m, n)
    return [Spec(tuple(shape[:-2]) + (m, k), specs[0].dtype), Spec(tuple(shape[:-2]) + (k, n), specs[0].dtype)]


def _qr_kernel(a, full_matrices=False):
    q, r = np.linalg.qr(a, mode="complete" if full_matrices else "reduced")
    return q.astype(a.dtype), r.astype(a.dtype)


def _qr_grad_kernel(q, r, dq, dr):
    if q.shape[-2] < r.shape[-1] or q.shape[-1] != r.shape[-2] or r.shape[-2] != r.shape[-1]:
        raise InvalidArgumentError("QrGrad: the gradient of qr needs rows >= columns (and full_matrices=False "
                                   "when rows > columns), as in TensorFlow", op_name="QrGrad")

    def tri_solve(x):          # x @ inv(r)^T, i.e. adjoint(solve(r, adjoint(x)))
        return _mt(np.linalg.solve(r, _mt(x)))
    qdq = np.matmul(_mt(q), dq)
    rdr = np.matmul(r, _mt(dr))
    low = np.tril((qdq - _mt(qdq)) + (rdr - _mt(rdr)))
    return (np.matmul(q, dr + tri_solve(low)) + tri_solve(dq - np.matmul(q, qdq))).astype(q.dtype)


QR_GRAD = op("QrGrad", _qr_grad_kernel, lambda s, a: [Spec((s[0].shape[:-1] + s[1].shape[-1:])
                                                          if s[0].shape is not None and s[1].shape is not None
                                                          else None, s[0].dtype)])
QR = op("Qr", _linalg_error("Qr")(_qr_kernel), _infer_qr,
        lambda op, dq, dr: [execute(QR_GRAD, (op.outputs[0], op.outputs[1], dq, dr), EMPTY)], num_outputs=2,
        attrs=("full_matrices",))


def qr(input, full_matrices=False, name=None):
    """(q, r) with input = q @ r, q orthonormal columns, r upper triangular."""
    return execute(QR, (_arg("Qr", input, square=False),), {"full_matrices": bool(full_matrices)}, name)


# ------------------------------------------------------------------ eigh
def _infer_eigh(specs, attrs):
    _float("SelfAdjointEigV2", specs[0])
    _square("SelfAdjointEigV2", specs[0].shape)
    shape = specs[0].shape
    return [Spec(None if shape is None else shape[:-1], specs[0].dtype), Spec(shape, specs[0].dtype)]


def _eigh_kernel(a):
    e, v = np.linalg.eigh(a)          # reads the lower triangle, as TensorFlow does
    return e.astype(a.dtype), v.astype(a.dtype)


def _eigh_grad_kernel(e, v, de, dv):
    diff = e[..., None, :] - e[..., :, None]
    n = e.shape[-1]
    eye = np.eye(n, dtype=bool)
    with np.errstate(divide="ignore"):
        f = np.where(eye, 0, 1 / np.where(eye, 1, diff))
    inner = _diag_embed(de) + f * np.matmul(_mt(v), dv)
    g = np.matmul(v, np.matmul(inner, _mt(v)))
    g = np.tril(g + _mt(g))
    idx = np.arange(n)
    g[..., idx, idx] *= 0.5
    return g.astype(e.dtype)


EIGH_GRAD = op("EighGrad", _eigh_grad_kernel, lambda s, a: [Spec(s[1].shape, s[1].dtype)])
EIGH = op("SelfAdjointEigV2", _linalg_error("SelfAdjointEigV2")(_eigh_kernel), _infer_eigh,
          lambda op, de, dv: [execute(EIGH_GRAD, (op.outputs[0], op.outputs[1], de, dv), EMPTY)], num_outputs=2,
          attrs=())


def eigh(tensor, name=None):
    """(eigenvalues ascending, eigenvectors as columns) of symmetric matrices (lower triangle read)."""
    return execute(EIGH, (_arg("SelfAdjointEigV2", tensor),), EMPTY, name)


def eigvalsh(tensor, name=None):
    return eigh(tensor, name)[0]


# ------------------------------------------------------------------ diagonals and trace
def _infer_diag(specs, attrs):
    s = specs[0].shape
    if s is not None and len(s) < 1:
        raise InvalidArgumentError("MatrixDiag: diagonal must have rank >= 1", op_name="MatrixDiag")
    return [Spec(None if s is None else tuple(s) + (s[-1],), specs[0].dtype)]


DIAG = op("MatrixDiag", _diag_embed, _infer_diag, lambda op, dy: [diag_part(dy)])


def _infer_diag_part(specs, attrs):
    s = specs[0].shape
    if s is not None and len(s) < 2:
        raise InvalidArgumentError(f"MatrixDiagPart: input must have rank >= 2, got shape {list(s)}",
                                   op_name="MatrixDiagPart")
    if s is None:
        return [Spec(None, specs[0].dtype)]
    k = None if None in s[-2:] else min(s[-2:])
    return [Spec(tuple(s[:-2]) + (k,), specs[0].dtype)]


DIAG_PART = op("MatrixDiagPart", lambda x: np.diagonal(x, axis1=-2, axis2=-1).copy(), _infer_diag_part,
               lambda op, dy: [set_diag(zeros_like(op.inputs[0]), dy)])


def _set_diag_kernel(x, d):
    out = np.array(x, copy=True)
    k = min(x.shape[-2:])
    idx = np.arange(k)
    out[..., idx, idx] = d
    return out


SET_DIAG = op("MatrixSetDiag", _set_diag_kernel, lambda s, a: [Spec(s[0].shape, s[0].dtype)],
              lambda op, dy: [set_diag(dy, zeros_like(op.inputs[1])), diag_part(dy)])


def diag(diagonal, name=None):
    """A (batch of) square matrix with `diagonal` on its diagonal (TF's `linalg.diag`, k=0)."""
    return execute(DIAG, (convert_to_tensor(diagonal),), EMPTY, name)


def diag_part(input, name=None):
    return execute(DIAG_PART, (convert_to_tensor(input),), EMPTY, name)


def set_diag(input, diagonal, name=None):
    return execute(SET_DIAG, (convert_to_tensor(input), convert_to_tensor(diagonal)), EMPTY, name)
