"""Faults: a degraded fabric is routed around its dead parts, proven, and simulated; single
failures of every link or chip in turn; bad fault entries are refused in one line.

Expected values are derived by hand, from the Transit digest (A. DeHon, "Fat-Tree Routing for
Transit", MIT AI Lab, 1990) or by enumeration (networkx shortest paths), never from this code.
"""

from __future__ import annotations

import itertools
import json
from collections import Counter
from fractions import Fraction
from pathlib import Path
from types import SimpleNamespace

import networkx as nx
import numpy as np
import pytest
from zfabric.sim.fast import FastModel
from zfabric.sim.model import DeadlockWatch, FabricModel
from zfabric.sim.traffic import Traffic, TrafficConfig

from zfabric import compile_plan, load_spec
from zfabric import faults as faults_module
from zfabric.cli import main
from zfabric.deadlock import analyse_routing
from zfabric.errors import PlanError, SpecError
from zfabric.fault_spec import parse_faults
from zfabric.faults import (
    COMPARED,
    DeadSet,
    chips,
    dead_channels,
    failure_candidates,
    resolve,
    single_failures,
    switch_levels,
)
from zfabric.fields import Reader
from zfabric.plan import plan_from_json

TORUS = {"name": "t", "topology": {"kind": "torus", "k": [4, 4]}, "routing": "dor"}
DEAD_LINK = {"links": [{"between": ["sw0_0", "sw1_0"]}]}
#: a Znode of two layers: 4 zones of 4 processors, 1 level-1 switch per zone, 4 at level 2
ZNODE_LAYERS = {"name": "z", "topology": {"kind": "znode", "z": [4, 4], "R": [1, 4], "layers": 2}}
FULL_64 = {"name": "f", "topology": {"kind": "transit", "form": "full"}}
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
HYBRID_768 = {"name": "h", "topology": {"kind": "transit", "form": "hybrid", "leaf_stages": 2}}
#: ALIOD survives a dead side link (its parallel links) and not a dead tree link: mixed verdicts
HYPERZ = {
    "name": "hz",
    "topology": {"kind": "hyperz", "s": [3, 2], "z": [2, 2], "R": [1, 2], "q": [2, 2], "vcs": 2},
    "routing": {"name": "aliod"},
}


def torus_distances(dead: set[frozenset[str]]) -> dict[tuple[str, str], int]:
    """Shortest switch-to-switch distances of the 4x4 torus without the ``dead`` links,
    enumerated on a graph built here from coordinates (not from the plan)."""
    graph = nx.Graph()
    for x in range(4):
        for y in range(4):
            for a, b in (((x, y), ((x + 1) % 4, y)), ((x, y), (x, (y + 1) % 4))):
                names = f"sw{a[0]}_{a[1]}", f"sw{b[0]}_{b[1]}"
                if frozenset(names) not in dead:
                    graph.add_edge(*names)
    return {(a, b): d for a, row in nx.shortest_path_length(graph) for b, d in row.items()}


def test_a_torus_with_a_dead_link_is_rerouted_and_proven():
    plan = compile_plan(load_spec({**TORUS, "faults": DEAD_LINK}))
    # dimension order needs the dead link (sw0_0 -> sw1_0 is one hop in dimension 0): tables
    assert plan.routing.name == "updown_table"
    assert plan.routing.params["replaces"] == "dor"
    assert len(plan.links) == 2 * 32 - 2  # 32 physical links of a 4x4 torus, one dead
    analysis = analyse_routing(plan, keep_pairs=True)
    assert analysis.deadlock_free and analysis.pairs == 16 * 15
    # every pair's route is a shortest path of the surviving torus (enumerated)
    distance = torus_distances({frozenset({"sw0_0", "sw1_0"})})
    switch_of = {e.id: plan.switches[e.attachments[0].switch].name for e in plan.endpoints}
    for (src, dst), (low, high) in analysis.pair_hops.items():
        assert low == high == distance[(switch_of[src], switch_of[dst])]
    # by hand: only the two endpoints of the dead link lose their shortest path (1 -> 3 hops:
    # around through the next row), so the intact sum 16 * 32 grows by 2 + 2
    assert analysis.average_hops == pytest.approx((16 * 32 + 4) / 240)


