"""``zfabric optimise``: the least-cost Znode for a processor count (A. Peratikou, "An optimised
and generalised node for fat tree classes", PhD thesis, University of Portsmouth, 2014, §4).

Prints every least-cost configuration of each level count (all ties) and the default pick of
each (:meth:`zfabric.optimise.Candidate.pick_key`); ``--write-specs`` writes the picks as
``kind: znode`` specs that ``zfabric check`` accepts.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

import yaml

from zfabric.errors import SpecError
from zfabric.fields import short
from zfabric.optimise import (
    CONNECTIVITIES,
    DEFAULT_MAX_LEVELS,
    DEFAULT_THETA,
    Candidate,
    LevelResult,
    Optimum,
    optimise,
    spec_for,
)
from zfabric.spec import spec_from_dict

from .common import OutputFolder, add_command, integer, status

__all__ = ["register", "run"]

#: the search is interactive up to 8192 processors (bench/optimise_speed.py); beyond 65536 the
#: fabric is far over the spec's own limit of 8192 endpoints anyway
MAX_PROCESSORS = 65536
#: every z_i >= 2, so 16 levels already need 65536 processors
MAX_LEVELS = 16
#: the full-connectivity search loops up to theta per level
MAX_THETA = 1024


def _psi(text: str) -> int | tuple[int, ...]:
    """``K`` (psi_1 = 1, psi_i = K above) or one value per level, comma-separated."""
    want = "an integer >= 1, or one integer >= 1 per level (comma-separated, the first 1)"
    try:
        values = tuple(int(part) for part in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be {want}, got {short(text)}") from None
    if min(values) < 1 or max(values) > 64 or (len(values) > 1 and values[0] != 1):
        raise argparse.ArgumentTypeError(f"must be {want} and <= 64, got {short(text)}")
    return values[0] if len(values) == 1 else values


def register(commands) -> None:
    parser = add_command(
        commands,
        "optimise",
        "the least-cost Znode for a processor count, every tie per level",
        description="Search every level count and ordered factorisation for the Znodes of least "
        "cost = sum of R_i^T * L_i^2 (relative power 10*log10(cost/P^2) dB), under the "
        "thesis's constraints (Peratikou 2014, section 4).",
    )
    parser.add_argument(
        "--processors", "-P", required=True, type=integer(2, MAX_PROCESSORS), help="P"
    )
    levels = parser.add_mutually_exclusive_group()
    levels.add_argument("--levels", type=integer(1, MAX_LEVELS), help="exactly n levels")
    levels.add_argument(
        "--max-levels",
        type=integer(1, MAX_LEVELS),
        help=f"1..n levels (default {DEFAULT_MAX_LEVELS} when --levels is not given)",
    )
    parser.add_argument(
        "--theta", type=integer(1, MAX_THETA), default=DEFAULT_THETA, help="links per switch"
    )
    parser.add_argument(
        "--connectivity",
        choices=CONNECTIVITIES,
        default="forward",
        help="R grows upward by integer ratios (forward), shrinks (backward), or every switch "
        "of a zone joins every switch of its parent zone (full)",
    )
    parser.add_argument(
        "--znodes", "-m", type=integer(1, MAX_PROCESSORS), default=1, help="Znodes (super node)"
    )
    parser.add_argument(
        "--psi",
        type=_psi,
        help="connectivity degree: K for every bundle above level 1, or one value per level "
        "(with --levels) starting with 1; default 1 (not with --connectivity full)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument(
        "--write-specs",
        metavar="DIR",
        help="write each level's pick as DIR/znode-P[-mM]-nN.yaml (never over a file zfabric "
        "did not write)",
    )
    parser.set_defaults(run=run)


def _check_args(args: argparse.Namespace) -> None:
    if args.processors % args.znodes:
        raise SpecError(
            "--znodes", f"must divide --processors {args.processors}, got {args.znodes}"
        )
    if args.psi is not None and args.connectivity == "full":
        raise SpecError("--psi", f"is implied by --connectivity full, got {args.psi!r}")
    if isinstance(args.psi, tuple) and len(args.psi) != args.levels:
        need = f"--levels {args.levels}" if args.levels else "--levels (a list is per level)"
        raise SpecError("--psi", f"needs one value per level of {need}, got {short(args.psi)}")


def _candidate_json(candidate: Candidate) -> dict[str, Any]:
    return {
        "z": list(candidate.z),
        "R": list(candidate.R),
        "psi": list(candidate.psi),
        "links": list(candidate.links),
        "cost": candidate.cost,
        "relative_power_db": round(candidate.relative_power_db, 4),
    }


def _write_specs(
    args: argparse.Namespace, out: OutputFolder, optimum: Optimum
) -> tuple[list[str], dict[int, str]]:
    """Write the picks the spec accepts; returns the files and, per level count, why a pick
    was not written (over the spec's size limits)."""
    specs, refused = {}, {}
    for result in optimum.levels:
        spec = spec_for(result.pick, optimum.theta, optimum.connectivity)
        try:
            spec_from_dict(spec, spec["name"])
        except SpecError as error:
            refused[result.levels] = str(error)
            continue
        specs[f"{spec['name']}.yaml"] = spec
    if not specs:
        raise SpecError("--write-specs", "no pick fits the spec's limits: " + refused.popitem()[1])
    out.check(specs)
    with out.staging() as staging:
        for name, spec in specs.items():
            (staging / name).write_text(yaml.safe_dump(spec, sort_keys=False, width=100))
        written = out.commit(staging)
    return [str(out.path / name) for name in written], refused


def _text(optimum: Optimum, args: argparse.Namespace) -> str:
    psi = "1" if args.psi is None else short(args.psi)
    lines = [
        f"{optimum.processors} processors, {optimum.znodes} Znode(s), {optimum.connectivity} "
        f"connectivity, theta {optimum.theta}, psi {psi}: cost = m * sum R_i^T L_i^2, "
        "relative power 10 log10(cost / P^2)",
        f"{'levels':>6}  {'cost':>12}  {'dB':>7}  {'ties':>4}  pick (L: links per switch)",
    ]
    for result in optimum.levels:
        lines.append(
            f"{result.levels:>6}  {result.cost:>12}  {result.pick.relative_power_db:>7.2f}  "
            f"{len(result.ties):>4}  {_config(result.pick)}"
        )
    best = optimum.best
    lines.append(
        f"least cost {best[0].pick.relative_power_db:.2f} dB at levels "
        f"{', '.join(str(r.levels) for r in best)}; default pick: {best[0].levels} levels "
        f"(the fewest hops), {_config(best[0].pick)}"
    )
    for result in optimum.levels:
        lines.append(f"ties at {result.levels} levels ({result.pick.relative_power_db:.2f} dB):")
        lines.extend(f"  {_config(candidate)}" for candidate in result.ties)
    return "\n".join(lines)


def _config(candidate: Candidate) -> str:
    def join(values: tuple[int, ...]) -> str:
        return "(" + ",".join(map(str, values)) + ")"

    return (
        f"z={join(candidate.z)} R={join(candidate.R)} psi={join(candidate.psi)} "
        f"L={join(candidate.links)}"
    )


def _level_json(result: LevelResult) -> dict[str, Any]:
    return {
        "levels": result.levels,
        "cost": result.cost,
        "relative_power_db": round(result.pick.relative_power_db, 4),
        "pick": _candidate_json(result.pick),
        "ties": [_candidate_json(candidate) for candidate in result.ties],
    }


def run(args: argparse.Namespace) -> int:
    _check_args(args)
    out = (
        OutputFolder(args.write_specs, "--write-specs", exclusive=False)
        if args.write_specs
        else None
    )
    if args.levels:
        counts = [args.levels]
    else:
        counts = list(range(1, (args.max_levels or DEFAULT_MAX_LEVELS) + 1))
    optimum = optimise(
        args.processors,
        counts,
        theta=args.theta,
        connectivity=args.connectivity,
        znodes=args.znodes,
        psi=args.psi,
    )
    if not optimum.levels:
        span = f"{counts[0]}..{counts[-1]}" if len(counts) > 1 else f"{counts[0]}"
        raise SpecError(
            "--processors",
            f"no Znode of {span} levels for {args.processors} processors meets the "
            f"constraints ({args.connectivity} connectivity, theta {args.theta}, "
            f"{args.znodes} Znode(s))",
        )
    written, refused = _write_specs(args, out, optimum) if out else ([], {})
    if args.json:
        report = {
            "processors": optimum.processors,
            "znodes": optimum.znodes,
            "theta": optimum.theta,
            "connectivity": optimum.connectivity,
            "psi": args.psi if args.psi is not None else 1,
            "levels": [_level_json(result) for result in optimum.levels],
            "best_levels": [result.levels for result in optimum.best],
            "pick_levels": optimum.best[0].levels,
            "specs": written,
            "specs_refused": {str(levels): why for levels, why in refused.items()},
        }
        print(json.dumps(report, indent=1))
    else:
        print(_text(optimum, args))
        for path in written:
            status(args, f"wrote {path}")
        for levels, why in refused.items():
            status(args, f"not written: the {levels}-level pick: {why}")
    return 0
