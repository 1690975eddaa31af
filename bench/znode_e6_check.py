"""Time and memory of the deadlock proof (``zfabric check``) at the thesis's E6 size.

E6 backward (A. Peratikou's Znode thesis, 2014): z = (8,8,16), R = (128,64,32), 1024 processors,
17,440 switches, each processor attached to all 128 level-1 switches of its zone. Prints the
build time, the proof's CPU seconds per destination over the first ``--destinations`` (the walk
is one pass per destination, so the whole proof is about 1024 times that) and the peak RSS.
``--destinations 1024`` runs the whole proof, ``0`` none. ``--model-cycles N`` then times a
model (``--engine``, the fast one by default) on the same plan: the pattern's limits (the
verdict's set-up) and a run of N measured cycles after ``--warmup`` (default N / 2), at
``--rate`` of ``--pattern`` (uniform), seed 1: the CPU seconds to the end of the warm-up (the
fast engine's first run of the plan fills its routing tables there; later runs read them from
the set-up cache), then cycles per CPU second over the measured window and the drain, and the
peak RSS. ``--scan``: the fast engine scans every switch and attachment each cycle (as it does
below ``WORK_LISTS_FROM`` switches) instead of keeping its work lists: the same cycles, for a
measure of what the lists save.
"""

from __future__ import annotations

import argparse
import resource
import time

from zfabric.sim.analytic import cached_pattern_limits
from zfabric.sim.fast import engine as fast_engine
from zfabric.sim.measure import ENGINES, simulate
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
    parser.add_argument("--pattern", default="uniform")
    parser.add_argument("--warmup", type=int, help="default: half the model cycles")
    parser.add_argument("--drain", type=int, help="cycles the measured packets may take after")
    parser.add_argument("--engine", choices=ENGINES, default="fast")
    parser.add_argument("--scan", action="store_true", help="no work lists in the fast engine")
    args = parser.parse_args()
    if args.scan:
        fast_engine.WORK_LISTS_FROM = 1 << 62  # no fabric is that large
    start = time.process_time()
    plan, _ = build_fabric(load_spec({**E6, "routing": args.routing}))
    built = time.process_time()
    print(
        f"E6 backward, {args.routing}: {len(plan.switches)} switches, {len(plan.links)} links, "
        f"{len(plan.endpoints)} endpoints x {len(plan.endpoints[0].attachments)} attachments; "
        f"build {built - start:.1f} CPU s"
    )
    if args.destinations:
        proof(plan, args.destinations, built)
    if args.model_cycles:
        warmup = args.model_cycles // 2 if args.warmup is None else args.warmup
        config = TrafficConfig(pattern=args.pattern, rate=args.rate)
        model(plan, config, warmup, args.model_cycles, args.drain, args.engine)


def proof(plan, destinations: int, built: float) -> None:
    """The proof over the first ``destinations`` (all of them if it reaches 1024)."""
    marks = []

    def progress(done: int, total: int) -> None:
        marks.append(time.process_time())
        if done >= destinations and done < total:
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


def peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def model(plan, config, warmup: int, cycles: int, drain: int | None, engine: str) -> None:
    """The verdict's set-up, then one measured run, timed at the end of its warm-up."""
    start = time.process_time()
    limits = cached_pattern_limits(plan, config)
    ready = time.process_time()
    print(
        f"limits ({config.pattern}): {ready - start:.1f} CPU s (0 when cached), zero-load"
        f" {limits.zero_load_latency:.2f} cycles, bound {limits.channel_load.bound:.3f},"
        f" peak RSS {peak_mib():.0f} MiB"
    )
    traffic = Traffic(config, len(plan.endpoints), 1)
    marks: dict[str, tuple[int, float]] = {}

    def progress(cycle: int, total: int) -> None:
        if cycle >= warmup and "warm" not in marks:
            marks["warm"] = cycle, time.process_time()

    result = simulate(
        plan,
        traffic,
        warmup=warmup,
        cycles=cycles,
        drain_limit=drain,
        limits=limits,
        engine=engine,
        progress=progress,
    )
    end = time.process_time()
    warm_cycle, warm_at = marks.get("warm", (result.cycles, end))
    timed = result.cycles - warm_cycle
    print(
        f"model ({result.engine}): {config.pattern} {config.rate}, warm-up {warmup}, window"
        f" {cycles}: accepted {result.accepted:.4f} of offered {result.offered:.4f}, mean latency"
        f" {result.latency['mean']}, p99 {result.latency.get('p99')}, saturated"
        f" {result.saturated} ({result.saturation_reason}); {result.cycles} cycles"
    )
    print(
        f"speed: {warm_at - ready:.1f} CPU s to cycle {warm_cycle} (model, tables, warm-up),"
        f" then {timed} cycles in {end - warm_at:.1f} CPU s"
        f" ({timed / max(end - warm_at, 1e-9):,.0f} cycles/s); peak RSS {peak_mib():.0f} MiB"
    )


if __name__ == "__main__":
    main()
