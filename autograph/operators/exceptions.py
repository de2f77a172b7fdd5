"""`assert_stmt`: Python `assert`, or a runtime assert op for a tensor.

TensorFlow raises for `assert` on a symbolic tensor unless told otherwise;
we add `eager.debugging.Assert(test, [message])`, which fails when the graph
runs.  With a Python value (or an eager tensor) it is exactly `assert`.
"""
from __future__ import annotations

import eager as ek

from ..pyct.origin_info import user_location
from ._tensors import is_symbolic


def assert_stmt(test, message_fn):
    if is_symbolic(test):
        message = message_fn()
        loc = user_location(2)
        text = f"assertion failed at {loc}" if loc else "assertion failed"
        data = [text] + ([message] if message is not None else [])
        debugging = getattr(ek, "debugging", None)
        if debugging is not None and hasattr(debugging, "Assert"):
            return debugging.Assert(test, data)
        if debugging is not None and hasattr(debugging, "assert_equal"):
            return debugging.assert_equal(test, True, message=" ".join(map(str, data)))
        if getattr(test, "_is_symbolic", False):
            raise NotImplementedError("a runtime assert needs eager.debugging.Assert")
        if not bool(test):  # local fallback: check the (concrete) value now
            raise AssertionError(" ".join(map(str, data)))
        return None
    if not test:
        message = message_fn()
        raise AssertionError(message) if message is not None else AssertionError()
    return None
