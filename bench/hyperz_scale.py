"""What ``zfabric check`` and the model cost on the HyperZ scalability series (issue 17; digest
reference/hyperz-transit.md §3, seed 001 §5.3): the 256-processor Z-node Z(8,4,8; 1,4,8; 1,2,2)
replicated as H_{2,2}(2,2), (4,2), (4,4), (8,4), 1024 to 8192 processors, ALIOD.

Each point runs in a child process (so each peak resident size is its own) and prints, in CPU
seconds (``time.process_time``, meaningful on a shared machine), the plan's build, the deadlock
proof (``analyse_routing``: the walk over every destination and the cycle search, what
``zfabric check`` spends nearly all its time on) and ``--cycles`` model cycles at 30 % uniform
load (``simulate``, with its set-up: the pattern's limits and the model), each with the peak
resident size (``ru_maxrss``) after it.

    .venv/bin/python bench/hyperz_scale.py [--s 4,4 --s 8,4] [--cycles 50]
"""

from __future__ import annotations

import argparse
import multiprocessing
import resource
import time

from zfabric.sim.measure import simulate
from zfabric.sim.traffic import Traffic, TrafficConfig

from zfabric import load_spec
from zfabric.deadlock import analyse_routing
from zfabric.topologies import build_fabric

SERIES = ((2, 2), (4, 2), (4, 4), (8, 4))
ZNODE = {"z": [8, 4, 8], "R": [1, 4, 8], "psi": [1, 2, 2], "l_max": 32}


def peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def point(s: tuple[int, int], cycles: int) -> dict:
    spec = load_spec(
        {"name": "s", "topology": {"kind": "hyperz", "s": list(s), **ZNODE}, "routing": "aliod"}
    )
    out = {"s": s}
    start = time.process_time()
    plan, _ = build_fabric(spec)
    out["build"] = (time.process_time() - start, peak_mib())
    n = len(plan.endpoints)
    out["endpoints"], out["switches"] = n, len(plan.switches)
    start = time.process_time()
    analysis = analyse_routing(plan)
    out["proof"] = (time.process_time() - start, peak_mib(), analysis.deadlock_free)
    traffic = Traffic(TrafficConfig(rate=0.3, packet_length=4), n, 1)
    start = time.process_time()
    simulate(plan, traffic, warmup=0, cycles=cycles, drain_limit=cycles)
    out["model"] = (time.process_time() - start, peak_mib())
    return out


def run(args: argparse.Namespace) -> None:
    print(
        f"HyperZ scalability series, ALIOD, Z(8,4,8; 1,4,8; 1,2,2): CPU seconds and peak RSS"
        f" per phase, {args.cycles} model cycles at 30 % uniform load"
    )
    with multiprocessing.get_context("spawn").Pool(1, maxtasksperchild=1) as pool:
        for s in args.s:
            r = pool.apply(point, (s, args.cycles))
            proof, proof_mib, free = r["proof"]
            print(
                f"H(2,2)({s[0]},{s[1]}): {r['endpoints']} processors, {r['switches']} switches;"
                f" build {r['build'][0]:.1f} s, {r['build'][1]:.0f} MiB;"
                f" proof {proof:.0f} s, {proof_mib:.0f} MiB, deadlock-free {free};"
                f" model {r['model'][0]:.1f} s, {r['model'][1]:.0f} MiB",
                flush=True,
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--s",
        action="append",
        type=lambda v: tuple(int(x) for x in v.split(",")),
        help="s1,s2 (repeatable; default the whole series)",
    )
    parser.add_argument("--cycles", type=int, default=50)
    args = parser.parse_args()
    args.s = args.s or list(SERIES)
    run(args)


if __name__ == "__main__":
    main()
