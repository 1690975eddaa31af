"""Torus / mesh builder and DOR routing against hand-derivable figures and the nDT digest."""

from __future__ import annotations

import math

import pytest

from zfabric import SpecError, analyse_routing, compile_plan, load_spec
from zfabric.errors import PlanError
from zfabric.plan import PlanView
from zfabric.routing import ROUTINGS, Decision, Hop, make_routing
from zfabric.routing.dor import DOR


def torus(k, *, wrap=True, routing="dor", **routing_options):
    spec = {"name": "t", "topology": {"kind": "torus", "k": list(k), "wrap": wrap}}
    spec["routing"] = {"name": routing, **routing_options} if routing_options else routing
    return compile_plan(load_spec(spec))


# reference/ndt.md §1.5, baseline column "mD torus (DOR) max/avg"
@pytest.mark.parametrize(
    "k, diameter, average",
    [((8, 8), 8, 4.063), ((16, 8), 12, 6.047), ((16, 16), 16, 8.031), ((8, 8, 4), 10, 5.020)],
    ids=lambda v: "x".join(map(str, v)) if isinstance(v, tuple) else None,
)
def test_dor_hops_match_the_digest(k, diameter, average):
    analysis = analyse_routing(torus(k))
    assert analysis.diameter == diameter
    assert analysis.average_hops == pytest.approx(average, abs=5e-4)
    assert analysis.deadlock_free


@pytest.mark.parametrize("k", [(4, 4), (6, 2), (4, 4, 4)])
def test_average_is_sum_of_quarter_rings(k):
    # even k: mean ring distance k/4 over all pairs incl. self; exclude self: scale N/(N-1)
    n = math.prod(k)
    expected = sum(r / 4 for r in k) * n / (n - 1)
    assert analyse_routing(torus(k)).average_hops == pytest.approx(expected)


def test_counts_and_ports():
    plan = torus((4, 3))
    assert len(plan.switches) == len(plan.endpoints) == 12
    assert len(plan.links) == 2 * 2 * 12  # n links per node, two channels each
    assert {s.radix for s in plan.switches} == {5}
    assert {link.vcs for link in plan.links} == {2}


def test_mesh_has_no_wrap_links_and_one_vc():
    plan = torus((4, 4), wrap=False)
    assert len(plan.links) == 2 * (2 * 3 * 4)  # 3 links per row, 4 rows, 2 dimensions
    assert {link.vcs for link in plan.links} == {1}
    analysis = analyse_routing(plan)
    assert analysis.deadlock_free
    assert analysis.diameter == 6


def test_ring_without_datelines_has_a_cycle():
    analysis = analyse_routing(torus((5,), datelines=False))
    # the cycle runs once round the ring in one direction, on VC 0
    assert len(analysis.cycle) == 5
    assert all(channel.endswith("/vc0") for channel in analysis.cycle)
    assert len({channel.split(".")[1] for channel in analysis.cycle}) == 1  # one direction


@pytest.mark.parametrize("k, tie", [((4, 4), "plus"), ((6, 6), "alternate")])
def test_torus_without_datelines_has_a_cycle_and_with_them_none(k, tie):
    assert analyse_routing(torus(k, datelines=False, tie=tie)).cycle
    assert analyse_routing(torus(k, tie=tie)).cycle is None


def test_a_4_ring_with_alternate_ties_needs_no_dateline():
    # alternate ties: only the tied 2-hop paths from even nodes chain two + links (0->1->2 and
    # 2->3->0), so the + links' dependencies never close round the ring (likewise -)
    assert analyse_routing(torus((4,), datelines=False)).deadlock_free


def test_k2_dimensions_give_parallel_links():
    plan = torus((2, 4))
    analysis = analyse_routing(plan, keep_pairs=True)
    assert analysis.deadlock_free
    assert max(hi for _, hi in analysis.pair_hops.values()) == 1 + 2


def ring_link_loads(plan) -> dict[int, int]:
    """Routes (source-destination pairs) through each link: every pair's one path, walked
    through the routing function from its injection to the local port."""
    from zfabric.plan import PlanView
    from zfabric.routing import make_routing

    view = PlanView(plan)
    routing = make_routing(view)
    loads = {link.id: 0 for link in plan.links}
    n = len(plan.endpoints)
    for src in range(n):
        for dst in range(n):
            if src == dst:
                continue
            (injection,) = routing.injections(src, dst)
            switch, port, vc, head = injection.switch, injection.port, 0, injection.head
            while True:
                decision = routing.route(switch, port, vc, head)
                (hop,) = decision.hops
                link = view.out_link[switch][hop.port]
                if link is None:
                    break
                loads[link.id] += 1
                switch, port, vc, head = link.dst.switch, link.dst.port, hop.vcs[0], decision.head
    return loads


