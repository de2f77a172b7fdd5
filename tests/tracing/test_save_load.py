"""tracing.save / tracing.load / checkpoints: round trips, signatures, variables, bad files, atomicity.

The fresh-process test writes the model to a temporary module, saves it, and
loads it in a subprocess whose sys.path holds only the repository (the model
module is not importable there).  The fuzz tests mutate and truncate saved
files: every mutation either loads and runs or raises SavedModelError.
"""
import collections
import copy
import importlib.util
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import eager as ek
import tracing
from tracing import SavedModelError, TensorSpec, function, load, restore_checkpoint, save, save_checkpoint
from tracing.save import format as fmt

from manifest_crafting import resealed

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

MODEL_SRC = textwrap.dedent('''
    import eager as ek
    from tracing import function, TensorSpec

    class Net(ek.Module):
        def __init__(self):
            super().__init__()
            self.w = ek.Variable(ek.random.normal((4, 3), seed=1), name="w")
            self.b = ek.Variable(ek.zeros((3,)), name="b")
            self.steps = ek.Variable(ek.constant(0, "int64"), trainable=False, name="steps")

        @function
        def __call__(self, x, training=False):
            y = ek.nn.relu(ek.matmul(x, self.w) + self.b)
            if training:
                y = y * 2.0
            return y

        @function(input_signature=[TensorSpec([None, 4]), TensorSpec([None, 3])])
        def train_step(self, x, target):
            with ek.GradientTape() as tape:
                loss = ek.reduce_mean(ek.square(ek.matmul(x, self.w) + self.b - target))
            gw, gb = tape.gradient(loss, [self.w, self.b])
            self.w.assign_sub(0.1 * gw)
            self.b.assign_sub(0.1 * gb)
            self.steps.assign_add(ek.constant(1, "int64"))
            return {"loss": loss, "steps": self.steps.value()}
''')


def _import_model(tmp_path, name="graphjit_test_model"):
    src = tmp_path / f"{name}.py"
    src.write_text(MODEL_SRC)
    spec = importlib.util.spec_from_file_location(name, src)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    src.unlink()
    return mod


def _data():
    rng = np.random.default_rng(0)
    return rng.normal(size=(5, 4)).astype(np.float32), rng.normal(size=(5, 3)).astype(np.float32)


def test_fresh_process_without_source(tmp_path):
    mod = _import_model(tmp_path)
    net = mod.Net()
    x, t = _data()
    net(ek.constant(x))
    net(ek.constant(x), training=True)
    before = net(ek.constant(x)).numpy()
    save(net, str(tmp_path / "saved"))
    # expected results after two train steps, computed on a copy of the state
    expected = [net.train_step(ek.constant(x), ek.constant(t)) for _ in range(2)]
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "t.npy", t)
    script = textwrap.dedent(f'''
        import sys
        sys.path[:] = [{REPO!r}] + [p for p in sys.path if "site-packages" in p or "lib/python" in p]
        try:
            import graphjit_test_model
            raise SystemExit("the model module must not be importable")
        except ImportError:
            pass
        import json, numpy as np, eager as ek, tracing
        m = tracing.load({str(tmp_path / "saved")!r})
        x = ek.constant(np.load({str(tmp_path / "x.npy")!r}))
        t = ek.constant(np.load({str(tmp_path / "t.npy")!r}))
        out = {{"plain": m(x).numpy().tolist(), "training": m(x, training=True).numpy().tolist(),
               "kw": m(x=x).numpy().tolist()}}
        steps = [m.train_step(x, t) for _ in range(2)]
        out["losses"] = [float(s["loss"]) for s in steps]
        out["steps"] = [int(s["steps"]) for s in steps]
        out["after"] = m(x).numpy().tolist()
        out["variables"] = sorted(v.name for v in m.variables)
        out["sigs"] = m.functions["__call__"].pretty_printed_concrete_signatures(verbose=False)
        try:
            m(ek.ones((5, 4), dtype="float64"))
        except TypeError as e:
            out["error"] = str(e)
        print(json.dumps(out))
    ''')
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=str(tmp_path),
                          env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"}, timeout=120)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    np.testing.assert_allclose(out["plain"], before, rtol=1e-6)
    np.testing.assert_allclose(out["training"], before * 2, rtol=1e-6)
    np.testing.assert_allclose(out["kw"], before, rtol=1e-6)
    np.testing.assert_allclose(out["losses"], [float(e["loss"]) for e in expected], rtol=1e-5)
    assert out["steps"] == [1, 2]
    np.testing.assert_allclose(out["after"], net(ek.constant(x)).numpy(), rtol=1e-5)
    assert out["variables"] == ["b:0", "steps:0", "w:0"]
    assert "training: Python bool True" in out["sigs"]
    assert "no saved signature matches" in out["error"] and "__call__(x: f32[5,4]" in out["error"]


