# amaranth: UnusedElaboratable=no
"""The Transit route unit against the routing function, exhaustively over what it reads.

Every fed input of every switch of a full 64, a one-stack bidelta 64 and a two-stack bidelta
64 (whose second stack swallows): for every value of the byte the input reads (the head byte,
or the one behind it where the input swallows, beside several values of the byte it drops),
the unit's candidate mask and next head equal the routing function's decision, its candidates
(both wires of a dilated direction) in the switch's flat output-VC order. Units alike (one
slice, swallow and mask set) are simulated once and checked against every input that has them.
"""

from __future__ import annotations

import pytest
from amaranth.hdl import Module, Signal
from amaranth.sim import Simulator
from zfabric.hdl.endpoint import TransitHeads
from zfabric.hdl.router.route import RouteRows, TransitRoute, candidate_mask

from zfabric import compile_plan, load_spec
from zfabric.plan import PlanView
from zfabric.routing.transit import transit_route
from zfabric.topologies.transit import TransitParams, address, transit_counts

FABRICS = {
    "full-64": {"form": "full"},
    "bidelta-64": {"form": "bidelta", "stacks": [3]},
    "bidelta-64-two-stacks": {"form": "bidelta", "stacks": [1, 2]},
}
#: values of the bytes a unit does not read (the dropped byte, the bytes behind)
FILLERS = (0x00, 0xFF, 0x5A)


def heads(n_bytes: int, swallow: bool) -> list[tuple[int, ...]]:
    """Every value of the byte read, beside each filler in the other bytes."""
    read = 1 if swallow else 0
    return [
        tuple(value if k == read else filler for k in range(n_bytes))
        for filler in FILLERS
        for value in range(256)
    ]


def simulate(units: dict, queries: dict) -> dict:
    """{key: unit}, {key: [head value]} -> {(key, head value): (mask, next head)}."""
    m = Module()
    for i, unit in enumerate(units.values()):
        m.submodules[f"unit{i}"] = unit
    answers = {}

    async def testbench(ctx):
        for key, values in queries.items():
            unit = units[key]
            for value in values:
                ctx.set(unit.head, value)
                answers[key, value] = (ctx.get(unit.cand), ctx.get(unit.next_head))

    sim = Simulator(m)
    sim.add_testbench(testbench)
    sim.run()
    return answers


@pytest.mark.parametrize("name", list(FABRICS))
def test_transit_route_units_agree_with_the_routing_function(name):
    plan = compile_plan(load_spec({"name": name, "topology": {"kind": "transit", **FABRICS[name]}}))
    rows = RouteRows(plan, prune_turns=False)
    assert rows.kind == "transit"
    routing, view = rows.routing, PlanView(plan)
    n_bytes = rows.head_width // 8
    units, queries, inputs = {}, {}, []
    for switch in range(len(plan.switches)):
        row = rows.row(switch)
        for port in range(row.ports.n_ports):
            fed = view.in_link[switch][port] is not None or (switch, port) in view.endpoint_at
            if not fed:
                continue
            swallow = routing.swallow[switch][port]
            key = (row.key, swallow)
            if key not in units:
                units[key] = row.unit(port, 0)
                assert isinstance(units[key], TransitRoute)
            queries[key] = [routing.head_value(h) for h in heads(n_bytes, swallow)]
            inputs.append((switch, port, key, swallow, row.ports))
    answers = simulate(units, queries)
    directions = set()
    for switch, port, key, swallow, ports in inputs:
        for head in heads(n_bytes, swallow):
            decision = routing.route(switch, port, 0, head)
            mask = candidate_mask(decision.hops, ports)
            got = answers[key, routing.head_value(head)]
            assert got == (mask, routing.head_value(decision.head)), (switch, port, head)
            directions.add(len(decision.hops))
    # dilated directions (two wires) and single ones (an alternate-mode half) both occur
    assert {1, 2} <= directions
    # swallowing inputs exist wherever the form has them
    assert any(routing.swallow[s][p] for s, p, *_ in inputs) == (name != "bidelta-64")


def test_a_dilated_direction_offers_its_two_wires():
    """Hand-derived: a stage-1 chip of a bidelta 64 reads slice 0; head byte 0b10_00_00_00
    (direction 2) offers outputs 4 and 5 (wires 0 and 1 of direction 2, one VC each)."""
    plan = compile_plan(
        load_spec({"name": "b", "topology": {"kind": "transit", "form": "bidelta", "stacks": [3]}})
    )
    rows = RouteRows(plan, prune_turns=False)
    switch = next(s.id for s in plan.switches if s.position.get("stage") == 1)
    unit = rows.row(switch).unit(0, 0)
    answers = simulate({0: unit}, {0: [0b1000_0000]})
    assert answers[0, 0b1000_0000] == (0b11 << 4, 0b1000_0000)


#: (params, sources): every source of the small fabrics, spread ones of the larger
HEAD_CASES = {
    "full-64": (TransitParams("full", ut_layers=1), range(64)),
    "full-4096": (TransitParams("full", ut_layers=2), (0, 1, 63, 64, 1000, 4095)),
    "hybrid-768": (TransitParams("hybrid", leaf_stages=2, ut_layers=1), (0, 5, 11, 12, 400, 767)),
    "hybrid-3072-j3": (TransitParams("hybrid", leaf_stages=3, ut_layers=1), (0, 47, 48, 3071)),
    "hybrid-12288-j4": (TransitParams("hybrid", leaf_stages=4, ut_layers=1), (191, 12287)),
    "capped-3072": (
        TransitParams("hybrid", leaf_stages=2, ut_layers=1, cap=True),
        (0, 11, 12, 767, 768, 3071),
    ),
}


@pytest.mark.parametrize("name", list(HEAD_CASES))
def test_transit_heads_compute_the_routing_functions_route(name):
    """The endpoint's route computation equals ``transit_route`` of the two addresses (the
    routing function's injections), for every destination of each source."""
    params, sources = HEAD_CASES[name]
    n = transit_counts(params)["processors"]
    width = (n - 1).bit_length()
    heads = TransitHeads(params=params, inputs=(0, 2))
    m = Module()
    dst, identity = Signal(width), Signal(width)
    head_width = 8 * 8
    mask, built = heads.build(m, dst, identity, 4, head_width)
    assert mask == 0b0101
    assert built[1].value == built[3].value == 0  # the attachments it only receives through
    got = {}

    async def testbench(ctx):
        for src in sources:
            ctx.set(identity, src)
            for d in range(n):
                if d != src:
                    ctx.set(dst, d)
                    got[src, d] = (ctx.get(built[0]), ctx.get(built[2]))

    sim = Simulator(m)
    sim.add_testbench(testbench)
    sim.run()
    full = params.form == "full"
    for (src, d), values in got.items():
        (c1, _), (c2, p2) = address(params, src), address(params, d)
        route = transit_route(c1, c2, p2, full=full, capped=params.cap)
        value = sum(byte << 8 * k for k, byte in enumerate(route))
        assert values == (value, value), (src, d, route)
    assert len(got) == len(sources) * (n - 1)
