"""benchmarks/cnn_kernels.py profiles every op of the CNN step in each setting and clock it names."""
from benchmarks import cnn_kernels


def test_the_profile_times_every_op_of_the_step_in_every_setting_and_clock():
    ops, steps, numpy_times = cnn_kernels.profile(rounds=2, batch=2, hw=8)
    assert set(ops) == {(s, c) for s in cnn_kernels.SETTINGS for c in cnn_kernels.CLOCKS}
    for per_op in ops.values():
        types = {label.split()[0] for label in per_op}
        assert {"Conv2D", "Conv2DBackpropInput", "Conv2DBackpropFilter"} <= types
        assert all(len(times) == 2 and min(times) >= 0 for times in per_op.values())
    # a plain step timed before each profiled run: one per round and clock in each setting
    assert all(len(v) == 2 * len(cnn_kernels.CLOCKS) for v in steps.values())
    assert len(numpy_times) == 2 * len(cnn_kernels.CLOCKS)
    text = cnn_kernels.report(ops, steps, numpy_times, min_us=0.0)
    assert "Conv2DBackpropFilter" in text and "sum of all ops" in text and "median us of 2 rounds" in text
