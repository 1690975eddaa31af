"""nDT twin torus + DORT against the figures of reference/ndt.md (section cited at each test).

Every expected value below comes from the digest (the thesis or the digest's own enumerations),
never from this code's output.
"""

from __future__ import annotations

import math

import networkx as nx
import pytest

from zfabric import (
    SpecError,
    analyse_routing,
    build_fabric,
    compile_plan,
    load_spec,
    plan_from_json,
)
from zfabric.plan import PlanView
from zfabric.routing import make_routing
from zfabric.routing.dort import split_dims
from zfabric.topologies.ndt import (
    cbest,
    internal_transit_counts,
    ndt_configurations,
    port_name,
    transit_counts_into,
)
from zfabric.topologies.torus import linear_index

FULL = {"ch": 0, "ring_upper": 1, "ring_lower": 2, "pe": 3}


def ndt_spec(k, ports=None, **routing_options):
    topology = {"kind": "ndt", "k": list(k)}
    if ports is not None:
        topology["ports"] = ports
    routing = {"name": "dort", **routing_options} if routing_options else "dort"
    return {"name": "t", "topology": topology, "routing": routing}


def ndt(k, ports=None, **routing_options):
    return compile_plan(load_spec(ndt_spec(k, ports, **routing_options)))


def size_id(value):
    return "x".join(map(str, value)) if isinstance(value, tuple) else None


def endpoint(k, coords, card):
    return 2 * linear_index(tuple(coords), tuple(k)) + card


def walker(plan):
    """walk(src, dst): port labels of the switch-to-switch hops DORT takes from src to dst."""
    view = PlanView(plan)
    rf = make_routing(view)

    def walk(src, dst):
        injection = rf.injections(src, dst)[0]
        state = (injection.switch, injection.port, 0, injection.head)
        labels = []
        while True:
            switch, in_port, in_vc, head = state
            decision = rf.route(switch, in_port, in_vc, head)
            hop = decision.hops[0]
            link = view.out_link[switch][hop.port]
            if link is None:
                assert view.endpoint_at[(switch, hop.port)] == dst
                return labels
            labels.append(view.switches[switch].ports[hop.port].label)
            state = (link.dst.switch, link.dst.port, hop.vcs[0], decision.head)

    return walk


# ---- port configurations (§1.2, §1.3) ----------------------------------------------------------


@pytest.mark.parametrize("n, count", [(3, 10), (4, 35), (5, 126)])
def test_configuration_count_is_half_of_2n_choose_n(n, count):
    # §1.2: ½·C(2n, n) = 10 (3DT), 35 (4DT, digest enumeration), 126 (5DT)
    configs = ndt_configurations(n)
    assert len(configs) == count == math.comb(2 * n, n) // 2
    assert len(set(configs)) == count
    assert all((0, 1) in c and len(c) == n for c in configs)


def test_cbest_layouts():
    # §1.3: 3DT Card0 = {X+, X-, Y-}; 5DT Card0 = {d0±, d1±, d2-}; n even: first half of dims
    assert set(cbest(3)) == {(0, 1), (0, -1), (1, -1)}
    assert set(cbest(5)) == {(0, 1), (0, -1), (1, 1), (1, -1), (2, -1)}
    assert set(cbest(4)) == {(0, 1), (0, -1), (1, 1), (1, -1)}
    assert set(cbest(2)) == {(0, 1), (0, -1)}


def test_ports_spelling():
    plan = ndt((4, 4, 4), ["X+", "x-", "d1+"])
    assert plan.topology_params["card0"] == [[0, -1], [0, 1], [1, 1]]
    assert plan.topology_params["ports"] == ["d0+", "d0-", "d1+"]
    assert port_name((2, -1)) == "d2-"


# ---- wiring (§1.1, §1.6) -----------------------------------------------------------------------


