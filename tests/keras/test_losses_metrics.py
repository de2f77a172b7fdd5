"""Losses and metrics against NumPy references; metrics stateful eagerly and inside @function."""
import numpy as np
import pytest

import eager as ek
from eager.keras import losses, metrics
from tracing import function

RNG = np.random.default_rng(1)
EPS = 1e-7


def close(a, b, tol=1e-5):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=tol, atol=tol)


def softmax(z):
    e = np.exp(z - z.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


Y = RNG.normal(size=(6, 4)).astype(np.float32)
P = RNG.normal(size=(6, 4)).astype(np.float32)
LOGITS = RNG.normal(size=(6, 5)).astype(np.float32)
LABELS = RNG.integers(0, 5, size=6).astype(np.int32)
ONE_HOT = np.eye(5, dtype=np.float32)[LABELS]
BIN_TRUE = RNG.integers(0, 2, size=(6, 3)).astype(np.float32)
BIN_PROB = RNG.uniform(size=(6, 3)).astype(np.float32)


def huber_ref(y, p, d=1.0):
    e = np.abs(p - y)
    return np.where(e <= d, 0.5 * e ** 2, d * e - 0.5 * d ** 2).mean(-1)


def bce_ref(y, p):
    p = np.clip(p, EPS, 1 - EPS)
    return -(y * np.log(p) + (1 - y) * np.log(1 - p)).mean(-1)


CASES = [
    ("mse", losses.MeanSquaredError(), Y, P, ((P - Y) ** 2).mean(-1)),
    ("mae", losses.MeanAbsoluteError(), Y, P, np.abs(P - Y).mean(-1)),
    ("huber", losses.Huber(), Y, P, huber_ref(Y, P)),
    ("sparse_categorical_crossentropy", losses.SparseCategoricalCrossentropy(from_logits=True), LABELS, LOGITS,
     -np.log(softmax(LOGITS)[np.arange(6), LABELS])),
    ("categorical_crossentropy", losses.CategoricalCrossentropy(from_logits=True), ONE_HOT, LOGITS,
     -(ONE_HOT * np.log(softmax(LOGITS))).sum(-1)),
    ("binary_crossentropy", losses.BinaryCrossentropy(), BIN_TRUE, BIN_PROB, bce_ref(BIN_TRUE, BIN_PROB)),
]


@pytest.mark.parametrize("name,loss,y_true,y_pred,per_sample", CASES, ids=[c[0] for c in CASES])
def test_loss_matches_numpy_by_object_and_by_name(name, loss, y_true, y_pred, per_sample):
    close(loss(y_true, y_pred), per_sample.mean())
    traced = function(lambda a, b: loss(a, b))(ek.constant(y_true), ek.constant(y_pred))
    close(traced, per_sample.mean())
    w = np.linspace(0, 1, 6).astype(np.float32)
    close(loss(y_true, y_pred, sample_weight=w), (per_sample * w).sum() / 6)
    if "crossentropy" not in name:
        close(losses.get(name)(y_true, y_pred), per_sample.mean())
    none = type(loss)() if name in ("mse", "mae", "huber") else None
    if none is not None:
        none.reduction = "none"
        close(none(y_true, y_pred), per_sample)


def test_crossentropy_on_probabilities_clips_like_keras():
    probs = softmax(LOGITS)
    probs[0] = [1.0, 0, 0, 0, 0]
    ref = -np.log(np.clip(probs, EPS, 1 - EPS))
    ref = ref[np.arange(6), LABELS] + np.log(np.clip(probs, EPS, 1 - EPS).sum(-1))   # TF: log(clip p) as logits
    close(losses.get("sparse_categorical_crossentropy")(LABELS, probs), ref.mean())
    close(losses.CategoricalCrossentropy()(ONE_HOT, probs),
          -(ONE_HOT * np.log(np.clip(probs, EPS, 1 - EPS))).sum(-1).mean())
    close(losses.BinaryCrossentropy(from_logits=True)(BIN_TRUE, LOGITS[:, :3]),
          bce_ref(BIN_TRUE, 1 / (1 + np.exp(-LOGITS[:, :3]))).mean(), 1e-4)


def test_unknown_loss_name_is_an_error():
    with pytest.raises(ValueError, match="unknown loss"):
        losses.get("mean_squared_errr")


def test_mean_and_sum_are_stateful_and_reset():
    m = metrics.Mean()
    m.update_state([1.0, 2.0, 3.0])
    m.update_state(np.float32(10.0))
    close(m.result(), 4.0)
    m.update_state([2.0], sample_weight=[2.0])
    close(m.result(), 20 / 6)
    m.reset_state()
    close(m.result(), 0.0)
    s = metrics.Sum()
    s.update_state([1.0, 2.0])
    close(s(np.array([3.0], np.float32)), 6.0)
    assert [v.name for v in m.variables] == ["total", "count"]


def test_metrics_accumulate_inside_function():
    acc = metrics.SparseCategoricalAccuracy()

    @function
    def step(y, logits):
        acc.update_state(y, logits)
        return acc.result()
    pred = LOGITS.argmax(-1)
    step(ek.constant(LABELS), ek.constant(LOGITS))
    out = step(ek.constant(LABELS[:3]), ek.constant(LOGITS[:3]))
    expected = np.r_[pred == LABELS, pred[:3] == LABELS[:3]].mean()
    close(out, expected)
    close(acc.result(), expected)
    acc.reset_state()
    close(acc.result(), 0.0)


def test_accuracy_family():
    close(metrics.Accuracy()([1, 2, 3, 4], [1, 2, 0, 4]), 0.75)
    close(metrics.CategoricalAccuracy()(ONE_HOT, LOGITS), (LOGITS.argmax(-1) == LABELS).mean())
    close(metrics.SparseCategoricalAccuracy()(LABELS[:, None], LOGITS), (LOGITS.argmax(-1) == LABELS).mean())
    close(metrics.BinaryAccuracy()(BIN_TRUE, BIN_PROB), ((BIN_PROB > 0.5) == BIN_TRUE).mean())
    close(metrics.get("mse")(Y, P), ((P - Y) ** 2).mean())
    close(metrics.get("mae")(Y, P), np.abs(P - Y).mean())


def confusion_ref(y, p, t):
    pos, lab = p > t, y > 0.5
    return (pos & lab).sum(), (pos & ~lab).sum(), (~pos & ~lab).sum(), (~pos & lab).sum()


def test_precision_and_recall():
    y = RNG.integers(0, 2, 50).astype(np.float32)
    p = RNG.uniform(size=50).astype(np.float32)
    tp, fp, tn, fn = confusion_ref(y, p, 0.5)
    close(metrics.Precision()(y, p), tp / (tp + fp))
    close(metrics.Recall()(y, p), tp / (tp + fn))
    tp7, fp7, _, fn7 = confusion_ref(y, p, 0.7)
    close(metrics.Precision(thresholds=[0.5, 0.7])(y, p), [tp / (tp + fp), tp7 / (tp7 + fp7)])
    close(metrics.Recall(thresholds=0.7)(y, p), tp7 / (tp7 + fn7))
    close(metrics.Precision()([0.0, 0.0], [0.1, 0.2]), 0.0)       # no predicted positives: 0, not NaN


def auc_ref(y, p, n=200):
    thresholds = [-1e-7] + [(i + 1) / (n - 1) for i in range(n - 2)] + [1 + 1e-7]
    c = np.array([confusion_ref(y, p, t) for t in thresholds], np.float64)
    tp, fp, tn, fn = c.T
    tpr, fpr = tp / (tp + fn), fp / (fp + tn)
    return np.sum((fpr[:-1] - fpr[1:]) * (tpr[:-1] + tpr[1:]) / 2)


def exact_auc(y, p):
    pos, neg = p[y > 0.5], p[y <= 0.5]
    return np.mean([(a > b) + 0.5 * (a == b) for a in pos for b in neg])


def test_auc_roc_matches_numpy_and_the_exact_area():
    y = RNG.integers(0, 2, 300).astype(np.float32)
    p = np.clip(0.3 * y + RNG.uniform(size=300) * 0.7, 0, 1).astype(np.float32)
    auc = metrics.AUC()
    auc.update_state(y[:150], p[:150])
    function(lambda a, b: auc.update_state(a, b))(ek.constant(y[150:]), ek.constant(p[150:]))
    close(auc.result(), auc_ref(y, p), 1e-5)
    assert abs(float(auc.result()) - exact_auc(y, p)) < 5e-3
    thresholds = [-1e-7] + [(i + 1) / 199 for i in range(198)] + [1 + 1e-7]
    tp, fp, _, fn = np.array([confusion_ref(y, p, t) for t in thresholds], np.float64).T
    precision = np.where(tp + fp > 0, tp / np.maximum(tp + fp, 1), 0)
    recall = tp / (tp + fn)
    for method, height in (("minoring", np.minimum), ("majoring", np.maximum)):
        ref = np.sum((recall[:-1] - recall[1:]) * height(precision[:-1], precision[1:]))
        close(metrics.AUC(curve="PR", summation_method=method)(y, p), ref, 1e-5)
    order = np.argsort(-p)                                 # the exact PR curve, every distinct threshold
    hits = np.cumsum(y[order])
    exact = np.sum(np.diff(np.r_[0, hits / y.sum()]) * hits / np.arange(1, len(y) + 1))   # average precision
    assert abs(float(metrics.AUC(curve="PR")(y, p)) - exact) < 0.02


def test_metric_names_and_errors():
    assert metrics.get("accuracy").name == "accuracy" and metrics.AUC().name == "auc"
    with pytest.raises(ValueError, match="unknown metric"):
        metrics.get("acuracy")
