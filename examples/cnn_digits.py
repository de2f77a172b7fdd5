"""Train a small CNN on the UCI handwritten digits (8x8 images, 10 classes), Keras-style.

The data ships with scikit-learn (`pip install 'graphjit[examples]'`); loading, training and
the speed measurement are shared with examples/mlp_digits.py.  The model is an
`eager.keras.Sequential`: Conv2D 3x3 -> 8 SAME + relu, max-pool 2x2; Conv2D 3x3 -> 16 SAME +
relu, max-pool 2x2; Flatten; Dense 10 (kernels HWIO, as Keras's).  `compile` + `fit` train it
with Adam; the train step is one compiled `@function`, traced once.  The example reports test
accuracy and training steps per second with `run_eagerly=True` versus compiled.

Run:  python examples/cnn_digits.py [--epochs 30] [--quick]
"""
from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # run from a checkout
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from eager import keras  # noqa: E402
from mlp_digits import fit_and_report, load_data  # noqa: E402


def cnn():
    L = keras.layers
    return keras.Sequential([keras.Input((8, 8, 1)),
                             L.Conv2D(8, 3, padding="same", activation="relu"), L.MaxPooling2D(2),
                             L.Conv2D(16, 3, padding="same", activation="relu"), L.MaxPooling2D(2),
                             L.Flatten(), L.Dense(10)], name="cnn")


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
    _, acc = fit_and_report(cnn, (x_train, y_train), (x_test, y_test), epochs, args.batch, args.quick)
    return 0 if acc > (0.85 if args.quick else 0.95) else 1


if __name__ == "__main__":
    sys.exit(main())
