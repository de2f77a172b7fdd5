"""TF1-style graph collections (`add_to_collection`, `get_collection`, ...), a mixin of `graph.Graph`.

A collection is a named list kept on the graph (`self._collections`, created by `Graph.__init__`);
changing one on a finalized graph raises RuntimeError (`_check_not_finalized`, from `Graph`).
Imports nothing from the package.
"""
from __future__ import annotations

from typing import Optional


class GraphCollections:
    """The collection methods of `Graph`."""

    def add_to_collection(self, name: str, value) -> None:
        self._check_not_finalized()
        self._collections.setdefault(name, []).append(value)

    def add_to_collections(self, names, value) -> None:
        for n in ([names] if isinstance(names, str) else names):
            self.add_to_collection(n, value)

    def get_collection_ref(self, name: str) -> list:
        """The live list behind collection `name` (created empty if needed)."""
        return self._collections.setdefault(name, [])

    def get_collection(self, name: str, scope: Optional[str] = None) -> list:
        """A copy of collection `name`, optionally only items whose name starts with `scope`."""
        items = list(self._collections.get(name, ()))
        if scope is None:
            return items
        return [x for x in items if str(getattr(x, "name", "")).startswith(scope)]

    def get_all_collection_keys(self) -> list:
        return sorted(self._collections)

    def clear_collection(self, name: str) -> None:
        self._check_not_finalized()
        self._collections.pop(name, None)