def deliver_everything(plan, engine, rate: float) -> list:
    """Random traffic at ``rate`` for 600 cycles, then drained: no deadlock, every packet
    delivered (the models' invariants and credits checked). Returns the delivered packets
    (the reference model's; the fast engine keeps none)."""
    model = engine(plan)
    watch = DeadlockWatch(model)
    traffic = Traffic(TrafficConfig(rate=rate, packet_length=(1, 6)), len(plan.endpoints), 7)
    offered = 0
    for cycle in range(600):
        for src, dst, length in traffic.packets_at(cycle):
            model.offer(src, dst, length)
            offered += 1
        model.step()
        assert watch() is None
    for _ in range(20_000):
        if model.delivered_count == offered:
            break
        model.step()
        assert watch() is None
    model.check_credits()
    assert offered > 1000
    assert model.delivered_count == offered and model.in_network == 0
    return getattr(model, "delivered", [])


@pytest.mark.parametrize("engine", [FabricModel, FastModel], ids=["reference", "fast"])
def test_a_torus_with_a_dead_link_delivers_every_packet_in_the_model(engine):
    plan = compile_plan(load_spec({**TORUS, "faults": DEAD_LINK}))
    for packet in deliver_everything(plan, engine, 0.5):
        assert all(
            (plan.switches[s].name, port) not in {("sw0_0", 1), ("sw1_0", 2)}
            for s, port in packet.path
        )


def test_a_znode_with_layers_survives_any_single_up_link_failure():
    plan = compile_plan(load_spec(ZNODE_LAYERS))
    results = single_failures(plan, "links")
    # every link joins level 1 and level 2: 4 zone switches x 4 up links, in each of 2 layers
    assert len(results) == 2 * 4 * 4
    for result in results:
        assert result.disconnected == 0
        assert result.deadlock_free, result
        # one link: one channel up into level 2, one down into level 1, of 32 each
        assert result.lost == {"level 1": (1, 32), "level 2": (1, 32)}


def test_a_znode_layer_carries_a_zone_whose_switch_lost_every_up_link():
    """Layer 0's zone-0 switch cut from level 2: its processors still reach every other through
    layer 1 (the layers meet only at the processors), and the fabric is proven."""
    faults = {"links": [{"switch": "z0l0s1_0_0", "port": p} for p in range(4, 8)]}
    plan = compile_plan(load_spec({**ZNODE_LAYERS, "faults": faults}))
    analysis = analyse_routing(plan)
    assert analysis.deadlock_free and analysis.pairs == 16 * 15


def test_transit_full_64_survives_every_single_chip_failure():
    plan = compile_plan(load_spec(FULL_64))
    results = single_failures(plan, "chips")
    assert len(results) == 52  # a UT64x2's chips (Table 3.4: 16 + 16 + 12 + 8)
    for result in results:
        assert result.disconnected == 0, result
        assert result.deadlock_free and result.routing == "transit", result


@pytest.mark.parametrize("engine", [FabricModel, FastModel], ids=["reference", "fast"])
def test_transit_full_64_with_a_dead_chip_delivers_every_packet_in_the_model(engine):
    """A level-2 chip and an alternate-mode up chip dead: the routes take the other output of
    a direction and the processors the other input, and every packet arrives."""
    faults = {"chips": ["t1u0l2n0c2", "t1u0u5"]}
    plan = compile_plan(load_spec({**FULL_64, "faults": faults}))
    assert plan.routing.name == "transit"
    deliver_everything(plan, engine, 1.0)


def test_a_chip_failure_in_a_leafs_first_stage_costs_exactly_two_fat_tree_inputs():
    """§2.1.1: the fat-tree inputs are spread two per first-stage chip, so one chip lost costs
    two of a leaf's inputs from the fat tree; a B12 leaf has 4 first-stage chips, 8 inputs."""
    plan = compile_plan(load_spec(HYBRID_768))
    levels = switch_levels(plan)
    into_leaves = [
        link.id
        for link in plan.links
        if levels[link.dst.switch] == "leaf" and levels[link.src.switch] != "leaf"
    ]
    assert len(into_leaves) == 64 * 8
    named = chips(plan)
    for chip in [f"leaf{leaf}s1c{c}" for leaf in (0, 37) for c in range(4)]:
        dead = DeadSet(switches=frozenset(named[chip]))
        assert len(dead_channels(plan, dead) & set(into_leaves)) == 2, chip


