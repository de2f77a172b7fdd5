"""Convolution algorithms (NHWC input, HWIO filter); `conv_cost` picks one per shape.

Each direction has several NumPy algorithms; all compute the same sums (they
agree within float32 rounding, and tests check each against a loop
reference):

- Conv2D (`forward`): `im2col` copies every window once into a
  [M, kh*kw*C] buffer (M = N*oh*ow; per-tap slab copies into its transpose
  when C == 1, one strided reshape otherwise) and does one GEMM; `taps` sums kh*kw matmuls of
  the strided slab meeting each filter tap (no copy: good when the buffer
  would be huge).
- Conv2DBackpropInput (`input`): `col2im` does one GEMM dy @ f^T into
  [M, kh*kw*C] columns, then scatter-adds each tap's whole slab; `taps` does
  one matmul per tap into scratch memory and adds it into the part of the
  unpadded, contiguous dx the tap reaches; `transpose` (stride 1 only) is the
  transposed convolution as an im2col GEMM over the zero-padded dy with the
  flipped filter.
- Conv2DBackpropFilter (`filter`): `gemm` is one GEMM cols^T @ dy over the
  im2col buffer; `taps` one GEMM per tap over its slab.

Large buffers are built a batch chunk at a time (at most COLS_BYTES each), so
memory stays bounded whatever the batch.  Padded copies and im2col buffers
live in per-thread scratch memory reused from call to call (`padded`,
`_scratch`: fresh multi-megabyte arrays cost page faults), except a
Conv2D's whole columns, which `conv_columns` keeps for its filter gradient.  The copies into the im2col buffer
and col2im's scatter-adds are memory-bound: big ones run in batch parts on
both cores (`eager.parallel.for_range`); the GEMMs between them stay on the
calling thread, where OpenBLAS uses its own threads.  Where the BLAS library
runs on one thread (`OPENBLAS_NUM_THREADS=1`; read through threadpoolctl,
`eager.blas_threads`) a big im2col forward or filter gradient instead runs
in batch parts (`_split`: copy the part's windows, then its GEMM) that the
caller and the pool take in turns (so do `taps`' input-gradient GEMMs); the parts depend on the shapes only.  With numba installed,
big scatter-adds run as one compiled pass per image (`eager.native`: the
same additions in the same order, so the same bits).  The cost model
(`choose`, `estimates`, `forced`, `ALGORITHMS`) lives in `conv_cost` and is
re-exported here.

Imports: numpy, `eager.parallel`, `eager.blas_threads`, `eager.own_cores`, `eager.native`, `eager.buffers`, `conv_columns`,
`conv_cost` and `windows` (geometry helpers).
"""
from __future__ import annotations

import contextlib
import functools
import threading

import numpy as np

from .. import blas_threads, buffers, native, own_cores, parallel
from . import conv_columns
from .conv_cost import ALGORITHMS, choose, estimates, forced  # noqa: F401 - the cost model, re-exported
from .windows import crop, padded_shape, slab, window_view

COLS_BYTES = 16 << 20          # largest im2col buffer built at once (a batch chunk at a time beyond it)
SCRATCH_BYTES = 16 << 20       # scratch buffers up to this size are kept for reuse (per thread and slot)
SPLIT_MIN_BYTES = 1 << 20      # an im2col buffer at least this big has its GEMMs split over the cores
PART_BYTES = 1 << 20          # im2col buffer per batch part when split (smaller parts cost more CPU)
TAPS_PART_SCALE = 4           # `taps`' input-gradient parts are this many times bigger (CNN conv2: 2 parts)

@contextlib.contextmanager
def split_gemms(enabled: bool = True, min_bytes: int | None = None, part_bytes: int | None = None):
    """Within the block, GEMMs split into batch parts or not, and the sizes that decide it (`_split`).

    For tests and benchmarks: process-wide, like `forced`.
    """
    global SPLIT_MIN_BYTES, PART_BYTES
    saved = SPLIT_MIN_BYTES, PART_BYTES
    if not enabled:
        SPLIT_MIN_BYTES = 1 << 62
    elif min_bytes is not None:
        SPLIT_MIN_BYTES = min_bytes
    if part_bytes is not None:
        PART_BYTES = part_bytes
    try:
        yield
    finally:
        SPLIT_MIN_BYTES, PART_BYTES = saved


