"""The straight bypass in the reference model and the fast engine (docs/microarchitecture.md,
*Straight bypass*): zero-load latencies derived by hand, the contract's limits (one flit per
output per cycle, FIFO order), lock-step with the fast engine at three loads, and a planted
weakening of each bypass condition caught by the lock-step."""

from __future__ import annotations

import numpy as np
import pytest
from lockstep import lockstep, python_kernel
from zfabric.sim.analytic import lone_packet_latency
from zfabric.sim.fast import FastModel
from zfabric.sim.model import FabricModel
from zfabric.sim.traffic import Traffic, TrafficConfig

from zfabric import compile_plan, load_spec

#: the 8x8 torus of the 4x4 example (2 VCs per link, dateline classes, 4-flit buffers): long
#: enough rings for four straight hops
TORUS_8X8 = {"name": "t8", "topology": {"kind": "torus", "k": [8, 8]}, "routing": "dor"}
TORUS_4X4 = {"name": "t4", "topology": {"kind": "torus", "k": [4, 4]}, "routing": "dor"}


def plan(spec: dict, bypass: str = "straight", **router):
    return compile_plan(load_spec({**spec, "router": {"bypass": bypass, **router}}))


def endpoint_at(fabric, coords: tuple[int, int]) -> int:
    """The endpoint attached to the switch at ``coords``."""
    for endpoint in fabric.endpoints:
        switch = fabric.switches[endpoint.attachments[0].switch]
        if tuple(switch.position["coords"]) == coords:
            return endpoint.id
    raise KeyError(coords)


def lone_latency(engine_class, fabric, dst: tuple[int, int], length: int) -> tuple[int, int]:
    """(hops, latency) of a lone packet from the endpoint at (0, 0) to the one at ``dst``."""
    engine = engine_class(fabric)
    packet = engine.offer(endpoint_at(fabric, (0, 0)), endpoint_at(fabric, dst), length)
    while packet.delivered is None:
        engine.step()
        assert engine.cycle < 500, "a lone packet must arrive"
    if engine_class is FastModel:
        engine.finish()
    return packet.hops, packet.latency


# By hand (created at 0): one cycle to inject, then per switch 2 cycles (switch + link) unless
# the packet goes straight through it (1: the link only), then L - 1 of serialisation. Along
# x only, k hops: the source switch (2), k - 1 straight switches (1 each), the last (2):
# 1 + 2 + (k - 1) + 2 + L - 1 = k + L + 3. Turning once, x then y, H hops: H - 2 straight.
# Without the bypass every hop is 2 cycles: 2H + L + 2.
ZERO_LOAD = [
    # destination, L, hops, latency with the bypass, without it
    ((1, 0), 1, 1, 5, 5),  # no switch straight through: 1 + 2 + 2 + 0
    ((2, 0), 4, 2, 9, 10),  # one straight switch
    ((3, 0), 4, 3, 10, 12),
    ((4, 0), 1, 4, 8, 11),  # four hops along x, three straight switches
    ((4, 0), 4, 4, 11, 14),
    ((1, 1), 4, 2, 10, 10),  # turns at (1, 0): nothing straight
    ((3, 2), 4, 5, 13, 16),  # x 3, turn, y 2: 1 + 1 straight switches
    ((4, 4), 1, 8, 13, 19),  # x 4, turn, y 4: 3 + 3 straight switches
]


@pytest.mark.parametrize("engine_class", [FabricModel, FastModel], ids=["reference", "fast"])
@pytest.mark.parametrize("dst, length, hops, straight, plain", ZERO_LOAD)
def test_zero_load_latency_takes_one_cycle_per_straight_switch(
    engine_class, dst, length, hops, straight, plain
):
    assert lone_latency(engine_class, plan(TORUS_8X8), dst, length) == (hops, straight)
    assert lone_latency(engine_class, plan(TORUS_8X8, "none"), dst, length) == (hops, plain)


@pytest.mark.parametrize("dst, length, hops, straight, plain", ZERO_LOAD)
def test_the_settings_formula_agrees_with_the_hand_derived_latency(
    dst, length, hops, straight, plain
):
    dimensions = sum(1 for c in dst if c)
    router = plan(TORUS_8X8).router
    assert router.zero_load_latency(hops, length, straight=hops - dimensions) == straight
    assert plan(TORUS_8X8, "none").router.zero_load_latency(hops, length, straight=3) == plain


def test_a_long_packet_on_short_buffers_pays_the_same_streaming_cycles():
    """3-flit buffers, a 64-flit packet 4 hops along x: the injection link and the first
    switch's link keep the 4-cycle credit period (their flits do not bypass), so the stream
    moves 3 flits per 4 cycles with or without the bypass, floor(63 / 3) * (4 - 3) = 21 cycles
    beyond the zero-load latency (4 + 64 + 3 = 71 with the bypass, 2 * 4 + 64 + 2 = 74
    without)."""
    spec = {**TORUS_8X8, "buffer_depth": 3}
    assert lone_latency(FabricModel, plan(spec), (4, 0), 64) == (4, 71 + 21)
    assert lone_latency(FabricModel, plan(spec, "none"), (4, 0), 64) == (4, 74 + 21)


