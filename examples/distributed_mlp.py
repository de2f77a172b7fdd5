"""Data-parallel training of the digits MLP on a cluster: variables on a ps task, two worker tasks.

One graph, TF1 style: the parameters live on `/job:ps/task:0`; each worker
task computes the loss and gradients of its half of every batch; the ps
averages the two gradients and applies the SGD update.  The same graph is then
trained in one process (a local Session, the cluster's device requests
dropped by soft placement) with the same initial values and batch order, and
both test accuracies are printed: they are equal, because the arithmetic is
the same; only where it runs differs.

`ray://local` starts an embedded Ray on this machine.  To use a real Ray
cluster, run the same code with `--target ray://auto` on one of its nodes, or
`--target ray://HEAD:10001` from outside (Ray Client).

Needs `pip install 'graphjit[distributed,examples]'` (Ray, scikit-learn).

Run:  python examples/distributed_mlp.py [--epochs 12] [--quick] [--target ray://local]
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # run from a checkout

import eager as ek  # noqa: E402
import graph_runtime as gr  # noqa: E402
from mlp_digits import load_data  # noqa: E402  (examples/ is this script's directory)

WORKERS = 2
CLUSTER = gr.ClusterSpec({"ps": 1, "worker": WORKERS})


def initial_values(hidden=64, seed=0) -> dict:
    rng = np.random.default_rng(seed)
    return {"w1": (rng.normal(size=(64, hidden)) * np.sqrt(2 / 64)).astype(np.float32),
            "b1": np.zeros(hidden, np.float32),
            "w2": (rng.normal(size=(hidden, 10)) * np.sqrt(2 / hidden)).astype(np.float32),
            "b2": np.zeros(10, np.float32)}


def build_graph(learning_rate=0.3):
    """The model, one shard of every batch per worker task, the averaged update on the ps."""
    graph = gr.Graph()
    with graph.as_default():
        with gr.device("/job:ps/task:0"):
            params = {k: ek.Variable(v, name=k) for k, v in initial_values().items()}
        names = list(params)

        def logits(x):
            h = ek.nn.relu(ek.matmul(x, params["w1"]) + params["b1"])
            return ek.matmul(h, params["w2"]) + params["b2"]

        feeds, losses, grads = [], [], []
        for k in range(WORKERS):
            with gr.device(f"/job:worker/task:{k}"):
                x = gr.placeholder(ek.float32, (None, 64), name=f"x{k}")
                y = gr.placeholder(ek.int32, (None,), name=f"y{k}")
                loss = ek.reduce_mean(ek.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits(x)))
                feeds.append((x, y))
                losses.append(loss)
                grads.append(gr.gradients(loss, [params[n] for n in names]))
        with gr.device("/job:ps/task:0"):
            updates = [params[n].assign_sub(learning_rate * ek.add_n([g[i] for g in grads]) / float(WORKERS))
                       for i, n in enumerate(names)]
            train = gr.group(*updates, name="train")
        with gr.device("/job:worker/task:0"):
            x_eval = gr.placeholder(ek.float32, (None, 64), name="x_eval")
            predict = ek.argmax(logits(x_eval), axis=1)
        init = gr.global_variables_initializer()
    return graph, dict(feeds=feeds, loss=losses, train=train, x_eval=x_eval,
                       predict=predict, init=init, params=params)


def train(sess, t, data, epochs, batch) -> tuple:
    """Run the training loop in `sess`; returns (test accuracy, final loss, steps per second)."""
    (x_train, y_train), (x_test, y_test) = data
    rng = np.random.default_rng(1)
    sess.run(t["init"])
    half = batch // WORKERS
    step_fn = sess.make_callable([t["train"]] + t["loss"], [v for xy in t["feeds"] for v in xy])
    steps, start, last = 0, time.perf_counter(), None
    for _ in range(epochs):
        order = rng.permutation(len(x_train))
        for i in range(0, len(order) - batch + 1, batch):
            idx = order[i:i + batch]
            shards = [(x_train[idx[k * half:(k + 1) * half]], y_train[idx[k * half:(k + 1) * half]])
                      for k in range(WORKERS)]
            last = step_fn(*[a for xy in shards for a in xy])[1:]
            steps += 1
    rate = steps / (time.perf_counter() - start)
    acc = float(np.mean(sess.run(t["predict"], {t["x_eval"]: x_test}) == y_test))
    return acc, float(np.mean(last)), rate, sess.run(list(t["params"].values()))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epochs", type=int, default=12)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--quick", action="store_true", help="a short run (used by the tests)")
    ap.add_argument("--target", default="ray://local", help="ray://local | ray://auto | ray://HOST:PORT")
    args = ap.parse_args(argv)
    epochs = 3 if args.quick else args.epochs
    data = load_data()
    graph, t = build_graph()

    start = time.perf_counter()
    config = gr.SessionConfig(cluster=CLUSTER)
    with gr.Session(args.target, graph=graph, config=config) as sess:
        print(f"cluster ready in {time.perf_counter() - start:.1f} s: " +
              ", ".join(d.name for d in sess.list_devices()))
        acc_d, loss_d, rate_d, params_d = train(sess, t, data, epochs, args.batch)
    with gr.Session(graph=graph, config=gr.SessionConfig(allow_soft_placement=True)) as sess:
        acc_l, loss_l, rate_l, params_l = train(sess, t, data, epochs, args.batch)

    diff = max(float(np.max(np.abs(a - b))) for a, b in zip(params_d, params_l))
    print(f"distributed (ps + {WORKERS} workers): test accuracy {acc_d:.4f}, final loss {loss_d:.4f}, "
          f"{rate_d:.0f} steps/s")
    print(f"one process:                  test accuracy {acc_l:.4f}, final loss {loss_l:.4f}, "
          f"{rate_l:.0f} steps/s")
    print(f"largest difference between the final parameters: {diff:.2e}")
    print("accuracies equal" if acc_d == acc_l else "ACCURACIES DIFFER")
    return 0 if acc_d == acc_l else 1


if __name__ == "__main__":
    sys.exit(main())
