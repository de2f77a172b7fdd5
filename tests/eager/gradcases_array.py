"""Gradient cases for eager/ops/array.py and the shape/indexing/creation ops
(manipulation.py, padding.py, indexing.py, gather.py, sorting.py, contraction.py, creation.py)."""
import numpy as np

import eager as ek
from gradcheck import GradCase, grad_of


def weighted(f, shape, seed=1):
    """x -> sum(w * f(x)) with fixed random weights (makes second-order cases non-trivial)."""
    w = ek.constant(np.random.default_rng(seed).standard_normal(shape))
    return lambda x: ek.reduce_sum(f(x) * w)


CASES = [
    GradCase("Reshape", lambda x: ek.reshape(x, [3, 2]), [(2, 3)]),
    GradCase("BroadcastTo", lambda x: ek.broadcast_to(x, [2, 3]), [(3,)]),
    GradCase("ExpandDims", lambda x: ek.expand_dims(x, 1), [(3,)]),
    GradCase("Squeeze", lambda x: ek.squeeze(x, axis=[1]), [(3, 1)]),
    GradCase("Pack", lambda a, b: ek.stack([a, b], axis=1), [(3,), (3,)]),
    GradCase("Unpack", lambda x: ek.unstack(x, axis=0), [(2, 3)]),
    # manipulation.py
    GradCase("Transpose", lambda x: ek.transpose(x, [2, 0, 1]), [(2, 3, 4)]),
    GradCase("Transpose", ek.transpose, [(2, 3)], id="transpose_default"),
    GradCase("ConcatV2", lambda a, b: ek.concat([a, b], axis=-1), [(2, 3), (2, 1)]),
    GradCase("ConcatV2", lambda a, b, c: ek.concat([a, b, c], 0), [(1, 2), (0, 2), (3, 2)], id="concat3"),
    GradCase("Split", lambda x: ek.split(x, 2, axis=1), [(2, 4)]),
    GradCase("SplitV", lambda x: ek.split(x, [1, -1, 2], axis=0), [(5, 2)]),
    GradCase("ReverseV2", lambda x: ek.reverse(x, [0, -1]), [(2, 3)]),
    # padding.py
    GradCase("Tile", lambda x: ek.tile(x, [2, 3]), [(2, 2)]),
    GradCase("TileGrad", grad_of(weighted(lambda x: ek.tile(x, [2, 1]) ** 3, (4, 3))), [(2, 3)], id="tile_grad"),
    GradCase("PadV2", lambda x: ek.pad(x, [[1, 0], [2, 1]], constant_values=3.0), [(2, 3)]),
    GradCase("MirrorPad", lambda x: ek.pad(x, [[1, 2], [2, 1]], mode="REFLECT"), [(3, 4)], id="reflect"),
    GradCase("MirrorPad", lambda x: ek.pad(x, [[2, 1], [0, 3]], mode="symmetric"), [(3, 4)], id="symmetric"),
    GradCase("MirrorPadGrad", grad_of(weighted(lambda x: ek.pad(x, [[1, 1]], mode="REFLECT") ** 3, (5,))),
             [(3,)], id="mirror_pad_grad"),
    GradCase("Slice", lambda x: ek.slice(x, [1, 0], [2, -1]), [(3, 4)]),
    # indexing.py
    GradCase("StridedSlice", lambda x: x[1:, ::-2], [(3, 4)]),
    GradCase("StridedSlice", lambda x: x[..., None, 1], [(2, 3)], id="ellipsis_newaxis_shrink"),
    GradCase("StridedSlice", lambda x: x[-1], [(3, 2)], id="negative_index"),
    GradCase("StridedSliceGrad", grad_of(weighted(lambda x: x[::2, 1:] ** 3, (2, 2))), [(3, 3)], id="ss_grad"),
    # gather.py
    GradCase("GatherV2", lambda x: ek.gather(x, [2, 0, 2], axis=1), [(2, 3)]),
    GradCase("GatherV2", lambda x: ek.gather(x, [[1, 0], [2, 2]], axis=1, batch_dims=1), [(2, 3, 2)],
             id="gather_batch_dims"),
    GradCase("GatherV2", lambda x: ek.sort(x, axis=0, direction="DESCENDING"), [(4, 3)], id="sort"),
    GradCase("GatherV2", lambda x: ek.boolean_mask(x, ek.constant([[True, False], [True, True]])), [(2, 2, 3)],
             id="boolean_mask"),
    GradCase("GatherGrad", grad_of(weighted(lambda x: ek.gather(x, [0, 0, 1]) ** 3, (3, 2))), [(2, 2)],
             id="gather_grad"),
    GradCase("GatherNd", lambda x: ek.gather_nd(x, [[1, 0], [0, 2], [1, 0]]), [(2, 3, 2)]),
    GradCase("ScatterNd", lambda u: ek.scatter_nd([[1], [3], [1]], u, [4, 2]), [(3, 2)]),
    GradCase("SelectV2", lambda x, y: ek.where(ek.constant([[True], [False]]), x, y), [(2, 3), (3,)]),
    # sorting.py
    GradCase("TopKV2", lambda x: ek.top_k(x, 2).values, [(3, 4)]),
    GradCase("Cumsum", lambda x: ek.cumsum(x, axis=1), [(2, 4)]),
    GradCase("Cumsum", lambda x: ek.cumsum(x, exclusive=True, reverse=True), [(4, 2)], id="cumsum_excl_rev"),
    # contraction.py
    GradCase("Einsum", lambda a, b: ek.einsum("ij,jk->ik", a, b), [(2, 3), (3, 4)]),
    GradCase("Einsum", lambda a, b: ek.einsum("...ij,jk", a, b), [(2, 2, 3), (3, 2)], id="einsum_ellipsis"),
    GradCase("Einsum", lambda a: ek.einsum("ii", a), [(3, 3)], id="einsum_trace"),
    GradCase("Einsum", lambda a: ek.einsum("iji->ij", a), [(2, 3, 2)], id="einsum_diag"),
    GradCase("Einsum", lambda a, b: ek.einsum("ij,kj->ikj", a, b), [(1, 3), (2, 1)], id="einsum_broadcast"),
    GradCase("Einsum", lambda a, b: ek.einsum("ijk,k->i", a, b), [(2, 3, 4), (4,)], id="einsum_sum_out"),
    GradCase("Einsum", lambda a, b: ek.tensordot(a, b, [[0, 2], [1, 0]]), [(2, 3, 4), (4, 2)], id="tensordot"),
    # creation.py
    GradCase("LinSpace", lambda a, b: ek.linspace(a, b, 4), [(), ()]),
    GradCase("LinSpace", lambda a, b: ek.linspace(a, b, 3, axis=-1), [(2,), (1,)], id="linspace_nd"),
]
