"""The model's router settings (docs/microarchitecture.md, steps 2 to 4) on hand-built cases."""

from __future__ import annotations

import pytest
import yaml
from zfabric.sim.model import FabricModel
from zfabric.sim.model.fabric_model import _Flit

from zfabric import compile_plan, load_spec
from zfabric.plan import PlanView


def plan_with(example, name: str, router: dict, routing: str | None = None):
    data = yaml.safe_load(example(name).read_text())
    data["router"] = router
    if routing is not None:
        data["routing"] = routing
    return compile_plan(load_spec(data))


def head_at_source(model: FabricModel, src: int, dst: int) -> tuple[int, int, _Flit]:
    """(switch, local port, head flit) of a packet from ``src`` to ``dst`` at the front of its
    first switch's local input, routed (its decision computed) but not yet selected."""
    injection = model.routing.injections(src, dst)[0]
    head = _Flit(model.offer(src, dst), 0, injection.head)
    head.decision = model.routing.route(injection.switch, injection.port, 0, injection.head)
    return injection.switch, injection.port, head


def first_hops(plan, packets: int) -> tuple[list[int], list[int]]:
    """Endpoint 0 sends ``packets`` back-to-back packets to the last endpoint (over the top of
    the tree): the output port each head took at the first switch, and that switch's up ports."""
    model = FabricModel(plan)
    sent = [model.offer(0, len(plan.endpoints) - 1) for _ in range(packets)]
    model.run(200)
    assert all(p.delivered is not None for p in sent)
    switch = sent[0].path[0][0]
    return [p.path[0][1] for p in sent], PlanView(plan).ports_by_role[switch]["up"]


def test_first_free_crowds_the_first_up_port(example):
    """Each head finds the first up port free again (the tail before it released it)."""
    taken, up = first_hops(plan_with(example, "znode-64", {"selection": "first-free"}), 6)
    assert taken == [up[0]] * 6


def test_round_robin_takes_successive_up_ports(example):
    """The input port's selection pointer moves past each port taken: up ports in turn."""
    taken, up = first_hops(plan_with(example, "znode-64", {"selection": "round-robin"}), 6)
    assert len(up) == 4
    assert taken == [up[0], up[1], up[2], up[3], up[0], up[1]]


def test_selection_never_changes_zero_load_latency(example):
    """A lone packet sees every candidate free: the contract's 2H + L + 2 either way."""
    for selection in ("first-free", "round-robin"):
        model = FabricModel(plan_with(example, "znode-64", {"selection": selection}))
        packet = model.offer(0, 63)
        model.run(100)
        assert packet.latency == 2 * packet.hops + packet.length + 2


def test_second_iteration_matches_what_the_first_left(example):
    """Input 1 picks its VC 0 for output 3 and loses it to input 2 (output 3's pointer is at
    2); its VC 1 wants output 4, which nobody took: only the second iteration sends it."""
    requests = [[], [(0, (3, 0)), (1, (4, 1))], [(0, (3, 1))], [], []]
    grants = {}
    for allocator in ("separable", "separable-2"):
        model = FabricModel(plan_with(example, "torus-4x4", {"allocator": allocator}))
        model._rr_out[0][3] = 2
        grants[allocator] = model._allocate(0, requests, model._rr_in[0], model._rr_out[0])
    assert grants["separable"] == [(2, 0, 3, 1)]
    assert grants["separable-2"] == [(2, 0, 3, 1), (1, 1, 4, 1)]


def test_zero_load_latency_per_stages(example):
    """A lone packet of L flits over H switch-to-switch links: 2H + L + 2 with one stage,
    3H + L + 3 with two, 4H + L + 4 with three, 5H + L + 5 with four and 6H + L + 6 with five
    (one more cycle per switch per stage, H + 1 switches, for the head only: the body follows
    one flit per cycle, with four and five stages while L <= B = 4). Five by hand: routed at
    a, staged for VC allocation at a + 1, acquires at a + 2, staged for the crossbar at a + 3,
    crosses at a + 4, on the link at a + 5, at the next switch's front at a + 6."""
    formulas = {
        1: lambda h, n: 2 * h + n + 2,
        2: lambda h, n: 3 * h + n + 3,
        3: lambda h, n: 4 * h + n + 4,
        4: lambda h, n: 5 * h + n + 5,
        5: lambda h, n: 6 * h + n + 6,
    }
    for name, pairs in (("torus-4x4", [(0, 5), (0, 10), (3, 12)]), ("znode-64", [(0, 63)])):
        for stages, formula in formulas.items():
            for length in (1, 4):
                for src, dst in pairs:
                    model = FabricModel(plan_with(example, name, {"stages": stages}))
                    packet = model.offer(src, dst, length)
                    model.run(100)
                    assert packet.hops > 0
                    assert packet.latency == formula(packet.hops, length), (name, stages)


@pytest.mark.parametrize("stages", [4, 5])
def test_four_stages_stream_needs_six_credits(example, stages):
    """stages 4 and 5 (docs/microarchitecture.md, Streaming): a credit is back for use 5
    cycles after it is spent and the input stage counts the staged flit's as spent, so a
    packet longer than B streams at one flit per cycle (and meets the zero-load formula) with
    B >= 6 only."""
    for depth, length, on_time in ((6, 8, True), (6, 40, True), (4, 5, False), (4, 40, False)):
        data = yaml.safe_load(example("torus-4x4").read_text())
        data["router"], data["buffer_depth"] = {"stages": stages}, depth
        model = FabricModel(compile_plan(load_spec(data)))
        packet = model.offer(0, 10, length)
        model.run(400)
        formula = (stages + 1) * (packet.hops + 1) + length  # (S+1)H + L + S+1
        assert (packet.latency == formula) is on_time, (depth, length, packet.latency)
        assert packet.latency >= formula


