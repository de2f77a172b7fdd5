"""`GradState`: which body tensors a control-flow op saves for its gradient.

Graph ops are immutable, but a gradient is built after its forward op, and it
needs values computed inside the forward op's bodies (TensorFlow rewrites the
forward op at that point).  Here every If/Case/While op owns one `GradState`
from creation (attr `grad_state`) and one `variant` output.  Building a
gradient *requests* body tensors (`request(body_index, tensor) -> slot`); when
a plan lowers the op it reads the request lists once (see `freeze` below) and,
when non-empty, compiles the body with those tensors as extra fetches and
returns their values in the variant output (per iteration for a While); a
one-off kernel call reads them when it runs.  Requests only ever grow, so a slot
number handed to a gradient op stays valid.  Until a gradient activates the
state (`active`), the forward op saves nothing (a 100,000-iteration loop keeps constant
memory).

In a GraphDef the requests are stored as tensor names of the bodies
(`codecs.py`) and resolved on first use (`tensors`).

A state is frozen when a plan compiles its op (`freeze`: lowering and the
interpreting executor take a snapshot of the requests then, so a compiled plan
never changes behaviour afterwards).  A gradient built later that needs values
a frozen state does not save gets a copy of the forward op with a thawed state
(`vjp.request_saves`); the copy is the state's `successor`, shared by later
gradients until a plan freezes it too.

Imports nothing from the project.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(eq=False)
class GradState:
    """Per-op save requests: `saves[i]` lists tensors of body `i` (branch i, or 0 = the loop body)."""

    saves: list = field(default_factory=list)
    active: bool = False          # a gradient exists: the variant output must carry the saved values
    frozen: bool = False          # a compiled plan runs the op with the requests it had then
    successor: Any = field(default=None, repr=False)   # the forward op copy that takes later requests

    @classmethod
    def for_bodies(cls, n: int) -> "GradState":
        return cls([[] for _ in range(n)])

    def request(self, body_index: int, tensor) -> int:
        """The slot of `tensor` in body `body_index`'s saved values (added if new; never on a frozen state
        that lacks it: `serves` first)."""
        lst = self.saves[body_index]
        for i, t in enumerate(lst):
            if t is tensor:
                self.activate()
                return i
        if self.frozen:
            raise RuntimeError("internal error: a save was requested from a frozen GradState (see serves())")
        self.active = True
        lst.append(tensor)
        return len(lst) - 1

    def activate(self) -> None:
        if not self.active:
            if self.frozen:
                raise RuntimeError("internal error: a frozen, inactive GradState was activated (see serves())")
            self.active = True

    def serves(self, wanted) -> bool:
        """True when requesting `wanted` ((body index, tensor) pairs) and activating leave what a compiled
        plan froze unchanged: the state is not frozen, or it is active and saves all of them already."""
        if not self.frozen:
            return True
        return self.active and all(any(x is t for x in self.saves[b]) for b, t in wanted)

    def freeze(self, bodies) -> tuple:
        """Freeze for a compiled plan; returns its snapshot `(active, saved tensors per body)`."""
        self.frozen = True
        if not self.active:
            return False, tuple(() for _ in bodies)
        return True, tuple(tuple(self.tensors(i, g)) for i, g in enumerate(bodies))

    def tensors(self, body_index: int, graph) -> list:
        """Body `body_index`'s saved tensors; names (from an imported GraphDef) are resolved in `graph`."""
        lst = self.saves[body_index]
        for i, t in enumerate(lst):
            if isinstance(t, str):
                lst[i] = graph.get_tensor_by_name(t)
        return lst

    def __repr__(self):
        frozen = ", frozen" if self.frozen else ""
        if not self.active:
            return f"GradState(inactive{frozen})"
        return "GradState(" + ", ".join(str(len(s)) for s in self.saves) + f" saved{frozen})"
