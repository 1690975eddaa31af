"""T-switch fat trees and DESTRO: counts from the nDT thesis's first paper
(reference/transit.md "Seed 004, Paper 1"; reference/ndt.md §2), never from zfabric's output.

The paths are counted by walking the built plan's routes (zfabric/tswitch_paths.py); the
expected values are the paper's Table 2 formulas and its internal-link load (Props 14-21),
written out here in k, n and s.
"""

from __future__ import annotations

import itertools
import json

import pytest

from zfabric import analyse_routing, build_fabric, load_spec
from zfabric.cli import main
from zfabric.plan import PlanView
from zfabric.routing import make_routing
from zfabric.topologies.tswitch import bad_alpha, optimal_alpha
from zfabric.tswitch_paths import tswitch_paths


def tree(k: int, n: int, routing=None, kind: str = "kary_ntree", **tswitch):
    topology = {"kind": kind, "k": k, "n": n}
    if kind == "xgft":
        topology = {"kind": "xgft", "h": n, "m": [k] * n, "w": [1] + [k] * (n - 1)}
    if tswitch:
        topology["tswitch"] = tswitch
    spec = {"name": "t", "topology": topology}
    if routing is not None:
        spec["routing"] = routing
    return build_fabric(load_spec(spec))[0]


# ---- Table 2: paths per switch and per port pair -----------------------------------------------

SIZES = [(4, 2), (4, 3), (2, 4), (6, 2), (2, 3)]


def table_2(k: int, n: int, s: int) -> dict[str, int]:
    """Props 5, 8, 13 (and 6, 10 for the last stage)."""
    crossing = k ** (n + 1) - k ** (s + 2) if s < n - 1 else 0
    return {"C_f": crossing, "T": (k - 1) * k ** (s + 1), "C_b": crossing}


@pytest.mark.parametrize("k, n", SIZES, ids=[f"{k}-ary-{n}-tree" for k, n in SIZES])
@pytest.mark.parametrize("scp", ["optimal", "bad"])
def test_table_2_per_switch(k, n, scp):
    paths = tswitch_paths(tree(k, n, scp=scp))
    assert paths.pairs == k**n * (k**n - 1)
    for s in range(n):
        switches = paths.stage(s)
        assert len(switches) == k ** (n - 1)  # n k^(n-1) switches in all (§5)
        for switch in switches:
            counts = switch.summary()
            assert {key: counts[key] for key in ("C_f", "T", "C_b")} == table_2(k, n, s)


@pytest.mark.parametrize("k, n", [(4, 3), (2, 4), (6, 2)])
def test_table_2_per_port_pair(k, n):
    # Prop 4: C_f(l, l') = k^(n-1) - k^s for every down l, up l'; Prop 7: T(l, l') = k^s for
    # l != l'; Prop 12: C_b(l, l') = k^n - k^(s+1) iff l' = l - k, else no path
    paths = tswitch_paths(tree(k, n, scp="optimal"))
    for s in range(n):
        last = s == n - 1
        for switch in paths.stage(s):
            expected = {}
            for down, other in itertools.product(range(k), repeat=2):
                if down != other:
                    expected[(down, other)] = k**s
                if not last:
                    expected[(down, k + other)] = k ** (n - 1) - k**s
                    if down == other:
                        expected[(k + down, other)] = k**n - k ** (s + 1)
            assert dict(+switch.flows) == expected


# ---- internal-link crossings (Props 14-21) -----------------------------------------------------


def crossings_by_stage(plan) -> list[set[int]]:
    paths = tswitch_paths(plan)
    return [{sw.summary()["crossings"] for sw in paths.stage(s)} for s in range(paths.n)]


@pytest.mark.parametrize("k, n, expected", [(4, 3, 128), (2, 4, 16), (4, 2, 32), (6, 2, 108)])
def test_optimal_scp_crosses_half_k_to_the_n_plus_1(k, n, expected):
    # Prop 20: 1/2 k^(n+1) per Type A switch (the digest's (4,3) -> 128 and (2,4) -> 16);
    # Prop 21: Type B, the last stage, never crosses
    assert expected == k ** (n + 1) // 2
    assert crossings_by_stage(tree(k, n, scp="optimal")) == [{expected}] * (n - 1) + [{0}]


