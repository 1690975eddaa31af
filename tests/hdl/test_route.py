# amaranth: UnusedElaboratable=no
"""Route units against the routing function, exhaustively, on every switch of small fabrics.

Destination routing: every (switch, input port, input VC, destination). Znode routings that
write their own heads (sliced, flat, source-destination): every (switch, input port, input VC,
head) a packet can present, found by walking every source's injections to every destination
through every adaptive candidate, which crosses every level, side link and layer of the fabric.
"""

from __future__ import annotations

from collections import deque

import pytest
import yaml
from amaranth.hdl import Module
from amaranth.sim import Simulator
from hdl_bench import SMALL_SPECS, small_plan
from zfabric.hdl.router.route import RouteRows, SwitchPorts, route_row

from zfabric import compile_plan, load_spec
from zfabric.plan import PlanView
from zfabric.routing import head_flits, make_routing


def rtl_routes(plan, switch, queries, *, arithmetic=True):
    """Evaluate the switch's route units: {(port, vc): [head, ...]} -> {(port, vc, head): ...}.

    Each answer is (candidates as [(port, vc), ...] in the allocator's priority order, next head).
    Units with an ``identity`` input get the switch's identity, as the parent drives it.
    """
    routes = route_row(plan, switch, arithmetic=arithmetic)
    ports: SwitchPorts = routes.ports
    flat = [(p, w) for p, n in enumerate(ports.vcs) for w in range(n)]
    units = {key: routes.unit(*key) for key in queries}
    m = Module()
    for (p, v), unit in units.items():
        m.submodules[f"route{p}_{v}"] = unit
    answers = {}

    async def testbench(ctx):
        for unit in units.values():
            if "identity" in unit.signature.members:
                ctx.set(unit.identity, routes.identity)
        rounds = max(len(heads) for heads in queries.values())
        for i in range(rounds):
            asked = {}
            for key, heads in queries.items():
                if i < len(heads):
                    ctx.set(units[key].head, heads[i])
                    asked[key] = heads[i]
            for key, head in asked.items():
                mask = ctx.get(units[key].cand)
                candidates = [flat[b] for b in range(len(flat)) if mask >> b & 1]
                answers[(*key, head)] = (candidates, ctx.get(units[key].next_head))
                if "flits" in units[key].signature.members:  # heads of several flits
                    flits = (ctx.get(units[key].flits), ctx.get(units[key].skip))
                    answers[(*key, head, "flits")] = flits

    sim = Simulator(m)
    sim.add_testbench(testbench)
    sim.run()
    return answers


def expected(routing, switch, port, vc, head):
    """The routing function's candidates, in priority order, and the next head's value."""
    try:
        decision = routing.route(switch, port, vc, head)
    except LookupError:
        return [], None
    candidates = [(hop.port, w) for hop in decision.hops for w in hop.vcs]
    next_head = decision.head[0] if isinstance(decision.head, tuple) else decision.head
    return candidates, next_head


DESTINATION = [
    ("torus-4x4", True),
    ("torus-4x4", False),
    ("mesh-3x4", True),
    ("torus-3x5", True),
    ("torus-4x6-plus", True),
    ("torus-5x4-balanced", True),
    ("torus-5x4-balanced", False),
    ("torus-3x4-vcs2-balanced", True),
    ("torus-2x3x4-plus-balanced", True),
    ("ndt-2x2x2", True),
    ("ndt-2x2x2", False),
    pytest.param("ndt-4x4x4", True, marks=[pytest.mark.slow, pytest.mark.matrix]),
    ("ndt-3x2x3", True),
    ("ndt-2x4x2-plus", True),
    ("snode-16-updown", False),
    ("mesh-3x4-vcs2", True),
    ("torus-3x4-vcs2", True),
    ("ndt-3x2x3-vcs2", True),
    ("ndt-3x2x3-vcs2", False),
    ("snode-16-updown-vcs2", False),
]


