"""The straight bypass in the RTL (docs/microarchitecture.md, *Straight bypass*): lone packets
at the contract's zero-load cycles, lock-step with the reference model on torus-4x4 at low
load, near and past the knee (near in the default run), and a planted weakening caught."""

from __future__ import annotations

import zlib

import pytest
import yaml
import zfabric.hdl.router.allocator
from amaranth.hdl import Const
from test_fabric_rtl import KNEE, LOADS, MATRIX_SIM, STALL, check
from zfabric.hdl.verilog import emit
from zfabric.sim.tb.runner import cosim, traffic_trace
from zfabric.sim.traffic import TraceEntry, TrafficConfig

from zfabric import compile_plan, load_spec

pytestmark = pytest.mark.rtl

BYPASS = {"bypass": "straight"}


def plan_with(example, name: str, router: dict, **routing):
    data = yaml.safe_load(example(name).read_text())
    data["router"] = router
    if routing:
        data["routing"] = {"name": "dor", **routing}
    return compile_plan(load_spec(data))


def endpoint_at(plan, coords: tuple[int, int]) -> int:
    """The endpoint attached to the switch at ``coords``."""
    for endpoint in plan.endpoints:
        switch = plan.switches[endpoint.attachments[0].switch]
        if tuple(switch.position["coords"]) == coords:
            return endpoint.id
    raise KeyError(coords)


@pytest.mark.parametrize(
    "dst, latency",
    # by hand: 1 cycle to inject, 2 per switch (switch and link) but 1 per switch the packet
    # goes straight through, L - 1 = 3 of serialisation. (2, 0): the source switch, one
    # straight, the last: 1 + 2 + 1 + 2 + 3 = 9 (10 without the bypass); (2, 2): x 2, turn,
    # y 2: 1 + 2 + 1 + 2 + 1 + 2 + 3 = 12 (2H + L + 2 = 14 without); (1, 1): no switch
    # straight, 2H + L + 2 = 10
    [((2, 0), 9), ((2, 2), 12), ((1, 1), 10)],
)
def test_zero_load_latency_with_the_bypass_rtl(example, need_sim, cosim_dir, dst, latency):
    plan = plan_with(example, "torus-4x4", BYPASS)
    src = endpoint_at(plan, (0, 0))
    trace = [TraceEntry(0, src, endpoint_at(plan, dst), 4)]
    report = cosim(plan, trace, sim=need_sim("icarus"), build_dir=cosim_dir)
    check(report)
    assert report["latency"]["rtl"]["max"] == report["latency"]["rtl"]["mean"] == latency


def lockstep_bypass(plan, sim, cosim_dir, load: str, *, stall: float = 0.0) -> dict:
    """Uniform traffic of 1- to 6-flit packets at ``load`` of torus-4x4's knee."""
    rate = min(1.0, KNEE["torus-4x4"] * LOADS[load])
    seed = zlib.crc32(f"bypass/{load}/{stall}".encode())
    trace = traffic_trace(plan, TrafficConfig(rate=rate, packet_length=(1, 6)), 400, seed=seed)
    report = cosim(plan, trace, sim=sim, build_dir=cosim_dir, eject_stall=stall, eject_seed=seed)
    check(report)
    return report


def test_lockstep_bypass_near_the_knee(example, need_sim, cosim_dir):
    """torus-4x4 near its knee: RTL = model packet by packet, the bypass taken and refused
    (flits behind others, outputs asked by buffered flits) many times."""
    plan = plan_with(example, "torus-4x4", BYPASS)
    lockstep_bypass(plan, need_sim("icarus"), cosim_dir, "near")


#: low load and past the knee, ejection stalls, random selection with the two-iteration
#: allocator, fixed dateline classes and the mesh (``-m matrix``)
MATRIX = [("torus-4x4", BYPASS, {}, load, 0.0) for load in ("low", "past")] + [
    ("torus-4x4", BYPASS, {}, "near", STALL),
    ("torus-4x4", {**BYPASS, "selection": "random", "allocator": "separable-2"}, {}, "past", 0.0),
    ("torus-4x4", BYPASS, {"vc_classes": "fixed"}, "near", STALL),
    ("mesh-4x4", BYPASS, {}, "near", 0.0),
]


@pytest.mark.matrix
@pytest.mark.slow
@pytest.mark.parametrize(
    "fabric, router, routing, load, stall",
    MATRIX,
    ids=[f"{f}-{'-'.join(map(str, r.values()))}-{load}-{s}" for f, r, _, load, s in MATRIX],
)
def test_lockstep_bypass_matrix(example, need_sim, cosim_dir, fabric, router, routing, load, stall):
    plan = plan_with(example, fabric, router, **routing)
    lockstep_bypass(plan, need_sim(MATRIX_SIM), cosim_dir, load, stall=stall)


def test_a_bypass_that_ignores_the_buffers_is_caught(example, need_sim, cosim_dir, monkeypatch):
    """The planted weakening: an allocator that takes a straight output for the bypass even
    when buffered flits request it (no output counted as asked). Past the knee the crossbar's
    flit and the bypass's then meet at an output, and packets leave the model's cycles."""
    plan = plan_with(example, "torus-4x4", BYPASS)
    rate = min(1.0, KNEE["torus-4x4"] * LOADS["past"])
    trace = traffic_trace(plan, TrafficConfig(rate=rate, packet_length=4), 200, seed=3)
    allocator = zfabric.hdl.router.allocator.Allocator

    def never_asked(self, requesters):
        return [Const(0, 1)] * len(self._in_vcs)

    def broken_emit(plan):
        with monkeypatch.context() as patch:
            patch.setattr(allocator, "_asked", never_asked)
            return emit(plan)

    report = cosim(
        plan,
        trace,
        sim=need_sim("icarus"),
        build_dir=cosim_dir,
        emit=broken_emit,
        variant="bypass-never-asked",
    )
    assert not report["passed"]
