"""The text of a fused program's numexpr stages, built in one linear pass (see numexpr_backend.py's docstring).

`stages(program)` splits the program into numexpr expressions ("stages"): a value used more than once is
written into each use only while short, and a stage is cut before it grows past `MAX_STAGE_CHARS` or
`MAX_STAGE_DEPTH`; the text holds only recipes' template words and names made here (checked).

Imports `numpy` and sibling modules.
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass

import numpy as np

from .recipes import NE_OPAQUE, NE_TEMPLATES

INLINE_CHARS = 48          # a value used several times is copied into each use only while this short
MAX_STAGE_CHARS = 1200     # longest text of one stage
MAX_STAGE_DEPTH = 96       # deepest parenthesis nesting of one stage: half the parser's 200, and deep
                           # enough that a 50-op chain stays one numexpr call (48 split it: +2 us a run)
_NAME = re.compile(r"[A-Za-z_]\w*")
_TEMPLATE_WORDS = frozenset(w for t in list(NE_TEMPLATES.values()) + list(NE_OPAQUE.values())
                            for w in _NAME.findall(t))      # numexpr functions (`where`, `exp`, ...)


@dataclass(frozen=True)
class Stage:
    """One numexpr evaluation: `name = text` (the last stage's value is the program's output)."""

    name: str        # "t<k>"
    slot: int        # the program slot it computes
    text: str
    args: tuple      # names the text reads, in order of first appearance


@dataclass(frozen=True)
class Stages:
    stages: tuple            # Stage, in evaluation order; the last computes the output
    names: dict              # name -> input slot (int) or constant (0-d array)

    def text(self) -> str:
        return "; ".join(f"{s.name} = {s.text}" for s in self.stages)


def _depth(template: str) -> int:
    best = d = 0
    for ch in template:
        if ch == "(":
            d += 1
            best = max(best, d)
        elif ch == ")":
            d -= 1
    return best


@functools.lru_cache(maxsize=1024)
def _template(ne: str, n_args: int) -> tuple:
    """(uses of each argument, parenthesis depth, whether it names `{zero}`/`{one}`) of a template."""
    return (tuple(ne.count("{%d}" % k) for k in range(n_args)), _depth(ne), "{zero}" in ne or "{one}" in ne)


def stages(program) -> Stages:
    """The program's stages (computed once per program; see the module docstring)."""
    hit = getattr(program, "_ne_stages", None)
    if hit is not None:
        return hit
    names: dict = {}
    text: dict = {}
    depth: dict = {}
    atomic: set = set()
    for k, s in enumerate(program.input_slots):
        text[s] = f"i{k}"
        names[text[s]] = s
    for s, v in program.consts.items():
        text[s] = f"c{s}"
        names[text[s]] = np.asarray(v)
    atomic.update(text)
    depth.update(dict.fromkeys(text, 0))
    uses: dict = {}
    counts = []
    for ins in program.instrs:
        info = _template(ins.ne, len(ins.args))
        counts.append(info)
        for a, n in zip(ins.args, info[0]):
            uses[a] = uses.get(a, 0) + n
    out: list = []

    def spill(s: int) -> None:
        name = f"t{len(out)}"
        out.append(Stage(name, s, text[s], ()))
        text[s] = name
        depth[s] = 0
        atomic.add(s)

    for ins, (per, own, zero_one) in zip(program.instrs, counts):
        extra = {}
        if zero_one:
            for label, value in (("zero", 0), ("one", 1)):
                n = f"k{ins.dtype.name}_{label}"
                names[n] = np.asarray(value, dtype=ins.dtype)
                extra[label] = n
        args = ins.args
        while True:      # the size limit is checked before the text is formed
            parts = [text[a] for a in args]
            size = len(ins.ne)
            for n, part in zip(per, parts):
                size += n * len(part)
            deep = own + max([depth[a] for a in args])
            if size <= MAX_STAGE_CHARS and deep <= MAX_STAGE_DEPTH:
                break
            spill(max((a for a in args if a not in atomic), key=lambda a: len(text[a])))
        text[ins.out] = ins.ne.format(*parts, **extra)
        depth[ins.out] = deep
        if uses.get(ins.out, 0) > 1 and len(text[ins.out]) > INLINE_CHARS:
            spill(ins.out)
    final = program.outputs[0]
    if final not in atomic or not out or out[-1].slot != final:
        spill(final)
    known = set(names) | {s.name for s in out}
    for s in out:              # defence in depth: the text holds our names and template words only
        stray = set(_NAME.findall(s.text)) - known - _TEMPLATE_WORDS
        if stray:
            raise ValueError(f"numexpr stage text holds names the backend did not make: {sorted(stray)[:5]}")
    result = Stages(tuple(Stage(s.name, s.slot, s.text, tuple(n for n in dict.fromkeys(_NAME.findall(s.text))
                                                               if n in known)) for s in out), names)
    program._ne_stages = result
    return result


def stage_count(program) -> int:
    """How many numexpr calls the program's kernel makes (for the cost model)."""
    return len(stages(program).stages)


def name_dtypes(program) -> dict:
    """The dtype of every name the program's stages read (inputs, constants, temporaries)."""
    st = stages(program)
    dtype_of = {n: program.dtypes[v] if isinstance(v, int) else v.dtype for n, v in st.names.items()}
    dtype_of.update({s.name: program.dtypes[s.slot] for s in st.stages})
    return dtype_of
