"""FabricPlan: exact JSON round trip and builder invariants."""

from __future__ import annotations

import ast
import dataclasses
import importlib
import json
import sys
from pathlib import Path

import pytest

import zfabric.cli
from zfabric import PlanError, analyse_routing, compile_plan, load_spec, plan_from_json
from zfabric.plan import PlanBuilder, Port


@pytest.mark.parametrize("name", ["torus-4x4", "ndt-2x2x2", "znode-64", "snode-128"])
def test_json_round_trip_is_exact(example, name):
    plan = compile_plan(load_spec(example(name)))
    again = plan_from_json(plan.to_json())
    assert again == plan
    assert again.to_json() == plan.to_json()


@pytest.mark.parametrize("name", ["torus-4x4", "znode-64", "hyperz-h2", "transit-full-64"])
def test_the_json_holds_every_field_as_asdict_copies_it(example, name):
    plan = compile_plan(load_spec(example(name)))
    expected = json.loads(json.dumps(dataclasses.asdict(plan)))
    for endpoint in expected["endpoints"]:
        if not endpoint["modes"]:  # two-way attachments only: written without modes
            del endpoint["modes"]
    assert json.loads(plan.to_json()) == expected


def test_every_channel_has_its_reverse_and_ports_are_used_once(example):
    plan = compile_plan(load_spec(example("torus-4x4")))
    pairs = {(link.src, link.dst) for link in plan.links}
    assert all((dst, src) in pairs for src, dst in pairs)
    outputs = [link.src for link in plan.links]
    assert len(outputs) == len(set(outputs))


def test_builder_refuses_a_port_used_twice():
    builder = PlanBuilder()
    a = builder.add_switch("a", {}, [Port("local"), Port("external", 0, 1)])
    b = builder.add_switch("b", {}, [Port("local"), Port("external", 0, -1)])
    builder.connect(a, 1, b, 1, vcs=1)
    with pytest.raises(PlanError, match=r"^a\.p1 is used twice$"):
        builder.connect(a, 1, b, 1, vcs=1)


def one_way_ring(unused: bool = True):
    """Three switches joined by one-way channels s_i.p1 -> s_(i+1).p1; endpoint i injects into
    s_i.p0 and receives from s_(i+1).p0; s_i.p2 faces nothing either way."""
    builder = PlanBuilder()
    ids = [
        builder.add_switch(f"s{i}", {}, [Port("local"), Port("down"), Port("down")])
        for i in range(3)
    ]
    for i in ids:
        builder.channel(i, 1, (i + 1) % 3, 1, vcs=1)
        builder.attach(i, i, 0, mode="in")
        builder.attach(i, (i + 1) % 3, 0, mode="out")
        if unused:
            builder.leave_unused(i, 2, "in")
            builder.leave_unused(i, 2, "out")
    return builder


def sealed(builder):
    from zfabric.plan import RoutingSpec

    return builder.build(name="ring", topology="ring", topology_params={}, routing=RoutingSpec("x"))


def test_one_way_channels_and_split_attachments():
    from zfabric.metrics import physical_links
    from zfabric.plan import PlanView

    plan = sealed(one_way_ring())
    assert len(plan.links) == physical_links(plan) == 3  # no channel has a reverse
    endpoint = plan.endpoints[0]
    assert [a.switch for a in endpoint.attachments] == [0, 1]
    assert endpoint.modes == ("in", "out")
    assert (endpoint.injects(0), endpoint.ejects(0), endpoint.injects(1), endpoint.ejects(1)) == (
        True,
        False,
        False,
        True,
    )
    assert [a.switch for a in endpoint.ejections] == [1]
    view = PlanView(plan)
    assert view.ejection_at == {(1, 0): 0, (2, 0): 1, (0, 0): 2}
    again = plan_from_json(plan.to_json())
    assert again == plan


def test_a_torus_plan_has_pairs_and_no_modes(example):
    from zfabric.metrics import physical_links

    plan = compile_plan(load_spec(example("torus-4x4")))
    assert physical_links(plan) == len(plan.links) // 2
    assert all(e.modes == () and e.ejections == e.attachments for e in plan.endpoints)
    assert '"modes"' not in plan.to_json()  # the plan JSON of two-way endpoints is unchanged


def test_an_undeclared_unused_side_is_refused():
    with pytest.raises(PlanError, match=r"^s0\.p2 \(down\) input is unused \(declare it"):
        sealed(one_way_ring(unused=False))


def test_a_side_is_claimed_once():
    builder = one_way_ring()
    with pytest.raises(PlanError, match=r"^s0\.p1 output is used twice$"):
        builder.channel(0, 1, 2, 2, vcs=1)


