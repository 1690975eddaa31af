"""``zfabric sweep``: latency-throughput curves over injection rates, a one-spec study each
(:mod:`zfabric.sim.study`: parallel with ``--workers``, cached with ``--cache``),"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from zfabric.errors import SpecError
from zfabric.sim.curve import describe_knee, knee_fields
from zfabric.spec import load_spec

from .common import (
    add_command,
    add_executor_arguments,
    check_output_file,
    check_plot_file,
    checked_plan,
    claim_output_file,
    executor,
    progress,
    rate_text,
    report_deadlocks,
)
from .experiment import add_engine_argument, add_traffic_arguments, point_status, resolve

__all__ = ["register", "run"]


def register(commands) -> None:
    parser = add_command(commands, "sweep", "latency-throughput curves over injection rates")
    parser.add_argument("spec", nargs="+", help="one or more fabric specs (YAML)")
    parser.add_argument(
        "--plot",
        metavar="FILE",
        help="write the latency-throughput plot; the suffix picks the format (.png, .pdf, .svg...)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument(
        "--cache",
        metavar="FILE",
        help="keep each point's result in FILE (JSON lines, appended as points complete): a"
        " rerun computes only the points FILE lacks",
    )
    add_traffic_arguments(parser, sweep=True)
    add_engine_argument(parser)
    add_executor_arguments(parser, default_workers=0)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """A one-spec study per spec (:mod:`zfabric.sim.study`): every rate, then each curve's
    knee bisected to 0.01, on the executor of ``--workers`` / ``--scheduler``. Exit 1 when a
    point failed or the model deadlocked at one (its knot on stderr, every point kept)."""
    from zfabric.sim.plot import plot_curves
    from zfabric.sim.study import PointCache, Study, failure_summary, run_study, spec_points

    if args.plot:
        check_plot_file(args.plot, "--plot")
    if args.cache:
        why = None if Path(args.cache).is_dir() else PointCache.check(args.cache)
        if why:
            raise SpecError("--cache", f"{args.cache!r} is not a zfabric points file: {why}")
        check_output_file(args.cache, "--cache", recognised=True)
    if len(args.spec) > 1:  # every spec's errors up front, each naming its file
        for path in args.spec:
            try:
                load_spec(path)
            except SpecError as error:
                named = [
                    e if not e.path or e.path == path else SpecError(f"{path}: {e.path}", e.message)
                    for e in error.errors
                ]
                raise SpecError.combine(named) from None
    points, plans, experiments, paths = [], {}, {}, {}
    for path in args.spec:
        spec, plan, _analysis, ok = checked_plan(args, path)
        if not ok:
            return 1
        if spec.name in paths:  # curves, the plot's legend and --json are keyed by name
            raise SpecError(
                "spec",
                f"{path!r} is named {spec.name!r}, as {paths[spec.name]!r} is: give each curve"
                " a spec of its own name",
            )
        paths[spec.name] = path
        experiment = resolve(args, spec, plan)
        config = experiment.config(experiment.rates[0])
        points += spec_points(path, spec.name, config, experiment.rates, seed=experiment.seed,
                              warmup=experiment.warmup, cycles=experiment.cycles,
                              engine=args.engine)  # fmt: skip
        plans[spec.name] = plan
        experiments[spec.name] = experiment
    study = Study("sweep", tuple(points), refine=0.01, retries=2)
    with (
        PointCache(args.cache) as cache,
        executor(args, study.retries) as runner,
        progress(args, "sweep rates", "runs") as update,
    ):
        records = run_study(study, runner, cache, progress=update)
    curves: dict[str, list[dict[str, Any]]] = {name: [] for name in plans}
    for record in records:
        if record["status"] == "ok":
            curves[record["inputs"]["spec"]].append(record["result"])
    for name, points in curves.items():
        point_status(args, name, points)
    if args.plot:
        patterns = {e.pattern for e in experiments.values()}
        lengths = ", ".join(sorted({e.lengths() for e in experiments.values()}))
        title = f"{'/'.join(sorted(patterns))} traffic, packets of {lengths}"
        claim_output_file(args.plot, "--plot")
        depths = {name: plan.buffer_depth for name, plan in plans.items()}
        plot_curves(curves, Path(args.plot), title=title, buffer_depth=depths)
    if args.json:
        report = {
            name: {
                "inputs": experiments[name].inputs(name),
                **knee_fields(points),
                "points": points,
            }
            for name, points in curves.items()
        }
        print(json.dumps(report, indent=1))
    else:
        for name, points in curves.items():
            print(f"{name}: packets of {experiments[name].lengths()}")
            print(f"  knee: {describe_knee(points)}")
            print("  rate: offered -> accepted, mean latency")
            for point in points:
                mean = point["latency"]["mean"]
                shown = "n/a" if mean is None else f"{mean:.2f}"
                flag = "  deadlocked" if point["deadlock"] else ""
                flag = flag or ("  saturated" if point["saturated"] else "")
                measured = f"{point['offered']:.3f} -> {point['accepted']:.3f}"
                print(f"  {rate_text(point['rate'])}: {measured}, {shown}{flag}")
    failed = failure_summary(records)
    for line in failed:
        print(f"zfabric: failed: {line}", file=sys.stderr)
    deadlocked = [report_deadlocks(name, points) for name, points in curves.items()]
    return 1 if failed or any(deadlocked) else 0