def test_optimal_scp_never_crosses_backward():
    paths = tswitch_paths(tree(4, 3, scp="optimal"))
    assert all(sw.summary()["crossings_backward"] == 0 for sw in paths.switches)


def internal_link_load(k: int, n: int, s: int, alpha: set[int]) -> int:
    """C_I of a switch at stage s < n-1 with configuration C^alpha = ``alpha``: the paper's
    forward + turnaround load in p = |B^alpha| (§5.3.1), plus k^n - k^(s+1) backward
    connections for every pair (l + k, l) split between alpha and beta (Props 12, 17)."""
    p = sum(1 for port in range(k) if port in alpha)
    forward_turnaround = (
        2 * p**2 * k ** (n - 1)
        - 4 * p**2 * k**s
        + k ** (n + 1)
        - k ** (s + 2)
        - 2 * p * k**n
        + 4 * p * k ** (s + 1)
    )
    split = sum(1 for port in range(k) if (port in alpha) != (port + k in alpha))
    return forward_turnaround + split * (k**n - k ** (s + 1))


@pytest.mark.parametrize("k, n", [(4, 2), (2, 3)])
def test_every_configuration_against_the_formula(k, n):
    # every C^alpha of k ports out of 2k at stage 0 (70 of them for k = 4), built and counted
    top = list(range(k))
    loads = {}
    for alpha in itertools.combinations(range(2 * k), k):
        scp = [list(alpha)] + [list(range(k))] * (n - 2) + [top]
        plan = tree(k, n, scp=scp)
        counted = {sw.summary()["crossings"] for sw in tswitch_paths(plan).stage(0)}
        assert counted == {internal_link_load(k, n, 0, set(alpha))}, alpha
        loads[alpha] = counted.pop()
    best, worst = min(loads.values()), max(loads.values())
    assert best == k ** (n + 1) // 2
    # Prop 20: the optimum is exactly the configurations keeping every pair (l, l + k)
    assert {a for a, v in loads.items() if v == best} == {
        a for a in loads if all((port in a) == (port + k in a) for port in range(k))
    }
    assert loads[optimal_alpha(k, n)[0]] == best
    assert loads[bad_alpha(k, n)[0]] == worst == 2 * (k ** (n + 1) - k**2)


