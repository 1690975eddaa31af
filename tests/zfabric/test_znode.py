"""Znode / Snode topology; sliced, up/down, flat and source-destination routing: figures from
reference/znode.md.

Every expected number below comes from the digest (section cited), or from the thesis's own
definitions re-derived here independently of zfabric (labels, common level), never from
zfabric's output. The thesis counts processor links in its hop counts and diameters; zfabric's
analysis counts switch-to-switch links only, so thesis = ours + 2.
"""

from __future__ import annotations

import itertools
import math

import networkx as nx
import pytest

from zfabric import SpecError, analyse_routing, build_fabric, load_spec
from zfabric.plan import PlanView
from zfabric.routing import make_routing, routing_head_width
from zfabric.routing.sliced import header_fields, header_length, pack_fields
from zfabric.topologies.znode import common_level, labels, physical_address


def spec(topology: dict, routing: str = "sliced", **extra):
    return load_spec({"name": "t", "topology": topology, "routing": routing, **extra})


def fabric(topology: dict, routing: str = "sliced"):
    return build_fabric(spec(topology, routing))


def znode(**keys) -> dict:
    return {"kind": "znode", **keys}


def bisection(plan, graph) -> int:
    """Max-flow / min-cut in links between the first and second half of endpoints by id."""
    flow = nx.DiGraph()
    for u, v in graph.edges():
        for a, b in ((u, v), (v, u)):
            if flow.has_edge(a, b):
                flow[a][b]["capacity"] += 1
            else:
                flow.add_edge(a, b, capacity=1)
    half = len(plan.endpoints) // 2
    for e in range(len(plan.endpoints)):
        if e < half:
            flow.add_edge("S", ("ep", e))  # no capacity attribute: unbounded
        else:
            flow.add_edge(("ep", e), "T")
    return nx.maximum_flow_value(flow, "S", "T")


# ---- §1.9 worked examples ----------------------------------------------------------------------

# (id, topology, P, switches, sw-sw links, side links, processor links, diameter, bisection)
# The table's sw-sw column excludes side links (its Fig 3.5 and Ch.6 rows equal the Znode links
# times m); side links = l * sum_i h_i * C(m,2) * R_i^T (§1.4 Totals), worked out per row.
ROWS = [
    ("fig3.4a", znode(z=[2, 2], R=[2, 2]), 4, 6, 4, 0, 8, 4, 2),
    ("fig3.4b", znode(z=[2, 2], R=[2, 4], psi=[1, 2]), 4, 8, 16, 0, 8, 4, 4),
    ("fig3.6", znode(z=[2, 2], R=[2, 2], layers=2), 4, 12, 8, 0, 16, 4, 4),
    # S2, h = 1 at all 4 levels, R_i^T = 8, 8, 4, 2 per Znode: 22 side links; psi3 = psi4 = 2
    (
        "fig3.5",
        znode(z=[2, 2, 2, 2], R=[1, 2, 2, 2], psi=[1, 1, 2, 2], znodes=2),
        32,
        44,
        80,
        22,
        32,
        9,
        16,
    ),
    ("appE", znode(z=[4, 2], R=[1, 4]), 8, 6, 8, 0, 8, 4, 4),
    ("opt36", znode(z=[3, 12], R=[1, 3]), 36, 15, 36, 0, 36, 4, 18),
    ("opt512-L2", znode(z=[8, 64], R=[1, 8]), 512, 72, 512, 0, 512, 4, 256),
    ("8ary3tree", znode(z=[8, 8, 8], R=[1, 8, 64]), 512, 192, 1024, 0, 512, 6, 256),
    ("s5.8-512", znode(z=[4, 4, 32], R=[1, 4, 16]), 512, 272, 1024, 0, 512, 6, 256),
    ("s5.4-1024", znode(z=[8, 8, 16], R=[1, 8, 64]), 1024, 320, 2048, 0, 1024, 6, 512),
    (
        "oZ6-1024",
        znode(z=[4, 2, 2, 4, 2, 8], R=[1, 4, 8, 16, 64, 128]),
        1024,
        2176,
        5120,
        0,
        1024,
        12,
        512,  # the digest says ">= 512"; the halves cut at the level-1 links is exactly 512
    ),
    ("s5.7-2048", znode(z=[4, 4, 4, 32], R=[1, 4, 16, 64]), 2048, 1600, 6144, 0, 2048, 8, 1024),
    # S4: C(4,2) = 6 pairs, R_i^T = 16, 16, 8 per Znode: 6 * 40 = 240 side links
    (
        "ch6-S4",
        znode(z=[4, 2, 4], R=[2, 4, 8], psi=[1, 2, 2], znodes=4),
        128,
        160,
        512,
        240,
        256,
        7,
        128,
    ),
]
# diameters come from walking every route: up to 512 processors runs in seconds, 1024 in
# 10-40 s (slow), 2048 (4M pairs) is left to the counts and bisection
FAST_DIAMETER = [r for r in ROWS if r[2] <= 512]
SLOW_DIAMETER = [r for r in ROWS if r[2] == 1024]


