"""Differential lock-step of the fast engine against the reference model: the same packets
offered to both at the same cycles, both stepped one cycle at a time, compared every cycle
(packets in the fabric, delivered, stuck, the deadlock watch's verdict), their credits checked
every 64 cycles, and at the end every packet's delivery cycle, injection cycle, hops, path and
payload flits (tests/sim/test_fast_engine.py)."""

from __future__ import annotations

import inspect
import types
from collections.abc import Callable
from typing import Any

from numba.core.registry import CPUDispatcher
from zfabric.sim.fast import FastModel, kernel
from zfabric.sim.model import DeadlockWatch, EjectStalls, FabricModel
from zfabric.sim.traffic import Traffic, TrafficConfig

from zfabric import compile_plan, load_spec

#: offered load: low, near saturation and past it (the fabrics here saturate at 0.3 to 0.6)
LOADS = (0.1, 0.45, 0.9)

#: fabrics of every family and routing, small enough for the reference to run them quickly
FAMILIES = {
    "torus-dor": ({"kind": "torus", "k": [3, 3]}, "dor"),
    "mesh-dor": ({"kind": "torus", "k": [3, 3], "wrap": False}, "dor"),
    "torus-duato": ({"kind": "torus", "k": [3, 3], "vcs": 2}, "duato"),
    "ndt-dort": ({"kind": "ndt", "k": [2, 2, 2]}, "dort"),
    "ndt-adaptive": ({"kind": "ndt", "k": [2, 2, 2]}, "dort_adaptive"),
    "ndt-tsdor": ({"kind": "ndt", "k": [2, 2, 2]}, "tsdor"),
    "hyperx-aliod": ({"kind": "hyperx", "s": [2, 2, 2], "terminals": 2}, "aliod"),
    "hyperx-cliod": ({"kind": "hyperx", "s": [2, 2, 2], "terminals": 2}, "cliod"),
    "hyperz-odim": ({"kind": "hyperz", "s": [2, 2], "z": [2, 2], "R": [1, 2]}, "odim"),
    "znode-sliced": ({"kind": "znode", "z": [2, 3], "R": [1, 2], "znodes": 2}, "sliced"),
    "znode-flat": ({"kind": "znode", "z": [2, 3], "R": [1, 2], "znodes": 2}, "flat"),
    "znode-srcdst": (
        {"kind": "znode", "z": [2, 3], "R": [1, 2], "znodes": 2},
        "source_destination",
    ),
    "znode-updown": ({"kind": "znode", "z": [2, 3], "R": [1, 2], "znodes": 2}, "updown"),
    "tree-sliced": ({"kind": "kary_ntree", "k": 2, "n": 2}, "sliced"),
    "tswitch-optimal": ({"kind": "kary_ntree", "k": 4, "n": 2, "tswitch": {}}, "destro"),
    "tswitch-bad-r2": (
        {"kind": "kary_ntree", "k": 4, "n": 2, "tswitch": {"scp": "bad", "internal_ports": 2}},
        "destro",
    ),
    "transit-full": ({"kind": "transit", "form": "full"}, "transit"),
    "transit-bidelta": ({"kind": "transit", "form": "bidelta", "stacks": [1, 2]}, "transit"),
}

#: every (stages, allocator, selection) the spec allows: separable-2 only up to 3 stages
ROUTERS = [
    {"stages": stages, "allocator": allocator, "selection": selection}
    for stages in (1, 2, 3, 4, 5)
    for allocator in ("separable", "separable-2")
    if allocator == "separable" or stages <= 3
    for selection in ("first-free", "round-robin", "occupancy", "random")
]


def spec(family: str, router: dict[str, Any], **fields: Any) -> dict[str, Any]:
    topology, routing = FAMILIES[family]
    return {"name": family, "topology": topology, "routing": routing, "router": router, **fields}


