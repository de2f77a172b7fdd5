"""A/B: an RNN `@function` differentiated by a GradientTape around the call, for its weights (100 steps,
hidden 64, batch 16, the summary's RNN), with the call's backward built for the watched inputs only (the
forward loop runs compiled) against one built for every float input (the old call_op.py: the forward loop
saves the data input's slice indices and runs in Python).  The old form is made by treating every float input
as watched (`tape_state.tracked`); both give the same bits (checked).  One process, the two forms and the
NumPy BPTT step (workloads.rnn_numpy_grad) in rotated order each round; per-call medians over rounds.

Run: `python -m benchmarks.ab_tape_call [--rounds N]`.
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import eager as ek
from benchmarks.bench_control_flow import BATCH, HIDDEN, STEPS, rnn_data
from benchmarks.harness import rounds_arg
from benchmarks.workloads import rnn_numpy_grad
from eager import tape_state
from tracing import function


def rnn_loss(x, wx, wh, b):
    def body(t, h):
        return t + 1, ek.tanh(ek.matmul(x[t], wx) + ek.matmul(h, wh) + b)
    _, h = ek.while_loop(lambda t, h: t < STEPS, body, [ek.constant(0), ek.zeros((BATCH, HIDDEN))])
    return ek.reduce_sum(h)


def step_of(every_input: bool, xs, params):
    f, x = function(rnn_loss), ek.constant(xs)
    tracked = tape_state.tracked

    def step():
        if every_input:
            tape_state.tracked = lambda t: True
        try:
            with ek.GradientTape() as tape:
                loss = f(x, *params)
        finally:
            tape_state.tracked = tracked
        return [g.numpy() for g in tape.gradient(loss, params)]
    return step


def per_call(fn, seconds=0.05) -> float:
    n, began = 0, time.perf_counter()
    while time.perf_counter() - began < seconds:
        fn()
        n += 1
    return (time.perf_counter() - began) / n


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=rounds_arg, default=15)
    args = ap.parse_args(argv)
    xs, wx, wh, b = rnn_data()
    params = [ek.Variable(wx), ek.Variable(wh), ek.Variable(b)]
    forms = {"watched only": step_of(False, xs, params), "every input": step_of(True, xs, params),
             "numpy": lambda: rnn_numpy_grad(xs, wx, wh, b)}
    got = [forms[k]() for k in ("watched only", "every input", "numpy")]
    for a, c in zip(got[0], got[1]):
        assert np.array_equal(a, c), "the two backward forms differ"
    for a, c in zip(got[0], got[2]):
        assert np.allclose(a, c, rtol=1e-3, atol=1e-3), "graphjit's gradients differ from NumPy's BPTT"
    times = {k: [] for k in forms}
    names = list(forms)
    for r in range(args.rounds):
        for k in names[r % 3:] + names[:r % 3]:
            times[k].append(per_call(forms[k]))
    med = {k: statistics.median(v) for k, v in times.items()}
    for k in names:
        ratio = statistics.median(a / n for a, n in zip(times[k], times["numpy"]))
        print(f"{k:14s} {med[k] * 1e3:7.3f} ms   ratio to NumPy (paired median) {ratio:.3f}x")
    print(f"watched only / every input (paired median): "
          f"{statistics.median(a / c for a, c in zip(times['watched only'], times['every input'])):.3f}")


if __name__ == "__main__":
    main()
