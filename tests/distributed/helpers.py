"""Graph builders shared by the distributed tests."""
import numpy as np

import eager as ek
import graph_runtime as gr

PS_WORKERS = gr.ClusterSpec({"ps": 1, "worker": 2})


def cluster_config(**kw):
    return gr.SessionConfig(cluster=PS_WORKERS, **kw)


def local_config(**kw):
    """A one-process session for the same graphs: device requests for cluster jobs are dropped."""
    return gr.SessionConfig(allow_soft_placement=True, **kw)


def mlp_graph(seed=0):
    """A 2-layer regression MLP: variables on the ps, layers on two workers, one SGD step op."""
    rng = np.random.default_rng(seed)
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, (None, 5), name="x")
        t = gr.placeholder(ek.float32, (None, 3), name="t")
        with gr.device("/job:ps/task:0"):
            w1 = ek.Variable(rng.normal(size=(5, 8)).astype(np.float32), name="w1")
            w2 = ek.Variable(rng.normal(size=(8, 3)).astype(np.float32), name="w2")
        with gr.device("/job:worker/task:0"):
            h = ek.tanh(ek.matmul(x, w1))
        with gr.device("/job:worker/task:1"):
            y = ek.matmul(h, w2)
            loss = ek.reduce_mean(ek.square(y - t))
        g1, g2 = gr.gradients(loss, [w1, w2])
        train = gr.group(w1.assign_sub(0.1 * g1), w2.assign_sub(0.1 * g2))
        init = gr.global_variables_initializer()
    return g, dict(x=x, t=t, w1=w1, w2=w2, y=y, loss=loss, train=train, init=init)
