"""Fuzz: source-like text in any string of a GraphDef or a saved directory never runs.

Every string of the files -- op types, node names, input and control-input
names, attr names (dict keys) and string values, device strings, locations,
fused-program fields, nested body GraphDefs, variable names, function names,
the manifest's keys and values -- is replaced, one at a time, by text that
writes a marker file if any of it is ever executed as Python (as an
expression, a keyword argument, after a closing quote or parenthesis, on a new
line, after a comment, as a `file://` stream); every dict (attrs, encoded
dicts) also gets an extra entry named so.  The GraphDef is then imported and
every op run; the saved directory (checksums recomputed, so the crafted file
is taken as intact) is loaded and its function called.  Errors are expected
(GraphDefError, SavedModelError, op errors); the marker file must never
appear, and import raises nothing but GraphDefError.  Deterministic and fast:
one position of each kind (`_kind`), with a rotating share of the payloads;
the positions most likely to reach generated code (attr names, op types,
output streams) get all of them.  A case that hangs fails after 20 s.
"""
import collections
import contextlib
import io
import json
import os
import reprlib
import shutil
import signal

import numpy as np
import pytest

import eager as ek
import graph_runtime as gr
from graph_runtime.graph_def import GraphDefError
from graph_runtime.passes import optimize
from tracing import TensorSpec, function, load, save
from tracing.save import format as fmt

from manifest_crafting import resealed


def _payloads(marker: str) -> list:
    code = f"__import__('pathlib').Path({marker!r}).write_text('x')"
    dq = code.replace("'", '"')
    return [                                  # the first four are the most different
        f"z={code},y",
        code,
        f"x') or {code} or ('",
        f"x\n{code}\n#",
        f"z={code}",
        f'x") or {dq} or ("',
        f"x\\n{code}",
        f"),{code},(",
        f"#\n{code}",
        f"0 if {code} else 1",
        f"x]; {code}; [",
        f"file://{marker}",
    ]


class _Hung(BaseException):
    """Raised by the alarm inside a case that runs too long (a BaseException: library code catching
    Exception must not swallow it)."""


@contextlib.contextmanager
def _deadline(seconds: float, what):
    """Fail a case that hangs (a crafted loop that never ends) instead of hanging CI."""
    def alarm(signum, frame):
        raise _Hung(f"case did not finish within {seconds} s: {what()}")
    old = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def _positions(obj, path=()):
    """(path, mode) of every string of a JSON document: "value" (a string value), "key" (a dict key,
    renamed) and "add" (a new entry in a dict or an encoded `$dict` pair list, the others kept)."""
    if isinstance(obj, str):
        yield path, "value"
    elif isinstance(obj, dict):
        yield path, "add"
        for k, v in obj.items():
            yield path + (k,), "key"
            yield from _positions(v, path + (k,))
    elif isinstance(obj, list):
        if path and path[-1] == "$dict":
            yield path, "add"
        for i, v in enumerate(obj):
            yield from _positions(v, path + (i,))


def _replace(doc, path, mode, text):
    """A copy of `doc` with `text` put at `path` as `mode` says (see `_positions`)."""
    doc = json.loads(json.dumps(doc))
    if mode == "add":
        target = doc
        for p in path:
            target = target[p]
        if isinstance(target, list):                      # `$dict` pairs
            target.append([text, target[0][1] if target else 1])
        else:
            target[text] = next(iter(target.values()), 1)
        return doc
    parent = doc
    for p in path[:-1]:
        parent = parent[p]
    last = path[-1]
    if mode == "key":
        items = list(parent.items())
        parent.clear()
        parent.update((text if k == last else k, v) for k, v in items)
    else:
        parent[last] = text
    return doc


def _kind(doc, path, mode) -> tuple:
    """What a position is, for deduplication: the op type of the innermost enclosing node, the path
    inside that node (list indices generalised), whether it is inside a nested body, and the mode.
    Positions of one kind (the data string of every Const, the name of every Placeholder) reach the
    same code, so one of them is enough."""
    rel, op, depth, o = [], "", 0, doc
    for p in path:
        if isinstance(o, dict) and isinstance(o.get("op"), str):
            rel, op, depth = [], o["op"], depth + 1
        rel.append("*" if isinstance(p, int) else p)
        o = o[p]
    return op, tuple(rel), depth > 1, mode


def _is_hot(path, mode) -> bool:
    """Positions that name code-facing things get every payload: attr names (keys of `attrs`, entries of
    an encoded dict), op types (of nodes and of fused-program ops), output streams."""
    if not path:
        return False
    last = path[-1]
    if mode == "add":
        return last in ("attrs", "$dict")
    if mode == "key":
        return len(path) >= 2 and path[-2] == "attrs"
    if last == "op" or last == "output_stream":
        return True
    return len(path) >= 3 and path[-3] in ("$dict", "ops") and last == 0


