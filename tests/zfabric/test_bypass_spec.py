"""The straight bypass's setting (docs/microarchitecture.md, *Straight bypass*): what it
combines with, refusals in one line naming ``router.bypass`` (exit 2, no output), the plan's
key, and the straight pairs of torus and mesh switches."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import yaml
from zfabric.hdl.fabric_docs import latency_formula

from zfabric import compile_plan, load_spec
from zfabric.bypass import straight_outputs
from zfabric.cli import main
from zfabric.errors import PlanError
from zfabric.plan import PlanView, plan_from_json
from zfabric.router_settings import RouterSettings

TORUS = {"name": "t", "topology": {"kind": "torus", "k": [4, 4]}, "routing": "dor"}


def write(tmp_path, **keys) -> str:
    path = tmp_path / "t.yaml"
    path.write_text(yaml.safe_dump({**TORUS, **keys}))
    return str(path)


@pytest.mark.parametrize(
    "keys, words",
    [
        ({"router": {"bypass": "straight", "stages": 2}}, "needs stages 1, not 2"),
        (
            {"router": {"bypass": "straight", "switching": "cut_through"}},
            "needs switching wormhole, not cut_through",
        ),
        ({"router": {"bypass": "straight", "head_bits": 4}}, "cannot be used with head_bits"),
        (
            {"router": {"bypass": "straight", "buffers": "block-ram"}},
            "needs buffers distributed, not block-ram",
        ),
        (
            {"router": {"bypass": "straight", "selection": "occupancy"}},
            "cannot be used with selection occupancy",
        ),
        (
            {
                "router": {"bypass": "straight"},
                "routing": "duato",
                "topology": {"kind": "torus", "k": [4, 4], "vcs": 2},
            },
            "needs routing dor, not duato",
        ),
        (
            {
                "router": {"bypass": "straight"},
                "topology": {"kind": "mesh", "k": [3, 3]},
                "faults": {"links": [{"between": ["sw0_0", "sw1_0"]}]},
            },
            "cannot be used with faults (a degraded fabric may leave dimension order for"
            " up*/down* tables)",
        ),
    ],
)
def test_a_setting_the_bypass_does_not_take_exits_2_in_one_line(tmp_path, keys, words):
    spec = write(tmp_path, **keys)
    before = sorted(p.name for p in tmp_path.iterdir())
    done = subprocess.run(
        [sys.executable, "-m", "zfabric.cli", "verilog", spec, "-o", "out"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert done.returncode == 2 and done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0] == f"zfabric: error: router.bypass: straight {words}"
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing written


def test_an_unknown_bypass_value_is_refused(tmp_path, capsys):
    assert main(["check", write(tmp_path, router={"bypass": "all"})]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("zfabric: error: router.bypass: ")
    assert "'all'" in err[0]


def test_check_names_the_bypass_in_its_router_line(tmp_path, capsys):
    assert main(["check", write(tmp_path, router={"bypass": "straight"})]) == 0
    assert "straight bypass" in capsys.readouterr().out
    assert main(["check", write(tmp_path)]) == 0
    assert "bypass" not in capsys.readouterr().out


def test_the_plan_carries_the_key_and_refuses_it_under_another_routing():
    data = compile_plan(load_spec({**TORUS, "router": {"bypass": "straight"}})).to_dict()
    assert data["router"]["bypass"] == "straight"
    assert compile_plan(load_spec(TORUS)).to_dict()["router"]["bypass"] == "none"
    assert plan_from_json(json.dumps(data)).router.bypasses
    data["routing"]["name"] = "duato"  # edited past what the spec reader refuses
    with pytest.raises(PlanError, match="malformed plan: router bypass straight needs routing"):
        plan_from_json(json.dumps(data))


def test_straight_pairs_of_torus_and_mesh_switches():
    """A torus switch feeds each ring input straight to the ring output of the same dimension
    facing the other way: 4 pairs, each output once. A mesh corner has one input per
    dimension, whose straight output leads off the mesh: no pair; an edge switch of the 4x4
    mesh keeps the pair along its edge."""
    plan = compile_plan(load_spec({**TORUS, "router": {"bypass": "straight"}}))
    view = PlanView(plan)
    for s, pairs in enumerate(straight_outputs(view)):
        assert len(pairs) == 4 and sorted(pairs.values()) == sorted(pairs)
        for p, o in pairs.items():
            came, goes = view.switches[s].ports[p], view.switches[s].ports[o]
            assert (came.dim, came.sign) == (goes.dim, -goes.sign)
    mesh = {**TORUS, "topology": {"kind": "torus", "k": [4, 4], "wrap": False}}
    plan = compile_plan(load_spec({**mesh, "router": {"bypass": "straight"}}))
    view = PlanView(plan)
    counts = {
        tuple(view.switches[s].position["coords"]): len(pairs)
        for s, pairs in enumerate(straight_outputs(view))
    }
    assert counts[(0, 0)] == 0 and counts[(1, 0)] == 2 and counts[(1, 1)] == 4
    # without the setting: no pair anywhere
    assert all(not pairs for pairs in straight_outputs(PlanView(compile_plan(load_spec(TORUS)))))


def test_the_analytic_models_refuse_the_bypass(tmp_path, capsys):
    """The thesis's models take every hop through the buffers: a bypass fabric is refused,
    not given a formula one cycle a straight hop too slow."""
    assert main(["analytic", write(tmp_path, router={"bypass": "straight"})]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        "zfabric: error: router.bypass: straight: the analytic models take every hop through"
        " the switch's buffers"
    ]


def test_the_generated_readme_formula_takes_the_straight_switches_off():
    """The contract's zero-load latency with the bypass: 2H + L + 2 less one cycle per switch
    gone straight through (a lone flit crosses it in the cycle it arrives)."""
    assert latency_formula(RouterSettings()) == "2·H + L + 2"
    assert latency_formula(RouterSettings(bypass="straight")) == "2·H + L + 2 − S"