def check_every_destination(plan, *, arithmetic: bool, ordered: bool = True) -> None:
    """Every (switch, input port, input VC, destination) against the routing function:
    candidates in priority order, or (``ordered=False``, the adaptive routings under
    round-robin selection) as a set, each candidate once."""
    view = PlanView(plan)
    routing = make_routing(view)
    destinations = list(range(len(plan.endpoints)))
    checked = 0
    for switch in range(len(plan.switches)):
        ports = SwitchPorts.from_plan(view, switch)
        queries = {(p, v): destinations for p in range(ports.n_ports) for v in range(ports.vcs[p])}
        answers = rtl_routes(plan, switch, queries, arithmetic=arithmetic)
        for (p, v), heads in queries.items():
            for head in heads:
                candidates, next_head = expected(routing, switch, p, v, head)
                if not ordered:
                    assert len(set(candidates)) == len(candidates), (switch, p, v, head)
                    candidates = sorted(candidates)  # (port, VC): the flat order
                got_candidates, got_next = answers[p, v, head]
                assert got_candidates == candidates, (switch, p, v, head)
                if candidates:
                    assert got_next == next_head, (switch, p, v, head)
                checked += 1
    assert checked == sum(
        len(destinations) * n
        for s in range(len(plan.switches))
        for n in SwitchPorts.from_plan(view, s).vcs
    )


@pytest.mark.parametrize(
    "name, arithmetic",
    DESTINATION,
    ids=lambda v: v if isinstance(v, str) else ("arithmetic" if v else "table"),
)
def test_destination_route_units_agree_with_the_routing_function(example, name, arithmetic):
    plan = small_plan(example, name)
    check_every_destination(plan, arithmetic=arithmetic)
    assert RouteRows(plan, arithmetic=arithmetic).kind == (
        plan.routing.name if arithmetic else "table"
    )


#: adaptive and twin-torus routings (fabric, routing, unit kind); ``duato`` arithmetic or by table
NDT_333 = {"name": "ndt-3x3x3", "topology": {"kind": "ndt", "k": [3, 3, 3]}}
#: a 2D twin torus (n even: DORT's internal classes differ) with ties on the 4-ring
NDT_42 = {"name": "ndt-4x2", "topology": {"kind": "ndt", "k": [4, 2]}}
#: every dimension split (the 3DT's configuration A): a ring pair per split dimension
NDT_A = {
    "name": "ndt-3x2x3-a",
    "topology": {"kind": "ndt", "k": [3, 2, 3], "ports": ["x+", "y+", "z+"]},
}
ADAPTIVE_ROUTINGS = [
    (NDT_A, "dort", "dort"),
    (NDT_A, "dort_adaptive", "dort_adaptive"),
    ("ndt-2x2x2", "tsdor", "tsdor"),
    ("ndt-2x2x2", "tsdor", "table"),
    ("ndt-3x2x3", "tsdor", "tsdor"),
    (NDT_42, "tsdor", "tsdor"),
    pytest.param(NDT_333, "tsdor", "tsdor", marks=pytest.mark.slow, id="ndt-3x3x3-tsdor"),
    ("torus-4x4", "duato", "duato"),
    ("torus-4x4", "duato", "table"),
    ("mesh-4x4", "duato", "duato"),
    ("torus-3x5", {"name": "duato", "tie": "plus", "adaptive_vcs": 1}, "duato"),
    ("ndt-2x2x2", "dort_adaptive", "dort_adaptive"),
    ("ndt-2x2x2", "dort_adaptive", "table"),
    ("ndt-2x2x2", {"name": "dort_adaptive", "selection": "no_internal"}, "dort_adaptive"),
    ("ndt-3x2x3", {"name": "dort_adaptive", "selection": "round_robin"}, "dort_adaptive"),
    ("ndt-3x2x3", {"name": "dort_adaptive", "selection": "round_robin"}, "table"),
    (NDT_42, "dort_adaptive", "dort_adaptive"),
    ("ndt-2x4x2-plus", {"name": "dort_adaptive", "tie": "plus"}, "dort_adaptive"),
    pytest.param(
        NDT_333,
        "dort_adaptive",
        "dort_adaptive",
        marks=[pytest.mark.slow, pytest.mark.matrix],
        id="ndt-3x3x3-adaptive",
    ),
]