def test_signatures_and_dispatch(tmp_path):
    w = ek.Variable(ek.constant([[1.0], [2.0]]), name="w")
    Pair = collections.namedtuple("Pair", ["value", "tag"])

    @function
    def f(pair, scale=1.0, mode="sum"):
        x, y = pair
        r = ek.matmul(x, w) * scale + y
        return Pair(r, mode)

    f((ek.ones((3, 2)), ek.ones((3, 1))))
    f((ek.ones((3, 2)), ek.ones((3, 1))), scale=2.0)
    f.get_concrete_function((TensorSpec([None, 2]), TensorSpec([None, 1])), 3.0)
    loaded = load(save(f, str(tmp_path / "f")))
    rf = loaded.f
    assert [cf.pretty_printed_signature(verbose=False) for cf in rf.concrete_functions] == \
        [cf.pretty_printed_signature(verbose=False) for cf in f._concrete]
    args = (ek.ones((3, 2)), ek.ones((3, 1)))
    r = loaded(args)
    assert type(r).__name__ == "Pair" and r._fields == ("value", "tag") and r.tag == "sum"
    np.testing.assert_allclose(r.value.numpy(), f(args).value.numpy())
    np.testing.assert_allclose(loaded(args, 2.0).value.numpy(), 7.0)          # positional == keyword trace
    np.testing.assert_allclose(loaded(args, scale=1.0, mode="sum").value.numpy(), 4.0)  # defaults filled
    np.testing.assert_allclose(loaded((ek.ones((7, 2)), ek.ones((7, 1))), 3.0).value.numpy(), 10.0)  # [None]
    np.testing.assert_allclose(loaded((np.ones((3, 2), np.float32), np.ones((3, 1), np.float32))).value, 4.0)
    for bad in [((ek.ones((4, 2)), ek.ones((4, 1))),), ([ek.ones((3, 2)), ek.ones((3, 1))],), (args, 5.0),
                ((ek.ones((3, 2), dtype="float64"), ek.ones((3, 1))),)]:
        with pytest.raises(TypeError, match="no saved signature matches"):
            loaded(*bad)
    assert rf.get_concrete_function((TensorSpec([None, 2]), TensorSpec([None, 1])), 3.0) is \
        rf.concrete_functions[2]


def test_variables_shared_restored_and_differentiable(tmp_path):
    v = ek.Variable(ek.constant([1.0, 2.0]), name="v")

    @function
    def read(x):
        return x * v

    @function
    def bump(d):
        v.assign_add(d)
        return v.value()

    read(ek.ones((2,)))
    bump(ek.ones((2,)))
    loaded = load(save({"read": read, "bump": bump}, str(tmp_path / "s")))
    assert len(loaded.variables) == 1
    (lv,) = loaded.variables
    assert lv is not v and lv.name == v.name and lv.trainable
    np.testing.assert_allclose(lv.numpy(), [2.0, 3.0])
    loaded.bump(ek.constant([10.0, 10.0]))
    np.testing.assert_allclose(loaded.read(ek.ones((2,))).numpy(), [12.0, 13.0])   # same Variable
    np.testing.assert_allclose(v.numpy(), [2.0, 3.0])                            # original untouched
    with ek.GradientTape() as tape:
        y = ek.reduce_sum(loaded.read(ek.constant([3.0, 4.0])))
    np.testing.assert_allclose(tape.gradient(y, lv).numpy(), [3.0, 4.0])
    with pytest.raises(TypeError, match="call one of them by name"):
        loaded(ek.ones((2,)))


