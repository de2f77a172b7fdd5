"""Train a small CNN on the UCI handwritten digits (8x8 images, 10 classes) with a @function train step.

The data ships with scikit-learn (`pip install 'graphjit[examples]'`); loading,
batching (an `eager.data` pipeline: shuffle, batch, prefetch) and the speed
measurement are shared with examples/mlp_digits.py.
The model is an `eager.Module`: conv 3x3x1x8 SAME + bias, relu, max-pool
2x2; conv 3x3x8x16 SAME + bias, relu, max-pool 2x2; a dense layer on the
2x2x16 features.  The train step (forward, GradientTape, Adam) is one
`@function` whose input_signature leaves the batch dimension unknown.  The
example reports test accuracy and training steps per second eagerly versus as
a graph.

Run:  python examples/cnn_digits.py [--epochs 30] [--quick]
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # run from a checkout
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import eager as ek  # noqa: E402
from mlp_digits import Dense, load_data, train_and_report  # noqa: E402
from tracing import TensorSpec, function  # noqa: E402


class Conv(ek.Module):
    def __init__(self, c_in, c_out, seed, name=None):
        super().__init__(name)
        with self.name_scope:
            scale = np.sqrt(2.0 / (9 * c_in))
            self.w = ek.Variable(ek.random.normal((3, 3, c_in, c_out), stddev=scale, seed=seed), name="w")
            self.b = ek.Variable(ek.zeros((c_out,)), name="b")

    def __call__(self, x):
        h = ek.nn.relu(ek.nn.conv2d(x, self.w, 1, "SAME") + self.b)
        return ek.nn.max_pool2d(h, 2, 2, "VALID")


class CNN(ek.Module):
    def __init__(self, seed=0):
        super().__init__()
        self.conv1 = Conv(1, 8, seed, name="conv1")
        self.conv2 = Conv(8, 16, seed + 1, name="conv2")
        self.out = Dense(2 * 2 * 16, 10, seed + 2, name="out")

    def __call__(self, x):
        h = self.conv2(self.conv1(x))
        return self.out(ek.reshape(h, [-1, 2 * 2 * 16]))

    @function(input_signature=[TensorSpec([None, 8, 8, 1])])
    def predict(self, x):
        return ek.argmax(self(x), axis=1)


SIGNATURE = [TensorSpec([None, 8, 8, 1]), TensorSpec([None], ek.int32)]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epochs", type=int, default=30)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--quick", action="store_true", help="a short run (used by the tests)")
    args = ap.parse_args(argv)
    epochs = 4 if args.quick else args.epochs
    (x_train, y_train), (x_test, y_test) = load_data()
    x_train, x_test = x_train.reshape(-1, 8, 8, 1), x_test.reshape(-1, 8, 8, 1)
    print(f"UCI digits: {len(x_train)} training and {len(x_test)} test images of 8x8 pixels")

    _, acc = train_and_report(CNN, SIGNATURE, (x_train, y_train), (x_test, y_test), epochs, args.batch,
                              args.quick)
    return 0 if acc > (0.85 if args.quick else 0.95) else 1


if __name__ == "__main__":
    sys.exit(main())
