"""numexpr kernels: the program as a few numexpr expressions ("stages"), each compiled once.

Compiled stages are cached per process by their *canonical* text (arguments
renamed `a0`, `a1`, ... in order of appearance) and argument dtypes
(`compiled_stage`): the stages of an unrolled loop differ only in the names
of the values they read, so a program of a thousand stages compiles a handful
(compile time follows the number of distinct stages).  The kernel
gives a shared compiled stage one name and keeps temporaries in reused
registers, so those stages' calls read the same and are written as a loop
(`reroll.reroll`).

`build(program, shapes)` returns a kernel, or None when numexpr must not be
used for this program:

- numexpr is not importable, or `enabled` is False (tests switch it off);
- the program has several outputs, or its output is not an instruction;
- a value is not float32/float64/bool (numexpr has no int8/int16/uint8/float16
  and would widen them; integer division and modulo differ from NumPy's), or an
  instruction has no exact template (recipes.NE_TEMPLATES / NE_OPAQUE: casts,
  rounding, floor division, opaque kernels);
- numexpr refuses a stage, or a trial run on one-element inputs gives a value
  another dtype than the graph's.

Text size: numexpr has no `let`, so a value written into the text
at each of its uses doubles the text at every level of reuse
(`y = tanh(y) * 0.5 + y` repeated 40 times would be 2^40 characters).
`stages(program)` therefore builds the text in ONE pass over the instructions,
keeping it linear in the program's size:

- a value used more than once (counting the uses inside a template:
  `square` writes its argument twice) is written out at each use only while
  its text is at most `INLINE_CHARS` long (numexpr computes identical
  subtrees once); otherwise it becomes a *stage* of its own, evaluated into a
  temporary `t<k>` that later stages read;
- before an instruction's text is formed, its size and parenthesis depth are
  computed from its arguments'; while they would exceed `MAX_STAGE_CHARS` or
  `MAX_STAGE_DEPTH` (numexpr's compile time grows faster than linearly with a
  stage's size; Python's parser stops at 200 nested parentheses), its longest
  argument becomes a stage first.

So every instruction's template appears once in the whole text, plus copies of
short arguments: total text, compile time and memory are linear.  The kernel
calls the stages in order (one numexpr call each; the cost model counts them).

Constants are typed 0-d arrays (`c<slot>`, `k<dtype>_<name>`), never literals:
numexpr evaluates `x * 2.5` in float64 for a float32 `x`.  Rank-0 ones, and
the fused op's rank-0 inputs made by `Const` ops (`kernel.constant_scalars`),
are compiled into the stage as numexpr constants of their own dtype (`_inline`:
each operand costs numexpr's iterator about 0.1 us a call); where numexpr's
expression tree cannot take them, they are passed as operands.  The
compiled `NumExpr` objects are called directly, under numexpr's own lock (its
virtual machine must not run in two threads at once), with positional arrays (no
expression parsing, no frame inspection: `numexpr.evaluate`'s per-call
overhead).  All expression text is made here from recipes' templates and our
own names (`i<k>`, `c<slot>`, `k<dtype>_<label>`, `t<k>`): nothing from a graph
(numexpr parses its text with Python's `eval`).  `stages` checks it: a name
that is neither ours nor a template's word raises ValueError.

Accuracy: IEEE operations give bitwise the unfused values; each transcendental
call is within `TRANSCENDENTAL_MAX_ULP` ulp of NumPy's (see the package
docstring, graph_runtime/fusion/__init__.py).

The stages' text is built in `numexpr_stages.py` (re-exported here).

Imports `numpy` (and `numexpr` lazily) and sibling modules.
"""
from __future__ import annotations

from dataclasses import dataclass
import threading
from typing import Callable, Optional

import numpy as np

from .. import generated_source
from .numexpr_stages import (INLINE_CHARS, MAX_STAGE_CHARS, MAX_STAGE_DEPTH, Stage, Stages, _NAME,  # noqa: F401
                             name_dtypes, stage_count, stages)
from .reroll import reroll
from .recipes import NE_DTYPES, dummy