def _cases(doc, payloads, cold: int = 3):
    """(path, mode, text): one position of each kind (`_kind`); hot ones (`_is_hot`) with every payload,
    the others with `cold` of them, rotating so neighbouring kinds get different ones."""
    seen = set()
    for path, mode in _positions(doc):
        kind = _kind(doc, path, mode)
        if (not path and mode != "add") or kind in seen:
            continue
        k = len(seen)
        seen.add(kind)
        texts = payloads if _is_hot(path, mode) else [payloads[(k + j * 4) % len(payloads)] for j in range(cold)]
        for text in texts:
            yield path, mode, text


# ------------------------------------------------------------------ GraphDef
def _graph_def():
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, [2, 3], name="x")
        with g.device("cpu:0"):
            s = ek.reduce_sum(x[:, 1:], axis=0)                 # StridedSlice (**attrs kernel) and Sum
        y = ek.cast(ek.nn.relu(ek.sigmoid(x) - 0.5), ek.float64) * 2.0    # fused, with an opaque Cast
        _, acc = ek.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, a * 2.0), [ek.constant(0), x])
        c = ek.cond(ek.reduce_sum(x) > 0, lambda: x + 1.0, lambda: x - 1.0)
        p = ek.print(s, output_stream="stdout")
    out, _ = optimize(g, [s.name, y.name, acc.name, c.name, p.name], keep_stateful=True)
    gd = json.loads(json.dumps(out.as_graph_def()))
    assert {"FusedElementwise", "StatelessWhile", "StatelessIf", "PrintV2", "StridedSlice"} <= \
        {n["op"] for n in gd["nodes"]}
    return gd


_CONFIG = gr.SessionConfig(optimize=False)     # the imported graph as it is: every node is compiled


def _import_and_run_everything(gd):
    g = gr.Graph()
    with g.as_default():
        try:
            gr.import_graph_def(gd, name="")
        except GraphDefError:
            return "refused"
        except Exception as e:  # noqa: BLE001 - reported by the test: import should only raise GraphDefError
            return f"import raised {type(e).__name__}: {e}"
    ops = g.get_operations()
    feeds = {}
    for o in ops:
        if o.type == "Placeholder":
            t = o.outputs[0]
            dims = [] if t.shape.dims is None else [2 if d is None else d for d in t.shape.dims]
            feeds[t] = np.ones(dims, t.dtype.np_dtype)
    try:
        with gr.Session(graph=g, config=_CONFIG) as sess:
            sess.run([o for o in ops if o.type != "Placeholder"], feeds)
    except Exception:  # noqa: BLE001 - errors are fine, only code execution is not
        return "error"
    return "ran"


def test_graph_def_strings_never_run(tmp_path):
    marker = str(tmp_path / "marker")
    payloads = _payloads(marker)
    gd = _graph_def()
    assert _import_and_run_everything(gd) == "ran"
    outcomes, unclear = {}, []
    with contextlib.redirect_stdout(io.StringIO()):
        for path, mode, text in _cases(gd, payloads):
            with _deadline(20, lambda: f"{mode} at {path}: {text!r}"):
                outcome = _import_and_run_everything(_replace(gd, path, mode, text))
            if outcome.startswith("import raised"):
                unclear.append((path, outcome))
                outcome = "unclear"
            outcomes[outcome] = outcomes.get(outcome, 0) + 1
            assert not os.path.exists(marker), f"GraphDef: {mode} at {path} ran: {text!r}"
    assert not unclear, unclear[:5]
    assert outcomes.get("refused", 0) > 100 and sum(outcomes.values()) > 1000, outcomes


# ------------------------------------------------------------------ saved directory
Result = collections.namedtuple("Result", ["y", "total"])


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """A small saved function: a variable, a slice, a cond, a print, a namedtuple and a dict in the result
    (loops and fused programs go through the same import_graph_def: the GraphDef test covers them)."""
    root = tmp_path_factory.mktemp("saved")
    w = ek.Variable(ek.constant([[1.0, -1.0], [0.5, 2.0]]), name="w")

    @function(input_signature=[TensorSpec([None, 2], ek.float32)])
    def f(x):
        y = ek.matmul(x, w)[:, :1]
        if ek.reduce_sum(y) > 0:
            y = y * 2.0
        total = ek.reduce_sum(y, axis=0)
        ek.print(total, output_stream="stdout")
        return {"r": Result(y, total), "k": 1}

    f(ek.ones((3, 2)))
    return save(f, str(root / "good"))


