"""Reference model against the microarchitecture contract, the plan's routing and its invariants."""

from __future__ import annotations

import dataclasses
import random
from collections import defaultdict

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from zfabric.sim.analytic import zero_load_latency
from zfabric.sim.model import DeadlockWatch, FabricModel, ModelDeadlock
from zfabric.sim.traffic import Traffic, TrafficConfig

from zfabric import analyse_routing, compile_plan, load_spec

ZERO_LOAD_EXAMPLES = ["torus-4x4", "ndt-2x2x2", "ndt-4x4x4", "znode-64", "snode-128"]


def plan_of(example, name, **overrides):
    spec = load_spec(example(name))
    if overrides:
        spec = dataclasses.replace(spec, **overrides)
    return compile_plan(spec)


def lone_packet(plan, src, dst, length):
    model = FabricModel(plan)
    packet = model.offer(src, dst, length)
    while packet.delivered is None:
        model.step()
        assert model.cycle < 1000, "a lone packet must arrive"
    return packet


@pytest.mark.parametrize("name", ZERO_LOAD_EXAMPLES)
def test_zero_load_latency_is_exact_for_every_hop_count(example, name):
    plan = plan_of(example, name)
    analysis = analyse_routing(plan, keep_pairs=True)
    by_hops = defaultdict(list)
    for (src, dst), (lo, hi) in analysis.pair_hops.items():
        assert lo == hi  # every example routes each pair in a fixed number of hops
        by_hops[lo].append((src, dst))
    rng = random.Random(7)
    for hops, pairs in sorted(by_hops.items()):
        for src, dst in rng.sample(pairs, min(4, len(pairs))):
            for length in (1, 4):
                packet = lone_packet(plan, src, dst, length)
                assert packet.hops == hops
                assert packet.latency == zero_load_latency(hops, length), (src, dst, hops)


def test_one_flit_per_cycle_on_an_uncontended_stream(example):
    plan = plan_of(example, "torus-4x4")  # buffer_depth 4: the credit loop is 4 cycles
    packet = lone_packet(plan, 0, 2, 64)
    # head as at zero load, then one flit per cycle: latency = 2H + L + 2 with L = 64
    assert packet.latency == zero_load_latency(2, 64)


def test_shallow_buffers_halve_the_stream(example):
    plan = plan_of(example, "torus-4x4", buffer_depth=2)
    model = FabricModel(plan)
    packet = model.offer(0, 1, 64)
    arrivals = []
    while packet.delivered is None:
        before = packet.flits_delivered
        model.step()
        if packet.flits_delivered > before:
            arrivals.append(model.cycle)
    gaps = {b - a for a, b in zip(arrivals[4:], arrivals[5:], strict=False)}
    # credit round trip of 4 cycles with 2 credits: 2 flits every 4 cycles
    assert sum(b - a for a, b in zip(arrivals[4:-1], arrivals[5:], strict=False)) == pytest.approx(
        2 * (len(arrivals) - 6), rel=0.1
    )
    assert gaps <= {1, 3}


def drain(model, traffic, cycles):
    """Offer traffic for ``cycles``, then stop offering and run until the fabric is empty."""
    offered = []
    for cycle in range(cycles):
        offered += [model.offer(s, d, n) for s, d, n in traffic.packets_at(cycle)]
        model.step()
        assert not model.stuck
    limit = model.cycle + 20 * cycles + 2000
    while any(p.delivered is None for p in offered):
        model.step()
        assert not model.stuck and model.cycle < limit
    return offered


INVARIANT_EXAMPLES = ["torus-4x4", "ndt-2x2x2", "znode-64", "snode-128"]


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    name=st.sampled_from(INVARIANT_EXAMPLES),
    rate=st.sampled_from([0.05, 0.3, 0.6, 1.0]),
    pattern=st.sampled_from(["uniform", "transpose", "hotspot", "bit-complement"]),
    length=st.integers(1, 6),
    depth=st.sampled_from([2, 4]),
    injection_vcs=st.sampled_from([1, "auto"]),
    seed=st.integers(0, 10_000),
)
def test_invariants_hold_up_to_and_past_saturation(
    example, name, rate, pattern, length, depth, injection_vcs, seed
):
    spec = load_spec(example(name))
    router = dataclasses.replace(spec.router, injection_vcs=injection_vcs)
    plan = compile_plan(dataclasses.replace(spec, buffer_depth=depth, router=router))
    model = FabricModel(plan)  # checks depth, contiguity, delivery endpoint and order of flits
    traffic = Traffic(
        TrafficConfig(pattern=pattern, rate=rate, packet_length=length), len(plan.endpoints), seed
    )
    offered = drain(model, traffic, 300)
    model.check_credits()
    assert sorted(p.id for p in model.delivered) == sorted(p.id for p in offered)  # exactly once
    assert all(p.flits_delivered == p.length for p in offered)  # intact
    assert model.in_network == 0
    # deterministic, one VC per hop, one injection VC: in order per source-destination pair
    # (docs/rtl.md; balanced dateline classes, the torus default, offer two VCs off the wrap)
    one_vc = plan.routing.params.get("vc_classes") != "balanced"
    if plan.routing.name != "sliced" and one_vc and plan.router.injection_vcs == 1:
        last = {}
        for packet in sorted(model.delivered, key=lambda p: p.delivered):
            key = (packet.src, packet.dst)
            assert packet.payload[1] > last.get(key, -1)
            last[key] = packet.payload[1]