@pytest.mark.parametrize("k", [(2, 2, 2), (4, 2, 4), (3, 3, 3, 3)], ids=size_id)
def test_switch_and_link_counts(k):
    # §1.6: 2·∏k switches (radix n+2), ∏k internal links, n·∏k external links
    plan, n, nodes = ndt(k), len(k), math.prod(k)
    assert len(plan.switches) == len(plan.endpoints) == 2 * nodes
    assert {s.radix for s in plan.switches} == {n + 2}
    roles = [plan.switches[link.src.switch].ports[link.src.port].role for link in plan.links]
    assert roles.count("internal") == 2 * nodes  # two channels per physical link
    assert roles.count("external") == 2 * n * nodes
    assert all(e.attachments[0].switch == e.id for e in plan.endpoints)


def test_link_vcs():
    # §4.3: 2 VCs on external links; internal 4 for n odd (CH, RU, RL, PE), 2 for n even
    for k, internal in (((2, 2, 2), 4), ((2, 2, 2, 2), 2), ((4, 4, 2, 4, 4), 4), ((4, 4), 2)):
        plan = ndt(k)
        vcs = {}
        for link in plan.links:
            role = plan.switches[link.src.switch].ports[link.src.port].role
            vcs.setdefault(role, set()).add(link.vcs)
        assert vcs == {"internal": {internal}, "external": {2}}, k


def test_plus_port_links_to_the_neighbours_minus_port():
    # §1.1: d_i+ of node o links to d_i- of o + e_i (mod k_i)
    k = (4, 3, 2)
    plan = ndt(k)
    for link in plan.links:
        a, b = plan.switches[link.src.switch], plan.switches[link.dst.switch]
        pa, pb = a.ports[link.src.port], b.ports[link.dst.port]
        if pa.role == "internal":
            assert pb.role == "internal" and a.position["coords"] == b.position["coords"]
            continue
        assert (pb.dim, pb.sign) == (pa.dim, -pa.sign)
        expected = list(a.position["coords"])
        expected[pa.dim] = (expected[pa.dim] + pa.sign) % k[pa.dim]
        assert b.position["coords"] == expected


def test_card_ports_are_sorted_and_cbest_splits_the_central_dimension():
    plan = ndt((4, 4, 4))
    card0, card1 = plan.switches[0], plan.switches[1]
    assert card0.name == "n0_0_0c0" and card1.name == "n0_0_0c1"
    assert card0.position == {"coords": [0, 0, 0], "card": 0}
    assert [p.label for p in card0.ports] == ["local", "internal", "d0+", "d0-", "d1-"]
    assert [p.label for p in card1.ports] == ["local", "internal", "d1+", "d2+", "d2-"]


def test_y_minus_from_pe0_arrives_on_card1():
    # §1.1 (L8327-L8340): PE0 at <0,1,0> sends on Y- and arrives at <0,0,0|1>, the Y+ card
    k = (8, 8, 8)
    plan = ndt(k)
    view = PlanView(plan)
    src = endpoint(k, (0, 1, 0), 0)
    port = next(i for i, p in enumerate(plan.switches[src].ports) if p.label == "d1-")
    assert view.out_link[src][port].dst.switch == endpoint(k, (0, 0, 0), 1)


# BFS on the switch graph, internal link = 1 hop, averaged over all ordered switch pairs with self
# (§1.5, "My BFS checks"): checks the wiring independently of the routing
@pytest.mark.parametrize(
    "k, ports, diameter, average",
    [
        ((2, 2, 2), None, 4, 2.250),
        ((2, 2, 2), ["x+", "y+", "z+"], 4, 2.000),
        ((4, 4, 4), None, 8, 4.188),
        ((4, 4, 4), ["x+", "y+", "z+"], 8, 4.094),
        ((5, 5, 5), None, 9, 5.060),
        ((5, 5, 5), ["x+", "y+", "z+"], 9, 5.148),
    ],
    ids=["2x2x2-cbest", "2x2x2-sc0", "4x4x4-cbest", "4x4x4-sc0", "5x5x5-cbest", "5x5x5-sc0"],
)
def test_bfs_distances(k, ports, diameter, average):
    _, graph = build_fabric(load_spec(ndt_spec(k, ports)))
    switches = nx.Graph(graph.subgraph(n for n in graph if n[0] == "sw"))
    lengths = [d for _, row in nx.all_pairs_shortest_path_length(switches) for d in row.values()]
    assert len(lengths) == len(switches) ** 2
    assert max(lengths) == diameter
    assert sum(lengths) / len(lengths) == pytest.approx(average, abs=5e-4)


