"""A forward loop's saved iterations that the compiled loop also holds stacked, in the backward walk's order.

The compiled RNN loop (compiled_loop.py) writes every iteration's state into
one array, in reverse: row `n - 1 - j` holds the state after iteration `j`,
and row `n` a copy of the state the loop started from.  The history it
returns (the list of per-iteration tuples the Python loop would save) is a
`StackedHistory` carrying that array, so the compiled backward walk
(compiled_walk.py), which reads the saved values in walk order
(`t = n - 1 ... 0`), takes them as views instead of stacking 100 rows:

    the next state of iterations n-1 ... 0      states[0:n]
    the previous state of iterations n-1 ... 0  states[1:n + 1]
    row t of the loop's buffer, t = n-1 ... 0   one reversed copy of buffer[t0:t0 + n]

The same values in the same order as stacking the tuples' entries, so the
same bits downstream.  The tuples stay (other readers of a history, and the
Python walk, index them); they are views of the same arrays.

Imports `numpy`.
"""
from __future__ import annotations

from typing import Optional

import numpy as np


class StackedHistory(list):
    """The saved iterations (a list of tuples) plus the compiled loop's stacked states (module docstring).
    `kinds`: per saved position, compiled_loop's "new", "read", "count" or "h"."""
    __slots__ = ("states", "buffer", "t0", "kinds")

    def __init__(self, states: np.ndarray, buffer: np.ndarray, t0: int, kinds: tuple):
        super().__init__()
        self.states, self.buffer, self.t0, self.kinds = states, buffer, t0, kinds

    def walk_rows(self, i: int, n: int) -> Optional[np.ndarray]:
        """Saved value `i` of iterations `n - 1 ... 0` as one C-contiguous `(n, ...)` array, or None (the
        counter, or a history not of `n` iterations)."""
        if n != len(self) or n + 1 != self.states.shape[0]:
            return None
        kind = self.kinds[i]
        if kind == "new":
            return self.states[:n]
        if kind == "h":
            return self.states[1:]
        if kind == "read":
            return np.ascontiguousarray(self.buffer[self.t0:self.t0 + n][::-1])
        return None
