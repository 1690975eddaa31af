"""How long `zfabric check` takes (spec -> plan -> deadlock proof -> metrics) from 64 to 1024
endpoints, per family. Prints the median of several runs per stage and the growth exponent
(time ~ endpoints^e fitted between the smallest and the largest size). Last line: the worst
1024-endpoint total.

    .venv/bin/python bench/check_scaling.py [--repeats 3] [--family ndt|torus|znode|...]

The ``duato`` and ``ndt_adaptive`` families prove the adaptive routings by Duato's condition
(the escape channels' extended CDG, larger than a deterministic routing's CDG).
"""

from __future__ import annotations

import argparse
import math
import platform
import statistics
import time

from zfabric import analyse_routing, build_fabric, load_spec
from zfabric.metrics import fabric_metrics

FAMILIES = {
    "ndt": [
        {"kind": "ndt", "k": [4, 4, 2]},
        {"kind": "ndt", "k": [4, 4, 4]},
        {"kind": "ndt", "k": [8, 4, 4]},
        {"kind": "ndt", "k": [8, 8, 4]},
        {"kind": "ndt", "k": [8, 8, 8]},
    ],
    "torus": [
        {"kind": "torus", "k": [8, 8]},
        {"kind": "torus", "k": [16, 8]},
        {"kind": "torus", "k": [16, 16]},
        {"kind": "torus", "k": [32, 16]},
        {"kind": "torus", "k": [32, 32]},
    ],
    "duato": [
        {"kind": "torus", "k": [8, 8], "routing": "duato"},
        {"kind": "torus", "k": [16, 16], "routing": "duato"},
        {"kind": "torus", "k": [32, 32], "routing": "duato"},
    ],
    "ndt_adaptive": [
        {"kind": "ndt", "k": [4, 4, 4], "routing": "dort_adaptive"},
        {"kind": "ndt", "k": [8, 4, 4], "routing": "dort_adaptive"},
        {"kind": "ndt", "k": [8, 8, 8], "routing": "dort_adaptive"},
        {"kind": "ndt", "k": [4, 4, 2, 4, 4], "routing": "dort_adaptive"},
        {"kind": "ndt", "k": [8, 8, 8], "routing": "tsdor"},
    ],
    "znode": [
        {"kind": "kary_ntree", "k": 4, "n": 3},
        {"kind": "znode", "z": [4, 4, 8], "R": [1, 4, 16]},
        {"kind": "kary_ntree", "k": 4, "n": 4},
        {"kind": "kary_ntree", "k": 8, "n": 3},
        {"kind": "znode", "z": [8, 8, 16], "R": [1, 8, 64]},
    ],
}


def time_check(topology: dict) -> tuple[int, dict[str, float]]:
    """Time each stage of ``check`` on ``topology`` (its ``routing`` key, if any, names the
    routing)."""
    stages = {}
    start = time.perf_counter()
    spec = {"name": "bench", "topology": {k: v for k, v in topology.items() if k != "routing"}}
    if "routing" in topology:
        spec["routing"] = topology["routing"]
    spec = load_spec(spec)
    plan, graph = build_fabric(spec)
    stages["compile"] = time.perf_counter() - start
    start = time.perf_counter()
    analysis = analyse_routing(plan)
    stages["proof"] = time.perf_counter() - start
    assert analysis.deadlock_free
    start = time.perf_counter()
    fabric_metrics(plan, analysis, graph)
    stages["metrics"] = time.perf_counter() - start
    stages["total"] = sum(stages.values())
    return len(plan.endpoints), stages


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--family", choices=sorted(FAMILIES), action="append")
    args = parser.parse_args()
    print(f"# python {platform.python_version()}, {platform.machine()}, median of {args.repeats}")
    worst_1024 = 0.0
    for family in args.family or sorted(FAMILIES):
        print(f"\n{family}: endpoints  compile  proof  metrics  total (s)")
        sizes, totals = [], []
        for topology in FAMILIES[family]:
            runs = [time_check(topology) for _ in range(args.repeats)]
            endpoints = runs[0][0]
            median = {s: statistics.median(r[1][s] for r in runs) for s in runs[0][1]}
            label = " ".join(f"{k}={v}" for k, v in topology.items() if k != "kind")
            print(
                f"  {endpoints:5d}  {median['compile']:7.2f} {median['proof']:6.2f} "
                f"{median['metrics']:8.2f} {median['total']:6.2f}   {topology['kind']} {label}"
            )
            sizes.append(endpoints)
            totals.append(median["total"])
            if endpoints == 1024:
                worst_1024 = max(worst_1024, median["total"])
        exponent = math.log(totals[-1] / totals[0]) / math.log(sizes[-1] / sizes[0])
        print(f"  growth: time ~ endpoints^{exponent:.2f} from {sizes[0]} to {sizes[-1]}")
    print(f"\nworst zfabric check at 1024 endpoints: {worst_1024:.1f} s (target < 30 s)")


if __name__ == "__main__":
    main()