TRANSCENDENTAL_MAX_ULP = 3  # documented bound: a transcendental call vs NumPy's, same input (libm vs SIMD loops)
enabled = True        # tests set this to False to exercise the NumPy-only path (with monkeypatch)

# numexpr's `necompiler.NumExpr`/`getType` (compiling an expression once, to call it many times) are not
# part of its documented API: they are used only on the releases they were checked on, and only if a
# compiled sample computes what NumPy computes.  Otherwise `available()` is False, fused groups use the
# NumPy backend, and `unavailable_reason()` says why.
NUMEXPR_VERSIONS = ((2, 8), (3, 0))     # [first, last)
_ne = None
_expressions = None
_reason = ""


def available() -> bool:
    """Is numexpr importable, a checked release that works as expected (and not switched off)?"""
    global _ne, _reason, _expressions
    if not enabled:
        return False
    if _ne is None:
        _reason = _problem()
        if _reason:
            _ne = False
        else:     # numexpr is the optional [fusion] extra: imported once _problem() found it usable
            from numexpr import expressions, necompiler
            _ne = necompiler
            _expressions = expressions
    return _ne is not False


def unavailable_reason() -> str:
    """Why numexpr is not used ('' when it is)."""
    available()
    return "switched off" if not enabled else _reason


def _problem() -> str:
    try:      # numexpr is the optional [fusion] extra: everything works without it
        import numexpr
        from numexpr import necompiler
    except Exception as e:  # noqa: BLE001 - numexpr is optional; a broken install counts as missing
        return f"numexpr is not importable ({type(e).__name__}: {e})"
    try:
        version = tuple(int(p) for p in str(numexpr.__version__).split(".")[:2])
    except (AttributeError, ValueError):
        return f"numexpr's version {getattr(numexpr, '__version__', None)!r} is not understood"
    low, high = NUMEXPR_VERSIONS
    if not low <= version < high:
        return f"numexpr {numexpr.__version__} is outside the checked releases [{low}, {high})"
    try:
        a = np.array([-1.5, 0.0, 2.0], np.float32)
        cx = necompiler.NumExpr("where(a0 > 0, a0 * 2, -a0)", [("a0", necompiler.getType(a))])
        with getattr(necompiler, "evaluate_lock", None) or _OWN_LOCK:
            got = cx(a, out=None, order="K", casting="safe", ex_uses_vml=False)
    except Exception as e:  # noqa: BLE001 - the interface changed
        return f"numexpr's compile-once interface failed ({type(e).__name__}: {e})"
    if got.dtype != np.float32 or not np.array_equal(got, np.where(a > 0, a * 2, -a)):
        return "numexpr's compile-once interface computed a wrong sample"
    return ""


_NE_DTYPES = frozenset(np.dtype(n) for n in NE_DTYPES)


def expressible(program) -> bool:
    """Can numexpr compute this program exactly (ignoring availability)?"""
    if len(program.outputs) != 1:
        return False
    out = program.outputs[0]
    if not any(i.out == out for i in program.instrs):
        return False
    dtypes = program.dtypes
    for ins in program.instrs:
        if ins.ne is None or ins.dtype not in _NE_DTYPES:
            return False
        for a in ins.args:
            if dtypes[a] not in _NE_DTYPES:
                return False
    return True


