"""The `graphjit` command line: demo, show, convert, graph, bench (called through main(argv))."""
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

import eager as ek
from tracing import cli, function, save

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

USER_FILE = textwrap.dedent('''
    import eager as ek
    from tracing import function, TensorSpec

    def step(x, n):
        total = ek.zeros_like(x)
        i = ek.constant(0)
        while i < n:
            total = total + ek.tanh(x)
            i += 1
        if ek.reduce_sum(total) > 0:
            total = -total
        return total

    @function(input_signature=[TensorSpec([None, 3])])
    def with_signature(x):
        return ek.reduce_sum(x * 2.0, axis=1)

    def no_args():
        return ek.ones((2,)) * 3.0

    class Model:
        def scale(self, x):
            return x * 2.0

    model = Model()
''')


@pytest.fixture()
def user_file(tmp_path):
    p = tmp_path / "user_model.py"
    p.write_text(USER_FILE)
    return str(p)


def test_demo_quick(capsys):
    assert cli.main(["demo", "--quick"]) == 0
    out, err = capsys.readouterr()
    for text in ("Step 1. Eager tensors", "explain_retracing", "x: shape (2, 2) -> (5, 2)", "ag__.while_stmt",
                 "ag__.if_stmt", "111 steps", "@function speedup", "NumPy", "same result after loading: True",
                 "--out g.html"):
        assert text in out, text
    assert "timing [" in err                                  # progress bar on stderr


