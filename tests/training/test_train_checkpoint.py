"""eager.train.Checkpoint and CheckpointManager: object graph, deferred restoration, retention, crash safety."""
import json
import os
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import eager as ek
from eager.train import Checkpoint, CheckpointManager, latest_checkpoint
from eager.train import manager as manager_module
from tests.training.checkpoint_model import apply_step, make, state, train_step
from tracing import function

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def assert_same(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("traced", [False, True])
def test_interrupted_and_restored_run_equals_the_uninterrupted_one(tmp_path, traced):
    def stepper(net, opt):
        traced_fn = function(lambda x, y: apply_step(net, opt, x, y)) if traced else None
        return lambda i: train_step(net, opt, i, traced_fn)

    net, opt = make()
    step = stepper(net, opt)
    ckpt = Checkpoint(model=net, optimizer=opt)
    for i in range(5):
        step(i)
    path = ckpt.save(str(tmp_path / "run"))
    for i in range(5, 10):
        step(i)

    net2, opt2 = make(seed=7)              # fresh objects, different initial weights, nothing built yet
    status = Checkpoint(model=net2, optimizer=opt2).restore(path)
    with pytest.raises(AssertionError, match="model/hidden/kernel"):
        status.assert_consumed()           # the layers and slots do not exist yet
    step2 = stepper(net2, opt2)
    for i in range(5, 10):
        step2(i)
    status.assert_consumed()
    assert_same(state(net2, opt2), state(net, opt))


def test_save_numbers_prefixes_and_restores_the_counter(tmp_path):
    v = ek.Variable([1.0, 2.0])
    ckpt = Checkpoint(v=v)
    assert ckpt.save(str(tmp_path / "p")) == str(tmp_path / "p-1")
    v.assign([3.0, 4.0])
    assert ckpt.save(str(tmp_path / "p")) == str(tmp_path / "p-2")
    assert latest_checkpoint(str(tmp_path)) == str(tmp_path / "p-2")
    other = Checkpoint(v=ek.Variable([0.0, 0.0]))
    other.restore(str(tmp_path / "p-1")).assert_consumed()
    np.testing.assert_array_equal(other.v.numpy(), [1.0, 2.0])
    assert int(other.save_counter.numpy()) == 1
    assert other.save(str(tmp_path / "p")) == str(tmp_path / "p-2")     # numbering continues
    assert ckpt.write(str(tmp_path / "plain")) == str(tmp_path / "plain")
    Checkpoint(v=ek.Variable([0.0, 0.0])).read(str(tmp_path / "plain.safetensors")).assert_consumed()


def test_deferred_restoration_on_attribute_assignment_and_partial_status(tmp_path):
    ckpt = Checkpoint(a=ek.Variable(1.0), b=ek.Variable([2.0, 3.0]))
    path = ckpt.write(str(tmp_path / "c"))
    fresh = Checkpoint(a=ek.Variable(0.0))
    status = fresh.restore(path)
    assert float(fresh.a.numpy()) == 1.0
    status.assert_existing_objects_matched().assert_nontrivial_match()
    with pytest.raises(AssertionError, match="'b'"):
        status.assert_consumed()
    assert status.expect_partial() is status
    fresh.b = ek.Variable([0.0, 0.0])          # assigned later: gets its value on assignment
    np.testing.assert_array_equal(fresh.b.numpy(), [2.0, 3.0])
    status.assert_consumed()
    extra = Checkpoint(a=ek.Variable(0.0), c=ek.Variable(5.0)).restore(path)
    with pytest.raises(AssertionError, match="variables with no saved value: \\['c'\\]"):
        extra.assert_existing_objects_matched()


def test_mismatches_and_foreign_files_raise_clearly(tmp_path):
    path = Checkpoint(a=ek.Variable([1.0, 2.0])).write(str(tmp_path / "c"))
    with pytest.raises(ValueError, match="a is float32\\[2\\] in the checkpoint but variable"):
        Checkpoint(a=ek.Variable([1.0, 2.0, 3.0])).restore(path)
    with pytest.raises(ValueError, match="no checkpoint at"):
        Checkpoint(a=ek.Variable(1.0)).restore(str(tmp_path / "missing"))
    from tracing.save import save_checkpoint
    old = save_checkpoint({"a": ek.Variable([1.0])}, str(tmp_path / "old"))
    with pytest.raises(ValueError, match="written by tracing.save_checkpoint"):
        Checkpoint(a=ek.Variable([1.0])).restore(old)
    with pytest.raises(ValueError, match="not trackable"):
        Checkpoint(x=3)
    (tmp_path / "other.safetensors").write_bytes((2).to_bytes(8, "little") + b"{}")
    with pytest.raises(ValueError, match="checkpoint of version 1 or 2"):
        Checkpoint(a=ek.Variable(1.0)).restore(str(tmp_path / "other"))


def test_a_variable_reachable_twice_is_saved_once_under_its_shortest_path(tmp_path):
    net, opt = make()
    train_step(net, opt, 0)
    shared = Checkpoint(model=net, alias=[net.hidden.kernel], optimizer=opt)
    path = shared.write(str(tmp_path / "s"))
    from eager.train.tensor_file import read_tensors
    keys = set(read_tensors(path + ".safetensors")[0])
    assert "alias/0" in keys and "model/hidden/kernel" not in keys and "optimizer/iterations" in keys


def test_manager_retention_numbers_and_takeover(tmp_path, monkeypatch):
    v = ek.Variable(0.0)
    ckpt = Checkpoint(v=v)
    mgr = CheckpointManager(ckpt, str(tmp_path), max_to_keep=2)
    assert mgr.latest_checkpoint is None and mgr.checkpoints == []
    for i in range(1, 5):
        v.assign(float(i))
        assert mgr.save() == str(tmp_path / f"ckpt-{i}")
    assert mgr.checkpoints == [str(tmp_path / "ckpt-3"), str(tmp_path / "ckpt-4")]
    assert sorted(os.listdir(tmp_path)) == ["checkpoint", "ckpt-3.safetensors", "ckpt-4.safetensors"]
    assert mgr.save(checkpoint_number=ek.constant(100, "int64")) == str(tmp_path / "ckpt-100")
    again = CheckpointManager(Checkpoint(v=ek.Variable(0.0)), str(tmp_path), max_to_keep=2)
    assert again.checkpoints == [str(tmp_path / "ckpt-4"), str(tmp_path / "ckpt-100")]
    assert again.restore_or_initialize() == str(tmp_path / "ckpt-100")
    assert latest_checkpoint(str(tmp_path)) == str(tmp_path / "ckpt-100")

    clock = [1000.0]
    monkeypatch.setattr(manager_module.time, "time", lambda: clock[0])
    d = tmp_path / "hours"
    hourly = CheckpointManager(Checkpoint(v=v), str(d), max_to_keep=1, keep_checkpoint_every_n_hours=1,
                               checkpoint_name="m")
    for i in range(6):                        # one save every 30 minutes
        clock[0] += 1800
        hourly.save()
    assert hourly.checkpoints == [str(d / "m-6")]
    kept = sorted(f for f in os.listdir(d) if f.endswith(".safetensors"))
    assert kept == ["m-2.safetensors", "m-4.safetensors", "m-6.safetensors"]


def test_damaged_index_raises_instead_of_starting_over(tmp_path):
    (tmp_path / "checkpoint").write_text("{not json")
    with pytest.raises(ValueError, match="not a checkpoint index"):
        latest_checkpoint(str(tmp_path))
    assert latest_checkpoint(str(tmp_path / "nothing-here")) is None


CRASH_SCRIPT = textwrap.dedent("""
    import os, signal, sys
    sys.path.insert(0, {root!r})
    import eager as ek
    from eager.train import Checkpoint, CheckpointManager, manager
    from tests.training.checkpoint_model import make, train_step
    directory, stage = sys.argv[1], sys.argv[2]
    net, opt = make()
    mgr = CheckpointManager(Checkpoint(model=net, optimizer=opt), directory, max_to_keep=2)
    for save in range(1, 4):
        for i in range(2 * (save - 1), 2 * save):
            train_step(net, opt, i)
        if save == 3:
            manager._stage_hook = lambda s: os.kill(os.getpid(), signal.SIGKILL) if s == stage else None
        mgr.save()
    print("finished")
""")

STAGES = ["data-temp-written", "data-renamed", "index-temp-written", "index-written", "old-deleted"]


@pytest.mark.parametrize("stage", STAGES)
def test_a_crash_at_any_stage_of_a_save_leaves_a_restorable_checkpoint(tmp_path, stage):
    script = tmp_path / "crash.py"
    script.write_text(CRASH_SCRIPT.format(root=ROOT))
    directory = str(tmp_path / "ckpts")
    proc = subprocess.run([sys.executable, str(script), directory, stage], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": ROOT}, timeout=300)
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-2000:]

    expected = {}                              # the state after each save, recomputed in this process
    net, opt = make()
    for save in range(1, 4):
        for i in range(2 * (save - 1), 2 * save):
            train_step(net, opt, i)
        expected[save] = state(net, opt)

    mgr = CheckpointManager(Checkpoint(), directory, max_to_keep=2)
    assert not [f for f in os.listdir(directory) if f.endswith(".tmp")]   # stray temporaries were removed
    latest = mgr.latest_checkpoint
    assert latest == latest_checkpoint(directory)
    number = int(latest.rsplit("-", 1)[1])
    assert number == (2 if stage in ("data-temp-written", "data-renamed", "index-temp-written") else 3)
    for prefix in mgr.checkpoints:             # every listed checkpoint is complete and restorable
        n = int(prefix.rsplit("-", 1)[1])
        net2, opt2 = make(seed=5)
        status = Checkpoint(model=net2, optimizer=opt2).restore(prefix)
        train_step(net2, opt2, 2 * n)          # builds the layers and slots: deferred values land first
        net3, opt3 = make()
        for i in range(2 * n + 1):
            train_step(net3, opt3, i)
        status.assert_consumed()
        assert_same(state(net2, opt2), state(net3, opt3))
        assert n in expected
