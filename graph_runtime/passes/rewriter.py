"""`Rewriter`: the one place where a pass builds its output graph from its input graph.

Every pass walks the source graph in creation (topological) order and, for each
op, either copies it (`rw.copy(op)`, inputs remapped) or replaces its outputs
with tensors it built in the destination graph (`rw.replace(op, tensors)`).
The source graph is never modified: ops are immutable, a pass returns a new
graph -- or, copy-on-write, the source graph itself: a Rewriter made with
`ctx.probe` (the pass manager sets it) builds nothing while every op is copied
unchanged (`t`/`inputs` return source tensors, `copy` returns the source op,
`finish` the source graph); the first actual change (`replace`, `emit`, a
`copy` with other inputs/attrs/control inputs, an op pruning would drop)
raises `GraphChanged`, and `GraphPass.__call__` re-runs the pass normally.  So
a pass that finds nothing costs one scan and allocates nothing.

Invariants the rewriter maintains, so that passes need not:

- Names: copied ops keep their names; new ops get fresh unique names derived
  from the op they stand for (`<name>/<Type>`).  The destination starts from the
  source's name counters, so a new name never collides with an old one.
- Preserved ops (the names in `PassContext.preserve`: fed and fetched tensors,
  target ops) keep name and meaning.  Replacing a preserved single-output op
  inserts an `Identity` (or the replacement itself when it is new) under the
  preserved name; a preserved op with several outputs is copied instead.  The
  outputs of preserved ops are *barriers*: `const_value` does not look through
  them and patterns never match across them (a fed tensor may take any value).
- Control edges: a control edge on a replaced op moves to the ops producing
  its replacement (plus any control inputs the replacement carries, e.g. the
  control inputs of a removed `Identity`); edges on removed ops with nothing to
  stand for them are dropped (only done for ops that cannot fail or have no
  effect, by the passes that remove them).
- Static shapes: a copied op whose inputs changed is re-inferred; the result is
  merged with the source's static shape (never less precise).
- `finish()` drops ops this pass made dead (pure ops whose source op had a use
  and that now have none), keeps everything else, and copies collections,
  variables and the function interface (`inputs`/`outputs`) remapped.

Also here: the op-trait predicates re-exported from `op_traits` (`is_stateful`
is `op_traits.is_pinned`); the small shared predicates and attr keys
(`has_subgraphs`, `freeze_attr`, `same_items`) are in op_keys.py.

Imports `eager` and `graph_runtime` core modules only.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from eager.registry import Spec, lookup
from eager.shape import TensorShape

from ..graph import Graph
from ..op_traits import has_side_effects, is_pinned as is_stateful
from ..operation import GraphTensor, Operation
from .core import GraphChanged, PassContext
from .op_keys import same_items

__all__ = ["Rewriter", "copy_graph", "is_stateful", "has_side_effects"]


class Rewriter:
    """Copies/rewrites a source graph into a fresh destination graph (see the module docstring)."""

    def __init__(self, src: Graph, ctx):
        self.src = src
        self.ctx = ctx
        self._probe = bool(getattr(ctx, "probe", False))
        self._dst: Optional[Graph] = None
        self._t: dict = {}          # id(src tensor) -> dst tensor
        self._ctrl: dict = {}       # id(src op) -> tuple of dst ops standing for it in control edges
        self._carry: dict = {}      # id(src tensor) -> dst ops a consumer must also depend on
        self._origin: dict = {}     # id(dst op) -> src op it was copied from
        self.changes = 0
        self.notes: dict = {}       # rule/reason -> count
        self.memo: dict = {}        # facts a pass computes once per tensor (e.g. constant predicates)
        self._uses: Optional[dict] = None
        self._cursor = getattr(ctx, "cursor", None)       # reports the op being worked on (PassError)

    @property
    def dst(self) -> Graph:
        """The destination graph (created on first use; a probing Rewriter has none: it raises GraphChanged)."""
        if self._dst is None:
            if self._probe:
                raise GraphChanged(self.src.name)
            self._dst = Graph(self.src.name, resources=self.src.resources)
            self._dst._name_counts = dict(self.src._name_counts)
        return self._dst

    @property
    def _src_uses(self) -> dict:
        """id(src tensor or op) -> number of data and control uses in src (computed on first use)."""
        if self._uses is None:
            uses: dict = {}
            for op in self.src._ops:
                for t in op._inputs:
                    uses[id(t)] = uses.get(id(t), 0) + 1
                for c in op._control_inputs:
                    uses[id(c)] = uses.get(id(c), 0) + 1
            self._uses = uses
        return self._uses

    # -- lookups ------------------------------------------------------------------------
    def t(self, src_tensor: GraphTensor) -> GraphTensor:
        if self._probe:
            return src_tensor
        return self._t[id(src_tensor)]

    def inputs(self, op: Operation) -> list:
        if self._cursor is not None:
            self._cursor[0] = op
        if self._probe:
            return list(op._inputs)
        return [self._t[id(x)] for x in op._inputs]

    def controls(self, op: Operation) -> tuple:
        """Remapped control inputs of src `op`, plus those carried by its data inputs (removed ops' edges)."""
        if self._probe:
            return op._control_inputs
        out: list = []
        for c in op._control_inputs:
            out.extend(self._ctrl.get(id(c), ()))
        if self._carry:
            for x in op._inputs:
                out.extend(self._carry.get(id(x), ()))
        return tuple(dict.fromkeys(out))

    def preserved(self, op: Operation) -> bool:
        return op._name in self.ctx.preserve

    def is_barrier(self, t: GraphTensor) -> bool:
        """Must the value of dst tensor `t` be treated as unknown (a fed/fetched op's output)?"""
        return t._op._name in self.ctx.preserve

    def const_value(self, t: GraphTensor) -> Optional[np.ndarray]:
        """The value of dst tensor `t` if it is a `Const` output that passes may look through."""
        op = t._op
        if op._opdef.name != "Const" or op._name in self.ctx.preserve:
            return None
        return op._attrs["value"]

    def gradient_reads_bodies(self, op: Operation) -> bool:
        """True when control-flow `op` saves body values for a gradient (attr `saves`) or something reads
        its last (`variant`) output: a gradient names tensors of its bodies, which must stay as they are
        (graph_runtime/residuals.py)."""
        if op._attrs.get("saves"):
            return True
        if not op._opdef.extra.get("saves") or not op._outputs:
            return False
        last = len(op._outputs) - 1
        return bool(self._src_uses.get(id(op._outputs[last]), 0)) or self.ctx.output_needed(op, last)

    def single_use(self, t: GraphTensor) -> bool:
        """True when dst tensor `t` stands for a src tensor with exactly one consumer (and is not preserved)."""
        src = t._op if self._probe else self._origin.get(id(t._op))
        if src is None or self.is_barrier(t):
            return False
        return self._src_uses.get(id(src._outputs[t._index]), 0) == 1

    def origin(self, dst_op: Operation) -> Optional[Operation]:
        if self._probe:
            return dst_op
        return self._origin.get(id(dst_op))

    # -- building -------------------------------------------------------------------------
    def infer(self, opdef, inputs, attrs) -> list:
        specs = [Spec(x._shape._dims, x._dtype, x._static_value) for x in inputs]
        return opdef.infer(specs, attrs)

    def _create(self, opdef, inputs, attrs, name, specs, control_inputs, device, frames) -> Operation:
        op = self.dst._create_op(opdef, tuple(inputs), attrs, name, specs, tuple(control_inputs), device, frames)
        return op

    def copy(self, op: Operation, inputs=None, attrs=None, control_inputs=None) -> Operation:
        """Copy src `op` (same name, type, device, location) with remapped or given inputs/attrs.

        A probing Rewriter returns `op` itself when nothing differs, else raises GraphChanged."""
        if self._cursor is not None:
            self._cursor[0] = op
        if self._probe:
            if ((inputs is None or same_items(inputs, op._inputs)) and (attrs is None or attrs is op._attrs)
                    and (control_inputs is None or same_items(control_inputs, op._control_inputs))):
                return op
            raise GraphChanged(op._name)
        new_inputs = self.inputs(op) if inputs is None else list(inputs)
        ctrl = self.controls(op) if control_inputs is None else tuple(control_inputs)
        new_attrs = op._attrs if attrs is None else attrs
        same = attrs is None
        if same:
            for a, b in zip(new_inputs, op._inputs):
                if a is not b and not (a._dtype is b._dtype and (a._shape is b._shape or
                                                                  a._shape._dims == b._shape._dims)
                                       and (a._static_value is None) == (b._static_value is None)):
                    same = False
                    break
        if same:
            specs = [Spec(o._shape._dims, o._dtype, o._static_value) for o in op._outputs]
        else:
            specs = self.infer(op._opdef, new_inputs, new_attrs)
            merged = []
            for s, o in zip(specs, op._outputs):
                shape = TensorShape(s.shape)
                if shape.is_compatible_with(o._shape):
                    shape = shape.merge_with(o._shape)
                merged.append(Spec(shape.dims, s.dtype, s.value))
            specs = merged
        new = self._create(op._opdef, new_inputs, new_attrs, op._name, specs, ctrl, op._device, op._frames)
        new._colocate = op._colocate
        self._origin[id(new)] = op
        for a, b in zip(op._outputs, new._outputs):
            self._t[id(a)] = b
        self._ctrl[id(op)] = (new,)
        return new

    def emit(self, op_type, inputs, attrs=None, like: Optional[Operation] = None, name: Optional[str] = None,
             control_inputs=()) -> Operation:
        """Create a new op (type name or OpDef) standing for (part of) src op `like`."""
        if like is not None and self._cursor is not None:
            self._cursor[0] = like
        if self._probe:
            raise GraphChanged(op_type if isinstance(op_type, str) else op_type.name)
        opdef = lookup(op_type) if isinstance(op_type, str) else op_type
        if opdef is None:
            raise KeyError(f"op type {op_type!r} is not registered")
        attrs = {} if attrs is None else attrs
        specs = self.infer(opdef, inputs, attrs)
        if name is None:
            base = (like._name + "/" + opdef.name) if like is not None else opdef.name
            name = self.dst.unique_name(base)
        device = like._device if like is not None else ""
        frames = like._frames if like is not None else ()
        return self._create(opdef, inputs, attrs, name, specs, control_inputs, device, frames)

    def const(self, value, like: Optional[Operation] = None, control_inputs=(), name: Optional[str] = None
              ) -> GraphTensor:
        return self.emit("Const", (), {"value": np.asarray(value) if not isinstance(value, np.ndarray)
                                       else value}, like, name, control_inputs)._outputs[0]

    def replace(self, op: Operation, tensors, carry=(), note: Optional[str] = None) -> None:
        """Let dst `tensors` stand for the outputs of src `op` (one per output; `op` gets no copy).

        The control inputs of `op` (and those its inputs carried) move to every
        consumer, as do the extra dst ops in `carry`.  A preserved op keeps its
        name through an Identity stand-in (or a NoOp for an op without outputs);
        one with several outputs is copied instead.
        """
        if self._probe:
            raise GraphChanged(op._name)
        tensors = list(tensors)
        carry = tuple(dict.fromkeys(tuple(carry) + self.controls(op)))
        if carry and tensors and all(set(carry) <= set(r._op._control_inputs) for r in tensors):
            carry = ()      # the replacements already depend on them (e.g. a folded Const)
        if len(tensors) != len(op._outputs):
            raise ValueError(f"replace: {op.name} has {len(op._outputs)} outputs, got {len(tensors)} tensors")
        if self.preserved(op):
            if len(op._outputs) > 1:
                self.copy(op)
                return
            if not tensors:
                new = self.emit("NoOp", (), {}, op, name=op._name, control_inputs=carry)
                self._origin[id(new)] = op
                self._ctrl[id(op)] = (new,)
                self._count(note)
                return
            r = tensors[0]
            fresh = r._op
            if (fresh is self.dst._ops[-1] and id(fresh) not in self._origin and len(fresh._outputs) == 1
                    and fresh._opdef.name != "Const" and not carry):
                # the replacement was just built for this op: it takes the preserved name itself
                # (renaming an op of the private, unpublished destination graph is safe)
                del self.dst._by_name[fresh._name]
                fresh._name = op._name
                self.dst._by_name[op._name] = fresh
                new = fresh
            else:
                new = self.emit("Identity", (r,), {}, op, name=op._name, control_inputs=carry)
            self._origin[id(new)] = op
            self._t[id(op._outputs[0])] = new._outputs[0]
            self._ctrl[id(op)] = (new,)
            self._count(note)
            return
        stand_in: list = []
        for src_t, r in zip(op._outputs, tensors):
            self._t[id(src_t)] = r
            if carry:
                self._carry[id(src_t)] = carry
            if not (r._op._opdef.name == "Const" and not r._op._control_inputs):
                stand_in.append(r._op)
        self._ctrl[id(op)] = tuple(dict.fromkeys(stand_in + list(carry)))
        self._count(note)

    def _count(self, note):
        if self._probe:
            raise GraphChanged(note or "")
        self.changes += 1
        if note:
            self.notes[note] = self.notes.get(note, 0) + 1

    def copy_all(self) -> None:
        for op in self.src._ops:
            self.copy(op)

    # -- finishing ---------------------------------------------------------------------------
    def finish(self, prune_to_roots: bool = False, keep_stateful: bool = False) -> Graph:
        """Drop dead ops (see module docstring); `prune_to_roots`: keep only what the roots need.

        A probing Rewriter (nothing was changed) returns the source graph itself, after checking, when
        `prune_to_roots`, that every op is needed (else it raises GraphChanged)."""
        if self._probe:
            if prune_to_roots:
                self._check_all_needed(keep_stateful)
            return self.src
        dst, src = self.dst, self.src
        roots = set(self.ctx.preserve)
        for t in list(src.inputs) + list(src.outputs):
            if isinstance(t, GraphTensor) and id(t) in self._t:
                roots.add(self._t[id(t)]._op._name)
        live: set = set()
        for op in reversed(dst._ops):
            keep = id(op) in live or op._name in roots
            if not keep:
                if prune_to_roots:
                    keep = keep_stateful and has_side_effects(op)
                else:
                    origin = self._origin.get(id(op))
                    used_before = origin is not None and (self._src_uses.get(id(origin), 0) > 0 or any(
                        self._src_uses.get(id(o), 0) for o in origin._outputs))
                    keep = op._opdef.stateful or has_side_effects(op) or (origin is not None and not used_before)
            if keep:
                live.add(id(op))
                for x in op._inputs:
                    live.add(id(x._op))
                for c in op._control_inputs:
                    live.add(id(c))
        if len(live) != len(dst._ops):
            kept = [op for op in dst._ops if id(op) in live]
            for i, op in enumerate(kept):
                op._id = i          # dst is private to this pass until returned: renumbering is safe
            dst._ops = kept
            dst._by_name = {op._name: op for op in kept}
        self._copy_graph_state()
        return dst

    def _check_all_needed(self, keep_stateful: bool) -> None:
        src = self.src
        roots = set(self.ctx.preserve)
        for t in list(src.inputs) + list(src.outputs):
            if isinstance(t, GraphTensor):
                roots.add(t._op._name)
        live: set = set()
        for op in reversed(src._ops):
            if not (id(op) in live or op._name in roots or (keep_stateful and has_side_effects(op))):
                raise GraphChanged(op._name)
            for x in op._inputs:
                live.add(id(x._op))
            for c in op._control_inputs:
                live.add(id(c))

    def _map_obj(self, x):
        if isinstance(x, GraphTensor):
            r = self._t.get(id(x))
            return r if r is not None and r._op._graph is self.dst and r._op._name in self.dst._by_name else None
        if isinstance(x, Operation):
            ops = self._ctrl.get(id(x), ())
            return ops[0] if len(ops) == 1 and ops[0]._name in self.dst._by_name else None
        return x

    def _copy_graph_state(self) -> None:
        src, dst = self.src, self.dst
        for key, items in src._collections.items():
            mapped = [self._map_obj(x) for x in items]
            dst._collections[key] = [m for m in mapped if m is not None]
        dst._variables = dict(src._variables)
        dst.inputs = [m for m in (self._map_obj(t) for t in src.inputs) if m is not None]
        dst.outputs = [m for m in (self._map_obj(t) for t in src.outputs) if m is not None]
        dst._version = max(dst._version, src._version + 1)


def copy_graph(graph: Graph) -> Graph:
    """A new graph with a copy of every op of `graph` (same names, inputs, attrs; variables shared), to
    add ops to without changing `graph` (e.g. a traced function's gradient, tracing/call_op.py)."""
    rw = Rewriter(graph, PassContext())
    rw.copy_all()
    return rw.finish()
