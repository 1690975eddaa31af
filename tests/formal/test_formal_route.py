"""Route units: for every head, the candidates and next head are the routing function's, on
every switch of a fabric (hdl/formal/route.py states the property), and a planted bug caught."""

from __future__ import annotations

import pytest
import yaml
from amaranth.hdl import Module, Mux
from amaranth.lib import wiring
from zfabric.hdl.formal.route import RouteHarness, carried_heads, head_flit_table, reference
from zfabric.hdl.router.route import RouteRows

from zfabric.spec import load_spec
from zfabric.topologies import compile_plan


class Planted(wiring.Component):
    """A planted bug: a route unit with some outputs replaced by ``changed(unit)`` (output name
    -> value), the others passed through."""

    def __init__(self, unit: wiring.Component, changed):
        self._unit, self._changed = unit, changed
        super().__init__(unit.signature)

    def elaborate(self, platform):
        m = Module()
        m.submodules.unit = unit = self._unit
        changed = self._changed(unit)
        m.d.comb += unit.head.eq(self.head)
        for name, member in unit.signature.members.items():
            if name == "identity":
                m.d.comb += unit.identity.eq(self.identity)
            elif name != "head" and member.flow == wiring.Out:
                m.d.comb += getattr(self, name).eq(changed.get(name, getattr(unit, name)))
        return m


def drops_first(unit) -> dict:
    """Drops its first candidate for head 1."""
    return {"cand": Mux(unit.head == 1, unit.cand & (unit.cand - 1), unit.cand)}


def keeps_one_surplus(unit) -> dict:
    """A sliced unit that drops one surplus head flit too few (the head crosses with a head
    flit the next switch does not count)."""
    return {"skip": Mux(unit.skip != 0, unit.skip - 1, 0)}


class DroppingHarness(RouteHarness):
    def unit(self, switch, port, vc):
        return Planted(super().unit(switch, port, vc), drops_first)


class SurplusHarness(RouteHarness):
    def unit(self, switch, port, vc):
        return Planted(super().unit(switch, port, vc), keeps_one_surplus)


#: a super node of 2 Znodes of 8 processors (as tests/hdl's snode-16): sliced heads of up to 6
#: bits, 1 to 3 flits of 2 bits, with a surplus of up to 2 head flits at a switch
SNODE_16 = {
    "name": "snode-16",
    "topology": {"kind": "znode", "znodes": 2, "z": [2, 4], "R": [2, 2]},
    "routing": "sliced",
    "router": {"head_bits": 2},
}


def plan_of(example, name: str, routing: str | None = None):
    data = yaml.safe_load(example(name).read_text())
    if routing:
        data["routing"] = routing
    return compile_plan(load_spec(data))


def every_switch(plan) -> list[int]:
    return list(range(len(plan.switches)))


def test_ring_route_units_proven(sby, example):
    plan = plan_of(example, "ring-2")
    result = sby(RouteHarness(plan, every_switch(plan)), "bmc", 1)
    assert result.status == "PASS", result.log


def test_dropped_candidate_caught(sby, example):
    plan = plan_of(example, "ring-2")
    result = sby(DroppingHarness(plan, every_switch(plan)), "bmc", 1)
    assert result.status == "FAIL", result.log


@pytest.mark.formal
@pytest.mark.parametrize(
    ("name", "routing"),
    # dor (arithmetic on coordinates), dort (the nDT cards), sliced (header decoders) and
    # updown (tables) on the Znode
    [("torus-4x4", None), ("ndt-2x2x2", None), ("znode-64", None), ("znode-64", "updown")],
)
def test_route_units_proven(sby, example, name, routing):
    plan = plan_of(example, name, routing)
    result = sby(RouteHarness(plan, every_switch(plan)), "bmc", 1)
    assert result.status == "PASS", result.log


@pytest.mark.parametrize(
    ("topology", "routing"),
    # the nDT ones (minutes) with the other fabrics' proofs under -m formal
    [({"kind": "torus", "k": [4, 4]}, "duato"),
     *(pytest.param({"kind": "ndt", "k": [2, 2, 2]}, r, marks=pytest.mark.formal)
       for r in ("dort_adaptive", "tsdor"))],
)  # fmt: skip
def test_adaptive_route_units_proven(sby, topology, routing):
    # duato's and dort_adaptive's units give the candidate set (adaptive VCs and the escape
    # hop), as round-robin selection reads it: checked as a set, not in priority order; tsdor's
    # unit per traffic class
    plan = compile_plan(load_spec({"name": "t", "topology": topology, "routing": routing}))
    result = sby(RouteHarness(plan, every_switch(plan)), "bmc", 1)
    assert result.status == "PASS", result.log


