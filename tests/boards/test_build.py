# amaranth: UnusedElaboratable=no
"""Board builds: the build plan of every target (normal suite), report parsing on tool output,
and full YoWASP bitstream builds for the iCEBreaker and the ULX3S-85F (``fpga`` marker)."""

from __future__ import annotations

import json

import pytest
from amaranth.hdl import Elaboratable, Module, Signal
from zfabric.boards.build import (
    FLOWS,
    BuildError,
    Flow,
    _raise_if_slow,
    board_build,
    build,
    format_report,
    overflow,
    parse_fmax,
    parse_utilisation,
    yosys_cells,
)
from zfabric.boards.targets import TARGETS, get_target
from zfabric.boards.top import BoardTop

from zfabric import compile_plan, load_spec
from zfabric.cli import main

# -- excerpts of real tool output (nextpnr 0.11.1 / yosys 0.70, YoWASP) -----------------------

ICE40_TIM = """\
Info: Device utilisation:
Info: \t         ICESTORM_LC:    3616/   5280    68%
Info: \t        ICESTORM_RAM:       0/     30     0%
Info: \t               SB_IO:       5/     39    12%
Info: \t        ICESTORM_DSP:       0/      8     0%

Info: Max frequency for clock 'cd_sync.clk': 21.78 MHz (PASS at 12.00 MHz)
Info: Routing..
Info: Max frequency for clock 'cd_sync.clk': 21.57 MHz (PASS at 12.00 MHz)
"""

ICE40_RPT = """\
2.50. Printing statistics.

=== top ===
     1524   SB_LUT4

=== design hierarchy ===

        +----------Count including submodules.
        |
       23 cells
        1   SB_GB_IO
        4   SB_IO
      360   SB_CARRY
       57   SB_DFFE
      664   SB_DFFESR
      375   SB_DFFSR
     1524   SB_LUT4
"""

ECP5_TIM = """\
Info: Device utilisation:
Info: \t          TRELLIS_IO:       8/    365     2%
Info: \t              DP16KD:       0/    208     0%
Info: \t          MULT18X18D:       4/    156     2%
Info: \t          TRELLIS_FF:    2856/  83640     3%
Info: \t        TRELLIS_COMB:    9569/  83640    11%
Info: \t        TRELLIS_RAMW:     196/  10455     1%

Info: Max frequency for clock '$glbnet$cd_sync.clk': 44.75 MHz (PASS at 25.00 MHz)
Info: Max frequency for clock '$glbnet$cd_sync.clk': 18.20 MHz (FAIL at 25.00 MHz)
"""

ICE40_FULL = """\
Info: Device utilisation:
Info: \t         ICESTORM_LC:   29026/   5280   549%
Info: \t        ICESTORM_RAM:       0/     30     0%
Info: Placed 6 cells based on constraints.
ERROR: Unable to place cell 'core.check9.seq[12]_SB_DFFE_Q_7_DFFLC', no BELs remaining to \
implement cell type 'ICESTORM_LC'
"""


def test_ice40_utilisation_and_fmax():
    assert parse_utilisation("ice40", ICE40_TIM, ICE40_RPT) == {
        "luts": {"used": 3616, "total": 5280, "percent": 68.5},
        "rams": {"used": 0, "total": 30, "percent": 0.0},
        "dsps": {"used": 0, "total": 8, "percent": 0.0},
        "ffs": {"used": 57 + 664 + 375, "total": 5280, "percent": 20.8},
    }
    # the last figure is the post-route one
    assert parse_fmax(ICE40_TIM) == {
        "cd_sync.clk": {"fmax_mhz": 21.57, "target_mhz": 12.0, "pass": True}
    }
    assert yosys_cells(ICE40_RPT)["SB_CARRY"] == 360


def test_ecp5_utilisation_and_failed_timing():
    util = parse_utilisation("ecp5", ECP5_TIM)
    assert util["luts"] == {"used": 9569, "total": 83640, "percent": 11.4}
    assert util["ffs"]["used"] == 2856 and util["lutrams"]["used"] == 196
    assert util["rams"]["used"] == 0 and util["dsps"]["used"] == 4
    assert parse_fmax(ECP5_TIM)["$glbnet$cd_sync.clk"] == {
        "fmax_mhz": 18.2,
        "target_mhz": 25.0,
        "pass": False,
    }


