"""The spec's ``router:`` section: defaults, errors by key path, the plan's JSON round trip."""

from __future__ import annotations

import json

import pytest
import yaml

from zfabric import PlanError, SpecError, compile_plan, load_spec, plan_from_json
from zfabric.plan import PlanView
from zfabric.router_settings import (
    RouterSettings,
    lfsr_seed,
    lfsr_step,
    low_occupancy,
    random_pick,
)
from zfabric.routing import make_routing


def spec(router=None):
    data = {"name": "t", "topology": {"kind": "torus", "k": [4, 4]}}
    if router is not None:
        data["router"] = router
    return data


def test_no_router_section_gives_the_documented_defaults():
    """docs/specs.md, router section: stages 1, separable, round-robin, injection and
    ejection VCs settled by the plan's links (2 each on the 2-VC torus)."""
    settings = load_spec(spec()).router
    assert settings == RouterSettings(
        stages=1,
        allocator="separable",
        selection="round-robin",
        injection_vcs="auto",
        ejection_vcs="auto",
    )
    assert load_spec(spec({})).router == settings
    assert compile_plan(load_spec(spec())).router == RouterSettings(injection_vcs=2, ejection_vcs=2)


def test_block_ram_buffers_reach_the_plan_and_its_json():
    plan = compile_plan(load_spec(spec({"buffers": "block-ram"})))
    assert plan.router.buffers == "block-ram"
    assert plan_from_json(plan.to_json()).router == plan.router
    data = json.loads(compile_plan(load_spec(spec())).to_json())
    del data["router"]["buffers"]  # plans from before the key: the asynchronous-read memories
    assert plan_from_json(json.dumps(data)).router.buffers == "distributed"
    with pytest.raises(ValueError, match="block-ram does not take head_bits"):
        RouterSettings(buffers="block-ram", head_bits=4)


def test_settings_reach_the_plan():
    router = {"stages": 2, "allocator": "separable-2", "selection": "round-robin"}
    plan = compile_plan(load_spec(spec(router)))
    assert plan.router == RouterSettings(2, "separable-2", "round-robin", 2, 2)
    plan = compile_plan(load_spec(spec({"injection_vcs": 3, "ejection_vcs": 4})))
    assert plan.router == RouterSettings(injection_vcs=3, ejection_vcs=4)
    assert plan_from_json(plan.to_json()).router == plan.router


@pytest.mark.parametrize(
    "name, topology, router, injection_vcs, ejection_vcs",
    [
        ("torus-4x4", {}, None, 2, 2),  # 2 VCs on every link
        ("mesh-4x4", {}, None, 2, 2),
        ("ndt-2x2x2", {}, None, 2, 2),  # 2 external, 4 internal
        ("znode-64", {}, None, 1, 1),  # 1-VC links
        ("znode-64", {"vcs": 2}, None, 2, 2),
        ("torus-4x4", {}, {"ejection_vcs": 1}, 2, 1),  # named: as named
        ("torus-4x4", {}, {"injection_vcs": 1}, 1, 2),
        ("znode-64", {}, {"injection_vcs": "auto", "ejection_vcs": "auto"}, 1, 1),
        ("znode-64", {}, {"injection_vcs": 4, "ejection_vcs": 3}, 4, 3),
    ],
)
def test_endpoint_vcs_auto_follow_the_links(
    example, name, topology, router, injection_vcs, ejection_vcs
):
    """docs/specs.md: ``auto`` is 2 when every switch-to-switch link has 2 VCs or more."""
    data = yaml.safe_load(example(name).read_text())
    data["topology"].update(topology)
    if router is not None:
        data["router"] = router
    plan = compile_plan(load_spec(data))
    assert plan.router.injection_vcs == injection_vcs
    assert plan.router.ejection_vcs == ejection_vcs
    routing = make_routing(PlanView(plan))  # and every delivery may take any of them
    assert routing.local_hop(0, 0).vcs == tuple(range(ejection_vcs))


@pytest.mark.parametrize("key", ["injection_vcs", "ejection_vcs"])
def test_plan_json_without_injection_or_ejection_vcs_has_one(example, key):
    """Plans from before the key had one VC out of (into) every endpoint."""
    plan = compile_plan(load_spec(example("torus-4x4")))
    data = plan.to_dict()
    del data["router"][key]
    assert getattr(plan_from_json(json.dumps(data)).router, key) == 1


