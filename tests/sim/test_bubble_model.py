"""Bubble flow control in the reference model (docs/microarchitecture.md, *Bubble flow
control*): the 1-VC torus 4x4 with ``tie: plus`` and the nDT 2x4x2 (tests/bubble_specs.py:
rings that close a dependency cycle without the bubble, so their proofs need it:
tests/zfabric/test_bubble.py) run past saturation and drain; the same switches with the
entering rule weakened from 2L to L credits (plain cut-through) deadlock under the same load;
a lone packet keeps cut-through's zero-load latency."""

from __future__ import annotations

import numpy as np
import pytest
from bubble_specs import BUBBLE_NDT, BUBBLE_TORUS
from overload import offer_then_drain
from zfabric.sim.fast import FastModel
from zfabric.sim.model import FabricModel
from zfabric.sim.traffic import Traffic, TrafficConfig

from zfabric import compile_plan, load_spec

BUBBLE = {**BUBBLE_TORUS, "name": "t"}
FABRICS = {"torus": BUBBLE, "ndt": {**BUBBLE_NDT, "name": "n"}}


def bubble_plan(**keys):
    return compile_plan(load_spec({**BUBBLE, **keys}))


def heavy_load(model: FabricModel, cycles: int, seed: int) -> str | None:
    """Uniform traffic at 0.9 flits/cycle/endpoint (past the knee) for ``cycles``, then the
    sources stop: 'deadlock' if the watch sees one, None once every packet is delivered."""
    plan = model.plan
    traffic = Traffic(TrafficConfig(rate=0.9, packet_length=4), len(plan.endpoints), seed=seed)
    offered, deadlocked = offer_then_drain(model, traffic, cycles, 40000)
    if deadlocked:
        return "deadlock"
    assert len(offered) > 1000 and model.delivered_count == len(offered)
    return None


@pytest.mark.parametrize(
    "fabric, seed",
    [
        ("torus", 1),
        pytest.param("torus", 2, marks=pytest.mark.slow),
        ("ndt", 1),
        pytest.param("ndt", 2, marks=pytest.mark.slow),
    ],
)
def test_the_bubble_fabric_drains_past_saturation(fabric, seed):
    plan = compile_plan(load_spec(FABRICS[fabric]))
    assert heavy_load(FabricModel(plan), 2000, seed) is None


@pytest.mark.parametrize("fabric", ["torus", "ndt"])
@pytest.mark.parametrize("seed", [1, 2])
def test_entering_with_room_for_one_packet_deadlocks_the_same_fabric(fabric, seed):
    """The planted weakening: a head entering a ring asks L credits, as a continuing one."""
    model = FabricModel(compile_plan(load_spec(FABRICS[fabric])))
    model._entering = [set() for _ in model._entering]
    assert heavy_load(model, 2000, seed) == "deadlock"


def test_entering_and_continuing_pairs_on_a_torus_switch():
    """Per switch of the 4x4 torus: 4 ring outputs, each entered from the 4 other inputs
    (local and the three other ring inputs) and continued from one: 16 entering pairs."""
    model = FabricModel(bubble_plan())
    view = model.view
    for switch, pairs in zip(view.switches, model._entering, strict=True):
        assert len(pairs) == 16
        for p, o, w in pairs:
            out, came = switch.ports[o], switch.ports[p]
            assert w == 0
            assert out.role == "external"
            assert came.role == "local" or (came.dim, came.sign) != (out.dim, -out.sign)


#: per nDT 2x4x2 card (CBest, tests/bubble_specs.py), by hand: its ports (0 local, 1 internal,
#: then its external ports) and the (input, output, VC) on which a head continues its ring;
#: the internal link's VC 1 is d1's ring (Card0 sends it +, Card1 -), its VCs 0 (ch) and 2
#: (pe) none
CONTINUING = {
    0: ([(0, 1), (0, -1), (1, -1)], {(4, 1, 1), (3, 2, 0), (2, 3, 0), (1, 4, 0)}),
    1: ([(1, 1), (2, 1), (2, -1)], {(2, 1, 1), (1, 2, 0), (4, 3, 0), (3, 4, 0)}),
}


def test_entering_and_continuing_on_an_ndt_card():
    """Per card, four ring output channels (the internal ring VC and three external ports),
    each continued from one input and entered from the other four: 16 entering."""
    model = FabricModel(compile_plan(load_spec(FABRICS["ndt"])))
    for switch, pairs in zip(model.view.switches, model._entering, strict=True):
        ports, continuing = CONTINUING[switch.position["card"]]
        assert [(p.dim, p.sign) for p in switch.ports[2:]] == ports
        rings = {(1, 1)} | {(o, 0) for o in (2, 3, 4)}
        expected = {(p, o, w) for o, w in rings for p in range(5)} - continuing
        assert pairs == expected


def test_a_head_entering_a_ring_waits_for_room_for_two_packets():
    """ep0 sends to ep2 (two hops + in dimension 0: sw0_0 -> sw1_0 -> sw2_0). With sw0_0's
    credit toward sw1_0 lowered to 7 (room for a continuing head: 7 >= L = 4), the head at
    sw0_0, entering the ring from the endpoint, needs 2L = 8 and waits; with 8 it goes."""
    model = FabricModel(bubble_plan(), check_invariants=False)
    o = next(i for i, p in enumerate(model.view.switches[0].ports) if (p.dim, p.sign) == (0, 1))
    model._credit[0][o][0] = 7
    packet = model.offer(0, 2)
    model.run(40)
    assert packet.delivered is None and model._owner[0][o][0] is None
    model._credit[0][o][0] = 8
    model.run(40)
    assert packet.delivered is not None and packet.hops == 2


@pytest.mark.parametrize("stages", [1, 3])
def test_a_lone_packet_keeps_the_cut_through_latency(stages):
    """Every buffer empty: an entering head finds B = 8 >= 2L credits, so nothing waits and
    the latency is cut-through's hand formula (S + 1)(H + 1) + L."""
    plan = bubble_plan(router={"switching": "cut_through", "stages": stages})
    for dst, hops in [(1, 1), (2, 2), (5, 2), (10, 4)]:
        model = FabricModel(plan)
        packet = model.offer(0, dst)
        model.run(200)
        assert packet.hops == hops
        assert packet.latency == (stages + 1) * (hops + 1) + 4
        assert packet.latency == plan.router.zero_load_latency(hops, 4, buffer_depth=8)


def test_a_packet_of_another_length_is_refused():
    # on both engines, whichever way the packets come: the proof counts packets of one length
    plan = bubble_plan()
    refused = "3-flit packet under bubble flow control"
    with pytest.raises(ValueError, match=refused):
        FabricModel(plan).offer(0, 1, 3)
    with pytest.raises(ValueError, match=refused):
        FastModel(plan).offer(0, 1, 3)
    rows = np.array([[0, 0, 1, plan.router.longest_packet], [0, 1, 0, 3]])
    with pytest.raises(ValueError, match=refused):
        FastModel(plan, on_deliver_rows=lambda rows: None).offer_rows(rows)