@pytest.mark.parametrize("row", ROWS, ids=[r[0] for r in ROWS])
def test_worked_example_counts(row):
    _, topo, processors, switches, links, side, proc_links, _, bisect = row
    plan, graph = fabric(topo)
    assert len(plan.endpoints) == processors
    assert len(plan.switches) == switches
    assert len(plan.links) // 2 == links + side
    assert sum(len(e.attachments) for e in plan.endpoints) == proc_links
    assert bisection(plan, graph) == bisect


def _diameter(row):
    _, topo, *_, diameter, _ = row
    analysis = analyse_routing(fabric(topo)[0])
    assert analysis.deadlock_free
    assert analysis.diameter + 2 == diameter


@pytest.mark.parametrize("row", FAST_DIAMETER, ids=lambda r: r[0])
def test_worked_example_diameter(row):
    _diameter(row)


@pytest.mark.matrix
@pytest.mark.slow
@pytest.mark.parametrize("row", SLOW_DIAMETER, ids=lambda r: r[0])
def test_worked_example_diameter_large(row):
    _diameter(row)


# ---- §1.10 addressing --------------------------------------------------------------------------


def test_address_translation_golden():
    # Table 6.1 text (§1.10): m = 2, z = (3,2,3): logical 26 -> (1;1,0,2) -> physical 42.
    # labels() returns (p_1, p_2, p_3), the thesis writes (p_4; p_3, p_2, p_1)
    assert labels(26 % 18, (3, 2, 3)) == (2, 0, 1)
    assert physical_address(26, (3, 2, 3), 2) == 42
    # z = (4,4,2): 26 -> (0;1,2,2) -> 26 (powers of two: physical = logical)
    assert labels(26, (4, 4, 2)) == (2, 2, 1)
    assert physical_address(26, (4, 4, 2), 2) == 26


def test_common_level_examples():
    # §2.2: (0;002) and (0;003) have common level 1; (0;002) and (1;000) peer level 1
    assert common_level((2, 0, 0), (3, 0, 0)) == 1
    assert common_level((2, 0, 0), (0, 0, 0)) == 1
    assert common_level((0, 0, 0), (0, 0, 1)) == 3
    assert common_level((0, 1, 0), (0, 0, 0)) == 2


# ---- hop counts: 2c within a Znode, 2c+1 across (§2.7, §1.9 derived rules) -----------------------


