"""Run-time choice among kernel variants with equal bits (graph_runtime/fusion/autotune.py), on a fake clock.

The choice is timed, so the tests drive it with an injected clock (`autotune.CLOCK`) that the fake
candidates advance by their cost: the logic is exercised deterministically and nothing here depends on
how fast the machine is.  The last test runs a real big fused kernel under `@function` while the chooser
samples every variant and checks each call's bits against eager execution.
"""
from __future__ import annotations

import importlib

import numpy as np
import pytest

import eager as ek
from graph_runtime import fusion
from graph_runtime.fusion import autotune
from graph_runtime.fusion.autotune import Chooser, TunedKernel
from tracing import function

kernel_module = importlib.import_module("graph_runtime.fusion.kernel")


class FakeTime:
    """A clock the candidates advance by their cost; `cost[label]` may change between calls."""

    def __init__(self, monkeypatch, cost: dict):
        self.now = 0.0
        self.cost = cost
        self.ran: list = []
        monkeypatch.setattr(autotune, "CLOCK", [lambda: self.now])

    def spend(self, label: str) -> None:
        self.now += self.cost[label]
        self.ran.append(label)


def drive(chooser: Chooser, clock: FakeTime, calls: int, costs=None) -> None:
    """`calls` calls of the chooser: each runs the candidate it names, at the clock's cost (or `costs(k)`)."""
    for _ in range(calls):
        k = chooser.next()
        label = chooser.labels[k]
        t = costs(label) if costs else clock.cost[label]
        clock.ran.append(label)
        chooser.record(k, t)


def chooser_ab(monkeypatch, a=1.0, b=2.0):
    clock = FakeTime(monkeypatch, {"a": a, "b": b})
    return Chooser(2, ["a", "b"]), clock


def test_candidates_alternate_until_each_has_its_samples_then_the_lowest_median_runs(monkeypatch):
    ch, clock = chooser_ab(monkeypatch)
    drive(ch, clock, 2 * Chooser.SAMPLES)
    assert clock.ran == ["a", "b"] * Chooser.SAMPLES and ch.chosen_label == "a"
    clock.ran.clear()
    drive(ch, clock, Chooser.RECHECK - 1)
    assert clock.ran == ["a"] * (Chooser.RECHECK - 1)


def test_a_few_lucky_samples_do_not_decide(monkeypatch):
    """Two of b's five samples came while a core was free (fast): the median still says a."""
    ch, clock = chooser_ab(monkeypatch)
    drive(ch, clock, 2 * Chooser.SAMPLES, costs=lambda label: 0.1 if len(clock.ran) in (1, 5) else clock.cost[label])
    assert sorted(ch.times[1]) == [0.1, 0.1, 2.0, 2.0, 2.0]
    assert ch.chosen_label == "a"


def test_a_challenger_faster_by_the_margin_takes_over_after_a_window_of_rechecks(monkeypatch):
    ch, clock = chooser_ab(monkeypatch)
    drive(ch, clock, 2 * Chooser.SAMPLES)
    clock.cost["b"] = 0.5                      # a core came free: the split variant became faster
    clock.ran.clear()
    while ch.chosen_label == "a":
        drive(ch, clock, 1)
    assert clock.ran.count("b") == Chooser.WINDOW     # the median of WINDOW ratios, each 0.5
    # the first recheck after RECHECK calls; a challenger that looked faster runs again CONFIRM calls later
    assert len(clock.ran) == Chooser.RECHECK + (Chooser.WINDOW - 1) * Chooser.CONFIRM
    assert ch.switches == 1
    clock.ran.clear()
    drive(ch, clock, 10)
    assert clock.ran == ["b"] * 10


def test_within_the_margin_the_choice_never_flips(monkeypatch):
    """A challenger 3% faster (noise on a shared machine) is not worth a switch: the incumbent stays."""
    ch, clock = chooser_ab(monkeypatch, a=1.0, b=1.02)
    drive(ch, clock, 2 * Chooser.SAMPLES)
    assert ch.chosen_label == "a"
    clock.cost["b"] = 0.97
    drive(ch, clock, 2000)
    assert ch.chosen_label == "a" and ch.switches == 0


def test_one_lucky_recheck_does_not_switch(monkeypatch):
    ch, clock = chooser_ab(monkeypatch)
    drive(ch, clock, 2 * Chooser.SAMPLES)
    fast_once = iter([0.2])
    clock.ran.clear()
    drive(ch, clock, 1000, costs=lambda label: next(fast_once, 2.0) if label == "b" else 1.0)
    assert ch.chosen_label == "a" and ch.switches == 0 and clock.ran.count("b") >= 5


