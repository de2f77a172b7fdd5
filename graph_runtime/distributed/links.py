"""Direct links: a step's messages over sockets between the driver and the tasks, not Ray actor calls.

A step by actor calls costs a Ray task submission per message: the driver's
call to every task, each task-to-task send (`deliver`) and every reply.  A
data-parallel step is four such messages in a row (driver -> ps -> workers
-> ps -> driver), about nine Ray round trips on a busy 2-core machine.  Over
a direct link a message is one write to a connected socket and one read by
a thread that waits for it (no polling).

- `TaskLinks` (in each task, worker.py): a listener on the task's node
  (`open`), the driver's and the peers' connections to it, each served by
  its own thread, and the task's own connections to its peers (`connect`).
  A served connection receives `("run", reg, step, feeds, timeout_s,
  trace)` (the task runs it and answers `("result", step, record)` on the
  same connection) or `("deliver", step, items)` (into the task's mailbox);
  `send` carries a `_Send`'s values to a peer.
- `DriverLinks` (the master, master.py): opens the links on a session's
  first step (every task gets a listener and connects to its peers; the
  driver connects to every task), then sends each step's `run` messages and
  waits for the results on the connections.  Errors, aborts, deadlines and
  dead tasks follow the steps by actor calls (master.py): a failing task
  aborts its peers itself; past the deadline the master aborts the step,
  pings the tasks that did not answer (busy is not dead) and raises; a
  connection that breaks is a task that died (or, if it still answers a
  ping, a link that broke: the session's steps then go by actor calls).

Steps go by actor calls instead when links are off (`use_direct_links(False)`
before making the session), through the Ray Client (`ray://HOST:PORT`: the
driver may not reach the tasks), while another thread's step holds the
links, or when a fed value is not plain data (wire.py);
`RayRuntime.step_routes()` says which route each (fetches, feeds) took last.

Messages are wire.py bytes (no pickles); a connection is accepted only from
a process that knows the session's random key (multiprocessing's HMAC
challenge), which travels to the tasks through Ray.

Imports `eager.errors` and wire.py (the master passes it Ray's module and the task actors).
"""
from __future__ import annotations

import secrets
import socket
import threading
import time
from multiprocessing.connection import AuthenticationError, Client, Listener

from eager import errors as _errors

from . import wire

_enabled = True


def use_direct_links(enabled: bool) -> None:
    """Whether the sessions made from now on (in this process) send their steps over direct links."""
    global _enabled
    if not isinstance(enabled, bool):
        raise ValueError(f"use_direct_links: expected True or False, got {enabled!r}")
    _enabled = enabled


def links_enabled() -> bool:
    return _enabled