def test_no_output_sends_two_flits_in_a_cycle_and_flits_keep_their_order():
    """Past saturation on the 4x4 torus: every cycle, each output port sends at most one flit
    (the bypass yields to any buffered request), and the model's own checks (FIFO order and
    contiguity of every packet on every VC, credits conserved) hold."""
    fabric = plan(TORUS_4X4)
    model = FabricModel(fabric)
    traffic = Traffic(TrafficConfig(rate=0.9, packet_length=4), len(fabric.endpoints), 3)
    for cycle in range(600):
        for src, dst, length in traffic.packets_at(cycle):
            model.offer(src, dst, length)
        model.step()
        sent = [(s, o) for s, o, _w, _f in model._wire if s >= 0]
        assert len(sent) == len(set(sent)), f"cycle {cycle}: an output sent twice"
        if cycle % 50 == 0:
            model.check_credits()
    assert model.bypassed > 1000  # the bypass is at work, not idle
    assert model.delivered_count > 300


@pytest.mark.parametrize("rate", [0.1, 0.45, 0.9])
def test_lockstep_with_the_bypass_at_three_loads(rate):
    spec = {**TORUS_4X4, "router": {"bypass": "straight"}}
    assert lockstep(spec, rate, cycles=300)["delivered"] > 50


def test_lockstep_with_the_bypass_on_a_mesh_with_stalls_and_random_selection():
    spec = {
        "name": "m",
        "topology": {"kind": "torus", "k": [3, 3], "wrap": False},
        "routing": "dor",
        "router": {"bypass": "straight", "selection": "random", "allocator": "separable-2"},
    }
    assert lockstep(spec, 0.9, stall=0.3, work_lists=False)["delivered"] > 50


#: bypass conditions of the fast engine weakened: the output asked by a buffered flit, a body
#: or tail without a credit, a body or tail whose output VC is not the straight one
ASKED = ("_bypass", "if straight < 0 or gps[straight, GP_ASKED] == cycle:", "if straight < 0:")
BODY = "if ov < 0 or ovs[ov, OV_GP] != straight or ovs[ov, CREDIT] == 0:"
NO_CREDIT = ("_bypass", BODY, "if ov < 0 or ovs[ov, OV_GP] != straight:")
TURNING = ("_bypass", BODY, "if ov < 0 or ovs[ov, CREDIT] == 0:")
PLANTS = {"as-is": None, "asked": ASKED, "no-credit": NO_CREDIT, "turning": TURNING}


@pytest.mark.parametrize("plant", PLANTS.values(), ids=PLANTS)
def test_a_planted_bypass_bug_fails_the_lockstep(monkeypatch, plant):
    """The kernel as plain Python, as it is and with one bypass condition left off: only the
    planted copies are caught."""
    monkeypatch.setattr(FastModel, "_kernel_run", staticmethod(python_kernel(plant)))
    spec = {**TORUS_4X4, "router": {"bypass": "straight"}}
    with np.errstate(over="ignore"):  # the hash's 64-bit products wrap, as compiled
        if plant:
            with pytest.raises(AssertionError, match=r"^(cycle|packet) \d+"):
                lockstep(spec, 0.9, cycles=200)
        else:
            assert lockstep(spec, 0.9, cycles=200)["delivered"] > 10


def test_the_analysis_counts_the_straight_switches_of_every_pair():
    """torus-4x4, 4-flit packets: the analysis's mean zero-load latency over the 240 ordered
    pairs is the model's mean of lone packets, and by hand 2H + L + 2 less the straight
    switches: a pair two hops apart in a dimension (4 of each source's 15 destinations per
    dimension, 8 in all) goes straight through one switch, so 8 / 15 cycles off the mean."""
    fabric = plan(TORUS_4X4)
    latencies = []
    for src in range(len(fabric.endpoints)):
        for dst in range(len(fabric.endpoints)):
            if src != dst:
                model = FabricModel(fabric)
                packet = model.offer(src, dst, 4)
                while packet.delivered is None:
                    model.step()
                latencies.append(packet.latency)
    measured = sum(latencies) / len(latencies)
    _longest, mean = lone_packet_latency(fabric, 4)
    assert mean == pytest.approx(measured)
    plain = lone_packet_latency(plan(TORUS_4X4, "none"), 4)[1]
    assert plain == pytest.approx(2 * 32 / 15 + 4 + 2)  # 2H + L + 2, H = 32 / 15
    assert mean == pytest.approx(plain - 8 / 15)