def test_confirming_rechecks_back_off_and_a_suspicious_one_shortens_the_interval(monkeypatch):
    ch, clock = chooser_ab(monkeypatch)
    drive(ch, clock, 2 * Chooser.SAMPLES)
    clock.ran.clear()
    drive(ch, clock, 16 + 32 + 64 + 128 + 128)
    at = [i + 1 for i, label in enumerate(clock.ran) if label == "b"]
    assert at == [16, 48, 112, 240, 368]        # 16, 32, 64, then MAX_RECHECK apart
    clock.cost["b"] = 0.9                      # faster, but a core is not always free: every other recheck
    slow = iter([False, True] * 10)
    clock.ran.clear()
    c, r, m = Chooser.CONFIRM, Chooser.RECHECK, Chooser.MAX_RECHECK
    drive(ch, clock, m + c + 2 * r, costs=lambda label: (2.0 if next(slow) else 0.9) if label == "b" else 1.0)
    at = [i + 1 for i, label in enumerate(clock.ran) if label == "b"]
    # faster: again CONFIRM calls later; then slower: the interval doubles from RECHECK
    assert at == [m, m + c, m + c + 2 * r]
    assert ch.chosen_label == "b"              # ratios 0.9, 2.0, 0.9: the median is 10% faster


def test_a_choice_among_three_rechecks_each_challenger_on_its_own_schedule(monkeypatch):
    clock = FakeTime(monkeypatch, {"a": 1.0, "b": 2.0, "c": 3.0})
    ch = Chooser(3, ["a", "b", "c"])
    drive(ch, clock, 3 * Chooser.SAMPLES)
    assert clock.ran[:3] == ["a", "b", "c"] and ch.chosen_label == "a"
    clock.ran.clear()
    drive(ch, clock, 16 + 32 + 64 + 128)
    at = {x: [i + 1 for i, y in enumerate(clock.ran) if y == x] for x in "bc"}
    # both due after RECHECK calls: the second CONFIRM calls after the first; each then backs off on its own
    assert at == {"b": [16, 48, 112, 240], "c": [20, 52, 116]}


def test_a_wrong_first_choice_is_undone_while_slower_challengers_back_off(monkeypatch):
    """The quiet 2M chain's four variants: compiled + 2 threads is 11% faster than NumPy + 2 threads, but
    while it is not the choice, every other run of it meets a busy core (the chooser first picked NumPy + 2
    threads, and half the rechecks say nothing).  The two serial variants, far behind, must not stretch the close challenger's rechecks (a
    shared interval they doubled used to leave the wrong choice in place for hundreds of calls)."""
    cost = {"numpy, serial": 11.41, "numpy, 2 threads": 7.04, "native, serial": 10.63, "native, 2 threads": 6.24}
    clock = FakeTime(monkeypatch, cost)
    ch = Chooser(4, list(cost))
    runs = {"native, 2 threads": 0}

    def costs(label):
        if label != "native, 2 threads" or ch.chosen_label == label:
            return cost[label]
        runs[label] += 1
        return cost[label] * (1.6 if runs[label] % 2 else 1.0)      # its 1st, 3rd, 5th... run meets a busy core
    drive(ch, clock, 4 * Chooser.SAMPLES, costs)
    assert ch.chosen_label == "numpy, 2 threads"
    clock.ran.clear()
    while ch.chosen_label == "numpy, 2 threads" and len(clock.ran) < 1000:
        drive(ch, clock, 1, costs)
    assert ch.chosen_label == "native, 2 threads" and len(clock.ran) <= 64
    clock.ran.clear()
    drive(ch, clock, 1024, costs)
    assert ch.chosen_label == "native, 2 threads" and ch.switches == 1
    # the serial variants were rechecked, but rarely: about one slow call in MAX_RECHECK between them
    slow = [clock.ran.count("numpy, serial"), clock.ran.count("native, serial")]
    assert min(slow) >= 2 and sum(slow) <= 1024 // Chooser.MAX_RECHECK + 4


# ------------------------------------------------------------------ TunedKernel
def fake_kernel(clock: FakeTime, name: str, scale=1.0):
    def chunked(run, x):
        return run(name, x * scale)
    chunked.source = f"# {name}"
    return chunked


