"""`zfabric cosim` and the main job's co-simulation: exit status, report, errors."""

from __future__ import annotations

import json

import pytest
import zfabric.sim.tb.runner

from zfabric.cli import main

pytestmark = pytest.mark.rtl


def test_cosim_command_reports_lockstep_equality(example, need_sim, capsys):
    need_sim("icarus")
    args = ["cosim", str(example("torus-4x4")), "--rate", "0.3", "--cycles", "150", "--json"]
    assert main(args) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["passed"] and report["mismatches"] == 0 and report["drained"]
    packets = report["packets"]
    assert packets["trace"] == packets["model"] == packets["rtl"] > 0
    # 0.3 flits/cycle/endpoint, 4-flit packets, 16 endpoints, 150 cycles: about 180 packets
    assert 120 < packets["trace"] < 240
    assert report["latency"]["rtl"] == report["latency"]["model"]


def test_cosim_of_a_two_endpoint_fabric(example, need_sim, capsys):
    """ring-2 (the iCEBreaker's fabric): one-bit tid and tdest ports, which cocotb reads as a
    Logic, not a LogicArray (the bench crashed on them)."""
    need_sim("icarus")
    args = ["cosim", str(example("ring-2")), "--rate", "0.3", "--cycles", "100", "--json"]
    assert main(args) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["passed"] and report["drained"]
    assert report["packets"]["trace"] == report["packets"]["rtl"] > 0


def test_cosim_replays_a_trace_file_and_rejects_a_bad_one(example, need_sim, tmp_path, capsys):
    need_sim("icarus")
    trace = tmp_path / "trace.txt"
    trace.write_text("0 0 5 4\n0 3 12 2\n7 15 0 1\n")
    assert main(["cosim", str(example("torus-4x4")), "--trace", str(trace)]) == 0
    out = capsys.readouterr().out
    assert "3 packets (7 flits)" in out and out.rstrip().endswith("PASS")

    trace.write_text("0 0 16 4\n")
    assert main(["cosim", str(example("torus-4x4")), "--trace", str(trace)]) == 2
    assert "--trace" in capsys.readouterr().err


def test_cosim_without_its_simulator_exits_3(example, monkeypatch, capsys):
    monkeypatch.setattr(zfabric.sim.tb.runner, "simulator_available", lambda name: False)
    assert main(["cosim", str(example("ring-2")), "--cycles", "10"]) == 3
    assert "icarus is not available" in capsys.readouterr().err


def test_main_job_without_its_simulator_writes_the_report_and_exits_3(
    example, monkeypatch, tmp_path, capsys
):
    """The co-simulation could not run (README: exit 3), as for `zfabric cosim`; the rest of
    the report is written, and says why, and no cosim.json is listed that was not written."""
    monkeypatch.setattr(zfabric.sim.tb.runner, "simulator_available", lambda name: False)
    out = tmp_path / "r"
    quick = ["--cosim-cycles", "20", "--warmup", "50", "--cycles", "200", "--rates", "0.1"]
    assert main(["-q", "run", str(example("ring-2")), "-o", str(out), *quick]) == 3
    assert "cosim: could not run: icarus not found" in capsys.readouterr().err
    report = (out / "report.md").read_text()
    assert "**Could not run**:\n\n```\nicarus not found" in report
    assert json.loads((out / "cosim.json").read_text())["passed"] is False


def test_cosim_without_its_simulator_still_refuses_a_bad_spec(tmp_path, monkeypatch, capsys):
    """The spec is the user's to fix: exit 2 naming its key, whether or not the tool is there."""
    monkeypatch.setattr(zfabric.sim.tb.runner, "simulator_available", lambda name: False)
    spec = tmp_path / "bad.yaml"
    spec.write_text("name: bad\ntopology: {kind: torus, k: [4, 0]}\n")
    assert main(["cosim", str(spec), "--cycles", "10"]) == 2
    err = capsys.readouterr().err
    assert "topology.k" in err and "not available" not in err


def test_main_job_writes_verilog_and_a_passing_cosim(example, need_sim, tmp_path, capsys):
    need_sim("icarus")
    out = tmp_path / "report"
    args = ["run", str(example("torus-4x4")), "-o", str(out), "--cycles", "300", "--warmup", "50"]
    assert main([*args, "--cosim-cycles", "120"]) == 0
    assert {"cosim.json", "verilog", "report.md"} <= {p.name for p in out.iterdir()}
    assert sorted(p.name for p in (out / "verilog").iterdir()) == [
        "torus_4x4.plan.json",
        "torus_4x4.ports",
        "torus_4x4.v",
        "torus_4x4.vlt",  # Verilator's -Wall waivers, with their reasons
        "torus_4x4_README.md",  # the fabric's ports, packet format and latency
        "torus_4x4_inst.vh",  # an instantiation template
        "torus_4x4_tb.v",  # the self-checking testbench
    ]
    cosim = json.loads((out / "cosim.json").read_text())
    assert cosim["passed"] and cosim["packets"]["rtl"] == cosim["packets"]["trace"] > 0
    report = (out / "report.md").read_text()
    assert "## Lock-step co-simulation" in report and "**PASS**" in report


@pytest.mark.parametrize("value", ["1", "-0.1", "nan", "often"])
def test_cosim_refuses_a_bad_eject_stall(example, value, capsys):
    """A probability in [0, 1): 1 would stall forever. One line, exit 2, before any work."""
    with pytest.raises(SystemExit) as exit_:
        main(["cosim", str(example("ring-2")), "--eject-stall", value])
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].endswith(
        f"argument --eject-stall: must be a probability in [0, 1), got {value!r}"
    )


def test_cosim_with_eject_stalls_passes_and_says_so(example, need_sim, capsys):
    need_sim("icarus")
    args = ["cosim", str(example("torus-4x4")), "--rate", "0.3", "--cycles", "150"]
    assert main([*args, "--eject-stall", "0.5", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["passed"] and report["drained"] and report["inputs"]["eject_stall"] == 0.5
