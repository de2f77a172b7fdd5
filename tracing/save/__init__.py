"""Deployment: traced functions and variables to a directory of data, and back.

- `save(obj, path)` / `load(path)`: concrete functions as GraphDefs plus
  variable values; the loaded object runs in a fresh process without the
  Python source (writer.py, loader.py, restored.py; layout in format.py).
- `save_checkpoint(obj, path)` / `restore_checkpoint(obj, path)`: variable
  values only, keyed by attribute path (checkpoint.py); `Saver` writes one
  of a Session's variables wherever they live (saver.py).
- `SavedModelError`: the one error class for missing, foreign or corrupted
  directories.
- `describe_saved(path)`: a readable summary (used by `graphjit show`).

Imports `eager`, `graph_runtime` and the rest of `tracing`.
"""
from .format import SavedModelError
from .writer import save
from .loader import load, read_manifest
from .restored import Loaded, RestoredFunction
from .checkpoint import RestoreStatus, restore_checkpoint, save_checkpoint, variable_paths
from .saver import Saver

__all__ = ["save", "load", "SavedModelError", "Loaded", "RestoredFunction", "save_checkpoint",
           "restore_checkpoint", "RestoreStatus", "Saver", "variable_paths", "read_manifest"]