def test_loaded_function_inside_another_function(tmp_path):
    w = ek.Variable(ek.constant(3.0), name="w")

    @function
    def f(x):
        return x * w

    f(ek.ones((2,)))
    loaded = load(save(f, str(tmp_path / "f")))

    @function
    def g(x):
        return loaded(x) + 1.0

    np.testing.assert_allclose(g(ek.constant([1.0, 2.0])).numpy(), [4.0, 7.0])
    loaded.variables[0].assign(1.0)
    np.testing.assert_allclose(g(ek.constant([1.0, 2.0])).numpy(), [2.0, 3.0])


def test_save_errors(tmp_path):
    @function
    def never_called(x):
        return x

    with pytest.raises(ValueError, match="never been called"):
        save(never_called, str(tmp_path / "a"))

    @function
    def returns_object(x):
        return x, object()

    with pytest.raises(TypeError, match=r"output\[1\] is a object that cannot be converted"):
        returns_object(ek.ones(()))        # every output leaf but None must become a tensor, as in TF
    with pytest.raises(ValueError, match="never been called"):
        save(returns_object, str(tmp_path / "b"))
    assert not os.path.exists(tmp_path / "b")
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("precious")

    @function
    def ok(x):
        return x + 1.0

    ok(ek.ones(()))
    with pytest.raises(FileExistsError, match="refusing to overwrite"):
        save(ok, str(tmp_path / "mine"))
    assert (tmp_path / "mine" / "notes.txt").read_text() == "precious"


def test_atomic_save_keeps_the_old_directory(tmp_path, monkeypatch):
    @function
    def f(x):
        return x * 2.0

    f(ek.ones((2,)))
    path = str(tmp_path / "model")
    save(f, path)
    before = {n: open(os.path.join(path, fmt.MANIFEST)).read() for n in [0]}

    @function
    def g(x):
        return x * 3.0

    g(ek.ones((2,)))

    def boom(*a, **k):
        raise OSError("disk full")

    monkeypatch.setattr(np, "savez", boom)
    with pytest.raises(OSError, match="disk full"):
        save(g, path)
    monkeypatch.undo()
    assert open(os.path.join(path, fmt.MANIFEST)).read() == before[0]
    assert sorted(os.listdir(tmp_path)) == ["model"]               # no temporary leftovers
    np.testing.assert_allclose(load(path)(ek.ones((2,))).numpy(), [2.0, 2.0])
    save(g, path)                                                  # overwriting a graphjit dir is fine
    np.testing.assert_allclose(load(path)(ek.ones((2,))).numpy(), [3.0, 3.0])
    assert sorted(os.listdir(tmp_path)) == ["model"]


def test_foreign_and_missing_directories(tmp_path):
    with pytest.raises(SavedModelError, match="no such directory"):
        load(str(tmp_path / "nope"))
    (tmp_path / "foreign").mkdir()
    with pytest.raises(SavedModelError, match="missing"):
        load(str(tmp_path / "foreign"))
    (tmp_path / "foreign" / fmt.MANIFEST).write_text('{"format": "something.else"}')
    with pytest.raises(SavedModelError, match="not a graphjit saved-function manifest"):
        load(str(tmp_path / "foreign"))