# ------------------------------------------------------------------ scratch memory
_local = threading.local()


def _scratch(slot, shape, dtype):
    """An uninitialised array of `shape` in this thread's reusable buffer `slot` (fresh if very large).

    The caller must be done with the previous array of the same slot: kernels use one slot per role.
    """
    dtype = np.dtype(dtype)
    nbytes = int(np.prod(shape)) * dtype.itemsize
    if nbytes > SCRATCH_BYTES:
        return np.empty(shape, dtype)
    slots = getattr(_local, "buffers", None)
    if slots is None:
        slots = _local.buffers = {}
    buf = slots.get(slot)
    if buf is None or buf.size < nbytes:
        buf = slots[slot] = np.empty(max(nbytes, 1 << 16), np.uint8)
    return buf[:nbytes].view(dtype).reshape(shape)


def padded(x, before, after, slot="pad"):
    """`x` [N, H, W, C] zero-padded by before = (top, left) and after = (bottom, right), in scratch memory.

    Negative amounts crop.  Returns `x` itself when there is nothing to do.
    """
    (t, l), (b, r) = before, after
    if t == l == b == r == 0:
        return x
    n, h, w, c = x.shape
    out = _scratch(slot, (n, h + t + b, w + l + r, c), x.dtype)
    src = x[:, max(0, -t):h - max(0, -b), max(0, -l):w - max(0, -r), :]
    t0, l0 = max(0, t), max(0, l)
    t1, l1 = t0 + src.shape[1], l0 + src.shape[2]
    out[:, :t0] = 0
    out[:, t1:] = 0
    out[:, t0:t1, :l0] = 0
    out[:, t0:t1, l1:] = 0
    out[:, t0:t1, l0:l1] = src
    return out


