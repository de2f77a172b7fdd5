"""`keras.optimizers`: SGD, Adam, AdamW, RMSprop, Adagrad, Adadelta, Nadam, `schedules` and `get`.

Keras 3's update rules (fused, atomic kernels in `eager.training_ops`), with
hyperparameters held in variables: see `base.py` for the state and step
protocol and `rules.py` for the optimizers.  `eager.optimizers` is the same
module under its older name.
"""
from . import schedules
from .base import Hyperparameter, Optimizer
from .rules import SGD, Adadelta, Adagrad, Adam, AdamW, Nadam, RMSprop

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "Nadam", "schedules", "get",
           "serialize", "deserialize"]

_BY_NAME = {c.__name__.lower(): c for c in (SGD, Adam, AdamW, RMSprop, Adagrad, Adadelta, Nadam)}


def serialize(optimizer) -> dict:
    return {"class_name": type(optimizer).__name__, "config": optimizer.get_config()}


def deserialize(config: dict):
    """An optimizer from `serialize`'s dict: only the classes above (nothing from a config becomes code)."""
    cls = _BY_NAME.get(str(config.get("class_name", "")).lower()) if isinstance(config, dict) else None
    if cls is None:
        raise ValueError(f"Could not interpret optimizer identifier: {config!r}; known: {sorted(_BY_NAME)}")
    return cls.from_config(config.get("config", {}))


def get(identifier):
    """An optimizer from a name ("adam", "SGD", ...), a `serialize` dict, or an optimizer (returned as is)."""
    if isinstance(identifier, Optimizer):
        return identifier
    if isinstance(identifier, str) and identifier.lower() in _BY_NAME:
        return _BY_NAME[identifier.lower()]()
    if isinstance(identifier, dict):
        return deserialize(identifier)
    raise ValueError(f"Could not interpret optimizer identifier: {identifier!r}; known names: {sorted(_BY_NAME)}")


from ...namespace import public_namespace as _public_namespace  # noqa: E402
_public_namespace(__name__)