def test_overflow_names_the_resource():
    assert overflow(ICE40_FULL) == [
        "logic cells (LUT4 + FF) (ICESTORM_LC): needs 29026, the device has 5280"
    ]
    assert overflow(ICE40_TIM) == []
    # without a table, the placer's error still names the cell type
    assert overflow(ICE40_FULL.split("Info: Placed")[1]) == [
        "logic cells (LUT4 + FF) (ICESTORM_LC) ran out"
    ]


def test_a_build_that_misses_its_clock_says_so(tmp_path):
    tim = tmp_path / "top.tim"
    tim.write_text(ECP5_TIM)  # post-route: 18.20 MHz, FAIL at 25
    failed = BuildError("nextpnr-ecp5 failed (exit 1)", step="nextpnr-ecp5", log=tim)
    with pytest.raises(BuildError, match=r"misses the Radiona ULX3S.*'s clock: Fmax 18\.20 MHz"):
        _raise_if_slow(tim, tmp_path / "missing.log", TARGETS["ulx3s-85f"], failed)


# -- build plans for every target --------------------------------------------------------------


def test_targets_have_existing_default_specs():
    assert set(TARGETS) == {"icebreaker", "ulx3s-85f", "orangecrab-85f"}
    for target in TARGETS.values():
        assert load_spec(target.spec_path).name == target.spec_path.stem
    with pytest.raises(KeyError, match=r"unknown target 'de10'; known targets: icebreaker, "):
        get_target("de10")


@pytest.mark.parametrize("name", sorted(TARGETS))
def test_plan_only_build(name, tmp_path, boards_package):
    report = board_build(name, None, tmp_path, plan_only=True, progress=None)
    target = TARGETS[name]
    assert report["built"] is False
    assert report["target"] == name and report["spec"] == target.spec_path.stem
    assert report["network"] == "fabric"
    tool = {"ice40": "nextpnr-ice40", "ecp5": "nextpnr-ecp5"}[target.family]
    assert [c.split()[0] for c in report["commands"]][:2] == ["yosys", tool]
    assert (tmp_path / "top.il").stat().st_size > 0
    assert (tmp_path / "build_top.json").exists()
    json.dumps(report)  # JSON-ready
    assert "tools not run" in format_report(report)


@pytest.mark.parametrize("name", ["icebreaker", "ulx3s-85f"])
def test_a_build_runs_the_family_flow_or_the_one_given(name, tmp_path, boards_package):
    """The flow's options reach ``synth_<family>`` in the yosys script and nextpnr's command
    line: the shared flow by default, a bench's own when it passes one."""
    target = TARGETS[name]
    options = (("-nodffe",), ("--placer", "sa", "--router", "router2"))
    for flow, out in ((None, tmp_path / "shared"), (Flow(*options), tmp_path / "given")):
        top = BoardTop(target, compile_plan(load_spec(target.spec_path)))
        report = build(target, top, out_dir=out, progress=None, flow=flow)
        shared = FLOWS[target.family]
        synth, nextpnr = (shared.synth, shared.nextpnr) if flow is None else options
        (line,) = [x for x in (out / "top.ys").read_text().splitlines() if "synth_" in x]
        assert line.split()[:1] == [f"synth_{target.family}"]
        assert line.split()[1 : 1 + len(synth)] == list(synth)
        (command,) = [c for c in report["commands"] if c.startswith("nextpnr")]
        assert " ".join(nextpnr) in command
    assert "-nodffe" not in (tmp_path / "shared" / "top.ys").read_text()


def test_orangecrab_gets_a_uart_pin(tmp_path, boards_package):
    report = board_build("orangecrab-85f", None, tmp_path, plan_only=True, progress=None)
    assert report["clock_mhz"] == 48
    assert "uart_0__tx" in (tmp_path / "top.lpf").read_text()


def test_cyclic_spec_is_refused(tmp_path):
    spec = tmp_path / "ring.yaml"
    spec.write_text(
        "name: ring-bad\ntopology: {kind: torus, k: [5]}\n"
        "routing: {name: dor, datelines: false}\nflit_width: 16\n"
    )
    with pytest.raises(BuildError, match=r"^ring-bad is not deadlock-free; refusing to build it: "):
        board_build("icebreaker", spec, tmp_path / "out", plan_only=True, progress=None)