def direction_losses(wires: list[tuple[str, int]], dead_chip: int) -> dict[str, Fraction]:
    """Per input direction of a logical stage, the share of its wires (direction, chip) that
    land on ``dead_chip``: the bandwidth from that direction one chip failure removes."""
    counts = Counter(direction for direction, _ in wires)
    lost = Counter(direction for direction, chip in wires if chip == dead_chip)
    return {direction: Fraction(lost[direction], n) for direction, n in counts.items()}


def test_full_dispersion_loses_25_percent_and_no_dispersion_33_percent():
    """§2.3 (Figs 2.8, 2.9): a level-1 down stage of 4 RN1 chips, 8 lateral wires and 24 from
    the level above in, 8 out in each of 4 directions. zfabric wires it with full dispersion:
    on the 768 hybrid, every chip of every level-1 node, failed alone, costs 2 of the 8
    laterals, 6 of the 24 wires from above and 8 of the 32 outputs, 25 % each. The
    non-dispersed wiring of Fig 2.8 (the 8 laterals on one chip, the 24 from above on the other
    three), counted the same way, loses all lateral traffic or 33 % from above."""
    plan = compile_plan(load_spec(HYBRID_768))
    levels = switch_levels(plan)
    nodes: dict[int, list[int]] = {}
    for switch in plan.switches:
        if levels[switch.id] == "layer 1 level 1":
            nodes.setdefault(switch.position["node"], []).append(switch.id)
    assert len(nodes) == 16 and all(len(members) == 4 for members in nodes.values())
    quarter = Fraction(1, 4)
    for chips_of_node in nodes.values():
        wires = [
            ("lateral" if levels[link.src.switch] == "layer 1 up" else "above", link.dst.switch)
            for link in plan.links
            if link.dst.switch in chips_of_node
        ]
        assert Counter(direction for direction, _ in wires) == {"lateral": 8, "above": 24}
        out = [link for link in plan.links if link.src.switch in chips_of_node]
        assert len(out) == 32
        for chip in chips_of_node:
            assert direction_losses(wires, chip) == {"lateral": quarter, "above": quarter}
            lost = dead_channels(plan, DeadSet(switches=frozenset({chip})))
            assert Fraction(sum(link.id in lost for link in out), len(out)) == quarter
    figure_2_8 = [("lateral", 0)] * 8 + [("above", c) for c in (1, 2, 3) for _ in range(8)]
    assert direction_losses(figure_2_8, 0) == {"lateral": 1, "above": 0}
    for chip in (1, 2, 3):
        assert direction_losses(figure_2_8, chip) == {"lateral": 0, "above": Fraction(1, 3)}


@pytest.mark.matrix
@pytest.mark.slow
def test_transit_hybrid_768_with_a_first_stage_leaf_chip_dead_is_proven():
    plan = compile_plan(load_spec({**HYBRID_768, "faults": {"chips": ["leaf5s1c2"]}}))
    assert plan.routing.name == "transit"
    analysis = analyse_routing(plan)
    assert analysis.deadlock_free and analysis.pairs == 768 * 767


#: HyperZ H_{2,2}(3,2; 2,2): q_ik = 2 side links per dimension at each of 2 levels, so a
#: level-1 switch and its parent have l_max = sum_i q_ik = 4 parallel links of a dimension
HYPERZ = {
    "name": "hz",
    "topology": {"kind": "hyperz", "s": [3, 2], "z": [2, 2], "R": [1, 2], "q": [2, 2], "vcs": 2},
    "routing": "aliod",
}
#: per dimension, the 4 parallel links from h0.0s1_0 (ports 4-5 to a_1 = 1, 8-9 to a_2 = 1) and
#: its parent h0.0s2_0 (ports 2-3, 6-7) toward the neighbouring Z-node (the ports' order:
#: topologies/hyperz.py, down and up ports first, then the side ports, dimension 1 first)
HYPERZ_PARALLEL = {
    0: [("h0.0s1_0", 4), ("h0.0s1_0", 5), ("h0.0s2_0", 2), ("h0.0s2_0", 3)],
    1: [("h0.0s1_0", 8), ("h0.0s1_0", 9), ("h0.0s2_0", 6), ("h0.0s2_0", 7)],
}


def hyperz_with_dead(links, routing: str = "own", **topology) -> dict:
    faults = {"links": [{"switch": s, "port": p} for s, p in links], "routing": routing}
    return {**HYPERZ, "topology": {**HYPERZ["topology"], **topology}, "faults": faults}


