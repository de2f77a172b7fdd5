"""Fresh, readable names for generated symbols (`if_body`, `if_body_1`, ...).

A `Namer` is created per converted function from every identifier already in
it, so generated names never collide with user names.
"""
from __future__ import annotations

import gast

from .walk import all_nodes


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
        nodes = all_nodes(tree)
        for n in nodes:
            if isinstance(n, gast.Name):
                used.add(n.id)
            elif isinstance(n, (gast.FunctionDef, gast.ClassDef)):
                used.add(n.name)
        for n in nodes[1:]:
            kinds.add(n.__class__)
        return cls(used), kinds

    def new(self, base: str) -> str:
        name, i = base, 0
        while name in self._used:
            i += 1
            name = f"{base}_{i}"
        self._used.add(name)
        return name