def fake_runner(clock: FakeTime, label: str):
    def run(kernel_name, x):
        clock.spend(f"{kernel_name}, {label}")
        return x
    return run


def test_tuned_kernel_promotes_untimed_then_chooses_among_every_variant(monkeypatch):
    clock = FakeTime(monkeypatch, {"numpy, serial": 4.0, "numpy, 2 threads": 3.0,
                                   "native, serial": 2.0, "native, 2 threads": 1.0})
    built = []

    def make_native():
        clock.now += 1000.0                 # numba's start-up: must not count as any variant's time
        built.append(True)
        return fake_kernel(clock, "native")

    tk = TunedKernel(fake_kernel(clock, "numpy"), [("serial", fake_runner(clock, "serial")),
                                                   ("2 threads", fake_runner(clock, "2 threads"))],
                     make_native, promote_after=3)
    for _ in range(2):
        assert tk(np.float32(5)) == 5
    assert tk.chooser.n == 2 and not built
    assert tk(np.float32(5)) == 5            # the promoting call: the NumPy result, native checked beside it
    assert built and tk.native is not None and tk.chooser.n == 4
    assert all(len(t) == 0 for t in tk.chooser.times)
    for _ in range(4 * Chooser.SAMPLES):
        tk(np.float32(5))
    assert tk.chosen_label == "native, 2 threads"
    assert sorted(tk.chooser.counts) == [Chooser.SAMPLES] * 4


def test_tuned_kernel_keeps_numpy_when_the_compiled_bits_differ(monkeypatch):
    clock = FakeTime(monkeypatch, {"numpy, serial": 4.0, "native, serial": 1.0})
    tk = TunedKernel(fake_kernel(clock, "numpy"), [("serial", fake_runner(clock, "serial"))],
                     lambda: fake_kernel(clock, "native", scale=np.float32(1.0000001)), promote_after=1)
    tk(np.float32(3))
    assert tk.native is None and tk.state == "settled" and tk.chooser.n == 1
    clock.ran.clear()
    tk(np.float32(3))
    assert clock.ran == ["numpy, serial"]


def test_pinning_a_variant(monkeypatch):
    clock = FakeTime(monkeypatch, {"numpy, serial": 1.0, "numpy, 2 threads": 2.0})
    tk = TunedKernel(fake_kernel(clock, "numpy"), [("serial", fake_runner(clock, "serial")),
                                                   ("2 threads", fake_runner(clock, "2 threads"))])
    tk.pin("numpy, 2 threads")
    for _ in range(5):
        tk(np.float32(1))
    assert clock.ran == ["numpy, 2 threads"] * 5
    with pytest.raises(ValueError, match="no variant 'native, serial'.*numpy, serial"):
        tk.pin("native, serial")
    tk.pin(None)
    assert tk.chooser.n == 2


def test_every_variant_of_a_big_traced_kernel_gives_the_eager_bits(monkeypatch):
    """Through `@function`: while the chooser samples serial and split runs (and times them with a clock
    that makes each look fastest in turn), every call returns eager execution's bits."""
    monkeypatch.setattr(kernel_module, "THREAD_MIN_ELEMENTS", 1000)
    monkeypatch.setattr(kernel_module.parallel, "cores", lambda: 2)      # a split variant even on one core
    ticks = iter(np.cumsum(np.random.default_rng(0).uniform(0, 1, 10000)))
    monkeypatch.setattr(autotune, "CLOCK", [lambda: next(ticks)])
    fusion.clear_caches()
    x = ek.constant(np.random.default_rng(1).standard_normal(6000).astype(np.float32))

    def chain(t):
        a = 2.0 * t + 1.0
        return (ek.tanh(a) * a - t) ** 2 + 3.0

    want = chain(x).numpy()
    try:
        with fusion.options(chunk_bytes=1024, numexpr=False):
            f = function(chain)
            for _ in range(3 * Chooser.SAMPLES):
                assert f(x).numpy().tobytes() == want.tobytes()
        tuned = [k for k in fusion_kernels(f, x) if isinstance(k, TunedKernel)]
        assert len(tuned) == 1
        assert min(tuned[0].chooser.counts) >= Chooser.SAMPLES - 1 and tuned[0].chooser.n >= 2
    finally:
        fusion.clear_caches()


def fusion_kernels(f, x) -> list:
    return [s.kernel for s in f.get_concrete_function(x)._plan.steps if s.op.type == "FusedElementwise"]
