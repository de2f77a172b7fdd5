"""bench_summary times each group of rows in a fresh process of its own (in one process a NumPy baseline's
speed depended on what ran before it): the parent starts one child per group, in order, and assembles their
rows and notes; a child prints its group's rows as one line of JSON; a failing child's error is reported."""
import json
import subprocess

import pytest

from benchmarks import bench_summary


def _toy():
    bench_summary.NOTES.append("toy note")
    yield "toy workload", "@function", (lambda: None), (lambda: None)


def test_a_child_prints_its_groups_rows_as_json(monkeypatch, capsys):
    monkeypatch.setattr(bench_summary, "GROUPS", {"toy": _toy})
    monkeypatch.setattr(bench_summary, "NOTES", [])
    assert bench_summary.main([bench_summary.ROWS_OF, "toy", "--rounds", "2"]) == 0
    found = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert [row[:2] for row in found["rows"]] == [["toy workload", "@function"]] and len(found["rows"][0]) == 8
    assert found["notes"] == ["toy note"]


def test_each_group_runs_in_a_process_of_its_own(monkeypatch):
    started = []

    def run(argv, **kw):
        group = argv[argv.index(bench_summary.ROWS_OF) + 1]
        started.append((group, argv[argv.index("--rounds") + 1], "--cpu" in argv))
        row = [f"{group} row", "eager", 2.0, 1.0, 2.0, 1.9, 2.1, 1.95]
        return subprocess.CompletedProcess(argv, 0, "starting\n" + json.dumps({"rows": [row], "notes": [group]}), "")
    monkeypatch.setattr(bench_summary.subprocess, "run", run)
    monkeypatch.setattr(bench_summary, "NOTES", [])
    got = bench_summary.rows_in_fresh_processes(rounds=7, only=["rnn", "cnn", "threshold"], cpu=True)
    assert started == [("cnn", "7", True), ("rnn", "7", True)]          # in the table's order
    assert [row[0] for row in got] == ["cnn row", "rnn row"] and bench_summary.NOTES == ["cnn", "rnn"]


def test_a_failing_group_is_reported_with_its_error(monkeypatch):
    monkeypatch.setattr(bench_summary.subprocess, "run",
                        lambda argv, **kw: subprocess.CompletedProcess(argv, 1, "", "Traceback ...\nValueError: bad"))
    with pytest.raises(RuntimeError, match=r"(?s)the mlp rows failed.*exit status 1.*ValueError: bad"):
        bench_summary.rows_in_fresh_processes(rounds=3, only=["mlp"])
