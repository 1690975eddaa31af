"""``zfabric verilog``: emit the fabric's Verilog, its plan JSON, a port list, a README, an
instantiation template and a self-checking testbench."""

from __future__ import annotations

import argparse
import json
import sys

from zfabric.errors import SpecError

from .check import checked_plan
from .common import OutputFolder, add_command, phase, status

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

    top = top_module_name(plan)
    figures = _figures(args.figures, top) if args.figures else None
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
                    hops=Hops(analysis.diameter, analysis.average_hops),
                    figures=figures,
                )
        except EmissionError as error:  # nothing is moved into the output folder
            print(f"zfabric: error: {spec.name}: {error}", file=sys.stderr)
            return 1
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


def _figures(path: str, top: str) -> dict:
    """The report of ``zfabric synth --json`` in ``path``, which must be for the fabric ``top``."""
    try:
        with open(path) as handle:
            report = json.load(handle)
    except (OSError, ValueError) as error:
        raise SpecError("--figures", f"cannot read {path!r}: {error}") from None
    kinds = report.get("kinds") if isinstance(report, dict) else None
    if (
        not isinstance(kinds, list)
        or not isinstance(report.get("total"), dict)
        or not all(
            isinstance(k, dict) and {"module", "instances", "cells"} <= set(k) for k in kinds
        )
    ):
        raise SpecError("--figures", f"{path!r} is not the output of `zfabric synth --json`")
    if report["top"] != top:
        raise SpecError(
            "--figures", f"{path!r} has the figures of {report['top']!r}, not of {top!r}"
        )
    return report
