"""`eager.keras`: Keras 3's surface, spelled as `tf.keras`, on graphjit's eager core.

Layers, losses and metrics are eager code (they run eagerly and inside `@function`); `Model.fit`
compiles its train and test steps through `eager.compiler_hook` (docs/architecture.md), so this
package never imports `tracing`.
"""
from . import activations, backend, initializers, layers, optimizers