def balanced_torus(k: list[int]):
    spec = {
        "name": "t",
        "topology": {"kind": "torus", "k": k},
        "routing": {"name": "dor", "vc_classes": "balanced"},
    }
    return compile_plan(load_spec(spec))


@pytest.mark.parametrize("k", [[5, 4], pytest.param([8, 4], marks=pytest.mark.formal)])
def test_balanced_dor_route_units_proven(sby, k):
    # balanced dateline classes: a unit per input port's direction and input VC's class; on
    # torus-5x4 the 20 endpoints leave 12 of the 5-bit head's values to no packet
    plan = balanced_torus(k)
    result = sby(RouteHarness(plan, every_switch(plan)), "bmc", 1)
    assert result.status == "PASS", result.log


def test_heads_no_packet_carries_are_left_free():
    # dor's head is the destination id: torus-5x4's packets carry 0..19 of 0..31
    rows = RouteRows(balanced_torus([5, 4]))
    assert carried_heads(rows) == set(range(20))
    table = reference(rows, 0, 1, 0, carried_heads(rows))
    assert [value for value, entry in enumerate(table) if entry is None] == list(range(20, 32))


@pytest.mark.formal  # 2-3 minutes; test_dropped_candidate_caught plants one by default
def test_dropped_candidate_caught_where_heads_are_left_free(sby):
    plan = balanced_torus([5, 4])
    result = sby(DroppingHarness(plan, every_switch(plan)), "bmc", 1)
    assert result.status == "FAIL", result.log


def spanning_switches(tables: dict) -> list[int]:
    """Switches whose head-flit tables together hold every (flits, skip) span, fewest first."""
    wanted = {span for table in tables.values() for span in table.values()}
    chosen: list[int] = []
    while wanted:
        switch, spans = max(
            ((s, set(table.values()) & wanted) for (s, _p), table in tables.items()),
            key=lambda item: len(item[1]),
        )
        chosen.append(switch)
        wanted -= spans
    return chosen


@pytest.mark.parametrize("everywhere", [False, pytest.param(True, marks=pytest.mark.formal)])
def test_sliced_head_flits_proven(sby, everywhere):
    """Every switch under ``-m formal``; by default the few that hold every span (3 minutes
    against one)."""
    plan = compile_plan(load_spec(SNODE_16))
    rows = RouteRows(plan)
    tables = head_flit_table(rows)
    spans = {span for table in tables.values() for span in table.values()}
    assert {flits for flits, _ in spans} == {1, 2, 3} and {skip for _, skip in spans} == {0, 1, 2}
    switches = every_switch(plan) if everywhere else spanning_switches(tables)
    result = sby(RouteHarness(plan, switches, rows=rows), "bmc", 1)
    assert result.status == "PASS", result.log


def test_kept_surplus_caught(sby):
    plan = compile_plan(load_spec(SNODE_16))
    rows = RouteRows(plan)
    # a switch whose heads drop head flits there
    switch = next(
        s
        for (s, _p), table in head_flit_table(rows).items()
        if table and max(skip for _, skip in table.values())
    )
    result = sby(SurplusHarness(plan, [switch], rows=rows), "bmc", 1)
    assert result.status == "FAIL", result.log


def transit_16():
    topology = {"kind": "transit", "form": "bidelta", "stacks": [2]}
    return compile_plan(load_spec({"name": "transit-16", "topology": topology}))


def test_transit_route_units_proven(sby):
    """A Transit bidelta of 16 processors: every RN1 route unit (its slice, the dilated
    direction's two wires, the alternate-mode halves' one) against the routing function for
    every 8-bit head."""
    plan = transit_16()
    assert RouteRows(plan).kind == "transit"
    result = sby(RouteHarness(plan, every_switch(plan)), "bmc", 1)
    assert result.status == "PASS", result.log


@pytest.mark.formal
def test_transit_dropped_wire_caught(sby):
    """Head 1 reads direction 0 at every slice: a unit dropping its first wire is caught."""
    plan = transit_16()
    result = sby(DroppingHarness(plan, every_switch(plan)), "bmc", 1)
    assert result.status == "FAIL", result.log
