"""Cold set-up: the routing proof (``analyse_routing``) and uniform traffic's limits
(``pattern_limits``), through the fabric's symmetries (one destination per orbit walked, the rest
mapped) and by the full walk (every destination), in the same run.

Each (case, walk) runs in a fresh process, ``--repeats`` times; the table shows medians of wall
time and of CPU time (the process and its walking processes, ``$ZFABRIC_SETUP_WORKERS`` or one
per core from 256 endpoints). Nothing is read from the set-up cache: both are computed. The full
walk of the 8192-endpoint HyperZ is skipped: it took 653 s for both, in two processes, before
the walks went through the symmetries (docs/specs.md: 898 CPU s for the proof and 777 s for the
limits in one). The load average is printed before and after.

    .venv/bin/python bench/setup_speed.py [--cases torus-16x16,...] [--repeats 3] [--no-full]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time

#: name -> spec; HyperZ's are the §5.3 series' Z-node Z(8,4,8; 1,4,8; 1,2,2) under ALIOD
ZNODE = {"z": [8, 4, 8], "R": [1, 4, 8], "psi": [1, 2, 2], "l_max": 32}
CASES = {
    "torus-16x16": {"kind": "torus", "k": [16, 16]},
    "torus-32x32": {"kind": "torus", "k": [32, 32]},
    "hyperz-1024": {"kind": "hyperz", "s": [2, 2], **ZNODE},
    "hyperz-8192": {"kind": "hyperz", "s": [8, 4], **ZNODE},
}
#: cases whose full walk is not run (minutes)
NO_FULL = ("hyperz-8192",)


def one(case: str, symmetry: bool) -> dict:
    """One cold set-up in this (fresh) process."""
    from zfabric.sim.analytic import pattern_limits
    from zfabric.sim.traffic import TrafficConfig

    from zfabric import compile_plan, load_spec
    from zfabric.deadlock import analyse_routing, symmetry_group_of

    topology = CASES[case]
    routing = "aliod" if topology["kind"] == "hyperz" else "dor"
    plan = compile_plan(load_spec({"name": case, "topology": topology, "routing": routing}))
    times = {}
    for phase, run in (
        ("proof", lambda: analyse_routing(plan, symmetry=symmetry).deadlock_free),
        ("limits", lambda: pattern_limits(plan, TrafficConfig(), symmetry=symmetry).to_dict()),
    ):
        wall, cpu = time.perf_counter(), cpu_and_children()
        result = run()
        times[phase] = (time.perf_counter() - wall, cpu_and_children() - cpu, result)
    groups = [symmetry_group_of(plan), symmetry_group_of(plan, ports=True)]
    return {
        "endpoints": len(plan.endpoints),
        "walked": [len(g.orbits) + 2 if g and symmetry else len(plan.endpoints) for g in groups],
        **{f"{phase}_wall": value[0] for phase, value in times.items()},
        **{f"{phase}_cpu": value[1] for phase, value in times.items()},
        "deadlock_free": times["proof"][2],
        "limits": times["limits"][2],
        "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def cpu_and_children() -> float:
    """CPU seconds of this process and of its reaped children (the walking processes)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _fresh(case: str, symmetry: bool) -> dict:
    argv = [sys.executable, __file__, "--one", case, "--walk", "symmetric" if symmetry else "full"]
    out = subprocess.run(argv, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", help="comma-separated, of " + ", ".join(CASES))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-full", action="store_true", help="the symmetric walk only")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    parser.add_argument("--walk", choices=("symmetric", "full"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one(args.one, args.walk == "symmetric")))
        return
    cases = args.cases.split(",") if args.cases else list(CASES)
    print(
        f"# python {platform.python_version()}, {os.cpu_count()} cores, walking processes:"
        f" {os.environ.get('ZFABRIC_SETUP_WORKERS', 'one per core from 256 endpoints')};"
        f" median of {args.repeats} fresh processes; load average {_load()} at the start"
    )
    print(
        "case          endpoints  walk       destinations walked (proof/limits)"
        "  proof wall/CPU s  limits wall/CPU s  peak MiB  deadlock-free  uniform bound"
    )
    for case in cases:
        walks = [True] if args.no_full or case in NO_FULL else [True, False]
        results = {}
        for symmetry in walks:
            runs = [_fresh(case, symmetry) for _ in range(args.repeats)]
            row = {
                key: statistics.median(run[key] for run in runs)
                for key in ("proof_wall", "proof_cpu", "limits_wall", "limits_cpu", "peak_mib")
            }
            first = results[symmetry] = runs[0]
            walked = "/".join(map(str, first["walked"]))
            print(
                f"{case:13s} {first['endpoints']:9d}  {'symmetric' if symmetry else 'full':9s}"
                f"  {walked:>34s}  {row['proof_wall']:7.1f} / {row['proof_cpu']:6.1f}"
                f"  {row['limits_wall']:8.1f} / {row['limits_cpu']:6.1f}  {row['peak_mib']:8.0f}"
                f"  {str(first['deadlock_free']):>13s}  {first['limits']['bound']:.6f}",
                flush=True,
            )
        if len(results) == 2:
            same = results[True]["deadlock_free"] == results[False]["deadlock_free"]
            a, b = results[True]["limits"], results[False]["limits"]
            close = all(
                abs(a[k] - b[k]) <= 1e-12 * abs(b[k]) if isinstance(b[k], float) else a[k] == b[k]
                for k in b
            )
            print(f"{case}: same verdict {same}, same limits (floats within 1e-12) {close}")
    print(f"# load average {_load()} at the end")


def _load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


if __name__ == "__main__":
    main()