def test_checkpoints(tmp_path):
    class Dense(ek.Module):
        def __init__(self, n, m, name=None):
            super().__init__(name)
            self.w = ek.Variable(ek.random.normal((n, m), seed=3), name="w")
            self.b = ek.Variable(ek.zeros((m,)), name="b")

    class Net(ek.Module):
        def __init__(self):
            super().__init__()
            self.layers = [Dense(2, 3), Dense(3, 1)]

    a, b = Net(), Net()
    a.layers[0].b.assign([1.0, 2.0, 3.0])
    save_checkpoint(a, str(tmp_path / "ck"))
    status = restore_checkpoint(b, str(tmp_path / "ck"))
    assert sorted(status.restored) == ["layers[0].b", "layers[0].w", "layers[1].b", "layers[1].w"]
    for va, vb in zip(a.variables, b.variables):
        np.testing.assert_array_equal(va.numpy(), vb.numpy())
    c = Net()
    c.extra = ek.Variable(1.0, name="extra")
    with pytest.raises(SavedModelError, match="missing from the checkpoint: \\['extra'\\]"):
        restore_checkpoint(c, str(tmp_path / "ck"))
    assert restore_checkpoint(c, str(tmp_path / "ck"), strict=False).missing == ["extra"]
    d = Net()
    d.layers[1] = Dense(3, 2)
    old = d.layers[0].w.numpy().copy()
    with pytest.raises(SavedModelError, match="layers\\[1\\].b is float32\\[1\\]"):
        restore_checkpoint(d, str(tmp_path / "ck"))
    np.testing.assert_array_equal(d.layers[0].w.numpy(), old)      # nothing assigned on failure
    with open(tmp_path / "ck" / fmt.VARIABLES_FILE, "r+b") as f:
        f.seek(40)
        f.write(b"\x00\x01")
    with pytest.raises(SavedModelError, match="corrupted"):
        restore_checkpoint(b, str(tmp_path / "ck"))


# ------------------------------------------------------------------ fuzzing
@pytest.fixture(scope="module")
def saved_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("fuzz")
    w = ek.Variable(ek.constant([[1.0, -1.0], [0.5, 2.0]]), name="w")
    n = ek.Variable(ek.constant(0, "int32"), name="n", trainable=False)

    @function
    def f(x, k=2):
        n.assign_add(1)
        y = ek.reshape(ek.matmul(x, w), (-1,))
        return {"y": ek.nn.relu(y) + ek.cast(n.value(), "float32"), "k": k}

    f(ek.ones((3, 2)))
    return save(f, str(root / "good"))


def _check_loads_and_runs_or_documented_error(path, crafted=False):
    try:
        m = load(path)
    except SavedModelError:
        return "error"
    if not crafted:
        m.f(ek.ones((3, 2)))
        return "ok"
    # A crafted file (valid checksums) may compute something else; an inconsistency that import-time
    # validation cannot see (an op's inference accepting what its kernel rejects) fails when run, as
    # the runtime's documented OpError naming the op. A crafted file may also record another traced call
    # (say k=None where f was traced with its default k=2): the call then has no saved signature.
    try:
        m.f(ek.ones((3, 2)))
    except ek.errors.OpError as e:
        assert "while running op" in str(e)
        return "op error"
    except TypeError as e:
        assert "no saved signature matches" in str(e)
        return "no signature"
    return "ok"


def _copy(src, dst):
    import shutil
    shutil.copytree(src, dst)
    return dst


_JSON_VALUES = st.sampled_from([None, 0, 1, -1, 2, 7, "x", "float32", "int32", "MatMul", True, [], {}, [1, 2],
                                {"$array": 1}, {"$variable": "w"}, {"tensor": 0}, {"py": 1}, 1.5, "../x"])


def _paths(obj, prefix=()):
    yield prefix
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _paths(v, prefix + (i,))


def _mutate(obj, path, value):
    if not path:
        return value
    parent = obj
    for p in path[:-1]:
        parent = parent[p]
    parent[path[-1]] = value
    return obj


def _files(path):
    return sorted(os.path.relpath(os.path.join(d, f), path) for d, _, fs in os.walk(path) for f in fs)


def test_a_default_for_an_unknown_argument_is_refused_at_load(saved_dir, tmp_path_factory):
    """A flipped byte in a default's name ("k" -> "j", which the fuzz test below found) left `k` without its
    default, so a call that relied on it matched no saved signature; now the load refuses the file."""
    d = _copy(saved_dir, str(tmp_path_factory.mktemp("t") / "m"))
    full = os.path.join(d, "graphjit_saved.json")
    raw = open(full, "rb").read()
    at = raw.index(b'"defaults": {') + raw[raw.index(b'"defaults": {'):].index(b'"k"') + 1
    flipped = raw[:at] + b"j" + raw[at + 1:]
    open(full, "wb").write(flipped)
    with pytest.raises(SavedModelError, match="does not match its own SHA-256"):     # damage: caught whole
        load(d)
    open(full, "wb").write(resealed(flipped))
    with pytest.raises(SavedModelError, match="default for 'j', which is not one of its arguments"):   # crafted
        load(d)


