"""The ``zfabric`` command line: thin, it parses, calls the library and prints.

One module per subcommand, each with ``register(subparsers)`` and ``run(args)``; this is the one
layer allowed to import ``zfabric.hdl``, ``zfabric.sim`` and ``zfabric.boards`` (lazily, inside
the commands), and the compiler modules never import it.

Exit status: 0 success; 1 the fabric is not deadlock-free or does not deliver, the RTL and
the model disagree, a board build fails or misses its clock, or a study's or sweep's point
failed after its retries; 2 a bad spec or bad arguments
(one line on stderr, no traceback); 3 the co-simulation could not run (simulator missing or its
build failed), or the formal tools are missing (``zfabric prove``).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from zfabric.errors import PlanError, SpecError

from . import (
    analytic,
    board,
    cache,
    check,
    cosim,
    faults,
    hyperz_design,
    ndt_configs,
    optimise,
    prove,
    run,
    simulate,
    study,
    sweep,
    synth,
    verilog,
)
from .common import HelpFormatter, Parser

__all__ = ["main", "build_parser"]

COMMANDS = (
    check, faults, verilog, synth, prove, ndt_configs, optimise, hyperz_design, simulate, sweep,
    study, analytic, cosim, board, run, cache,
)  # fmt: skip


def version() -> str:
    """The installed distribution's version."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    try:
        return installed("zfabric")
    except PackageNotFoundError:
        return "unknown (not installed)"


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="zfabric",
        description="Compile, check and analyse interconnection fabrics.",
        formatter_class=HelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {version()}")
    parser.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        help="no progress bars or status lines (results still print)",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        command.register(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except SpecError as error:
        print(f"zfabric: error: {error}", file=sys.stderr)
        return 2
    except PlanError as error:
        print(f"zfabric: the fabric does not route: {error}", file=sys.stderr)
        return 1
    except BrokenPipeError:  # output piped into head and the like
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except OSError as error:  # a file system refusing what the checks up front allowed
        where = f"{error.filename}: " if error.filename else ""
        print(f"zfabric: error: {where}{error.strerror or error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("zfabric: interrupted", file=sys.stderr)
        return 130
