"""The testbench ``zfabric verilog`` writes beside the Verilog (``NAME_tb.v``), run under Icarus
with no Python: it passes on correct fabrics, and says FAIL when one switch routes wrong or a
packet reaches the wrong endpoint. ``--split`` output runs the same, and the instantiation
template elaborates against the fabric."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from zfabric.hdl.verilog import write

from zfabric import compile_plan, load_spec


@pytest.fixture
def icarus(need_sim):
    need_sim("icarus")


def run_testbench(folder: Path, top: str, sources: list[str]) -> list[str]:
    """Compile ``NAME_tb.v`` with ``sources`` (paths relative to ``folder``) and run it; the
    printed lines, the last of which must be the verdict before ``$finish``."""
    build = subprocess.run(
        ["iverilog", "-g2012", "-o", "tb.vvp", f"{top}_tb.v", *sources],
        cwd=folder,
        capture_output=True,
        text=True,
    )
    assert build.returncode == 0, build.stderr
    run = subprocess.run(["vvp", "-n", "tb.vvp"], cwd=folder, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    return [line for line in run.stdout.splitlines() if line.startswith(("PASS", "FAIL"))]


def instance(text: str, name: str) -> re.Match:
    """The instance called ``name`` in the top of emitted Verilog ``text``."""
    match = re.search(rf"^  \w+ {name} \(\n.*?^  \);\n", text, re.M | re.S)
    assert match, name
    return match


@pytest.mark.parametrize(
    # znode-64's 4032 packets take a minute of Icarus: the default run's Znode-family bench
    # is the 2-Snode fabric's below
    "name",
    [
        "torus-4x4",
        *(pytest.param(name, marks=pytest.mark.matrix) for name in ("ndt-2x2x2", "znode-64")),
    ],
)
def test_generated_testbench_passes(icarus, plan_of, tmp_path, name):
    plan = plan_of(name)
    emission = write(plan, tmp_path)
    lines = run_testbench(tmp_path, emission.top, [f"{emission.top}.v"])
    n = len(plan.endpoints)
    assert len(lines) == 1 and lines[0].startswith(f"PASS: {n * (n - 1)} packets of 3 beats")


def test_generated_testbench_passes_with_two_attachments_per_endpoint(icarus, tmp_path):
    """A 2-Snode fabric: each endpoint has two output streams, and a packet may leave on
    either."""
    topology = {"kind": "znode", "znodes": 2, "z": [2, 4], "R": [2, 2]}
    plan = compile_plan(load_spec({"name": "snode-16", "topology": topology, "routing": "sliced"}))
    assert {len(endpoint.attachments) for endpoint in plan.endpoints} == {2}
    emission = write(plan, tmp_path)
    lines = run_testbench(tmp_path, emission.top, [f"{emission.top}.v"])
    assert len(lines) == 1 and lines[0].startswith("PASS: 240 packets of 3 beats")


def test_generated_testbench_fails_when_one_switch_routes_wrong(icarus, plan_of, tmp_path):
    """Switch 5 of torus-4x4 told it sits where switch 6 does (its identity port, which its
    route unit compares destinations with): packets to and through it go the wrong way."""
    emission = write(plan_of("torus-4x4"), tmp_path)
    text = emission.text
    sw5, sw6 = instance(text, "sw5"), instance(text, "sw6")
    (identity5,) = re.findall(r"\.identity\(([^)]*)\)", sw5.group(0))
    (identity6,) = re.findall(r"\.identity\(([^)]*)\)", sw6.group(0))
    assert identity5 != identity6
    corrupted = sw5.group(0).replace(f".identity({identity5})", f".identity({identity6})")
    (tmp_path / "corrupted.v").write_text(text[: sw5.start()] + corrupted + text[sw5.end() :])
    lines = run_testbench(tmp_path, emission.top, ["corrupted.v"])
    assert lines[-1].startswith("FAIL: ")
    assert not any(line.startswith("PASS") for line in lines)
    # what went wrong: packets named as never arriving (the fabric wedges), or misdelivered
    assert any(re.search(r"never arrived|got beat \d+ of the packet from", line) for line in lines)


def test_generated_testbench_names_a_misdelivered_packet(icarus, plan_of, tmp_path):
    """Endpoints 5 and 6 of torus-4x4 with their ejection links swapped: every packet for one
    reaches the other, and the testbench says which packet went where."""
    emission = write(plan_of("torus-4x4"), tmp_path)
    text = emission.text
    ep5, ep6 = instance(text, "ep5"), instance(text, "ep6")
    eject = re.compile(r"^    \.eject__.*$", re.M)
    lines5, lines6 = eject.findall(ep5.group(0)), eject.findall(ep6.group(0))
    assert len(lines5) == len(lines6) == 3  # credit, flit payload, flit valid

    def swap(block: str, mine: list[str], theirs: list[str]) -> str:
        for old, new in zip(mine, theirs, strict=True):
            block = block.replace(old, new)
        return block

    swapped = (
        text[: ep5.start()]
        + swap(ep5.group(0), lines5, lines6)
        + text[ep5.end() : ep6.start()]
        + swap(ep6.group(0), lines6, lines5)
        + text[ep6.end() :]
    )
    assert ep5.end() <= ep6.start()
    (tmp_path / "swapped.v").write_text(swapped)
    lines = run_testbench(tmp_path, emission.top, ["swapped.v"])
    assert lines[-1].startswith("FAIL: ")
    misdelivered = [
        re.search(r"endpoint (\d+) got beat 0 of the packet from (\d+) to (\d+)", line)
        for line in lines
    ]
    pairs = {(int(m.group(1)), int(m.group(3))) for m in misdelivered if m}
    assert pairs and pairs <= {(5, 6), (6, 5)}


def test_split_output_runs_the_same(icarus, plan_of, tmp_path):
    plan = plan_of("torus-4x4")
    whole, split = tmp_path / "whole", tmp_path / "split"
    emission = write(plan, whole)
    top = emission.top
    split_emission = write(plan, split, split=True)
    modules = re.findall(r"^module (\w+)\(", emission.text, re.M)  # in the file's order
    assert modules[0] == top and sorted(modules) == sorted([top, *emission.kinds])
    assert (split / f"{top}.f").read_text().split() == [f"{m}.v" for m in modules]
    body = re.compile(r"^module (\w+)\(.*?^endmodule\n", re.M | re.S)
    for module in modules:  # each file holds its module, as the single file has it
        (match,) = body.finditer((split / f"{module}.v").read_text())
        assert match.group(1) == module and match.group(0) in emission.text
    assert len(body.findall(split_emission.text)) == len(modules)
    verdict = run_testbench(whole, top, [f"{top}.v"])
    assert verdict[0].startswith("PASS")
    assert run_testbench(split, top, ["-c", f"{top}.f"]) == verdict


def test_instantiation_template_elaborates_against_the_fabric(icarus, plan_of, tmp_path):
    emission = write(plan_of("ndt-2x2x2"), tmp_path)
    top = emission.top
    (tmp_path / "user.v").write_text(
        f'module user(input wire clk, input wire rst);\n`include "{top}_inst.vh"\nendmodule\n'
    )
    result = subprocess.run(
        ["iverilog", "-g2012", "-s", "user", "-o", "user.vvp", "user.v", f"{top}.v"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0 and result.stderr == "", result.stderr


def test_split_output_lints_clean_under_its_waivers(plan_of, tmp_path):
    """Verilator on the files of ``--split``: clean with the default warnings, and with -Wall
    under ``NAME.vlt`` (which waives each rule file by file, and no DECLFILENAME)."""
    from test_lint import lint

    emission = write(plan_of("torus-4x4"), tmp_path, split=True)
    files = (tmp_path / f"{emission.top}.f").read_text().split()
    assert lint(tmp_path, *files) == (0, set())
    assert lint(tmp_path, "-Wall", f"{emission.top}.vlt", *files) == (0, set())


def test_flat_output_lints_clean_under_its_waivers(plan_of, tmp_path):
    """One inlined module (``--flat``): each switch's identity is a constant, so Verilator's
    default CMPCONST and UNSIGNED fire; ``NAME.vlt`` waives them (and -Wall's three)."""
    from test_lint import lint

    emission = write(plan_of("ring-2"), tmp_path, share=False)
    top = emission.top
    assert lint(tmp_path, f"{top}.vlt", f"{top}.v") == (0, set())
    assert lint(tmp_path, "-Wall", f"{top}.vlt", f"{top}.v") == (0, set())


def test_a_submodule_kept_out_of_its_kind_runs_the_same(icarus, plan_of, tmp_path, monkeypatch):
    """A kind's submodule too big to flatten (znode-512's 64-port allocator) stays a module of
    its own: here, with the bound lowered, torus-4x4's allocator. The fabric behaves the same,
    whole and split."""
    import zfabric.hdl.verilog as verilog

    monkeypatch.setattr(verilog, "FLATTEN_CELLS", 500)  # its allocator: 915
    plan = plan_of("torus-4x4")
    emission = write(plan, tmp_path)
    kind = "torus_4x4_sw_p5_v2"
    assert emission.submodules == {f"{kind}_allocator": kind}
    assert f"//   {kind}_allocator (one in each {kind})\n" in emission.text
    assert len(re.findall(rf"^  {kind}_allocator \w+ \(", emission.text, re.M)) == 1
    lines = run_testbench(tmp_path, emission.top, [f"{emission.top}.v"])
    assert len(lines) == 1 and lines[0].startswith("PASS: 240 packets of 3 beats")
    split = write(plan, tmp_path / "split", split=True)
    assert f"{kind}_allocator.v" in (tmp_path / "split" / f"{split.top}.f").read_text()
    lines = run_testbench(tmp_path / "split", split.top, ["-c", f"{split.top}.f"])
    assert len(lines) == 1 and lines[0].startswith("PASS: 240 packets of 3 beats")


def test_generated_testbench_passes_on_a_transit_fabric(icarus, tmp_path):
    """A Transit bidelta of 16 processors: one-way channels, each endpoint injecting through
    attachments 0 and 2 and receiving through 1 and 3, the only ones with output streams."""
    topology = {"kind": "transit", "form": "bidelta", "stacks": [2]}
    plan = compile_plan(load_spec({"name": "transit-16", "topology": topology}))
    assert {endpoint.modes for endpoint in plan.endpoints} == {("in", "out", "in", "out")}
    emission = write(plan, tmp_path)
    assert "m0_1_axis_tvalid" in emission.text and "m0_0_axis_tvalid" not in emission.text
    lines = run_testbench(tmp_path, emission.top, [f"{emission.top}.v"])
    assert len(lines) == 1 and lines[0].startswith("PASS: 240 packets of 3 beats")
