"""`run_functions_eagerly(True)`: every `@function` runs its Python eagerly (TF's `tf.config.run_functions_eagerly`).

A debugging switch for the whole process: while it is on, calling a
`Function` runs the original Python function (not the AutoGraph-converted
one) on eager tensors, so `print`, `pdb.set_trace()` and Python exceptions
behave as in plain Python, with the values of this call.  Nothing is traced
or cached (`experimental_get_tracing_count()` does not move); arguments are
still converted to an `input_signature`'s dtypes.  `get_concrete_function` still traces.
Switch it off to get graphs back: the traces made before are reused.

Imports nothing.
"""
from __future__ import annotations

_run_eagerly = False


def run_functions_eagerly(run_eagerly: bool) -> None:
    """Turn eager execution of every `@function` on or off (see the module docstring)."""
    global _run_eagerly
    _run_eagerly = bool(run_eagerly)


def functions_run_eagerly() -> bool:
    """Whether `run_functions_eagerly(True)` is in effect."""
    return _run_eagerly
