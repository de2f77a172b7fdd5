"""Weight regularizers (`eager.keras.regularizers`): L1, L2, L1L2 and their Keras names.

A regularizer maps a weight to a scalar penalty: `L2(l2)(w) = l2 * sum(w**2)` (no 1/2, as Keras),
`L1(l1)(w) = l1 * sum(|w|)`.  A layer given `kernel_regularizer=` reports the penalty in
`layer.losses` (recomputed from the current weights each time it is read), and `fit` adds the
model's `losses` to the compiled loss.
"""
from __future__ import annotations

from ..ops import math as _m
from ..ops import reduction as _red


class Regularizer:
    def __call__(self, x):
        raise NotImplementedError(f"{type(self).__name__} must define __call__(weight)")

    def get_config(self) -> dict:
        return {}


class L1L2(Regularizer):
    def __init__(self, l1=0.0, l2=0.0):
        self.l1, self.l2 = float(l1), float(l2)

    def __call__(self, x):
        penalty = None
        if self.l1:
            penalty = _m.multiply(_red.reduce_sum(_m.abs(x)), self.l1)
        if self.l2:
            term = _m.multiply(_red.reduce_sum(_m.square(x)), self.l2)
            penalty = term if penalty is None else _m.add(penalty, term)
        if penalty is None:
            penalty = _m.multiply(_red.reduce_sum(x), 0.0)
        return penalty

    def get_config(self) -> dict:
        return {"l1": self.l1, "l2": self.l2}


class L1(L1L2):
    def __init__(self, l1=0.01):
        super().__init__(l1=l1)


class L2(L1L2):
    def __init__(self, l2=0.01):
        super().__init__(l2=l2)


l1, l2, l1_l2 = L1, L2, L1L2

_BY_NAME = {"l1": L1, "l2": L2, "l1_l2": L1L2, "l1l2": L1L2}


def get(identifier):
    """None, a Regularizer, a callable `weight -> penalty`, or a Keras name ("l2" is L2(0.01))."""
    if identifier is None or isinstance(identifier, Regularizer) or \
            (callable(identifier) and not isinstance(identifier, type)):
        return identifier
    if isinstance(identifier, str) and identifier.lower() in _BY_NAME:
        return _BY_NAME[identifier.lower()]()
    raise ValueError(f"unknown regularizer {identifier!r}; known names: {sorted(_BY_NAME)}")