# ---- transit paths over the internal link (§1.4) -----------------------------------------------


def crossing(k, ports=None, **routing_options):
    return internal_transit_counts(ndt(k, ports, **routing_options))


@pytest.mark.parametrize(
    "k, ports, routing",
    [
        ((4, 4, 4), ["x+", "y+", "z+"], {}),
        ((3, 4, 2, 5), None, {}),
        ((3, 4, 2, 5), ["d0+", "d1-", "d2+", "d3-"], {"tie": "plus"}),
        ((4, 3, 4), ["x+", "x-", "z-"], {"name": "tsdor"}),
        ((2, 2, 2, 2, 2), ["d0+", "d1-", "d2+", "d3-", "d4+"], {}),
    ],
)
def test_every_node_carries_the_same_transit_counts(k, ports, routing):
    # the per-node counts are the totals over the routes into one node: enumerating the routes
    # into every node gives the same totals each time (the routes are translation-invariant)
    spec = ndt_spec(k, ports)
    spec["routing"] = {"name": "dort", **routing}
    plan = compile_plan(load_spec(spec))
    per_node = [transit_counts_into(plan, node) for node in range(math.prod(k))]
    assert per_node == [internal_transit_counts(plan)] * math.prod(k)


def test_table_1_1_configurations_of_4x4x4():
    # §1.2 Table 1.1: 4x4x4, ties toward + (all three configs have the + port of every split
    # dimension on Card0, so DORT's Card0 tie rule is the + rule): 93 / 79 / 49 of 129
    assert crossing((4, 4, 4), ["x+", "y+", "z+"]) == {"transit": 129, "crossing": 93}
    assert crossing((4, 4, 4), ["x+", "y+", "y-"]) == {"transit": 129, "crossing": 79}
    assert crossing((4, 4, 4), ["x+", "x-", "y+"]) == {"transit": 129, "crossing": 49}


def test_3x3x3_cbest_loses_to_sc0():
    # §1.2 / §1.4: 3x3x3 CBest 16 of 28; the best configurations (SC0) reach 14 (Theorem 3.1
    # excludes n = 3, k = 3)
    assert crossing((3, 3, 3)) == {"transit": 28, "crossing": 16}
    counts = {
        c: crossing((3, 3, 3), [port_name(p) for p in c])["crossing"] for c in ndt_configurations(3)
    }
    assert min(counts.values()) == 14
    sc0 = [c for c in counts if all(((d, 1) in c) != ((d, -1) in c) for d in range(3))]
    assert len(sc0) == 4
    assert {c for c, v in counts.items() if v == 14} == set(sc0)


def test_cbest_is_the_best_configuration_of_4x4x4():
    # §1.4: 4x4x4 with ties toward the Card0 port: CBest 49, also the minimum over all configs
    assert crossing((4, 4, 4)) == {"transit": 129, "crossing": 49}
    best = min(
        crossing((4, 4, 4), [port_name(p) for p in c])["crossing"] for c in ndt_configurations(3)
    )
    assert best == 49