@pytest.mark.parametrize(
    "name, routing, kind",
    ADAPTIVE_ROUTINGS,
    ids=lambda v: v if isinstance(v, str) else v.get("selection") or v.get("tie") or v["name"],
)
def test_adaptive_and_tsdor_route_units_agree_with_the_routing_function(
    example, name, routing, kind
):
    """tsdor (one candidate, by traffic class) in priority order; duato and dort_adaptive
    (the default round-robin selection) as candidate sets."""
    if isinstance(name, dict):
        plan = compile_plan(load_spec({**name, "routing": routing}))
    else:
        plan = plan_with_routing(example, name, routing)
    assert plan.router.selection == "round-robin"
    assert RouteRows(plan, arithmetic=kind != "table").kind == kind
    check_every_destination(plan, arithmetic=kind != "table", ordered=plan.routing.name == "tsdor")


@pytest.mark.parametrize("name, routing", [("torus-4x4", "duato"), ("ndt-2x2x2", "dort_adaptive")])
def test_adaptive_route_units_refuse_first_free_selection(example, name, routing):
    """A mask cannot order the escape hop after higher VCs of its own port."""
    data = yaml.safe_load(example(name).read_text())
    data["routing"] = routing
    data["router"] = {"selection": "first-free"}
    plan = compile_plan(load_spec(data))
    with pytest.raises(ValueError, match=r"router.selection 'round-robin', not 'first-free'"):
        RouteRows(plan)


def head_value(head) -> int:
    """The head's bits (a sliced head is (value, width))."""
    return head[0] if isinstance(head, tuple) else head


def reachable_states(plan, routing, view):
    """Every (switch, in port, head) a packet reaches, over all injections and candidates."""
    states = set()
    todo = deque()
    for src in range(len(plan.endpoints)):
        for dst in range(len(plan.endpoints)):
            if src != dst:
                for choice in routing.injections(src, dst):
                    todo.append((choice.switch, choice.port, choice.head, dst))
    delivered = set()
    while todo:
        switch, port, head, dst = todo.popleft()
        if (switch, port, head) in states:
            continue
        states.add((switch, port, head))
        decision = routing.route(switch, port, 0, head)
        assert decision.hops, f"no route at {switch}.p{port} for {head}"
        for hop in decision.hops:
            link = view.out_link[switch][hop.port]
            if link is None:
                assert view.endpoint_at[switch, hop.port] == dst
                if isinstance(decision.head, tuple):
                    assert decision.head[1] == 0  # the whole sliced header was consumed
                delivered.add(dst)
            else:
                todo.append((link.dst.switch, link.dst.port, decision.head, dst))
    assert delivered == set(range(len(plan.endpoints)))
    return states


#: Znodes for the address routings besides the examples: non-power-of-two zones over 3 Znodes,
#: and a super node without level-1 side links, layered, backward-connected (R shrinks upward)
ADDRESSING_SPECS = {
    "snode-18": {"kind": "znode", "znodes": 3, "z": [3, 2], "R": [1, 2]},
    "snode-16-h0": {
        "kind": "znode",
        "znodes": 2,
        "z": [2, 2, 2],
        "R": [4, 2, 1],
        "psi": [1, 2, 1],
        "side": [0, 1, 1],
        "layers": 2,
    },
}


def plan_with_routing(example, name: str, routing: str | None):
    """A small plan, or an example, with ``routing`` instead of its own (None: its own)."""
    if routing is None:
        return small_plan(example, name)
    if name in ADDRESSING_SPECS:
        data = {"name": name, "topology": ADDRESSING_SPECS[name]}
    elif name in SMALL_SPECS:
        data = dict(SMALL_SPECS[name])
    else:
        data = yaml.safe_load(example(name).read_text())
    data["routing"] = routing
    return compile_plan(load_spec(data))


