"""Fresh, readable names for generated symbols (`if_body`, `if_body_1`, ...).

A `Namer` is created per converted function from every identifier already in
it, so generated names never collide with user names.
"""
from __future__ import annotations

import gast

from .walk import child_nodes

_AST = gast.AST
_FIELDS: dict = {}     # node class -> its fields (the walk in `Namer.scan`)


class Namer:
    """Hands out names not used anywhere in the function being converted."""

    def __init__(self, used: set[str]):
        self._used = set(used)

    @classmethod
    def for_tree(cls, tree: gast.AST) -> "Namer":
        return cls.scan(tree)[0]

    @classmethod
    def scan(cls, tree: gast.AST) -> tuple:
        """(Namer, the node classes below `tree`'s root): one walk serves the namer and the converter
        pipeline's `ctx.kinds` (impl/pipeline.py)."""
        used: set[str] = set()
        kinds: set = set()
        if isinstance(tree, gast.Name):
            used.add(tree.id)
        elif isinstance(tree, (gast.FunctionDef, gast.ClassDef)):
            used.add(tree.name)
        stack = child_nodes(tree)          # the root itself is not one of the kinds below it
        pop, push, extend, add = stack.pop, stack.append, stack.extend, kinds.add
        fields = _FIELDS
        while stack:
            n = pop()
            c = n.__class__
            add(c)
            if c is gast.Name:
                used.add(n.id)
                add(n.ctx.__class__)        # a context has no children: not walked
                if n.annotation is not None:    # a parameter's
                    push(n.annotation)
                continue
            if isinstance(n, (gast.FunctionDef, gast.ClassDef)):
                used.add(n.name)
            names = fields.get(c)
            if names is None:
                names = fields[c] = c._fields
            for f in names:
                v = getattr(n, f, None)
                if isinstance(v, _AST):
                    push(v)
                elif isinstance(v, list):
                    extend([x for x in v if isinstance(x, _AST)])
        return cls(used), kinds

    def new(self, base: str) -> str:
        name, i = base, 0
        while name in self._used:
            i += 1
            name = f"{base}_{i}"
        self._used.add(name)
        return name
