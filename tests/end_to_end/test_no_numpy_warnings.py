"""NaN and inf are values: no mode makes NumPy warn (eager/fp_semantics.py).

A `log(0)`, `0/0`, overflow program runs with every warning turned into an
error: eagerly, converted, under `@function` (fused with numexpr or NumPy,
unfused, chunked with threads), in a Session (plain, with inter-op threads,
traced), inside a while loop and under a gradient tape; and under the user's
`np.errstate(all="raise")`, with the same values in every mode.  NumPy's own
settings are left as they were for the user's code.
"""
import warnings

import numpy as np
import pytest

import autograph
import eager as ek
import graph_runtime as gr
from graph_runtime import fusion
from tracing import function


def program(x):
    zero = x * 0.0
    return ek.log(zero) + zero / zero, ek.exp(x * 100.0) - ek.exp(x * 100.0), ek.sqrt(-ek.abs(x) - 1.0)


def looping(x):
    i = ek.constant(0)
    while i < 3:
        x = ek.log(x - x) / (x - x)
        i += 1
    return x


X = np.array([0.0, 1.0, 2.0, 1e30], np.float32)
BIG = np.tile(X, 1 << 18)          # 1M elements: the chunked fused kernel, split across threads


def _session(fn, x, **run_opts):
    g = gr.Graph()
    with g.as_default():
        p = gr.placeholder(ek.float32, x.shape)
        out = autograph.to_graph(fn)(p)
    config = gr.SessionConfig(inter_op_parallelism_threads=run_opts.pop("threads", 1))
    with gr.Session(graph=g, config=config) as s:
        return s.run(out, {p: x}, **run_opts)


def _two_devices(fn, x, both_ways: bool):
    """`fn` on CPU:1 of a 2-device Session; `both_ways`: its result crosses back to CPU:1, so the partitions
    must run together on the device threads (otherwise the small step runs them inline)."""
    g = gr.Graph()
    with g.as_default():
        p = gr.placeholder(ek.float32, x.shape)
        with g.device("/cpu:0"):
            q = p * 2.0
        with g.device("/cpu:1"):
            out = autograph.to_graph(fn)(q)
        with g.device("/cpu:0"):
            out = ek.nest.map_structure(lambda t: t * 0.5, out)
        if both_ways:
            with g.device("/cpu:1"):
                out = ek.nest.map_structure(lambda t: t * 3.0, out)
    with gr.Session(graph=g, config=gr.SessionConfig(device_count={"CPU": 2})) as s:
        return s.run(out, {p: x})


def _traced(fn, x, **opts):
    f = function(fn)
    with fusion.options(**opts):
        return f(ek.constant(x))


def _taped(x):
    t = ek.constant(x)
    with ek.GradientTape() as tape:
        tape.watch(t)
        y = ek.reduce_sum(ek.log(t * 0.0) * t)
    return tape.gradient(y, t)


MODES = {
    "eager": lambda fn, x: fn(ek.constant(x)),
    "converted": lambda fn, x: autograph.to_graph(fn)(ek.constant(x)),
    "function": _traced,
    "function unfused": lambda fn, x: _traced(fn, x, enabled=False),
    "function fused numpy": lambda fn, x: _traced(fn, x, numexpr=False),
    "function chunked threads": lambda fn, x: _traced(fn, BIG, force="chunked", threads=2, chunk_bytes=4096),
    "session": _session,
    "session inter-op threads": lambda fn, x: _session(fn, x, threads=2),
    "session two devices inline": lambda fn, x: _two_devices(fn, x, both_ways=False),
    "session two devices threads": lambda fn, x: _two_devices(fn, x, both_ways=True),
    "session traced": lambda fn, x: _session(fn, x, options=gr.RunOptions(trace_level=1),
                                             run_metadata=gr.RunMetadata()),
}


@pytest.mark.parametrize("fn", [program, looping], ids=["log0-div0-overflow", "while-loop"])
@pytest.mark.parametrize("mode", sorted(MODES))
def test_no_warnings_in_any_mode(mode, fn):
    before = np.geterr()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = MODES[mode](fn, X)
    assert np.geterr() == before
    first = np.asarray(ek.nest.flatten(out)[0])
    assert np.isnan(first).any() or np.isinf(first).any()


@pytest.mark.parametrize("fn", [program, looping], ids=["log0-div0-overflow", "while-loop"])
@pytest.mark.parametrize("mode", sorted(MODES))
def test_same_values_in_every_mode_under_errstate_raise(mode, fn):
    # np.errstate(all="raise") makes NumPy raise FloatingPointError: eager ops raised it while graph modes
    # gave the IEEE values; every mode gives the values now, and the user's own NumPy still raises
    expected = [np.asarray(t) for t in ek.nest.flatten(MODES[mode](fn, X))]
    with np.errstate(all="raise"):
        out = [np.asarray(t) for t in ek.nest.flatten(MODES[mode](fn, X))]
        with pytest.raises(FloatingPointError):
            np.log(np.zeros(2))
    for got, want in zip(out, expected):
        np.testing.assert_array_equal(got, want)
    assert any(np.isnan(g).any() or np.isinf(g).any() for g in out)