def lockstep(
    spec_or_plan,
    rate: float,
    *,
    cycles: int = 300,
    drain: int = 3000,
    seed: int = 1,
    stall: float | None = None,
    packet_length: int | tuple[int, int] | None = None,
    traffic: dict[str, Any] | None = None,
    work_lists: bool = True,
) -> dict[str, int]:
    """Run both engines on the same traffic and raise AssertionError at the first difference.
    ``traffic``: :class:`TrafficConfig` fields beside the rate and packet length (the pattern).
    ``work_lists``: the fast engine steps only the switches at work (by default only large
    fabrics do; the small ones here would otherwise never run them), else scans them all.
    Returns the packets delivered and the cycles run (a test checks it did something)."""
    plan = spec_or_plan if hasattr(spec_or_plan, "links") else compile_plan(load_spec(spec_or_plan))
    ready = EjectStalls(stall, seed) if stall else None
    reference = FabricModel(plan, eject_ready=ready)
    fast = FastModel(plan, eject_ready=ready, work_lists=work_lists)
    watches = DeadlockWatch(reference), DeadlockWatch(fast)
    lengths = packet_length or plan.packet_length
    config = TrafficConfig(rate=rate, packet_length=lengths, **(traffic or {}))
    packets = Traffic(config, len(plan.endpoints), seed)
    deadlock = None
    for cycle in range(cycles + drain):
        if cycle < cycles:
            for src, dst, length in packets.packets_at(cycle):
                reference.offer(src, dst, length)
                fast.offer(src, dst, length)
        elif reference.in_network == 0 and not reference._injecting:
            break
        reference.step()
        fast.step()
        state = _state(reference), _state(fast)
        assert state[0] == state[1], f"cycle {cycle}: reference {state[0]}, fast {state[1]}"
        verdicts = [watch() for watch in watches]
        shown = [None if v is None else (v.at, v.partial, v.cycle) for v in verdicts]
        assert shown[0] == shown[1], f"cycle {cycle}: deadlock {shown[0]} against {shown[1]}"
        if verdicts[0] is not None:
            deadlock = verdicts[0]
            break
        if cycle % 64 == 0:
            reference.check_credits()
            fast.check_credits()
    if deadlock is None:
        reference.check_credits()
        fast.check_credits()
    fast.finish()
    packets = [_packet(p) for p in reference.delivered], [_packet(p) for p in fast.delivered]
    for ours, theirs in zip(*packets, strict=False):
        assert ours == theirs, f"packet {ours['id']}: reference {ours}, fast {theirs}"
    assert len(packets[0]) == len(packets[1]), "the engines delivered different packet counts"
    return {"delivered": len(packets[0]), "cycles": reference.cycle}


def _state(model) -> tuple[int, int, int, bool]:
    return model.cycle, model.in_network, model.delivered_count, model.stuck


def _packet(packet) -> dict[str, Any]:
    fields = ("id", "src", "dst", "length", "created", "injected", "delivered", "hops")
    shown = {name: getattr(packet, name) for name in fields}
    shown["path"] = list(packet.path)
    shown["flits"] = packet.flits_delivered
    shown["payload"] = packet.payload
    return shown


def python_kernel(plant: tuple[str, str, str] | None = None) -> Callable:
    """The kernel's ``run`` as plain Python (the compiled functions' own source, calling each
    other by name), the compiled kernel left as it is. ``plant``: (function, line, bug), that
    function's ``line`` replaced by ``bug`` (it must occur once): a copy of the engine with a
    planted bug."""
    namespace: dict[str, Any] = dict(vars(kernel))
    for name, value in vars(kernel).items():
        if isinstance(value, CPUDispatcher):
            function = value.py_func
            namespace[name] = types.FunctionType(
                function.__code__, namespace, name, function.__defaults__, function.__closure__
            )
    if plant:
        name, line, bug = plant
        source = inspect.getsource(getattr(kernel, name).py_func)
        assert source.count(line) == 1, f"{name} has no single line {line!r}"
        source = source.replace(line, bug)
        source = "\n".join(text for text in source.splitlines() if not text.startswith("@"))
        exec(compile(source, f"<{name}, planted>", "exec"), namespace)
    return namespace["run"]
