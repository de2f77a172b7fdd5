"""`eager.data`: input pipelines spelled as `tf.data` (see docs/api.md, "Datasets").

`Dataset` sources and transformations, `AUTOTUNE`, `INFINITE_CARDINALITY`,
`UNKNOWN_CARDINALITY`, `DatasetSpec`.  Eager code: it imports only `eager`
and reaches `@function` through `eager.compiler_hook`.
"""
from .dataset import Dataset, Iterator
from .sources import INFINITE as INFINITE_CARDINALITY, UNKNOWN as UNKNOWN_CARDINALITY
from .structure import DatasetSpec
from .threads import AUTOTUNE

__all__ = ["Dataset", "Iterator", "DatasetSpec", "AUTOTUNE", "INFINITE_CARDINALITY", "UNKNOWN_CARDINALITY"]

from ..namespace import public_namespace as _public_namespace  # noqa: E402
_public_namespace(__name__)
