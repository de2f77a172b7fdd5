"""The A/B scripts refuse a round count their spread cannot be computed from, before running anything (one
round used to run the whole A/B and then fail in statistics.quantiles)."""
import pytest

from benchmarks import ab_cnn, ab_eager, cnn_kernels


@pytest.mark.parametrize("main, extra", [(ab_cnn.main, []), (ab_eager.main, ["--rev", "HEAD"]), (cnn_kernels.main, [])])
def test_fewer_than_two_rounds_is_refused_up_front(main, extra, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(extra + ["--rounds", "1"])
    assert exit_.value.code == 2
    assert "--rounds 1: at least 2" in capsys.readouterr().err
