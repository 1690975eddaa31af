# amaranth: UnusedElaboratable=no
"""Verilog emission: one module per kind, ports, and a structural check with Icarus."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest
from hdl_bench import small_plan
from zfabric.hdl.endpoint import dst_width
from zfabric.hdl.flit import FlitLayout
from zfabric.hdl.verilog import emit, untriggered_comb_blocks, write

KINDS = [
    # (fabric, instances per kind, from the plan's structure)
    ("torus-4x4", {"switch": [16], "endpoint": [16]}),
    ("ndt-2x2x2", {"node": [8], "endpoint": [16]}),
    # level-1 and level-2 switches of each Znode (side ports name the other Znode)
    ("snode-16", {"switch": [2, 2, 8, 8], "endpoint": [16]}),
]


@pytest.mark.parametrize("name", [k[0] for k in KINDS])
def test_every_comb_block_runs_at_time_zero(example, name):
    """A piecewise-assigned signal would sit at x in Icarus until an input changed."""
    text = emit(small_plan(example, name)).text
    assert "always @*" in text
    assert untriggered_comb_blocks(text) == []


@pytest.mark.parametrize("name, kinds", KINDS, ids=[k[0] for k in KINDS])
def test_one_module_per_kind(example, name, kinds):
    plan = small_plan(example, name)
    emission = emit(plan)
    found = {}
    for module, count in emission.kinds.items():
        kind = module.split("__")[-1].rstrip("0123456789")
        found.setdefault(kind, []).append(count)
    assert {k: sorted(v) for k, v in found.items()} == kinds
    for module in [emission.top, *emission.kinds]:
        assert f"module {module}(" in emission.text
    # the top's ports: per endpoint a packet stream in and one out per attachment
    layout = FlitLayout.from_plan(plan)
    ports = {name: (d, w) for d, w, name in emission.ports}
    assert ports["i__0__payload"] == ("input", layout.payload_width + dst_width(plan) + 2)
    assert ports["o__0__0__payload"] == ("output", layout.payload_width + 2)
    assert ports["o__0__0__valid"] == ("output", 1)
    assert "o__0__0__ready" not in ports  # endpoints always accept
    # i: payload, valid, ready; o: payload, valid (Amaranth adds clk and rst)
    attachments = len(plan.endpoints[0].attachments)
    assert len(emission.ports) == (3 + 2 * attachments) * len(plan.endpoints)


@pytest.mark.parametrize("name", ["torus-4x4", "ndt-2x2x2"])
def test_every_instance_connects_every_port_of_its_module(example, name):
    """Clock and reset included: an unconnected clock elaborates without complaint and then
    never moves a flit."""
    emission = emit(small_plan(example, name))
    for module, count in emission.kinds.items():
        header = re.search(rf"^module {module}\((.*?)\);", emission.text, re.M | re.S)
        ports = {p.strip() for p in header.group(1).split(",")}
        assert {"clk", "rst"} <= ports
        instances = re.findall(rf"^  {module} \S+ \((.*?)\n  \);", emission.text, re.M | re.S)
        assert len(instances) == count
        for connections in instances:
            assert set(re.findall(r"\.(\w+)\(", connections)) == ports


@pytest.mark.skipif(shutil.which("iverilog") is None, reason="iverilog is not installed")
@pytest.mark.parametrize("name", ["ndt-2x2x2", "snode-16"])
def test_icarus_elaborates_the_emitted_fabric(example, tmp_path, name):
    """Every instance names an emitted module and only ports it has."""
    plan = small_plan(example, name)
    emission = write(plan, tmp_path)
    verilog = tmp_path / f"{emission.top}.v"
    assert (tmp_path / f"{emission.top}.plan.json").read_text() == plan.to_json(indent=1)
    result = subprocess.run(
        ["iverilog", "-g2012", "-o", str(tmp_path / "a.out"), "-s", emission.top, str(verilog)],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""


@pytest.mark.skipif(shutil.which("iverilog") is None, reason="iverilog is not installed")
def test_a_comb_block_behind_a_constant_register_is_defined_in_icarus(tmp_path):
    """A ``m.Switch`` (an ``always @*``) whose only input is a register that never leaves its
    reset value must still run at time 0 under Icarus -g2012, cocotb's mode: the register
    has no event of its own, so only the emitted trigger can run the block."""
    from amaranth.hdl import Module, Signal
    from amaranth.lib import wiring
    from amaranth.lib.wiring import Out
    from zfabric.hdl.verilog import convert

    class Held(wiring.Component):
        def __init__(self):
            super().__init__({"out": Out(4)})

        def elaborate(self, platform):
            m = Module()
            state = Signal(2, init=1)
            m.d.sync += state.eq(state)
            with m.Switch(state):
                for value in range(4):
                    with m.Case(value):
                        m.d.comb += self.out.eq(1 << value)
            return m

    (tmp_path / "held.v").write_text(convert(Held(), "held"))
    (tmp_path / "tb.v").write_text(
        "module tb; reg clk = 0, rst = 0; wire [3:0] out;\n"
        "held dut(.clk(clk), .rst(rst), .out(out));\n"
        'initial begin #1 $display("out=%b", out); end\nendmodule\n'
    )
    build = ["iverilog", "-g2012", "-o", str(tmp_path / "a.out"), "-s", "tb"]
    subprocess.run(
        [*build, str(tmp_path / "held.v"), str(tmp_path / "tb.v")], check=True, cwd=tmp_path
    )
    result = subprocess.run(["vvp", "-n", str(tmp_path / "a.out")], capture_output=True, text=True)
    assert "out=0010" in result.stdout, result.stdout
