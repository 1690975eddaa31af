# amaranth: UnusedElaboratable=no
"""The board core's Verilog in cocotb + Icarus, read only through its UART line.

The pytest side emits the core (RTL fabric on a 2x2 torus, generators stopped after
``RUN`` cycles so the fabric drains before the report) and runs the cocotb bench below in
Icarus. The bench samples ``tx`` every cycle, decodes it with the receiver model
(``zfabric.boards.uart.decode_uart``) and checks the report line: nothing lost, no error; with a
corrupted flit injected, exactly one data error and the error LED on.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

RUN, PERIOD, CLK_HZ = 1000, 1500, 4 * 115200  # divisor 4
LINE_CYCLES = 108 * (10 * 4 + 1)

# -- pytest side ------------------------------------------------------------------------------


def test_board_verilog_comb_blocks_run_at_time_zero():
    """Every ``always @*`` of the board's own modules has the backend's time-0 trigger.

    Verilog runs an ``always @*`` only when one of its inputs changes; Yosys' write_verilog
    gives its combinational processes a dummy ``reg`` that changes at time 0 so they run once,
    but not the one-line processes it emits for a ``reg`` driven piecewise (a field assigned
    inside a ``Switch`` next to plain assignments of the others). Such a block holds x until an
    input changes: in Icarus the generators' ``first`` bit stayed x and nothing was sent.
    """
    from amaranth.back import verilog
    from board_helpers import torus_plan
    from zfabric.boards.top import BoardCore
    from zfabric.boards.traffic import TrafficSettings
    from zfabric.hdl.verilog import untriggered_comb_blocks

    core = BoardCore(
        torus_plan([2, 2]),
        clk_hz=CLK_HZ,
        network="ideal",  # the boards/ modules only
        settings=TrafficSettings(rate=0.4),
        run_cycles=RUN,
        fault=(1, 10),
    )
    text = verilog.convert(core, name="board_core")
    assert "always @*" in text
    assert untriggered_comb_blocks(text) == []


@pytest.mark.rtl
@pytest.mark.parametrize("fault", [None, (1, 10)], ids=["clean", "corrupted-flit"])
def test_board_core_in_icarus(tmp_path, fault):
    if shutil.which("iverilog") is None:
        if os.environ.get("NOC_REQUIRE_TOOLS") == "1":
            pytest.fail("iverilog is not installed (NOC_REQUIRE_TOOLS=1)")
        pytest.skip("iverilog is not installed")
    runner_module = pytest.importorskip("cocotb_tools.runner")
    from amaranth.back import verilog
    from board_helpers import have_fabric, torus_plan
    from cocotb_tools.check_results import get_results
    from zfabric.boards.top import BoardCore
    from zfabric.boards.traffic import TrafficSettings

    core = BoardCore(
        torus_plan([2, 2]),
        clk_hz=CLK_HZ,
        network=os.environ.get("BOARD_NETWORK") or ("fabric" if have_fabric() else "ideal"),
        settings=TrafficSettings(rate=0.4),
        report_period=PERIOD,
        run_cycles=RUN,
        fault=fault,
    )
    source = tmp_path / "board_core.v"
    source.write_text(verilog.convert(core, name="board_core"))
    runner = runner_module.get_runner("icarus")
    runner.build(
        sources=[source],
        hdl_toplevel="board_core",
        build_dir=tmp_path / "build",
        timescale=("1ns", "1ps"),
    )
    expect = {
        "divisor": core.uart_divisor,
        "errors": 0 if fault is None else 1,
        # one hop at least through the fabric (2H + L + 2); the stand-in registers once
        "min_latency": 8 if core.network_kind == "fabric" else 4,
    }
    xml = runner.test(
        hdl_toplevel="board_core",
        test_module=Path(__file__).stem,
        test_dir=Path(__file__).parent,
        build_dir=tmp_path / "build",
        extra_env={"BOARD_EXPECT": json.dumps(expect)},
        results_xml=str(tmp_path / "results.xml"),
    )
    assert get_results(xml) == (1, 0)


# -- cocotb side (runs inside Icarus) ---------------------------------------------------------

try:
    import cocotb
    from cocotb.clock import Clock
    from cocotb.triggers import RisingEdge
except ImportError:  # pragma: no cover - cocotb is optional (the rtl extra)
    cocotb = None

if cocotb is not None:

    @cocotb.test()
    async def board_report(dut):
        from zfabric.boards.traffic import ErrorKind
        from zfabric.boards.uart import decode_uart, parse_report_line

        expect = json.loads(os.environ["BOARD_EXPECT"])
        Clock(dut.clk, 10, unit="ns").start()
        dut.rst.value = 1
        await RisingEdge(dut.clk)
        dut.rst.value = 0
        samples = []
        for _ in range(PERIOD + LINE_CYCLES + 50):
            await RisingEdge(dut.clk)
            samples.append(int(dut.tx.value))
        lines = decode_uart(samples, expect["divisor"]).decode("ascii").split("\r\n")
        assert lines[-1] == "", lines
        (report,) = [parse_report_line(line) for line in lines[:-1]]
        dut._log.info("report: %s", report)
        assert report["gen"] == 0
        assert report["sent"] > 50
        assert report["recv"] == report["sent"]  # drained: nothing lost
        assert report["err"] == expect["errors"]
        assert report["ek"] == (0 if expect["errors"] == 0 else ErrorKind.DATA)
        assert int(dut.error.value) == (expect["errors"] != 0)
        assert report["lat_max"] >= expect["min_latency"]
