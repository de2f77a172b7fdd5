"""`ray://local` gives Ray's workers a PYTHONPATH only when they need one to import this graphjit: a
`runtime_env` makes Ray start every worker through an extra process (no Ray needed for these checks)."""
import os
import subprocess
import sys

from graph_runtime.distributed import ray_backend

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _fresh_interpreter_imports_this_checkout(tmp_path) -> bool:
    out = subprocess.run([sys.executable, "-c", "import graph_runtime; print(graph_runtime.__file__)"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=120).stdout.strip()
    return bool(out) and os.path.realpath(out) == os.path.realpath(os.path.join(_ROOT, "graph_runtime", "__init__.py"))


def test_workers_get_a_pythonpath_only_when_a_fresh_interpreter_would_not_import_this_graphjit(tmp_path):
    if _fresh_interpreter_imports_this_checkout(tmp_path):     # installed, editable, or on PYTHONPATH
        assert ray_backend._worker_path() == {}
    else:
        assert _ROOT in ray_backend._worker_path()["runtime_env"]["env_vars"]["PYTHONPATH"].split(os.pathsep)


def test_a_checkout_fresh_interpreters_do_not_find_goes_on_the_workers_pythonpath(tmp_path, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", "/elsewhere")
    monkeypatch.setattr(ray_backend, "_project_root", lambda: str(tmp_path))
    env = ray_backend._worker_path()["runtime_env"]["env_vars"]
    assert env["PYTHONPATH"].split(os.pathsep) == ["/elsewhere", str(tmp_path)]