def test_convert(user_file, capsys):
    assert cli.main(["convert", f"{user_file}:step"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("def step(x, n):") and "ag__.while_stmt" in out and "ag__.if_stmt" in out
    assert cli.main(["convert", f"{user_file}:with_signature"]) == 0   # a Function: its Python function
    assert cli.main(["convert", f"{user_file}:missing"]) == 1
    assert "has no 'missing'" in capsys.readouterr().err
    assert cli.main(["convert", "nofile.py:f"]) == 1
    assert cli.main(["convert", "no_colon"]) == 1


def test_graph_html_and_specs(user_file, tmp_path, capsys):
    out = str(tmp_path / "step.html")
    assert cli.main(["graph", f"{user_file}:step", "--shape", "x=?,3", "--shape", "n=", "--dtype", "n=int32",
                     "--out", out]) == 0
    page = open(out).read()
    assert "step(x: f32[?,3], n: i32[])" in page and "Optimizer" in page
    assert cli.main(["graph", f"{user_file}:with_signature", "--out", str(tmp_path / "s.dot")]) == 0
    assert open(tmp_path / "s.dot").read().startswith("digraph")
    assert cli.main(["graph", f"{user_file}:no_args", "--out", str(tmp_path / "n.html"), "--optimized"]) == 0
    capsys.readouterr()
    assert cli.main(["graph", f"{user_file}:step", "--out", str(tmp_path / "x.html")]) == 1
    assert "parameter 'x' needs a shape: add --shape x=2,3" in capsys.readouterr().err
    assert cli.main(["graph", f"{user_file}:step", "--shape", "q=2", "--out", str(tmp_path / "x.html")]) == 1
    assert "not parameters of the function" in capsys.readouterr().err
    assert cli.main(["graph", f"{user_file}:model.scale", "--shape", "x=2", "--out", str(tmp_path / "m.dot")]) == 0


def test_graph_reports_the_op_count_the_page_draws(user_file, tmp_path, capsys):
    """`--optimized` draws the optimized graph: the count printed is that graph's, as the page says it."""
    import re
    for extra in ([], ["--optimized"]):
        out = tmp_path / f"p{len(extra)}.html"
        assert cli.main(["graph", f"{user_file}:step", "--shape", "x=2,3", "--shape", "n=", "--dtype", "n=int32",
                         "--out", str(out), *extra]) == 0
        printed = int(re.search(r": (\d+) ops at top level", capsys.readouterr().out).group(1))
        drawn = int(re.search(r"(\d+) ops at top level\.", out.read_text()).group(1))
        assert printed == drawn, (extra, printed, drawn)


def test_graph_svg_needs_dot(user_file, tmp_path, capsys, monkeypatch):
    from graph_runtime import visualize
    if shutil.which("dot"):
        assert cli.main(["graph", f"{user_file}:no_args", "--out", str(tmp_path / "g.svg")]) == 0
        assert "<svg" in open(tmp_path / "g.svg").read()
    monkeypatch.setattr(visualize, "dot_available", lambda: False)
    assert cli.main(["graph", f"{user_file}:no_args", "--out", str(tmp_path / "h.svg")]) == 1
    assert "Graphviz 'dot' not found: install it with apt-get install graphviz" in capsys.readouterr().err


def test_show(tmp_path, capsys):
    v = ek.Variable(ek.ones((3, 2)), name="kernel")

    @function
    def f(x):
        return ek.matmul(x, v)

    f(ek.ones((4, 3)))
    path = save(f, str(tmp_path / "saved"))
    assert cli.main(["show", path]) == 0
    out = capsys.readouterr().out
    assert "function f: 1 signature(s)" in out and "f(x: f32[4,3]) -> float32[4,2]" in out
    assert "MatMul" in out and "kernel: float32[3,2]  6 values" in out and "variables.npz" in out
    assert cli.main(["show", str(tmp_path)]) == 1
    assert "not a directory written by tracing.save" in capsys.readouterr().err


def test_show_timing_of_a_saved_directory_and_of_a_python_function(tmp_path, user_file, capsys):
    @function
    def f(x):
        return ek.tanh(x) * 2.0 + x

    f(ek.ones((4, 3)))
    path = save(f, str(tmp_path / "saved"))
    assert cli.main(["show", path, "--timing"]) == 0
    out = capsys.readouterr().out
    assert "function f: 1 signature(s)" in out and "load time per function" in out
    assert "f(x: f32[4,3]):" in out
    for phase in ("import", "optimize", "fusion", "arithmetic", "compile"):
        assert phase in out, phase
    assert cli.main(["show", f"{user_file}:step", "--timing", "--shape", "x=2,3", "--dtype", "n=int32",
                     "--shape", "n="]) == 0
    out = capsys.readouterr().out
    assert "step(x: f32[2,3], n: i32[]):" in out and "first call" in out
    for phase in ("autograph", "trace", "optimize", "compile", "%"):
        assert phase in out, phase
    assert cli.main(["show", f"{user_file}:step"]) == 1
    assert "needs --timing" in capsys.readouterr().err


def test_bench_without_checkout(monkeypatch, capsys):
    monkeypatch.setattr(cli, "benchmarks_dir", lambda: None)
    assert cli.main(["bench"]) == 1
    assert "source checkout" in capsys.readouterr().err


def test_bench_runs_scripts_with_progress(tmp_path, monkeypatch, capsys):
    b = tmp_path / "benchmarks"
    b.mkdir()
    (b / "__init__.py").write_text("")
    (b / "harness.py").write_text("")
    (b / "bench_fake.py").write_text("print('| workload | ratio |')\nprint('| fake | 1.00x |')\n")
    monkeypatch.setattr(cli, "benchmarks_dir", lambda: str(b))
    assert cli.main(["bench"]) == 0
    out, err = capsys.readouterr()
    assert "## bench_fake" in out and "| fake | 1.00x |" in out and "bench [" in err
    assert cli.main(["bench", "--only", "nothing"]) == 1


def test_usage_and_console_script():
    assert cli.main([]) == 2
    proc = subprocess.run([sys.executable, "-m", "tracing.cli", "--help"], capture_output=True, text=True,
                          cwd=REPO, env=dict(os.environ, PYTHONPATH=REPO), timeout=60)
    assert proc.returncode == 0 and "demo" in proc.stdout and "graph" in proc.stdout
    assert 'graphjit = "tracing.cli:main"' in open(os.path.join(REPO, "pyproject.toml")).read()
