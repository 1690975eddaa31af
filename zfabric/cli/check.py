"""``zfabric check``: compile a spec, prove it deadlock-free, print its metrics
(:func:`zfabric.report.check_fabric` does the work)."""

from __future__ import annotations

import argparse
import json

from zfabric.report import check_fabric
from zfabric.spec import load_spec

from .common import add_command, check_output_file, progress, write_atomically

__all__ = ["register", "run"]


def register(commands) -> None:
    parser = add_command(
        commands, "check", "compile a spec, prove it deadlock-free and print its metrics"
    )
    parser.add_argument("spec", help="fabric spec (YAML)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--plan-out", metavar="PLAN.json", help="write the compiled plan as JSON")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    if args.plan_out:
        check_output_file(args.plan_out, "--plan-out")
    spec = load_spec(args.spec)
    with progress(args, "routes", "destinations") as update:
        checked = check_fabric(spec, progress=update)
    if args.plan_out:
        write_atomically(
            args.plan_out, checked.plan.to_json(indent=1) + "\n", argument="--plan-out"
        )
    print(json.dumps(checked.report(), indent=1) if args.json else checked.text())
    return 0 if checked.deadlock_free else 1
