"""HyperZ topology and its routings (odim, deter, cliod, aliod): figures from
reference/hyperz-transit.md Part A.

Every expected number comes from the digest (section cited) or is re-derived here from the
paper's definitions (Eq. 2, the GHC connection rule, LCL and the offset set O), independently of
zfabric's code, never from its output. The paper counts processor-to-processor links; zfabric's
analysis counts switch-to-switch hops only, so paper = ours + 2.
"""

from __future__ import annotations

import math

import networkx as nx
import pytest
import yaml

from zfabric import SpecError, analyse_routing, build_fabric, load_spec
from zfabric.cli import main
from zfabric.plan import PlanView
from zfabric.routing import Hop, make_routing
from zfabric.topologies.hyperz import HyperzParams
from zfabric.topologies.znode import ZnodeParams

ROUTINGS = ["aliod", "cliod", "odim", "deter"]
#: the §5.3 Z-node Z(8,4,8; 1,4,8; 1,2,2) under the digest's reading (§1): z, r, g
PAPER_ZNODE = {"z": [8, 4, 8], "R": [1, 4, 8], "psi": [1, 2, 2]}


def spec(topology: dict, routing="aliod", **extra):
    return load_spec({"name": "t", "topology": topology, "routing": routing, **extra})


def hyperz(**keys) -> dict:
    return {"kind": "hyperz", **keys}


def params(s, z, R, psi, q=1) -> HyperzParams:
    tree = ZnodeParams(z=tuple(z), R=tuple(R), psi=tuple(psi))
    return HyperzParams(s=tuple(s), q=((q,) * len(z),) * len(s), tree=tree)


# ---- the paper's definitions, written again here ----------------------------------------------


def address(endpoint: int, s, z) -> tuple[tuple[int, ...], int]:
    """(a_1..a_d; Y): the Z-node index is mixed radix with a_1 least significant."""
    g, y = divmod(endpoint, math.prod(z))
    coords = []
    for size in s:
        g, a = divmod(g, size)
        coords.append(a)
    return tuple(coords), y


def lcl(y1: int, y2: int, z) -> int:
    """Lowest common level: the first level whose zone (z_1..z_c processors) holds both; a
    processor with itself has LCL 1 (digest §1, derived quantities)."""
    c = 1
    while y1 // math.prod(z[:c]) != y2 // math.prod(z[:c]):
        c += 1
    return c


def distance(src: int, dst: int, s, z) -> int:
    """2 LCL + |O| links, processor to processor (digest §1)."""
    (a, y1), (b, y2) = address(src, s, z), address(dst, s, z)
    return 2 * lcl(y1, y2, z) + sum(x != y for x, y in zip(a, b, strict=True))


# ---- counts -----------------------------------------------------------------------------------


def test_eq2_totals_of_the_paper_znode():
    """Eq. 2: R_i = r_i prod_{j>i} z_j, N_i = R_i prod s: (2,2) replication of the §5.3 Z-node."""
    p = params((2, 2), **PAPER_ZNODE)
    # R_0 = 8*4*8, R_1 = 1*4*8, R_2 = 4*8, R_3 = 8
    assert [p.per_znode(i) for i in range(4)] == [256, 32, 32, 8]
    assert [p.total(i) for i in range(4)] == [1024, 128, 128, 32]
    assert p.switches == 288


def test_built_plan_has_eq2_switches_per_level():
    """H_{2,3}(2,2; 1,1)(Z(8,4,8; 1,4,8; 1,2,2)) as built: N_i switches at level i."""
    plan, _ = build_fabric(spec(hyperz(s=[2, 2], l_max=32, **PAPER_ZNODE)))
    levels = [sw.position["level"] for sw in plan.switches]
    assert [levels.count(i) for i in (1, 2, 3)] == [128, 128, 32]
    assert len(plan.endpoints) == 1024


