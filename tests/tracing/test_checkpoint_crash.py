"""Checkpoint files under stress: a save killed at any instant leaves the old or the new checkpoint
restorable at its path; a crafted variables.npz cannot make a restore take memory it does not hold.

A child process saves new values over an old checkpoint and is killed (`os._exit`, no cleanup) right after
its k-th filesystem step (array file, manifest, each rename or swap, each removal), for every k until a
save completes; after each, the parent restores whatever is at the path.  The children come from a
forkserver, not a fork of this process: the test process may hold threads (the suite's pools, Ray's) whose
locks a plain fork would copy held, and the child would hang.
"""
import multiprocessing
import os
import shutil

import numpy as np
import pytest

import eager as ek
from tracing import SavedModelError, restore_checkpoint, save_checkpoint
from tracing.save import atomic_dir
from tracing.save import format as fmt

OLD, NEW = 1.0, 2.0


def _save_killed_after(path: str, k: int) -> None:
    """In the child: save NEW, dying right after filesystem step k."""
    done = [0]

    def step(fn):
        def wrapped(*args, **kw):
            out = fn(*args, **kw)
            done[0] += 1
            if done[0] == k:
                os._exit(17)
            return out
        return wrapped

    os.rename = step(os.rename)
    shutil.rmtree = step(shutil.rmtree)
    for module, name in ((fmt, "write_arrays"), (fmt, "write_json"), (atomic_dir, "swap_directories")):
        setattr(module, name, step(getattr(module, name)))      # AttributeError if a step moved elsewhere
    save_checkpoint({"v": ek.Variable(np.full(3, NEW, np.float32))}, path)
    os._exit(0)


@pytest.mark.skipif("forkserver" not in multiprocessing.get_all_start_methods(), reason="needs forkserver")
def test_a_save_killed_at_any_step_leaves_the_old_or_the_new_checkpoint(tmp_path):
    path = str(tmp_path / "ckpt")
    server = multiprocessing.get_context("forkserver")
    server.set_forkserver_preload(["eager", "tracing"])     # children fork with them imported: fast
    seen = set()
    for k in range(1, 12):
        save_checkpoint({"v": ek.Variable(np.full(3, OLD, np.float32))}, path)
        child = server.Process(target=_save_killed_after, args=(path, k))
        child.start()
        child.join(60)
        if child.is_alive():
            child.kill()
            pytest.fail(f"the child saving with a kill after step {k} hung for 60 s")
        assert child.exitcode in (0, 17), (k, child.exitcode)     # finished, or killed where we meant
        target = ek.Variable(np.zeros(3, np.float32))
        restore_checkpoint({"v": target}, path)                # raised when nothing was at the path
        value = target.numpy()
        assert value.tolist() in ([OLD] * 3, [NEW] * 3), (k, value)
        seen.add(value[0])
        if child.exitcode == 0:         # the save finished before step k: every step was tried
            break
    else:
        pytest.fail("the save never finished")
    assert seen == {OLD, NEW}


# ------------------------------------------------------------------ sizes are checked before memory is taken
def _checkpoint_with_member(tmp_path, write_member):
    """A checkpoint of one float32[3] variable whose variables.npz is replaced by `write_member(zipfile)`'s
    (the manifest's checksum recomputed, as an attacker would)."""
    import json
    import zipfile
    path = str(tmp_path / "ckpt")
    save_checkpoint({"v": ek.Variable(np.zeros(3, np.float32))}, path)
    npz = os.path.join(path, fmt.VARIABLES_FILE)
    with zipfile.ZipFile(npz, "w") as zf:
        write_member(zf)
    mpath = os.path.join(path, fmt.CHECKPOINT_MANIFEST)
    manifest = json.loads(open(mpath).read())
    manifest["files"][fmt.VARIABLES_FILE] = fmt.sha256_file(npz)
    with open(mpath, "w") as f:
        json.dump(fmt.seal_manifest(manifest), f)           # as an attacker would
    return path


def _npy(shape, data: bytes, dtype="<f4") -> bytes:
    import io
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": dtype, "fortran_order": False, "shape": shape})
    return buf.getvalue() + data


def test_a_compressed_member_is_refused_before_it_is_decompressed(tmp_path):
    import tracemalloc
    import zipfile
    bomb = _npy((1 << 24,), bytes(4 << 24))                          # 64 MiB of zeros: ~64 KiB deflated
    path = _checkpoint_with_member(tmp_path, lambda zf: zf.writestr(
        zipfile.ZipInfo("v0.npy"), bomb, compress_type=zipfile.ZIP_DEFLATED))
    assert os.path.getsize(os.path.join(path, fmt.VARIABLES_FILE)) < 1 << 20
    del bomb
    tracemalloc.start()
    try:
        with pytest.raises(fmt.SavedModelError, match="not an uncompressed .npy array"):
            restore_checkpoint({"v": ek.Variable(np.zeros(3, np.float32))}, path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 << 20


def test_a_header_declaring_more_than_the_member_holds_is_refused_before_allocating(tmp_path):
    import tracemalloc
    huge = (100_000_000_000,)                                      # 373 GiB of float32 declared, 12 bytes held
    path = _checkpoint_with_member(tmp_path, lambda zf: zf.writestr("v0.npy", _npy(huge, bytes(12))))
    tracemalloc.start()
    try:
        with pytest.raises(fmt.SavedModelError, match=r"declares shape \[100000000000\].*holds 12 bytes"):
            restore_checkpoint({"v": ek.Variable(np.zeros(3, np.float32))}, path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 << 20
    # and a well-formed member still restores
    good = _checkpoint_with_member(tmp_path / "good", lambda zf: zf.writestr(
        "v0.npy", _npy((3,), np.arange(3, dtype=np.float32).tobytes())))
    target = ek.Variable(np.zeros(3, np.float32))
    restore_checkpoint({"v": target}, good)
    assert target.numpy().tolist() == [0.0, 1.0, 2.0]


def test_a_flipped_bit_in_the_manifest_is_refused_not_restored_into_another_variable(tmp_path):
    """"v0" -> "v1" is one bit: variable a was restored from b's array (same shape) without a word."""
    path = str(tmp_path / "ckpt")
    save_checkpoint({"a": ek.Variable(np.array([1.0, 2.0], np.float32)),
                     "b": ek.Variable(np.array([3.0, 4.0], np.float32))}, path)
    mpath = os.path.join(path, fmt.CHECKPOINT_MANIFEST)
    raw = open(mpath, "rb").read()
    at = raw.index(b'"v0"') + 2
    open(mpath, "wb").write(raw[:at] + bytes([raw[at] ^ 1]) + raw[at + 1:])
    a, b = ek.Variable(np.zeros(2, np.float32)), ek.Variable(np.zeros(2, np.float32))
    with pytest.raises(SavedModelError, match="does not match its own SHA-256"):
        restore_checkpoint({"a": a, "b": b}, path)
    assert a.numpy().tolist() == [0.0, 0.0]             # nothing was assigned


def test_a_version_1_checkpoint_is_still_read(tmp_path):
    import json
    path = str(tmp_path / "ckpt")
    save_checkpoint({"a": ek.Variable(np.array([1.0, 2.0], np.float32))}, path)
    mpath = os.path.join(path, fmt.CHECKPOINT_MANIFEST)
    m = json.loads(open(mpath).read())
    m["version"] = 1
    del m[fmt.MANIFEST_DIGEST]
    open(mpath, "w").write(json.dumps(m))
    a = ek.Variable(np.zeros(2, np.float32))
    restore_checkpoint({"a": a}, path)
    assert a.numpy().tolist() == [1.0, 2.0]