def r_cbest(k: int, n: int) -> int:
    """Proposition 3.4 (§1.4): internal-link transit paths under CBest, odd k."""
    if n % 2 == 0:
        return (k ** (n // 2) - 1) ** 2
    return (k ** ((n + 1) // 2) - 1) * (k ** ((n - 1) // 2) - 1) + (k - 1) * (k - 3) // 4 * k ** (
        n - 1
    )


@pytest.mark.parametrize(
    "k, n, transit, expected",
    [(5, 3, 326, 146), (7, 3, 1422, 582), (3, 4, 136, 64), (3, 5, 568, 208), (5, 4, 2376, 576)],
)
def test_proposition_3_4(k, n, transit, expected):
    # §1.4 table: transit totals and CBest crossings, equal to the formula
    assert r_cbest(k, n) == expected
    assert crossing((k,) * n) == {"transit": transit, "crossing": expected}


@pytest.mark.parametrize(
    "k, transit, matched, plus",
    [
        ((4, 2, 4), 49, 9, 33),
        ((4, 4, 2, 2, 2), 321, 45, 153),
        ((4, 4, 4, 4), 769, 225, 225),  # n even: no split dimension, the tie rule is moot
    ],
    ids=size_id,
)
def test_even_k_tie_trap(k, transit, matched, plus):
    # §1.4 "a trap": CBest is optimal only if ties in d_c go to the Card0 port (d_c-);
    # ties toward + cost more
    assert crossing(k) == {"transit": transit, "crossing": matched}
    assert crossing(k, tie="plus") == {"transit": transit, "crossing": plus}


def test_even_k_fit():
    # §1.4: 4x4x4 with + ties: 73; odd n, matched ties: (k^((n+1)/2)/2 - 1)^2 at 4^3 and 6^3;
    # per-node transit total 757 at 6^3 (§10)
    assert crossing((4, 4, 4), tie="plus")["crossing"] == 73
    assert crossing((6, 6, 6)) == {"transit": 757, "crossing": (6**2 // 2 - 1) ** 2}


def test_5dt_evaluated_size_crossings():
    # §1.4: 4x4x2x4x4 -> 1793 transit, 225 matched (705 with + ties)
    assert crossing((4, 4, 2, 4, 4)) == {"transit": 1793, "crossing": 225}
    assert crossing((4, 4, 2, 4, 4), tie="plus")["crossing"] == 705


# ---- DORT hop counts (§1.5, §3.3) --------------------------------------------------------------


# §1.5 DORT column: PE-to-PE, ordered pairs, self excluded, internal hops counted
@pytest.mark.parametrize(
    "k, diameter, average",
    [
        ((4, 2, 4), 7, 3.825),
        ((4, 4, 4), 9, 4.795),
        ((8, 4, 4), 11, 5.839),
        ((4, 4, 2, 2, 2), 9, 4.867),
        ((4, 4, 2, 4, 2), 10, 5.419),
        pytest.param((8, 8, 8), 17, 8.885, marks=[pytest.mark.slow, pytest.mark.matrix]),
        pytest.param((4, 4, 2, 4, 4), 11, 5.944, marks=[pytest.mark.slow, pytest.mark.matrix]),
    ],
    ids=size_id,
)
def test_dort_hops_match_the_digest(k, diameter, average):
    analysis = analyse_routing(ndt(k))
    assert analysis.diameter == diameter
    assert analysis.average_hops == pytest.approx(average, abs=5e-4)
    assert analysis.deadlock_free


def test_mismatched_ties_and_sc0_hops():
    # §1.5: 4x4x4 with mismatched ties 5.133 avg / 11 max; SC0 {X+Y+Z+} 5.445 / 13. These two
    # figures average over all N^2 ordered pairs *including* self (the table above excludes
    # self): 5.133 * 128^2 / (128 * 127) = 5.173 over distinct pairs.
    for ports, options, diameter, average in (
        (None, {"tie": "plus"}, 11, 5.133),
        (["x+", "y+", "z+"], {}, 13, 5.445),
    ):
        analysis = analyse_routing(ndt((4, 4, 4), ports, **options))
        n = 128
        total = sum(h * count for h, count in analysis.min_hops.items())
        assert analysis.diameter == diameter
        assert total / n**2 == pytest.approx(average, abs=5e-4)


def test_path_examples_on_8x8x8():
    # §3.3 Ex 3.4 / 3.5 (8x8x8 CBest), hops include internal links
    k = (8, 8, 8)
    walk = walker(ndt(k))
    # Ex 3.4: PE1 of <0,0,0> to <1,0,1>: INT, X+, INT, Z+ (4 hops to PE1), + INT to PE0
    src = endpoint(k, (0, 0, 0), 1)
    assert walk(src, endpoint(k, (1, 0, 1), 1)) == ["internal", "d0+", "internal", "d2+"]
    assert len(walk(src, endpoint(k, (1, 0, 1), 0))) == 5
    # Ex 3.5: PE0 of <0,1,0> to <1,0,0>: X+, Y- (2 hops to PE1), + INT to PE0 (3 hops)
    src = endpoint(k, (0, 1, 0), 0)
    assert walk(src, endpoint(k, (1, 0, 0), 1)) == ["d0+", "d1-"]
    assert walk(src, endpoint(k, (1, 0, 0), 0)) == ["d0+", "d1-", "internal"]


def test_internal_link_never_taken_twice_in_a_row():
    # §3.3: after crossing the internal link the next hop is external or a delivery
    plan = ndt((4, 4, 4))
    walk = walker(plan)
    for src in range(len(plan.endpoints)):
        for dst in range(len(plan.endpoints)):
            if src != dst:
                labels = walk(src, dst)
                assert "internal internal" not in " ".join(labels)


# ---- deadlock (§4.5) ---------------------------------------------------------------------------


def cycle(k, ports=None, **routing_options):
    return analyse_routing(ndt(k, ports, **routing_options)).cycle


@pytest.mark.parametrize(
    "k",
    [(3, 3, 3), (4, 4, 4), (4, 2, 4), (2, 2, 2, 2), (3, 3, 3, 3), (4, 4, 2, 2, 2), (3,) * 5],
    ids=size_id,
)
def test_full_vc_set_is_acyclic(k):
    # §4.5 row 1: DORT, CBest, 2 external VCs, internal {CH, RU, RL, PE} (CH + PE for n even)
    assert cycle(k) is None


def internal(channels, vc=None):
    return [c for c in channels if "(internal)" in c and (vc is None or c.endswith(f"/vc{vc}"))]


@pytest.mark.parametrize("k", [(2, 2, 2), (3, 3, 3), (4, 4, 4), (4, 2, 4)], ids=size_id)
def test_pe_merged_into_ch_deadlocks(k):
    # §4.2 Example 4.2 / §4.5 row 2 (type B): CH and PE share the internal VC -> cycle through
    # the internal links of several nodes
    channels = cycle(k, internal_vcs={**FULL, "pe": 0})
    assert channels is not None
    merged = internal(channels, vc=0)
    assert len({c.split("c")[0] for c in merged}) >= 2, channels


def test_pe_merged_into_ch_deadlocks_in_4dt():
    # §4.5 row 2, 2^4 column (n even: CH + PE only)
    assert internal(cycle((2, 2, 2, 2), internal_vcs={"ch": 0, "pe": 0}), vc=0)


def test_ring_without_upper_lower_split_deadlocks():
    # §4.2 cycle A / §4.5 row 4: one ring VC on the internal link -> a d_c ring cycle whose
    # channels include internal links (4x4x4 cycle; 3x3x3 and 4x2x4 stay acyclic)
    merged = {"ch": 0, "ring_upper": 1, "ring_lower": 1, "pe": 2}
    channels = cycle((4, 4, 4), internal_vcs=merged)
    assert channels is not None and internal(channels, vc=1)
    assert all("(internal)" in c or "(d1" in c for c in channels), channels
    assert cycle((3, 3, 3), internal_vcs=merged) is None
    assert cycle((4, 2, 4), internal_vcs=merged) is None


def test_pe_merged_into_ring_upper():
    # §4.5 row 3: 4x4x4 cycle; 3x3x3 and 4x2x4 acyclic
    merged = {**FULL, "pe": 1}
    assert internal(cycle((4, 4, 4), internal_vcs=merged), vc=1)
    assert cycle((3, 3, 3), internal_vcs=merged) is None
    assert cycle((4, 2, 4), internal_vcs=merged) is None


def test_all_internal_traffic_on_one_vc_deadlocks():
    # §4.5 row 5: cycle on 3x3x3, 4x4x4, 4x2x4
    one = dict.fromkeys(FULL, 0)
    for k in ((3, 3, 3), (4, 4, 4), (4, 2, 4)):
        assert internal(cycle(k, internal_vcs=one), vc=0), k


def test_one_external_vc():
    # §4.5 row 6: 1 VC on external links: 4x4x4 and 4x2x4 cycle, 3x3x3 acyclic (k <= 3: at most
    # one hop per ring)
    plan = ndt((4, 4, 4), external_vcs=1)
    assert {link.vcs for link in plan.links if link.vcs != 4} == {1}
    assert analyse_routing(plan).cycle is not None
    assert cycle((4, 2, 4), external_vcs=1) is not None
    assert cycle((3, 3, 3), external_vcs=1) is None


def test_ch_merged_into_ring_upper_stays_acyclic():
    # §4.5 row 7
    merged = {**FULL, "ch": 1}
    for k in ((3, 3, 3), (4, 4, 4), (4, 2, 4)):
        assert cycle(k, internal_vcs=merged) is None, k


def test_sc0_with_shared_ring_classes_deadlocks():
    # §4.5 last row: SC0 {X+Y+Z+} with CBest's VC rules (one ring pair shared by all split
    # dimensions) -> cycle; the thesis needs 2n+1 internal VCs for all-split configurations
    plan = ndt((4, 4, 4), ["x+", "y+", "z+"], rings="shared")
    assert plan.routing.params["internal_vcs"] == FULL
    assert internal(analyse_routing(plan).cycle)


@pytest.mark.parametrize(
    "k, ports, vcs",
    [
        # every dimension split: 2 per ring + pe, no ch (§4.3: 3DT 7, 5DT 11)
        ((4, 4, 4), ["x+", "y+", "z+"], 7),
        ((3, 3, 3), ["x+", "y-", "z+"], 7),
        ((2, 2, 2, 2, 2), ["d0+", "d1+", "d2+", "d3+", "d4+"], 11),
        # two of three split: ch + 2 pairs + pe
        ((4, 4, 4), ["x+", "x-", "y+"], None),
        ((4, 4, 4), ["x+", "y+", "y-"], None),
    ],
)
def test_a_ring_pair_per_split_dimension_is_acyclic(k, ports, vcs):
    """The thesis's 2n+1-VC scheme (§4.3): one upper/lower pair per split dimension, one VC for
    CH traffic where a dimension is unsplit, one for PE traffic; the default wherever several
    dimensions are split. 1 + 2s + 1 internal VCs for s split dimensions, 2n + 1 for all."""
    plan = ndt(k, ports)
    split = split_dims(plan.routing.params["card0"], len(k))
    expected = 2 * len(split) + 1 + (len(split) < len(k))
    assert vcs is None or vcs == expected
    roles = {
        link.vcs: plan.switches[link.src.switch].ports[link.src.port].role for link in plan.links
    }
    assert roles == {2: "external", expected: "internal"}
    assert analyse_routing(plan).cycle is None


# ---- spec errors -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "ports, message",
    [
        (["x+", "y+"], r"^topology\.ports: must list exactly 3 Card0 ports .*\['x\+', 'y\+'\]"),
        (["x+", "y+", "x+"], r"^topology\.ports\[2\]: duplicate port 'x\+' \(already "),
        (["x+", "w+", "z-"], r"^topology\.ports\[1\]: must be a port name .*'w\+'"),
        (["x+", "d3-", "z-"], r"^topology\.ports\[1\]: port 'd3-' names dimension 3, but k has 3"),
        (["x+", 5, "z-"], r"^topology\.ports\[1\]: must be a port name .*5"),
        ("best", r"^topology\.ports: must be 'cbest' or a list of the 3 Card0 ports, got 'best'"),
        ({"x": 1}, r"^topology\.ports: must be 'cbest' or a list"),
    ],
)
def test_bad_ports(ports, message):
    with pytest.raises(SpecError, match=message):
        load_spec(ndt_spec((4, 4, 4), ports))


def test_bad_k():
    with pytest.raises(SpecError, match=r"^topology\.k\[1\]: must be an integer >= 2, got 1$"):
        load_spec(ndt_spec((4, 1, 4)))
    with pytest.raises(SpecError, match=r"^topology\.k: must have at least 2 entries"):
        load_spec(ndt_spec((4,)))


@pytest.mark.parametrize(
    "k, options, message",
    [
        ((4, 4, 4), {"internal_vcs": {"ch": 0, "pe": 1}}, r"internal_vcs\.ring_upper: missing"),
        ((4, 4), {"internal_vcs": {"ch": 0, "ring_upper": 1, "pe": 1}}, r"not used"),
        ((4, 4), {"internal_vcs": {"ch": 0, "pee": 1}}, r"internal_vcs\.pe: missing"),
        ((4, 4), {"internal_vcs": {"ch": 0, "pe": -1}}, r"internal_vcs\.pe: must be a VC index"),
        # 16 VCs at most per link: index 16 would be the 17th
        (
            (4, 4),
            {"internal_vcs": {"ch": 0, "pe": 16}},
            r"\.pe: must be a VC index in 0\.\.15.* 16$",
        ),
        ((4, 4), {"internal_vcs": {"ch": [0, 1], "pe": []}}, r"\.pe: must be a VC index.*\[\]$"),
        ((4, 4), {"internal_vcs": {"ch": [0, 1, 0], "pe": 2}}, r"\.ch\[2\]: duplicate VC 0 "),
        ((4, 4), {"internal_vcs": {"ch": [0, "1"], "pe": 2}}, r"\.ch\[1\]: must be a VC.*'1'$"),
        # two dateline classes split the external VCs in halves: an odd count cannot
        ((4, 4), {"external_vcs": 3}, r"^routing\.external_vcs: must be 1 or even .*got 3$"),
        ((4, 4), {"external_vcs": 18}, r"^routing\.external_vcs: must be an integer in 1\.\.16"),
        ((4, 4), {"external_vcs": 0}, r"^routing\.external_vcs: must be an integer in 1\.\.16"),
        ((4, 4), {"tie": "minus"}, r"^routing\.tie: must be one of card0, plus"),
    ],
)
def test_bad_routing_options(k, options, message):
    with pytest.raises(SpecError, match=message):
        load_spec(ndt_spec(k, **options))


def test_unknown_class_gets_a_did_you_mean():
    bad = {"internal_vcs": {"ch": 0, "pe": 1, "pee": 2}}
    with pytest.raises(SpecError, match=r"internal_vcs\.pee: unknown key.*did you mean 'pe'"):
        load_spec(ndt_spec((4, 4), **bad))


def test_merged_classes_shrink_the_internal_link():
    plan = ndt((4, 4, 4), internal_vcs={"ch": 0, "ring_upper": 1, "ring_lower": 2, "pe": 0})
    assert {link.vcs for link in plan.links} == {2, 3}


# ---- examples ----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["ndt-2x2x2", "ndt-4x4x4"])
def test_examples_are_deadlock_free(example, name):
    plan = compile_plan(load_spec(example(name)))
    assert analyse_routing(plan).deadlock_free


def test_5dt_example_builds(example):
    # §1.5 / §6.6: the 1024-PE 5DT, 7-port cards
    plan = compile_plan(load_spec(example("ndt-4x4x2x4x4")))
    assert len(plan.endpoints) == 1024
    assert {s.radix for s in plan.switches} == {7}


def test_routing_runs_from_a_reloaded_plan():
    # the plan's routing params carry everything DORT needs (k, card0, VC maps, tie rule)
    plan = ndt((4, 2, 4), ["x+", "x-", "z-"], internal_vcs={**FULL, "ch": 1}, tie="plus")
    again = plan_from_json(plan.to_json())
    assert again == plan
    assert analyse_routing(again).min_hops == analyse_routing(plan).min_hops


def test_2dt():
    # §8.13: n = 2 is supported (3-port cards + PE port, no split dimension, CH + PE internal)
    plan = ndt((4, 4))
    assert {s.radix for s in plan.switches} == {4}
    assert plan.routing.params["internal_vcs"] == {"ch": 0, "pe": 1}
    assert analyse_routing(plan).deadlock_free


def test_a_missing_ring_pair_class_names_the_classes_in_use():
    """Configuration A with dimension 2's upper ring class left out: the error names it and
    the classes in use, and points at no other class in use as a misspelling."""
    vcs = {"ring_upper_0": 0, "ring_lower_0": 1, "ring_upper_1": 2, "ring_lower_1": 3}
    spec = ndt_spec((4, 4, 4), ["x+", "y+", "z+"], internal_vcs={**vcs, "ring_lower_2": 5, "pe": 6})
    with pytest.raises(SpecError) as error:
        load_spec(spec)
    assert str(error.value) == (
        "routing.internal_vcs.ring_upper_2: missing required key (classes in use: ring_upper_0,"
        " ring_lower_0, ring_upper_1, ring_lower_1, ring_upper_2, ring_lower_2, pe)"
    )
