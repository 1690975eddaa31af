# amaranth: UnusedElaboratable=no
"""Whole fabrics in Amaranth simulation against the reference model, packet by packet."""

from __future__ import annotations

import random

import pytest
from hdl_bench import FabricBench, TracePacket, model_deliveries, random_trace, small_plan

from zfabric import analyse_routing

LOCKSTEP = [
    # (fabric, packets, horizon): heavy enough that packets contend and wait for credits
    ("torus-4x4", 120, 60),
    ("ndt-2x2x2", 120, 60),
    ("znode-16", 100, 50),
    ("snode-16", 100, 50),
    ("snode-16-updown", 60, 40),
    ("torus-4x4-b2", 60, 40),
    ("torus-3x4-b3-f16", 60, 40),
    ("mesh-3x4", 60, 40),
    ("ndt-2x2x2-ext1", 60, 40),
    ("snode-16-vcs2", 60, 40),
]


@pytest.mark.parametrize("name, packets, horizon", LOCKSTEP, ids=[c[0] for c in LOCKSTEP])
def test_every_packet_arrives_intact_in_the_models_cycle(example, name, packets, horizon):
    plan = small_plan(example, name)
    lengths = (1, 2, 3, 4, 5, 8)
    trace = random_trace(
        plan, random.Random(name), packets=packets, horizon=horizon, lengths=lengths
    )
    expected = model_deliveries(plan, trace)
    bench = FabricBench(plan, trace, check_links=True)
    bench.run(max(expected.values()) + 3)
    assert bench.errors == []
    assert bench.delivered == expected


SHARED = [("ndt-2x2x2", {"identity_ports": True}), ("snode-16", {"identity_ports": True})]
SHARED += [("torus-4x4", {"arithmetic": False})]


@pytest.mark.parametrize("name, options", SHARED, ids=[f"{n}-{list(o)[0]}" for n, o in SHARED])
def test_identity_ports_and_route_tables_change_nothing(example, name, options):
    """The fabric as Verilog emission builds it (identities on ports, one module per kind),
    and route tables instead of arithmetic: the same cycles as the model."""
    plan = small_plan(example, name)
    trace = random_trace(plan, random.Random(name + "shared"), packets=60, horizon=40)
    expected = model_deliveries(plan, trace)
    bench = FabricBench(plan, trace, **options)
    bench.run(max(expected.values()) + 3)
    assert bench.errors == []
    assert bench.delivered == expected


@pytest.mark.parametrize(
    # the twin node's internal link under -m matrix (its RTL lock-step runs by default)
    "name",
    ["torus-4x4", pytest.param("ndt-2x2x2", marks=pytest.mark.matrix)],
)
def test_zero_load_latency_is_two_cycles_per_hop(example, name):
    """Lone packets, far apart: delivered at created + 2H + L + 2 (the contract's formula)."""
    plan = small_plan(example, name)
    pair_hops = analyse_routing(plan, keep_pairs=True).pair_hops
    by_hops = {}
    for (src, dst), (hops, _) in sorted(pair_hops.items()):
        by_hops.setdefault(hops, (src, dst))
    trace = []
    for i, (_, (src, dst)) in enumerate(sorted(by_hops.items())):
        for j, length in enumerate((1, 4)):
            trace.append(TracePacket(60 * (2 * i + j), src, dst, length))
    bench = FabricBench(plan, trace)
    bench.run(trace[-1].created + 40)
    assert bench.errors == []
    for packet in trace:
        hops = pair_hops[packet.src, packet.dst][0]
        latency = bench.delivered[packet.src, packet.sequence] - packet.created
        assert latency == 2 * hops + packet.length + 2, (packet, hops)
    assert len(by_hops) >= 4  # several hop counts were exercised


def test_uncontended_stream_moves_one_flit_per_cycle(example):
    """A 40-flit packet over 2 hops with 4-flit buffers: the tail is L - 1 cycles after the head."""
    plan = small_plan(example, "torus-4x4")
    pair_hops = analyse_routing(plan, keep_pairs=True).pair_hops
    src, dst = next(pair for pair, (hops, _) in sorted(pair_hops.items()) if hops == 2)
    trace = [TracePacket(0, src, dst, 40)]
    bench = FabricBench(plan, trace)
    bench.run(60)
    assert bench.errors == []
    assert bench.delivered[src, 0] == 2 * 2 + 40 + 2
    # and the head arrived 2H + 3 cycles after creation, so every flit took one cycle
    assert bench.first_flit[src, 0] == 2 * 2 + 3
