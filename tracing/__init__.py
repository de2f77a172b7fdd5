"""graphjit's `@function`: signatures, trace cache, concrete functions, retrace log.

`function` turns a Python function into a `Function` that traces one graph per
input signature (after AutoGraph conversion) and replays it through the
compiled executor.  Imports `autograph`, `graph_runtime` and `eager`.
"""
from eager.tensor_spec import TensorSpec
from .function import Function, RetraceWarning, function
from .concrete import ConcreteFunction
from .function_type import FunctionType
from .trace_type import TraceType
from .retrace_log import RetraceError, TraceRecord, no_retrace
from .run_eagerly import functions_run_eagerly, run_functions_eagerly
from .save import Saver, SavedModelError, load, restore_checkpoint, save, save_checkpoint

__all__ = ["function", "Function", "ConcreteFunction", "TensorSpec", "RetraceError", "RetraceWarning",
           "TraceRecord", "no_retrace", "save", "load", "save_checkpoint", "restore_checkpoint", "Saver",
           "SavedModelError", "run_functions_eagerly", "functions_run_eagerly",
           "FunctionType", "TraceType", "types"]

import types as _types

# TF's spelling of the base class a `__tf_tracing_type__` returns: tf.types.experimental.TraceType
types = _types.SimpleNamespace(experimental=_types.SimpleNamespace(TraceType=TraceType))