def test_the_manifest_checksums_itself(saved_dir, tmp_path):
    """Every byte of the manifest is covered: a changed value that still parses, a removed or renamed digest
    field, are refused; a manifest of version 1 (written before the digest existed) is read without one."""
    path = os.path.join(saved_dir, fmt.MANIFEST)
    m = json.load(open(path))
    assert m["version"] == 2 and m[fmt.MANIFEST_DIGEST] == fmt.manifest_digest(m)
    for change in (lambda m: m["object"].update(type="Other"), lambda m: m.pop(fmt.MANIFEST_DIGEST),
                   lambda m: m.update(manifest_sha25g=m.pop(fmt.MANIFEST_DIGEST))):
        d = _copy(saved_dir, str(tmp_path / f"c{len(os.listdir(tmp_path))}"))
        bad = json.load(open(os.path.join(d, fmt.MANIFEST)))
        change(bad)
        json.dump(bad, open(os.path.join(d, fmt.MANIFEST), "w"))
        with pytest.raises(SavedModelError, match="does not match its own SHA-256"):
            load(d)
    d = _copy(saved_dir, str(tmp_path / "v1"))
    old = json.load(open(os.path.join(d, fmt.MANIFEST)))
    old["version"] = 1
    del old[fmt.MANIFEST_DIGEST]
    json.dump(old, open(os.path.join(d, fmt.MANIFEST), "w"))
    assert load(d) is not None


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_fuzz_truncated_and_flipped_files(saved_dir, tmp_path_factory, data):
    """Raw byte damage: checksums catch it (or the manifest parser does)."""
    d = _copy(saved_dir, str(tmp_path_factory.mktemp("t") / "m"))
    rel = data.draw(st.sampled_from(_files(d)))
    full = os.path.join(d, rel)
    raw = open(full, "rb").read()
    if data.draw(st.booleans()):
        raw = raw[:data.draw(st.integers(0, max(0, len(raw) - 1)))]
    else:
        i = data.draw(st.integers(0, len(raw) - 1))
        raw = raw[:i] + bytes([raw[i] ^ data.draw(st.integers(1, 255))]) + raw[i + 1:]
    open(full, "wb").write(raw)
    _check_loads_and_runs_or_documented_error(d)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_fuzz_mutated_json_with_valid_checksums(saved_dir, tmp_path_factory, data):
    """A crafted file (checksums recomputed): every JSON value may be replaced; still load+run or the error."""
    d = _copy(saved_dir, str(tmp_path_factory.mktemp("m") / "m"))
    rel = data.draw(st.sampled_from([f for f in _files(d) if f.endswith(".json")]))
    full = os.path.join(d, rel)
    obj = json.load(open(full))
    for _ in range(data.draw(st.integers(1, 3))):
        paths = list(_paths(obj))
        path = data.draw(st.sampled_from(paths))
        obj = _mutate(obj, path, copy.deepcopy(data.draw(_JSON_VALUES)))   # copy: sampled values are shared
    crafted = json.dumps(obj).encode()
    open(full, "wb").write(resealed(crafted) if rel == fmt.MANIFEST else crafted)
    if rel != fmt.MANIFEST:
        m = json.load(open(os.path.join(d, fmt.MANIFEST)))
        m["files"][rel] = fmt.sha256_file(full)
        open(os.path.join(d, fmt.MANIFEST), "wb").write(resealed(json.dumps(m).encode()))
    _check_loads_and_runs_or_documented_error(d, crafted=True)


