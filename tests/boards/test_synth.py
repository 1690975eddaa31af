"""``zfabric synth``: per-kind and whole-fabric area, and Fmax out of context (``fpga``)."""

from __future__ import annotations

import json
import subprocess

import pytest
from amaranth.back import rtlil
from zfabric.boards.build import after_read, tool_environment, yosys_cells
from zfabric.boards.synth import FIGURES, area
from zfabric.hdl.flit import FlitLayout
from zfabric.hdl.router.input_unit import InputUnit
from zfabric.hdl.verilog import component_ports, convert, emit

from zfabric import compile_plan, load_spec
from zfabric.cli import main


def synth_json(capsys, *argv: str) -> dict:
    assert main(["-q", "synth", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_kinds_cover_every_instance_and_the_total_is_their_sum(example, capsys, fpga_tools):
    report = synth_json(capsys, str(example("torus-4x4")))
    kinds = {kind["module"]: kind for kind in report["kinds"]}
    # 16 switches of one kind and 16 endpoints of one kind (examples/torus-4x4.yaml)
    assert sorted(kind["instances"] for kind in kinds.values()) == [16, 16]
    for name in FIGURES:
        by_instances = sum(kind["cells"][name] * kind["instances"] for kind in kinds.values())
        assert report["total"][name] == by_instances  # the top itself holds only wires
    switch = next(kind for module, kind in kinds.items() if "_sw_" in module)
    # 10 input VC FIFOs (local 2, injection_vcs auto on 2-VC links, + 4 ports x 2 VCs) of 4
    # flits, a flit of kind (2) + head (4) + src (4) + payload (32) bits: each FIFO keeps the
    # front register's kind and head (6 bits) in a RAM of its own, ceil(6 / 4) DPR16X4 (16 x 4
    # bits); at stages 1 each of the 5 input units keeps its 2 VCs' src and payload (36 bits)
    # in one shared RAM of 2 x 4 entries, which fits one DPR16X4's 16 deep: ceil(36 / 4)
    assert switch["cells"]["LUTRAM"] == 10 * -(-6 // 4) + 5 * -(-36 // 4)
    assert switch["cells"]["FF"] > 0 and switch["cells"]["LUT4"] > 0


@pytest.mark.matrix  # minutes of yosys; the default run sums the kinds (the test above)
def test_a_kind_costs_what_it_costs_synthesised_alone(example, fpga_tools):
    """Keeping kinds as hierarchy boundaries must not change a kind's own mapping."""
    plan = compile_plan(load_spec(example("torus-4x4")))
    emission = emit(plan)
    kinds, _total = area(emission.text, emission.top, emission.kinds, "ecp5-85f")
    endpoint = next(kind for kind in kinds if kind.module.endswith("_ep"))
    _kinds, alone = area(emission.text, endpoint.module, {}, "ecp5-85f")
    assert endpoint.cells == alone


def test_fmax_is_refused_on_ice40_with_status_2(example, capsys):
    assert main(["synth", str(example("torus-4x4")), "--fmax", "--device", "ice40-up5k"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "--fmax" in err and "ice40-up5k" in err


@pytest.mark.matrix
@pytest.mark.fpga
def test_fmax_per_kind_out_of_context(example, capsys, fpga_tools):
    report = synth_json(capsys, str(example("torus-4x4")), "--fmax", "--seeds", "1")
    for kind in report["kinds"]:
        (fmax,) = kind["fmax_mhz"]
        assert kind["fmax_median_mhz"] == fmax
        # a 32-bit switch on ECP5 lies between a LUT-chain-bound and the fabric's ceiling
        assert 20 < fmax < 400
    assert "seeds 1-1" in report["conditions"]["fmax"]
    # the figure names the shared flow it came from (the ECP5 one maps with ABC9 -dff)
    assert "synth_ecp5 -dff," in report["conditions"]["fmax"]


@pytest.mark.parametrize(
    ("device", "rams"),
    # a buffered flit of kind (2) + head (4) + src (4) + payload (32) = 42 bits, 2 VCs x 4 entries:
    # SB_RAM40_4K is 16 bits wide (256 x 16), so ceil(42 / 16); DP16KD 36 (512 x 36), ceil(42 / 36)
    [("ice40-up5k", -(-42 // 16)), ("ecp5-85f", -(-42 // 36))],
)
def test_block_ram_buffers_are_block_ram(device, rams, fpga_tools):
    """``buffers: block-ram``: yosys maps the torus switch's input unit's queues to the device's
    block RAM, none to LUTRAM (the default input unit's memories read asynchronously, which
    block RAM cannot: flip-flops on iCE40, LUTRAM on ECP5)."""
    layout = FlitLayout(payload_width=32, vc_width=1, head_width=4, src_width=4)
    unit = InputUnit(flit_layout=layout, n_vcs=2, buffer_depth=4, block_ram=True)
    _kinds, figures = area(convert(unit, name="unit"), "unit", {}, device)
    assert figures["RAM"] == rams and figures["LUTRAM"] == 0


@pytest.mark.fpga
def test_the_board_flow_reads_block_ram_buffers_as_the_verilog_path_does(tmp_path, fpga_tools):
    """Board builds read Amaranth's RTLIL, whose memories keep ``no_rw_check`` only as an
    attribute: the flow's :func:`after_read` turns it into undefined read-write collisions, so
    the block-RAM input unit maps to the same cells as from the emitted Verilog (no register
    and multiplexer per bit emulating a read-first result)."""
    layout = FlitLayout(payload_width=32, vc_width=1, head_width=4, src_width=4)
    unit = InputUnit(flit_layout=layout, n_vcs=2, buffer_depth=4, block_ram=True)
    _kinds, from_verilog = area(convert(unit, name="unit"), "unit", {}, "ice40-up5k")
    text = rtlil.convert(unit, name="unit", ports=component_ports(unit), emit_src=False)
    (tmp_path / "unit.il").write_text(text)
    (tmp_path / "synth.ys").write_text(
        f"read_rtlil unit.il\n{after_read('unit')}\nsynth_ice40 -top unit\n"
        "tee -q -o stat.txt stat\n"
    )
    env, tools = tool_environment()
    subprocess.run([tools["yosys"], "-q", "synth.ys"], cwd=tmp_path, env=env, check=True)
    cells = yosys_cells("Printing statistics\n" + (tmp_path / "stat.txt").read_text())
    assert cells["SB_LUT4"] == from_verilog["LUT4"]
    assert sum(n for cell, n in cells.items() if "DFF" in cell) == from_verilog["FF"]
    assert cells["SB_RAM40_4K"] == from_verilog["RAM"] == 3