@pytest.mark.parametrize(
    "router, message",
    [
        ([1], r"^router: must be a mapping, got a list \[1\]$"),
        ({"stages": 6}, r"^router\.stages: must be one of 1, 2, 3, 4, 5, got 6$"),
        ({"stages": True}, r"^router\.stages: must be one of 1, 2, 3, 4, 5, got True$"),
        (
            {"stages": 4, "allocator": "separable-2"},
            r"^router\.allocator: separable-2 needs stages 1, 2 or 3$",
        ),
        (
            {"stages": 5, "allocator": "separable-2"},
            r"^router\.allocator: separable-2 needs stages 1, 2 or 3$",
        ),
        (
            {"allocator": "wavefront"},
            r"^router\.allocator: must be one of separable, separable-2, got 'wavefront'",
        ),
        ({"selection": "round-robbin"}, r"^router\.selection: .*did you mean 'round-robin'\?$"),
        ({"selections": "first-free"}, r"^router\.selections: unknown key .*'selection'\?$"),
        ({"selection": "occupency"}, r"^router\.selection: .*did you mean 'occupancy'\?$"),
        (
            {"injection_vcs": 0},
            r"^router\.injection_vcs: must be auto or an integer in 1\.\.16, got 0$",
        ),
        ({"injection_vcs": "2"}, r"^router\.injection_vcs: must be auto or an integer .*'2'$"),
        (
            {"ejection_vcs": 0},
            r"^router\.ejection_vcs: must be auto or an integer in 1\.\.16, got 0$",
        ),
        ({"ejection_vcs": "two"}, r"^router\.ejection_vcs: must be auto or an integer .*'two'$"),
        ({"head_bits": 0}, r"^router\.head_bits: must be an integer in 1\.\.1024, got 0$"),
        ({"head_bits": True}, r"^router\.head_bits: must be an integer in 1\.\.1024, got True$"),
    ],
)
def test_errors_name_path_and_value(router, message):
    with pytest.raises(SpecError, match=message):
        load_spec(spec(router))


@pytest.mark.parametrize("name", ["torus-4x4", "znode-64"])
def test_json_round_trip_is_exact_with_router_settings(example, name):
    data = yaml.safe_load(example(name).read_text())
    data["router"] = {"allocator": "separable-2", "selection": "round-robin"}
    plan = compile_plan(load_spec(data))
    again = plan_from_json(plan.to_json())
    assert again == plan and again.router.selection == "round-robin"
    assert again.to_json() == plan.to_json()


@pytest.mark.parametrize("depth, least", [(1, 1), (2, 2), (3, 2), (4, 3), (5, 3), (8, 5)])
def test_low_occupancy_is_more_than_half_the_buffer_free(depth, least):
    assert low_occupancy(depth) == least
    assert 2 * least > depth >= 2 * (least - 1)


def test_occupancy_selection_round_trips(example):
    data = yaml.safe_load(example("torus-4x4").read_text())
    data["router"] = {"selection": "occupancy", "stages": 3}
    plan = compile_plan(load_spec(data))
    assert plan_from_json(plan.to_json()).router == RouterSettings(
        selection="occupancy", stages=3, injection_vcs=2, ejection_vcs=2
    )


def test_plan_json_without_router_is_the_switch_it_was_written_for(example):
    """Plans from before the router section knew one switch: first-free selection."""
    plan = compile_plan(load_spec(example("torus-4x4")))
    data = plan.to_dict()
    del data["router"]
    assert plan_from_json(json.dumps(data)).router == RouterSettings(selection="first-free")


def test_injection_vcs_leave_the_deadlock_proof_and_hops_unchanged(example):
    """No routing function reads the VC of a local input: walking every local VC finds the
    same channel dependency graph and hop counts."""
    from zfabric import analyse_routing

    for name in ("torus-4x4", "znode-64"):
        data = yaml.safe_load(example(name).read_text())
        one = analyse_routing(compile_plan(load_spec(data)))
        data["router"] = {"injection_vcs": 3}
        three = analyse_routing(compile_plan(load_spec(data)))
        assert three.deadlock_free and one.deadlock_free
        assert set(three.cdg.edges) == set(one.cdg.edges)
        assert three.max_hops == one.max_hops


def test_ejection_vcs_leave_the_dependency_graph_unchanged(example):
    """A delivery ends a route: whichever ejection VC it takes, nothing waits on it, so the
    graph, the proof and the hop counts stay as they were."""
    from zfabric import analyse_routing

    data = yaml.safe_load(example("torus-4x4").read_text())
    data["router"] = {"ejection_vcs": 1}
    one = analyse_routing(compile_plan(load_spec(data)))
    data["router"] = {"ejection_vcs": 3}
    three = analyse_routing(compile_plan(load_spec(data)))
    assert one.deadlock_free and three.deadlock_free and three.max_hops == one.max_hops
    assert set(three.cdg.edges) == set(one.cdg.edges)


