"""Torus / mesh builder and DOR routing against hand-derivable figures and the nDT digest."""

from __future__ import annotations

import math

import pytest

from zfabric import analyse_routing, compile_plan, load_spec


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
