"""Bubble flow control (docs/microarchitecture.md, *Bubble flow control*): the proof and the
spec's premises.

The torus used is 4x4 with one VC per link and ``tie: plus``: every tie goes +, so on each +
ring a packet from every coordinate may travel two hops, and the ring's four channels depend on
each other in a cycle (i -> i+1 for every i); on a - ring a packet travels one hop at most (two
hops away is a tie, and goes +), so it has no in-ring dependency. Per + ring 4 in-ring edges,
4 + rings per dimension, 2 dimensions: 32 in-ring edges, all the bubble argument drops."""

from __future__ import annotations

import dataclasses
import subprocess
import sys

import networkx as nx
import pytest
import yaml
from bubble_specs import BUBBLE_NDT, BUBBLE_TORUS

from zfabric import compile_plan, load_spec
from zfabric.deadlock import analyse_routing
from zfabric.errors import PlanError, SpecError
from zfabric.plan import PlanView

BUBBLE = {**BUBBLE_TORUS, "name": "t"}
#: the same fabric without the bubble rule: one VC per link, no dateline classes
PLAIN = {**BUBBLE, "routing": {"name": "dor", "datelines": False, "tie": "plus"}}


def ring(view: PlanView, link_id: int) -> tuple[int, int, tuple[int, ...]]:
    """(dimension, direction, the other coordinates) of a torus link: which ring it is on."""
    link = view.plan.links[link_id]
    port = view.switches[link.src.switch].ports[link.src.port]
    coords = view.switches[link.src.switch].position["coords"]
    return port.dim, port.sign, tuple(c for d, c in enumerate(coords) if d != port.dim)


def test_a_one_vc_torus_is_refused_without_the_bubble_for_a_cycle_on_one_ring():
    analysis = analyse_routing(compile_plan(load_spec(PLAIN)))
    assert analysis.cycle is not None and len(analysis.cycle) == 4
    view = analysis.view
    cycle_edges = nx.find_cycle(analysis.cdg)
    rings = {ring(view, a[0]) for a, _b in cycle_edges}
    assert len(rings) == 1 and next(iter(rings))[1] == 1  # one + ring, its four channels


def test_bubble_flow_control_proves_the_same_torus_dropping_the_in_ring_edges_only():
    plain = analyse_routing(compile_plan(load_spec(PLAIN)))
    bubble = analyse_routing(compile_plan(load_spec(BUBBLE)))
    assert bubble.cycle is None and bubble.deadlock_free
    before, after = set(plain.cdg.edges), set(bubble.cdg.edges)
    assert after < before and len(before - after) == 32  # by hand: module docstring
    view = bubble.view
    for a, b in before - after:
        assert ring(view, a[0]) == ring(view, b[0])
    for a, b in after:
        assert ring(view, a[0])[:2] != ring(view, b[0])[:2]  # only turns are left
    assert (bubble.diameter, bubble.pairs) == (plain.diameter, plain.pairs)


def test_the_walk_without_symmetries_drops_the_same_edges():
    plan = compile_plan(load_spec(BUBBLE))
    mapped, walked = analyse_routing(plan), analyse_routing(plan, symmetry=False)
    assert set(mapped.cdg.edges) == set(walked.cdg.edges) and walked.cycle is None


def broken(plan, premise: str):
    """``plan`` with one premise of the bubble argument broken, as a hand-written plan may."""
    if premise == "buffers":
        return dataclasses.replace(plan, buffer_depth=7)
    if premise == "wormhole":
        router = dataclasses.replace(plan.router, switching="wormhole", longest_packet=None)
        return dataclasses.replace(plan, router=router)
    if premise == "mesh":
        params = {**plan.routing.params, "wrap": False}
        return dataclasses.replace(plan, routing=dataclasses.replace(plan.routing, params=params))
    links = tuple(dataclasses.replace(link, vcs=2) for link in plan.links)
    return dataclasses.replace(plan, links=links)


def assert_proof_refuses(plan, words: str) -> None:
    """The proof refuses ``plan``, naming the broken premise in ``words``."""
    with pytest.raises(PlanError) as error:
        analyse_routing(plan)
    assert str(error.value) == f"bubble flow control not proven: it {words}"


