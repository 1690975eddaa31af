"""Links longer than a cycle (``link_latency`` d): flits and credits take d cycles on every
switch-to-switch link (docs/microarchitecture.md, Link). Expected values are the contract's
hand formulas: a lone packet pays d - 1 more cycles per hop, and a stream's credit comes back
2 (d - 1) cycles later."""

from __future__ import annotations

import pytest
from overload import offer_then_drain
from zfabric.sim.analytic import lone_packet_latency
from zfabric.sim.model import FabricModel
from zfabric.sim.traffic import Traffic, TrafficConfig

from zfabric import compile_plan, load_spec
from zfabric.errors import SpecError


def torus(latency: int, buffer_depth: int = 4, k=(4, 4)):
    spec = {
        "name": "t",
        "topology": {"kind": "torus", "k": list(k)},
        "link_latency": latency,
        "buffer_depth": buffer_depth,
    }
    return compile_plan(load_spec(spec))


def ring_hops(a: int, b: int, k: int) -> int:
    return min((b - a) % k, (a - b) % k)


def lone(plan, src: int, dst: int, length: int):
    model = FabricModel(plan)
    packet = model.offer(src, dst, length)
    while packet.delivered is None:
        model.step()
        assert model.cycle < 2000, "a lone packet must arrive"
    return packet, model


def test_every_switch_to_switch_link_takes_the_latency_asked():
    plan = torus(3)
    assert {link.latency for link in plan.links} == {3}
    assert plan.link_latency == 3


@pytest.mark.parametrize("latency", [1, 2, 3, 5])
def test_a_lone_packet_pays_the_extra_cycles_on_every_hop(latency):
    """Delivered at t0 + 2H + L + 2 (one cycle per link and one per switch, the contract's
    zero-load latency with ``stages: 1``) plus H (d - 1); buffers deep enough for the longer
    credit loop (4 + 2 (d - 1) flits)."""
    plan = torus(latency, buffer_depth=4 + 2 * (latency - 1))
    for src, dst in [(0, 1), (0, 5), (0, 10), (3, 12), (7, 13)]:
        hops = ring_hops(src % 4, dst % 4, 4) + ring_hops(src // 4, dst // 4, 4)
        for length in (1, 4, 9):
            packet, _ = lone(plan, src, dst, length)
            assert packet.hops == hops
            assert packet.latency == 2 * hops + length + 2 + hops * (latency - 1)
            assert packet.latency == plan.router.zero_load_latency(
                hops, length, buffer_depth=plan.buffer_depth, link_latency=latency
            )


def test_a_long_link_slows_a_stream_to_its_credit_loop():
    """B = 4 credits and a credit period of 4 + 2 (3 - 1) = 8 cycles over links of 3: the
    stream moves 4 flits per 8 cycles, so a 20-flit packet's tail comes floor(19 / 4) * (8 - 4)
    = 16 cycles after the one-flit-per-cycle figure."""
    plan = torus(3, buffer_depth=4)
    packet, _ = lone(plan, 0, 1, 20)
    unstretched = 2 * 1 + 20 + 2 + 1 * 2
    assert packet.latency == unstretched + 16
    assert packet.latency == plan.router.zero_load_latency(1, 20, buffer_depth=4, link_latency=3)


@pytest.mark.parametrize("latency", [2, 4])
def test_credits_are_conserved_and_everything_drains_past_saturation(latency):
    """Uniform traffic at 0.8 flits/cycle/endpoint (past the 4x4 torus's knee): credits are
    conserved every cycle (flits and credits still on a long link counted), no deadlock is
    seen, and every packet is delivered once the sources stop."""
    plan = torus(latency)
    model = FabricModel(plan)
    traffic = Traffic(TrafficConfig(rate=0.8), len(plan.endpoints), seed=3)
    offered, deadlocked = offer_then_drain(model, traffic, 1500, 20000)
    assert not deadlocked
    assert len(offered) > 1000 and model.delivered_count == len(offered)


def test_a_latency_out_of_range_is_refused_in_one_line():
    spec = {"name": "t", "topology": {"kind": "torus", "k": [4, 4]}, "link_latency": 0}
    with pytest.raises(SpecError, match=r"link_latency"):
        load_spec(spec)


def test_a_twin_nodes_internal_link_keeps_one_cycle_at_zero_load():
    """On the nDT twin torus with links of 3 every external hop pays 2 cycles more and an
    internal hop none: 2H + L + 2 + 2 H_ext for every ordered pair (L = 1), and the analysis's
    mean over the pairs is the model's."""
    spec = {
        "name": "n",
        "topology": {"kind": "ndt", "k": [2, 2, 2]},
        "link_latency": 3,
        "buffer_depth": 8,
    }
    plan = compile_plan(load_spec(spec))
    internal = {
        (link.src.switch, link.src.port)
        for link in plan.links
        if plan.switches[link.src.switch].ports[link.src.port].role == "internal"
    }
    assert {link.latency for link in plan.links} == {1, 3} and internal
    latencies = []
    for src in range(len(plan.endpoints)):
        for dst in range(len(plan.endpoints)):
            if src == dst:
                continue
            packet, _ = lone(plan, src, dst, 1)
            external = sum(hop not in internal for hop in packet.path[:-1])
            assert packet.latency == 2 * packet.hops + 1 + 2 + 2 * external, (src, dst)
            latencies.append(packet.latency)
    _, mean = lone_packet_latency(plan, 1)
    assert mean == pytest.approx(sum(latencies) / len(latencies))