def _load_and_call(d):
    try:
        m = load(d)
    except fmt.SavedModelError:
        return "refused"
    try:
        for fn in m.functions.values():
            fn(ek.ones((3, 2)))
    except Exception:  # noqa: BLE001
        return "error"
    return "ran"


def _overwrite(path: str, data: bytes) -> None:
    with open(path, "r+b") as f:          # no O_TRUNC: truncating opens are slow on some file systems
        f.write(data)
        f.truncate()


def test_saved_function_strings_never_run(saved, tmp_path):
    """Every string of the manifest and of the function's GraphDef file (with its checksum recomputed)."""
    marker = str(tmp_path / "marker")
    payloads = _payloads(marker)
    assert _load_and_call(saved) == "ran"
    work = str(tmp_path / "work")
    shutil.copytree(saved, work)
    files = sorted(os.path.relpath(os.path.join(dp, f), work) for dp, _, fs in os.walk(work) for f in fs
                   if f.endswith(".json"))
    assert fmt.MANIFEST in files and len(files) >= 2
    mpath = os.path.join(work, fmt.MANIFEST)
    original = {rel: open(os.path.join(work, rel), "rb").read() for rel in files}
    outcomes = {}
    with contextlib.redirect_stdout(io.StringIO()):
        for rel in files:
            doc = json.loads(original[rel])
            full = os.path.join(work, rel)
            # GraphDef files: the GraphDef test above gives every payload to every kind of node field; here
            # the four most different payloads reach them through tracing.load
            cases = _cases(doc, payloads) if rel == fmt.MANIFEST else _cases(doc, payloads[:4], cold=1)
            for path, mode, text in cases:
                crafted = json.dumps(_replace(doc, path, mode, text)).encode()
                _overwrite(full, resealed(crafted) if rel == fmt.MANIFEST else crafted)
                if rel != fmt.MANIFEST:           # a crafted file: its checksum is made to match
                    m = json.loads(original[fmt.MANIFEST])
                    m["files"][rel] = fmt.sha256_file(full)
                    _overwrite(mpath, resealed(json.dumps(m).encode()))
                with _deadline(20, lambda: f"{rel}: {mode} at {path}: {text!r}"):
                    outcome = _load_and_call(work)
                outcomes[outcome] = outcomes.get(outcome, 0) + 1
                assert not os.path.exists(marker), f"{rel}: {mode} at {path} ran: {text!r}"
            for r in (rel, fmt.MANIFEST):
                _overwrite(os.path.join(work, r), original[r])
    assert outcomes.get("refused", 0) > 100 and outcomes.get("ran", 0) > 20, outcomes


# ------------------------------------------------------------------ malformed structure
_EXHAUSTED = (UnicodeDecodeError, RecursionError, MemoryError)


def _brief(value) -> str:
    try:
        return reprlib.repr(value)
    except ValueError:            # repr of a 5,000-digit int raises
        return f"<{type(value).__name__}>"


def _deep(levels: int):
    out = 0
    for _ in range(levels):
        out = [out]
    return out


_HUGE = 10 ** 5000
_DEEP = _deep(5000)


