"""A character-level RNN whose time loop is a Python `for` that AutoGraph turns into a While op.

The training step is one `@function`.  Inside it, `for t in ek.range(seq_len)`
iterates over a *tensor* range, so AutoGraph converts the loop into a
`while_loop` in the graph (one While op, not `seq_len` unrolled copies), and
the GradientTape differentiates through it.  The model (an embedding, a tanh
recurrence and an output layer) trains on a short embedded text and then
samples from it greedily; `--show-code` prints the converted step.

Run:  python examples/char_rnn.py [--steps 300] [--quick] [--show-code]
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # run from a checkout

import eager as ek  # noqa: E402
from tracing import TensorSpec, function  # noqa: E402

TEXT = (
    "It was the best of times, it was the worst of times, it was the age of wisdom, it was the age of "
    "foolishness, it was the epoch of belief, it was the epoch of incredulity, it was the season of Light, "
    "it was the season of Darkness, it was the spring of hope, it was the winter of despair, we had "
    "everything before us, we had nothing before us, we were all going direct to Heaven, we were all going "
    "direct the other way."
)


class CharRNN(ek.Module):
    def __init__(self, vocab, hidden=64, embed=16, seed=0):
        super().__init__()
        rng = np.random.default_rng(seed)

        def init(*shape, scale):
            return ek.Variable(ek.constant((rng.standard_normal(shape) * scale).astype(np.float32)))
        self.hidden = hidden
        self.embedding = init(vocab, embed, scale=0.1)
        self.w_xh = init(embed, hidden, scale=1 / np.sqrt(embed))
        self.w_hh = init(hidden, hidden, scale=0.5 / np.sqrt(hidden))
        self.b_h = ek.Variable(ek.zeros((hidden,)))
        self.w_hy = init(hidden, vocab, scale=1 / np.sqrt(hidden))
        self.b_y = ek.Variable(ek.zeros((vocab,)))

    def cell(self, h, chars):
        """One time step for a batch of character ids: new hidden state and next-character logits."""
        x = ek.gather(self.embedding, chars)
        h = ek.tanh(ek.matmul(x, self.w_xh) + ek.matmul(h, self.w_hh) + self.b_h)
        return h, ek.matmul(h, self.w_hy) + self.b_y


def make_train_step(model, optimizer, batch, seq_len):
    def train_step(inputs, targets):
        """inputs, targets: int32 [batch, seq_len]; targets are inputs shifted by one character."""
        with ek.GradientTape() as tape:
            h = ek.zeros((batch, model.hidden))
            loss = ek.constant(0.0)
            for t in ek.range(seq_len):          # a tensor range: AutoGraph makes this a While op
                h, logits = model.cell(h, inputs[:, t])
                loss += ek.reduce_mean(ek.nn.sparse_softmax_cross_entropy_with_logits(
                    labels=targets[:, t], logits=logits))
            loss = loss / seq_len
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss
    return train_step


def sample(model, vocab, prompt: str, length: int) -> str:
    """Greedy generation, eagerly (one character at a time)."""
    index = {c: i for i, c in enumerate(vocab)}
    h = ek.zeros((1, model.hidden))
    logits = None
    for c in prompt:
        h, logits = model.cell(h, ek.constant([index[c]]))
    out = []
    for _ in range(length):
        nxt = int(ek.argmax(logits, axis=1).numpy()[0])
        out.append(vocab[nxt])
        h, logits = model.cell(h, ek.constant([nxt]))
    return prompt + "".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--seq-len", type=int, default=24)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--quick", action="store_true", help="a short run (used by the tests)")
    ap.add_argument("--show-code", action="store_true", help="print AutoGraph's version of the train step")
    args = ap.parse_args(argv)
    steps = 15 if args.quick else args.steps
    vocab = sorted(set(TEXT))
    data = np.array([vocab.index(c) for c in TEXT], np.int32)
    model = CharRNN(len(vocab))
    optimizer = ek.optimizers.Adam(0.01)
    step_fn = make_train_step(model, optimizer, args.batch, args.seq_len)
    if args.show_code:
        from autograph import to_code
        print(to_code(step_fn))
    train_step = function(step_fn, input_signature=[TensorSpec([args.batch, args.seq_len], ek.int32)] * 2)
    rng = np.random.default_rng(0)
    print(f"text: {len(TEXT)} characters, vocabulary {len(vocab)}; sequences of {args.seq_len}, batch {args.batch}")
    start = time.perf_counter()
    first = last = None
    for step in range(1, steps + 1):
        starts = rng.integers(0, len(data) - args.seq_len - 1, args.batch)
        windows = np.stack([data[s:s + args.seq_len + 1] for s in starts])
        loss = float(train_step(ek.constant(windows[:, :-1]), ek.constant(windows[:, 1:])))
        first = loss if first is None else first
        last = loss
        if step == 1 or step % max(1, steps // 6) == 0:
            print(f"step {step:4d}  loss {loss:.3f}")
    elapsed = time.perf_counter() - start
    graph = train_step.get_concrete_function().graph
    ops = [op.type for op in graph.get_operations()]
    loops = sum(1 for o in ops if "While" in o)
    print(f"{steps} steps in {elapsed:.1f} s; the traced step has {len(ops)} top-level ops with {loops} While "
          f"op(s) for the time loop and its gradient (traced {train_step.experimental_get_tracing_count()} time)")
    print("sample:", repr(sample(model, vocab, "it was the ", 40)))
    return 0 if last < first else 1


if __name__ == "__main__":
    sys.exit(main())
