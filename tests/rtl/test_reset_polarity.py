"""The top's reset as a choice: ``rst`` (synchronous, active high, the default) or AXI's
active-low ``aresetn`` (``zfabric verilog --reset aresetn``), carried into the port list, the
instantiation template and the testbench; the ``aresetn`` top runs in lock-step with the model
and its own testbench passes, and fails when its reset is driven active high."""

from __future__ import annotations

import re
import subprocess

from zfabric.hdl.verilog import emit
from zfabric.sim.tb.runner import cosim, format_report, traffic_trace
from zfabric.sim.traffic import TrafficConfig

from zfabric.cli import main


def run_testbench(folder, top: str) -> list[str]:
    build = subprocess.run(
        ["iverilog", "-g2012", "-o", "tb.vvp", f"{top}_tb.v", f"{top}.v"],
        cwd=folder,
        capture_output=True,
        text=True,
    )
    assert build.returncode == 0, build.stderr
    run = subprocess.run(["vvp", "-n", "tb.vvp"], cwd=folder, capture_output=True, text=True)
    return [line for line in run.stdout.splitlines() if line.startswith(("PASS", "FAIL"))]


def test_verilog_reset_aresetn_in_every_file(example, need_sim, tmp_path, capsys):
    need_sim("icarus")
    out = tmp_path / "rtl"
    args = ["-q", "verilog", str(example("torus-2x2")), "-o", str(out), "--reset", "aresetn"]
    assert main(args) == 0
    assert not capsys.readouterr().err
    top = "torus_2x2"
    ports = (out / f"{top}.ports").read_text().splitlines()
    assert ports[:2] == ["input 1 clk", "input 1 aresetn"]
    assert not [line for line in ports if line.endswith(" rst")]
    verilog = (out / f"{top}.v").read_text()
    header = re.search(rf"^module {top}\((.*?)\);", verilog, re.M | re.S)[1]
    assert [name.strip() for name in header.split(",")][:2] == ["clk", "aresetn"]
    assert "// ports: clk, aresetn (reset synchronous, active low" in verilog
    template = (out / f"{top}_inst.vh").read_text()
    assert ".aresetn" in template and ".rst" not in template
    assert "whose clk and aresetn it connects" in template
    readme = (out / f"{top}_README.md").read_text()
    assert "`aresetn` (reset, synchronous, active low" in readme
    assert run_testbench(out, top)[-1].startswith("PASS: 12 packets")
    # the port is active low: a bench that drives it active high holds the fabric in reset
    bench = out / f"{top}_tb.v"
    bench.write_text(bench.read_text().replace("wire aresetn = !rst;", "wire aresetn = rst;"))
    assert run_testbench(out, top)[-1].startswith("FAIL: no beat delivered")


def test_the_default_reset_is_rst(example, tmp_path, capsys):
    out = tmp_path / "rtl"
    assert main(["-q", "verilog", str(example("ring-2")), "-o", str(out)]) == 0
    assert (out / "ring_2.ports").read_text().splitlines()[:2] == ["input 1 clk", "input 1 rst"]
    assert "aresetn" not in (out / "ring_2_tb.v").read_text()


def test_an_aresetn_top_runs_in_lockstep_with_the_model(plan_of, need_sim, cosim_dir):
    plan = plan_of("torus-2x2")
    trace = traffic_trace(plan, TrafficConfig(rate=0.3, packet_length=(1, 4)), 300, seed=5)
    report = cosim(
        plan,
        trace,
        sim=need_sim("icarus"),
        build_dir=cosim_dir,
        emit=lambda plan: emit(plan, reset="aresetn"),
        variant="aresetn",
    )
    assert report["passed"], format_report(report)
    assert report["packets"]["rtl"] == report["packets"]["model"] == len(trace) > 50
