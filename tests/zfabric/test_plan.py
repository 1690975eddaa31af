"""FabricPlan: exact JSON round trip and builder invariants."""

from __future__ import annotations

import ast
import importlib
import sys
from pathlib import Path

import pytest

import zfabric.cli
from zfabric import PlanError, compile_plan, load_spec, plan_from_json
from zfabric.plan import PlanBuilder, Port


@pytest.mark.parametrize("name", ["torus-4x4", "ndt-2x2x2", "znode-64", "snode-128"])
def test_json_round_trip_is_exact(example, name):
    plan = compile_plan(load_spec(example(name)))
    again = plan_from_json(plan.to_json())
    assert again == plan
    assert again.to_json() == plan.to_json()


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
