"""Primitive and composite ops, one module per family.

Each module declares its primitives once with `registry.op(...)` and exposes
public Python functions listed in its `__all__`; `eager/__init__.py` re-exports
those.  Shared helpers for declaring ops live in `_define.py`.
"""
