"""Device types a Session can create, each with the cost table placement estimates its op times from.

`"CPU"` is the host: `SessionConfig(device_count={"CPU": n})` makes n virtual
CPUs.  Another type exists once it is registered:
`register_device_type("SLOWCPU", DeviceCosts(flops_per_us=200.0))`; then
`device_count={"CPU": 1, "SLOWCPU": 1}` adds `/job:localhost/replica:0/task:0/device:SLOWCPU:0`.
Ops run there only if their OpDef has a kernel for the type
(`eager.registry.register_kernel`), as TensorFlow places an op only on a
device type with a kernel for it; placement's cost model (cost_model.py)
estimates an op's time on a device from the device type's `DeviceCosts`, so
a slower type gets less work.  This is how one machine's devices differ
(the tests register a slower test-only type); graphjit itself registers only
"CPU".

Imports nothing from the project (a leaf: run_config validates against it).
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DeviceCosts:
    """Per device type: time of one op's dispatch, matmul/conv throughput, time per output element of the
    other ops (microseconds; the CPU figures are for one core with NumPy/BLAS)."""

    op_overhead_us: float = 1.0
    flops_per_us: float = 2000.0        # about 2 GFLOP/s
    element_us: float = 0.002


_TYPES = {"CPU": DeviceCosts()}


def register_device_type(name: str, costs: DeviceCosts) -> None:
    """Make device type `name` (upper-cased) available to `SessionConfig.device_count`, with `costs`."""
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"register_device_type: the name must be an identifier such as 'GPU', got {name!r}")
    if not isinstance(costs, DeviceCosts):
        raise TypeError(f"register_device_type: costs must be a DeviceCosts, got {type(costs).__name__}")
    _TYPES[name.upper()] = costs


def unregister_device_type(name: str) -> None:
    """Forget a registered device type (not "CPU")."""
    if name.upper() == "CPU":
        raise ValueError("unregister_device_type: the CPU device type always exists")
    _TYPES.pop(name.upper(), None)


def device_types() -> tuple:
    """The registered device types, "CPU" first."""
    return tuple(_TYPES)


def costs_of(device_type: str) -> DeviceCosts:
    """The cost table of `device_type` (an unregistered type, e.g. a distributed task's, costs as a CPU)."""
    return _TYPES.get(device_type.upper(), _TYPES["CPU"])
