"""The examples run end to end (short settings) in a subprocess, as a user would run them."""
import importlib.util
import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = os.path.join(REPO, "examples")


def _run(name, *args, timeout=120, **env_vars):
    env = dict(os.environ, PYTHONPATH=REPO, **env_vars)
    proc = subprocess.run([sys.executable, os.path.join(EXAMPLES, name), *args], capture_output=True, text=True,
                          cwd=REPO, env=env, timeout=timeout)
    assert proc.returncode == 0, f"{name} failed:\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    return proc.stdout


def test_tf1_session():
    out = _run("tf1_session.py", "--quick")
    assert "learned w" in out and "steps/s" in out


@pytest.mark.skipif(importlib.util.find_spec("sklearn") is None,
                    reason="mlp_digits needs scikit-learn (pip install 'graphjit[examples]')")
def test_mlp_digits(tmp_path):
    tensorboard = importlib.util.find_spec("tensorboard") is not None
    logdir = ["--logdir", str(tmp_path / "logs")] if tensorboard else []
    out = _run("mlp_digits.py", "--quick", "--save", str(tmp_path / "digits"), *logdir)
    assert "test accuracy" in out and "@function" in out and "speedup" in out and "traced 1 time(s)" in out
    assert os.path.isfile(tmp_path / "digits" / "graphjit_saved.json")
    if tensorboard:      # Keras's TensorBoard callback: train/ and validation/ runs, every step, the graph
        from tensorboard.backend.event_processing import event_accumulator as ea

        def run(name):
            acc = ea.EventAccumulator(str(tmp_path / "logs" / name), size_guidance={ea.SCALARS: 0, ea.TENSORS: 0})
            acc.Reload()
            return acc

        def steps(acc, tag):
            return [e.step for e in (acc.Scalars(tag) if tag in acc.Tags()["scalars"] else acc.Tensors(tag))]
        train, validation = run("train"), run("validation")
        assert steps(train, "epoch_loss") == [0, 1, 2, 3] and steps(validation, "epoch_accuracy") == [0, 1, 2, 3]
        assert steps(train, "batch_loss") == list(range(1, 4 * 23 + 1))
        assert len(train.Graph().node) > 20


@pytest.mark.skipif(importlib.util.find_spec("sklearn") is None,
                    reason="cnn_digits needs scikit-learn (pip install 'graphjit[examples]')")
def test_cnn_digits():
    out = _run("cnn_digits.py", "--quick")
    assert "test accuracy" in out and "traced 1 time(s)" in out and "speedup" in out


def test_char_rnn():
    out = _run("char_rnn.py", "--quick", "--show-code")
    assert "ag__.for_stmt" in out                      # the Python for became a staged loop
    assert "While op(s)" in out and "sample:" in out


def test_mlp_digits_without_sklearn_says_how_to_install(tmp_path):
    blocker = tmp_path / "sklearn"
    blocker.mkdir()
    (blocker / "__init__.py").write_text("raise ImportError('scikit-learn hidden for this test')\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), REPO]))
    proc = subprocess.run([sys.executable, os.path.join(EXAMPLES, "mlp_digits.py"), "--quick"], capture_output=True,
                          text=True, cwd=REPO, env=env, timeout=60)
    assert proc.returncode == 1 and "pip install scikit-learn" in proc.stderr


@pytest.mark.skipif(importlib.util.find_spec("sklearn") is None or importlib.util.find_spec("ray") is None,
                    reason="distributed_mlp needs scikit-learn and Ray (pip install 'graphjit[examples,distributed]')")
def test_distributed_mlp_matches_one_process(ray_local):
    # the example joins the test session's Ray (`ray://auto` with RAY_ADDRESS naming it) instead of starting one
    out = _run("distributed_mlp.py", "--quick", "--target", "ray://auto", timeout=300,
               RAY_ADDRESS=ray_local.get_runtime_context().gcs_address)
    assert "accuracies equal" in out and "ps + 2 workers" in out
    acc = [float(line.split("test accuracy")[1].split(",")[0]) for line in out.splitlines() if "test accuracy" in line]
    assert len(acc) == 2 and acc[0] == acc[1] > 0.85