# ------------------------------------------------------------------ im2col
def _batch_chunk(n, per_image_elems, itemsize):
    return max(1, min(n, COLS_BYTES // max(1, per_image_elems * itemsize)))


def _split(n, per_image_elems, itemsize, part_bytes=None):
    """Batch parts `[(start, stop)]` for GEMMs run side by side on the cores, or None (keep them whole).

    Parts hold about `part_bytes` (default PART_BYTES) of im2col buffer each (fixed by the shapes, so the bits never depend on
    the machine's load); only where the whole buffer is at least SPLIT_MIN_BYTES, there is a second core
    and the BLAS library runs on one thread (`blas_threads.count()`): where it runs on several, each GEMM
    already uses the cores, and on the 2-core machine the parts measured 5-14% slower on the CNN step
    (`GRAPHJIT_BLAS_SPLIT=1` or `GRAPHJIT_OWN_CORES=1`, `eager.own_cores`, split there too, lowering BLAS to
    one thread for the parts: opt-ins).
    """
    per_image = per_image_elems * itemsize
    if n < 2 or n * per_image < SPLIT_MIN_BYTES or parallel.cores() < 2:
        return None
    blas = blas_threads.count()
    if blas is None or (blas != 1 and not (blas_threads.split_forced() or own_cores.enabled())):
        return None             # GRAPHJIT_BLAS_SPLIT=1 or GRAPHJIT_OWN_CORES=1: parts anyway
    part_bytes = PART_BYTES if part_bytes is None else part_bytes
    k = min(n, -(-n * per_image // max(1, part_bytes)))       # parts of equal size: no short last part
    return [(n * i // k, n * (i + 1) // k) for i in range(k)]


def _run_parts(part, parts):
    """`part(i)` for each batch part, on the caller and the pool, BLAS on one thread per part."""
    with blas_threads.single():
        parallel.for_parts(part, len(parts))


def _cols(xp, oh, ow, kh, kw, strides, dilations, start, stop, own=False):
    """im2col of images [start, stop) of the padded input: [(stop-start)*oh*ow, kh*kw*C], one copy.

    With one input channel the columns are built transposed, [kh*kw, rows], and returned as its
    transpose: each tap's slab is then one contiguous run (its rows), where the [rows, kh*kw] layout
    writes every slab with a stride of kh*kw elements (measured 1.3-1.7x slower for the whole forward
    kernel, GEMM included; the GEMMs take the transposed operand as it is, no copy).
    `own`: in memory of its own (`eager.buffers`, to be kept by `conv_columns`), not this thread's scratch.
    """
    c = xp.shape[3]
    view = window_view(xp[start:stop], oh, ow, kh, kw, strides, dilations)
    if kh == kw == 1 and view[:, :, :, 0, 0, :].flags.c_contiguous:
        return view.reshape(-1, c)                  # a 1x1 stride-1 convolution: already im2col
    alloc = buffers.empty if own else functools.partial(_scratch, "cols")
    if c == 1:
        buf = alloc((kh, kw) + view.shape[:3], xp.dtype)

        def copy_slabs(lo, hi):
            for i in range(kh):
                for j in range(kw):
                    buf[i, j, lo:hi] = view[lo:hi, :, :, i, j, 0]
        parallel.for_range(copy_slabs, stop - start, 2 * buf.nbytes)
        return buf.reshape(kh * kw, -1).T
    buf = alloc(view.shape, xp.dtype)
    parallel.for_range(lambda lo, hi: np.copyto(buf[lo:hi], view[lo:hi]), stop - start, 2 * buf.nbytes)
    return buf.reshape(-1, kh * kw * c)


def _chunks(xp, oh, ow, kh, kw):
    n = xp.shape[0]
    step = _batch_chunk(n, oh * ow * kh * kw * xp.shape[3], xp.dtype.itemsize)
    return [(s, min(n, s + step)) for s in range(0, n, step)]


# ------------------------------------------------------------------ Conv2D
def _padded_part(x, pad, s, e):
    """Images [s, e) of `x` padded by `pad` = (before, after) (`padded`: this thread's scratch memory)."""
    return x[s:e] if pad is None else padded(x[s:e], *pad)


def forward(name, xp, f, oh, ow, strides, dilations, pad=None, keep=False):
    """Conv2D of the padded input `xp` [N, Hp, Wp, C] with `f` [kh, kw, C, O] -> [N, oh, ow, O].

    With `pad` = (before, after), `xp` is the unpadded input and is padded here: a part at a time when
    the GEMMs are split (each thread pads its own images, in cache), else at once.  `keep`: leave the
    columns (when built whole) to `conv_columns` for the filter gradient.
    """
    kh, kw, c, o = f.shape
    n = xp.shape[0]
    if name == "im2col":
        out = buffers.empty((n, oh, ow, o), xp.dtype)
        fm = f.reshape(kh * kw * c, o)
        parts = _split(n, oh * ow * kh * kw * c, xp.dtype.itemsize)
        if parts:
            def part(i):
                s, e = parts[i]
                np.matmul(_cols(_padded_part(xp, pad, s, e), oh, ow, kh, kw, strides, dilations, 0, e - s), fm,
                          out=out[s:e].reshape(-1, o))
            _run_parts(part, parts)
            return out
        x, key = xp, (oh, ow, kh, kw, strides, dilations, pad)
        keep = (keep and (kh, kw) != (1, 1) and n * oh * ow * kh * kw * c * xp.dtype.itemsize <= COLS_BYTES
                and conv_columns.enabled())         # 1x1: the columns are a view, nothing to keep
        xp = _padded_part(xp, pad, 0, n)
        for s, e in _chunks(xp, oh, ow, kh, kw):    # whole when kept (then in memory of its own)
            cols = _cols(xp, oh, ow, kh, kw, strides, dilations, s, e, own=keep)
            np.matmul(cols, fm, out=out[s:e].reshape(-1, o))
        if keep:
            conv_columns.keep(x, key, cols)
        return out
    xp = _padded_part(xp, pad, 0, n)
    out = buffers.zeros((n, oh, ow, o), xp.dtype)
    for i in range(kh):
        for j in range(kw):
            out += xp[slab(i, j, strides, dilations, oh, ow)] @ f[i, j]
    return out


# ------------------------------------------------------------------ Conv2DBackpropInput
def backprop_input(name, x_shape, gh, gw, f, dy, strides, dilations):
    """Gradient of Conv2D wrt its (unpadded) input of shape `x_shape`, given dy [N, oh, ow, O]."""
    kh, kw, c, o = f.shape
    oh, ow = gh[0], gw[0]
    if name == "transpose":
        # dx[p] = sum_t dy_full[p + t*d] f_flipped[t]: a stride-1 convolution of dy padded by
        # (eff - 1 - pad_before, eff - 1 - pad_after) with the flipped, transposed filter
        eh, ew = (kh - 1) * dilations[0], (kw - 1) * dilations[1]
        ft = np.ascontiguousarray(f[::-1, ::-1].transpose(0, 1, 3, 2))
        return forward("im2col", dy, ft, x_shape[1], x_shape[2], (1, 1), dilations,
                       pad=((eh - gh[1], ew - gw[1]), (eh - gh[2], ew - gw[2])))
    if name == "taps":
        return _taps_input(x_shape, gh, gw, f, dy, strides, dilations)
    dxp = buffers.zeros(padded_shape(x_shape, gh, gw), dy.dtype)
    if name == "col2im":
        fm = f.reshape(kh * kw * c, o).T
        parts = _split(dy.shape[0], oh * ow * kh * kw * c, dy.dtype.itemsize)
        if parts:
            whole = dy.shape[0] * oh * ow * kh * kw * c * dy.dtype.itemsize

            def part(i):
                s, e = parts[i]
                cols = _scratch("dcols", ((e - s) * oh * ow, kh * kw * c), dy.dtype)
                np.matmul(dy[s:e].reshape(-1, o), fm, out=cols)
                _scatter_add(dxp[s:e], cols.reshape(e - s, oh, ow, kh, kw, c), strides, dilations, whole)
            _run_parts(part, parts)
            return crop(dxp, gh, gw)
        step = _batch_chunk(dy.shape[0], oh * ow * kh * kw * c, dy.dtype.itemsize)
        for s in range(0, dy.shape[0], step):
            e = min(dy.shape[0], s + step)
            cols = (dy[s:e].reshape(-1, o) @ fm).reshape(e - s, oh, ow, kh, kw, c)
            _scatter_add(dxp[s:e], cols, strides, dilations)
    return crop(dxp, gh, gw)


def _reach(k, stride, dilation, pad_before, out, size):
    """Where tap offset `k` of a window takes dy along one dimension: (dy slice, dx slice), or None.

    dy position o meets input position o * stride + k * dilation - pad_before; only those inside [0, size).
    """
    first = k * dilation - pad_before
    lo = max(0, -(first // stride))         # ceil(-first / stride)
    hi = min(out, (size - 1 - first) // stride + 1)
    if hi <= lo:
        return None
    return slice(lo, hi), slice(lo * stride + first, (hi - 1) * stride + first + 1, stride)


def _taps_input(x_shape, gh, gw, f, dy, strides, dilations):
    """`taps`: per tap one GEMM dy @ f[i, j]^T into scratch memory, added into the part of dx it reaches.

    dx is written unpadded and contiguous (no crop: a cropped view slows the kernels that read it), zero
    first, then the taps' products added in row-major tap order: the same sums as adding into a padded
    buffer and cropping it.  Split GEMMs (`_split`) take batch parts, each with its own products.
    """
    kh, kw, c, o = f.shape
    n, oh, ow = dy.shape[:3]
    dx = buffers.zeros(x_shape, dy.dtype)
    along_h = [_reach(i, strides[0], dilations[0], gh[1], oh, x_shape[1]) for i in range(kh)]
    along_w = [_reach(j, strides[1], dilations[1], gw[1], ow, x_shape[2]) for j in range(kw)]
    taps = [(i, j) for i in range(kh) for j in range(kw) if along_h[i] and along_w[j]]

    def add_taps(s, e):
        dym, part = dy[s:e].reshape(-1, o), dx[s:e]
        prod = _scratch("tap", (e - s, oh, ow, c), dy.dtype)
        for i, j in taps:
            (src_h, dst_h), (src_w, dst_w) = along_h[i], along_w[j]
            np.matmul(dym, f[i, j].T, out=prod.reshape(-1, c))
            part[:, dst_h, dst_w, :] += prod[:, src_h, src_w, :]
    # a part's products are a ninth of its im2col-sized bytes: bigger parts (fewer small GEMMs) cost less CPU
    parts = _split(n, oh * ow * kh * kw * c, dy.dtype.itemsize, TAPS_PART_SCALE * PART_BYTES)
    if parts:
        _run_parts(lambda k: add_taps(*parts[k]), parts)
    else:
        add_taps(0, n)
    return dx


def _scatter_add(dxp, cols, strides, dilations, whole_bytes=0):
    """col2im: add each tap's column slab of `cols` [n, oh, ow, kh, kw, C] into the padded `dxp` [n, ...].

    `whole_bytes`: the whole problem's column bytes when `cols` is one batch part of it (the native
    kernel's size threshold is about the process's tensors, not a part's).
    """
    _, oh, ow, kh, kw, _ = cols.shape
    if native.use(max(cols.nbytes, whole_bytes), cols.dtype):
        def add(lo, hi):
            native.col2im(cols[lo:hi], dxp[lo:hi], strides, dilations)
        parallel.for_range(add, cols.shape[0], 3 * cols.nbytes)
        return

    def add(lo, hi):
        part, src = dxp[lo:hi], cols[lo:hi]
        for i in range(kh):
            for j in range(kw):
                part[slab(i, j, strides, dilations, oh, ow)] += src[:, :, :, i, j, :]
    parallel.for_range(add, cols.shape[0], 3 * cols.nbytes)


# ------------------------------------------------------------------ Conv2DBackpropFilter
def backprop_filter(name, xp, f_shape, dy, strides, dilations, pad=None):
    """Gradient of Conv2D wrt its filter [kh, kw, C, O], given the padded input and dy (`pad`: as `forward`)."""
    kh, kw, c, o = f_shape
    oh, ow = dy.shape[1], dy.shape[2]
    n = xp.shape[0]
    if name == "gemm":
        parts = _split(n, oh * ow * kh * kw * c, xp.dtype.itemsize)
        if parts:
            sums = np.empty((len(parts), kh * kw * c, o), dy.dtype)

            def part(i):
                s, e = parts[i]
                cols = _cols(_padded_part(xp, pad, s, e), oh, ow, kh, kw, strides, dilations, 0, e - s)
                np.matmul(cols.T, dy[s:e].reshape(-1, o), out=sums[i])
            _run_parts(part, parts)
            acc = sums[0]
            for i in range(1, len(parts)):      # added in part order: the same bits whoever ran the parts
                acc += sums[i]
            return acc.reshape(f_shape)
        cols = conv_columns.find(xp, (oh, ow, kh, kw, strides, dilations, pad))
        if cols is not None:                        # the forward's own columns, the same bytes
            return (cols.T @ dy.reshape(-1, o)).reshape(f_shape)
        xp = _padded_part(xp, pad, 0, n)
        acc = None
        for s, e in _chunks(xp, oh, ow, kh, kw):
            part = _cols(xp, oh, ow, kh, kw, strides, dilations, s, e).T @ dy[s:e].reshape(-1, o)
            acc = part if acc is None else acc + part
        return acc.reshape(f_shape)
    xp = _padded_part(xp, pad, 0, n)
    dym = dy.reshape(-1, o)
    out = np.empty(f_shape, dy.dtype)
    for i in range(kh):
        for j in range(kw):
            out[i, j] = xp[slab(i, j, strides, dilations, oh, ow)].reshape(-1, c).T @ dym
    return out
