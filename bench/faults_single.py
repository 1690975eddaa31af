"""Time of ``zfabric faults --single KIND`` through the symmetries and in full, in one run.

Through the fabric's symmetries a failure that a symmetry maps from an earlier one carries its
proof over; in full every failure is proven itself. Both ways, and what each finds, per fabric.

For each fabric and kind: the failures, the CPU seconds (this process and its children) and
wall seconds of each way, medians of ``--repeat`` runs, per failure too; how many failures the
symmetries carried over; whether the two ways agree on every field that does not name the
tables' root; how many leave every pair connected and how many are proven, under which routing;
with the machine's name, Python version and load average, as the figures depend on them.
``FABRIC:KIND:EVERY`` computes every EVERY-th failure only the full way (a sample of a fabric
too large to fail whole that way; the symmetries' way fails every one).

    .venv/bin/python bench/faults_single.py [--repeat R] [FABRIC:KIND[:EVERY] ...]
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import statistics
import time
from collections.abc import Callable

from zfabric import compile_plan, load_spec
from zfabric.faults import COMPARED, FailureResult, failure_candidates, single_failures

FABRICS = {
    "torus-4x4": {"topology": {"kind": "torus", "k": [4, 4]}},
    "torus-16x16": {"topology": {"kind": "torus", "k": [16, 16]}},
    "znode-16-layers": {"topology": {"kind": "znode", "z": [4, 4], "R": [1, 4], "layers": 2}},
    "transit-full-64": {"topology": {"kind": "transit", "form": "full"}},
    "transit-hybrid-768": {"topology": {"kind": "transit", "form": "hybrid", "leaf_stages": 2}},
}
DEFAULT = ["torus-4x4:links", "znode-16-layers:links", "transit-full-64:chips",
           "transit-full-64:links", "torus-16x16:links:16"]  # fmt: skip


def cpu() -> float:
    """CPU seconds of this process and its children (a proof may walk in a pool)."""
    own, children = (
        resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
    )
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def timed(
    run: Callable[[], list[FailureResult]], repeat: int
) -> tuple[list[FailureResult], float, float]:
    """The results of ``run`` and the median CPU and wall seconds of ``repeat`` runs."""
    cpus, walls = [], []
    for _ in range(repeat):
        start_cpu, start_wall = cpu(), time.perf_counter()
        results = run()
        cpus.append(cpu() - start_cpu)
        walls.append(time.perf_counter() - start_wall)
    return results, statistics.median(cpus), statistics.median(walls)


def measure(name: str, kind: str, every: int, repeat: int) -> str:
    plan = compile_plan(load_spec({"name": name, **FABRICS[name]}))
    candidates = failure_candidates(plan, kind)
    sample = candidates[::every]
    through, through_cpu, through_wall = timed(lambda: single_failures(plan, kind), repeat)
    full, full_cpu, full_wall = timed(
        lambda: single_failures(plan, kind, candidates=sample, symmetry=False), repeat
    )
    agree = sum(
        all(getattr(a, field) == getattr(b, field) for field in COMPARED)
        for a, b in zip(through[::every], full, strict=True)
    )
    routings: dict[str, int] = {}
    for result in through:
        key = result.routing or "none proven"
        routings[key] = routings.get(key, 0) + 1
    n, m = len(through), len(full)
    sampled = f" (1 in {every}: {m})" if every > 1 else ""
    return (
        f"{name} --single {kind}: {n} failures, {sum(r.carried is not None for r in through)}"
        f" carried over by a symmetry; through the symmetries {through_cpu:.1f} CPU s,"
        f" {through_wall:.1f} s wall ({through_cpu / n:.3f} CPU s per failure); in full{sampled}"
        f" {full_cpu:.1f} CPU s, {full_wall:.1f} s wall ({full_cpu / m:.3f} CPU s per failure,"
        f" x{full_cpu / m * n / through_cpu:.1f} the symmetries' CPU for all {n});"
        f" the two agree on {agree} of {m}; every pair connected after"
        f" {sum(r.disconnected == 0 for r in through)}, proven deadlock-free after"
        f" {sum(bool(r.deadlock_free) for r in through)}"
        f" ({', '.join(f'{k} {v}' for k, v in routings.items())})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="*", metavar="FABRIC:KIND[:EVERY]", default=DEFAULT)
    parser.add_argument("--repeat", type=int, default=3, help="runs of each way (medians)")
    args = parser.parse_args()
    print(f"{platform.node()}, Python {platform.python_version()}, {platform.processor() or ''}")
    for run in args.runs:
        name, kind, every = (run.split(":") + ["1"])[:3]
        if name not in FABRICS or kind not in ("links", "switches", "chips") or not every.isdigit():
            parser.error(f"{run!r}: FABRIC:KIND[:EVERY] with FABRIC of {', '.join(FABRICS)}")
        line = measure(name, kind, max(1, int(every)), max(1, args.repeat))
        print(f"{line} [load average {os.getloadavg()[0]:.1f}]", flush=True)


if __name__ == "__main__":
    main()
