"""Detects loop state a staged loop cannot carry: names its test or body
reads that change only through a call (a closure with `nonlocal`, a global).

A staged loop carries the variables its body assigns.  A name that the loop's
own code only *reads*, while a function it calls rebinds it (`def bump():
nonlocal i; i += 1`), is invisible to the analysis: the graph would keep the
value seen while tracing, so the loop would never end or compute with stale
values.  `snapshot` records the values of such names before staging and
`check` raises if tracing changed one, naming it.

Imports the standard library and `autograph.errors` only.
"""
from __future__ import annotations

import dis

from .. import errors

_LOADS = {"LOAD_DEREF": "cell", "LOAD_GLOBAL": "global", "LOAD_NAME": "global"}
_STORES = {"STORE_DEREF", "STORE_GLOBAL", "DELETE_DEREF", "DELETE_GLOBAL"}
_MISSING = object()


def _read_only_names(code) -> dict:
    loads, stores = {}, set()
    for ins in dis.get_instructions(code):
        if ins.opname in _LOADS and isinstance(ins.argval, str):
            loads.setdefault(ins.argval, _LOADS[ins.opname])
        elif ins.opname in _STORES:
            stores.add(ins.argval)
    return {n: k for n, k in loads.items() if n not in stores and not n.startswith("ag__")}


def snapshot(fns, carried) -> list:
    """(name, getter, value) for each name `fns` read but never assign, other than `carried`."""
    out = []
    for fn in fns:
        code = getattr(fn, "__code__", None)
        if code is None:
            continue
        cells = dict(zip(code.co_freevars, getattr(fn, "__closure__", None) or ()))
        glob = getattr(fn, "__globals__", {})
        for name, kind in _read_only_names(code).items():
            if name in carried:
                continue
            if kind == "cell" and name in cells:
                cell = cells[name]
                get = (lambda c=cell: _cell_value(c))
            elif kind == "global" and name in glob:
                get = (lambda g=glob, n=name: g.get(n, _MISSING))
            else:
                continue
            out.append((name, get, get()))
    return out


def _cell_value(cell):
    try:
        return cell.cell_contents
    except ValueError:
        return _MISSING


def check(snap: list) -> None:
    for name, get, before in snap:
        if get() is not before:
            raise errors.hidden_loop_state(name)