@pytest.mark.parametrize(
    "premise, words",
    [
        ("buffers", "needs buffers of at least two longest packets (8 flits), not buffer_depth 7"),
        ("wormhole", "needs router.switching cut_through, not wormhole"),
        ("vcs", "needs one VC per link, link 0 has 2"),
        ("mesh", "needs the wrap-around rings of a torus"),
    ],
)
def test_the_proof_refuses_a_plan_outside_the_bubble_premises(premise, words):
    """A plan written by hand (not through the spec's checks) that breaks a premise: the proof
    refuses it rather than proving it another way."""
    assert_proof_refuses(broken(compile_plan(load_spec(BUBBLE)), premise), words)


@pytest.mark.parametrize(
    "change, where, words",
    [
        (
            {"router": {"switching": "wormhole"}},
            "router.switching",
            "wormhole with flow_control bubble, which needs cut_through",
        ),
        (
            {"router": {"switching": "store_and_forward"}},
            "router.switching",
            "store_and_forward with",
        ),
        (
            {"buffer_depth": 7},
            "buffer_depth",
            "7 with flow_control bubble: an entering packet needs room for two longest"
            " packets; use buffer_depth >= 8",
        ),
        (
            {"topology": {"kind": "mesh", "k": [4, 4]}},
            "routing.flow_control",
            "bubble needs a torus or an nDT, not a mesh",
        ),
        (
            {"topology": {"kind": "torus", "k": [4, 4], "vcs": 2}},
            "topology.vcs",
            "2 with flow_control bubble, which needs 1",
        ),
        (
            {"packet_length": None, "traffic": {"packet_length": [2, 4]}},
            "packet_length",
            "a range with flow_control bubble",
        ),
        (
            {"routing": {"name": "dor", "flow_control": "bubble", "datelines": True}},
            "routing.datelines",
            "cannot be used with flow_control bubble",
        ),
        (
            {"faults": {"links": [{"between": ["sw0_0", "sw1_0"]}]}},
            "faults",
            "cannot be used with flow_control bubble",
        ),
        (
            {"routing": {"name": "dor", "flow_control": "credit"}},
            "routing.flow_control",
            "'credit'",
        ),
    ],
)
def test_a_spec_breaking_a_bubble_premise_is_refused(change, where, words):
    spec = {**BUBBLE, **change}
    spec = {key: value for key, value in spec.items() if value is not None}
    with pytest.raises(SpecError) as error:
        load_spec(spec)
    assert str(error.value).startswith(f"{where}: ") and words in str(error.value)