def test_both_sides_of_a_port_to_one_endpoint_are_one_attachment():
    builder = PlanBuilder()
    a = builder.add_switch("a", {}, [Port("down")])
    builder.attach(0, a, 0, mode="in")
    builder.attach(0, a, 0, mode="out")
    assert sealed(builder).endpoints[0].modes == ()


def ring_routing(**mistakes):
    """Around the one-way ring to the destination's ejection switch (dst + 1 mod 3);
    ``mistakes`` plant what the proof must catch (``out_port``, ``inject_port``)."""
    from zfabric.routing import Decision, Hop, Injection, RoutingFunction

    class Ring(RoutingFunction):
        def injections(self, src, dst):
            return (Injection(src, mistakes.get("inject_port", 0), dst),)

        def route(self, switch, in_port, in_vc, head):
            if switch == (head + 1) % 3:
                return Decision((Hop(0, (0,)),), head)
            return Decision((Hop(mistakes.get("out_port", 1), (0,)),), head)

    Ring.name = "x"
    return Ring


def test_the_proof_walks_one_way_channels(monkeypatch):
    from zfabric.routing import ROUTINGS

    monkeypatch.setitem(ROUTINGS, "x", ring_routing())
    analysis = analyse_routing(sealed(one_way_ring()))
    # endpoint i injects at s_i: to i + 1 two hops (it receives at s_(i+2)), to i + 2 none
    assert analysis.min_hops == analysis.max_hops == {2: 3, 0: 3}
    assert analysis.cycle is not None  # one VC around a one-way ring


@pytest.mark.parametrize(
    "mistake, message",
    [
        ({"out_port": 2}, r"^route to ep0 takes s2\.p2, an output that faces nothing$"),
        ({"inject_port": 1}, r"^ep1 injects at s1\.p1, not an input it is attached to$"),
    ],
)
def test_the_proof_refuses_unused_outputs_and_foreign_inputs(monkeypatch, mistake, message):
    from zfabric.routing import ROUTINGS

    monkeypatch.setitem(ROUTINGS, "x", ring_routing(**mistake))
    with pytest.raises(PlanError, match=message):
        analyse_routing(sealed(one_way_ring()))


def test_malformed_plan_json_is_a_plan_error():
    with pytest.raises(PlanError, match="malformed plan"):
        plan_from_json('{"name": "x"}')


COMPILER = ["zfabric", "zfabric.spec", "zfabric.plan", "zfabric.deadlock", "zfabric.metrics"]
COMPILER += ["zfabric.topologies", "zfabric.routing", "zfabric.optimise", "zfabric.fields"]
COMPILER += ["zfabric.report", "zfabric.router_settings", "zfabric.traffic_spec"]
ABOVE = ("zfabric.cli", "zfabric.hdl", "zfabric.sim", "zfabric.boards")


def _fresh_imports(monkeypatch) -> None:
    """Forget every zfabric module (restored afterwards) and make amaranth unimportable."""
    monkeypatch.setitem(sys.modules, "amaranth", None)
    for module in [m for m in sys.modules if m == "zfabric" or m.startswith("zfabric.")]:
        monkeypatch.delitem(sys.modules, module)


def test_compiler_imports_nothing_above_it(monkeypatch):
    _fresh_imports(monkeypatch)
    for name in COMPILER:  # an amaranth import would raise ImportError here
        importlib.import_module(name)
    assert [m for m in sys.modules if m.startswith(ABOVE)] == []


def test_the_command_line_starts_without_amaranth(monkeypatch):
    _fresh_imports(monkeypatch)
    import zfabric.cli

    zfabric.cli.build_parser()  # registering every subcommand imports no RTL
    assert [m for m in sys.modules if m.startswith(("zfabric.hdl", "zfabric.sim.fast"))] == []


#: the command-line modules every command shares: argument types and output rules, and the
#: traffic arguments and the runs they drive; a command module imports these and the library
CLI_SHARED = {"common", "experiment"}


def test_commands_call_the_library_not_each_other():
    """A command parses, calls library functions and prints: what one command does that
    another needs lives in the library (or the shared CLI modules), so a notebook can call it."""
    folder = Path(zfabric.cli.__file__).parent
    commands = {path.stem for path in folder.glob("*.py")} - CLI_SHARED - {"__init__", "__main__"}
    found = []
    for name in sorted(commands):
        tree = ast.parse((folder / f"{name}.py").read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                imported = (node.module or "").split(".")[0]
                if imported in commands or not node.module:
                    found.append(f"{name} imports .{node.module or ''}")
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("zfabric.cli"):
                found.append(f"{name} imports {node.module}")
    assert found == []