# -- the task's side ---------------------------------------------------------------------------------------
class TaskLinks:
    """A task's listener, served connections and connections to its peers (module docstring)."""

    def __init__(self, server):
        self._server = server         # the TaskServer: deliver(step, items), run(reg, step, feeds, timeout, trace)
        self._listener = None
        self._served: list = []
        self._peers: dict = {}        # task name -> (Connection, Lock)
        self._lock = threading.Lock()

    def open(self, authkey: bytes, host: str) -> tuple:
        """Listen on `host` (this task's node) for connections that know `authkey`; -> the address."""
        self.close()
        listener = Listener((host, 0), authkey=authkey)
        with self._lock:
            self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True, name="graphjit-link-accept").start()
        return listener.address

    def connect(self, addresses: dict, authkey: bytes) -> None:
        """Connect to the peers listening at `addresses` (task name -> address)."""
        peers = {name: (_connect(addr, authkey), threading.Lock()) for name, addr in addresses.items()}
        with self._lock:
            self._peers = peers

    def send(self, task: str, step: int, items) -> bool:
        """Send `items` of `step` to `task` over its link; False: no link to it, or values a link does not
        carry (the caller sends them by an actor call)."""
        link = self._peers.get(task)
        if link is None:
            return False
        try:
            data = wire.encode(("deliver", step, items))
        except wire.Unencodable:
            return False
        try:
            with link[1]:
                link[0].send_bytes(data)
        except OSError as e:
            raise _errors.UnavailableError(f"the link to task {task} broke: {e}", op_name="_Send") from None
        return True

    def close(self) -> None:
        with self._lock:
            listener, self._listener = self._listener, None
            conns = self._served + [c for c, _ in self._peers.values()]
            self._served, self._peers = [], {}
        for c in ([listener] if listener is not None else []) + conns:
            try:
                c.close()
            except OSError:
                pass

    def _accept(self, listener) -> None:
        while True:
            try:
                conn = listener.accept()
            except AuthenticationError:
                continue                  # a caller without the session's key
            except OSError:
                return                    # closed
            _no_delay(conn)
            with self._lock:
                if self._listener is not listener:
                    conn.close()
                    return
                self._served.append(conn)
            threading.Thread(target=self._serve, args=(conn,), daemon=True, name="graphjit-link").start()

    def _serve(self, conn) -> None:
        while True:
            try:
                msg = wire.decode(conn.recv_bytes())
                if msg[0] == "deliver":
                    self._server.deliver(msg[1], msg[2])
                elif msg[0] == "run":
                    _, reg, step, feeds, timeout_s, trace = msg
                    conn.send_bytes(_result_bytes(step, self._run(reg, step, feeds, timeout_s, trace)))
                else:
                    raise ValueError(f"direct link: unknown message {msg[0]!r}")
            except (EOFError, OSError, ValueError, TypeError):
                conn.close()              # closed, or a malformed message: the connection ends
                return


    def _run(self, reg, step, feeds, timeout_s, trace) -> tuple:
        try:
            return self._server.run(reg, step, feeds, timeout_s, trace)
        except Exception as e:        # noqa: BLE001 - the driver waits for an answer: it gets the error
            return ("error", type(e).__name__, f"{type(e).__name__}: {e}", None)


def _result_bytes(step: int, record: tuple) -> bytes:
    try:
        return wire.encode(("result", step, record))
    except wire.Unencodable as e:
        return wire.encode(("result", step, ("error", "UnimplementedError", f"a fetched value cannot travel back "
                                             f"over a direct link ({e}); make the session after "
                                             f"use_direct_links(False)", None)))