def run_until_stuck(plan, config, cycles, seed=1):
    model = FabricModel(plan)
    traffic = Traffic(config, len(plan.endpoints), seed)
    for cycle in range(cycles):
        for s, d, n in traffic.packets_at(cycle):
            model.offer(s, d, n)
        model.step()
        if model.stuck:
            with pytest.raises(ModelDeadlock) as caught:
                model.check_deadlock()
            return caught.value
    return None


def run_until_deadlock(plan, config, cycles, seed=1):
    """(model, traffic, the deadlock DeadlockWatch reports or None)."""
    model = FabricModel(plan)
    watch = DeadlockWatch(model)
    traffic = Traffic(config, len(plan.endpoints), seed)
    for cycle in range(cycles):
        for s, d, n in traffic.packets_at(cycle):
            model.offer(s, d, n)
        model.step()
        deadlock = watch()
        if deadlock:
            return model, traffic, deadlock
    return model, traffic, None


#: nDT 3x3x3 with Card0 = d0+ d1+ d2+: every dimension split across the cards, and with
#: ``rings: shared`` the ring classes of several dimensions share the internal link's VCs, so
#: the CDG is cyclic. One
#: injection VC: with two (``auto``) the endpoints keep feeding the knot, and in these runs
#: the whole fabric has stopped (a deadlock, not a partial one) by the time it is seen
PARTIAL = {
    "topology": {"kind": "ndt", "k": [3, 3, 3], "ports": ["d0+", "d1+", "d2+"]},
    "routing": {"name": "dort", "rings": "shared"},
    "router": {"injection_vcs": 1},
}


def test_a_partial_deadlock_is_found_while_other_traffic_moves():
    plan = compile_plan(load_spec(PARTIAL))
    assert analyse_routing(plan).cycle  # the proof finds it first
    model, traffic, deadlock = run_until_deadlock(plan, TrafficConfig(rate=0.9), 3000)
    assert deadlock is not None and deadlock.partial and len(deadlock.cycle) >= 2
    assert not model.stuck  # the rest of the fabric still moves...
    frozen, delivered = model.fronts(), model.delivered_count
    for cycle in range(model.cycle, model.cycle + 2000):
        for s, d, n in traffic.packets_at(cycle):
            model.offer(s, d, n)
        model.step()
    assert model.delivered_count > delivered  # ...and delivers,
    assert model.knot(frozen)  # while the knot has not moved at all in 2000 more cycles
    assert str(deadlock).startswith(f"partial deadlock at cycle {deadlock.at}: ")


def test_ring_without_datelines_deadlocks_at_run_time():
    plan = compile_plan(
        load_spec(
            {
                "topology": {"kind": "torus", "k": [6]},
                "routing": {"name": "dor", "datelines": False, "tie": "plus"},
                "buffer_depth": 2,
            }
        )
    )
    deadlock = run_until_stuck(plan, TrafficConfig(rate=0.9, packet_length=8), 5000)
    assert deadlock is not None
    ring = [c for c in deadlock.cycle if "(d0+)" in c]
    assert len({c.split(".")[0] for c in ring}) == 6  # the wait cycle goes all round the ring


def test_ndt_without_internal_link_classes_deadlocks_at_run_time(example):
    spec = load_spec(example("ndt-4x4x4"))
    import dataclasses

    one_vc = {"ch": 0, "ring_upper": 0, "ring_lower": 0, "pe": 0}
    spec = dataclasses.replace(
        spec, routing_params={**spec.routing_params, "internal_vcs": one_vc}, buffer_depth=2
    )
    plan = compile_plan(spec)
    assert analyse_routing(plan).cycle  # the proof says so first
    deadlock = run_until_stuck(plan, TrafficConfig(rate=0.8, packet_length=8), 20000)
    assert deadlock is not None
    assert any("(internal)" in channel for channel in deadlock.cycle)


@pytest.mark.parametrize("name", ["torus-4x4", "ndt-2x2x2", "znode-64"])
def test_deadlock_free_fabrics_never_freeze_under_overload(example, name):
    plan = plan_of(example, name, buffer_depth=2)
    config = TrafficConfig(rate=1.0, packet_length=8)
    assert run_until_deadlock(plan, config, 3000)[2] is None  # not even partly


def test_torus_past_saturation_is_not_a_deadlock(example):
    plan = plan_of(example, "torus-4x4")
    assert run_until_deadlock(plan, TrafficConfig(rate=0.9), 4000)[2] is None


def test_cosim_reports_a_model_deadlock_with_its_channels(tmp_path):
    from zfabric.sim.tb.runner import CosimDeadlock, cosim, simulator_available, traffic_trace

    if not simulator_available("icarus"):
        pytest.skip("icarus is not installed")
    plan = compile_plan(load_spec(PARTIAL))
    trace = traffic_trace(plan, TrafficConfig(rate=0.9), 2000)
    with pytest.raises(CosimDeadlock) as caught:
        cosim(plan, trace, build_dir=tmp_path)  # the model runs first: nothing is built
    assert caught.value.deadlock.partial and caught.value.deadlock.cycle
    assert "partial deadlock at cycle" in str(caught.value)
    assert not any(tmp_path.iterdir())
