"""Adaptive routings: Duato's condition in the proof, ``duato`` on tori and meshes,
``dort_adaptive`` and ``tsdor`` on the nDT twin torus.

Expected routes are derived by hand from the reference algorithms (wormhole-models.md §1.6,
ndt.md §3.4 and §3.5) and the port layouts the topology docstrings state: a torus switch has
port 0 local, then d0+, d0-, d1+, d1-, ... (a mesh drops the edge ports); an nDT card has port 0
local, port 1 the internal link, then its external ports sorted by dimension, + before -. Under
CBest on a 3DT, Card0 holds X+ X- Y- (ports 2, 3, 4) and Card1 Y+ Z+ Z- (ports 2, 3, 4).
"""

from __future__ import annotations

import json

import pytest

from zfabric import analyse_routing, compile_plan, load_spec
from zfabric.cli import main
from zfabric.deadlock import check_deadlock_free
from zfabric.errors import DeadlockError, PlanError, SpecError
from zfabric.plan import PlanView
from zfabric.routing import ROUTINGS, Decision, Hop, make_routing
from zfabric.routing.dort_adaptive import DORTAdaptive
from zfabric.routing.duato import Duato
from zfabric.topologies.torus import linear_index


def plan_of(topology: dict, routing: dict | str):
    return compile_plan(load_spec({"name": "t", "topology": topology, "routing": routing}))


def routing_of(topology: dict, routing: dict | str):
    plan = plan_of(topology, routing)
    return plan, make_routing(PlanView(plan))


def ndt_switch(k, coords, card) -> int:
    """Switch id = 2 * node + card (topologies/ndt.py); a PE's id is its switch's."""
    return 2 * linear_index(tuple(coords), tuple(k)) + card


# ---- duato ---------------------------------------------------------------------------------


def test_duato_alone_compiles_with_the_default_vcs():
    """`routing: {name: duato}` alone: 2 dateline escape VCs + 2 adaptive on a torus link,
    1 escape + 2 adaptive on a mesh link."""
    assert {link.vcs for link in plan_of({"kind": "torus", "k": [4, 4]}, "duato").links} == {4}
    assert {link.vcs for link in plan_of({"kind": "mesh", "k": [4, 4]}, "duato").links} == {3}
    plan = plan_of({"kind": "torus", "k": [4, 4], "vcs": 2}, {"name": "duato", "adaptive_vcs": 3})
    assert {link.vcs for link in plan.links} == {2 * 2 + 3}


def test_duato_routes_on_a_4x4_torus():
    _, rf = routing_of({"kind": "torus", "k": [4, 4]}, "duato")
    at = lambda x, y: linear_index((x, y), (4, 4))  # noqa: E731
    adaptive = (2, 3)
    # (0,0) -> (1,2): d0 + (1 hop); d1 is a tie (2 of 4), alternate from even 0 -> +.
    # Adaptive d0+ (port 1) and d1+ (port 3), then DOR's d0+, class 0 (destination 1 > 0)
    assert rf.route(at(0, 0), 0, 0, at(1, 2)) == Decision(
        (Hop(1, adaptive), Hop(3, adaptive), Hop(1, (0,))), at(1, 2)
    )
    # (3,0) -> (0,0): d0 + across the wrap (1 hop): destination coordinate below -> class 1
    assert rf.route(at(3, 0), 2, 1, at(0, 0)) == Decision(
        (Hop(1, adaptive), Hop(1, (1,))), at(0, 0)
    )
    # (0,1) -> (0,3): tie from odd 1 -> -, d1- is port 4; 3 > 1 -> class 0
    assert rf.route(at(0, 1), 0, 0, at(0, 3)) == Decision(
        (Hop(4, adaptive), Hop(4, (0,))), at(0, 3)
    )
    # arrived: deliver on the local port, whatever VC it came on
    assert rf.route(at(2, 2), 1, 3, at(2, 2)).hops == (Hop(0, rf.ejection_vcs),)


