"""``zfabric verilog``: emit the fabric's Verilog, its plan JSON and a port list."""

from __future__ import annotations

import argparse

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
    parser.add_argument("--flat", action="store_true", help="one module per switch instance")
    parser.add_argument(
        "--allow-deadlock", action="store_true", help="emit even if the CDG is cyclic"
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Emit into a staging folder, then move the files in (refusing a cyclic plan)."""
    out = OutputFolder(args.output, "--output", exclusive=False)
    spec, plan, _analysis, ok = checked_plan(args, args.spec)
    if not ok:
        return 1
    from zfabric.hdl.verilog import SUFFIXES, top_module_name, write

    top = top_module_name(plan)
    out.check(f"{top}{suffix}" for suffix in SUFFIXES)
    status(args, f"{spec.name}: emitting Verilog")
    with out.staging() as staging:
        with phase(args, "Verilog"):
            emission = write(plan, staging, share=not args.flat)
        out.commit(staging)
    lines = emission.text.count("\n")
    print(f"{spec.name}: {len(plan.switches)} switches, {len(plan.endpoints)} endpoints")
    for module, count in emission.kinds.items():
        print(f"  module {module}: {count} instances")
    print(
        f"wrote {out.path / (emission.top + '.v')} ({lines} lines, {emission.seconds:.1f} s),"
        f" {emission.top}.vlt, {emission.top}.plan.json and {emission.top}.ports"
    )
    return 0