@pytest.mark.parametrize("dim", [0, 1])
def test_aliod_is_proven_with_up_to_l_max_minus_1_of_a_dimensions_parallel_links_dead(dim):
    """HyperZ §5.4: every set of 1 to l_max - 1 = 3 of the 4 parallel links dead (14 sets per
    dimension, enumerated): ALIOD itself (recoil on the last escape VC) still delivers every
    pair and is proven deadlock-free."""
    links = HYPERZ_PARALLEL[dim]
    for n in range(1, len(links)):
        for dead in itertools.combinations(links, n):
            plan = compile_plan(load_spec(hyperz_with_dead(dead)))
            assert plan.routing.name == "aliod"
            analysis = analyse_routing(plan)
            assert analysis.deadlock_free and analysis.pairs == 24 * 23, dead


def test_without_recoil_aliod_loses_the_pairs_of_a_switch_whose_side_links_died():
    """The need for recoil: h0.0s1_0's both dimension-1 lanes dead, ALIOD's escape at that
    switch has no side link left; with one escape VC the recoil is not proven (it holds a
    tree channel before a side channel), so ``auto`` takes the up*/down* tables."""
    dead = HYPERZ_PARALLEL[0][:2]
    plan = compile_plan(load_spec(hyperz_with_dead(dead, "auto", vcs=1)))
    assert plan.routing.name == "updown_table"
    assert plan.routing.params["because"].startswith("channel dependency cycle")
    assert analyse_routing(plan).deadlock_free
    with_two = compile_plan(load_spec(hyperz_with_dead(dead, "auto")))
    assert with_two.routing.name == "aliod"


@pytest.mark.parametrize("engine", [FabricModel, FastModel], ids=["reference", "fast"])
def test_aliod_recoils_and_delivers_every_packet_with_l_max_minus_1_links_dead(engine):
    """The example's 3 of 4 parallel links dead: every packet arrives, none through a dead
    port, and (reference model) packets from h0.0s1_0 to Z-node h0.1 climb to level 2."""
    spec = load_spec(str(EXAMPLES / "hyperz-recoil.yaml"))
    plan = compile_plan(spec)
    assert plan.routing.name == "aliod"
    dead = {("h0.0s1_0", 4), ("h0.0s1_0", 5), ("h0.0s2_0", 2)}
    names = [s.name for s in plan.switches]
    recoiled = 0
    for packet in deliver_everything(plan, engine, 0.5):
        hops = [(names[s], port) for s, port in packet.path]
        assert not dead.intersection(hops)
        # h0.0s1_0 serves h0.0p0 and p1; the Z-node h0.1 holds processors 4..7
        if packet.src in (0, 1) and 4 <= packet.dst < 8:
            recoiled += 1
            assert hops[0] in {("h0.0s1_0", 2), ("h0.0s1_0", 3)}, hops  # its up ports
    assert engine is FastModel or recoiled > 0


def test_a_fault_set_that_cuts_an_endpoint_off_is_refused():
    with pytest.raises(SpecError) as caught:
        compile_plan(load_spec({**TORUS, "faults": {"switches": ["sw1_1"]}}))
    assert str(caught.value) == (
        "faults: cut off endpoint ep5: no attachment left to send or to receive through"
    )


def test_a_fault_set_that_disconnects_pairs_is_refused_with_them():
    # every link of sw0_0: its endpoint is attached but reaches nobody (2 x 15 pairs)
    faults = {"links": [{"switch": "sw0_0", "port": p} for p in range(1, 5)]}
    with pytest.raises(PlanError, match=r"disconnect ep0->ep1, .* \(30 pairs\)$"):
        compile_plan(load_spec({**TORUS, "faults": faults}))


