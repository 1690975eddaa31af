"""``zfabric board targets|build``: self-checking FPGA prototypes of a fabric."""

from __future__ import annotations

import argparse
import json
import sys
from functools import partial

from zfabric.errors import SpecError

from .common import add_command, check_output_dir, phase, status

__all__ = ["register", "run_targets", "run_build"]


def register(commands) -> None:
    from zfabric.boards.targets import TARGETS  # no FPGA packages needed to list them

    board = add_command(commands, "board", "self-checking FPGA prototypes of a fabric")
    actions = board.add_subparsers(dest="board_command", required=True, metavar="ACTION")
    targets = add_command(actions, "targets", "list the boards and their default specs")
    targets.set_defaults(run=run_targets)
    build = add_command(
        actions, "build", "bitstream with traffic generators, checkers and a UART report"
    )
    build.add_argument("target", help=f"board: {', '.join(TARGETS)} (see `zfabric board targets`)")
    build.add_argument("spec", nargs="?", help="fabric spec (YAML); default: the board's own")
    build.add_argument(
        "-o", "--output", metavar="DIR", help="build folder (default: build/TARGET-SPEC)"
    )
    build.add_argument(
        "--plan-only", action="store_true", help="write the build plan, do not run the tools"
    )
    build.add_argument("--json", action="store_true", help="print the report as JSON")
    build.set_defaults(run=run_build)


def run_targets(args: argparse.Namespace) -> int:
    """The boards ``zfabric board build`` knows, with their default specs."""
    from zfabric.boards.targets import TARGETS

    for target in TARGETS.values():
        print(f"{target.name:15} {target.board} ({target.device}); default spec {target.spec}")
    return 0


def run_build(args: argparse.Namespace) -> int:
    """Build (or with --plan-only, prepare) a self-checking board design around a fabric."""
    from zfabric.boards.targets import TARGETS

    if args.target not in TARGETS:
        raise SpecError("TARGET", f"unknown board {args.target!r}; known: {', '.join(TARGETS)}")
    if args.output:
        check_output_dir(args.output, "--output")
    from zfabric.boards.build import BuildError, board_build, format_report

    try:
        with phase(args, f"board build {args.target}"):
            report = board_build(
                args.target,
                args.spec,
                args.output,
                plan_only=args.plan_only,
                progress=partial(status, args),
            )
    except BuildError as error:
        where = f" (log: {error.log})" if error.log else ""
        print(f"zfabric: board build failed: {error}{where}", file=sys.stderr)
        return 1
    print(json.dumps(report, indent=1) if args.json else format_report(report))
    return 0 if not report["built"] or report["timing_pass"] else 1
