"""The analysis walks one route-graph node per routing state key (``RoutingFunction.state_key``):
the same figures as a walk over whole (switch, input port, VC, head) states, and the key really
is all ``route`` reads, checked exhaustively on small fabrics."""

from __future__ import annotations

import math
from collections import defaultdict

import pytest
import yaml
from zfabric.sim.analytic import pattern_limits
from zfabric.sim.traffic import TrafficConfig

from zfabric import compile_plan, destinations, load_spec
from zfabric.plan import PlanView
from zfabric.routing import make_routing

HYPERZ = ("deter", "odim", "cliod", "aliod")
PATTERNS = ("uniform", "transpose", "bit-complement", "hotspot")


def plan_of(example, name: str, routing: str | dict | None = None, **router):
    data = yaml.safe_load(example(name).read_text())
    if routing:
        data["routing"] = routing
    if router:
        data["router"] = router
    return compile_plan(load_spec(data))


def whole_states(monkeypatch) -> None:
    """Make the analysis key every state by itself: the walk over whole states."""

    def make(view):
        rf = make_routing(view)
        rf.state_key = lambda *state: state
        return rf

    monkeypatch.setattr(destinations, "make_routing", make)
    monkeypatch.setattr(destinations, "_ROUTING", None)  # the plan's routing, made again


def assert_same_limits(plan, pattern: str, monkeypatch) -> None:
    config = TrafficConfig(pattern=pattern, packet_length=4)
    keyed = pattern_limits(plan, config)
    with monkeypatch.context() as patch:
        whole_states(patch)
        whole = pattern_limits(plan, config)
    # the zero-load latency adds the same integers in the same order; the loads are the same
    # shares summed in another order (one sum per key instead of per state)
    assert keyed.zero_load_latency == whole.zero_load_latency
    assert keyed.channel_load.busiest == whole.channel_load.busiest
    for name in ("max_load", "bound", "ejection_load"):
        assert math.isclose(
            getattr(keyed.channel_load, name), getattr(whole.channel_load, name), rel_tol=1e-12
        ), name


def assert_key_is_all_route_reads(plan) -> None:
    """Every state reachable from any injection decides as the first state seen of its key."""
    view = PlanView(plan)
    rf = make_routing(view)
    first: dict = {}
    seen: set = set()
    stack = [
        (i.switch, i.port, 0, i.head)
        for src in range(len(plan.endpoints))
        for dst in range(len(plan.endpoints))
        if src != dst
        for i in rf.injections(src, dst)
    ]
    per_key = defaultdict(int)
    while stack:
        state = stack.pop()
        if state in seen:
            continue
        seen.add(state)
        decision = rf.route(*state)
        key = rf.state_key(*state)
        per_key[key] += 1
        assert decision == first.setdefault(key, (state, decision))[1], (state, first[key][0])
        for hop in decision.hops:
            link = view.out_link[state[0]][hop.port]
            if link is not None:
                stack += [(link.dst.switch, link.dst.port, w, decision.head) for w in hop.vcs]
    assert len(seen) > len(per_key)  # the keys do merge states (else this checks nothing)


@pytest.mark.parametrize("routing", HYPERZ)
@pytest.mark.parametrize("name", ["hyperz-h2", "hyperz-d3", "hyperz-hyperx-4x4"])
def test_hyperz_routes_read_only_switch_and_destination(example, name, routing):
    plan = plan_of(example, name, routing)
    rf = make_routing(PlanView(plan))
    assert not rf.uses_input_port and not rf.uses_input_vc
    assert_key_is_all_route_reads(plan)


@pytest.mark.parametrize(
    "name, routing",
    [
        ("znode-64", "sliced"),
        ("znode-64", "updown"),
        ("ndt-2x2x2", None),
        # fixed classes key on (switch, head) alone; the balanced default's keys, which read the
        # input port and VC class, merge states only with several VCs per class (below)
        ("torus-4x4", {"name": "dor", "vc_classes": "fixed"}),
    ],
)
def test_other_routings_keys_are_all_route_reads(example, name, routing):
    assert_key_is_all_route_reads(plan_of(example, name, routing))


def test_balanced_dor_keys_are_all_route_reads():
    # balanced dateline classes read the input port and its VC's class (two VCs per class:
    # the VCs of a class share a key)
    spec = {
        "name": "torus-4x3-vcs2",
        "topology": {"kind": "torus", "k": [4, 3], "vcs": 2},
        "routing": {"name": "dor", "vc_classes": "balanced"},
    }
    assert_key_is_all_route_reads(compile_plan(load_spec(spec)))


@pytest.mark.parametrize("pattern", PATTERNS)
@pytest.mark.parametrize("routing", HYPERZ)
def test_keyed_walk_gives_the_whole_state_walks_limits_on_hyperz(
    example, routing, pattern, monkeypatch
):
    assert_same_limits(plan_of(example, "hyperz-h2", routing), pattern, monkeypatch)


@pytest.mark.parametrize(
    "name, routing, router",
    [
        ("hyperz-d3", None, {}),
        ("hyperz-hyperx-4x4", None, {}),
        ("znode-64", "updown", {}),
        ("znode-64", "sliced", {"head_bits": 3}),  # heads shrink: per-key head flits
        ("ndt-2x2x2", None, {}),
        ("torus-4x4", None, {}),
    ],
)
def test_keyed_walk_gives_the_whole_state_walks_limits(example, name, routing, router, monkeypatch):
    plan = plan_of(example, name, routing, **router)
    for pattern in ("uniform", "bit-complement"):
        assert_same_limits(plan, pattern, monkeypatch)


@pytest.mark.matrix
@pytest.mark.parametrize(
    "name",
    [
        "snode-128",
        "torus-8x8-duato",
        "ndt-4x4x4",
        "ndt-4x4x4-adaptive",
        "ndt-4x4x4-tsdor",
        "mesh-4x4",
        "ring-2",
        "torus-2x2",
        "ndt-2x2",
    ],
)
def test_keyed_walk_gives_the_whole_state_walks_limits_on_every_example(example, name, monkeypatch):
    plan = plan_of(example, name)
    for pattern in (*PATTERNS, "bit-reversal", "zipf"):
        try:
            assert_same_limits(plan, pattern, monkeypatch)
        except ValueError as error:  # a permutation that maps every source onto itself
            assert "no flows" in str(error)