@pytest.mark.parametrize(
    "s, processors, radix",
    [((2, 2), 1024, 18), ((4, 2), 2048, 20), ((4, 4), 4096, 22), ((8, 4), 8192, 26)],
)
def test_scalability_series_radices(s, processors, radix):
    """§5.3 / §10: 256-processor Z-node, 16 internal ports + sum(s_k - 1) side ports (q = 1)."""
    p = params(s, **PAPER_ZNODE)
    assert p.per_znode(0) == 256
    assert p.processors == processors
    assert max(p.radix(level) for level in (1, 2, 3)) == radix


def test_scalability_series_fits_the_size_limits():
    """The series' last point, H_{2,2}(8,4): 8192 processors (the endpoint limit), 2304
    switches (digest §1: 32 + 32 + 8 per 256-processor Z-node, 32 Z-nodes), accepted; twice
    that is refused before anything is built."""
    accepted = spec(hyperz(s=[8, 4], l_max=32, **PAPER_ZNODE))
    assert accepted.params.processors == 32 * 256 == 8192
    assert accepted.params.switches == 32 * (32 + 32 + 8)
    with pytest.raises(SpecError, match=r"^topology: gives 16384 endpoints, over the limit of"):
        spec(hyperz(s=[8, 8], l_max=32, **PAPER_ZNODE))


@pytest.mark.parametrize("s, radix", [((2, 2), 18), ((4, 2), 20)])
def test_scalability_radices_as_wired(s, radix):
    """The same radices on the built plans (the wiring, not only the counting)."""
    plan, _ = build_fabric(spec(hyperz(s=list(s), l_max=32, **PAPER_ZNODE)))
    assert max(sw.radix for sw in plan.switches) == radix


def test_fig3_instance_has_262144_processors_and_37_ports():
    """§1 / §10: h = 3, d = 3, z = s = 8, q = 1 (a k-ary 3-tree Z-node): 8^6 processors and
    2z + dq(z - 1) = 16 + 21 = 37 ports (the paper's "about 32" is loose)."""
    p = params((8, 8, 8), z=(8, 8, 8), R=(1, 8, 64), psi=(1, 1, 1))
    assert p.processors == 262_144
    assert max(p.radix(level) for level in (1, 2, 3)) == 37


