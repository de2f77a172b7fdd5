"""`eager.keras`: Keras 3's surface, spelled as `tf.keras`, on graphjit's eager core."""
from . import optimizers  # noqa: F401
