"""Ejection backpressure in the model: receive buffers, credited local outputs, stall patterns
(docs/microarchitecture.md, Endpoints)."""

from __future__ import annotations

import pytest
import yaml
from test_model import drain, plan_of
from zfabric.sim.model import DeadlockWatch, EjectStalls, FabricModel
from zfabric.sim.traffic import Traffic, TrafficConfig

from zfabric import compile_plan, load_spec


def take_cycles(model, packet, limit=1000):
    """The cycles in which the user takes each flit of ``packet``."""
    cycles = []
    while packet.delivered is None:
        before = packet.flits_delivered
        model.step()
        model.check_credits()
        assert model.cycle < limit
        cycles += [model.cycle - 1] * (packet.flits_delivered - before)
    return cycles


def test_a_stalled_receiver_holds_b_flits_then_streams_one_per_cycle(example):
    """torus-4x4, B = 4, one 8-flit packet 0 -> 1 (1 hop, alone at 1 + 2*2 + 7 = 12 cycles).
    With ready low until cycle 40: the receive buffer holds flits 1-4 and the last switch's
    input buffer flits 5-8. From 40 the user takes one flit per cycle: the credit of the flit
    taken at c is spent at c+1 and its flit is on the link at c+2, while the buffer still
    holds two flits, so it never runs dry: the tail is taken at 40 + 7."""
    plan = plan_of(example, "torus-4x4")
    assert plan.buffer_depth == 4
    model = FabricModel(plan, eject_ready=lambda e, a, c: c >= 40)
    packet = model.offer(0, 1, 8)
    assert take_cycles(model, packet) == list(range(40, 48))
    assert packet.latency == 47


def test_a_one_cycle_stall_delays_the_rest_by_one(example):
    """A flit on the link that is not taken waits in the buffer and goes out next cycle: the
    lone packet's flits come out at 12-7 .. 12 (1 hop, 8 flits), so a stall at cycle 7 shifts
    flits 3 to 8 by one cycle (the credits cover the extra flit in flight)."""
    plan = plan_of(example, "torus-4x4")
    model = FabricModel(plan, eject_ready=lambda e, a, c: c != 7)
    packet = model.offer(0, 1, 8)
    assert take_cycles(model, packet) == [5, 6, 8, 9, 10, 11, 12, 13]


def test_a_long_stall_is_not_a_deadlock_and_everything_drains(example):
    """Every packet goes to endpoint 5, which takes nothing for 3000 cycles: the fabric fills
    behind it and freezes, but waiting for the user is never reported as a deadlock; then it
    drains, every packet intact."""
    plan = plan_of(example, "torus-4x4")
    model = FabricModel(plan, eject_ready=lambda e, a, c: e != 5 or c >= 3000)
    watch = DeadlockWatch(model, every=64)
    packets = [model.offer(src, 5, 4) for src in range(16) if src != 5 for _ in range(6)]
    while model.cycle < 3000:
        model.step()
        assert watch() is None and not model.stuck
    assert model.delivered_count == 0
    assert model.in_network > 0
    model.check_credits()
    while model.delivered_count < len(packets):
        model.step()
        assert watch() is None and model.cycle < 6000
    assert all(p.flits_delivered == p.length for p in packets)


@pytest.mark.parametrize("name", ["torus-4x4", "ndt-2x2x2", "znode-64"])
@pytest.mark.parametrize("stall", [0.3, 0.8])
def test_random_stalls_keep_every_invariant(example, name, stall):
    """Credits conserved on every link and ejection every cycle, nothing lost or duplicated,
    flits in order (the model's own checks), and stalls cost latency."""
    plan = plan_of(example, name)
    config = TrafficConfig(rate=0.4, packet_length=(1, 6))
    latency = {}
    for p in (0, stall):
        model = FabricModel(plan, eject_ready=EjectStalls(p, seed=5) if p else None)
        traffic = Traffic(config, len(plan.endpoints), 3)
        offered = drain(model, traffic, 200)
        model.check_credits()
        assert sorted(q.id for q in model.delivered) == sorted(q.id for q in offered)
        assert all(q.flits_delivered == q.length for q in offered)
        latency[p] = sum(q.latency for q in offered) / len(offered)
    assert latency[stall] > latency[0]


def test_stall_pattern_is_a_seeded_function():
    stalls = EjectStalls(0.3, seed=9)
    draws = [stalls(e, a, c) for e in range(8) for a in range(2) for c in range(5000)]
    assert draws == [
        EjectStalls(0.3, seed=9)(e, a, c) for e in range(8) for a in range(2) for c in range(5000)
    ]
    assert draws.count(False) / len(draws) == pytest.approx(0.3, abs=0.01)
    other = [
        EjectStalls(0.3, seed=10)(e, a, c) for e in range(8) for a in range(2) for c in range(5000)
    ]
    assert other != draws
    assert all(EjectStalls(0.0)(e, 0, c) for e in range(4) for c in range(1000))


@pytest.mark.parametrize("p", [1.0, -0.1, float("nan"), "0.3", True])
def test_stall_probability_outside_0_1_is_refused(p):
    with pytest.raises(ValueError, match="stall probability"):
        EjectStalls(p)


def both_taken(plan):
    """The cycles in which the user takes each flit of two 4-flit packets to endpoint 1, from
    its two ring neighbours 0 and 2, both created at cycle 0."""
    model = FabricModel(plan)
    packets = {"a": model.offer(0, 1, 4), "b": model.offer(2, 1, 4)}
    taken = {"a": [], "b": []}
    while any(p.delivered is None for p in packets.values()):
        before = {k: p.flits_delivered for k, p in packets.items()}
        model.step()
        model.check_credits()
        for k, p in packets.items():
            taken[k] += [model.cycle - 1] * (p.flits_delivered - before[k])
    return taken


@pytest.mark.parametrize(
    "ejection_vcs, a, b",
    [(1, [9, 10, 11, 12], [5, 6, 7, 8]), (2, [12, 13, 14, 15], [5, 7, 9, 11])],
)
def test_two_packets_into_one_endpoint(example, ejection_vcs, a, b):
    """Both heads reach switch 1 together (1 hop: first flit at 1 + 2*2 = 5) and request the
    local output, b from input port d0+ (1) ahead of a from d0- (2) in its pointer order.
    One ejection VC: b holds it to its tail (5-8), a's head crosses the cycle after b's tail
    (9-12). Two: a takes the second VC the next cycle and the link alternates b, a, b, a, ...;
    the user sees b whole (5, 7, 9, 11) while a's first three flits wait in VC 1's receive
    buffer, then a (12-15): packets stay whole on the output stream."""
    data = yaml.safe_load(example("torus-4x4").read_text())
    data["router"] = {"ejection_vcs": ejection_vcs}
    taken = both_taken(compile_plan(load_spec(data)))
    assert taken == {"a": a, "b": b}
