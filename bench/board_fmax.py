"""A board build's Fmax over several nextpnr placement seeds, and its critical path.

Builds the self-checking board design of a target (``zfabric board build TARGET [SPEC]``: yosys
once, nextpnr and the packer once), then re-runs nextpnr on the same netlist with placement
seeds 1..N, one after the other, and prints each seed's post-route Fmax and the median. With
``--freq`` nextpnr is asked for that clock instead of the board's (its timing-driven placement
then works towards it); by default it gets the board clock, as in a plain build. The last
seed's critical path is summarised by module (the cells' hierarchical name prefixes) so one can
see whether the board logic or the switch limits the clock.

    .venv/bin/python bench/board_fmax.py [TARGET] [SPEC] [--seeds 3] [--freq MHZ] [--keep DIR]
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from zfabric.boards.build import board_build, parse_fmax, parse_utilisation, tool_environment

_STEP = re.compile(r"^Info:\s+(clk-to-q|logic|setup)\s+([\d.]+)\s+([\d.]+) Source (\S+)", re.M)


def nextpnr_argv(command: str, out: Path, seed: int, freq: float | None, log: str) -> list[str]:
    """The build's nextpnr command with its own log, no bitstream output, a seed and a clock.

    The board clock is a constraint in the build's constraint file (iCE40 ``set_frequency``,
    ECP5 ``FREQUENCY PORT``), which overrides nextpnr's ``--freq``: for another clock the
    constraint file is copied with the figure changed.
    """
    argv = command.split()
    if "--log" in argv:
        argv[argv.index("--log") + 1] = log
    for option in ("--asc", "--textcfg"):  # the place-and-route result is not needed
        if option in argv:
            del argv[argv.index(option) : argv.index(option) + 2]
    argv += ["--seed", str(seed)]
    if freq is not None:
        for option in ("--pcf", "--lpf"):
            if option in argv:
                position = argv.index(option) + 1
                original = out / argv[position]
                text = re.sub(
                    r"^(set_frequency \S+ )[\d.]+",
                    rf"\g<1>{freq:g}",
                    original.read_text(),
                    flags=re.M,
                )
                text = re.sub(r"(FREQUENCY PORT \S+ )[\d.]+", rf"\g<1>{freq:g}", text)
                (out / f"seeds{original.suffix}").write_text(text)
                argv[position] = f"seeds{original.suffix}"
        argv += ["--freq", f"{freq:g}", "--timing-allow-fail"]  # a miss is a figure here
    return argv


def critical_path(log: str) -> list[tuple[str, float]]:
    """(module, ns) per step of the first critical path report: where the time goes."""
    start = log.find("Critical path report for clock")
    end = log.find("Critical path report", start + 1)
    steps = []
    for match in _STEP.finditer(log[start : end if end > 0 else None]):
        cell = match[4]
        module = ".".join(cell.split(".")[:2]) if cell.startswith("core.") else cell.split(".")[0]
        steps.append((re.sub(r"_SB_.*|\$.*", "", module), float(match[2])))
    return steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("target", nargs="?", default="icebreaker")
    parser.add_argument("spec", nargs="?", help="the target's default spec when omitted")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--freq", type=float, help="clock asked of nextpnr, MHz (board clock)")
    parser.add_argument("--keep", help="build directory to keep (a temporary one otherwise)")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(args.keep or tmp)
        start = time.perf_counter()
        report = board_build(args.target, args.spec, out, progress=None)
        luts, ffs = report["utilisation"]["luts"], report["utilisation"].get("ffs", {})
        print(
            f"# {report['target']} ({report['device']}, board clock {report['clock_mhz']:g} MHz)"
            f", spec {report['spec']}: {luts['used']} LUT cells, {ffs.get('used', '?')} FF; "
            f"nextpnr asked for {args.freq or report['clock_mhz']:g} MHz, seeds 1..{args.seeds}, "
            f"one after the other"
        )
        (command,) = [c for c in report["commands"] if c.split()[0].startswith("nextpnr")]
        env, chosen = tool_environment()
        tool = command.split()[0]
        figures = []
        for seed in range(1, args.seeds + 1):
            log = f"seed{seed}.tim"
            argv = nextpnr_argv(command, out, seed, args.freq, log)
            subprocess.run(
                [chosen[tool], *argv[1:]], cwd=out, env=env, check=True, capture_output=True
            )
            text = (out / log).read_text()
            fmax = min(clock["fmax_mhz"] for clock in parse_fmax(text).values())
            used = parse_utilisation(report["family"], text)["luts"]["used"]
            figures.append(fmax)
            print(f"seed {seed}: {fmax:6.2f} MHz ({used} LUT cells)", flush=True)
        path = critical_path(text)
        modules: dict[str, float] = {}
        for module, ns in path:
            modules[module] = modules.get(module, 0.0) + ns
        total = re.search(r"Info: ([\d.]+) ns logic, ([\d.]+) ns routing", text)
        print(
            f"critical path of seed {args.seeds}: {total[1]} ns logic + {total[2]} ns routing; "
            "logic by module: " + ", ".join(f"{m} {ns:.1f} ns" for m, ns in modules.items())
        )
        print(f"({time.perf_counter() - start:.0f} s)")
        print(f"median Fmax over {args.seeds} seeds: {statistics.median(figures):.2f} MHz")


if __name__ == "__main__":
    main()
