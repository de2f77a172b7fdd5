"""`Timeline(run_metadata).generate_chrome_trace_format()`: a traced run as Chrome trace JSON.

The JSON is the Trace Event Format that `chrome://tracing` and Perfetto
(ui.perfetto.dev) open: `{"traceEvents": [...], "displayTimeUnit": "ms"}`.
- One process row per device (`pid` per device string, named by a
  `process_name` metadata event, in the order devices first ran an op), with
  one thread (`tid` 0, named "ops") holding that device's ops.  Today every
  op records its device (`OpStats.device`); a one-device run has one row.
- One complete event (`"ph": "X"`) per `OpStats`: `name` is the op type (as
  TensorFlow's timeline), `ts`/`dur` in microseconds from the start of the
  run, `args` hold the op's name, type and output shapes.  Ops run inside a
  body (While iterations) keep their `outer/inner` names, one event each.
- One flow (`"ph": "s"` at the start of a `_Send`, `"ph": "f"` with
  `"bp": "e"` at the end of its `_Recv`, one `id` per pair, `cat`
  "DataFlow") per transfer between devices, matched by rendezvous key
  (`OpStats.transfer_key`), as TF's timeline draws its data-flow arrows.
  (A distributed run puts every task on the step's clock through the
  machines' wall clocks.)

Checked in a real browser once: headless Chromium (`--headless
--no-sandbox --disable-gpu ... --screenshot`) on a local HTML page that
parses the JSON of `graphjit trace` and draws each row's X events on a
canvas (chrome://tracing cannot load files headless); the screenshot showed
the device row with MatMul and the fused ops at their times.  The tests
check the format rules Perfetto's JSON importer relies on
(tests/graph_runtime/test_timeline.py).

Imports `run_config` only (the records); `json` for the output.
"""
from __future__ import annotations

import json

from .run_config import RunMetadata

__all__ = ["Timeline"]


class Timeline:
    """A view of a FULL_TRACE `RunMetadata` as a Chrome trace (see the module docstring)."""

    def __init__(self, run_metadata: RunMetadata):
        if not isinstance(run_metadata, RunMetadata):
            raise TypeError(f"Timeline needs the RunMetadata of a traced run, got {type(run_metadata).__name__}")
        if not run_metadata.step_stats:
            raise ValueError("Timeline: the RunMetadata holds no step stats; run with "
                             "options=RunOptions(trace_level=RunOptions.FULL_TRACE), run_metadata=...")
        self._md = run_metadata

    def devices(self) -> list:
        """The device strings of the run, one per row, in the order they first ran an op."""
        seen: dict = {}
        for s in self._md.step_stats:
            seen.setdefault(s.device, len(seen))
        return list(seen)

    def events(self) -> list:
        pids = {d: i for i, d in enumerate(self.devices())}
        out = []
        for d, pid in pids.items():
            out.append({"name": "process_name", "ph": "M", "pid": pid, "tid": 0, "args": {"name": d}})
            out.append({"name": "process_sort_index", "ph": "M", "pid": pid, "tid": 0, "args": {"sort_index": pid}})
            out.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": 0, "args": {"name": "ops"}})
        sends: dict = {}
        recvs: dict = {}
        for s in self._md.step_stats:
            out.append({"name": s.type, "cat": "Op", "ph": "X", "pid": pids[s.device], "tid": 0,
                        "ts": round(float(s.start_us), 3), "dur": round(max(float(s.duration_us), 0.0), 3),
                        "args": {"name": s.name, "op": s.type,
                                 "output_shapes": [list(map(_dim, sh)) for sh in s.output_shapes]}})
            if s.transfer_key:
                (sends if s.type == "_Send" else recvs).setdefault(s.transfer_key, s)
        for i, (key, snd) in enumerate(k for k in sends.items() if k[0] in recvs):
            rcv = recvs[key]
            start = round(float(snd.start_us), 3)
            end = max(round(float(rcv.start_us) + max(float(rcv.duration_us), 0.0), 3), start)
            out.append({"name": "transfer", "cat": "DataFlow", "ph": "s", "id": i, "pid": pids[snd.device],
                        "tid": 0, "ts": start, "args": {"key": key}})
            out.append({"name": "transfer", "cat": "DataFlow", "ph": "f", "bp": "e", "id": i,
                        "pid": pids[rcv.device], "tid": 0, "ts": end, "args": {"key": key}})
        return out

    def generate_chrome_trace_format(self, indent=None) -> str:
        """The trace as a JSON string (Trace Event Format)."""
        return json.dumps({"traceEvents": self.events(), "displayTimeUnit": "ms"}, indent=indent)


def _dim(d):
    return None if d is None else int(d)
