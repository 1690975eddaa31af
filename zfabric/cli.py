"""The ``zfabric`` command line: thin, it parses, calls the library and prints.

Exit status: 0 success; 1 the fabric is not deadlock-free or does not deliver; 2 a bad spec
or bad arguments (one line on stderr, no traceback).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from .deadlock import analyse_routing
from .errors import PlanError, SpecError
from .metrics import FabricMetrics, fabric_metrics
from .spec import FabricSpec, load_spec
from .topologies import build_fabric

__all__ = ["main", "write_atomically"]


def write_atomically(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` via a temporary file, so a failure leaves no partial file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def progress_printer(label: str) -> Callable[[int, int], None] | None:
    """A ``(done, total)`` callback that redraws one stderr line, or None when not a terminal."""
    if not sys.stderr.isatty():
        return None
    started = time.monotonic()

    def show(done: int, total: int) -> None:
        if done == total or done % max(1, total // 100) == 0:
            elapsed = time.monotonic() - started
            end = "\n" if done == total else ""
            print(f"\r{label}: {done}/{total} ({elapsed:.1f} s)", end=end, file=sys.stderr)

    return show


def _describe_topology(spec: FabricSpec) -> str:
    params = spec.params.__dict__
    shown = ", ".join(f"{key}={_short(value)}" for key, value in params.items())
    return f"{spec.kind} ({shown})"


def _short(value: Any) -> str:
    if isinstance(value, tuple) and all(isinstance(v, int) for v in value):
        return "x".join(map(str, value))
    return str(value)


def _summary(spec: FabricSpec, metrics: FabricMetrics, cycle: list[str] | None) -> str:
    radix = ", ".join(f"{r} ({n} switches)" for r, n in metrics.radix.items())
    vcs = ", ".join(f"{role} {n}" for role, n in metrics.vcs.items())
    lines = [
        f"{spec.name}: {_describe_topology(spec)}, routing {spec.routing}",
        f"  endpoints {metrics.endpoints}, switches {metrics.switches}, links {metrics.links}"
        f" (+{metrics.endpoint_links} endpoint links)",
        f"  radix: {radix}",
        f"  VCs per link: {vcs}",
        f"  routes: diameter {metrics.diameter}, average {metrics.average_hops:.3f}"
        " switch-to-switch hops",
        "  bisection: "
        + (
            f"{metrics.bisection} links" if metrics.bisection is not None else "skipped (too large)"
        ),
    ]
    transit = metrics.extra.get("internal_transit")
    if transit:
        lines.append(
            f"  internal-link transit paths per node: {transit['crossing']} of {transit['transit']}"
        )
    if cycle:
        lines.append("  DEADLOCK: channel dependency cycle:")
        lines.extend(f"    {channel} ->" for channel in cycle)
        lines.append(f"    {cycle[0]}")
    else:
        lines.append("  deadlock-free: yes (channel dependency graph is acyclic)")
    return "\n".join(lines)


def cmd_check(args: argparse.Namespace) -> int:
    spec = load_spec(args.spec)
    plan, graph = build_fabric(spec)
    if args.plan_out:
        write_atomically(Path(args.plan_out), plan.to_json(indent=1) + "\n")
    analysis = analyse_routing(plan, progress=progress_printer("routes"))
    metrics = fabric_metrics(plan, analysis, graph)
    if args.json:
        report = {
            "name": spec.name,
            "topology": spec.kind,
            "routing": spec.routing,
            "endpoints": metrics.endpoints,
            "switches": metrics.switches,
            "links": metrics.links,
            "endpoint_links": metrics.endpoint_links,
            "max_radix": metrics.max_radix,
            "radix": metrics.radix,
            "vcs": metrics.vcs,
            "diameter": metrics.diameter,
            "average_hops": metrics.average_hops,
            "bisection": metrics.bisection,
            "deadlock_free": analysis.deadlock_free,
            "cycle": analysis.cycle,
            **metrics.extra,
        }
        print(json.dumps(report, indent=1))
    else:
        print(_summary(spec, metrics, analysis.cycle))
    return 0 if analysis.deadlock_free else 1


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="zfabric", description="Compile, check and analyse interconnection fabrics."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    check = commands.add_parser(
        "check", help="compile a spec, prove it deadlock-free and print its metrics"
    )
    check.add_argument("spec", help="fabric spec (YAML)")
    check.add_argument("--json", action="store_true", help="print one JSON object")
    check.add_argument("--plan-out", metavar="PLAN.json", help="write the compiled plan as JSON")
    check.set_defaults(run=cmd_check)
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
    except KeyboardInterrupt:
        print("zfabric: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