ZNODE_CASES = [
    pytest.param(
        name,
        routing,
        id=f"{name}-{routing or 'sliced'}",
        # a head per (source, destination) pair: 128 x 127 heads over 160 switches
        marks=[pytest.mark.slow, pytest.mark.matrix]
        if (name, routing) == ("snode-128", "source_destination")
        else [],
    )
    for routing in (None, "flat", "source_destination")
    for name in ("znode-16", "snode-16", "znode-8-layers", "znode-64", "snode-128")
] + [
    pytest.param(name, routing, id=f"{name}-{routing}")
    for name in ADDRESSING_SPECS
    for routing in ("flat", "source_destination")
]


@pytest.mark.parametrize("name, routing", ZNODE_CASES)
def test_znode_decoders_agree_with_the_routing_function(example, name, routing):
    plan = plan_with_routing(example, name, routing)
    view = PlanView(plan)
    routing = make_routing(view)
    assert RouteRows(plan).kind == plan.routing.name
    states = reachable_states(plan, routing, view)
    by_switch = {}
    for switch, port, head in states:
        by_switch.setdefault(switch, {}).setdefault(port, []).append(head)
    for switch, heads_by_port in sorted(by_switch.items()):
        ports = SwitchPorts.from_plan(view, switch)
        queries = {
            (p, v): sorted({head_value(h) for h in heads})
            for p, heads in heads_by_port.items()
            for v in range(ports.vcs[p])
        }
        answers = rtl_routes(plan, switch, queries)
        for p, heads in heads_by_port.items():
            for head in heads:
                for v in range(ports.vcs[p]):
                    assert answers[p, v, head_value(head)] == expected(
                        routing, switch, p, v, head
                    ), (switch, p, v, head)
    # every switch sees traffic, and the side links are used where there are several Znodes
    assert len(by_switch) == len(plan.switches)
    sides = {(s, p) for s, p, _ in states if plan.switches[s].ports[p].role == "side"}
    assert bool(sides) == (plan.routing.params["znodes"] > 1)


@pytest.mark.parametrize("name, head_bits", [("znode-64", 3), ("znode-64", 4), ("snode-16", 2)])
def test_sliced_head_flits_agree_with_the_routing_function(example, name, head_bits):
    """``router.head_bits`` on sliced: each route unit's ``flits`` (the head flits of the head
    at its input) and ``skip`` (those the next, shorter head no longer needs) are
    ``head_flits`` of the routing function's head lengths, for every reachable head."""
    if name in SMALL_SPECS:
        data = dict(SMALL_SPECS[name])
    else:
        data = yaml.safe_load(example(name).read_text())
    data["router"] = {"head_bits": head_bits}
    data["buffer_depth"] = 4
    plan = compile_plan(load_spec(data))
    view = PlanView(plan)
    routing = make_routing(view)
    by_switch = {}
    for switch, port, head in reachable_states(plan, routing, view):
        by_switch.setdefault(switch, {}).setdefault(port, set()).add(head)
    spans = set()
    for switch, heads_by_port in sorted(by_switch.items()):
        queries = {
            (p, 0): sorted({head_value(h) for h in heads}) for p, heads in heads_by_port.items()
        }
        answers = rtl_routes(plan, switch, queries)
        for p, heads in heads_by_port.items():
            for head in heads:
                decision = routing.route(switch, p, 0, head)
                flits = head_flits(routing.head_length(head), head_bits)
                skip = flits - head_flits(routing.head_length(decision.head), head_bits)
                assert answers[p, 0, head_value(head), "flits"] == (flits, skip), (switch, p, head)
                spans.add((flits, skip))
    assert max(flits for flits, _ in spans) > 1 and max(skip for _, skip in spans) > 0
