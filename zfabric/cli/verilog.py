"""``zfabric verilog``: emit the fabric's Verilog, its plan JSON, a port list, a README, an
instantiation template and a self-checking testbench."""

from __future__ import annotations

import argparse
import json
import sys

from zfabric.errors import SpecError
from zfabric.report import router_text

from .common import OutputFolder, add_command, checked_plan, phase, status

__all__ = ["register", "run"]


def register(commands) -> None:
    parser = add_command(
        commands, "verilog", "emit the fabric's Verilog, its plan JSON and a port list"
    )
    parser.add_argument("spec", help="fabric spec (YAML)")
    parser.add_argument(
        "-o",
        "--output",
        metavar="DIR",
        default="build",
        help="output folder; files zfabric did not write there are never overwritten",
    )
    parser.add_argument(
        "--flat",
        action="store_true",
        help="one flat top module: every switch and endpoint inlined, no module per kind",
    )
    parser.add_argument(
        "--split", action="store_true", help="one Verilog file per module (NAME.f lists them)"
    )
    parser.add_argument(
        "--figures",
        metavar="JSON",
        help="the output of `zfabric synth SPEC --json` for this spec: its resource (and Fmax)"
        " figures go into NAME_README.md",
    )
    parser.add_argument(
        "--reset",
        choices=["rst", "aresetn"],
        default="rst",
        help="the top's reset port: rst (synchronous, active high) or aresetn (synchronous,"
        " active low, as AXI's ARESETn), in the Verilog, the port list, the instantiation"
        " template and the testbench",
    )
    parser.add_argument(
        "--allow-deadlock", action="store_true", help="emit even if the CDG is cyclic"
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Emit into a staging folder, then move the files in (refusing a cyclic plan)."""
    out = OutputFolder(args.output, "--output", exclusive=False)
    spec, plan, analysis, ok = checked_plan(args, args.spec, rtl="verilog")
    if not ok:
        return 1
    from zfabric.hdl.fabric_docs import Hops
    from zfabric.hdl.verilog import SUFFIXES, EmissionError, top_module_name, write
    from zfabric.metrics import fabric_metrics
    from zfabric.sim.analytic import lone_packet_latency

    top = top_module_name(plan)
    figures = _figures(args.figures, top, plan) if args.figures else None
    # the module files of --split are known after emission: the commit checks them, before
    # moving any file in
    out.check([f"{top}{suffix}" for suffix in SUFFIXES] + ([f"{top}.f"] if args.split else []))
    with out.staging() as staging:
        status(args, f"{spec.name}: emitting Verilog")
        try:
            with phase(args, "Verilog"):
                emission = write(
                    plan,
                    staging,
                    share=not args.flat,
                    split=args.split,
                    hops=Hops(fabric_metrics(plan, analysis).routes(), *lone_packet_latency(plan)),
                    figures=figures,
                    reset=args.reset,
                )
        except EmissionError as error:  # nothing is moved into the output folder
            print(f"zfabric: error: {spec.name}: {error}", file=sys.stderr)
            return 1
        if figures is not None:  # before the commit: a mismatch moves nothing in
            _check_figure_modules(args.figures, figures, emission.kinds)
        out.commit(staging, replaces=_earlier_split(out, top))
    lines = emission.text.count("\n")
    print(f"{spec.name}: {len(plan.switches)} switches, {len(plan.endpoints)} endpoints")
    for module, count in emission.kinds.items():
        print(f"  module {module}: {count} instances")
    for module, kind in emission.submodules.items():
        print(f"  module {module}: one in each {kind}")
    modules = {f"{module}.v" for module in [top, *emission.kinds, *emission.submodules]}
    verilog = f"{len(modules)} files" if args.split else f"{top}.v"
    others = [name for name in emission.files if name not in modules]
    print(
        f"wrote into {out.path}: the Verilog ({verilog}, {lines} lines, {emission.seconds:.1f} s),"
        f" {', '.join(others)}"
    )
    return 0


def _earlier_split(out: OutputFolder, top: str) -> list[str]:
    """The files of an earlier ``--split`` emission of ``top`` into ``out``: its file list
    ``TOP.f`` and the module files it names, those zfabric wrote (the manifest lists them).
    An emission of ``top`` supersedes them: without ``--split`` (or with other modules) the
    list and the module files it no longer writes would be stale."""
    file_list = f"{top}.f"
    if file_list not in out.owned or not (out.path / file_list).is_file():
        return []
    named = (line.strip() for line in (out.path / file_list).read_text().splitlines())
    return [file_list, *(name for name in named if name in out.owned)]


def _figures(path: str, top: str, plan) -> dict:
    """The report of ``zfabric synth --json`` in ``path``, which must be for this fabric: its
    top, flit width, buffer depth and router (the module kinds are compared after emission,
    :func:`_check_figure_modules`); every field the README reads must have its type."""

    def bad(what: str) -> SpecError:
        return SpecError(
            "--figures", f"{path!r} is not the output of `zfabric synth --json`: {what}"
        )

    try:
        with open(path) as handle:
            report = json.load(handle)
    except (OSError, ValueError) as error:
        raise SpecError("--figures", f"cannot read {path!r}: {error}") from None
    if not isinstance(report, dict):
        raise bad("not a JSON object")
    for key, kind in (("top", str), ("kinds", list), ("total", dict), ("conditions", dict)):
        if not isinstance(report.get(key), kind):
            raise bad(f"{key!r} missing or not a {kind.__name__}")

    def counts(value, where: str) -> None:
        if not isinstance(value, dict) or not all(
            isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in value.values()
        ):
            raise bad(f"{where} must map cell names to counts")

    counts(report["total"], "total")
    for index, kind in enumerate(report["kinds"]):
        where = f"kinds[{index}]"
        if not isinstance(kind, dict) or not isinstance(kind.get("module"), str):
            raise bad(f"{where} has no module name")
        if not isinstance(kind.get("instances"), int) or isinstance(kind["instances"], bool):
            raise bad(f"{where}.instances must be an integer")
        counts(kind.get("cells"), f"{where}.cells")
        if set(kind["cells"]) != set(report["total"]):
            raise bad(f"{where}.cells names other cells than total")
        fmax = kind.get("fmax_median_mhz")
        if fmax is not None and (isinstance(fmax, bool) or not isinstance(fmax, (int, float))):
            raise bad(f"{where}.fmax_median_mhz must be a number or null")
    if report["top"] != top:
        raise SpecError(
            "--figures", f"{path!r} has the figures of {report['top']!r}, not of {top!r}"
        )
    conditions = report["conditions"]
    for key, ours in (
        ("flit_width", plan.flit_width),
        ("buffer_depth", plan.buffer_depth),
        ("router", router_text(plan.router)),
    ):
        if conditions.get(key) != ours:
            raise SpecError(
                "--figures",
                f"{path!r} is for {key} {conditions.get(key)!r}, this fabric has {ours!r}",
            )
    return report


def _check_figure_modules(path: str, figures: dict, kinds: dict[str, int]) -> None:
    """The report's module kinds and their instances must be the ones this emission wrote."""
    theirs = {kind["module"]: kind["instances"] for kind in figures["kinds"]}
    if theirs != kinds:
        raise SpecError(
            "--figures",
            f"{path!r} has figures of the module kinds {theirs}, this fabric's are {kinds}",
        )
