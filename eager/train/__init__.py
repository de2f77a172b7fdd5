"""`eager.train`: TF2's `tf.train` checkpoints: `Checkpoint`, `CheckpointManager`, `latest_checkpoint`.

`object_graph.py` holds the object graph and the checkpoint file;
`checkpoint.py` the `Checkpoint` object, saving and (deferred) restoration;
`manager.py` numbered saves, retention and the directory index;
`tensor_file.py` the safetensors layout (also for other tensor files, e.g.
Keras weights).
"""
from . import tensor_file
from .checkpoint import Checkpoint, CheckpointLoadStatus
from .manager import CheckpointManager, latest_checkpoint

__all__ = ["Checkpoint", "CheckpointLoadStatus", "CheckpointManager", "latest_checkpoint", "tensor_file"]
