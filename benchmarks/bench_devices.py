"""Devices: two independent heavy branches on two virtual CPUs vs the same graph on one device;
the per-step overhead of a Send/Recv pair for a small tensor.

Run: `OPENBLAS_NUM_THREADS=1 python -m benchmarks.bench_devices` (the BLAS thread
setting in use is printed: with one BLAS thread per matmul, two devices can use
the two cores; with a multi-threaded BLAS one device already does).
Workloads:
- branches: two independent branches, each a 400x400 float64 matmul chain
  (3 matmuls) then an elementwise chain (tanh, exp, multiply), added at the
  end; "2 devices" puts one branch on /cpu:0 and one on /cpu:1 (the adds on
  device 0), "1 device" is the same graph in a one-device Session; NumPy is
  the same computation written by hand.  "NumPy, 2 threads vs 1" runs the
  hand-written branches on two Python threads vs one after the other: the
  parallelism the machine actually gives in this run (NumPy releases the GIL
  in matmul and ufuncs), the ceiling for the 2-device ratio.  "no requests"
  is the graph without device scopes in a 2-device Session: the placer's
  cost model (graph_runtime/cost_model.py) spreads the branches itself.  On a shared
  2-vCPU machine whose other core is busy it is ~1.0x, and so is the
  2-device ratio.
- transfer: a 4-element float32 tensor bounced x -> /cpu:1 -> /cpu:0 vs the
  same ops on one device.  Such a step is tiny and pure, and its partitions
  depend one way only, so it runs them one after another on the caller's
  thread (multi_device.inline_order): what remains is the partition dispatch.
  "ping-pong" (x -> /cpu:0 -> /cpu:1 -> /cpu:0: the partitions depend on each
  other both ways) must run them together on the device threads: two
  Send/Recv pairs per step, so the difference per step, divided by two, is
  the cost of one pair (threads, rendezvous, partition dispatch included).
- compression: a 1000x1000 float32 tensor made on /cpu:1 and used on /cpu:0,
  with `transfer_compression` "float16" or "truncate16" vs none; the bytes
  sent and saved per step are read from a traced run's `_Send` step stats.
  In one process the rendezvous passes a reference, so compression only
  costs time here (the casts); the bytes saved are what a wire would carry.
Ratios are against the one-device Session (and hand-written NumPy) measured
interleaved in the same run (benchmarks/harness.paired).
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np

import eager as ek
import graph_runtime as gr

from benchmarks.bench_cnn import blas_threads
from benchmarks.harness import Row, paired, table

N = 400


def _branch(x, w):
    h = ek.matmul(ek.matmul(ek.matmul(x, w), w), w)
    return ek.tanh(ek.exp(ek.tanh(h)) * 0.5)


def _branches_graph(split: bool):
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float64, [N, N], name="x")
        w = gr.placeholder(ek.float64, [N, N], name="w")
        with g.device("/cpu:0" if split else None):
            a = _branch(x, w)
        with g.device("/cpu:1" if split else None):
            b = _branch(x * 0.5, w)
        with g.device("/cpu:0" if split else None):
            out = a + b
    return g, x, w, out


def branches_rows() -> list[Row]:
    rng = np.random.default_rng(0)
    xv, wv = rng.standard_normal((N, N)) / N, rng.standard_normal((N, N)) / np.sqrt(N)

    def br(x):
        return np.tanh(np.exp(np.tanh(x @ wv @ wv @ wv)) * 0.5)

    def numpy_ref():
        return br(xv) + br(xv * 0.5)

    pool = ThreadPoolExecutor(max_workers=1)

    def numpy_threads():
        other = pool.submit(br, xv * 0.5)
        return br(xv) + other.result()

    runs = {}
    for split in (False, True):
        g, x, w, out = _branches_graph(split)
        cfg = gr.SessionConfig(device_count={"CPU": 2 if split else 1})
        sess = gr.Session(graph=g, config=cfg)
        runs[split] = sess.make_callable(out, [x, w])
        np.testing.assert_allclose(runs[split](xv, wv), numpy_ref(), rtol=1e-10)
    g, x, w, out = _branches_graph(False)        # no device requests: the placer's cost model decides
    auto = gr.Session(graph=g, config=gr.SessionConfig(device_count={"CPU": 2})).make_callable(out, [x, w])
    np.testing.assert_allclose(auto(xv, wv), numpy_ref(), rtol=1e-10)
    one = lambda: runs[False](xv, wv)           # noqa: E731
    two = lambda: runs[True](xv, wv)            # noqa: E731
    t_auto, t_one_a = paired(lambda: auto(xv, wv), one)
    t_two, t_one = paired(two, one)
    t_one_b, t_np = paired(one, numpy_ref)
    t_np2, t_np1 = paired(numpy_threads, numpy_ref)
    pool.shutdown()
    return [Row("two branches", "1 device vs NumPy", t_one_b, t_np),
            Row("two branches", "2 devices vs 1 device", t_two, t_one,
                note=f"speed-up {t_one / t_two:.2f}x"),
            Row("two branches, no requests", "2 devices (cost model) vs 1", t_auto, t_one_a,
                note=f"speed-up {t_one_a / t_auto:.2f}x"),
            Row("two branches", "NumPy, 2 threads vs 1", t_np2, t_np1,
                note=f"machine ceiling {t_np1 / t_np2:.2f}x")]


def transfer_rows() -> list[Row]:
    def build(devices):
        g = gr.Graph()
        with g.as_default():
            x = gr.placeholder(ek.float32, [4], name="x")
            with g.device(devices[0]):
                y = x + 1.0
            with g.device(devices[1]):
                z = y * 2.0
            with g.device(devices[2]):
                z = z - 1.0
        sess = gr.Session(graph=g, config=gr.SessionConfig(device_count={"CPU": 2 if devices[0] else 1}))
        return sess.make_callable(z, [x])

    xv = np.ones(4, np.float32)
    one, bounce, ping = build([None] * 3), build(["/cpu:1", "/cpu:0", "/cpu:0"]), build(["/cpu:0", "/cpu:1", "/cpu:0"])
    t_two, t_one = paired(lambda: bounce(xv), lambda: one(xv))
    t_ping, t_one_p = paired(lambda: ping(xv), lambda: one(xv))
    return [Row("small tensor bounced to /cpu:1 and back", "2 devices vs 1 device", t_two, t_one,
                note="partitions run inline"),
            Row("small tensor ping-pong /cpu:0 -> /cpu:1 -> /cpu:0", "2 devices vs 1 device", t_ping, t_one_p,
                note=f"one Send/Recv pair ~ {(t_ping - t_one_p) / 2 * 1e6:.0f} us")]


def compression_rows() -> list[Row]:
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, [1000, 1000], name="x")
        with g.device("/cpu:1"):
            y = ek.tanh(x)
        with g.device("/cpu:0"):
            z = ek.reduce_sum(y * 2.0)
    xv = np.random.default_rng(0).standard_normal((1000, 1000)).astype(np.float32)
    runs, notes = {}, {}
    for how in (None, "float16", "truncate16"):
        sess = gr.Session(graph=g, config=gr.SessionConfig(device_count={"CPU": 2}, transfer_compression=how))
        md = gr.RunMetadata()
        sess.run(z, {x: xv}, options=gr.RunOptions(trace_level=gr.RunOptions.FULL_TRACE), run_metadata=md)
        sent = sum(st.bytes_sent for st in md.step_stats if st.type == "_Send")
        saved = sum(st.bytes_saved for st in md.step_stats if st.type == "_Send")
        notes[how] = f"sent {sent / 1e6:.2f} MB, saved {saved / 1e6:.2f} MB per step"
        runs[how] = sess.make_callable(z, [x])
    rows = []
    for how in ("float16", "truncate16"):
        t_c, t_none = paired(lambda: runs[how](xv), lambda: runs[None](xv))
        rows.append(Row("1000x1000 float32 /cpu:1 -> /cpu:0", f"{how} vs no compression", t_c, t_none,
                        note=f"{notes[how]} (none: {notes[None]})"))
    return rows


def main() -> None:
    print(f"BLAS: {blas_threads()}")
    print(table(branches_rows() + transfer_rows() + compression_rows()))


if __name__ == "__main__":
    main()