@pytest.mark.parametrize(
    "faults, line",
    [
        (
            {"links": [{"switch": "sw9_9", "port": 1}]},
            "faults.links[0].switch: no switch named 'sw9_9' in this fabric; did you mean 'sw3_3'?",
        ),
        (
            {"links": [{"switch": "sw0_0", "port": 7}]},
            "faults.links[0].port: sw0_0 has ports 0..4, got 7",
        ),
        (
            {"links": [{"between": ["sw0_0", "sw2_2"]}]},
            "faults.links[0].between: no link joins sw0_0 and sw2_2",
        ),
        (
            {"chips": ["c0"]},
            "faults.chips[0]: a torus fabric has no chips (Transit's RN1 chips have); use"
            " faults.switches",
        ),
        (
            {"attachments": [{"endpoint": "ep0", "switch": "sw0_1"}]},
            "faults.attachments[0].switch: ep0 is not attached to sw0_1",
        ),
        (
            {"switches": ["sw0_0", "nope"]},
            "faults.switches[1]: no switch named 'nope' in this fabric",
        ),
    ],
)
def test_a_fault_naming_what_does_not_exist_exits_2_with_one_line(tmp_path, capsys, faults, line):
    spec = tmp_path / "spec.yaml"
    spec.write_text(json.dumps({**TORUS, "faults": faults}))
    assert main(["check", str(spec)]) == 2
    assert capsys.readouterr().err == f"zfabric: error: {line}\n"


def test_an_unknown_chip_of_transit_is_named():
    plan = compile_plan(load_spec(FULL_64))
    faults = parse_faults(Reader({"chips": ["t1u0u99"]}, "faults"))
    with pytest.raises(SpecError, match=r"^faults.chips\[0\]: no chip named 't1u0u99'"):
        resolve(plan, faults)


def test_a_half_names_its_whole_alternate_mode_chip():
    plan = compile_plan(load_spec(FULL_64))
    faults = parse_faults(Reader({"chips": ["t1u0u0a"]}, "faults"))
    dead = resolve(plan, faults)
    assert sorted(plan.switches[s].name for s in dead.switches) == ["t1u0u0a", "t1u0u0b"]


def test_check_counts_what_is_left_of_a_transit_with_a_dead_chip(tmp_path, capsys):
    """Full 64 has 52 chips, 84 switches (the seed's count; 32 alternate-mode chips are two
    halves each): a dead alternate-mode chip leaves 51 chips and 82 switches."""
    spec = tmp_path / "spec.yaml"
    spec.write_text(json.dumps({**FULL_64, "faults": {"chips": ["t1u0u0"]}}))
    assert main(["check", str(spec)]) == 0
    assert "  left: 82 of 84 switches, 51 of 52 RN1 chips\n" in capsys.readouterr().out
    assert main(["check", "--json", str(spec)]) == 0
    left = json.loads(capsys.readouterr().out)["faults"]["left"]
    assert left == {"switches": {"alive": 82, "built": 84}, "chips": {"alive": 51, "built": 52}}


