"""Simulated staging for tests: eager tensors treated as symbolic.

Until graph building of cond/while exists, this fixture makes the runtime
operators take their *staged* paths on eager tensors: `is_symbolic` is true
for every tensor, and `cond` runs both branches (as graph building traces
both) and returns the one the eager predicate selects.  `while_loop` is
eager's own (which runs the loop in Python, with its structure checks).
"""
import types

import pytest

import eager as ek
from autograph.operators import (_tensors, control_flow, exceptions, logical, py_builtins,
                                 staging)


def _sym(x):
    return isinstance(x, ek.Tensor)


def _cond(pred, true_fn, false_fn, name=None):
    a, b = true_fn(), false_fn()
    return a if bool(pred) else b


@pytest.fixture
def simulated_graph(monkeypatch):
    proxy = types.SimpleNamespace(**{n: getattr(ek, n) for n in dir(ek) if not n.startswith("__")})
    proxy.cond = _cond
    for mod in (_tensors, control_flow, exceptions, logical, py_builtins, staging):
        if hasattr(mod, "is_symbolic"):
            monkeypatch.setattr(mod, "is_symbolic", _sym)
        if hasattr(mod, "ek"):
            monkeypatch.setattr(mod, "ek", proxy)
    yield None