def test_duato_routes_on_a_4x4_mesh():
    """(0,0) has ports local, d0+, d1+ only; one escape VC (0), adaptive VCs 1 and 2."""
    _, rf = routing_of({"kind": "mesh", "k": [4, 4]}, "duato")
    dst = linear_index((2, 1), (4, 4))
    assert rf.route(0, 0, 0, dst) == Decision((Hop(1, (1, 2)), Hop(2, (1, 2)), Hop(1, (0,))), dst)


@pytest.mark.parametrize(
    "topology",
    [
        {"kind": "torus", "k": [4, 4]},
        {"kind": "torus", "k": [8, 8]},
        {"kind": "torus", "k": [4, 4, 4]},
        {"kind": "mesh", "k": [4, 4]},
    ],
)
def test_the_proof_accepts_duato(topology):
    analysis = check_deadlock_free(plan_of(topology, "duato"))
    assert analysis.adaptive and analysis.deadlock_free
    # the extended CDG is over the escape channels only (VCs 0, 1 on a torus, 0 on a mesh)
    escape = 2 if topology["kind"] == "torus" else 1
    assert {vc for _, vc in analysis.cdg.nodes} == set(range(escape))


def test_the_extended_cdg_holds_indirect_dependencies():
    """8x8 torus: a packet on the escape channel (3,3)->(3,2) (d1-, for (3,0): 3 hops -, the
    destination coordinate below -> class 1) may take the adaptive d1- channel (3,2)->(3,1)
    and then request the escape channel (3,1)->(3,0): an indirect dependency, no direct one
    (the two channels are not consecutive)."""
    plan = plan_of({"kind": "torus", "k": [8, 8]}, "duato")
    analysis = analyse_routing(plan)
    view = PlanView(plan)
    port = {(p.dim, p.sign): i for i, p in enumerate(plan.switches[0].ports) if p.dim is not None}
    down = lambda y: view.out_link[linear_index((3, y), (8, 8))][port[(1, -1)]].id  # noqa: E731
    assert analysis.cdg.has_edge((down(3), 1), (down(1), 1))
    assert analysis.cdg.has_edge((down(3), 1), (down(2), 1))  # and the direct one