def build(program, shapes: dict, scalars: Optional[dict] = None) -> Optional[Callable]:
    """The kernel, or None (see the module docstring).  `scalars`: {input position: 0-d array} of inputs whose
    value is known when the plan is compiled (graph constants); they and the program's own rank-0 constants are
    compiled into the expressions instead of passed as operands (each operand costs numexpr's iterator time)."""
    if not available() or not expressible(program):
        return None
    st = stages(program)
    dtype_of = name_dtypes(program)
    index = {s: k for k, s in enumerate(program.input_slots)}
    known = {n: v for n, v in st.names.items() if not isinstance(v, int) and v.ndim == 0}
    known.update({n: scalars[index[v]] for n, v in st.names.items()
                  if isinstance(v, int) and scalars and index[v] in scalars})
    compiled = []
    for s in st.stages:
        cx = compiled_stage(s, [dtype_of[n] for n in s.args], program.dtypes[s.slot],
                            {k: known[n] for k, n in enumerate(s.args) if n in known})
        if cx is None:
            return None
        compiled.append(cx)
    lock = _vm_lock()
    ns: dict = {n: v for n, v in st.names.items() if not isinstance(v, int)}
    ns["__lock"] = lock
    body = []
    last = len(st.stages) - 1
    # Temporaries live in registers reused after their last use, and a compiled stage shared by several
    # stages has one name: an unrolled loop's stages then read the same text, which `reroll` writes as
    # a loop (a thousand stages, a short source).
    last_use = {n: k for k, s in enumerate(st.stages) for n in s.args}
    reg: dict = {}
    free: list = []
    xname: dict = {}
    for k, (s, (cx, inlined)) in enumerate(zip(st.stages, compiled)):
        x = xname.get(id(cx))
        if x is None:
            x = xname[id(cx)] = f"x{len(xname)}"
            ns[x] = cx
        args = [f"i{index[st.names[n]]}" if isinstance(st.names.get(n), int) else reg.get(n, n)
                for j, n in enumerate(s.args) if j not in inlined]
        # positional arrays only: no out, order 'K', casting 'safe', no VML are the compiled call's defaults,
        # and a call without keywords skips their parsing (about a tenth of a tiny kernel's time)
        call = f"{x}({', '.join(args)})"
        if k == last:
            body.append(f"        return {call}{'' if shapes[program.outputs[0]] else '[()]'}")
            break
        for n in s.args:
            if n in reg and last_use[n] == k:
                free.append(reg.pop(n))
        r = reg[s.name] = free.pop() if free else f"r{len(reg) + len(free)}"
        body.append(f"        {r} = {call}")
    lines = [f"def fused({', '.join(f'i{k}' for k in range(len(program.input_slots)))}):", "    with __lock:"]
    lines += reroll(body, "        ")
    src = "\n".join(lines) + "\n"
    filename = generated_source.load(src, "fused-numexpr", ns)
    fn = ns["fused"]
    generated_source.evict_with(fn, filename)
    fn.source = f"# numexpr: {st.text()}\n" + src
    fn.expression = st.text()
    fn.stages = len(st.stages)
    fn.never_warns = True     # numexpr's virtual machine computes: no NumPy ufunc loop, so no NumPy warning
    if len(st.stages) == 1 and shapes[program.outputs[0]]:
        # one compiled call: a plan may make it itself, under the lock (`codegen.emit_steps`), one frame less
        cx, inlined = compiled[0]
        fn.direct = DirectCall(cx, lock, tuple(index[st.names[n]] if isinstance(st.names.get(n), int)
                                               else st.names[n] for j, n in enumerate(st.stages[0].args)
                                               if j not in inlined))
    return fn


@dataclass(frozen=True)
class DirectCall:
    """How a kernel that is one call of `fn` under `lock` computes: `fn(*args)`, where each entry of `args` is
    the index of one of the kernel's own inputs (int) or a constant array to pass as it is."""

    fn: Callable
    lock: object
    args: tuple


_STAGE_CACHE: dict = {}     # (canonical text, input dtypes) -> (NumExpr, result dtype) or None (refused)
_stage_lock = threading.Lock()
MAX_CACHED_STAGES = 4096


def canonical(stage: Stage) -> str:
    """The stage's text with its arguments renamed `a0`, `a1`, ... in order of first appearance: stages that
    compute the same expression of different values (an unrolled loop's rounds) have the same text."""
    rename = {n: f"a{k}" for k, n in enumerate(stage.args)}
    return _NAME.sub(lambda m: rename.get(m.group(0), m.group(0)), stage.text)


