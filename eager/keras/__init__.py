"""`eager.keras`: Keras 3's surface, spelled as `tf.keras`, on graphjit's eager core.

Layers, losses and metrics are eager code (they run eagerly and inside `@function`); `Model.fit`
compiles its train and test steps through `eager.compiler_hook` (docs/architecture.md), so this
package never imports `tracing`.
"""
from . import activations, backend, callbacks, initializers, layers, losses, metrics, optimizers, regularizers
from .models import Functional, Input, Model, Sequential

__all__ = ["activations", "backend", "callbacks", "initializers", "layers", "losses", "metrics", "optimizers",
           "regularizers", "utils", "Model", "Sequential", "Input", "Functional"]


class utils:  # noqa: N801 - a namespace, as keras.utils
    """`eager.keras.utils.set_random_seed(seed)`."""
    set_random_seed = staticmethod(backend.set_random_seed)
