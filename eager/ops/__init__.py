"""Primitive and composite ops, one module per family.

Each module declares its primitives once with `registry.op(...)` and exposes
public Python functions listed in its `__all__`; `eager/__init__.py` re-exports
those.  Shared helpers for declaring ops live in `_define.py` and `_args.py`.

The modules import each other without cycles and without function-level
imports: the primitives conversion needs (`_const`, `_pack`, with `_fold`)
sit below `convert.py`; a gradient or composite that needs another family's
wrapper lives in a module above that family (`sum_to_like` with BroadcastTo in
`array.py`, `boolean_mask` in `indexing.py`, `eye` in `linalg.py`).
"""