def test_a_delivery_on_a_missing_ejection_vc_is_refused(example, monkeypatch):
    from zfabric import analyse_routing
    from zfabric.routing.base import Hop, RoutingFunction

    plan = compile_plan(load_spec(spec({"ejection_vcs": 1})))
    original = RoutingFunction.local_hop
    monkeypatch.setattr(
        RoutingFunction, "local_hop", lambda self, s, d: Hop(original(self, s, d).port, (0, 1))
    )
    with pytest.raises(PlanError, match=r"delivery on VCs \(0, 1\), the ejection link has 1$"):
        analyse_routing(plan)


@pytest.mark.parametrize("name", ["injection_vcs", "ejection_vcs"])
@pytest.mark.parametrize("vcs", [0, 17, True, 2.5])
def test_router_settings_refuse_bad_vc_counts(name, vcs):
    with pytest.raises(ValueError, match=f"{name} must be an integer in 1..16"):
        RouterSettings(**{name: vcs})


def test_bad_router_in_plan_json_is_a_plan_error(example):
    data = compile_plan(load_spec(example("torus-4x4"))).to_dict()
    data["router"] = {"allocator": "wavefront"}
    with pytest.raises(PlanError, match=r"malformed plan: router .*'wavefront'"):
        plan_from_json(json.dumps(data))


def ports_offered(plan) -> set[int]:
    """How many output ports the routing offers at each decision a packet can meet, walking
    every source's every injection to every destination through every candidate."""
    view = PlanView(plan)
    routing = make_routing(view)
    counts, n = set(), len(plan.endpoints)
    for src in range(n):
        for dst in range(n):
            if src == dst:
                continue
            stack = [(i.switch, i.port, 0, i.head) for i in routing.injections(src, dst)]
            while stack:
                s, p, v, head = stack.pop()
                decision = routing.route(s, p, v, head)
                counts.add(len({hop.port for hop in decision.hops}))
                for hop in decision.hops:
                    link = view.out_link[s][hop.port]
                    if link is not None:
                        stack += [
                            (link.dst.switch, link.dst.port, w, decision.head) for w in hop.vcs
                        ]
    return counts


@pytest.mark.parametrize(
    "name, topology, routing, one_port",
    [
        ("torus", {"kind": "torus", "k": [4, 4]}, "dor", True),
        ("mesh", {"kind": "mesh", "k": [3, 3], "vcs": 2}, "dor", True),
        ("ndt", {"kind": "ndt", "k": [2, 2, 2]}, "dort", True),
        ("ndt-tsdor", {"kind": "ndt", "k": [2, 2, 2]}, "tsdor", True),
        ("torus-duato", {"kind": "torus", "k": [4, 4]}, "duato", False),
        ("tree-updown", {"kind": "kary_ntree", "k": 2, "n": 3}, "updown", True),
        ("tree-sliced", {"kind": "kary_ntree", "k": 2, "n": 3}, "sliced", False),
    ],
)
def test_one_port_routings_offer_one_port_at_every_decision(name, topology, routing, one_port):
    """Switches build first-free selection for these (both rules pick alike there)."""
    plan = compile_plan(load_spec({"name": name, "topology": topology, "routing": routing}))
    counts = ports_offered(plan)
    assert make_routing(PlanView(plan)).one_port is one_port
    assert (counts == {1}) is one_port, counts


def test_the_random_selections_lfsr_is_maximal_from_every_ports_seed():
    """Every nonzero 16-bit state once before the first comes back (enumerated), so each input
    port's pointer sequence repeats only after 65,535 heads, whatever its seed."""
    for port in range(8):
        first = state = lfsr_seed(port)
        seen = set()
        while True:
            assert state not in seen and state != 0
            seen.add(state)
            state = lfsr_step(state)
            if state == first:
                break
        assert len(seen) == 2**16 - 1


@pytest.mark.parametrize("usable", [1, 2, 3, 4, 5, 8])
def test_a_random_pick_draws_every_usable_port_about_equally(usable):
    """Over the LFSR's whole period each of the usable ports is drawn 65,535 / n times, within
    the low byte's rounding: at most 256 mod n of the 256 byte values get one draw more, and
    state 0 never occurs (enumerated, not sampled)."""
    counts = [0] * usable
    state = lfsr_seed(0)
    for _ in range(2**16 - 1):
        counts[random_pick(state, usable)] += 1
        state = lfsr_step(state)
    assert sum(counts) == 2**16 - 1
    assert max(counts) - min(counts) <= 256 + 1
    assert all(abs(c - (2**16 - 1) / usable) <= 256 for c in counts)


def test_random_selection_is_a_spec_setting():
    assert load_spec(spec({"selection": "random"})).router.selection == "random"