def test_alternate_ties_balance_the_ring_directions():
    # a 4-ring's 12 pairs: 8 at distance 1 (one hop each way round), 4 at distance 2 (ties).
    # alternate: nodes 0 and 2 send ties +, 1 and 3 send them -, so every link carries 2
    # routes; plus: each + link carries its distance-1 pair and two tied paths (3), each - link
    # only its distance-1 pair (1)
    alternate = torus((4,))
    assert alternate.routing.params["tie"] == "alternate"  # the default
    assert sorted(ring_link_loads(alternate).values()) == [2] * 8
    plus = torus((4,), tie="plus")
    assert sorted(ring_link_loads(plus).values()) == [1] * 4 + [3] * 4
    for plan in (alternate, plus):
        analysis = analyse_routing(plan)
        assert analysis.deadlock_free and analysis.average_hops == pytest.approx(16 / 12)


def test_plans_without_a_tie_parameter_keep_ties_toward_plus():
    plan = torus((4,), tie="plus")
    del plan.routing.params["tie"]
    assert sorted(ring_link_loads(plan).values()) == [1] * 4 + [3] * 4


def ring_offer(plan, cur: int, dst: int, came_on: int | None = None) -> tuple[int, ...]:
    """The VCs DOR offers at node ``cur`` of a 1-D torus toward ``dst``: for a packet entering
    the ring there (from its endpoint), or one that arrived travelling + on VC ``came_on``."""
    from zfabric.plan import PlanView
    from zfabric.routing import make_routing

    routing = make_routing(PlanView(plan))
    ports = {
        (p.dim, p.sign): i for i, p in enumerate(plan.switches[cur].ports) if p.dim is not None
    }
    in_port, in_vc = (0, 0) if came_on is None else (ports[0, -1], came_on)
    (hop,) = routing.route(cur, in_port, in_vc, dst).hops
    return hop.vcs


def test_balanced_classes_offer_both_where_neither_forbidden_link_is_on_the_way():
    # an 8-ring (no ties below distance 4): VC 0 is the upper class, never on the wrap 7 -> 0
    # (going +) nor on 7 -> 6 (going -); VC 1 the lower class, never on 0 -> 1 (going +) nor
    # on the wrap 0 -> 7 (going -)
    ring = torus((8,), vc_classes="balanced")
    assert ring_offer(ring, 1, 3) == (0, 1)  # +, no wrap, not from 0
    assert ring_offer(ring, 0, 2) == (0,)  # + from 0: VC 1 would use 0 -> 1
    assert ring_offer(ring, 6, 1) == (1,)  # + across the wrap: the lower class
    assert ring_offer(ring, 5, 3) == (0, 1)  # -, no wrap, not from 7
    assert ring_offer(ring, 7, 5) == (1,)  # - from 7: VC 0 would use 7 -> 6
    # on the ring a packet keeps the class it took; after the wrap it is in the upper class
    assert ring_offer(ring, 2, 3, came_on=1) == (1,)
    assert ring_offer(ring, 2, 3, came_on=0) == (0,)
    assert ring_offer(ring, 0, 2, came_on=1) == (0,)
    assert torus((8,)).routing.params["vc_classes"] == "balanced"  # the default
    fixed = torus((8,), vc_classes="fixed")
    assert [ring_offer(fixed, 1, 3), ring_offer(fixed, 5, 3)] == [(0,), (1,)]
    legacy = torus((8,))
    del legacy.routing.params["vc_classes"]  # a plan written before the parameter: fixed
    assert [ring_offer(legacy, 1, 3), ring_offer(legacy, 5, 3)] == [(0,), (1,)]


@pytest.mark.parametrize("vc_classes", ["balanced", "fixed"])
def test_states_of_one_key_route_alike(vc_classes):
    """Every input state of a torus 4x4 with two local VCs (each switch, input port, VC and
    destination): those the routing's state key does not tell apart get the same decision
    (the proof walks one state per key)."""
    spec = {
        "name": "t",
        "topology": {"kind": "torus", "k": [4, 4]},
        "routing": {"name": "dor", "vc_classes": vc_classes},
        "router": {"injection_vcs": 2},
    }
    plan = compile_plan(load_spec(spec))
    routing = make_routing(PlanView(plan))
    into = {(link.dst.switch, link.dst.port): link.vcs for link in plan.links}
    decisions: dict = {}
    for switch in plan.switches:
        for port in range(switch.radix):
            for vc in range(into.get((switch.id, port), plan.router.injection_vcs)):
                for dst in range(len(plan.endpoints)):
                    key = routing.state_key(switch.id, port, vc, dst)
                    decision = routing.route(switch.id, port, vc, dst)
                    assert decisions.setdefault(key, decision) == decision, key


