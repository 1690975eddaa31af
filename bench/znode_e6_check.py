"""Time and memory of the deadlock proof (``zfabric check``) at the thesis's E6 size.

E6 backward (A. Peratikou's Znode thesis, 2014): z = (8,8,16), R = (128,64,32), 1024 processors,
17,440 switches, each processor attached to all 128 level-1 switches of its zone. Prints the
build time, the proof's CPU seconds per destination over the first ``--destinations`` (the walk
is one pass per destination, so the whole proof is about 1024 times that) and the peak RSS.
``--destinations 1024`` runs the whole proof. ``--model-cycles N`` then times the reference
model on the same plan: the pattern's limits (the verdict's set-up) and a run of N measured
cycles after N / 2 of warm-up, uniform at ``--rate``.
"""

from __future__ import annotations

import argparse
import resource
import time

from zfabric.sim.analytic import pattern_limits
from zfabric.sim.measure import simulate
from zfabric.sim.traffic import Traffic, TrafficConfig

from zfabric import build_fabric, load_spec
from zfabric.deadlock import analyse_routing

E6 = {
    "name": "e6-backward",
    "topology": {"kind": "znode", "z": [8, 8, 16], "R": [128, 64, 32]},
    "routing": "sliced",
}


class _Enough(Exception):
    pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--destinations", type=int, default=32)
    parser.add_argument("--routing", default="sliced")
    parser.add_argument("--model-cycles", type=int, default=0, help="0: no model run")
    parser.add_argument("--rate", type=float, default=0.1)
    args = parser.parse_args()
    start = time.process_time()
    plan, _ = build_fabric(load_spec({**E6, "routing": args.routing}))
    built = time.process_time()
    print(
        f"E6 backward, {args.routing}: {len(plan.switches)} switches, {len(plan.links)} links, "
        f"{len(plan.endpoints)} endpoints x {len(plan.endpoints[0].attachments)} attachments; "
        f"build {built - start:.1f} CPU s"
    )
    marks = []

    def progress(done: int, total: int) -> None:
        marks.append(time.process_time())
        if done >= args.destinations and done < total:
            raise _Enough

    complete = True
    try:
        analysis = analyse_routing(plan, progress=progress)
    except _Enough:
        complete = False
    # the first destination also pays for the routing function's set-up
    per = (marks[-1] - marks[0]) / max(1, len(marks) - 1)
    peak = peak_mib()
    print(
        f"proof: first destination {marks[0] - built:.1f} CPU s, then {per:.2f} CPU s per "
        f"destination over {len(marks)} -> about {marks[0] - built + per * 1023:.0f} CPU s for "
        f"all 1024; peak RSS {peak:.0f} MiB"
    )
    if complete:
        print(f"complete: deadlock-free {analysis.deadlock_free}, diameter {analysis.diameter}")
    if args.model_cycles:
        model(plan, args.model_cycles, args.rate)


def peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def model(plan, cycles: int, rate: float) -> None:
    """The reference model at this size: the verdict's set-up, then one measured run."""
    config = TrafficConfig(rate=rate)
    start = time.process_time()
    limits = pattern_limits(plan, config)
    ready = time.process_time()
    print(
        f"limits: {ready - start:.1f} CPU s, zero-load {limits.zero_load_latency:.2f} cycles,"
        f" peak RSS {peak_mib():.0f} MiB"
    )
    traffic = Traffic(config, len(plan.endpoints), 1)
    result = simulate(plan, traffic, warmup=cycles // 2, cycles=cycles, limits=limits)
    spent = time.process_time() - ready
    print(
        f"model: uniform {rate}, warm-up {cycles // 2}, window {cycles}: accepted"
        f" {result.accepted:.3f}, mean latency {result.latency['mean']}, saturated"
        f" {result.saturated}; {spent:.0f} CPU s for {result.cycles} cycles"
        f" ({result.cycles / spent:.1f} cycles/s), peak RSS {peak_mib():.0f} MiB"
    )


if __name__ == "__main__":
    main()
