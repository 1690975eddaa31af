"""Build time, chip counts and proof time of Transit fat trees (``zfabric check``'s work).

For each fabric: the plan's build in CPU seconds, its RN1 chips counted and by the seed's
formula, switches and endpoints; the deadlock proof in one process, as ``check`` runs it:
through the routing's symmetries (zfabric/symmetry.py), the group's build, its orbits (one
destination walked each, two more walked in full as spot checks) and the whole proof's CPU
seconds; with ``--full-walk`` every destination walked, its CPU seconds per destination over the
first ``--destinations`` or more (the walk reports a group of destinations at a time; one pass
per destination, so the whole proof takes about endpoints times that; ``--destinations 0``
runs it whole); the per-level stage and swallow count
(``check``'s ``transit_classes``) where it is counted (1024 endpoints or fewer); the peak RSS.
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import time

from zfabric import build_fabric, load_spec
from zfabric.deadlock import analyse_routing, symmetry_group_of
from zfabric.routing.transit import CLASSES_ENDPOINT_LIMIT, pair_classes
from zfabric.topologies.transit import transit_summary

FABRICS = {
    "full-64": {"form": "full"},
    "full-4096": {"form": "full", "ut_layers": 2},
    "hybrid-768": {"form": "hybrid", "leaf_stages": 2},
    "hybrid-3072": {"form": "hybrid", "leaf_stages": 3},
    "hybrid-3072-capped": {"form": "hybrid", "leaf_stages": 2, "cap": True},
    "bidelta-64": {"form": "bidelta", "stacks": [3]},
    "bidelta-256": {"form": "bidelta", "stacks": [2, 2]},
    "bidelta-1024": {"form": "bidelta", "stacks": [3, 2]},
    "bidelta-4096": {"form": "bidelta", "stacks": [2, 2, 2]},
}


class _Enough(Exception):
    pass


def measure(name: str, destinations: int, full_walk: bool) -> str:
    start = time.process_time()
    plan, _ = build_fabric(
        load_spec({"name": name, "topology": {"kind": "transit", **FABRICS[name]}})
    )
    built = time.process_time()
    summary = transit_summary(plan)
    n = len(plan.endpoints)
    group = None if full_walk else symmetry_group_of(plan)
    grouped = time.process_time()
    symmetric = ""
    if group is not None:
        symmetric = (
            f"; {len(group.generators)} symmetries built in {grouped - built:.1f} CPU s,"
            f" {len(group.orbits)} orbits"
        )
    walked = [0, grouped]  # destinations walked, and when

    def progress(done: int, total: int) -> None:
        walked[:] = [done, time.process_time()]
        if group is None and destinations and done >= destinations and done < total:
            raise _Enough

    try:
        analysis = analyse_routing(plan, progress=progress, workers=1, symmetry=not full_walk)
        whole = time.process_time() - grouped
        proof = f"whole proof {whole:.1f} CPU s, acyclic {analysis.cycle is None}"
    except _Enough:
        per = (walked[1] - grouped) / walked[0]
        proof = (
            f"proof {per:.3f} CPU s per destination over the first {walked[0]}"
            f" (x {n} = {per * n:.0f} s whole)"
        )
    classes = ""
    if n <= CLASSES_ENDPOINT_LIMIT:
        before = time.process_time()
        pair_classes(plan)
        classes = f"; stages and swallows {time.process_time() - before:.1f} CPU s"
    return (
        f"{name}: {n} endpoints, {len(plan.switches)} switches, {summary['chips']} chips"
        f" (formula {summary['chips_by_formula']}); build {built - start:.1f} CPU s{symmetric};"
        f" {proof}{classes}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("fabrics", nargs="*", metavar="FABRIC", help=f"of {', '.join(FABRICS)}")
    parser.add_argument(
        "--destinations", type=int, default=16, help="with --full-walk; 0: the whole proof"
    )
    parser.add_argument(
        "--full-walk", action="store_true", help="walk every destination (no symmetries)"
    )
    args = parser.parse_args()
    unknown = [name for name in args.fabrics if name not in FABRICS]
    if unknown:
        parser.error(f"unknown fabric {unknown[0]!r}; known: {', '.join(FABRICS)}")
    print(
        f"{platform.platform()}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f};"
        f" Python {platform.python_version()}; CPU seconds of this process"
    )
    for name in args.fabrics or FABRICS:
        print(measure(name, args.destinations, args.full_walk), flush=True)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS {peak:.0f} MiB (one process, the fabrics in turn)")


if __name__ == "__main__":
    main()
