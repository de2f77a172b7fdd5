"""`Module`: a container of variables and sub-modules with name scoping.

Variables and sub-modules are found by walking the instance's attributes
(including lists, tuples and dicts of them), in sorted attribute order, each
object once, as `tf.Module` does: a module's own values first, then each
sub-module's, depth first.  `with self.name_scope:` prefixes names created
inside with the module's name.  A module marked by a checkpoint restore
(`eager.train` stores what waits under `_graphjit_deferred`) hands each new
attribute to its `notify`, so weights created later get their saved values.
"""
from __future__ import annotations

import re

from . import context as _context
from . import nest


def _camel_to_snake(name: str) -> str:
    return re.sub(r"((?<=[a-z0-9])[A-Z]|(?!^)[A-Z](?=[a-z]))", r"_\1", name).lower()


class Module:
    """Base class for models and layers (see docs/api.md)."""

    def __init__(self, name: str | None = None):
        self._name = name or _camel_to_snake(type(self).__name__)
        self._scope_name = _context.current_name_scope() + self._name

    def __setattr__(self, name, value):
        object.__setattr__(self, name, value)
        waiting = self.__dict__.get("_graphjit_deferred")
        if waiting:                 # a restore waits for variables below this module: it is handed the attribute
            waiting.notify(self, name, value)

    @property
    def name(self) -> str:
        return self._name

    @property
    def name_scope(self):
        """A context manager prefixing names with this module's scope."""
        return _ModuleScope(self._scope_name)

    def _walk(self, predicate, recurse_into_modules=True):
        """TF's module flattening: a module's attributes in sorted name order, each value flattened as
        `nest` does (dicts by sorted key), every object once; then each sub-module found, in that
        order, the same way."""
        seen, out = {id(self)}, []
        pending = [self]
        while pending:
            module = pending.pop(0)
            found = []
            attrs = vars(module)
            for key in sorted(attrs):
                if key.startswith(("_abc", "_graphjit")):
                    continue
                for leaf in nest.flatten(attrs[key]):
                    if id(leaf) in seen:
                        continue
                    seen.add(id(leaf))
                    if predicate(leaf):
                        out.append(leaf)
                    if recurse_into_modules and isinstance(leaf, Module):
                        found.append(leaf)
            pending[:0] = found        # depth first: a sub-module's contents before its later siblings'
        return out

    @property
    def variables(self) -> tuple:
        return tuple(self._walk(lambda x: getattr(x, "_is_variable", False)))

    @property
    def trainable_variables(self) -> tuple:
        return tuple(v for v in self.variables if v.trainable)

    @property
    def submodules(self) -> tuple:
        return tuple(self._walk(lambda x: isinstance(x, Module)))

    def __repr__(self):
        return f"<{type(self).__name__} name={self._name!r}>"


class _ModuleScope:
    """The module's scope, absolute: entering it inside another scope does not nest it again."""

    def __init__(self, full_name: str):
        self._cm = _context.absolute_name_scope(full_name)

    def __enter__(self):
        return self._cm.__enter__()

    def __exit__(self, *exc):
        return self._cm.__exit__(*exc)
