"""Switching modes (docs/microarchitecture.md, *Switching modes*) in the reference model.

Expected latencies are the contract's hand formulas: a lone packet of L flits over H
switch-to-switch links with ``stages: S`` is delivered (S + 1)(H + 1) + L cycles after its
creation under wormhole and cut-through (every buffer empty: a head always finds B >= L
credits), and (H + 1)(L - 1) cycles later under store-and-forward (at each of the H + 1
switches the head waits for its tail, L - 1 cycles behind it)."""

from __future__ import annotations

import pytest
import yaml
from overload import offer_then_drain
from zfabric.sim.model import DeadlockWatch, FabricModel
from zfabric.sim.traffic import Traffic, TrafficConfig

from zfabric import compile_plan, load_spec
from zfabric.errors import SpecError

MODES = ("wormhole", "cut_through", "store_and_forward")


def plan_for(example, name: str, switching: str, stages: int = 1, depth: int = 8, length=8):
    data = yaml.safe_load(example(name).read_text())
    data.pop("packet_length", None)
    data.setdefault("traffic", {})["packet_length"] = length
    data.update(buffer_depth=depth, router={"switching": switching, "stages": stages})
    return compile_plan(load_spec(data))


def lone(plan, src: int, dst: int, length: int):
    model = FabricModel(plan)
    packet = model.offer(src, dst, length)
    model.run(300)
    assert packet.flits_delivered == length and model.in_network == 0
    return packet


def by_hand(switching: str, stages: int, hops: int, length: int) -> int:
    wormhole = (stages + 1) * (hops + 1) + length
    stored = (hops + 1) * (length - 1) if switching == "store_and_forward" else 0
    return wormhole + stored


def ring_hops(a: int, b: int, k: int = 4) -> int:
    return min((b - a) % k, (a - b) % k)


