"""eager.compiler_hook: eager-level libraries reach @function without importing tracing."""
import os
import subprocess
import sys

import pytest

import eager as ek
from eager import compiler_hook

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_tracing_registers_its_function_decorator():
    import tracing
    assert compiler_hook.function_compiler() is tracing.function


def test_compiled_function_runs_as_a_graph():
    compile_fn = compiler_hook.function_compiler()
    f = compile_fn(lambda x: x * 2.0 + 1.0)
    assert float(f(ek.constant(3.0))) == 7.0
    assert f.experimental_get_tracing_count() == 1


def test_eager_alone_finds_the_compiler_through_the_entry_point():
    code = ("import sys, eager\n"
            "from eager import compiler_hook\n"
            "assert 'tracing' not in sys.modules\n"
            "f = compiler_hook.function_compiler()(lambda x: x + 1.0)\n"
            "print(float(f(eager.constant(1.0))), 'tracing' in sys.modules)\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in [ROOT, os.environ.get("PYTHONPATH", "")] if p))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["2.0", "True"]


def test_register_refuses_a_non_callable():
    with pytest.raises(TypeError, match="expected a callable"):
        compiler_hook.register_function_compiler(3)
    with pytest.raises(TypeError, match="expected a callable"):
        compiler_hook.register_python_converter(3)


def test_tracing_registers_autograph_conversion():
    import autograph
    assert compiler_hook.python_converter() is autograph.convert

    def clip(x):
        if x > 1.0:
            x = x * 0.0 + 1.0
        return x
    converted = compiler_hook.python_converter()(clip)
    assert converted is not clip
    assert float(compiler_hook.function_compiler()(converted, autograph=False)(ek.constant(3.0))) == 1.0


def test_tensor_spec_is_one_class_in_eager_and_tracing():
    import tracing
    assert ek.TensorSpec is tracing.TensorSpec
    assert ek.TensorSpec([None, 3], ek.float32).short() == "f32[?,3]"
