"""`eager.optimizers`: the older name of `eager.keras.optimizers` (the same module objects).

Kept so that existing code (`ek.optimizers.Adam(0.01)`) keeps working; see
`eager/keras/optimizers/` for the optimizers, schedules and `get`.
"""
from .keras.optimizers import *  # noqa: F401,F403 - the same public names
from .keras.optimizers import __all__  # noqa: F401


from .namespace import public_namespace as _public_namespace  # noqa: E402
_public_namespace(__name__)
