"""``zfabric hyperz-design``: the fully regular HyperZs for a processor count and a port budget
(M. Adda, "HyperZ: Hyper Z-Tree Topology", 2023, Eq. 3 and 4; :mod:`zfabric.hyperz_design`)."""

from __future__ import annotations

import argparse
import json

from zfabric.fields import short
from zfabric.hyperz_design import (
    DEFAULT_MAX_DIMS,
    DEFAULT_MAX_HEIGHT,
    Design,
    DesignSpace,
    explore,
    spec_for,
)

from .common import add_command, integer

__all__ = ["register", "run"]

#: the design space is arithmetic, so large counts are cheap; the bounds keep the output short
MAX_PROCESSORS = 10**12
MAX_PORTS = 4096
MAX_DIMS = 16
MAX_HEIGHT = 8
MAX_LANES = 64


def _lanes(text: str) -> tuple[int, ...]:
    """Comma-separated q values, each in 1..64."""
    try:
        values = tuple(sorted({int(part) for part in text.split(",")}))
    except ValueError:
        values = ()
    if not values or min(values) < 1 or max(values) > MAX_LANES:
        raise argparse.ArgumentTypeError(
            f"must be comma-separated integers in 1..{MAX_LANES}, got {short(text)}"
        )
    return values


def register(commands) -> None:
    parser = add_command(
        commands,
        "hyperz-design",
        "the fully regular HyperZs for a processor count within a port budget",
        description="Every fully regular HyperZ (z zones per level, s = z S-nodes per dimension,"
        " q side links per level) with at least P processors and at most L ports per switch:"
        " Eq. 3, 2z + dq(z-1) <= L, and Eq. 4, z^(h+d) >= P (Adda 2023, section 3).",
    )
    parser.add_argument(
        "--processors", "-P", required=True, type=integer(2, MAX_PROCESSORS), help="R_0min"
    )
    parser.add_argument(
        "--ports", "-L", required=True, type=integer(4, MAX_PORTS), help="L_max, ports per switch"
    )
    parser.add_argument(
        "--max-dims",
        type=integer(1, MAX_DIMS),
        default=DEFAULT_MAX_DIMS,
        help="dimensions d = 1..N of the generalised hypercube",
    )
    parser.add_argument(
        "--max-height",
        type=integer(1, MAX_HEIGHT),
        default=DEFAULT_MAX_HEIGHT,
        help="Z-node heights h = 1..N (h = 1 is HyperX)",
    )
    parser.add_argument(
        "--lanes", type=_lanes, default=(1,), metavar="Q,Q,...", help="side links per level q"
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.set_defaults(run=run)


def _design_json(design: Design, ports: int) -> dict:
    return {
        "d": design.d,
        "h": design.h,
        "q": design.q,
        "z": design.z,
        "notation": design.notation(),
        "processors": design.processors,
        "switches": design.switches,
        "ports": design.ports,
        "side_links": design.side_links,
        "tree_links": design.tree_links,
        "diameter": design.diameter,
        "spec": spec_for(design, ports),
    }


def _text(space: DesignSpace) -> str:
    lines = [
        f"fully regular HyperZs with >= {space.processors} processors and <= {space.ports} ports"
        " per switch: z^(h+d) >= P (Eq. 4), 2z + dq(z-1) <= L (Eq. 3), z >= 2",
        f"{'d':>3} {'h':>2} {'q':>3}  {'z from':>6} {'to':>4}  {'designs':>7}",
    ]
    for found in space.ranges:
        lines.append(
            f"{found.d:>3} {found.h:>2} {found.q:>3}  {found.low:>6} {found.high:>4} "
            f" {len(found.designs):>7}"
        )
    designs = sorted(space.designs, key=lambda x: (x.processors, x.ports, x.diameter))
    count = f"{len(designs)} design{'s' if len(designs) != 1 else ''}"
    lines.append(f"{count}, fewest processors first (diameter in links)")
    width = max((len(design.notation()) for design in designs), default=0)
    if designs:
        lines.append(
            f"  {'design':<{width}} {'processors':>11} {'switches':>10} {'ports':>6}"
            f" {'diameter':>9}"
        )
    for design in designs:
        lines.append(
            f"  {design.notation():<{width}} {design.processors:>11} {design.switches:>10}"
            f" {design.ports:>6} {design.diameter:>9}"
        )
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    space = explore(
        args.processors,
        args.ports,
        max_dims=args.max_dims,
        max_height=args.max_height,
        lanes=args.lanes,
    )
    if args.json:
        report = {
            "processors": space.processors,
            "ports": space.ports,
            "ranges": [
                {"d": r.d, "h": r.h, "q": r.q, "low": r.low, "high": r.high} for r in space.ranges
            ],
            "designs": [_design_json(design, space.ports) for design in space.designs],
        }
        print(json.dumps(report, indent=1))
        return 0
    print(_text(space))
    return 0
