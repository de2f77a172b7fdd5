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


def test_autotuned_kernel_revisits_its_choice_when_timings_change(monkeypatch):
    """A choice made while one candidate was slow (serial wins on a busy machine) is revisited: every
    RECHECK-th call runs the other candidate, and once its recent timings are lower it is used."""
    from graph_runtime.fusion import kernel
    cost = {"a": 1.0, "b": 2.0}
    clock = [0.0]
    ran: list = []

    def candidate(label):
        def run(x):
            clock[0] += cost[label]
            ran.append(label)
            return x
        return run

    monkeypatch.setattr(kernel.time, "perf_counter", lambda: clock[0])
    tuned = kernel.Autotuned([candidate("a"), candidate("b")], ["a", "b"])
    for _ in range(6):
        assert tuned(7) == 7
    assert tuned.chosen_label == "a" and ran == ["a", "b"] * 3
    cost["b"] = 0.5                     # the other candidate became faster (a core came free)
    ran.clear()
    for _ in range(2 * kernel.Autotuned.RECHECK - 6):    # up to the second recheck
        tuned(0)
    assert tuned.chosen_label == "b"
    assert ran.count("b") == 2          # it took two rechecks (a median of three timings) to switch
    ran.clear()
    for _ in range(10):
        tuned(0)
    assert ran == ["b"] * 10