# -- full builds -------------------------------------------------------------------------------


def check_built(report, family):
    assert report["built"] is True
    assert report["timing_pass"] is True
    assert {"luts", "ffs", "rams"} <= set(report["utilisation"])
    assert 0 < report["utilisation"]["luts"]["percent"] < 100
    (clock,) = report["fmax"].values()
    assert clock["fmax_mhz"] > clock["target_mhz"] == report["clock_mhz"]
    product = {"ice40": ".bin", "ecp5": ".bit"}[family]
    assert any(path.endswith(product) for path in report["bitstream"])


@pytest.mark.fpga
@pytest.mark.parametrize(
    # the ECP5-85F's place and route takes minutes (test_synth places an ECP5 switch in CI)
    "name",
    ["icebreaker", pytest.param("ulx3s-85f", marks=[pytest.mark.matrix, pytest.mark.slow])],
)
def test_bitstream_build(name, tmp_path, fpga_tools):
    lines = []
    report = board_build(name, None, tmp_path, progress=lines.append)
    check_built(report, TARGETS[name].family)
    print(format_report(report))
    assert any(line.startswith("  yosys: ") for line in lines)  # per-step progress


class Overfull(Elaboratable):
    """More flip-flops than an UP5K has logic cells (each drives an LED so none is removed)."""

    def elaborate(self, platform):
        m = Module()
        chain = [Signal(name=f"ff{i}") for i in range(6000)]
        m.d.sync += chain[0].eq(~chain[-1])
        m.d.sync += [
            b.eq(a ^ chain[(i * 7) % 6000])
            for i, (a, b) in enumerate(zip(chain, chain[1:], strict=False))
        ]
        m.d.comb += platform.request("led_g", 0).o.eq(chain[-1])
        return m


@pytest.mark.matrix
@pytest.mark.fpga
def test_design_too_large_names_the_resource(tmp_path, fpga_tools):
    target = get_target("icebreaker")
    with pytest.raises(BuildError) as caught:
        build(target, Overfull(), do_build=True, out_dir=tmp_path, progress=None)
    assert str(caught.value).startswith(
        "the design does not fit the iCE40 UP5K of the 1BitSquared iCEBreaker: "
        "logic cells (LUT4 + FF) (ICESTORM_LC): needs "
    )
    assert caught.value.step == "nextpnr-ice40"


# -- the command line ------------------------------------------------------------------------


def test_cli_lists_targets_and_writes_a_plan_only_build(tmp_path, capsys, boards_package):
    assert main(["board", "targets"]) == 0
    listed = capsys.readouterr().out
    assert all(name in listed for name in TARGETS)
    assert main(["board", "build", "icebreaker", "--plan-only", "-o", str(tmp_path)]) == 0
    assert "build plan written to" in capsys.readouterr().out
    assert (tmp_path / "top.il").stat().st_size > 0


def test_cli_rejects_an_unknown_board_with_status_2(capsys):
    assert main(["board", "build", "de10", "--plan-only"]) == 2
    assert "unknown board 'de10'; known: icebreaker" in capsys.readouterr().err


def test_cli_build_never_writes_over_a_foreign_file(tmp_path, capsys, boards_package):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "top.il").write_text("my own RTLIL\n")
    argv = ["board", "build", "icebreaker", "--plan-only", "-o", str(out)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--output" in err and "not written by zfabric" in err
    assert [p.name for p in out.iterdir()] == ["top.il"]
    assert (out / "top.il").read_text() == "my own RTLIL\n"
    # a folder of its own: built, listed, and built again over its own files only
    (out / "top.il").unlink()
    assert main(argv) == 0
    listed = set((out / ".zfabric-manifest").read_text().split())
    assert "top.il" in listed and f"build plan written to {out}" in capsys.readouterr().out
    (out / "notes.txt").write_text("the user's\n")
    assert main(argv) == 0
    assert (out / "notes.txt").read_text() == "the user's\n"
    assert not [p for p in out.iterdir() if p.name.startswith(".zfabric-staging")]
