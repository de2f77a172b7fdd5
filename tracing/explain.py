"""Why did a function retrace?  Argument-by-argument differences, with fixes.

`diff(old, new)` compares two described signatures (lists of `ArgInfo`) and
returns every `Change`: a tensor's shape or dtype, a Python value or type, a
different variable or object, or an argument/key that appeared or vanished.
`closest(previous, new)` picks the cached signature with the fewest changes
(the one the user most likely meant to hit).  `suggest(changes)` turns changes
into concrete advice (`input_signature=[TensorSpec([None], float32)]`, "pass a
tensor instead of a Python number", ...).  The advice for a changed Python
value depends on its kind: a number should usually be a tensor; a string, an
enum member, a bool or another hashable option is a static choice, so one
trace per value is expected (an unbounded set of strings should be a string
tensor instead).  `changes_text` and `retracing_report` format them for users.  Pure
functions; no graph work.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass

from .signature import ArgInfo, keyed_by_value
from eager.tensor_spec import TensorSpec


@dataclass(frozen=True)
class Change:
    path: str
    what: str       # "shape" | "dtype" | "python value" | "python type" | "value" (a hashable keyed by value,
    #                 e.g. an enum member) | "variable" | "object" | "added" | "removed" | "kind"
    before: str
    after: str

    def __str__(self):
        if self.what == "added":
            return f"{self.path}: new argument or key ({self.after})"
        if self.what == "removed":
            return f"{self.path}: argument or key no longer passed (was {self.before})"
        return f"{self.path}: {self.what} {self.before} -> {self.after}"


def _shape_str(spec: TensorSpec) -> str:
    return str(spec.shape)


def diff(old: list[ArgInfo], new: list[ArgInfo]) -> list[Change]:
    o = {a.path: a for a in old}
    n = {a.path: a for a in new}
    changes = []
    for path, a in n.items():
        b = o.get(path)
        if b is None:
            changes.append(Change(path, "added", "", a.describe()))
            continue
        if a.kind != b.kind:
            changes.append(Change(path, "kind", b.describe(), a.describe()))
        elif a.kind == "tensor":
            if a.spec.dtype is not b.spec.dtype:
                changes.append(Change(path, "dtype", b.spec.dtype.name, a.spec.dtype.name))
            if a.spec.shape != b.spec.shape:
                changes.append(Change(path, "shape", _shape_str(b.spec), _shape_str(a.spec)))
        elif a.kind == "trace type":
            if a.spec != b.spec:
                changes.append(Change(path, "trace type", b.describe(), a.describe()))
        elif a.kind == "python":
            if type(a.spec) is not type(b.spec):
                changes.append(Change(path, "python type", b.describe(), a.describe()))
            elif a.spec != b.spec:
                changes.append(Change(path, "python value",
                                      f"Python {type(b.spec).__name__} {b.spec!r}", f"{a.spec!r}"))
        elif a.spec is not b.spec:
            what = "variable" if a.kind == "variable" else "value" if keyed_by_value(a.spec) else "object"
            changes.append(Change(path, what, b.describe(), a.describe()))
    for path, b in o.items():
        if path not in n:
            changes.append(Change(path, "removed", b.describe(), ""))
    return changes


def closest(previous: list[list[ArgInfo]], new: list[ArgInfo]) -> tuple[int, list[Change]]:
    """Index of the previous signature with the fewest changes, and those changes."""
    best, best_changes = -1, None
    for i, old in enumerate(previous):
        c = diff(old, new)
        if best_changes is None or len(c) < len(best_changes):
            best, best_changes = i, c
    return best, best_changes or []


def suggest(changes: list[Change], old: list[ArgInfo], new: list[ArgInfo], reduce_retracing: bool = False) -> list[str]:
    """Concrete fixes for a list of changes, fitting the function's settings (no advice to turn on
    `reduce_retracing` when it is on)."""
    tips = []
    new_by_path = {a.path: a for a in new}
    old_by_path = {a.path: a for a in old}
    shape_paths = [c.path for c in changes if c.what == "shape"]
    if shape_paths:
        specs = []
        for a in new:
            if a.kind != "tensor":
                continue
            spec = a.spec
            if a.path in shape_paths and a.path in old_by_path:
                spec = spec.most_specific_common_supertype(old_by_path[a.path].spec) or spec
            specs.append(f"TensorSpec({_dims(spec)}, {spec.dtype.name})")
        if reduce_retracing:
            tips.append(f"shapes vary between calls ({', '.join(shape_paths)}): reduce_retracing is on, so this "
                        f"trace is generalized to the unknown dimensions and later calls of these shapes reuse it; "
                        f"declare input_signature=[{', '.join(specs)}] to skip this retrace too")
        else:
            tips.append(f"shapes vary between calls ({', '.join(shape_paths)}): declare "
                        f"input_signature=[{', '.join(specs)}] or use reduce_retracing=True so one trace serves "
                        f"them")
    for c in changes:
        if c.what in ("python value", "value"):
            tips.append(_value_tip(c.path, new_by_path[c.path].spec))
        elif c.what == "python type":
            tips.append(f"{c.path} changed Python type; 1, 1.0 and True are different keys: pass one type "
                        f"consistently, or a tensor")
        elif c.what == "dtype":
            tips.append(f"{c.path} changed dtype: cast it to one dtype before the call (eager.cast)")
        elif c.what in ("added", "removed") and _is_top_level(c.path):
            tips.append(f"{c.path} was passed in one call and not in the other (defaults are filled in before "
                        f"the cache key is built, so this is a **kwargs keyword or an extra *args position): "
                        f"each set of argument names traces its own graph; pass the same arguments every call")
        elif c.what in ("added", "removed", "kind"):
            tips.append(f"the argument structure changed at {c.path}: keep the same nesting, keys, lengths "
                        f"and kinds (tensor, Python value, object) between calls")
        elif c.what == "trace type":
            tips.append(f"{c.path}'s __tf_tracing_type__ differs from the cached trace's: each unequal trace type "
                        f"traces its own graph, as its class defines")
        elif c.what == "object":
            tips.append(f"{c.path} is a different Python object (objects are keyed by identity): reuse one "
                        f"object, or pass its numeric state as tensors")
        elif c.what == "variable":
            tips.append(f"{c.path} is a different Variable: variables are captured by reference, so each "
                        f"variable gets its own trace; reuse one variable and assign() to it")
    seen, out = set(), []
    for t in tips:
        if t not in seen:
            seen.add(t)
            out.append(t)
    return out


def _value_tip(path: str, value) -> str:
    """Advice for an argument whose Python value changed: what actually avoids (or explains) the retrace."""
    if isinstance(value, (int, float, complex)) and not isinstance(value, (bool, enum.Enum)):
        return (f"{path} is a Python value, so each new value traces a new graph: pass a tensor "
                f"instead of a Python number (e.g. eager.constant({value!r}))")
    if isinstance(value, (str, bytes)):
        return (f"{path} is a Python {type(value).__name__}: each distinct value traces its own graph. If it is a "
                f"static option (a mode or name from a small fixed set), this retrace is expected and later calls "
                f"with a seen value reuse its trace; if it takes unbounded values (data, ids), pass a string "
                f"tensor instead (eager.constant({value!r})) so one trace serves them all")
    if isinstance(value, enum.Enum):
        return (f"{path} is the enum member {value!s}: a static option, traced once per member "
                f"(at most {len(type(value))} traces for {type(value).__name__}); this retrace is expected")
    if isinstance(value, bool):
        return (f"{path} is a Python bool: a static flag, traced once per value (at most 2 traces); this retrace "
                f"is expected. Pass eager.constant({value!r}) only if it should be decided at run time")
    return (f"{path} is a hashable {type(value).__name__}, keyed by value (== and hash): each unequal value "
            f"traces its own graph. If it is a static option from a small set, this retrace is expected; if its "
            f"contents vary from call to call, pass the varying parts as tensors")


def _is_top_level(path: str) -> bool:
    """An argument itself (`x`, `args[2]`), not a key or element inside one (`cfg['b']`, `xs[0]`)."""
    return "." not in path and ("[" not in path or (path.startswith("args[") and path.count("[") == 1))


def _dims(spec: TensorSpec) -> str:
    d = spec.shape.dims
    return "None" if d is None else "[" + ", ".join("None" if x is None else str(x) for x in d) + "]"


def changes_text(changes, suggestions, indent="") -> str:
    """One line per change, each fix under it, for a retrace's explanation."""
    out = [f"{indent}- {c}" for c in changes] or [f"{indent}- no argument changed (new trace requested)"]
    out += [f"{indent}  fix: {s}" for s in suggestions]
    return "\n".join(out)


def retracing_report(name, trace_log) -> str:
    """`Function.explain_retracing()`: why each trace after the first happened, then each trace's time."""
    if len(trace_log) <= 1:
        lines = [f"{name} traced {len(trace_log)} time(s): nothing to explain."]
    else:
        lines = [f"{name} traced {len(trace_log)} times."]
        for rec in trace_log[1:]:
            lines.append(f"Trace #{rec.index} at {rec.call_site} {rec.signature}:")
            lines.append(changes_text(rec.changes, rec.suggestions, indent="  "))
    if trace_log:
        lines.append("Time per trace:")
        lines += [f"  #{rec.index} {rec.signature}: {rec.trace_seconds * 1e3:.1f} ms = {rec.phases}"
                  for rec in trace_log]
    return "\n".join(lines)


def ordinal(n: int) -> str:
    """1st, 2nd, 3rd, 4th, ..., 11th, 12th, 13th, ..., 21st."""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"
