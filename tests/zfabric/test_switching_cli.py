"""Switching modes at the command line: bad settings exit 2 with one line naming the key and
the value, and ``check`` names a mode other than wormhole in its router line."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import yaml

from zfabric import compile_plan, load_spec
from zfabric.cli import main
from zfabric.errors import PlanError
from zfabric.plan import plan_from_json

TORUS = {"name": "t", "topology": {"kind": "torus", "k": [4, 4]}}


def write(tmp_path, **keys) -> str:
    path = tmp_path / "t.yaml"
    path.write_text(yaml.safe_dump({**TORUS, **keys}))
    return str(path)


def test_buffers_shallower_than_the_packet_exit_2_in_one_line(tmp_path):
    spec = write(
        tmp_path,
        buffer_depth=4,
        traffic={"packet_length": 6},
        router={"switching": "cut_through"},
    )
    before = sorted(p.name for p in tmp_path.iterdir())
    done = subprocess.run(
        [sys.executable, "-m", "zfabric.cli", "check", spec, "--plan-out", "plan.json"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
    )
    assert done.returncode == 2 and done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("zfabric: error: buffer_depth: 4 ")
    assert "longest packet (6 flits)" in lines[0] and "cut_through" in lines[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # no plan written


@pytest.mark.parametrize(
    "keys, where, value",
    [
        ({"router": {"switching": "virtual"}}, "router.switching", "'virtual'"),
        (
            {"router": {"switching": "cut_through", "head_bits": 4}},
            "router.head_bits",
            "cut_through",
        ),
        (
            {"buffer_depth": 3, "router": {"switching": "store_and_forward"}},
            "buffer_depth",
            "3 ",
        ),
    ],
)
def test_bad_switching_settings_exit_2(tmp_path, capsys, keys, where, value):
    assert main(["check", write(tmp_path, **keys)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"zfabric: error: {where}: ") and value in err[0]


def test_a_packet_length_flag_longer_than_the_buffers_hold_exits_2(tmp_path, capsys):
    spec = write(tmp_path, router={"switching": "cut_through"})  # 4-flit packets and buffers
    assert main(["simulate", spec, "--packet-length", "5", "--cycles", "10"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("zfabric: error: --packet-length: 5: ")
    trace = tmp_path / "t.trace"
    trace.write_text("0 0 1 4\n3 1 2 6\n")
    assert main(["simulate", spec, "--trace", str(trace)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"{trace}:2: length 6 is above the 4 flits" in err[0]


@pytest.mark.parametrize(
    "switching, shown",
    [
        ("wormhole", None),
        ("cut_through", "cut-through switching of packets up to 4 flits"),
        ("store_and_forward", "store-and-forward switching of packets up to 4 flits"),
    ],
)
def test_check_names_the_switching_mode_in_its_router_line(tmp_path, capsys, switching, shown):
    assert main(["check", write(tmp_path, router={"switching": switching})]) == 0
    router = [line for line in capsys.readouterr().out.splitlines() if "router:" in line]
    assert len(router) == 1
    if shown is None:
        assert "switching" not in router[0]
    else:
        assert router[0].endswith(shown)


def test_the_wormhole_analytic_models_refuse_another_mode(tmp_path, capsys):
    """The thesis's analytic models are of wormhole switching: not silently applied to
    another mode."""
    spec = write(tmp_path, router={"switching": "cut_through"})
    assert main(["analytic", spec]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "zfabric: error: router.switching: cut_through: the analytic models are of wormhole"
        " switching"
    ]


def test_a_study_length_longer_than_the_buffers_hold_exits_2(tmp_path, capsys):
    spec = write(tmp_path, router={"switching": "store_and_forward"})  # 4-flit packets
    study = tmp_path / "s.yaml"
    study.write_text(
        yaml.safe_dump(
            {
                "name": "s",
                "specs": [spec],
                "traffic": {"packet_lengths": [4, [2, 6]], "rates": [0.1]},
            }
        )
    )
    assert main(["study", str(study), "-o", str(tmp_path / "out"), "--workers", "0"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert err[0].startswith("zfabric: error: traffic.packet_lengths[1]: ") and "4 flits" in err[0]
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("longest", [8, None])
def test_a_plan_whose_buffers_miss_the_longest_packet_is_malformed(longest):
    """A plan file edited past what the spec reader refuses (a longest packet beyond the
    buffers, or none) is refused on reading, as any malformed plan."""

    spec = {**TORUS, "router": {"switching": "store_and_forward"}}
    data = compile_plan(load_spec(spec)).to_dict()
    assert data["router"]["longest_packet"] == 4 == data["buffer_depth"]
    data["router"]["longest_packet"] = longest
    with pytest.raises(PlanError, match="malformed plan"):
        plan_from_json(json.dumps(data))
