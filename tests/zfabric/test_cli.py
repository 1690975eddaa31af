"""`zfabric check`: exit status, JSON report, plan output, errors without tracebacks."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from zfabric import plan_from_json
from zfabric.cli import main


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "zfabric.cli", *args], capture_output=True, text=True, timeout=300
    )


def test_check_prints_a_summary_and_succeeds(example):
    result = run("check", str(example("torus-4x4")))
    assert result.returncode == 0, result.stderr
    assert "deadlock-free: yes" in result.stdout
    assert "endpoints 16, switches 16, links 32" in result.stdout


def test_json_report_and_plan_out(example, tmp_path, capsys):
    plan_path = tmp_path / "out" / "plan.json"
    plan_path.parent.mkdir()  # a single output file never makes its folder
    assert main(["check", str(example("torus-4x4")), "--json", "--plan-out", str(plan_path)]) == 0
    report = json.loads(capsys.readouterr().out)
    required = {"name", "topology", "endpoints", "switches", "links", "max_radix", "vcs"}
    required |= {"diameter", "average_hops", "deadlock_free", "cycle"}
    assert required <= report.keys()
    assert report["cycle"] is None and report["deadlock_free"] is True
    plan = plan_from_json(plan_path.read_text())
    assert plan.name == report["name"] == "torus-4x4"
    # no temporary left; the manifest lists the plan as zfabric's
    assert sorted(p.name for p in plan_path.parent.iterdir()) == [".zfabric-manifest", "plan.json"]


def test_deadlock_exits_1_and_prints_the_cycle(tmp_path):
    spec = tmp_path / "ring.yaml"
    spec.write_text("topology: {kind: torus, k: [6]}\nrouting: {name: dor, datelines: false}\n")
    result = run("check", str(spec))
    assert result.returncode == 1
    assert "DEADLOCK: channel dependency cycle" in result.stdout
    assert result.stdout.count("/vc0 ->") == 6
    report = json.loads(run("check", str(spec), "--json").stdout)
    assert report["deadlock_free"] is False and len(report["cycle"]) == 6


def test_a_routing_head_wider_than_the_flit_is_accepted(tmp_path):
    """The head has its own bits beside the payload (docs/microarchitecture.md, flit format):
    a 4-ary 3-tree's 9-bit sliced header (3 level bits + 3 labels of 2 bits) with 8-bit flits."""
    spec = tmp_path / "narrow.yaml"
    spec.write_text("topology: {kind: kary_ntree, k: 4, n: 3}\nflit_width: 8\n")
    result = run("check", str(spec))
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize(
    "text, message",
    [
        ("topology: {kind: torus, k: [4, 1]}\n", "topology.k[1]: must be an integer >= 2, got 1"),
        ("topology: {kind: torus, k: [4, 4]\n", "YAML syntax error at line 2"),
        ("", "the spec is empty"),
    ],
)
def test_bad_spec_exits_2_with_one_line_and_writes_nothing(tmp_path, text, message):
    spec = tmp_path / "bad.yaml"
    spec.write_text(text)
    plan_path = tmp_path / "plan.json"
    result = run("check", str(spec), "--plan-out", str(plan_path))
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1 and message in result.stderr
    assert "Traceback" not in result.stderr
    assert not plan_path.exists()


def test_missing_file_and_bad_arguments_exit_2(tmp_path):
    assert run("check", str(tmp_path / "nope.yaml")).returncode == 2
    assert run("check").returncode == 2
    assert run("frobnicate").returncode == 2