def test_port_budget_is_refused_in_one_line(tmp_path, capsys):
    path = tmp_path / "big.yaml"
    path.write_text(
        "topology: {kind: hyperz, s: [8, 8, 8], z: [8, 8, 8], R: [1, 8, 64], l_max: 32}\n"
    )
    assert main(["check", str(path)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.splitlines()) == 1
    assert err.startswith("zfabric: error: topology.l_max: level-1 switches would have 37 ports")


@pytest.mark.parametrize(
    "keys, path, fragment",
    [
        ({"s": [4, 4], "z": [2], "q": [1]}, "topology.q", "must be a list of 2 entries"),
        ({"s": [4, 4], "z": [2, 2], "R": [1, 2], "q": [1, [1, 0]]}, "topology.q[1][1]", "got 0"),
        ({"s": [4, 4], "z": [2, 2], "R": [1, 2], "q": [1, [1]]}, "topology.q[1]", "2 entries"),
        ({"s": [4, 1], "z": [2]}, "topology.s[1]", "got 1"),
        ({"s": [4], "z": [2, 3], "R": [2, 3], "psi": [1, 2]}, "topology.psi[1]", "must be 1"),
        ({"s": [4], "z": [2], "vcs": 0}, "topology.vcs", "got 0"),
    ],
)
def test_bad_keys_are_refused_in_one_line(tmp_path, capsys, keys, path, fragment):
    file = tmp_path / "bad.yaml"
    file.write_text(yaml.safe_dump({"topology": {"kind": "hyperz", **keys}}))
    assert main(["check", str(file)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.splitlines()) == 1, err
    assert err.startswith(f"zfabric: error: {path}: ") and fragment in err, err


def test_adaptive_vcs_over_the_link_limit_is_refused(tmp_path, capsys):
    file = tmp_path / "bad.yaml"
    file.write_text(
        "topology: {kind: hyperx, s: [3], terminals: 1, vcs: 8}\n"
        "routing: {name: aliod, adaptive_vcs: 9}\n"
    )
    assert main(["check", str(file)]) == 2
    assert "routing.adaptive_vcs: 9 adaptive VCs after 8 escape VCs (topology vcs) make 17" in (
        capsys.readouterr().err
    )


# ---- the GHC ----------------------------------------------------------------------------------


def side_neighbours(plan) -> dict[int, set[int]]:
    """Switch -> the switches its side links reach."""
    out: dict[int, set[int]] = {}
    for link in plan.links:
        if plan.switches[link.src.switch].ports[link.src.port].role == "side":
            out.setdefault(link.src.switch, set()).add(link.dst.switch)
    return out


@pytest.mark.parametrize("z, R", [([1], [1]), ([2, 2], [1, 2])])
def test_fig2_every_znode_has_8_neighbours_at_every_level(z, R):
    """Fig 2, H_{3,h}(4,3,4; 1,1,1): (0,0,0) meets (0,0,1..3), (0,1..2,0), (1..3,0,0), and
    every Z-node likewise 3 + 2 + 3 = 8, at every level, between equal flat addresses."""
    plan, _ = build_fabric(spec(hyperz(s=[4, 3, 4], z=z, R=R)))
    where = {
        sw.id: (tuple(sw.position["coords"]), sw.position["level"], sw.position["flat"])
        for sw in plan.switches
    }
    neighbours = side_neighbours(plan)
    assert len(neighbours) == len(plan.switches)
    for switch, others in neighbours.items():
        coords, level, flat = where[switch]
        assert len(others) == 8
        for other in others:
            there, their_level, their_flat = where[other]
            assert (their_level, their_flat) == (level, flat)
            assert sum(a != b for a, b in zip(coords, there, strict=True)) == 1
    origin = next(s for s, w in where.items() if w == ((0, 0, 0), 1, 0))
    # coords are (a_1, a_2, a_3): the paper's (0,0,1..3) are a_1 = 1..3, its (1..3,0,0) a_3
    a_1 = {(1, 0, 0), (2, 0, 0), (3, 0, 0)}
    a_2 = {(0, 1, 0), (0, 2, 0)}
    a_3 = {(0, 0, 1), (0, 0, 2), (0, 0, 3)}
    assert {where[o][0] for o in neighbours[origin]} == a_1 | a_2 | a_3


def test_fig2_route_has_two_offsets_and_two_orders():
    """(0,0,0) -> (3,0,1) in (a_3,a_2,a_1): P = {1,0,1}, |O| = 2, |O|! = 2 shortest paths
    (HyperX, q = 1); CLIOD and ALIOD offer both dimensions and their routes take both orders."""
    plan, graph = build_fabric(spec({"kind": "hyperx", "s": [4, 3, 4], "terminals": 1}))
    src = 0
    dst = 1 + 0 * 4 + 3 * 12  # a_1 = 1, a_2 = 0, a_3 = 3
    paths = list(nx.all_shortest_paths(graph, ("ep", src), ("ep", dst)))
    assert len(paths) == 2 and all(len(p) - 1 == 2 + 2 for p in paths)
    for name in ("cliod", "aliod"):
        plan, _ = build_fabric(spec({"kind": "hyperx", "s": [4, 3, 4], "terminals": 1}, name))
        rf = make_routing(PlanView(plan))
        seen = set()
        for choice in rf.injections(src, dst):
            for hop in rf.route(choice.switch, choice.port, 0, dst).hops:
                link = PlanView(plan).out_link[choice.switch][hop.port]
                mid = link.dst.switch
                for last in rf.route(mid, link.dst.port, hop.vcs[0], dst).hops:
                    seen.add((mid, PlanView(plan).out_link[mid][last.port].dst.switch))
        assert len({mid for mid, _ in seen}) == 2, name  # two first hops: two orders


# ---- distances and routes ---------------------------------------------------------------------

SMALL = {
    "hyperx-4x3": ({"kind": "hyperx", "s": [4, 3], "terminals": 2}, [2], 1),
    "h2": (hyperz(s=[4, 2], z=[4, 2], R=[1, 2]), [4, 2], 2),
    "d3": (hyperz(s=[2, 2, 2], z=[2, 2], R=[1, 2]), [2, 2], 2),
    "h3-multihomed": (hyperz(s=[2, 3], z=[2, 2, 2], R=[2, 2, 4], psi=[1, 1, 2]), [2, 2, 2], 3),
}


@pytest.mark.parametrize("name", sorted(SMALL))
def test_bfs_distance_is_2lcl_plus_offsets_and_diameter_2h_plus_d(name):
    topology, z, h = SMALL[name]
    plan, graph = build_fabric(spec(topology))
    s = topology["s"]
    n = len(plan.endpoints)
    assert n == math.prod(s) * math.prod(z)
    longest = 0
    for src in range(n):
        reach = nx.single_source_shortest_path_length(graph, ("ep", src))
        for dst in range(n):
            if dst != src:
                assert reach[("ep", dst)] == distance(src, dst, s, z), (src, dst)
                longest = max(longest, reach[("ep", dst)])
    assert longest == 2 * h + len(s)


@pytest.mark.parametrize("routing", ROUTINGS)
@pytest.mark.parametrize("name", sorted(SMALL))
def test_every_route_is_minimal_and_proven(name, routing):
    """Every route of every routing reaches its destination (the walk checks) in 2 LCL + |O|
    links, whichever candidate is taken (min = max), and the proof holds."""
    topology, z, _ = SMALL[name]
    plan, _ = build_fabric(spec(topology, routing))
    analysis = analyse_routing(plan, keep_pairs=True)
    assert analysis.deadlock_free
    assert analysis.adaptive == (routing in ("aliod", "cliod"))
    for (src, dst), (lo, hi) in analysis.pair_hops.items():
        assert lo == hi == distance(src, dst, topology["s"], z) - 2, (src, dst)


@pytest.mark.parametrize("routing", ["aliod", "cliod"])
def test_one_vc_per_link_is_refused_with_the_cycle(tmp_path, capsys, routing):
    """adaptive_vcs 0: the whole routing on one VC, every channel an escape channel; crossing
    two dimensions in either order closes a cycle: exit 1 with the cycle printed."""
    file = tmp_path / "one-vc.yaml"
    file.write_text(
        "topology: {kind: hyperz, s: [2, 2, 2], z: [2, 2], R: [1, 2]}\n"
        f"routing: {{name: {routing}, adaptive_vcs: 0}}\n"
    )
    assert main(["check", str(file)]) == 1
    out = capsys.readouterr().out
    assert "DEADLOCK: channel dependency cycle:" in out
    cycle = [line for line in out.splitlines() if line.startswith("    h")]
    assert len(cycle) >= 3 and cycle[0].rstrip(" ->") == cycle[-1]
    assert any("(side" in line for line in cycle)  # the cycle crosses dimensions


@pytest.mark.parametrize("routing, code", [("aliod", 1), ("cliod", 0)])
def test_one_vc_per_link_on_one_dimension(tmp_path, capsys, routing, code):
    """d = 1, h = 2, adaptive_vcs 0: CLIOD crosses sides only at the LCL, between all its up
    and all its down hops (up < side < down orders its channels: acyclic); ALIOD takes a side
    hop at any level between up hops, or between down hops, so with one dimension of 3 S-nodes
    up, side, down, side ... closes a cycle across the levels (digest §2)."""
    file = tmp_path / "one-dim.yaml"
    file.write_text(
        "topology: {kind: hyperz, s: [3], z: [2, 2], R: [1, 2]}\n"
        f"routing: {{name: {routing}, adaptive_vcs: 0}}\n"
    )
    assert main(["check", str(file)]) == code
    out = capsys.readouterr().out
    assert ("DEADLOCK: channel dependency cycle:" in out) == (code == 1)


# ---- hand-worked decisions --------------------------------------------------------------------


@pytest.fixture(scope="module")
def d3():
    """hyperz-d3's fabric: s = (2,2,2), z = (2,2), R = (1,2). A level-1 switch's ports are
    local0, local1, up, up, side d0, side d1, side d2 (0..6); a level-2 switch's down0, down1,
    side d0, d1, d2 (0..4) (the port numbering in topologies/hyperz.py)."""
    return {
        name: build_fabric(spec(hyperz(s=[2, 2, 2], z=[2, 2], R=[1, 2]), name))[0]
        for name in ROUTINGS
    }


def named(plan, name: str) -> int:
    return next(sw.id for sw in plan.switches if sw.name == name)


#: endpoint 0 = (0,0,0; 0) -> endpoint 15 = Z-node a_1 = 1, a_2 = 1, a_3 = 0 (index 3), Y = 3:
#: O = {d0, d1}, LCL 2 (Y 0 and 3 in different level-1 zones of 2)
DST = 15
AT_LEVEL_1 = {  # h0.0.0s1_0, not at the LCL
    # sides of both offset dimensions, then Up, on the adaptive VC; escape side(min O) on VC 0
    "aliod": (Hop(4, (1,)), Hop(5, (1,)), Hop(2, (1,)), Hop(3, (1,)), Hop(4, (0,))),
    # up to the LCL first: both up ports, adaptive then escape (ODim is up here too)
    "cliod": (Hop(2, (1,)), Hop(3, (1,)), Hop(2, (0,)), Hop(3, (0,))),
    "odim": (Hop(2, (0,)), Hop(3, (0,))),
    # D-mod-K: up port Y // 1 mod 2 = 1, the second up port
    "deter": (Hop(3, (0,)),),
}
AT_LEVEL_2 = {  # h0.0.0s2_1, at the LCL; Y = 3 is below down group (3 // 2) mod 2 = 1
    "aliod": (Hop(2, (1,)), Hop(3, (1,)), Hop(1, (1,)), Hop(2, (0,))),
    "cliod": (Hop(2, (1,)), Hop(3, (1,)), Hop(2, (0,))),
    "odim": (Hop(2, (0,)),),
    "deter": (Hop(2, (0,)),),
}


@pytest.mark.parametrize("routing", ROUTINGS)
def test_hand_worked_decisions(d3, routing):
    plan = d3[routing]
    rf = make_routing(PlanView(plan))
    assert rf.route(named(plan, "h0.0.0s1_0"), 0, 0, DST).hops == AT_LEVEL_1[routing]
    assert rf.route(named(plan, "h0.0.0s2_1"), 0, 0, DST).hops == AT_LEVEL_2[routing]


def test_aliod_at_level_1_at_the_lcl_offers_only_sides(d3):
    """Table 1's last branch: LCL reached at level 1 with O non-empty: no Down, ODim escape.
    Endpoint 0 -> endpoint 1 + 4 * 1 (Z-node a_1 = 1, Y = 1: same level-1 zone, LCL 1)."""
    plan = d3["aliod"]
    rf = make_routing(PlanView(plan))
    hops = rf.route(named(plan, "h0.0.0s1_0"), 0, 0, 5).hops
    assert hops == (Hop(4, (1,)), Hop(4, (0,)))


def test_hyperx_preset_is_hyperz_with_one_switch_per_znode():
    a, _ = build_fabric(spec({"kind": "hyperx", "s": [3, 4], "terminals": 3}))
    b, _ = build_fabric(spec(hyperz(s=[3, 4], z=[3], R=[1])))
    assert a.switches == b.switches and a.links == b.links and a.endpoints == b.endpoints
    assert len(a.switches) == 12 and {sw.radix for sw in a.switches} == {3 + 2 + 3}


def test_parallel_side_lanes_per_level():
    """q_ik parallel links: q = [2, [1, 3]] on a 2-level Z-node: dimension 1 has 2 lanes at
    both levels, dimension 2 has 1 at level 1 and 3 at level 2."""
    plan, _ = build_fabric(spec(hyperz(s=[2, 3], z=[2, 2], R=[1, 2], q=[2, [1, 3]])))
    for sw in plan.switches:
        sides = [p for p in sw.ports if p.role == "side"]
        lanes = {0: 2, 1: 1 if sw.position["level"] == 1 else 3}
        for dim, size in ((0, 2), (1, 3)):
            assert sum(p.dim == dim for p in sides) == lanes[dim] * (size - 1)
    assert analyse_routing(plan).deadlock_free


@pytest.mark.parametrize("routing", ROUTINGS)
@pytest.mark.parametrize("name", ["hyperz-hyperx-4x4", "hyperz-h2", "hyperz-d3"])
def test_examples_prove_every_routing(example, name, routing):
    """Every routing on every small HyperZ example (one HyperX, one h = 2, one d = 3)."""
    data = yaml.safe_load(example(name).read_text())
    plan, _ = build_fabric(load_spec({**data, "routing": {"name": routing}}))
    assert analyse_routing(plan).deadlock_free


# ---- why CLIOD loses under bit-complement ------------------------------------------------------


def side_link_sources(plan, routing: str, pairs) -> dict[int, set[int]]:
    """Side link -> the source Z-nodes whose packets may cross it, following every candidate
    and VC the routing offers from every injection choice of every (src, dst) pair."""
    view = PlanView(plan)
    rf = make_routing(view)
    coords = {sw.id: tuple(sw.position["coords"]) for sw in plan.switches}
    users: dict[int, set[int]] = {}
    for src, dst in pairs:
        first = rf.injections(src, dst)
        stack = [(i.switch, i.port, 0, i.head) for i in first]
        origin = coords[first[0].switch]
        seen = set()
        while stack:
            state = stack.pop()
            if state in seen:
                continue
            seen.add(state)
            switch, port, vc, head = state
            decision = rf.route(switch, port, vc, head)
            for hop in decision.hops:
                link = view.out_link[switch][hop.port]
                if link is None:
                    continue
                if plan.switches[switch].ports[hop.port].role == "side":
                    users.setdefault(link.id, set()).add(origin)
                stack += [(link.dst.switch, link.dst.port, v, decision.head) for v in hop.vcs]
    return users


@pytest.mark.parametrize("routing, flows", [("odim", 1), ("deter", 1), ("cliod", 2)])
def test_bit_complement_merges_two_flows_per_side_link_under_cliod(routing, flows):
    """docs/research/hyperz.md, *CLIOD under bit-complement*: on H_{2,2}(4,2)(Z_2(4,2)) the
    complement of (a_1, a_2; Y) is (3 - a_1, 1 - a_2; 7 - Y): both dimensions offset and the LCL
    the top level. ODim crosses dimension 1 then 2, so a dimension-1 side link from Z-node A
    carries A's packets only and a dimension-2 side link into the complement of A carries A's
    only: one source Z-node per link, no merge after the first side hop. CLIOD may take either
    order, so each top-level side link also carries the Z-node whose other order passes it:
    two, at the same mean load."""
    plan, _ = build_fabric(spec(hyperz(s=[4, 2], z=[4, 2], R=[1, 2]), routing))
    n = len(plan.endpoints)
    assert n == 64
    pairs = [(src, src ^ (n - 1)) for src in range(n)]  # bit-complement of a 6-bit id
    users = side_link_sources(plan, routing, pairs)
    tops = [sw for sw in plan.switches if sw.position["level"] == 2]
    for link in users:  # top-level side links only, ...
        switch = plan.links[link].src.switch
        assert plan.switches[switch].position["level"] == 2
    # ... from each top switch the dimension-1 link to 3 - a_1 and the one dimension-2 link
    assert len(users) == 2 * len(tops)
    assert {len(sources) for sources in users.values()} == {flows}
