"""Device names: `DeviceSpec` parses, merges and prints device strings; the device-scope merge.

A device string names some of job, replica, task, device type and index:
`/job:NAME/replica:R/task:T/device:TYPE:I`, with the short forms `/cpu:1`,
`/gpu:0`, `CPU:0`, `/device:CPU:1` (TensorFlow's `DeviceSpecV2` grammar: the
parts are separated by `/`, a device part is `device:TYPE:I` or `TYPE:I` for
a known type, the index may be `*` or left out).  The canonical string
(`to_string`) lists only the fields that are set, in that order, with the
type upper-cased: `/cpu:1` -> `/device:CPU:1`, `""` -> `""`; `short_name`
is the type and index alone (`CPU:1`, for pictures).  A string that
does not parse raises ValueError naming it and the expected form.

`merge_scopes(entries, op)` computes an op's requested device from the
graph's device-scope stack (outermost first), as TensorFlow's
`Graph._apply_device_functions` does: entries are applied innermost first; a
string entry fills the fields the op's device does not set yet (inner fields
win), a callable entry (a device function: op -> device string, DeviceSpec or
None) replaces the device with its result, and a `None` entry
(`device(None)`) stops: scopes outside it do not apply.

Imports nothing from the project.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

# Device types the short form `TYPE:I` accepts (a `device:TYPE:I` part accepts any identifier).
SHORT_FORM_TYPES = ("CPU", "GPU", "TPU")
_JOB_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*\Z")       # TensorFlow's DeviceNameUtils rule
_FORM = "'/job:NAME/replica:R/task:T/device:TYPE:I' (every part optional), or a short form '/cpu:1', 'GPU:0'"


def _bad(spec: str, why: str) -> ValueError:
    return ValueError(f"bad device string {spec!r}: {why}; expected {_FORM}")


def _int_field(spec: str, what: str, text: str) -> int:
    if not text.isdigit():
        raise _bad(spec, f"{what} must be a non-negative integer, got {text!r}")
    return int(text)


@dataclass(frozen=True)
class DeviceSpec:
    """A (possibly partial) device name; every field may be None (unset)."""

    job: Optional[str] = None
    replica: Optional[int] = None
    task: Optional[int] = None
    device_type: Optional[str] = None
    device_index: Optional[int] = None

    def __post_init__(self):
        if self.device_type is not None:
            object.__setattr__(self, "device_type", self.device_type.upper())

    @staticmethod
    def from_string(spec) -> "DeviceSpec":
        """Parse `spec` (a device string, a DeviceSpec, or None/"" for the empty spec)."""
        if isinstance(spec, DeviceSpec):
            return spec
        if spec is None:
            return DeviceSpec()
        if not isinstance(spec, str):
            raise TypeError(f"a device must be a string or DeviceSpec, got {type(spec).__name__}: {spec!r}")
        job = replica = task = dtype = index = None
        for part in spec.split("/"):
            if not part:
                continue
            y = part.split(":")
            key = y[0]
            if len(y) == 2 and key == "job":
                if not _JOB_NAME.match(y[1]):
                    raise _bad(spec, f"job name {y[1]!r} must be a letter followed by letters, digits or '_'")
                job = y[1]
            elif len(y) == 2 and key == "replica":
                replica = _int_field(spec, "replica", y[1])
            elif len(y) == 2 and key == "task":
                task = _int_field(spec, "task", y[1])
            elif len(y) in (1, 2) and key.upper() in SHORT_FORM_TYPES:
                if dtype is not None:
                    raise _bad(spec, "more than one device type")
                dtype = key.upper()
                if len(y) == 2 and y[1] != "*":
                    index = _int_field(spec, "device index", y[1])
            elif len(y) == 3 and key == "device":
                if dtype is not None:
                    raise _bad(spec, "more than one device type")
                if not y[1].isidentifier():
                    raise _bad(spec, f"device type {y[1]!r} is not a name")
                dtype = y[1].upper()
                if y[2] != "*":
                    index = _int_field(spec, "device index", y[2])
            else:
                raise _bad(spec, f"unknown part {part!r}")
        return DeviceSpec(job, replica, task, dtype, index)

    def to_string(self) -> str:
        """The canonical string: only the fields that are set (`/job:w/device:CPU:1`)."""
        out = ""
        if self.job is not None:
            out += "/job:" + self.job
        if self.replica is not None:
            out += f"/replica:{self.replica}"
        if self.task is not None:
            out += f"/task:{self.task}"
        if self.device_type is not None:
            out += f"/device:{self.device_type}:{'*' if self.device_index is None else self.device_index}"
        return out

    def merge(self, other) -> "DeviceSpec":
        """A spec with `other`'s set fields over this one's, field by field (TF's `make_merged_spec`)."""
        o = DeviceSpec.from_string(other)
        return DeviceSpec(*(b if b is not None else a for a, b in zip(self._fields(), o._fields())))

    def _fields(self) -> tuple:
        return (self.job, self.replica, self.task, self.device_type, self.device_index)

    def __str__(self) -> str:
        return self.to_string()


def canonical(spec) -> str:
    """The canonical string of a device string or DeviceSpec (ValueError if it does not parse)."""
    return DeviceSpec.from_string(spec).to_string()


def short_name(spec) -> str:
    """The device part of a device string for pictures: `.../device:CPU:1` -> `CPU:1`; a spec without
    a type keeps its canonical string (ValueError if it does not parse)."""
    d = DeviceSpec.from_string(spec)
    if d.device_type is None:
        return d.to_string()
    return d.device_type if d.device_index is None else f"{d.device_type}:{d.device_index}"


def check_scope_entry(entry):
    """Validate one `Graph.device(...)` argument: a string/DeviceSpec (canonicalized), a callable, or None."""
    if entry is None or entry == "":
        return None if entry is None else ""
    if callable(entry) and not isinstance(entry, DeviceSpec):
        return entry
    return DeviceSpec.from_string(entry)


def merge_scopes(entries, op) -> str:
    """The device `op` requests under the device-scope stack `entries` (see the module docstring)."""
    current = DeviceSpec()
    for entry in reversed(entries):
        if entry is None:
            break
        if isinstance(entry, DeviceSpec):
            current = entry.merge(current)
        elif entry == "":
            continue
        else:
            op._device = current.to_string()     # a device function sees the inner scopes' request
            result = entry(op)
            try:
                current = DeviceSpec.from_string(result)
            except (TypeError, ValueError) as e:
                raise ValueError(f"device function {getattr(entry, '__name__', entry)!r} returned {result!r} for "
                                 f"op {op.name!r}: {e}") from None
    return current.to_string()