@pytest.mark.parametrize("k", [(6,), (5,), (8,), (4, 4), (8, 8), (3, 5), (5, 2, 3)])
def test_balanced_classes_keep_the_rings_acyclic(k):
    balanced = analyse_routing(torus(k, vc_classes="balanced"))
    fixed = analyse_routing(torus(k, vc_classes="fixed"))
    assert balanced.deadlock_free and fixed.deadlock_free
    assert balanced.cdg.number_of_edges() > fixed.cdg.number_of_edges()  # both classes used
    assert balanced.average_hops == fixed.average_hops


def test_balanced_classes_without_keeping_the_class_close_a_ring_cycle(monkeypatch):
    # offering both classes at every hop that may take either, on the ring too, lets a packet
    # that wrapped onto the upper class at 0 climb back to the lower class at 1: the proof
    # must find that cycle (it is why a packet keeps its class)
    from zfabric.routing import dor

    def either_everywhere(self, switch, in_port, in_vc, dim, sign, dst):
        cur = self.coords[switch][dim]
        if dor.may_take_either(sign, cur, dst, self.k[dim]):
            return self.classes[0] + self.classes[1]
        return self.classes[dor.dateline_vc(cur, dst)]

    monkeypatch.setattr(dor.DOR, "ring_vcs", either_everywhere)
    assert analyse_routing(torus((8,), vc_classes="balanced")).cycle


def test_plans_without_a_vc_classes_parameter_keep_fixed_classes():
    plan = torus((8,), vc_classes="balanced")
    del plan.routing.params["vc_classes"]
    assert ring_offer(plan, 1, 3) == (0,)


# ---- the binary hypercube (seed 003: Alzeidi's thesis, the 2-ary n-cube) -------------------


def hypercube(n: int):
    return compile_plan(load_spec({"name": "h", "topology": {"kind": "hypercube", "n": n}}))


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8])
def test_the_hypercube_matches_its_chapter(n):
    """The thesis's statements (wormhole-models.md): DOR is deadlock-free on one VC without
    partitioning (L601, L1395); a uniform destination is h hops away with probability
    C(n, h) / (N - 1) (Eq 4.43), so the mean distance is nN / (2N - 2) (Eq 5.31); and by
    construction radix n + 1 and nN one-way channels (nN / 2 links)."""
    plan = hypercube(n)
    nodes = 2**n
    assert len(plan.switches) == len(plan.endpoints) == nodes
    assert {len(s.ports) for s in plan.switches} == {n + 1}
    assert {link.vcs for link in plan.links} == {1}
    assert len(plan.links) == n * nodes  # one channel each way per node pair
    analysis = analyse_routing(plan)
    assert analysis.deadlock_free
    pairs = nodes * (nodes - 1)
    assert dict(analysis.min_hops) == {h: nodes * math.comb(n, h) for h in range(1, n + 1)}
    assert sum(analysis.min_hops.values()) == pairs
    assert analysis.average_hops == pytest.approx(n * nodes / (2 * nodes - 2))


def test_a_hypercube_too_large_is_refused_in_one_line():
    spec = {"name": "h", "topology": {"kind": "hypercube", "n": 13}}
    with pytest.raises(SpecError, match=r"^topology\.n: must be an integer in 1\.\.12, got 13$"):
        load_spec(spec)


class _Looping(DOR):
    """DOR but switch 0 sends every packet that is not for it one hop + in dimension 0."""

    def route(self, switch, in_port, in_vc, head):
        decision = super().route(switch, in_port, in_vc, head)
        if switch != 0 or self.view.out_link[switch][decision.hops[0].port] is None:
            return decision
        return Decision((Hop(self.port_of[0][(0, 1)], decision.hops[0].vcs),), head)


def test_a_route_that_comes_back_to_a_state_on_its_way_is_refused(monkeypatch):
    # on a 4-ring, from switch 0 toward 3: + to 1, where DOR turns back - (a tie from an odd
    # coordinate) to 0, and so on: the walk meets a state it is still walking
    monkeypatch.setitem(ROUTINGS, "dor", _Looping)
    with pytest.raises(PlanError, match="route to .* loops at"):
        analyse_routing(torus((4,), vc_classes="fixed"), workers=1, symmetry=False)