def test_check_exits_1_with_the_pairs_cut_off(tmp_path, capsys):
    spec = tmp_path / "spec.yaml"
    faults = {"links": [{"switch": "sw0_0", "port": p} for p in range(1, 5)]}
    spec.write_text(json.dumps({**TORUS, "faults": faults}))
    assert main(["check", str(spec)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "(30 pairs)" in err


def test_the_faults_command_reports_every_single_link_failure(tmp_path, capsys):
    plot = tmp_path / "faults.png"
    spec = tmp_path / "spec.yaml"
    spec.write_text(json.dumps(TORUS))
    assert main(["faults", str(spec), "--json", "--plot", str(plot)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["failures"] == 32 == len(report["results"])
    assert report["all_pairs_connected"] == 32 and report["proven_deadlock_free"] == 32
    assert report["by_routing"] == {"updown_table": 32}  # no dead link leaves dor a route
    # per dimension, the links leaving an even and an odd coordinate: 4 orbits under the
    # translations by 2 (ties read a coordinate's parity) and the reflections, each's first
    # failure proven itself
    assert sum(r["carried"] is not None for r in report["results"]) == 32 - 4
    assert plot.stat().st_size > 0


def test_the_faults_command_checks_its_plot_path_before_any_work(tmp_path, capsys):
    spec = tmp_path / "spec.yaml"
    spec.write_text(json.dumps(TORUS))
    assert main(["faults", str(spec), "--plot", str(tmp_path / "f.nope")]) == 2
    assert capsys.readouterr().err.startswith("zfabric: error: --plot: ")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["spec.yaml"]


def test_single_chip_failures_of_a_family_without_chips_are_refused(tmp_path, capsys):
    spec = tmp_path / "spec.yaml"
    spec.write_text(json.dumps(TORUS))
    assert main(["faults", str(spec), "--single", "chips"]) == 2
    assert capsys.readouterr().err == (
        "zfabric: error: --single: chips: a torus fabric has no chips\n"
    )


def test_rtl_commands_refuse_a_degraded_fabric_that_keeps_masked_routes(tmp_path, capsys):
    spec = tmp_path / "spec.yaml"
    spec.write_text(json.dumps({**ZNODE_LAYERS, "faults": {"switches": ["z0l0s2_0_1"]}}))
    assert main(["verilog", str(spec), "-o", str(tmp_path / "out")]) == 2
    assert capsys.readouterr().err == (
        "zfabric: error: faults: the degraded fabric keeps 'sliced' with its dead ends masked,"
        " which its route units do not hold: zfabric verilog builds a degraded fabric with"
        " faults.routing: table (check and simulate take either)\n"
    )
    assert not (tmp_path / "out").exists()


def test_faults_routing_table_routes_a_znode_with_one_vc_through_its_other_layer():
    """Up*/down* with one VC (one class) on a Znode whose layer-0 zone-0 switch is dead: each
    layer is ordered from a root of its own (the layers meet only at the processors), and the
    zone's processors inject into layer 1 only."""
    faults = {"switches": ["z0l0s1_0_0"], "routing": "table"}
    plan = compile_plan(load_spec({**ZNODE_LAYERS, "faults": faults}))
    assert plan.routing.name == "updown_table"
    analysis = analyse_routing(plan, keep_pairs=True)
    assert analysis.deadlock_free and analysis.pairs == 16 * 15
    # by hand: same zone 0 hops (the shared level-1 switch), else up and down: 2 hops
    for (src, dst), (low, high) in analysis.pair_hops.items():
        assert low == high == (0 if src // 4 == dst // 4 else 2)


def test_faults_routing_own_keeps_the_familys_routing_or_fails_the_check(tmp_path, capsys):
    survives = compile_plan(load_spec({**ZNODE_LAYERS, "faults": {"switches": ["z0l0s2_0_1"]}}))
    assert survives.routing.name == "sliced"
    spec = tmp_path / "spec.yaml"
    spec.write_text(json.dumps({**TORUS, "faults": {**DEAD_LINK, "routing": "own"}}))
    assert main(["check", str(spec)]) == 1
    assert capsys.readouterr().err.startswith("zfabric: the fabric does not route: ")


def test_a_degraded_plan_round_trips_through_json_and_check_json_names_its_routing(capsys):
    plan = compile_plan(load_spec({**TORUS, "faults": DEAD_LINK}))
    assert plan_from_json(plan.to_json()) == plan
    assert main(["check", str(EXAMPLES / "torus-4x4-dead-link.yaml"), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["routing"] == "updown_table"
    assert report["faults"]["links"] == [{"between": ["sw0_0", "sw1_0"]}]
    assert report["faults"]["own_routing"] == "dor"
    assert report["faults"]["own_routing_survives"] is False


def test_faults_rate_runs_the_model_with_each_failure_as_simulate_does(tmp_path, capsys):
    """``--rate``: the intact fabric and every connected, proven failure run on the study
    engine; a failure's result is what ``zfabric simulate`` gives on the spec with that link
    written into its faults by hand (same traffic, seed and windows)."""
    spec = tmp_path / "spec.yaml"
    spec.write_text(json.dumps(TORUS))
    window = ["--rate", "0.6", "--warmup", "200", "--cycles", "600"]
    assert main(["faults", str(spec), "--json", *window]) == 0
    report = json.loads(capsys.readouterr().out)
    model = report["model"]
    assert model["failures_run"] == 32 and model["deadlocked"] == 0
    assert model["inputs"]["rate"] == 0.6
    first = report["results"][0]
    assert first["what"] == "sw0_0.p1 <-> sw1_0.p2"
    by_hand = tmp_path / "dead.yaml"
    by_hand.write_text(json.dumps({**TORUS, "faults": DEAD_LINK}))
    assert main(["simulate", str(by_hand), "--json", *window]) == 0
    simulated = json.loads(capsys.readouterr().out)
    assert first["model"]["accepted"] == simulated["accepted"]
    assert first["model"]["latency"] == simulated["latency"]
    assert main(["simulate", str(spec), "--json", *window]) == 0
    assert model["intact"]["accepted"] == json.loads(capsys.readouterr().out)["accepted"]


def test_faults_rate_runs_no_failure_that_cuts_an_endpoint_off(tmp_path, capsys):
    spec = tmp_path / "spec.yaml"
    spec.write_text(json.dumps(TORUS))
    plot = tmp_path / "f.png"
    args = ["--single", "switches", "--rate", "0.2", "--warmup", "100", "--cycles", "300"]
    assert main(["faults", str(spec), *args, "--plot", str(plot)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[3].startswith(
        "  model at rate 0.2 (uniform, 4 flits (default), fast engine): intact"
    )
    assert "with one failure" not in out[3]  # every switch carries an endpoint: none runs
    assert all(line.endswith("; model: not run") for line in out[4:]) and len(out) == 4 + 16
    assert plot.stat().st_size > 0


# ---- single failures through the fabric's symmetries -----------------------------------------


@pytest.mark.parametrize(
    ("spec", "kind", "carried"),
    [
        (TORUS, "links", True),
        (TORUS, "switches", True),
        ({"name": "t35", "topology": {"kind": "torus", "k": [3, 5]}}, "links", True),
        ({"name": "m", "topology": {"kind": "mesh", "k": [4, 4]}}, "links", True),
        (FULL_64, "links", True),
        (FULL_64, "chips", True),
        (ZNODE_LAYERS, "links", False),  # sliced routing declares no symmetry
        (HYPERZ, "links", True),
    ],
    ids=["torus-links", "torus-switches", "torus-3x5", "mesh", "transit-links", "transit-chips",
         "znode-layers", "hyperz"],
)  # fmt: skip
def test_single_failures_through_the_symmetries_equal_every_failure_computed_in_full(
    spec, kind, carried
):
    plan = compile_plan(load_spec(spec))
    through = single_failures(plan, kind)
    full = single_failures(plan, kind, symmetry=False)
    assert [r.what for r in through] == [r.what for r in full]
    for a, b in zip(through, full, strict=True):
        assert all(getattr(a, name) == getattr(b, name) for name in COMPARED), (a, b)
        assert b.carried is None
        if a.carried is None:
            assert a == b  # computed here: the same result, word for word
    assert any(r.carried for r in through) == carried


def test_carried_tables_are_rooted_as_far_from_their_failure_as_the_source_tables_from_theirs():
    """An automorphism keeps distances: the root a carried failure names is as far (in the
    intact torus, enumerated here) from its dead link as the source's root, the centre sw0_0,
    is from the source's."""
    plan = compile_plan(load_spec(TORUS))
    distance = torus_distances(set())
    ends = {
        what: what.replace(" <-> ", ".").split(".")[::2]
        for what, _ in failure_candidates(plan, "links")
    }
    checked = 0
    for result in single_failures(plan, "links"):
        if result.carried and "tables of " in result.carried:
            source = result.carried.split("tables of ")[1].split(" moved")[0]
            root = result.carried.split("rooted at ")[1].split(",")[0]
            away = min(distance[(root, end)] for end in ends[result.what])
            assert away == min(distance[("sw0_0", end)] for end in ends[source]), result
            checked += 1
    assert checked == 28  # 32 links in 4 orbits, each's first failure proven here


def test_a_wrong_symmetry_is_caught_by_the_spot_checks(monkeypatch, tmp_path, capsys):
    """A planted "symmetry" exchanging a dead tree link (ALIOD does not survive it) with a
    dead side link (it does): the side link's carried verdict is checked from scratch and
    refused, naming the family."""
    plan = compile_plan(load_spec(HYPERZ))
    candidates = failure_candidates(plan, "links")
    tree = next(i for i, (what, _) in enumerate(candidates) if "s1_0.p2 " in what)
    side = len(candidates) - 1
    full = single_failures(
        plan, "links", candidates=[candidates[tree], candidates[side]], symmetry=False
    )
    assert [r.routing for r in full] == ["updown_table", "aliod"]
    link = np.arange(len(plan.links))
    a, b = sorted(candidates[tree][1].channels), sorted(candidates[side][1].channels)
    link[a + b] = b + a
    wrong = SimpleNamespace(switch=np.arange(len(plan.switches)), link=link)
    monkeypatch.setattr(
        faults_module,
        "symmetry_group_of",
        lambda plan, ports=False: SimpleNamespace(generators=[wrong]),
    )
    with pytest.raises(
        PlanError, match="the hyperz aliod symmetries do not carry single failures over: .*routing"
    ):
        single_failures(plan, "links")
    spec = tmp_path / "hz.yaml"
    spec.write_text(json.dumps(HYPERZ))
    assert main(["faults", str(spec)]) == 1
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and "hyperz aliod symmetries" in err
