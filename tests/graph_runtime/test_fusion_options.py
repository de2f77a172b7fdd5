"""Fusion options: `options(...)` is scoped to the thread that enters it; `set_options` is process-wide."""
import threading

import numpy as np

import eager as ek
from graph_runtime import fusion
from tracing import function


def _fused_op_count(f, x) -> int:
    f(x)
    return sum(s.op.type == "FusedElementwise" for s in f.get_concrete_function(x)._plan.steps)


def _chain(x):
    return ek.tanh(x * 2.0 + 1.0) * 3.0 - 1.0


def test_options_in_one_thread_do_not_change_another_thread():
    inside, checked = threading.Event(), threading.Event()
    seen = {}

    def scoped():
        with fusion.options(enabled=False, min_ops=7):
            seen["inside"] = fusion.get_options()
            inside.set()
            checked.wait(10)

    t = threading.Thread(target=scoped)
    t.start()
    assert inside.wait(10)
    try:
        seen["other"] = fusion.get_options()
        x = ek.constant(np.linspace(-1, 1, 64, dtype=np.float32))
        seen["fused_ops_other_thread"] = _fused_op_count(function(_chain), x)
    finally:
        checked.set()
        t.join()
    assert seen["inside"].enabled is False and seen["inside"].min_ops == 7
    assert seen["other"].enabled is True and seen["other"].min_ops == fusion.FusionOptions().min_ops
    assert seen["fused_ops_other_thread"] >= 1


def test_scoped_options_apply_to_what_this_thread_compiles_and_are_restored():
    x = ek.constant(np.linspace(-1, 1, 64, dtype=np.float32))
    with fusion.options(enabled=False):
        assert _fused_op_count(function(_chain), x) == 0
        with fusion.options(numexpr=False):
            assert fusion.get_options().enabled is False and fusion.get_options().numexpr is False
        assert fusion.get_options().numexpr is True
    assert fusion.get_options().enabled is True
    assert _fused_op_count(function(_chain), x) >= 1


def test_set_options_changes_the_default_for_every_thread():
    old = fusion.set_options(min_ops=5)
    try:
        got = []
        t = threading.Thread(target=lambda: got.append(fusion.get_options().min_ops))
        t.start()
        t.join()
        assert got == [5] and fusion.get_options().min_ops == 5
        with fusion.options(min_ops=3):
            assert fusion.get_options().min_ops == 3
        assert fusion.get_options().min_ops == 5
    finally:
        fusion.set_options(**{"min_ops": old.min_ops})