def test_load_never_unpickles(tmp_path, saved_dir):
    d = _copy(saved_dir, str(tmp_path / "m"))
    vpath = os.path.join(d, fmt.VARIABLES_FILE)
    with open(vpath, "wb") as f:
        np.savez(f, v0=np.array([object()], dtype=object), v1=np.array(0, np.int32))
    m = json.load(open(os.path.join(d, fmt.MANIFEST)))
    m["files"][fmt.VARIABLES_FILE] = fmt.sha256_file(vpath)
    open(os.path.join(d, fmt.MANIFEST), "wb").write(resealed(json.dumps(m).encode()))
    with pytest.raises(SavedModelError, match="cannot be read|Object arrays|not stored as plain data"):
        load(d)


def test_public_names():
    assert tracing.save is save and tracing.load is load and issubclass(SavedModelError, ValueError)


def test_module_checkpoint_restores_into_a_loaded_module(tmp_path):
    class Net(ek.Module):
        def __init__(self):
            super().__init__()
            self.w = ek.Variable(ek.ones((2, 2)), name="w")

        @function(input_signature=[TensorSpec([None, 2])])
        def __call__(self, x):
            return ek.matmul(x, self.w)

    net = Net()
    loaded = load(save(net, str(tmp_path / "saved")))
    net.w.assign(ek.constant([[1.0, 2.0], [3.0, 4.0]]))
    save_checkpoint(net, str(tmp_path / "ck"))
    assert restore_checkpoint(loaded, str(tmp_path / "ck")).restored == ["w"]
    np.testing.assert_allclose(loaded(ek.ones((1, 2))).numpy(), [[4.0, 6.0]])


def test_control_flow_with_state_round_trip(tmp_path):
    v = ek.Variable(0.0, name="counter")

    def body(i, acc):
        v.assign_add(1.0)
        acc = ek.cond(i % 2 == 0, lambda: acc + ek.cast(i, "float32"), lambda: acc - 1.0)
        return i + 1, acc

    @function
    def f(n, x):
        _, acc = ek.while_loop(lambda i, acc: i < n, body, (ek.constant(0), x))
        return acc * 2.0

    want = f(ek.constant(5), ek.constant(1.0)).numpy()
    loaded = load(save(f, str(tmp_path / "cf")))
    (lv,) = loaded.variables
    np.testing.assert_allclose(lv.numpy(), 5.0)
    np.testing.assert_allclose(loaded(ek.constant(5), ek.constant(1.0)).numpy(), want)
    np.testing.assert_allclose(lv.numpy(), 10.0)                 # the body's assign ran in the loaded graph
    np.testing.assert_allclose(loaded(ek.constant(2), ek.constant(0.0)).numpy(), (0.0 - 1.0) * 2)


def test_files_of_a_saved_directory_must_not_be_symbolic_links(saved_dir, tmp_path):
    """A link inside a saved directory could make load read any file of the machine: refused, for the
    manifest, a graph file and the variables, in saved functions and checkpoints alike."""
    import shutil
    outside = tmp_path / "outside"
    outside.mkdir()
    manifest = json.loads(open(os.path.join(saved_dir, fmt.MANIFEST)).read())
    graph_rel = next(r for r in manifest["files"] if r.endswith(".json"))
    for rel in (fmt.MANIFEST, graph_rel, fmt.VARIABLES_FILE, graph_rel.split("/")[0]):
        work = tmp_path / rel.replace("/", "_")
        shutil.copytree(saved_dir, work)
        shutil.move(str(work / rel), str(outside / rel.replace("/", "_")))
        os.symlink(outside / rel.replace("/", "_"), work / rel)   # same bytes, same checksum: only the link is wrong
        with pytest.raises(SavedModelError, match="symbolic link"):
            load(str(work))
    w = ek.Variable([1.0, 2.0], name="w")
    ck = tmp_path / "ck"
    save_checkpoint({"w": w}, str(ck))
    shutil.move(str(ck / fmt.VARIABLES_FILE), str(outside / "ck.npz"))
    os.symlink(outside / "ck.npz", ck / fmt.VARIABLES_FILE)
    with pytest.raises(SavedModelError, match="symbolic link"):
        restore_checkpoint({"w": w}, str(ck))
