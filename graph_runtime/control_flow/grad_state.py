"""`GradState`: which body tensors a control-flow op saves for its gradient.

Graph ops are immutable, but a gradient is built after its forward op, and it
needs values computed inside the forward op's bodies (TensorFlow rewrites the
forward op at that point).  Here every If/Case/While op owns one `GradState`
from creation (attr `grad_state`) and one `variant` output.  Building a
gradient *requests* body tensors (`request(body_index, tensor) -> slot`); the
op's kernel reads the request lists at run time and, when non-empty, compiles
its body with those tensors as extra fetches and returns their values in the
variant output (per iteration for a While).  Requests only ever grow, so a slot
number handed to a gradient op stays valid.  Until a gradient activates the
state (`active`), the forward op saves nothing (a 100,000-iteration loop keeps constant
memory).

In a GraphDef the requests are stored as tensor names of the bodies
(`codecs.py`) and resolved on first use (`tensors`).

Imports nothing from the project.
"""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(eq=False)
class GradState:
    """Per-op save requests: `saves[i]` lists tensors of body `i` (branch i, or 0 = the loop body)."""

    saves: list = field(default_factory=list)
    active: bool = False          # a gradient exists: the variant output must carry the saved values

    @classmethod
    def for_bodies(cls, n: int) -> "GradState":
        return cls([[] for _ in range(n)])

    def request(self, body_index: int, tensor) -> int:
        """The slot of `tensor` in body `body_index`'s saved values (added if new)."""
        self.active = True
        lst = self.saves[body_index]
        for i, t in enumerate(lst):
            if t is tensor:
                return i
        lst.append(tensor)
        return len(lst) - 1

    def tensors(self, body_index: int, graph) -> list:
        """Body `body_index`'s saved tensors; names (from an imported GraphDef) are resolved in `graph`."""
        lst = self.saves[body_index]
        for i, t in enumerate(lst):
            if isinstance(t, str):
                lst[i] = graph.get_tensor_by_name(t)
        return lst

    def __repr__(self):
        if not self.active:
            return "GradState(inactive)"
        return "GradState(" + ", ".join(str(len(s)) for s in self.saves) + " saved)"