def compiled_stage(stage: Stage, arg_dtypes: list, want: np.dtype, constants: Optional[dict] = None):
    """(compiled `NumExpr` of `stage`, positions of the arguments compiled in as constants), or None when
    numexpr refuses it or its result is not of dtype `want`.  The compiled call takes the other arguments,
    positionally, in `stage.args` order.

    `constants`: {argument position: 0-d array} known now; they become constants of the compiled program
    (`_inline`), unless every argument would (the result's shape comes from the operands).
    Compiled once per (canonical text, argument dtypes, constants) in the process, like `numexpr.evaluate`'s
    own cache: a 4,000-line unrolled function splits into a thousand stages with one canonical text, so compile
    time follows the number of *distinct* stages.  The result dtype is found by a trial run on one-element
    inputs of the argument dtypes (it depends on the dtypes only)."""
    constants = constants if constants and len(constants) < len(arg_dtypes) else {}
    key = (canonical(stage), tuple(np.dtype(d).str for d in arg_dtypes),
           tuple((k, v.dtype.str, v.tobytes()) for k, v in sorted(constants.items())))
    hit = _STAGE_CACHE.get(key, False)
    if hit is False:
        hit = _compile_stage(key[0], arg_dtypes, constants)
        with _stage_lock:
            if len(_STAGE_CACHE) >= MAX_CACHED_STAGES:
                _STAGE_CACHE.clear()
            _STAGE_CACHE[key] = hit
    if hit is None or hit[1] != want:
        return None
    return hit[0], hit[2]


def _compile_stage(text: str, arg_dtypes: list, constants: dict):
    sig = [(f"a{k}", _ne.getType(np.empty(0, d))) for k, d in enumerate(arg_dtypes)]
    cx = None
    if constants:
        try:
            cx = _inline(text, sig, constants)
        except Exception:  # noqa: BLE001 - numexpr's expression tree changed: pass the constants as operands
            cx = None
    inlined = frozenset(constants) if cx is not None else frozenset()
    if cx is None:
        try:
            cx = _ne.NumExpr(text, sig)
        except Exception:  # noqa: BLE001 - numexpr refuses it (e.g. too many registers): use NumPy
            return None
    try:
        with _vm_lock(), np.errstate(all="ignore"):
            res = cx(*[dummy(np.dtype(d), 1) for k, d in enumerate(arg_dtypes) if k not in inlined], out=None,
                     order="K", casting="safe", ex_uses_vml=False)
    except Exception:  # noqa: BLE001
        return None
    return cx, res.dtype, inlined


def _inline(text: str, sig: list, constants: dict):
    """`text` compiled with the arguments at the positions of `constants` as typed constants of the program.

    A NumPy float32 scalar is a float32 constant for numexpr (a Python float literal would be a float64 one,
    and widen the operation).  The tree is parsed with the constants still variables and they are put in
    afterwards, so numexpr's rewrites of operations on constants (a division by a constant as a product with
    its reciprocal, small integer powers as products: not NumPy's results) never see them; the optimization
    level "none" would refuse them too."""
    context = {"optimization": "none", "truediv": False}
    tree = _ne.stringToExpression(text, dict(sig), context)
    values = {f"a{k}": v[()] for k, v in constants.items()}
    tree = _with_constants(tree, values, {})
    return _ne.NumExpr(tree, [p for k, p in enumerate(sig) if k not in constants], **context)


def _with_constants(node, values: dict, done: dict):
    """The expression tree with its variables named in `values` replaced by constant nodes (a shared subtree
    is rewritten once)."""
    if node.astType == "variable" and node.value in values:
        return _expressions.ConstantNode(values[node.value])
    hit = done.get(id(node))
    if hit is None:
        if node.children:
            node.children = tuple(_with_constants(c, values, done) for c in node.children)
        hit = done[id(node)] = node
    return hit


def clear_cache() -> None:
    """Forget the compiled stages (benchmarks of a first call; tests)."""
    with _stage_lock:
        _STAGE_CACHE.clear()


def _vm_lock():
    """The lock serializing numexpr's virtual machine: it is not reentrant across threads (two concurrent calls
    of compiled expressions abort the process), and `numexpr.evaluate` holds this same lock."""
    return getattr(_ne, "evaluate_lock", None) or _OWN_LOCK


_OWN_LOCK = threading.Lock()    # for numexpr versions without `evaluate_lock`