@pytest.mark.parametrize("stages", [1, 3, 4, 5])
def test_zero_load_latency_with_buffers_under_the_credit_period(stages):
    """Buffers of B flits under the credit period P (4 at stages 1-3, 6 at 4-5; Streaming):
    the first B flits of a stream go back to back, flit i leaves P * (i div B) + i mod B
    cycles after the first, so the tail is floor((L - 1) / B) * (P - B) cycles later than
    at one flit per cycle. The model on a 6-ring, every hop count and length 1 to 9."""
    period = 4 if stages <= 3 else 6
    for depth in range(2, 7):
        spec = {"name": "r", "topology": {"kind": "torus", "k": [6]}, "buffer_depth": depth}
        plan = compile_plan(load_spec({**spec, "router": {"stages": stages}}))
        for length in range(1, 10):
            for dst in (1, 2, 3):
                model = FabricModel(plan)
                packet = model.offer(0, dst, length)
                model.run(200)
                late = (length - 1) // depth * (period - depth) if depth < period else 0
                formula = (stages + 1) * (packet.hops + 1) + length + late
                assert packet.latency == formula, (depth, length, packet.hops)
                predicted = plan.router.zero_load_latency(packet.hops, length, 0, depth)
                assert predicted == formula


def test_occupancy_passes_a_busy_up_port(example):
    """znode-64's up pool, selection pointer at 0: an up port whose output VC has 1 credit of 4
    left (the previous packet still in the next switch's buffer) is what round-robin takes;
    occupancy takes the next up port, whose credit is above half the buffer (3 >= 4 // 2 + 1).
    With every up port that busy it falls back to round-robin among them."""
    picks = {}
    for selection in ("round-robin", "occupancy"):
        model = FabricModel(plan_with(example, "znode-64", {"selection": selection}))
        s, p, head = head_at_source(model, 0, 63)
        up = PlanView(model.plan).ports_by_role[s]["up"]
        assert [hop.port for hop in head.decision.hops] == up
        model._credit[s][up[0]][0] = 1
        picks[selection] = model._select(s, p, 0, head)
        for port in up:
            model._credit[s][port][0] = 2
        picks[selection, "all busy"] = model._select(s, p, 0, head)
    assert picks["round-robin"] == picks["round-robin", "all busy"] == (up[0], 0)
    assert picks["occupancy"] == (up[1], 0)
    assert picks["occupancy", "all busy"] == (up[0], 0)


def test_occupancy_checks_levels_before_occupancy(example):
    """duato on torus-4x4, a head two hops away in both dimensions: adaptive VCs of both
    productive ports (level 0), then the escape VC (level 1). An adaptive VC that holds flits
    downstream (3 of 4 credits) is not free (adaptive VCs are taken only when empty), so with
    every adaptive VC busy both selections take the escape VC. With one adaptive VC empty,
    occupancy takes it (its level comes first: the escape is the last resort, the reference's
    "else the deterministic output"), where round-robin still takes the escape VC, the lowest
    VC of the port its pointer reaches."""
    picks = {}
    for selection in ("round-robin", "occupancy"):
        model = FabricModel(plan_with(example, "torus-4x4", {"selection": selection}, "duato"))
        s, p, head = head_at_source(model, 0, 5)
        *adaptive, escape = head.decision.hops
        assert len(adaptive) == 2 and escape.port == adaptive[0].port
        assert {model.routing.priority(s, escape.port, w) for w in escape.vcs} == {1}
        assert {model.routing.priority(s, h.port, w) for h in adaptive for w in h.vcs} == {0}
        model._rr_select[s][p] = adaptive[0].port
        for hop in adaptive:
            for w in hop.vcs:
                model._credit[s][hop.port][w] = 3
        picks[selection] = model._select(s, p, 0, head)
        model._credit[s][adaptive[1].port][adaptive[1].vcs[-1]] = 4
        picks[selection, "one empty"] = model._select(s, p, 0, head)
    assert picks["round-robin"] == picks["round-robin", "one empty"] == (escape.port, escape.vcs[0])
    assert picks["occupancy"] == (escape.port, escape.vcs[0])
    assert picks["occupancy", "one empty"] == (adaptive[1].port, adaptive[1].vcs[-1])


def test_stages_5_dropped_head_is_not_a_quiet_cycle(example):
    """stages 5: a head staged for VC allocation whose output VC another head took meanwhile is
    dropped by the re-check (docs/microarchitecture.md). Nothing is acquired, sent or staged
    anew, yet the state moved (the head is eligible again next cycle, maybe for another free
    candidate), so the switch reports activity and the deadlock watch cannot call it stuck."""
    model = FabricModel(plan_with(example, "torus-4x4", {"stages": 5}))
    s, p, head = head_at_source(model, 0, 10)
    (o, w) = model._select(s, p, 0, head)
    model._vc_staged[s][p] = (0, (o, w))
    model._owner[s][o][w] = ((p + 1) % len(model._buf[s]), 0)  # taken meanwhile
    assert model._switch_cycle(s)
    assert model._assign[s][p][0] is None and not any(model._vc_staged[s])
