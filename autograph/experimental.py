"""`autograph.experimental.Feature`: the optional conversions, named as in TensorFlow.

`function(..., experimental_autograph_options=...)` and
`to_graph(f, experimental_optional_features=...)` take a `Feature`, a
sequence of them, or `Feature.ALL`; that set then decides exactly which
optional conversions run, as in TF:

- `ASSERT_STATEMENTS`: `assert` becomes `ag__.assert_stmt` (a runtime assert
  op on a symbolic condition);
- `LISTS`: `l.append(x)` becomes an explicit update of `l` (a tensor list in
  a staged loop);
- `BUILTIN_FUNCTIONS`: `print(...)` of a symbolic tensor prints its value at
  every call (a stateful `py_function`), instead of printing the symbolic
  tensor once, at trace time;
- `EQUALITY_OPERATORS`: `a == b` and `a != b` become `ag__.eq` / `ag__.not_eq`
  (elementwise `equal` / `not_equal` when either side is symbolic);
- `AUTO_CONTROL_DEPS`, `NAME_SCOPES`: accepted; graphjit always orders
  stateful ops and never adds per-function name scopes, whatever is set.

Without options, graphjit converts asserts and list appends (beyond TF's
default, which converts neither) and leaves `print` and `==` alone (TF's
default: print runs at trace time).  Imports nothing from the project.
"""
from __future__ import annotations

import enum


class Feature(enum.Enum):
    ALL = "ALL"
    AUTO_CONTROL_DEPS = "AUTO_CONTROL_DEPS"
    ASSERT_STATEMENTS = "ASSERT_STATEMENTS"
    BUILTIN_FUNCTIONS = "BUILTIN_FUNCTIONS"
    EQUALITY_OPERATORS = "EQUALITY_OPERATORS"
    LISTS = "LISTS"
    NAME_SCOPES = "NAME_SCOPES"


DEFAULT_FEATURES = frozenset({Feature.ASSERT_STATEMENTS, Feature.LISTS, Feature.AUTO_CONTROL_DEPS})


def optional_features(options) -> frozenset:
    """The feature set for `options` (None: the defaults; a Feature or a sequence of them; ALL: every one)."""
    if options is None:
        return DEFAULT_FEATURES
    items = (options,) if isinstance(options, Feature) else tuple(options)
    for f in items:
        if not isinstance(f, Feature):
            raise TypeError(f"AutoGraph options must be autograph.experimental.Feature members, got {f!r}")
    if Feature.ALL in items:
        return frozenset(Feature) - {Feature.ALL}
    return frozenset(items)