def test_no_warnings_under_a_tape_and_user_numpy_still_warns():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        g = _taped(X)
    assert np.isnan(g.numpy()).any() or np.isinf(g.numpy()).any()
    with pytest.warns(RuntimeWarning):           # graphjit did not change NumPy's settings for the user's code
        np.log(np.zeros(2))


def test_generated_code_never_shows_in_warnings():
    # Python's default filters (show once per location), as a user's script or pytest has them
    with warnings.catch_warnings(record=True) as caught:
        for mode in sorted(MODES):
            MODES[mode](program, X)
    assert not [w for w in caught if issubclass(w.category, RuntimeWarning)], [str(w) for w in caught]


@pytest.mark.parametrize("displace", ["always", "reset"])
def test_kernel_filter_survives_new_filters_and_reset(displace):
    # a filter added later ("always"), or none left at all: the dispatch point and each plan put it back
    with warnings.catch_warnings(record=True) as caught:
        if displace == "always":
            warnings.simplefilter("always")
        else:
            warnings.resetwarnings()
        for mode in sorted(MODES):
            MODES[mode](program, X)
        np.log(np.zeros(1))                       # the user's own NumPy call is still shown
    assert [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)] == [
        "divide by zero encountered in log"]


def test_side_effects_run_once_when_warnings_are_errors():
    calls = ek.Variable(0.0)
    big = ek.Variable(np.float32(3e38))

    @function
    def f(x):
        calls.assign_add(1.0)
        big.assign_add(np.float32(3e38))        # overflows inside the write kernel
        return ek.log(x * 0.0)

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = f(ek.constant(X))
        big.assign_add(np.float32(3e38))         # eagerly too
    assert np.isinf(out.numpy()).all()
    assert float(calls.numpy()) == 1.0           # a plan with side effects is never run twice
    assert np.isposinf(big.numpy())


def test_errors_that_are_not_numpy_warnings_still_raise():
    @function
    def f(x):
        return ek.reshape(x, [3])

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ek.errors.InvalidArgumentError):
            f(ek.constant(X))


BIG_VALUES = np.full(4, 3e38, np.float32)


def _sum(x):
    return ek.reduce_sum(x)


def _prod(x):
    return ek.reduce_prod(x)


def _mean_f16(x):
    return ek.reduce_mean(ek.cast(x, ek.float16) * 1e4)


def _cumsum(x):
    return ek.math.cumsum(x)


def _cumprod(x):
    return ek.math.cumprod(x)


def _l2_loss(x):
    return ek.nn.l2_loss(x)


def _einsum(x):
    return ek.einsum("i,i->", x, x)


REDUCTIONS = {f.__name__: f for f in (_sum, _prod, _mean_f16, _cumsum, _cumprod, _l2_loss, _einsum)}


@pytest.mark.parametrize("mode", ["eager", "function"])
@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_reductions_and_accumulations_are_quiet(name, mode):
    # NumPy attributes a warning to the frame that called the ufunc: kernels must not go through NumPy's
    # Python wrappers (np.sum, ndarray.prod, ...), whose module is NumPy's own
    fn = REDUCTIONS[name] if mode == "eager" else function(REDUCTIONS[name])
    with warnings.catch_warnings(record=True) as caught:
        out = fn(ek.constant(BIG_VALUES))
    assert not [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
    assert not np.isfinite(np.asarray(out.numpy(), np.float64)).all()


def test_only_graphjit_kernels_are_quiet(tmp_path, monkeypatch):
    # the user's own NumPy calls and another library's still warn: the filter is by module
    (tmp_path / "otherlib.py").write_text("import numpy as np\n\ndef kern(x):\n    return np.log(x * 0)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import otherlib
    with warnings.catch_warnings(record=True) as caught:
        otherlib.kern(np.ones(2))
        np.sum(BIG_VALUES)
        ek.reduce_sum(ek.constant(BIG_VALUES))
    assert sorted(str(w.message) for w in caught) == ["divide by zero encountered in log",
                                                      "overflow encountered in reduce"]


def test_fp_semantics_uses_public_interfaces_only():
    import ast
    import inspect
    from eager import fp_semantics
    tree = ast.parse(inspect.getsource(fp_semantics))
    private = [f"{n.value.id}.{n.attr}" for n in ast.walk(tree)
               if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.attr.startswith("_")]
    imports = [a.name for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom)) for a in n.names]
    assert not private and all(not name.startswith("_") for name in imports)
    assert "numpy._core" not in inspect.getsource(fp_semantics)


def test_graphjit_worker_threads_start_quiet_and_no_other_thread_does():
    import threading
    from concurrent.futures import ThreadPoolExecutor

    from eager import fp_semantics
    before = np.geterr()
    with ThreadPoolExecutor(1, initializer=fp_semantics.quiet_thread) as pool:
        assert set(pool.submit(np.geterr).result().values()) == {"ignore"}
        assert pool.submit(fp_semantics.is_quiet).result()
    seen = []
    other = threading.Thread(target=lambda: seen.append(np.geterr()))
    other.start()
    other.join()
    assert np.geterr() == before and seen[0]["divide"] != "ignore"
    with pytest.warns(RuntimeWarning):
        np.log(np.zeros(2))