# -- the driver's side -------------------------------------------------------------------------------------
class DriverLinks:
    """The master's connections to its tasks and the step protocol over them (module docstring)."""

    _GRACE_S = 1.0                # the master waits this much longer than the tasks' own deadline

    def __init__(self, runtime, target: str, ray, actors: dict, dead: dict):
        self._runtime = runtime
        self._ray, self._actors, self._dead = ray, actors, dead    # the runtime's (recovery updates them in place)
        self.conns: dict = {}         # task name -> Connection (the runtime's finalizer closes them)
        self._lock = threading.Lock()
        where = target.split("://", 1)[-1]
        self._state = (None if _enabled and where in ("local", "auto") else
                       "direct links are off (use_direct_links(False))" if not _enabled else
                       "through the Ray Client the driver may not reach the tasks")   # None: open on first use

    def results(self, runner, step: int, vals: list, timeout_s: float, trace: bool):
        """Every part's result record of `step` over the links; None: send it by actor calls (`runner.note`
        says why)."""
        if self._state not in (None, "open"):
            runner.note = self._state
            return None
        if not self._lock.acquire(blocking=False):
            runner.note = "another thread's step was using the direct links"
            return None
        try:
            if self._state is None:
                try:
                    self._open()
                except Exception as e:      # noqa: BLE001 - the steps still run, by actor calls
                    self.close()
                    self._state = f"opening the direct links failed ({type(e).__name__}: {e})"
                    runner.note = self._state
                    return None
            try:
                messages = [wire.encode(("run", p.reg, step, [vals[i] for i in p.feed_index], timeout_s, trace))
                            for p in runner.parts]
            except wire.Unencodable as e:
                runner.note = f"a fed value is not plain data ({e})"
                return None
            runner.note = "direct links"
            for p, m in zip(runner.parts, messages):
                self._call(p.task, lambda c: c.send_bytes(m))
            return self._collect(runner, step, timeout_s)
        finally:
            self._lock.release()

    def _open(self) -> None:
        ray, actors = self._ray, self._actors
        authkey = secrets.token_bytes(32)
        timeout = self._runtime.config.operation_timeout_in_ms / 1000
        addresses = dict(zip(actors, ray.get([a.open_links.remote(authkey) for a in actors.values()],
                                             timeout=timeout)))
        ray.get([a.connect_links.remote({n: addr for n, addr in addresses.items() if n != name}, authkey)
                 for name, a in actors.items()], timeout=timeout)
        self.conns.update({name: _connect(addr, authkey) for name, addr in addresses.items()})
        self._state = "open"

    def _call(self, task: str, fn):
        try:
            return fn(self.conns[task])
        except (EOFError, OSError) as e:
            raise self._broken(task, e) from None

    def _collect(self, runner, step: int, timeout_s: float) -> list:
        end = time.monotonic() + timeout_s + self._GRACE_S
        results, errors = [], []
        for k, p in enumerate(runner.parts):
            record = self._receive(p.task, step, end)
            if record is None:
                late = [q.task for q in runner.parts[k:]]
                errors.append(_errors.DeadlineExceededError(
                    f"step {step} did not finish within {timeout_s:.3g} s on tasks {sorted(late)}"))
                self._runtime.abort_step(step, runner, str(errors[-1]))
                self._runtime.check_health(late)      # busy is not dead
                break
            if record[0] != "ok":
                errors.append(self._runtime.rebuild_error(p.task, record))
                if len(errors) == 1:
                    self._runtime.abort_step(step, runner, f"{p.task} failed: {errors[0]}")
            results.append(record)
        if errors:      # the failing op's own error wins over the aborts it caused on its peers
            raise next((e for e in errors if not isinstance(e, _errors.AbortedError)), errors[0])
        return results

    def _receive(self, task: str, step: int, end: float):
        """`task`'s result record of `step` (results of earlier steps that failed are skipped); None at `end`."""
        while True:
            left = end - time.monotonic()
            if left <= 0 or not self._call(task, lambda c: c.poll(left)):
                return None
            try:
                msg = wire.decode(self._call(task, lambda c: c.recv_bytes()))
            except ValueError as e:
                raise self._broken(task, e) from None
            if msg[0] == "result" and msg[1] == step:
                return msg[2]

    def _broken(self, task: str, e: BaseException) -> BaseException:
        """A connection that broke: the task died (it does not answer a ping) or the link did."""
        self.close()
        self._runtime.check_health([task])
        why = self._dead.get(task)
        if why is not None:
            self._state = None            # the next step, after recovery, opens new links
            return _errors.UnavailableError(f"task {task} is unavailable: its actor died ({why})")
        self._state = f"the direct link to task {task} broke ({type(e).__name__}: {e})"
        return _errors.UnavailableError(f"step failed: {self._state}")

    def reset(self) -> None:
        """Forget the links (tasks restarted): the next step opens new ones."""
        self.close()
        if self._state == "open":
            self._state = None

    def close(self) -> None:
        close_all(self.conns)


def fetch_label(request) -> str:
    """The names of a request's fetches and targets (how step_routes names a (fetches, feeds))."""
    return ", ".join([r.tensor.name if r.kind == "value" else getattr(r.var, "name", "a variable")
                      for r in request.returns if r.kind != "none"] + [o.name for o in request.targets])


def _connect(address, authkey: bytes):
    conn = Client(tuple(address), authkey=authkey)
    _no_delay(conn)
    return conn


def _no_delay(conn) -> None:
    """Send each message at once: a message over 16 KB is written in two parts (header, body), and with
    Nagle's algorithm the second waits for the peer's delayed ACK of the first (40 ms)."""
    sock = socket.fromfd(conn.fileno(), socket.AF_INET, socket.SOCK_STREAM)    # a duplicate descriptor
    try:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    finally:
        sock.close()


def close_all(conns: dict) -> None:
    """Close and drop every connection of `conns` (the runtime's finalizer holds the dict too)."""
    for conn in list(conns.values()):
        try:
            conn.close()
        except OSError:
            pass
    conns.clear()