def test_bad_scp_worst_at_every_stage():
    # below the top every forward and backward connection crosses: 2 (k^(n+1) - k^(s+2));
    # at the top the down ports split in halves: T · TC_I / (k(k-1)) with p = q = k/2,
    # (k-1) k^n · (k^2 / 2) / (k (k-1)) = k^(n+1) / 2
    k, n = 4, 3
    assert crossings_by_stage(tree(k, n, scp="bad")) == [
        {2 * (k ** (n + 1) - k ** (s + 2))} for s in range(n - 1)
    ] + [{k ** (n + 1) // 2}]


def test_the_papers_8x8_examples_are_type_a():
    # Example 2: alpha = {0,1,2,3,8,9,10,11} and {0,2,3,4,8,10,11,12} for an 8x8 T-switch
    assert optimal_alpha(8, 2)[0] == (0, 1, 2, 3, 8, 9, 10, 11)
    k, n = 8, 2
    for alpha in ([0, 1, 2, 3, 8, 9, 10, 11], [0, 2, 3, 4, 8, 10, 11, 12]):
        plan = tree(k, n, scp=[alpha, list(range(k))])
        assert crossings_by_stage(plan) == [{k ** (n + 1) // 2}, {0}]
    # Example 1: optimal for forward and turnaround only; pairs (4, 12), (5, 13) split
    plan = tree(k, n, scp=[[0, 1, 2, 3, 8, 9, 12, 13], list(range(k))])
    split = 4 * (k**n - k)
    assert crossings_by_stage(plan) == [{k ** (n + 1) // 2 + split}, {0}]


# ---- structure ---------------------------------------------------------------------------------


def test_optimal_tree_structure():
    # 4-ary 3-tree: 16 T-switches per stage; below the top two 4 + r port internal switches,
    # at the top Type B leaves beta without a port in use: only alpha (4 ports) is built
    for r in (1, 2):
        plan = tree(4, 3, internal_ports=r)
        radix = sorted(s.radix for s in plan.switches)
        assert radix == [4] * 16 + [4 + r] * 64
        internal = [link for link in plan.links if _role(plan, link) == "internal"]
        assert len(internal) == 2 * r * 32  # two channels per link, r links per T-switch
        tree_links = [link for link in plan.links if _role(plan, link) != "internal"]
        assert len(tree_links) == 2 * 2 * 64  # the 4-ary 3-tree's k^n (n - 1) links


def _role(plan, link) -> str:
    return plan.switches[link.src.switch].ports[link.src.port].role


def test_alpha_holds_the_configurations_ports():
    plan = tree(4, 2, scp=[[0, 3, 5, 6], [1, 2, 4, 5]])
    by_half = {}
    for switch in plan.switches:
        where = switch.position
        if (where["level"], where["index"]) == (1, 0) or where["level"] == 2:
            ports = [p for p in switch.ports if p.role != "internal"]
            tports = [p.group + (4 if p.role == "up" else 0) for p in ports]
            by_half.setdefault((where["level"], where["half"]), set()).update(tports)
    assert by_half[(1, 0)] == {0, 3, 5, 6} and by_half[(1, 1)] == {1, 2, 4, 7}
    assert by_half[(2, 0)] == {1, 2} and by_half[(2, 1)] == {0, 3}  # no up ports at the top


def test_xgft_k_ary_n_tree_counts_alike():
    plan = tree(4, 3, kind="xgft", scp="optimal")
    assert plan.topology_params["pattern"] == "omega"
    assert crossings_by_stage(plan) == [{128}, {128}, {0}]


# ---- DESTRO ------------------------------------------------------------------------------------


def digits(x: int, k: int, n: int) -> list[int]:
    return [(x // k**i) % k for i in range(n)]


def walk(plan, src: int, dst: int) -> list[tuple[int, int, int]]:
    """(switch, input port, output port) of every hop from src to dst."""
    view = PlanView(plan)
    rf = make_routing(view)
    injection = rf.injections(src, dst)[0]
    switch, port, vc, head = injection.switch, injection.port, 0, injection.head
    hops = []
    while True:
        decision = rf.route(switch, port, vc, head)
        (hop,) = decision.hops
        hops.append((switch, port, hop.port))
        link = view.out_link[switch][hop.port]
        if link is None:
            return hops
        switch, port, vc, head = link.dst.switch, link.dst.port, hop.vcs[0], decision.head


@pytest.mark.parametrize("k, n", [(4, 3), (2, 4), (3, 2)])
def test_updown_is_destro(k, n):
    # the definition: at stage s up through port k + h'_s while the subtree lacks h', turn at
    # the first common ancestor (stage = the highest digit where h and h' differ), then down
    # through h'_s; switch ports are numbered down 0..k-1, up k..2k-1 (Defs 3-5)
    plan = tree(k, n, routing="updown")
    for src, dst in itertools.permutations(range(k**n), 2):
        h, g = digits(src, k, n), digits(dst, k, n)
        top = max(i for i in range(n) if h[i] != g[i])
        expected = [k + g[s] for s in range(top)] + [g[s] for s in range(top, -1, -1)]
        hops = walk(plan, src, dst)
        assert [out for _, _, out in hops] == expected
        assert [plan.switches[s].position["level"] - 1 for s, _, _ in hops] == [
            *range(top + 1),
            *range(top - 1, -1, -1),
        ]


@pytest.mark.parametrize("scp", ["optimal", "bad"])
def test_destro_takes_the_plain_trees_t_switch_ports(scp):
    # per T-switch, DESTRO over internal switches leaves by the port updown takes on the
    # whole switch; the internal hop, where there is one, comes in between
    k, n = 4, 2
    plain, twin = tree(k, n, routing="updown"), tree(k, n, scp=scp, internal_ports=2)
    for src, dst in itertools.permutations(range(k**n), 2):
        expected = [
            (plain.switches[s].position["level"], out) for s, _, out in walk(plain, src, dst)
        ]
        got = []
        for s, _, out in walk(twin, src, dst):
            port = twin.switches[s].ports[out]
            if port.role != "internal":
                level = twin.switches[s].position["level"]
                got.append((level, port.group + (k if port.role == "up" else 0)))
        assert got == expected


def test_internal_link_by_the_exit_ports_index():
    # r internal links: a crossing packet takes link i mod r, i the index of the port it
    # leaves by on the other internal switch (its external ports come first, in T-switch order)
    r = 3
    plan = tree(4, 2, scp="optimal", internal_ports=r)
    used = set()
    for src, dst in itertools.permutations(range(16), 2):
        hops = walk(plan, src, dst)
        for (s, _, out), (_, _, exit_) in itertools.pairwise(hops):
            if plan.switches[s].ports[out].role == "internal":
                internal = [i for i, p in enumerate(plan.switches[s].ports) if p.role == "internal"]
                assert out == internal[exit_ % r]
                used.add((s, out))
    # Type A below the top: beta holds ports 2, 3, 6, 7 at indices 0..3: all three links used
    lower = [s.id for s in plan.switches if s.position["level"] == 1]
    assert all(sum(1 for u in used if u[0] == s) == r for s in lower)


# ---- deadlock: the internal links' VC classes --------------------------------------------------

#: below the top, pairs (0, 4) and (1, 5) split with the up port on beta, (2, 6) and (3, 7)
#: split with the up port on alpha: a descending packet crosses alpha -> beta at one switch and
#: beta -> alpha at another, so one internal VC closes a cycle through two parents
MIXED = [[0, 1, 6, 7], [0, 1, 6, 7], [0, 1, 2, 3]]


def test_default_vcs_and_the_proof():
    optimal = tree(4, 3, scp="optimal")  # every pair kept: one class, one VC
    assert optimal.routing.params["internal_vcs"] == {"up": [0], "down": [0]}
    assert analyse_routing(optimal).deadlock_free
    mixed = tree(4, 3, scp=MIXED)
    assert mixed.routing.params["internal_vcs"] == {"up": [0], "down": [1]}
    assert analyse_routing(mixed).deadlock_free


def test_one_internal_vc_with_descending_crossings_deadlocks():
    merged = {"name": "destro", "internal_vcs": {"up": 0, "down": 0}}
    analysis = analyse_routing(tree(4, 3, routing=merged, scp=MIXED))
    assert not analysis.deadlock_free
    assert any("internal" in channel for channel in analysis.cycle)


def test_bad_scp_with_one_internal_vc_is_deadlock_free():
    # every down port on alpha and every up port on beta: alpha -> beta carries only ascending
    # packets and beta -> alpha only descending ones, so no internal channel joins the phases
    merged = {"name": "destro", "internal_vcs": {"up": 0, "down": 0}}
    assert analyse_routing(tree(4, 3, routing=merged, scp="bad")).deadlock_free


def test_vcs_per_class_follow_the_trees_vcs():
    spec = {"kind": "kary_ntree", "k": 4, "n": 2, "vcs": 2, "tswitch": {"scp": "bad"}}
    plan = build_fabric(load_spec({"name": "t", "topology": spec}))[0]
    assert plan.routing.params["internal_vcs"] == {"up": [0, 1], "down": [2, 3]}
    assert {link.vcs for link in plan.links if _role(plan, link) == "internal"} == {4}
    assert analyse_routing(plan).deadlock_free


# ---- check output ------------------------------------------------------------------------------


def test_check_prints_the_path_counts(tmp_path, capsys):
    spec = tmp_path / "t.yaml"
    spec.write_text("topology: {kind: kary_ntree, k: 4, n: 3, tswitch: {internal_ports: 1}}\n")
    assert main(["-q", "check", str(spec)]) == 0
    out = capsys.readouterr().out
    assert (
        "stage 0 (16 T-switches): C_f 240, T 12, C_b 240; internal-link crossings 128"
        " (forward 120, turnaround 8, backward 0)"
    ) in out
    assert "stage 2 (16 T-switches): C_f 0, T 192, C_b 0; internal-link crossings 0" in out
    assert main(["-q", "check", "--json", str(spec)]) == 0
    report = json.loads(capsys.readouterr().out)["tswitch_paths"]
    assert report["pairs"] == 64 * 63
    assert report["stages"][1]["crossings"] == {"min": 128, "max": 128, "total": 16 * 128}
    assert len(report["switches"]) == 48


# ---- bad specs ---------------------------------------------------------------------------------

BAD = [
    ({"scp": "best"}, "topology.tswitch.scp: must be one of optimal, bad, got 'best'"),
    ({"scp": 3}, "topology.tswitch.scp: must be optimal, bad or a list of 2 lists"),
    ({"scp": [[0, 1, 4, 5]]}, "topology.tswitch.scp: must be optimal, bad or a list of 2 lists"),
    (
        {"scp": [[0, 1, 4], [0, 1, 2, 3]]},
        "topology.tswitch.scp[0]: must list 4 ports (alpha holds k of the T-switch's 2k), got 3",
    ),
    (
        {"scp": [[0, 1, 4, 9], [0, 1, 2, 3]]},
        "topology.tswitch.scp[0][3]: must be an integer in 0..7, got 9",
    ),
    (
        {"scp": [[0, 1, 4, 1], [0, 1, 2, 3]]},
        "topology.tswitch.scp[0][3]: duplicate port 1 (already topology.tswitch.scp[0][1])",
    ),
    ({"internal_ports": 0}, "topology.tswitch.internal_ports: must be an integer in 1..64, got 0"),
    ({"ports": 1}, "topology.tswitch.ports: unknown key"),
]


@pytest.mark.parametrize(
    "tswitch, message", BAD, ids=[m.split(":")[0] + str(i) for i, (_, m) in enumerate(BAD)]
)
def test_bad_tswitch_keys(tmp_path, capsys, tswitch, message):
    spec = tmp_path / "t.yaml"
    spec.write_text(f"topology: {{kind: kary_ntree, k: 4, n: 2, tswitch: {tswitch}}}\n")
    assert main(["check", str(spec)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"zfabric: error: {message}"), err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    "topology, routing, message",
    [
        (
            "{kind: kary_ntree, k: 3, n: 2, tswitch: {scp: optimal}}",
            None,
            "topology.tswitch.scp: 'optimal' needs an even k",
        ),
        (
            "{kind: kary_ntree, k: 3, n: 2, tswitch: {internal_ports: 2}}",
            None,
            "topology.tswitch.scp: missing: the default 'optimal' needs an even k, got k = 3",
        ),
        (
            "{kind: xgft, h: 2, m: [4, 2], w: [1, 4], tswitch: {}}",
            None,
            "topology.tswitch: T-switches need an XGFT that is a k-ary n-tree",
        ),
        (
            "{kind: kary_ntree, k: 4, n: 2, tswitch: {}}",
            "sliced",
            "routing: must be one of destro, got 'sliced'",
        ),
        (
            "{kind: kary_ntree, k: 4, n: 2}",
            "destro",
            "routing: must be one of sliced, updown, flat, source_destination, got 'destro'",
        ),
        (
            "{kind: kary_ntree, k: 40, n: 2, tswitch: {internal_ports: 30}}",
            None,
            "topology.theta: level-1 switches would have 70 links",
        ),
        (
            "{kind: kary_ntree, k: 4, n: 2, tswitch: {}}",
            "{name: destro, internal_vcs: {up: 0, dwn: 1}}",
            "routing.internal_vcs.down: missing required key (found unknown key 'dwn'",
        ),
    ],
)
def test_bad_tswitch_specs(tmp_path, capsys, topology, routing, message):
    spec = tmp_path / "t.yaml"
    text = f"topology: {topology}\n" + (f"routing: {routing}\n" if routing else "")
    spec.write_text(text)
    assert main(["check", str(spec)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"zfabric: error: {message}"), err
