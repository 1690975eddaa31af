"""VC counts per link class on every family: spec keys, routes and the deadlock proof.

The 1-VC (per class) routing of each family is checked against the research digests elsewhere
(test_torus.py, test_ndt.py, test_znode.py). Here every fabric with ``v`` VCs per class is
compared with the same fabric at one VC per class, state by state over every route: the same
ports, and on each link the whole block of ``v`` VCs of the class the 1-VC routing picks. That
makes the channel dependency graph the 1-VC one with every channel split into ``v``
interchangeable VCs, so it has ``v`` x the channels and ``v**2`` x the edges and is acyclic
exactly when the 1-VC graph is.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from zfabric import SpecError, analyse_routing, compile_plan, load_spec
from zfabric.plan import PlanView
from zfabric.routing import make_routing


def ring(k):
    def spec(v):
        # 2 dateline classes, fixed: each hop offers its class's block of v VCs (balanced
        # classes offer both blocks on entering a ring: tests/zfabric/test_torus.py)
        routing = {"name": "dor", "vc_classes": "fixed"}
        return {"topology": {"kind": "torus", "k": [k], "vcs": v}, "routing": routing}, 2

    return spec


def mesh(v):
    return {"topology": {"kind": "torus", "k": [3, 3], "wrap": False, "vcs": v}}, 1


def ndt(v):
    # n = 2 (no split dimension): internal classes ch and pe, v VCs each, in that order
    routing = {
        "name": "dort",
        "external_vcs": 2 * v,
        "internal_vcs": {"ch": list(range(v)), "pe": list(range(v, 2 * v))},
    }
    return {"topology": {"kind": "ndt", "k": [2, 2]}, "routing": routing}, 2


def tree(routing):
    def spec(v):
        return {"topology": {"kind": "kary_ntree", "k": 2, "n": 2, "vcs": v}, "routing": routing}, 1

    return spec


FABRICS = {
    "ring-4": ring(4),
    "ring-5": ring(5),
    "mesh-3x3": mesh,
    "ndt-2x2": ndt,
    "tree-2-2-sliced": tree("sliced"),
    "tree-2-2-updown": tree("updown"),
}


def plan_of(fabric, v):
    spec, classes = FABRICS[fabric](v)
    return compile_plan(load_spec({"name": f"{fabric}-v{v}", **spec})), classes


def block(vc_class, v):
    return tuple(range(vc_class * v, (vc_class + 1) * v))


@pytest.mark.parametrize("v", [1, 2, 3, 4])
@pytest.mark.parametrize("fabric", sorted(FABRICS))
def test_every_vc_of_the_class_is_offered_and_the_proof_holds(fabric, v):
    plan, classes = plan_of(fabric, v)
    base, _ = plan_of(fabric, 1)
    view, base_view = PlanView(plan), PlanView(base)
    rf, base_rf = make_routing(view), make_routing(base_view)
    # every switch-to-switch link carries `classes` blocks of v VCs (the nDT internal link: 2)
    assert {link.vcs for link in plan.links} == {classes * v}
    states = set()
    todo = [
        (i.switch, i.port, 0, i.head)
        for src in range(len(plan.endpoints))
        for dst in range(len(plan.endpoints))
        if src != dst
        for i in rf.injections(src, dst)
    ]
    offered = set()
    while todo:
        state = todo.pop()
        if state in states:
            continue
        states.add(state)
        switch, in_port, in_vc, head = state
        decision = rf.route(switch, in_port, in_vc, head)
        expected = base_rf.route(switch, in_port, in_vc // v, head)
        assert [h.port for h in decision.hops] == [h.port for h in expected.hops], state
        assert decision.head == expected.head
        for hop, base_hop in zip(decision.hops, expected.hops, strict=True):
            link = view.out_link[switch][hop.port]
            if link is None:
                continue
            (vc_class,) = base_hop.vcs
            assert hop.vcs == block(vc_class, v), state
            assert all(0 <= vc < link.vcs for vc in hop.vcs)
            offered.update((link.id, vc) for vc in hop.vcs)
            todo += [(link.dst.switch, link.dst.port, vc, decision.head) for vc in hop.vcs]
    analysis, base_analysis = analyse_routing(plan), analyse_routing(base)
    assert analysis.deadlock_free and base_analysis.deadlock_free
    assert analysis.cdg.number_of_nodes() == v * base_analysis.cdg.number_of_nodes()
    assert analysis.cdg.number_of_edges() == v * v * base_analysis.cdg.number_of_edges()
    # the extra VCs are used, not only counted: every VC of a class some route takes is offered
    used_classes = {(link, vc // v) for link, vc in offered}
    assert offered == {(link, c * v + j) for link, c in used_classes for j in range(v)}


def test_torus_without_datelines_stays_cyclic_with_more_vcs():
    # one class of 3 VCs: the ring cycle now runs on every VC (3 x 5 channels, each with a
    # successor on the next link), so more VCs in one class never break it
    plan = compile_plan(
        load_spec(
            {
                "name": "t",
                "topology": {"kind": "torus", "k": [5], "vcs": 3},
                "routing": {"name": "dor", "datelines": False},
            }
        )
    )
    assert {link.vcs for link in plan.links} == {3}
    assert analyse_routing(plan).cycle


def test_defaults_are_unchanged():
    def vcs(topology, **extra):
        plan = compile_plan(load_spec({"name": "t", "topology": topology, **extra}))
        return sorted({link.vcs for link in plan.links})

    assert vcs({"kind": "torus", "k": [4, 4]}) == [2]
    assert vcs({"kind": "torus", "k": [4, 4], "wrap": False}) == [1]
    assert vcs({"kind": "ndt", "k": [2, 2, 2]}) == [2, 4]  # external 2, internal 4 classes
    assert vcs({"kind": "kary_ntree", "k": 2, "n": 2}) == [1]
    assert vcs({"kind": "xgft", "h": 2, "m": [2, 2], "w": [1, 2]}) == [1]


@pytest.mark.parametrize(
    "topology, message",
    [
        (
            {"kind": "torus", "k": [4, 4], "vcs": 9},
            r"^topology\.vcs: must be an integer in 1\.\.8 \(VCs per dateline class: a torus "
            r"link carries 2 x vcs, at most 16\), got 9$",
        ),
        ({"kind": "torus", "k": [4], "vcs": 0}, r"^topology\.vcs: must be an integer in 1\.\.8"),
        (
            {"kind": "torus", "k": [4, 4], "wrap": False, "vcs": 17},
            r"^topology\.vcs: must be an integer in 1\.\.16 \(VCs per mesh link.*got 17$",
        ),
        ({"kind": "mesh", "k": [4, 4], "vcs": 17}, r"^topology\.vcs: .*1\.\.16 \(VCs per mesh"),
        ({"kind": "torus", "k": [4], "vcs": "2"}, r"^topology\.vcs: must be .*got '2'$"),
        ({"kind": "torus", "k": [4], "vcs": True}, r"^topology\.vcs: must be .*got True$"),
        ({"kind": "kary_ntree", "k": 2, "n": 2, "vcs": 17}, r"^topology\.vcs: .*1\.\.16, got 17$"),
        ({"kind": "xgft", "h": 1, "m": [4], "w": [1], "vcs": 0}, r"^topology\.vcs: .*got 0$"),
        ({"kind": "znode", "z": [4], "R": [1], "vcs": 20}, r"^topology\.vcs: .*got 20$"),
    ],
)
def test_bad_vc_counts(topology, message):
    with pytest.raises(SpecError, match=message):
        load_spec({"name": "t", "topology": topology})


def test_bad_vc_count_exits_2_with_one_line(tmp_path):
    spec = tmp_path / "bad.yaml"
    spec.write_text("topology: {kind: ndt, k: [4, 4]}\nrouting: {name: dort, external_vcs: 5}\n")
    result = subprocess.run(
        [sys.executable, "-m", "zfabric.cli", "check", str(spec)], capture_output=True, text=True
    )
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr == (
        "zfabric: error: routing.external_vcs: must be 1 or even (the upper and lower dateline "
        "classes get half each), got 5\n"
    )
