"""A deadlock the model meets at any swept point is an error, never a saturation: ``sweep``,
``study`` and ``run`` exit 1 with the knot of waiting channels on stderr and keep every other
point. The fabric: a 6-ring under DOR without dateline VCs, whose channel dependency graph is
the one cycle of its six ``d0+`` channels (``check`` refuses it; ``--allow-deadlock`` simulates
it), and which deadlocks at 0.9 flits/cycle/endpoint of 8-flit packets."""

from __future__ import annotations

import csv
import json

import pytest

from zfabric.cli import main

RING = """name: ring6
topology: {kind: torus, k: [6]}
routing: {name: dor, datelines: false, tie: plus}
"""
TRAFFIC = ["--packet-length", "8", "--warmup", "200", "--cycles", "1000", "--seed", "1"]


@pytest.fixture
def ring(tmp_path):
    path = tmp_path / "ring6.yaml"
    path.write_text(RING)
    return path


def cdg_cycle(ring, capsys) -> set[str]:
    """The channels of the ring's dependency cycle, as ``check --json`` names them."""
    assert main(["check", str(ring), "--json"]) == 1
    return set(json.loads(capsys.readouterr().out)["cycle"])


def knots(err: str, where: str) -> list[list[str]]:
    """Each deadlock report of ``where`` on stderr: its channels, one a line."""
    found = []
    lines = err.splitlines()
    for index, line in enumerate(lines):
        if line.startswith(f"zfabric: {where}: ") and "deadlock at cycle" in line:
            channels = []
            for channel in lines[index + 1 :]:
                if not channel.startswith("  "):
                    break
                channels.append(channel.strip().removesuffix(" ->"))
            found.append(channels)
    return found


def assert_knot_on_the_cycle(channels: list[str], cycle: set[str]) -> None:
    """A knot closes on itself, and its switch-to-switch channels are the CDG cycle's (the
    others are injection channels feeding it)."""
    assert len(channels) >= 3 and channels[0] == channels[-1]
    links = {c for c in channels if not c.startswith("ep")}
    assert links and links <= cycle


def test_sweep_exits_1_with_the_knot_and_keeps_the_other_points(ring, capsys):
    cycle = cdg_cycle(ring, capsys)
    args = ["-q", "sweep", str(ring), "--allow-deadlock", "--rates", "0.05,0.9", *TRAFFIC]
    assert main([*args, "--json"]) == 1
    captured = capsys.readouterr()
    curve = json.loads(captured.out)["ring6"]
    assert [p["rate"] for p in curve["points"]] == [0.05, 0.9]  # no bisection past a deadlock
    low, high = curve["points"]
    assert low["deadlock"] is None and not low["saturated"]
    assert high["deadlock"] is not None
    assert (curve["knee"], curve["highest_stable"], curve["deadlocked"]) == (None, 0.05, [0.9])
    (knot,) = knots(captured.err, "ring6 rate 0.9")
    assert_knot_on_the_cycle(knot, cycle)

    assert main(args) == 1
    text = capsys.readouterr().out
    assert "knee: not bisected: the model deadlocked at rate 0.9" in text
    assert "deadlocked" in text.splitlines()[-1] and "saturated" not in text.splitlines()[-1]


def test_a_deadlock_free_sweep_still_exits_0(example, capsys):
    args = ["-q", "sweep", str(example("ring-2")), "--rates", "0.1", "--cycles", "300"]
    assert main([*args, "--warmup", "50", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["ring-2"]["deadlocked"] == []


def test_study_exits_1_with_the_knot_and_keeps_the_table(ring, tmp_path, capsys):
    cycle = cdg_cycle(ring, capsys)
    study = tmp_path / "study.yaml"
    traffic = {"rates": [0.05, 0.9], "refine": 0.01, "packet_lengths": 8, "seeds": 1}
    data = {"name": "rings", "specs": ["ring6.yaml"], "traffic": {**traffic, "warmup": 200}}
    data["traffic"]["cycles"] = 1000
    study.write_text(json.dumps(data))
    out = tmp_path / "out"
    assert main(["-q", "study", str(study), "-o", str(out), "--workers", "0"]) == 1
    captured = capsys.readouterr()
    assert "2 points (2 computed, 0 cached), 0 failed, 1 deadlocked" in captured.out
    (knot,) = knots(captured.err, "ring6 rate 0.9")
    assert_knot_on_the_cycle(knot, cycle)
    with (out / "table.csv").open() as file:
        rows = list(csv.DictReader(file))
    # both points kept; the deadlocked curve was not bisected further
    assert [(r["rate"], r["status"], bool(r["deadlock"])) for r in rows] == [
        ("0.05", "ok", False),
        ("0.9", "ok", True),
    ]


def test_run_exits_1_with_the_knot_and_writes_the_report(ring, tmp_path, capsys):
    cycle = cdg_cycle(ring, capsys)
    out = tmp_path / "report"
    args = ["-q", "run", str(ring), "-o", str(out), "--cosim-cycles", "0", *TRAFFIC]
    assert main([*args, "--rates", "0.05,0.9"]) == 1  # refused: the CDG is cyclic
    assert not out.exists()
    capsys.readouterr()
    assert main([*args, "--rates", "0.05,0.9", "--allow-deadlock"]) == 1
    (knot,) = knots(capsys.readouterr().err, "ring6 rate 0.9")
    assert_knot_on_the_cycle(knot, cycle)
    sweep = json.loads((out / "sweep.json").read_text())
    assert [p["rate"] for p in sweep["points"]] == [0.05, 0.9]
    assert (sweep["knee"], sweep["deadlocked"]) == (None, [0.9])
    report = (out / "report.md").read_text()
    assert "Knee: not bisected: the model deadlocked at rate 0.9" in report
    assert "rate 0.9: deadlock at cycle" in report and knot[0] in report
    (row,) = [line for line in report.splitlines() if line.startswith("| 0.9 |")]
    assert row.endswith("| deadlock |")
