"""``router.injection_vcs`` in the model: N VCs on every injection link
(docs/microarchitecture.md, Endpoints)."""

from __future__ import annotations

import dataclasses

import pytest
from test_model import drain
from zfabric.sim.model import EjectStalls, FabricModel
from zfabric.sim.traffic import Traffic, TrafficConfig

from zfabric import analyse_routing, compile_plan, load_spec
from zfabric.router_settings import RouterSettings


def plan_with(example, name, **router):
    spec = load_spec(example(name))
    return compile_plan(dataclasses.replace(spec, router=RouterSettings(**router)))


@pytest.mark.parametrize("name", ["torus-4x4", "ndt-2x2x2", "znode-64"])
@pytest.mark.parametrize("stages", [1, 3, 4])
def test_zero_load_latency_is_unchanged_with_two_injection_vcs(example, name, stages):
    """1 + (S+1)(H+1) + L - 1 for every hop count, as with one injection VC."""
    plan = plan_with(example, name, injection_vcs=2, stages=stages)
    analysis = analyse_routing(plan, keep_pairs=True)
    seen = set()
    for (src, dst), (hops, _) in sorted(analysis.pair_hops.items()):
        if hops in seen:
            continue
        seen.add(hops)
        for length in (1, 4):
            model = FabricModel(plan)
            packet = model.offer(src, dst, length)
            while packet.delivered is None:
                model.step()
                assert model.cycle < 500
            assert packet.hops == hops
            assert packet.latency == plan.router.zero_load_latency(hops, length)


def blocked_then_free(plan):
    """Endpoint 0 sends a 12-flit packet to endpoint 1, which takes nothing before cycle 200,
    then a 4-flit packet to endpoint 4. The first fills endpoint 1's receive buffer, the
    switches' buffers behind it and, last, VC 0 of endpoint 0's local input, where its tail
    ends up (4 + 4 + 4 flits of B = 4)."""
    model = FabricModel(plan, eject_ready=lambda e, a, c: e != 1 or c >= 200)
    first = model.offer(0, 1, 12)
    second = model.offer(0, 4, 4)
    while second.delivered is None or first.delivered is None:
        model.step()
        model.check_credits()
        assert model.cycle < 1000
    return first, second


def test_a_second_injection_vc_lets_a_packet_pass_a_blocked_one(example):
    """With one injection VC the second packet cannot even leave its endpoint until endpoint 1
    takes flits again (the first one fills the local input); with two it starts on VC 1 as
    soon as the first one's tail has left the endpoint and arrives at zero-load latency from
    there, before the first: packets of one source are no longer delivered in order."""
    one = plan_with(example, "torus-4x4", injection_vcs=1)
    first, second = blocked_then_free(one)
    assert second.injected > 200  # no credit: VC 0 holds the first packet's last 4 flits
    assert second.delivered > first.delivered > 200

    two = plan_with(example, "torus-4x4", injection_vcs=2)
    hops = analyse_routing(two, keep_pairs=True).pair_hops[(0, 4)][0]
    first, second = blocked_then_free(two)
    assert second.injected == first.injected + 12
    assert second.delivered == second.injected + two.router.zero_load_latency(hops, 4)
    assert second.delivered < 200 < first.delivered


@pytest.mark.parametrize("name", ["torus-4x4", "znode-64", "snode-128"])
@pytest.mark.parametrize("vcs, stall", [(2, 0.0), (3, 0.5)])
def test_invariants_hold_with_injection_vcs(example, name, vcs, stall):
    """Credits conserved on every link, injection and ejection VC; every packet delivered
    once, intact, flits in order (the model's own checks)."""
    plan = plan_with(example, name, injection_vcs=vcs)
    model = FabricModel(plan, eject_ready=EjectStalls(stall, seed=2) if stall else None)
    traffic = Traffic(TrafficConfig(rate=0.6, packet_length=(1, 6)), len(plan.endpoints), 4)
    offered = drain(model, traffic, 200)
    model.check_credits()
    assert sorted(p.id for p in model.delivered) == sorted(p.id for p in offered)
    assert all(p.flits_delivered == p.length for p in offered)
    assert model.in_network == 0