def expected_hops(src: int, dst: int, z, side) -> int:
    """Switch-link hops from the thesis definitions, computed here from scratch."""
    size = math.prod(z)
    (ks, xs), (kd, xd) = divmod(src, size), divmod(dst, size)

    def digits(x):
        return [(x // math.prod(z[:i])) % z[i] for i in range(len(z))]

    p, q = digits(xs), digits(xd)
    differing = [i + 1 for i in range(len(z)) if p[i] != q[i]]
    c = max(differing, default=1)
    if ks == kd:
        return 2 * c - 2  # thesis: 2c including the two processor links
    while side[c - 1] == 0:  # §7.6: raise to the lowest level >= c with side links
        c += 1
    return 2 * c - 1  # thesis: 2c + 1


HOP_CASES = {
    "forward": znode(z=[2, 3, 2], R=[1, 2, 4], psi=[1, 1, 2]),
    "backward": znode(z=[2, 2, 2], R=[4, 2, 1], psi=[1, 2, 1]),
    "full": znode(z=[3, 2], R=[2, 3]),
    "omega-layers": znode(z=[2, 2, 2], R=[2, 4, 8], psi=[1, 2, 1], layers=2, pattern="omega"),
    "snode": znode(z=[2, 3], R=[1, 2], znodes=3),
    "snode-h0": znode(z=[2, 2, 2], R=[2, 2, 4], znodes=2, side=[0, 1, 2], layers=2),
}


@pytest.mark.parametrize("routing", ["sliced", "updown", "source_destination"])
@pytest.mark.parametrize("case", sorted(HOP_CASES))
def test_every_pair_delivered_with_thesis_hops(case, routing):
    topo = HOP_CASES[case]
    plan, _ = fabric(topo, routing)
    analysis = analyse_routing(plan, keep_pairs=True)
    assert analysis.deadlock_free
    assert len(analysis.pair_hops) == analysis.pairs
    side = topo.get("side", [1] * len(topo["z"]))
    for (src, dst), (lo, hi) in analysis.pair_hops.items():
        assert lo == hi == expected_hops(src, dst, topo["z"], side), (src, dst)


@pytest.mark.parametrize("case", sorted(HOP_CASES))
def test_flat_always_climbs_to_the_top(case):
    """§2.8 flat addressing: every packet goes up to level n and back, whatever the common
    level: 2n hops with the processor links (2n - 2 switch links), 2n + 1 across Znodes (the
    side hop at the top: §2.4, "at the root it goes down (or sideways)")."""
    topo = HOP_CASES[case]
    plan, _ = fabric(topo, "flat")
    analysis = analyse_routing(plan, keep_pairs=True)
    assert analysis.deadlock_free
    assert len(analysis.pair_hops) == analysis.pairs
    n, size = len(topo["z"]), math.prod(topo["z"])
    for (src, dst), (lo, hi) in analysis.pair_hops.items():
        thesis = 2 * n if src // size == dst // size else 2 * n + 1
        assert lo == hi == thesis - 2, (src, dst)


def addressing_routes(plan, routing):
    """Every (switch, in port, head, decision) of every route, following every candidate."""
    view = PlanView(plan)
    rf = make_routing(view)
    assert rf.name == routing
    seen, out = set(), []
    for src, dst in itertools.permutations(range(len(plan.endpoints)), 2):
        stack = [(i.switch, i.port, i.head, src, dst) for i in rf.injections(src, dst)]
        while stack:
            state = stack.pop()
            if state in seen:
                continue
            seen.add(state)
            switch, port, head, _, _ = state
            decision = rf.route(switch, port, 0, head)
            out.append((*state, decision))
            for hop in decision.hops:
                link = view.out_link[switch][hop.port]
                if link is not None:
                    stack.append((link.dst.switch, link.dst.port, decision.head, src, dst))
    return view, out


@pytest.mark.parametrize("routing", ["flat", "source_destination"])
def test_address_heads(routing):
    """§2.8: flat carries the destination address, source-destination both; here the eq. 6.3
    bit-field addresses of the §1.10 golden example (m = 2, z = (3,2,3): logical 26 is
    physical 42; labels of 2, 1 and 2 bits and a 1-bit Znode id make 6 bits).
    Neither head is rewritten on the way; up decisions offer the whole up pool and down ones
    the whole down group, as sliced routing does (§2.6)."""
    plan, _ = fabric(znode(z=[3, 2, 3], R=[1, 1, 1], znodes=2), routing)
    width = 6
    z = (3, 2, 3)
    head = (
        (lambda s: 42) if routing == "flat" else (lambda s: physical_address(s, z, 2) | 42 << width)
    )
    expected_width = width if routing == "flat" else 2 * width
    assert routing_head_width(plan) == expected_width
    view, routes = addressing_routes(plan, routing)
    for switch, port, injected, src, dst, decision in routes:
        if dst == 26:
            assert injected == head(src)
        assert decision.head == injected
        role = plan.switches[switch].ports[port].role
        roles = {plan.switches[switch].ports[h.port].role for h in decision.hops}
        if roles == {"up"}:
            assert role in ("local", "down")
            assert [h.port for h in decision.hops] == view.ports_by_role[switch]["up"]


def test_source_destination_compares_the_source():
    """The same destination head turns or climbs at one level-1 switch depending on the
    source half of the head: the common ancestor is found from both addresses."""
    plan, _ = fabric(znode(z=[2, 2], R=[1, 2]), "source_destination")
    rf = make_routing(PlanView(plan))
    near, far = rf.injections(0, 1)[0], rf.injections(2, 1)[0]
    assert near.head >> 2 == far.head >> 2 == 1  # destination address 1 in the top half
    switch, port = near.switch, near.port  # processor 0's level-1 switch, local port 0
    roles = plan.switches[switch].ports
    assert {roles[h.port].role for h in rf.route(switch, port, 0, near.head).hops} == {"local"}
    assert {roles[h.port].role for h in rf.route(switch, port, 0, far.head).hops} == {"up"}


@pytest.mark.parametrize("routing", ["flat", "source_destination"])
def test_address_routings_only_on_znodes(routing):
    with pytest.raises(SpecError) as info:
        load_spec({"name": "t", "topology": {"kind": "torus", "k": [4, 4]}, "routing": routing})
    assert info.value.path == "routing"
    assert repr(routing) in info.value.message


@pytest.mark.parametrize("routing", ["sliced", "flat", "source_destination"])
def test_cdg_acyclic_one_vc(routing):
    # §2.7: up* -> (<= 1 side) -> down* needs no VCs; forward, backward, full, layers, Snode
    for topo in HOP_CASES.values():
        plan, _ = fabric(topo, routing)
        assert {link.vcs for link in plan.links} == {1}
        assert analyse_routing(plan).deadlock_free


# ---- the sliced header (§2.3) ------------------------------------------------------------------


def test_header_layout():
    # m = 2, z = (3,2,3): 0 = (0;0,0,0) -> 26 = (1;1,0,2); c = 3 (p_3 differs).
    # fields LSB first: 1, 1, 0, zid 1 (1 bit), p3 = 1 (2 bits), p2 = 0 (1 bit), p1 = 2 (2 bits)
    fields = header_fields(0, 26, (3, 2, 3), 2, (1, 1, 1))
    assert fields == [(1, 1), (1, 1), (0, 1), (1, 1), (1, 2), (0, 1), (2, 2)]
    assert pack_fields(fields) == (1 + 2 + 8 + (1 << 4) + (2 << 7), 9)
    # one Znode: no Znode id; common level 1 -> one 0 bit and p_1
    assert header_fields(0, 2, (3, 2, 3), 1, (1, 1, 1)) == [(0, 1), (2, 2)]
    # the lengths the hardware sizes head flits by: 9 bits turning at 3 with 2 Znodes, 3 at 1
    assert header_length((3, 2, 3), 2, 3) == 9
    assert header_length((3, 2, 3), 1, 1) == 3


def test_header_consumed_exactly():
    """Follow every candidate of every route by hand: delivery leaves width 0 (side + layers)."""
    plan, _ = fabric(znode(z=[2, 3], R=[2, 2], znodes=3, side=[0, 1], layers=2))
    view = PlanView(plan)
    rf = make_routing(view)
    delivered = 0
    for src, dst in itertools.permutations(range(len(plan.endpoints)), 2):
        injections = rf.injections(src, dst)
        assert len(injections) == 2 * 2  # l * R_1 interfaces
        stack = [(i.switch, i.port, i.head, 0) for i in injections]
        while stack:
            switch, port, head, hops = stack.pop()
            assert hops <= 4
            decision = rf.route(switch, port, 0, head)
            assert decision.hops
            for hop in decision.hops:
                link = view.out_link[switch][hop.port]
                if link is None:
                    assert view.endpoint_at[(switch, hop.port)] == dst
                    assert decision.head[1] == 0
                    delivered += 1
                else:
                    stack.append((link.dst.switch, link.dst.port, decision.head, hops + 1))
    assert delivered > 0


# ---- presets (§1.8) ----------------------------------------------------------------------------


def test_kary_ntree_preset(example):
    plan, _ = build_fabric(load_spec(example("znode-64")))
    # 4-ary 3-tree: k^n = 64 processors, n * k^(n-1) = 48 switches, radix 2k (top: k)
    assert len(plan.endpoints) == 64
    assert len(plan.switches) == 48
    assert sorted({s.radix for s in plan.switches}) == [4, 8]
    # (n-1) * k^n = 128 switch-to-switch links, one attachment per processor
    assert len(plan.links) // 2 == 128
    assert all(len(e.attachments) == 1 for e in plan.endpoints)
    analysis = analyse_routing(plan)
    assert analysis.deadlock_free and analysis.diameter == 4


def test_xgft_preset():
    # XGFT(2; 4,3; 2,2): 12 leaves with w_1 = 2 parents each; level i has
    # prod(w_1..w_i) * prod(m_{i+1}..m_h) switches: 2*3 + 4 = 10; level-1 switches have
    # w_2 = 2 parents: 6 * 2 = 12 links
    plan, _ = fabric({"kind": "xgft", "h": 2, "m": [4, 3], "w": [2, 2]})
    assert len(plan.endpoints) == 12
    assert len(plan.switches) == 10
    assert len(plan.links) // 2 == 12
    assert sum(len(e.attachments) for e in plan.endpoints) == 24
    assert plan.topology_params["pattern"] == "omega"
    assert analyse_routing(plan).deadlock_free
    # XGFT(3; 4,4,4; 1,4,4) is the 4-ary 3-tree
    plan, _ = fabric({"kind": "xgft", "h": 3, "m": [4, 4, 4], "w": [1, 4, 4]})
    assert (len(plan.endpoints), len(plan.switches), len(plan.links) // 2) == (64, 48, 128)


# ---- ports (§1.11 numbering rule) --------------------------------------------------------------


def test_port_numbering():
    plan, _ = fabric(znode(z=[2, 3], R=[2, 4], psi=[1, 2], znodes=3, side=[1, 2]))
    by_name = {s.name: s for s in plan.switches}
    level1 = by_name["z1l0s1_0_1"]
    assert level1.position == {"znode": 1, "layer": 0, "level": 1, "zone": 0, "index": 1}
    # 2 local (one per processor), G * psi = 2 * 2 up, h_1 = 1 side to Znodes 0 and 2
    assert [p.label for p in level1.ports] == [
        "local0",
        "local1",
        "up",
        "up",
        "up",
        "up",
        "side0",
        "side2",
    ]
    level2 = by_name["z0l0s2_0_3"]
    # 3 groups of psi_2 = 2 down ports, no up ports, h_2 = 2 side ports per other Znode
    assert [p.label for p in level2.ports] == [
        *["down0"] * 2,
        *["down1"] * 2,
        *["down2"] * 2,
        *["side1"] * 2,
        *["side2"] * 2,
    ]


# ---- spec errors -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "topo, path, text",
    [
        (znode(z=[2, 2], R=[2, 4], psi=[1, 3]), "topology.psi[1]", "<= R[0] = 2 for forward"),
        (znode(z=[2, 2], R=[4, 2], psi=[1, 3]), "topology.psi[1]", "<= R[1] = 2 for backward"),
        (znode(z=[2, 2], R=[2, 3], psi=[1, 2]), "topology.psi[1]", "fully connected"),
        (znode(z=[2, 2], R=[2, 2], psi=[2, 1]), "topology.psi[0]", "must be 1"),
        (znode(z=[4, 4], R=[1, 4], processors=20), "topology.processors", "= 16, got 20"),
        (znode(z=[8, 72], R=[1, 8]), "topology.theta", "level-2 switches would have 72 links"),
        (znode(z=[2, 2], R=[1, 2], znodes=2, side=[1, 0]), "topology.side[1]", "unreachable"),
        (znode(z=[2, 2], R=[1, 2, 4]), "topology.R", "must have 2 entries"),
        (znode(z=[2, 2], R=[1, 2], pattern="omgea"), "topology.pattern", "did you mean 'omega'"),
        (znode(z=[2, 2], R=[1, 2], zondes=2), "topology.zondes", "did you mean 'znodes'"),
        ({"kind": "kary_ntree", "k": 40, "n": 2}, "topology.theta", "80 links"),
    ],
)
def test_spec_errors(topo, path, text):
    with pytest.raises(SpecError) as info:
        spec(topo)
    assert info.value.path == path
    assert text in info.value.message


def test_processors_key_accepted_when_right():
    assert spec(znode(z=[4, 4], R=[1, 4], znodes=2, processors=32)).params.processors == 32


def test_plan_round_trip(example):
    from zfabric.plan import plan_from_json

    plan, _ = build_fabric(load_spec(example("snode-128")))
    assert plan_from_json(plan.to_json()) == plan


@pytest.mark.parametrize("name", ["znode-64", "snode-128"])
def test_examples_deadlock_free(example, name):
    analysis = analyse_routing(build_fabric(load_spec(example(name)))[0])
    assert analysis.deadlock_free


@pytest.mark.slow
def test_example_512_deadlock_free(example):
    analysis = analyse_routing(build_fabric(load_spec(example("znode-512")))[0])
    assert analysis.deadlock_free and analysis.diameter + 2 == 4


def test_more_vcs_are_all_offered():
    # 1 VC by default (the thesis has none, §7.11); with vcs: 2 sliced routing offers both
    plan, _ = fabric(znode(z=[2, 2], R=[1, 2], znodes=2, vcs=2))
    assert {link.vcs for link in plan.links} == {2}
    rf = make_routing(PlanView(plan))
    injection = rf.injections(0, 7)[0]
    assert {
        hop.vcs for hop in rf.route(injection.switch, injection.port, 0, injection.head).hops
    } == {(0, 1)}
    assert analyse_routing(plan).deadlock_free