def test_ndt_configs_lists_every_configuration(example, capsys):
    assert main(["ndt-configs", str(example("ndt-4x4x4")), "--json", "--proof"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert len(rows) == 10  # ½·C(6, 3), reference/ndt.md §1.2
    by_ports = {" ".join(r["card0"]): r for r in rows}
    # reference/ndt.md §1.4 Table 1.1: A {X+,Y+,Z+} 93, B {X+,Y+,Y-} 79, C {X+,X-,Y+} 49 of 129
    assert by_ports["d0+ d1+ d2+"]["crossing"] == 93
    assert by_ports["d0+ d1- d1+"]["crossing"] == 79
    assert by_ports["d0- d0+ d1+"]["crossing"] == 49
    assert all(r["transit"] == 129 for r in rows)
    (this,) = [r for r in rows if r["this_spec"]]
    assert this["card0"] == ["d0-", "d0+", "d1-"] and this["crossing"] == 49  # CBest
    assert this["deadlock_free"] and this["diameter"] == 9


def test_ndt_configs_refuses_other_topologies(example):
    assert run("ndt-configs", str(example("torus-4x4"))).returncode == 2


def test_verilog_writes_module_waivers_plan_and_ports(tmp_path, capsys):
    spec = tmp_path / "ring.yaml"
    spec.write_text("name: ring-3\ntopology: {kind: torus, k: [3]}\nflit_width: 16\n")
    out = tmp_path / "rtl"
    assert main(["verilog", str(spec), "-o", str(out)]) == 0
    written = ["ring_3.plan.json", "ring_3.ports", "ring_3.v", "ring_3.vlt"]
    written += ["ring_3_README.md", "ring_3_inst.vh", "ring_3_tb.v"]
    assert sorted(p.name for p in out.iterdir()) == [".zfabric-manifest", *written]
    assert (out / ".zfabric-manifest").read_text().split() == written
    assert "module ring_3(" in (out / "ring_3.v").read_text()
    assert "lint_off -rule" in (out / "ring_3.vlt").read_text()
    assert plan_from_json((out / "ring_3.plan.json").read_text()).name == "ring-3"
    ports = {
        line.split()[2]: line.split()[:2]
        for line in (out / "ring_3.ports").read_text().splitlines()
    }
    assert list(ports)[:2] == ["clk", "rst"] and ports["rst"] == ["input", "1"]
    for e in range(3):  # an AXI4-Stream in and out per endpoint
        assert ports[f"s{e}_axis_tvalid"] == ["input", "1"]
        assert ports[f"s{e}_axis_tready"] == ["output", "1"]
        assert ports[f"s{e}_axis_tdata"] == ["input", "16"]
        assert ports[f"s{e}_axis_tdest"] == ["input", "2"]  # 3 endpoints: 2-bit ids
        assert ports[f"m{e}_axis_tvalid"] == ["output", "1"]
        assert ports[f"m{e}_axis_tid"] == ["output", "2"]


def test_verilog_refuses_a_cyclic_plan(tmp_path, capsys):
    spec = tmp_path / "ring.yaml"
    spec.write_text("topology: {kind: torus, k: [5]}\nrouting: {name: dor, datelines: false}\n")
    out = tmp_path / "rtl"
    assert main(["verilog", str(spec), "-o", str(out)]) == 1
    assert "not deadlock-free" in capsys.readouterr().err
    assert not out.exists() or not any(out.iterdir())


def test_ndt_configs_of_a_spec_naming_its_internal_vcs(tmp_path, capsys):
    """The spec's internal_vcs name its own configuration's internal classes; the other
    configurations are counted with their default classes (they used to raise KeyError)."""
    spec = tmp_path / "ndt.yaml"
    spec.write_text(
        "name: n\ntopology: {kind: ndt, k: [4, 4]}\n"
        "routing: {name: dort, internal_vcs: {ch: 0, pe: 1}}\n"
    )
    assert main(["ndt-configs", str(spec), "--json", "--proof"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert len(rows) == 3 and sum(r["this_spec"] for r in rows) == 1  # ½·C(4, 2)
    plain = tmp_path / "plain.yaml"
    plain.write_text("name: n\ntopology: {kind: ndt, k: [4, 4]}\nrouting: dort\n")
    assert main(["ndt-configs", str(plain), "--json", "--proof"]) == 0
    defaults = json.loads(capsys.readouterr().out)
    assert [r for r in rows if not r["this_spec"]] == [r for r in defaults if not r["this_spec"]]
