"""Readers in other threads never see a variable update half done, eagerly, under `@function`, in a Session.

Writers `assign_add` ones into a 200,000-element variable while readers check
that every read is all-equal (eager/variable_storage.py: updates write in
place when nothing else holds the array; reads take the variable's lock).
With an unlocked read these tests fail; with the lock, no increment is lost.
"""
import sys
import threading

import numpy as np
import pytest

import eager as ek
import graph_runtime as gr
from eager import variable_storage
from tracing import function


@pytest.fixture(autouse=True)
def inplace_on():
    old = variable_storage.set_inplace(True)
    yield
    variable_storage.set_inplace(old)


SIZE, WRITES = 200_000, 60


@pytest.fixture
def fast_thread_switching():
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(old)


def _race(update, read, writers=2, readers=2):
    """Run `update` WRITES times in each writer thread while readers check every read is all-equal."""
    errors, torn, done = [], [], threading.Event()

    def write():
        try:
            for _ in range(WRITES):
                update()
        except BaseException as e:      # pragma: no cover - surfaced below
            errors.append(e)

    def check():
        try:
            while not done.is_set():
                a = read()
                if a.min() != a.max():
                    torn.append((a.min(), a.max()))
        except BaseException as e:      # pragma: no cover - surfaced below
            errors.append(e)

    rs = [threading.Thread(target=check) for _ in range(readers)]
    ws = [threading.Thread(target=write) for _ in range(writers)]
    for t in rs + ws:
        t.start()
    for t in ws:
        t.join()
    done.set()
    for t in rs:
        t.join()
    assert not errors, errors
    assert not torn, f"{len(torn)} reads saw an update half done, e.g. {torn[:3]}"
    return writers * WRITES


def test_eager_readers_never_see_a_half_done_update(fast_thread_switching):
    v = ek.Variable(np.zeros(SIZE))
    ones = np.ones(SIZE)
    n = _race(lambda: v.assign_add(ones), v.numpy)
    np.testing.assert_array_equal(v.numpy(), np.full(SIZE, float(n)))


def test_function_readers_never_see_a_half_done_update(fast_thread_switching):
    v = ek.Variable(np.zeros(SIZE))
    ones = ek.constant(np.ones(SIZE))

    @function
    def inc():
        v.assign_add(ones)

    @function
    def read():
        return v.read_value() * 1.0

    inc()
    read()
    v.assign(np.zeros(SIZE))
    n = _race(inc, lambda: read().numpy())
    np.testing.assert_array_equal(v.numpy(), np.full(SIZE, float(n)))


def test_session_readers_never_see_a_half_done_update(fast_thread_switching):
    g = gr.Graph()
    with g.as_default():
        v = ek.Variable(np.zeros(SIZE))
        inc = v.assign_add(np.ones(SIZE), read_value=False)
        read = v.read_value() + 0.0
        init = gr.global_variables_initializer()
    sess = gr.Session(graph=g)
    sess.run(init)
    n = _race(lambda: sess.run(inc), lambda: sess.run(read))
    np.testing.assert_array_equal(sess.run(v), np.full(SIZE, float(n)))
