"""``zfabric study``: a grid of specs x traffic x rates x seeds on Dask, cached per point.

Also the executor options and set-up that ``sweep`` shares (:func:`add_executor_arguments`,
:func:`executor`). The engine is :mod:`zfabric.sim.study`; docs/studies.md has the file format.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from pathlib import Path

from zfabric.errors import SpecError

from .common import (
    PLOT_FORMATS,
    OutputFolder,
    add_command,
    add_executor_arguments,
    executor,
    progress,
    report_deadlocks,
)
from .experiment import add_engine_argument

__all__ = ["register", "run", "POINTS_FILE"]

#: the per-point cache in a study's output folder (JSON lines, appended as points complete)
POINTS_FILE = "points.jsonl"
TABLES = ("table.csv", "table.jsonl")


def register(commands) -> None:
    parser = add_command(
        commands,
        "study",
        "run a study file's grid of model runs on Dask, resumable and cached per point",
    )
    parser.add_argument("study", help="study file (YAML; see docs/studies.md)")
    parser.add_argument(
        "-o",
        "--output",
        metavar="DIR",
        required=True,
        help="folder for table.csv, table.jsonl, the plots and points.jsonl (the per-point"
        " cache: a rerun into the same folder computes only the points it lacks)",
    )
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    add_executor_arguments(parser, default_workers=cores or 1)
    add_engine_argument(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Exit 1 when a point failed after its retries or the model deadlocked at one (each
    deadlock's knot on stderr); the table keeps every point either way."""
    from zfabric.sim.study import (
        PointCache,
        curves,
        failure_summary,
        load_study,
        run_study,
        select,
        table_rows,
        write_csv,
        write_jsonl,
    )

    folder = OutputFolder(args.output, "-o", exclusive=False)
    study = load_study(args.study, plot_formats=PLOT_FORMATS)
    points = tuple(dataclasses.replace(point, engine=args.engine) for point in study.points)
    study = dataclasses.replace(study, points=points)
    outputs = [*TABLES, *study.plots]
    folder.check([*outputs, POINTS_FILE])  # a file of the user's is refused here
    why = PointCache.check(folder.path / POINTS_FILE)
    if why:
        raise SpecError("-o", f"{str(folder.path / POINTS_FILE)!r}: {why}")
    computed: list[dict] = []
    with executor(args, study.retries) as runner:  # a scheduler that does not answer: no files
        if POINTS_FILE not in folder.owned:  # list the cache before anything is written in it
            with folder.staging() as staging:
                (staging / POINTS_FILE).touch()
                folder.commit(staging)
        with (
            PointCache(folder.path / POINTS_FILE) as cache,
            progress(args, f"{study.name} points", "points") as update,
        ):
            records = run_study(study, runner, cache, progress=update, computed=computed.append)
    rows = table_rows(study.name, records)
    with folder.staging() as staging:
        with open(staging / "table.csv", "w", newline="") as stream:
            write_csv(rows, stream)
        with open(staging / "table.jsonl", "w") as stream:
            write_jsonl(rows, stream)
        for file, selection in study.plots.items():
            _plot(study, select(records, selection), staging / file)
        folder.commit(staging)
    failed = failure_summary(records)
    deadlocked = sum(
        1 for r in records if r["status"] == "ok" and r["result"]["deadlock"] is not None
    )
    print(
        f"{study.name}: {len(records)} points ({len(computed)} computed,"
        f" {len(records) - len(computed)} cached), {len(failed)} failed, {deadlocked}"
        f" deadlocked; table in {Path(args.output) / 'table.csv'}"
    )
    for line in failed:
        print(f"zfabric: failed: {line}", file=sys.stderr)
    for label, points in curves(records).items():
        report_deadlocks(label, points)
    return 1 if failed or deadlocked else 0


def _plot(study, records, path: Path) -> None:
    """The latency-throughput plot of ``records``' curves."""
    from zfabric.sim.plot import plot_curves
    from zfabric.sim.study import curves

    patterns = sorted({r["inputs"]["pattern"] for r in records})
    lengths = {json.dumps(r["inputs"]["packet_length"]) for r in records}
    plot_curves(
        curves(records),
        path,
        title=f"{study.name}: {'/'.join(patterns)} traffic",
        packet_length=json.loads(lengths.pop()) if len(lengths) == 1 else None,
    )