def test_check_names_the_bubble_proof_and_refuses_a_broken_premise_in_one_line(tmp_path):
    good, bad = tmp_path / "good.yaml", tmp_path / "bad.yaml"
    good.write_text(yaml.safe_dump(BUBBLE))
    bad.write_text(yaml.safe_dump({**BUBBLE, "buffer_depth": 6}))
    run = [sys.executable, "-m", "zfabric.cli", "check"]
    done = subprocess.run([*run, str(good)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert (
        "deadlock-free: yes (bubble flow control: every ring keeps a packet-sized bubble"
        in done.stdout
    )
    done = subprocess.run([*run, str(bad)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        "zfabric: error: buffer_depth: 6 with flow_control bubble"
    )


@pytest.mark.parametrize(
    "command, stages, words",
    [
        ("verilog", 5, "router.stages: 5 with flow_control bubble: zfabric verilog builds"),
        ("prove", 5, "router.stages: 5 with flow_control bubble: zfabric prove builds"),
    ],
)
def test_what_the_rtl_does_not_build_is_refused_before_any_output(tmp_path, command, stages, words):
    spec = tmp_path / "t.yaml"
    spec.write_text(yaml.safe_dump({**BUBBLE, "router": {**BUBBLE["router"], "stages": stages}}))
    before = sorted(tmp_path.iterdir())
    done = subprocess.run(
        [sys.executable, "-m", "zfabric.cli", command, str(spec), "-o", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and sorted(tmp_path.iterdir()) == before
    assert done.stderr.startswith(f"zfabric: error: {words}"), done.stderr


@pytest.mark.parametrize("length", ["3", "2-4"])
def test_simulate_refuses_packets_of_another_length_in_one_line(tmp_path, length):
    spec = tmp_path / "t.yaml"
    spec.write_text(yaml.safe_dump(BUBBLE))
    done = subprocess.run(
        [sys.executable, "-m", "zfabric.cli", "simulate", str(spec), "--packet-length", length],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == (
        f"zfabric: error: --packet-length: {length}: packets of another length than the 4"
        " flits bubble flow control was built for (the bubble argument counts packets of one"
        " length)\n"
    )


# ---- the nDT ------------------------------------------------------------------------------------
#
# BUBBLE_NDT (tests/bubble_specs.py): the nDT 2x4x2 under CBest (Card0 d0+ d0- d1-, Card1 d1+
# d2+ d2-), d1 split. Its d1 rings (k = 4, ties toward d1-) alternate external links and the
# internal link's ring VC (VC 1): a packet going - arrives on Card1's d1+ port and crosses the
# internal link (1 -> 0) to leave by Card0's d1-. Per line (x, z) of nodes, by hand: the - ring
# has the 4 edges internal(y) -> d1-(y) (a head on Card1 of y turning into the ring, then
# going on) and the 4 edges d1-(y) -> internal(y-1) (a packet two hops -, the tie); the + ring,
# one hop at most, only the 4 edges internal(y) -> d1+(y) (Card0 -> Card1, then out). 12 edges
# a line, 4 lines: 48 in-ring edges, and the - ring's 8 channels close a cycle. d0 and d2
# (k = 2) take one hop at most.

NDT = {**BUBBLE_NDT, "name": "n"}
#: the same fabric without the bubble rule: the same VCs, one external, ch / ring / pe inside
NDT_PLAIN = {
    **NDT,
    "routing": {
        "name": "dort",
        "external_vcs": 1,
        "internal_vcs": {"ch": 0, "ring_upper": 1, "ring_lower": 1, "pe": 2},
    },
}


def ndt_ring(view: PlanView, channel: tuple[int, int]) -> tuple | None:
    """(dimension, direction, x, z) of the d1 ring an nDT 2x4x2 channel is on (an external d1
    link, or the internal link's VC 1, whose direction is the sign of the port on the card it
    leads to); None for another channel."""
    link = view.plan.links[channel[0]]
    port = view.switches[link.src.switch].ports[link.src.port]
    x, _, z = view.switches[link.src.switch].position["coords"]
    if port.role == "external":
        return (port.dim, port.sign, x, z) if port.dim == 1 else None
    if port.role == "internal" and channel[1] == 1:
        to_card = view.switches[link.dst.switch].position["card"]
        return 1, 1 if to_card == 1 else -1, x, z
    return None


def test_a_one_vc_ndt_is_refused_without_the_bubble_for_a_cycle_on_a_split_ring():
    analysis = analyse_routing(compile_plan(load_spec(NDT_PLAIN)))
    assert analysis.cycle is not None and len(analysis.cycle) == 8
    view = analysis.view
    edges = nx.find_cycle(analysis.cdg)
    rings = {ndt_ring(view, a) for a, _b in edges}
    assert len(rings) == 1 and next(iter(rings))[:2] == (1, -1)  # one - ring of d1
    links = [view.plan.links[a[0]] for a, _b in edges]
    roles = [view.switches[link.src.switch].ports[link.src.port].role for link in links]
    assert sorted(roles) == ["external"] * 4 + ["internal"] * 4


def test_bubble_flow_control_proves_the_ndt_dropping_its_split_rings_edges_only():
    plain = analyse_routing(compile_plan(load_spec(NDT_PLAIN)))
    bubble = analyse_routing(compile_plan(load_spec(NDT)))
    assert bubble.cycle is None and bubble.deadlock_free
    before, after = set(plain.cdg.edges), set(bubble.cdg.edges)
    assert after < before and len(before - after) == 48  # by hand: above
    view = bubble.view
    for a, b in before - after:
        assert ndt_ring(view, a) is not None and ndt_ring(view, a) == ndt_ring(view, b)
        links = view.plan.links[a[0]], view.plan.links[b[0]]
        roles = {view.switches[link.src.switch].ports[link.src.port].role for link in links}
        assert roles == {"internal", "external"}  # the split ring alternates them
    for a, b in after:
        assert ndt_ring(view, a) is None or ndt_ring(view, a) != ndt_ring(view, b)
    assert (bubble.diameter, bubble.pairs) == (plain.diameter, plain.pairs)


def ndt_broken(plan, premise: str):
    """The nDT plan with one premise broken, as a hand-written plan may."""
    if premise == "buffers":
        return dataclasses.replace(plan, buffer_depth=7)
    params = dict(plan.routing.params)
    if premise == "shared":  # ch on the ring's VC
        params["internal_vcs"] = {"ch": 1, "ring_upper": 1, "ring_lower": 1, "pe": 2}
    elif premise == "two":  # the ring's upper and lower classes on VCs of their own
        params["internal_vcs"] = {"ch": 0, "ring_upper": 1, "ring_lower": 3, "pe": 2}
    elif premise == "split":  # every dimension split (configuration A)
        params["card0"] = [[0, 1], [1, 1], [2, 1]]
    else:
        links = tuple(
            dataclasses.replace(link, vcs=2)
            if plan.switches[link.src.switch].ports[link.src.port].role == "external"
            else link
            for link in plan.links
        )
        return dataclasses.replace(plan, links=links)
    return dataclasses.replace(plan, routing=dataclasses.replace(plan.routing, params=params))


@pytest.mark.parametrize(
    "premise, words",
    [
        ("buffers", "needs buffers of at least two longest packets (8 flits), not buffer_depth 7"),
        ("shared", "needs internal VC 1 to d1's ring alone, ch takes it too"),
        ("two", "needs d1's ring on one internal VC, not [1, 3]"),
        (
            "split",
            "needs at most one dimension split across the cards (each internal link on one"
            " ring), not 3 (d0, d1, d2)",
        ),
        # links 0 and 1 are node 0's internal link, each way; 2 its first external one
        ("external", "needs one VC per external link, link 2 has 2"),
    ],
)
def test_the_proof_refuses_an_ndt_plan_outside_the_bubble_premises(premise, words):
    assert_proof_refuses(ndt_broken(compile_plan(load_spec(NDT)), premise), words)


@pytest.mark.parametrize(
    "routing, topology, where, words",
    [
        (
            {"external_vcs": 2},
            {},
            "routing.external_vcs",
            "2 with flow_control bubble, which needs 1",
        ),
        (
            {"internal_vcs": {"ch": 0, "ring_upper": 1, "ring_lower": 2, "pe": 3}},
            {},
            "routing.internal_vcs",
            "ring_upper and ring_lower with flow_control bubble must take one VC together (d1's"
            " ring on the internal link), not [1, 2]",
        ),
        (
            {"internal_vcs": {"ch": 1, "ring_upper": 1, "ring_lower": 1, "pe": 2}},
            {},
            "routing.internal_vcs",
            "ch takes VC 1, which d1's ring keeps to itself under flow_control bubble",
        ),
        (
            {},
            {"ports": ["d0+", "d1+", "d2+"]},
            "routing.flow_control",
            "bubble needs at most one dimension split across the cards (each internal link on"
            " one ring), not 3 (d0, d1, d2)",
        ),
        (
            {"name": "dort_adaptive"},
            {},
            "routing.flow_control",
            "bubble on an nDT needs dort, not dort_adaptive",
        ),
        ({"name": "tsdor"}, {}, "routing.flow_control", "unknown key"),
    ],
)
def test_an_ndt_spec_breaking_a_bubble_premise_is_refused(routing, topology, where, words):
    spec = {
        **NDT,
        "routing": {**NDT["routing"], **routing},
        "topology": {**NDT["topology"], **topology},
    }
    with pytest.raises(SpecError) as error:
        load_spec(spec)
    assert str(error.value).startswith(f"{where}: ") and words in str(error.value)


def test_an_ndt_without_a_split_dimension_has_its_rings_on_external_links_alone():
    """n = 4 under CBest splits no dimension: the internal link keeps ch and pe (two VCs) and
    no ring, and the proof holds."""
    spec = {**NDT, "topology": {"kind": "ndt", "k": [2, 4, 2, 2]}}
    plan = compile_plan(load_spec(spec))
    internal = {link.vcs for link in plan.links if link.src.port == 1}
    assert internal == {2} and plan.routing.params["internal_vcs"] == {"ch": 0, "pe": 1}
    assert analyse_routing(plan).deadlock_free


def test_check_proves_the_bubble_ndt_and_refuses_a_broken_premise_in_one_line(tmp_path):
    good, bad = tmp_path / "good.yaml", tmp_path / "bad.yaml"
    good.write_text(yaml.safe_dump(NDT))
    bad.write_text(yaml.safe_dump({**NDT, "routing": {**NDT["routing"], "external_vcs": 2}}))
    run = [sys.executable, "-m", "zfabric.cli", "check"]
    done = subprocess.run([*run, str(good)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "VCs per link: external 1, internal 3" in done.stdout
    assert "deadlock-free: yes (bubble flow control:" in done.stdout
    done = subprocess.run([*run, str(bad)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == (
        "zfabric: error: routing.external_vcs: 2 with flow_control bubble, which needs 1\n"
    )
