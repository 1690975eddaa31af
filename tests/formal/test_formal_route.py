"""Route units: for every head, the candidates and next head are the routing function's, on
every switch of a fabric (hdl/formal/route.py states the property), and a planted bug caught."""

from __future__ import annotations

import pytest
import yaml
from amaranth.hdl import Module, Mux
from amaranth.lib import wiring
from zfabric.hdl.formal.route import RouteHarness, head_flit_table
from zfabric.hdl.router.route import RouteRows

from zfabric.spec import load_spec
from zfabric.topologies import compile_plan


class DropsFirst(wiring.Component):
    """Planted bug: a route unit that drops its first candidate for head 1."""

    def __init__(self, unit: wiring.Component):
        self._unit = unit
        super().__init__(unit.signature)

    def elaborate(self, platform):
        m = Module()
        m.submodules.unit = unit = self._unit
        cand = unit.cand
        m.d.comb += [
            unit.head.eq(self.head),
            self.next_head.eq(unit.next_head),
            self.cand.eq(Mux(self.head == 1, cand & (cand - 1), cand)),
        ]
        if "identity" in unit.signature.members:
            m.d.comb += unit.identity.eq(self.identity)
        return m


class DroppingHarness(RouteHarness):
    def unit(self, switch, port, vc):
        return DropsFirst(super().unit(switch, port, vc))


class KeepsOneSurplus(wiring.Component):
    """Planted bug: a sliced route unit that drops one surplus head flit too few (the head
    crosses with a head flit the next switch does not count)."""

    def __init__(self, unit: wiring.Component):
        self._unit = unit
        super().__init__(unit.signature)

    def elaborate(self, platform):
        m = Module()
        m.submodules.unit = unit = self._unit
        m.d.comb += [
            unit.head.eq(self.head),
            self.next_head.eq(unit.next_head),
            self.cand.eq(unit.cand),
            self.flits.eq(unit.flits),
            self.skip.eq(Mux(unit.skip != 0, unit.skip - 1, 0)),
        ]
        if "identity" in unit.signature.members:
            m.d.comb += unit.identity.eq(self.identity)
        return m


class SurplusHarness(RouteHarness):
    def unit(self, switch, port, vc):
        return KeepsOneSurplus(super().unit(switch, port, vc))


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


def test_sliced_head_flits_proven(sby):
    plan = compile_plan(load_spec(SNODE_16))
    rows = RouteRows(plan)
    spans = {span for table in head_flit_table(rows).values() for span in table.values()}
    assert {flits for flits, _ in spans} == {1, 2, 3} and {skip for _, skip in spans} == {0, 1, 2}
    result = sby(RouteHarness(plan, every_switch(plan), rows=rows), "bmc", 1)
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