def test_an_escape_set_without_datelines_is_refused(tmp_path, capsys):
    """A 6-ring's escape VC without dateline classes closes the ring (Dally and Seitz): exit 1,
    the cycle printed, all its channels escape VC 0 of one ring direction."""
    spec = tmp_path / "ring.yaml"
    spec.write_text("topology: {kind: torus, k: [6]}\nrouting: {name: duato, datelines: false}\n")
    assert main(["check", str(spec)]) == 1
    out = capsys.readouterr().out
    assert "DEADLOCK: escape channels' extended channel dependency cycle" in out
    assert main(["check", str(spec), "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["proof"] == "duato" and report["cycle"]
    assert all(name.endswith("/vc0") for name in report["cycle"])
    assert len({name.split("(")[1].split(")")[0] for name in report["cycle"]}) == 1
    # the same escape VCs with dateline classes pass
    spec.write_text("topology: {kind: torus, k: [6]}\nrouting: {name: duato}\n")
    assert main(["check", str(spec)]) == 0


class NoEscapeInTheLastDimension(Duato):
    """Broken on purpose: no escape hop once only dimension 1 is left."""

    def route(self, switch, in_port, in_vc, head):
        decision = super().route(switch, in_port, in_vc, head)
        (x, y), (to_x, to_y) = self.coords[switch], self.coords[self.home[head]]
        if x == to_x and y != to_y:
            return Decision(decision.hops[:-1], head)
        return decision


def test_an_escape_sub_function_that_is_not_connected_is_refused(monkeypatch):
    """Duato's condition needs an escape channel at every reachable state: a state offering
    adaptive VCs only is a route that does not deliver on escape channels (PlanError, exit 1)."""
    monkeypatch.setitem(ROUTINGS, "duato", NoEscapeInTheLastDimension)
    with pytest.raises(PlanError, match="the escape sub-function is not connected: sw"):
        analyse_routing(plan_of({"kind": "torus", "k": [4, 4]}, "duato"))


def test_duato_routing_options_are_checked():
    with pytest.raises(SpecError, match=r"routing\.adaptive_vcs: must be an integer in 1\.\.16"):
        plan_of({"kind": "torus", "k": [4, 4]}, {"name": "duato", "adaptive_vcs": 0})
    # 2 x 8 dateline VCs leave no room for the default 2 adaptive VCs: the message says the
    # count is the default (the user wrote no adaptive_vcs) and where the escape VCs come from
    with pytest.raises(
        SpecError,
        match=r"^routing\.adaptive_vcs: the default 2 adaptive VCs after 16 escape VCs \(topology"
        r" vcs 8 x 2 dateline classes\) make 18 VCs per link, at most 16$",
    ):
        plan_of({"kind": "torus", "k": [4, 4], "vcs": 8}, "duato")
    with pytest.raises(
        SpecError,
        match=r"^routing\.adaptive_vcs: 3 adaptive VCs after 14 escape VCs \(topology vcs 14\)"
        r" make 17 VCs per link, at most 16$",
    ):
        plan_of({"kind": "mesh", "k": [4, 4], "vcs": 14}, {"name": "duato", "adaptive_vcs": 3})
    with pytest.raises(SpecError, match=r"routing\.tie"):
        plan_of({"kind": "torus", "k": [4, 4]}, {"name": "duato", "tie": "wrap"})


# ---- dort_adaptive -------------------------------------------------------------------------

K3 = [4, 4, 4]


def test_dort_adaptive_alone_compiles_with_table_3_budgets():
    """ndt.md §3.5 Table 3: external 4, internal 8 (odd n); an even n keeps DORT's 2 escape
    internal VCs (CH, PE) + 4 adaptive."""
    plan = plan_of({"kind": "ndt", "k": K3}, "dort_adaptive")
    roles = {
        plan.switches[link.src.switch].ports[link.src.port].role: link.vcs for link in plan.links
    }
    assert roles == {"external": 4, "internal": 8}
    plan = plan_of({"kind": "ndt", "k": [2, 2, 2, 2]}, "dort_adaptive")
    assert {link.vcs for link in plan.links} == {4, 6}


def test_dort_adaptive_example_3_4():
    """ndt.md §3.3 Ex 3.4: PE1 of <0,0,0> to <1,0,1>. Card1 holds Z+ (port 3): adaptive Z+ first
    (dimension wholly on this card, top priority); DORT needs X+ on Card0, so its output is the
    internal link (CH, VC 0) and the internal link's adaptive VCs (4..7) are offered too."""
    _, rf = routing_of({"kind": "ndt", "k": K3}, "dort_adaptive")
    src, dst = ndt_switch(K3, (0, 0, 0), 1), ndt_switch(K3, (1, 0, 1), 0)
    internal = (4, 5, 6, 7)
    assert rf.route(src, 0, 0, dst).hops == (Hop(3, (2, 3)), Hop(1, internal), Hop(1, (0,)))
    # once escaped never back: arriving on escape VC 0 of the internal link, DORT only
    assert rf.route(src, 1, 0, dst).hops == (Hop(1, (0,)),)
    # arriving on an adaptive VC of the internal link: the set again
    assert rf.route(src, 1, 5, dst).hops == (Hop(3, (2, 3)), Hop(1, internal), Hop(1, (0,)))


@pytest.mark.parametrize(
    "selection, expected",
    [
        ("3_priority", ((3, (2, 3)), (1, (4, 5, 6, 7)), (1, (0,)))),
        ("2_priority", ((3, (2, 3)), (1, (4, 5, 6, 7)), (1, (0,)))),
        ("round_robin", ((1, (4, 5, 6, 7)), (3, (2, 3)), (1, (0,)))),
        ("no_internal", ((3, (2, 3)), (1, (0,)))),
    ],
)
def test_dort_adaptive_selection_orders(selection, expected):
    _, rf = routing_of({"kind": "ndt", "k": K3}, {"name": "dort_adaptive", "selection": selection})
    src, dst = ndt_switch(K3, (0, 0, 0), 1), ndt_switch(K3, (1, 0, 1), 0)
    assert rf.route(src, 0, 0, dst).hops == tuple(Hop(*hop) for hop in expected)


def test_dort_adaptive_example_3_5_and_ties():
    """Ex 3.5: PE0 of <0,1,0> to <1,0,0>: on Card0 X+ (port 2, dimension on this card) before
    Y- (port 4, the split dimension), then DORT's X+ upper (VC 0). A tie in X (distance 2 of 4)
    offers both X+ and X-; DORT's tie in an unsplit dimension goes +."""
    _, rf = routing_of({"kind": "ndt", "k": K3}, "dort_adaptive")
    src = ndt_switch(K3, (0, 1, 0), 0)
    dst = ndt_switch(K3, (1, 0, 0), 1)
    assert rf.route(src, 0, 0, dst).hops == (Hop(2, (2, 3)), Hop(4, (2, 3)), Hop(2, (0,)))
    src, dst = ndt_switch(K3, (0, 0, 0), 0), ndt_switch(K3, (2, 0, 0), 0)
    assert rf.route(src, 0, 0, dst).hops == (Hop(2, (2, 3)), Hop(3, (2, 3)), Hop(2, (0,)))


@pytest.mark.parametrize(
    "k", [[3, 3, 3], [4, 4, 4], [2, 2, 2, 2], [4, 4, 2, 2], [2, 2, 2, 2, 2], [3, 2, 2, 2, 3]]
)
@pytest.mark.parametrize("routing", ["dort_adaptive", "tsdor"])
def test_the_proof_accepts_the_ndt_routings(k, routing):
    analysis = check_deadlock_free(plan_of({"kind": "ndt", "k": k}, routing))
    assert analysis.adaptive == (routing == "dort_adaptive")


class EscapedReturn(DORTAdaptive):
    """Broken on purpose: a packet that arrived on an escape VC is offered the adaptive VCs
    again, as if it had just been injected (the "once escaped, never back" rule dropped)."""

    def state_key(self, switch, in_port, in_vc, head):
        return (switch, head)

    def route(self, switch, in_port, in_vc, head):
        return super().route(switch, 0, 0, head)  # port 0 is the local port: never escaped


class EscapedReturnInternal(DORTAdaptive):
    """Escaped packets get back only the internal link's adaptive VCs, where DORT's output is
    the internal link."""

    def route(self, switch, in_port, in_vc, head):
        decision = super().route(switch, in_port, in_vc, head)
        if in_vc < self.in_escape[switch][in_port] and decision.hops[0].port == 1:
            return Decision((*self.internal_adaptive[switch], *decision.hops), head)
        return decision


def test_escaped_packets_returning_to_adaptive_vcs_are_refused(tmp_path, capsys, monkeypatch):
    """Without the rule the CH escape VC of the internal link (Card1 -> Card0, DORT's lowest
    class, ndt.md §4.4, which DORT itself only uses at injection) is requested again after
    adaptive hops at every node: the extended CDG closes through it. Exit 1, cycle printed."""
    monkeypatch.setitem(ROUTINGS, "dort_adaptive", EscapedReturn)
    spec = tmp_path / "broken.yaml"
    spec.write_text("topology: {kind: ndt, k: [3, 3, 3]}\nrouting: dort_adaptive\n")
    assert main(["check", str(spec), "--json"]) == 1
    cycle = json.loads(capsys.readouterr().out)["cycle"]
    assert cycle and all(name.endswith("p1(internal)/vc0") for name in cycle)
    assert main(["check", str(spec)]) == 1
    assert "DEADLOCK: escape channels' extended channel dependency cycle" in capsys.readouterr().out


def test_returning_to_the_internal_adaptive_vcs_alone_is_deadlock_free(monkeypatch):
    """Duato's theory allows escape -> adaptive, and this variant passes it: an escaped packet
    never needs DORT's CH class again (DORT changes card for a dimension only at injection,
    ndt.md §3.3), so where DORT's output is the internal link it is delivering or inside the
    d_c ring, and after the crossing it can only move on in d_c or higher dimensions: every
    edge it adds goes forward in DORT's channel order (ndt.md §4.4). What the proof finds on
    3x3x3 and 4x4x4; the paper's rule is stronger than needed on the internal link alone."""
    monkeypatch.setitem(ROUTINGS, "dort_adaptive", EscapedReturnInternal)
    for k in ([3, 3, 3], [4, 4, 4]):
        assert check_deadlock_free(plan_of({"kind": "ndt", "k": k}, "dort_adaptive"))


def test_dort_adaptive_with_one_external_escape_vc_is_refused():
    """DORT with 1 external VC closes the rings of k >= 4 (ndt.md §4.5 "1 VC on external
    links": cycle on 4x4x4): an escape set without the upper/lower dateline split."""
    plan = plan_of({"kind": "ndt", "k": K3}, {"name": "dort_adaptive", "external_vcs": 1})
    with pytest.raises(DeadlockError):
        check_deadlock_free(plan)


def test_dort_adaptive_options_are_checked():
    with pytest.raises(SpecError, match=r"routing\.selection: must be one of"):
        plan_of({"kind": "ndt", "k": K3}, {"name": "dort_adaptive", "selection": "random"})
    # a link carries at most 16 VCs: 4 escape VCs on the internal link leave 12
    with pytest.raises(
        SpecError,
        match=r"^routing\.adaptive_internal_vcs: 13 adaptive VCs after DORT's 4 make 17 VCs per"
        r" internal link, at most 16$",
    ):
        plan_of({"kind": "ndt", "k": K3}, {"name": "dort_adaptive", "adaptive_internal_vcs": 13})
    # the default 2 after 16 DORT VCs: the message says the user did not write it
    with pytest.raises(
        SpecError,
        match=r"^routing\.adaptive_external_vcs: the default 2 adaptive VCs after DORT's 16 make"
        r" 18 VCs per external link, at most 16$",
    ):
        plan_of({"kind": "ndt", "k": K3}, {"name": "dort_adaptive", "external_vcs": 16})


# ---- tsdor ---------------------------------------------------------------------------------


def test_tsdor_routes():
    """ndt.md §3.4 on 4x4x4 CBest. Class 0 (PE0 sources) ascending on VCs 0/1, class 1 (PE1
    sources) descending on VCs 2/3."""
    plan, rf = routing_of({"kind": "ndt", "k": K3}, "tsdor")
    assert {link.vcs for link in plan.links} == {4}
    sw = lambda coords, card: ndt_switch(K3, coords, card)  # noqa: E731
    dst = sw((1, 0, 1), 0)
    # PE1 of <0,0,0> -> <1,0,1>: Z first, Z+ on Card1 (port 3), class 1 upper = VC 2
    assert rf.route(sw((0, 0, 0), 1), 0, 0, dst).hops == (Hop(3, (2,)),)
    # PE0 of <0,0,0>: X first, X+ on Card0 (port 2), class 0 upper = VC 0
    assert rf.route(sw((0, 0, 0), 0), 0, 0, dst).hops == (Hop(2, (0,)),)
    # at <1,0,0> Card0 (arrived on X-, port 3, VC 0): Z+ is on Card1, an unsplit dimension ->
    # internal link, Card0 -> Card1 = upper (VC 0)
    assert rf.route(sw((1, 0, 0), 0), 3, 0, dst).hops == (Hop(1, (0,)),)
    # at <1,0,1> Card1 (arrived on Z-, port 4, VC 0): the PE is on Card0: Card1 -> Card0 lower
    assert rf.route(sw((1, 0, 1), 1), 4, 0, dst).hops == (Hop(1, (1,)),)
    # the same switch for a class-1 packet (VC 2): lower of class 1 = VC 3
    assert rf.route(sw((1, 0, 1), 1), 4, 2, dst).hops == (Hop(1, (3,)),)
    # ties in the split Y: class 0 to the Card0 port (Y-, port 4), class 1 to Card1's (Y+, 2)
    assert rf.route(sw((0, 0, 0), 0), 0, 0, sw((0, 2, 0), 0)).hops == (Hop(4, (0,)),)
    assert rf.route(sw((0, 0, 0), 1), 0, 0, sw((0, 2, 0), 1)).hops == (Hop(2, (2,)),)
    # class 1 on Card1 of <0,1,0> to <0,0,0>: Y- is on Card0, the internal link is part of the
    # Y ring: destination below -> lower of class 1 = VC 3
    assert rf.route(sw((0, 1, 0), 1), 0, 0, sw((0, 0, 0), 1)).hops == (Hop(1, (3,)),)


# ---- commands that need RTL ----------------------------------------------------------------


RTL_COMMANDS = ["verilog", "cosim", "synth", "run", "prove", "board"]


def rtl_command(tmp_path, command: str, spec_text: str) -> tuple[int, list[str]]:
    spec = tmp_path / "a.yaml"
    spec.write_text(spec_text)
    out = ["-o", str(tmp_path / "out")]
    args = {
        "verilog": [str(spec), *out],
        "cosim": [str(spec)],
        "synth": [str(spec)],
        "run": [str(spec), *out],
        "prove": [str(spec), *out],
        "board": ["build", "ulx3s-85f", str(spec), *out],
    }[command]
    return main([command, *args])


@pytest.mark.parametrize("routing", ["duato", "dort_adaptive"])
@pytest.mark.parametrize("command", RTL_COMMANDS)
def test_rtl_commands_refuse_adaptive_routings_under_first_free(tmp_path, capsys, routing, command):
    """A route unit's mask is the candidate set: round-robin selection picks from it as the
    model does, first-free would need the priority order (escape hop last)."""
    kind = "torus, k: [4, 4]" if routing == "duato" else "ndt, k: [2, 2, 2]"
    text = f"topology: {{kind: {kind}}}\nrouting: {routing}\nrouter: {{selection: first-free}}\n"
    assert rtl_command(tmp_path, command, text) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        f"zfabric: error: router.selection: 'first-free' with the adaptive routing {routing!r}:"
        f" zfabric {command} builds it with 'round-robin' or 'occupancy' only (check and simulate"
        " can)"
    ]
    assert not (tmp_path / "out").exists()


# ---- the model runs them -------------------------------------------------------------------


TORUS_44, NDT_222 = {"kind": "torus", "k": [4, 4]}, {"kind": "ndt", "k": [2, 2, 2]}
NDT_333 = {"kind": "ndt", "k": [3, 3, 3]}


def stress_case(topology: dict, routing, pattern: str, selection: str | None = None, marks=()):
    fabric = "x".join(map(str, topology["k"])) + ("-mesh" if "wrap" in topology else "")
    name = routing if isinstance(routing, str) else f"{routing['name']}-{routing['selection']}"
    parts = [topology["kind"], fabric, name, pattern, *([selection] if selection else [])]
    return pytest.param(topology, routing, pattern, selection, id="-".join(parts), marks=marks)


#: every adaptive routing under both patterns on the small fabrics with round-robin and
#: occupancy selection; then, uniform only, a mesh (one escape class), a 3DT 3x3x3 (54
#: endpoints, odd rings; its tsdor case under ``-m matrix``), the other selection functions
#: and first-free selection (the candidates' priority order)
STRESS = [
    stress_case(topology, routing, pattern, selection)
    for topology, routing in ((TORUS_44, "duato"), (NDT_222, "dort_adaptive"), (NDT_222, "tsdor"))
    for pattern in ("uniform", "transpose")
    for selection in ("round-robin", "occupancy")
] + [
    stress_case({**TORUS_44, "wrap": False}, "duato", "uniform"),
    stress_case(NDT_333, "dort_adaptive", "uniform", marks=pytest.mark.slow),
    stress_case(NDT_333, "tsdor", "uniform", marks=[pytest.mark.slow, pytest.mark.matrix]),
    *(
        stress_case(NDT_222, {"name": "dort_adaptive", "selection": s}, "uniform")
        for s in ("2_priority", "round_robin", "no_internal")
    ),
    stress_case(TORUS_44, "duato", "uniform", "first-free"),
    stress_case(NDT_222, "dort_adaptive", "uniform", "first-free"),
]


@pytest.mark.parametrize("topology, routing, pattern, selection", STRESS)
def test_the_model_delivers_everything_past_saturation_and_drains(
    topology, routing, pattern, selection
):
    """0.9 flits/cycle/endpoint is past saturation on every fabric; after 1500 cycles of it the
    fabric must drain with every packet delivered once and intact (the model checks flit
    order, contiguity and the delivery endpoint as it runs), whichever ``router.selection``."""
    from zfabric.sim.model import FabricModel
    from zfabric.sim.traffic import Traffic, TrafficConfig

    spec = {"name": "t", "topology": topology, "routing": routing}
    if selection:
        spec["router"] = {"selection": selection}
    plan = compile_plan(load_spec(spec))
    model = FabricModel(plan)
    config = TrafficConfig(pattern=pattern, rate=0.9, packet_length=4)
    traffic = Traffic(config, len(plan.endpoints), 7)
    offered = []
    for cycle in range(1500):
        offered += [model.offer(s, d, n) for s, d, n in traffic.packets_at(cycle)]
        model.step()
        assert not model.stuck
    assert any(p.delivered is None for p in offered)  # saturated: a backlog at the sources
    while any(p.delivered is None for p in offered):
        model.step()
        assert not model.stuck and model.cycle < 40_000
    model.check_credits()
    assert sorted(p.id for p in model.delivered) == sorted(p.id for p in offered)
    assert all(p.flits_delivered == p.length for p in offered)
    assert model.in_network == 0


@pytest.mark.parametrize(
    "topology, routing, levels",
    [
        ({"kind": "torus", "k": [4, 4]}, "duato", {0, 1}),
        ({"kind": "mesh", "k": [3, 3]}, "duato", {0, 1}),
        ({"kind": "ndt", "k": [3, 3, 3]}, "dort_adaptive", {0, 1, 2, 3}),
        (
            {"kind": "ndt", "k": [3, 3, 3]},
            {"name": "dort_adaptive", "selection": "2_priority"},
            {0, 1, 2, 3},
        ),
        (
            {"kind": "ndt", "k": [3, 3, 3]},
            {"name": "dort_adaptive", "selection": "round_robin"},
            {0, 1, 3},
        ),
        ({"kind": "ndt", "k": [2, 2, 2]}, "tsdor", {0}),
        ({"kind": "torus", "k": [4, 4]}, "dor", {0}),
        ({"kind": "hyperx", "s": [3, 3], "terminals": 2}, "aliod", {0, 1}),
        ({"kind": "hyperx", "s": [3, 3], "terminals": 2}, "cliod", {0, 1}),
    ],
)
def test_priority_levels_follow_every_decision_order(topology, routing, levels):
    """Occupancy selection reads each output VC's level (``priority``), a constant of the
    switch: every decision, for every switch, input VC and destination, lists its candidates
    by non-decreasing level, so the levels are the routing's priority order; an adaptive
    routing's escape VCs, and only they, have its last level; a deterministic one has one.
    Deliveries (local ports) are level 0: a delivery decision offers nothing else."""
    plan, rf = routing_of(topology, routing)
    view = PlanView(plan)
    seen = set()
    for switch in view.switches:
        out = view.out_link[switch.id]
        for port, link in enumerate(view.in_link[switch.id]):
            for vc in range(1 if link is None else link.vcs):
                for dst in range(len(plan.endpoints)):
                    if dst == switch.id and link is None:
                        continue  # a packet to its own source
                    hops = rf.route(switch.id, port, vc, dst).hops
                    ranked = [
                        (rf.priority(switch.id, h.port, w), h.port, w) for h in hops for w in h.vcs
                    ]
                    assert [r[0] for r in ranked] == sorted(r[0] for r in ranked), (switch, hops)
                    for level, p, w in ranked:
                        if rf.adaptive and out[p] is not None:
                            assert (level == max(levels)) == rf.is_escape(out[p].id, w)
                        seen.add(level)
    assert seen == levels


def test_dort_adaptive_levels_of_example_3_4_and_3_5():
    """3_priority's levels on the 3DT: Card1's Z+ (Z wholly on Card1) 0, Card0's Y- (the split
    dimension) 1, the internal link's adaptive VCs 2, DORT's escape VCs 3 (Ex 3.4, 3.5)."""
    _, rf = routing_of({"kind": "ndt", "k": K3}, "dort_adaptive")
    card1, card0 = ndt_switch(K3, (0, 0, 0), 1), ndt_switch(K3, (0, 1, 0), 0)
    assert [rf.priority(card1, 3, w) for w in (0, 1, 2, 3)] == [3, 3, 0, 0]
    assert [rf.priority(card1, 1, w) for w in range(8)] == [3] * 4 + [2] * 4
    assert [rf.priority(card0, port, 2) for port in (2, 3, 4)] == [0, 0, 1]
    assert rf.priority(card0, 0, 0) == 0  # the local port: deliveries have one level


def test_ndt_configs_refuses_an_adaptive_routing(tmp_path, capsys):
    """Transit paths are counted along the one route of each pair: not defined for
    ``dort_adaptive`` (exit 2, one line); ``tsdor``'s PE0-to-PE0 routes are DORT's."""
    spec = tmp_path / "a.yaml"
    spec.write_text("topology: {kind: ndt, k: [4, 4, 4]}\nrouting: dort_adaptive\n")
    assert main(["ndt-configs", str(spec)]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        "zfabric: error: routing: ndt-configs needs a deterministic routing, got 'dort_adaptive'"
    ]
    spec.write_text("topology: {kind: ndt, k: [4, 4, 4]}\nrouting: tsdor\n")
    assert main(["ndt-configs", str(spec), "--json"]) == 0
    rows = {" ".join(row["card0"]): row for row in json.loads(capsys.readouterr().out)}
    # CBest with ties toward the Card0 port: 49 of 129 (ndt.md §1.4, the 4x4x4 row)
    assert (rows["d0- d0+ d1-"]["transit"], rows["d0- d0+ d1-"]["crossing"]) == (129, 49)


def test_check_labels_the_shortest_and_the_longest_routes_of_adaptive_choices(tmp_path, capsys):
    """Under dort_adaptive on a 2x2 twin torus some pairs have routes of different lengths: the
    diameter (longest route any choice takes) and the average (of each pair's shortest) mean
    different things, so check reports both figures for both, from each pair's shortest and
    longest route."""
    spec = tmp_path / "ndt.yaml"
    spec.write_text("name: ndt-2x2\ntopology: {kind: ndt, k: [2, 2]}\nrouting: dort_adaptive\n")
    pairs = analyse_routing(compile_plan(load_spec(spec)), keep_pairs=True).pair_hops
    shortest = [lo for lo, _ in pairs.values()]
    longest = [hi for _, hi in pairs.values()]
    assert shortest != longest  # the case in point: choices of different lengths
    assert main(["check", str(spec), "--json"]) == 0
    routes = json.loads(capsys.readouterr().out)["routes"]
    assert routes["shortest"]["diameter"] == max(shortest)
    assert routes["shortest"]["average"] == pytest.approx(sum(shortest) / len(pairs))
    assert routes["longest"]["diameter"] == max(longest)
    assert routes["longest"]["average"] == pytest.approx(sum(longest) / len(pairs))
    assert main(["check", str(spec)]) == 0
    (line,) = [line for line in capsys.readouterr().out.splitlines() if "routes:" in line]
    assert line == (
        f"  routes: shortest choices diameter {max(shortest)}, average"
        f" {sum(shortest) / len(pairs):.3f}; longest choices diameter {max(longest)}, average"
        f" {sum(longest) / len(pairs):.3f} switch-to-switch hops"
    )


def test_check_keeps_one_routes_line_when_choices_are_of_one_length(example, capsys):
    assert main(["check", str(example("torus-4x4"))]) == 0
    assert "  routes: diameter 4, average 2.133 switch-to-switch hops" in capsys.readouterr().out
    assert main(["check", str(example("torus-4x4")), "--json"]) == 0
    routes = json.loads(capsys.readouterr().out)["routes"]
    assert routes["shortest"] == routes["longest"] == {"diameter": 4, "average": 32 / 15}