@pytest.mark.parametrize("stages", [1, 3])
@pytest.mark.parametrize("switching", MODES)
def test_a_lone_packet_on_the_torus_by_hand(example, switching, stages):
    plan = plan_for(example, "torus-4x4", switching, stages)
    for src, dst in [(0, 1), (0, 5), (0, 10), (7, 13)]:
        hops = ring_hops(src % 4, dst % 4) + ring_hops(src // 4, dst // 4)
        for length in (1, 4, 8):
            packet = lone(plan, src, dst, length)
            assert packet.hops == hops
            assert packet.latency == by_hand(switching, stages, hops, length)
            assert packet.latency == plan.router.zero_load_latency(hops, length, buffer_depth=8)


# znode-64 (z = 4, 4, 4): 0 -> 63 turns at level 3 (4 links, 5 switches), 0 -> 4 at level 2
# (2 links), 0 -> 1 within one switch (0 links)
@pytest.mark.parametrize("stages", [1, 3])
@pytest.mark.parametrize("switching", MODES)
def test_a_lone_packet_on_the_znode_by_hand(example, switching, stages):
    plan = plan_for(example, "znode-64", switching, stages)
    for dst, hops in [(63, 4), (4, 2), (1, 0)]:
        for length in (1, 5, 8):
            packet = lone(plan, 0, dst, length)
            assert packet.hops == hops
            assert packet.latency == by_hand(switching, stages, hops, length)


def test_store_and_forward_pays_every_stage_setting_the_same(example):
    """The wait for the tail comes before route computation, so the extra route and VC
    allocation cycles of stages 2, 4 and 5 do not overlap it: L - 1 per switch at each."""
    for stages in (2, 4, 5):
        plan = plan_for(example, "torus-4x4", "store_and_forward", stages)
        packet = lone(plan, 0, 10, 6)  # 4 hops, 5 switches, 6 flits
        assert packet.latency == (stages + 1) * 5 + 6 + 5 * 5


def credit_stalls(model: FabricModel) -> int:
    """Input VCs whose front flit holds an output VC (its head went on) and has no credit on
    it: a packet spread over this buffer and the next one's, held by the one ahead."""
    stalls = 0
    for s, ports in enumerate(model._buf):
        for p, vcs in enumerate(ports):
            for v, buf in enumerate(vcs):
                target = model._assign[s][p][v]
                if buf and target is not None and model._credit[s][target[0]][target[1]] == 0:
                    stalls += 1
    return stalls


def spread_blocked(model: FabricModel) -> int:
    """Packets whose head waits at a front for an output VC while some flit of theirs, in
    another switch's buffer, waits for a credit: blocked across two switches."""
    waiting = set()  # packets whose head is at a front without an output VC
    starved = set()  # packets with a flit at a front that has an output VC and no credit
    for s, ports in enumerate(model._buf):
        for p, vcs in enumerate(ports):
            for v, buf in enumerate(vcs):
                if not buf:
                    continue
                target = model._assign[s][p][v]
                if target is None and buf[0].is_head:
                    waiting.add(buf[0].packet.id)
                elif target is not None and model._credit[s][target[0]][target[1]] == 0:
                    starved.add(buf[0].packet.id)
    return len(waiting & starved)


@pytest.mark.parametrize("switching, blocks", [("wormhole", True), ("cut_through", False)])
def test_cut_through_never_leaves_a_blocked_packet_across_two_switches(switching, blocks):
    """Uniform traffic past the torus-4x4's knee (0.8 flits/cycle/endpoint) with packets as
    long as the buffers (4): under cut-through no flit that holds an output VC ever waits for a
    credit, so no packet is ever spread over two switches' buffers while its head is blocked;
    the same run under wormhole has such packets (the check can fail)."""
    spec = {
        "name": "t",
        "topology": {"kind": "torus", "k": [4, 4]},
        "buffer_depth": 4,
        "packet_length": 4,
        "router": {"switching": switching},
    }
    plan = compile_plan(load_spec(spec))
    model = FabricModel(plan)
    traffic = Traffic(TrafficConfig(rate=0.8), len(plan.endpoints), seed=2)
    watch = DeadlockWatch(model)
    stalls = spread = 0
    for cycle in range(2000):
        for src, dst, length in traffic.packets_at(cycle):
            model.offer(src, dst, length)
        model.step()
        assert watch() is None
        stalls += credit_stalls(model)
        spread += spread_blocked(model)
    assert model.delivered_count > 1000
    if blocks:
        assert stalls > 100 and spread > 10
    else:
        assert stalls == 0 and spread == 0


@pytest.mark.parametrize("switching", ["cut_through", "store_and_forward"])
def test_store_and_forward_and_cut_through_drain_past_saturation(switching):
    """Credits are conserved every cycle, no deadlock is seen, and every packet of a 2-6 flit
    mix is delivered once the sources stop (the dateline proof holds: each mode restricts
    wormhole)."""
    spec = {
        "name": "t",
        "topology": {"kind": "torus", "k": [4, 4]},
        "buffer_depth": 6,
        "traffic": {"packet_length": [2, 6]},
        "router": {"switching": switching},
    }
    plan = compile_plan(load_spec(spec))
    assert plan.router.longest_packet == 6
    model = FabricModel(plan)
    traffic = Traffic(TrafficConfig(rate=0.8, packet_length=(2, 6)), len(plan.endpoints), seed=5)
    offered, deadlocked = offer_then_drain(model, traffic, 1500, 20000)
    assert not deadlocked
    assert len(offered) > 500 and model.delivered_count == len(offered)


@pytest.mark.parametrize("switching", ["cut_through", "store_and_forward"])
def test_a_buffer_shallower_than_the_longest_packet_is_refused(switching):
    spec = {
        "name": "t",
        "topology": {"kind": "torus", "k": [4, 4]},
        "buffer_depth": 4,
        "traffic": {"packet_length": [2, 5]},
        "router": {"switching": switching},
    }
    with pytest.raises(SpecError, match=r"^buffer_depth: 4 is shallower than the longest packet"):
        load_spec(spec)


def test_a_model_refuses_a_packet_longer_than_its_switches_hold(example):
    model = FabricModel(plan_for(example, "torus-4x4", "cut_through", length=4, depth=4))
    with pytest.raises(ValueError, match="5-flit packet"):
        model.offer(0, 1, 5)


def test_a_range_of_short_packets_keeps_the_default_length_within_the_buffers():
    """The plan's packet length (what a board's generators send and an offer without a length
    means) stands in for a range with 4 flits, or the range's longest if that is shorter: a
    store-and-forward switch with 2-flit buffers must never be given a 4-flit packet."""
    spec = {
        "name": "t",
        "topology": {"kind": "torus", "k": [4, 4]},
        "buffer_depth": 2,
        "traffic": {"packet_length": [1, 2]},
        "router": {"switching": "store_and_forward"},
    }
    plan = compile_plan(load_spec(spec))
    assert plan.packet_length == plan.router.longest_packet == 2
    packet = lone(plan, 0, 1, plan.packet_length)
    assert packet.latency == by_hand("store_and_forward", 1, 1, 2)
