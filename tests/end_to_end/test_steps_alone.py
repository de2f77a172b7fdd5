"""benchmarks/steps_alone.py times each way of each step in a fresh process, once with glibc's default
allocator settings and once with its trim and mmap thresholds raised (the NumPy CNN step's page faults):
each child gets exactly its setting, every case runs once per round in turned order, and the table divides
each way by NumPy's step under the same setting."""
import json
import subprocess

import pytest

from benchmarks import steps_alone


def test_each_case_runs_in_its_own_process_with_its_allocator_setting(monkeypatch):
    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "1")          # a setting of the caller's never leaks in
    started = []

    def run(argv, env, **kw):
        workload, way = argv[argv.index(steps_alone.CHILD) + 1:][:2]
        raised = {k: env.get(k) for k in steps_alone.RAISED}
        started.append((workload, way, raised == steps_alone.RAISED, all(v is None for v in raised.values())))
        return subprocess.CompletedProcess(argv, 0, "warming\n" + json.dumps(0.002), "")
    monkeypatch.setattr(steps_alone.subprocess, "run", run)
    found = steps_alone.measure("mlp", ["numpy", "graphjit"], rounds=2, steps=3, pythons={})
    assert sorted(found) == sorted((w, s) for w in ("numpy", "graphjit") for s in ("default", "raised"))
    assert all(times == [0.002, 0.002] for times in found.values())
    for _, way, raised, default in started:
        assert raised != default                        # one setting or the other, exactly
    assert started[0][1:] == ("numpy", False, True) and started[4][1:] == ("numpy", True, False)  # turned


def test_the_table_divides_each_way_by_numpys_step_under_the_same_setting():
    found = {("numpy", "default"): [0.040, 0.036, 0.038], ("numpy", "raised"): [0.016, 0.016, 0.020],
             ("graphjit", "default"): [0.013, 0.014, 0.012], ("graphjit", "raised"): [0.012, 0.010, 0.011]}
    rows = steps_alone.table({"cnn": found}).splitlines()[2:]
    assert rows[0].startswith("| CNN step b64 28x28 | numpy | 38.000 ms | 1.00x | 16.000 ms | 1.00x | 3 |")
    assert rows[1] == "| CNN step b64 28x28 | graphjit | 13.000 ms | 0.34x | 11.000 ms | 0.69x | 3 |"


def test_a_failing_child_is_reported_with_its_error(monkeypatch):
    monkeypatch.setattr(steps_alone.subprocess, "run",
                        lambda argv, **kw: subprocess.CompletedProcess(argv, 1, "", "ImportError: no tensorflow"))
    with pytest.raises(RuntimeError, match="rnn tf .default. failed:\n.*no tensorflow"):
        steps_alone.measure("rnn", ["tf"], rounds=1, steps=2, pythons={"tf": "/nowhere/python"})


def test_a_child_times_the_numpy_step():
    assert 0 < steps_alone.child("mlp", "numpy", steps=3) < 1.0


def test_the_chains_run_the_same_expression_in_numpy_and_under_function():
    import numpy as np

    import eager as ek
    from benchmarks.peer_steps import chain_step
    from tracing import function
    for workload in ("chain50", "chain2m"):
        want = chain_step(workload, np)()
        got = chain_step(workload, ek, function, ek.constant)().numpy()
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