def _values(obj, path=()):
    """(path, value) of every value of a JSON document, containers included."""
    yield path, obj
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _values(v, path + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _values(v, path + (i,))


def _malformations(doc):
    """(path, bad value): one position of each kind (`_kind`), given values of the wrong type or size:
    a non-integer, a 5,000-digit integer, a negative or boolean integer, a scalar where a list belongs
    (`inputs: 5`), a 5,000-deep list, a string where a number or a list belongs, and a dict."""
    seen = set()
    for path, value in _values(doc):
        if not path:
            continue
        kind = _kind(doc, path, "value")
        if kind in seen:
            continue
        seen.add(kind)
        if type(value) is int:
            bad = [value + 0.5, _HUGE, -1 - value, True, "7"]
        elif type(value) is float:
            bad = [_HUGE, "nan"]
        elif isinstance(value, list):
            bad = [5, _DEEP, [_HUGE] * max(len(value), 1), ["x\n'\""] * max(len(value), 1)]
        elif isinstance(value, dict):
            bad = [5, [value]]
        elif isinstance(value, str):
            bad = [5, None, ["x"], "\udcff"]
        else:
            bad = [5, "x"]
        for b in bad:
            yield path, b


def _with(doc, path, value):
    doc = json.loads(json.dumps(doc))
    parent = doc
    for p in path[:-1]:
        parent = parent[p]
    parent[path[-1]] = value
    return doc


def test_malformed_graph_defs_raise_only_graph_def_error():
    """Wrong types and sizes anywhere in a GraphDef: import refuses with GraphDefError (never a raw
    TypeError, KeyError, RecursionError or MemoryError), and nothing is left in the target graph."""
    gd = _graph_def()
    gd["variables"].append({"name": "big", "dtype": "float32", "shape": [10 ** 6, 10 ** 6], "trainable": True,
                            "initializer": None})       # declared, never allocated: import takes no memory
    raw, n = [], 0
    for path, bad in _malformations(gd):
        n += 1
        g = gr.Graph()
        with g.as_default(), _deadline(20, lambda: f"{_brief(bad)} at {path}"):
            keep = gr.placeholder(ek.float32, [1], name="keep")
            try:
                gr.import_graph_def(_with(gd, path, bad), name="")
            except GraphDefError:
                assert [o.name for o in g.get_operations()] == [keep.op.name], path      # nothing half-added
            except Exception as e:  # noqa: BLE001 - reported below
                raw.append((path, _brief(bad), f"{type(e).__name__}: {str(e)[:100]}"))
    assert not raw, raw[:5]
    assert n > 300, n


def test_malformed_graph_def_files_raise_only_graph_def_error(tmp_path):
    """read_graph: non-UTF-8 bytes, 5,000-deep nesting and a 5,000-digit integer in the file."""
    head = b'{"format": "graphjit.GraphDef", "version": 1, "nodes": [], '
    for i, body in enumerate([b'"x": "\xff\xfe"}', b'"x": ' + b"[" * 5000 + b"]" * 5000 + b"}",
                              b'"x": ' + b"9" * 5000 + b"}", b'"x": NaN}']):
        p = tmp_path / f"g{i}.json"
        p.write_bytes(head + body)
        with pytest.raises(GraphDefError, match="not a GraphDef"):
            gr.read_graph(str(p))


def _dumps_with(doc, path, bad) -> bytes:
    """The JSON text of `doc` with `bad` at `path` (json.dumps can print neither a 5,000-digit int nor a
    5,000-deep list: their text is put in directly)."""
    texts = {id(_HUGE): "9" * 5000, id(_DEEP): "[" * 5000 + "0" + "]" * 5000}
    if isinstance(bad, list) and bad and id(bad[0]) in texts:
        marked, text = ["\x00bad"] * len(bad), texts[id(bad[0])]
    elif id(bad) in texts:
        marked, text = "\x00bad", texts[id(bad)]
    else:
        return json.dumps(_with(doc, path, bad)).encode()
    return json.dumps(_with(doc, path, marked)).replace('"\\u0000bad"', text).encode()


def test_malformed_saved_directories_raise_only_saved_model_error(saved, tmp_path):
    """The same wrong types and sizes in every kind of position of the manifest and the function's GraphDef
    (checksums recomputed), and non-UTF-8 or 5,000-deep files: `load` raises SavedModelError (it wraps
    whatever a bad file makes fail), and never after running out of stack or memory or misreading bytes:
    its cause is no RecursionError, MemoryError or UnicodeDecodeError."""
    work = str(tmp_path / "work")
    shutil.copytree(saved, work)
    mpath = os.path.join(work, fmt.MANIFEST)
    original_manifest = open(mpath, "rb").read()
    rel = next(r for r in json.loads(original_manifest)["files"] if r.endswith(".json"))
    gpath = os.path.join(work, rel)
    original_graph = open(gpath, "rb").read()

    def write(path, data: bytes):
        _overwrite(path, resealed(data) if path == mpath else data)
        if path != mpath:
            m = json.loads(original_manifest)
            m["files"][rel] = fmt.sha256_file(gpath)
            _overwrite(mpath, resealed(json.dumps(m).encode()))

    cases = [(path, b, what) for path, original in ((mpath, original_manifest), (gpath, original_graph))
             for b, what in ((b"\xff" + original, "not UTF-8"), (b"[" * 5000 + b"]" * 5000, "5,000 deep"))]
    for path, original in ((mpath, original_manifest), (gpath, original_graph)):
        doc = json.loads(original)
        cases += [(path, _dumps_with(doc, p, bad), f"{_brief(bad)} at {p}") for p, bad in _malformations(doc)]
    raw = []
    with contextlib.redirect_stdout(io.StringIO()):
        for path, data, what in cases:
            write(path, data)
            with _deadline(20, lambda: f"{os.path.basename(path)}: {what}"):
                try:
                    load(work)
                except fmt.SavedModelError as e:
                    if isinstance(e.__cause__, _EXHAUSTED):
                        raw.append((os.path.basename(path), what, f"{type(e.__cause__).__name__}: {e}"[-160:]))
            _overwrite(mpath, original_manifest)
            _overwrite(gpath, original_graph)
    assert not raw, raw[:5]
    assert len(cases) > 100, len(cases)
