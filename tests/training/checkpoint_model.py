"""A small deterministic training setup shared by the checkpoint tests and their crash subprocess."""
import numpy as np

import eager as ek


class Dense(ek.Module):
    """Builds its weights on first call, like a Keras layer."""

    def __init__(self, units, seed, name=None):
        super().__init__(name=name)
        self.units, self.seed = units, seed
        self.kernel = self.bias = None

    def __call__(self, x):
        if self.kernel is None:
            rng = np.random.default_rng(self.seed)
            self.kernel = ek.Variable(rng.standard_normal((x.shape[-1], self.units)).astype(np.float32),
                                      name="kernel")
            self.bias = ek.Variable(np.zeros(self.units, np.float32), name="bias")
        return ek.matmul(x, self.kernel) + self.bias


class Net(ek.Module):
    def __init__(self, seed=0):
        super().__init__()
        self.hidden, self.out = Dense(8, seed), Dense(1, seed + 1)

    def __call__(self, x):
        return self.out(ek.tanh(self.hidden(x)))


def batch(i):
    rng = np.random.default_rng(100 + i)
    x = rng.standard_normal((16, 4)).astype(np.float32)
    return ek.constant(x), ek.constant(np.sin(x.sum(axis=1, keepdims=True)).astype(np.float32))


def train_step(net, opt, i, step_fn=None):
    """One step on batch i (through `step_fn(x, y)`, e.g. a traced `apply_step`, when given)."""
    x, y = batch(i)
    return step_fn(x, y) if step_fn is not None else apply_step(net, opt, x, y)


def apply_step(net, opt, x, y):
    with ek.GradientTape() as tape:
        loss = ek.reduce_mean(ek.square(net(x) - y))
    variables = net.trainable_variables
    opt.apply_gradients(zip(tape.gradient(loss, variables), variables))
    return loss


def make(seed=0):
    net = Net(seed)
    opt = ek.keras.optimizers.Adam(ek.keras.optimizers.schedules.ExponentialDecay(0.05, 3, 0.9), amsgrad=True)
    return net, opt


def state(net, opt):
    """Every number of the run, for bit-for-bit comparisons."""
    return [v.numpy().copy() for v in net.variables] + [v.numpy().copy() for v in opt.variables]
