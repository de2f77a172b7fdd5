"""bench_summary's interleaving: the order of the two batches turns every round, and each round's ratio
pairs the candidate's batch with the baseline's batch of that same round."""
from benchmarks import bench_summary


def test_interleaved_turns_the_order_and_pairs_each_round():
    calls = []
    clock = [0.0]
    cost = {"cand": 3.0, "base": 2.0}

    def tick(name):
        calls.append(name)
        clock[0] += cost[name]

    bench_summary.CLOCK[0], saved = (lambda: clock[0]), bench_summary.CLOCK[0]
    try:
        tc, tb, ratio, lo, hi, best = bench_summary.interleaved(lambda: tick("cand"), lambda: tick("base"),
                                                              rounds=4, min_time=1.0)
    finally:
        bench_summary.CLOCK[0] = saved
    # warm-up (one each), one calibration call of the baseline, then four rounds of one call each
    assert calls[3:] == ["base", "cand", "cand", "base", "base", "cand", "cand", "base"]
    assert (tc, tb) == (3.0, 2.0) and ratio == lo == hi == best == 1.5
