"""Study executor speed: a 40-point study (torus-4x4, uniform, 10 rates x 4 seeds) on a local
Dask cluster of 1 and of 2 worker processes, against the bare model runs.

- bare: :func:`zfabric.sim.measure.simulate` of each point in this process, the plan and the
  pattern's bounds computed beforehand (the model's work alone);
- serial: :func:`zfabric.sim.study.run_study` with the in-process executor (``--workers 0``);
- 1 and 2 workers: ``run_study`` on a ``LocalCluster`` (started once, its start-up reported
  apart), no cache, every point computed.

Per-point overhead = (1-worker time - bare time) / 40: what the executor adds to each point
(pickling, scheduling, the result's trip back, the record); as the difference of two times of
seconds on a busy machine it is noisy, so the same is measured on 40 near-empty points (a
2-ring for 10 cycles), where the overhead is nearly all there is. Speed-up = 1-worker time /
2-worker time. Median of --repeats runs each; the first run of a cluster also compiles the plan
on its workers. The machine's load average is printed: other jobs on its 2 cores lower the
speed-up.

    .venv/bin/python bench/study_speed.py [--repeats 3] [--cycles 1500]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time

RATES = [round(0.04 * i, 2) for i in range(1, 11)]
SEEDS = [1, 2, 3, 4]


def study(cycles: int, warmup: int = 200, k: tuple[int, ...] = (4, 4)):
    from zfabric.sim.study import study_from_dict

    name = "torus-" + "x".join(map(str, k))
    return study_from_dict(
        {
            "name": "bench",
            "specs": [{"spec": {"name": name, "topology": {"kind": "torus", "k": list(k)}}}],
            "traffic": {"rates": RATES, "seeds": SEEDS, "warmup": warmup, "cycles": cycles},
        }
    )


def bare(points) -> float:
    """The model runs alone, plans and bounds computed first."""
    import dataclasses
    import json

    from zfabric.sim.analytic import pattern_limits
    from zfabric.sim.measure import simulate
    from zfabric.sim.traffic import Traffic, TrafficConfig

    from zfabric import compile_plan, load_spec

    plan = compile_plan(load_spec(json.loads(points[0].spec_json)))
    runs = []
    for point in points:
        config = TrafficConfig(rate=point.rate, packet_length=point.packet_length)
        limits = pattern_limits(plan, dataclasses.replace(config, rate=1.0), point.seed)
        runs.append((Traffic(config, len(plan.endpoints), point.seed), point, limits))
    start = time.perf_counter()
    for traffic, point, limits in runs:
        simulate(plan, traffic, warmup=point.warmup, cycles=point.cycles, limits=limits)
    return time.perf_counter() - start


def timed(the_study, executor) -> float:
    from zfabric.sim.study import PointCache, run_study

    start = time.perf_counter()
    records = run_study(the_study, executor, PointCache(None))
    elapsed = time.perf_counter() - start
    assert len(records) == len(the_study.points) and all(r["status"] == "ok" for r in records)
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--cycles", type=int, default=1500, help="measurement window per point")
    args = parser.parse_args()

    from zfabric.sim.study import DaskExecutor, SerialExecutor, start_local_cluster

    the_study = study(args.cycles)
    # the same grid of points that do almost nothing (a 2-ring, 10 cycles): the overhead alone
    empty = study(10, warmup=0, k=(2,))
    n = len(the_study.points)
    print(
        f"{n} points: torus-4x4, uniform, rates {RATES[0]}..{RATES[-1]}, seeds {SEEDS},"
        f" warm-up 200, window {args.cycles} cycles; {os.cpu_count()} cores,"
        f" {platform.processor() or platform.machine()}, Python {platform.python_version()};"
        f" median of {args.repeats}"
    )
    print(f"load average before: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    times: dict[str, list[float]] = {"bare": [], "serial": [], "1 worker": [], "2 workers": []}
    tiny: dict[str, list[float]] = {"bare": [], "1 worker": []}
    for _ in range(args.repeats):
        times["bare"].append(bare(the_study.points))
        times["serial"].append(timed(the_study, SerialExecutor()))
        tiny["bare"].append(bare(empty.points))
    for workers in (1, 2):
        start = time.perf_counter()
        cluster, client = start_local_cluster(workers, retries=2)
        client.wait_for_workers(workers)
        startup = time.perf_counter() - start
        label = f"{workers} worker{'s' if workers > 1 else ''}"
        print(f"{label}: cluster start-up {startup:.1f} s")
        try:
            for _ in range(args.repeats):
                times[label].append(timed(the_study, DaskExecutor(client)))
                if workers == 1:
                    tiny[label].append(timed(empty, DaskExecutor(client)))
        finally:
            client.close()
            cluster.close()
    median = {label: statistics.median(values) for label, values in times.items()}
    for label, values in times.items():
        shown = ", ".join(f"{v:.1f}" for v in values)
        print(f"{label:>10}: median {median[label]:.2f} s ({median[label] / n * 1000:.0f} ms a"
              f" point; runs {shown} s)")  # fmt: skip
    overhead = (median["1 worker"] - median["bare"]) / n
    serial_overhead = (median["serial"] - median["bare"]) / n
    empty_bare, empty_dask = (statistics.median(tiny[label]) for label in ("bare", "1 worker"))
    print(f"load average after: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    print(
        f"per-point overhead against the bare runs: Dask 1 worker {overhead * 1000:.0f} ms,"
        f" in-process {serial_overhead * 1000:.0f} ms (bare model run"
        f" {median['bare'] / n * 1000:.0f} ms; the difference of two noisy times)"
    )
    print(
        f"per-point overhead, {n} near-empty points (ring-2, 10 cycles): Dask 1 worker"
        f" {(empty_dask - empty_bare) / n * 1000:.1f} ms (bare {empty_bare / n * 1000:.1f} ms a"
        f" point, Dask {empty_dask / n * 1000:.1f} ms)"
    )
    print(
        f"speed-up 1 -> 2 workers: {median['1 worker'] / median['2 workers']:.2f}x"
        f" ({median['1 worker']:.1f} s -> {median['2 workers']:.1f} s for {n} points)"
    )


if __name__ == "__main__":
    main()
