"""``zfabric board targets|build``: self-checking FPGA prototypes of a fabric."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from zfabric.errors import SpecError
from zfabric.routing import require_route_unit

from .common import OutputFolder, add_command, phase, status

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
        "-o",
        "--output",
        metavar="DIR",
        help="build folder: new, empty, or written by zfabric before (default: build/TARGET-SPEC)",
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
    """Build (or with --plan-only, prepare) a self-checking board design around a fabric.

    The output folder follows ``zfabric run``'s rule (:class:`~.common.OutputFolder`): new,
    empty, or written by zfabric before; the build happens in a staging folder inside it whose
    files (the plan, logs and products, a failed build's logs too) are then moved in."""
    from zfabric import load_spec
    from zfabric.boards.targets import TARGETS

    if args.target not in TARGETS:
        raise SpecError("TARGET", f"unknown board {args.target!r}; known: {', '.join(TARGETS)}")
    if args.output:  # before any work; the default needs the spec's name
        OutputFolder(args.output, "--output", exclusive=True)
    spec = load_spec(args.spec or TARGETS[args.target].spec_path)
    require_route_unit(spec, "board")
    out = OutputFolder(
        args.output or f"build/{args.target}-{spec.name}", "--output", exclusive=True
    )
    from zfabric.boards.build import BuildError, board_build, format_report

    with out.staging() as staging:

        def moved(path: str) -> str:  # a path in the staging folder, once committed
            return str(out.path / Path(path).relative_to(staging))

        try:
            with phase(args, f"board build {args.target}"):
                report = board_build(
                    args.target,
                    args.spec,
                    staging,
                    plan_only=args.plan_only,
                    # the staging folder's files end up in the output folder: say that one
                    progress=lambda text: status(args, text.replace(str(staging), str(out.path))),
                )
        except BuildError as error:
            if any(staging.iterdir()):  # a failed step's logs: kept (a refused spec has none)
                out.commit(staging)
            where = f" (log: {moved(error.log)})" if error.log else ""
            print(f"zfabric: board build failed: {error}{where}", file=sys.stderr)
            return 1
        out.commit(staging)
    report["out_dir"] = str(out.path)
    if "bitstream" in report:
        report["bitstream"] = [moved(path) for path in report["bitstream"]]
    print(json.dumps(report, indent=1) if args.json else format_report(report))
    return 0 if not report["built"] or report["timing_pass"] else 1
