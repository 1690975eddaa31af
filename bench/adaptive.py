"""Adaptive routings against their deterministic baselines in the model (the research's claims).

- ``torus``: 8x8 torus, ``duato`` against ``dor`` under transpose and bit-complement traffic
  (wormhole-models.md §1.6: adaptivity should raise saturation throughput);
- ``ndt``: ndt-4x4x4 (CBest), ``dort_adaptive`` with each selection function against ``dort``
  under uniform traffic (ndt.md §6.7: 3-priority 8-20 % lower latency and 10-20 % more accepted
  traffic than DORT; round-robin 3-10 % higher low-load latency; no-internal and 2-priority
  4-15 % lower latency).

Every curve runs under each ``router.selection`` given (``--selections``, default all, in the
same run): ``first-free`` takes the first free candidate in the routing's priority order,
``round-robin`` ignores the order (so 3- and 2-priority coincide), ``occupancy`` checks the
routing's priority levels in order and prefers low-occupancy output VCs within a level
(docs/microarchitecture.md, step 2). Per curve: the mean latency at the lowest rate (0.05), the
*knee* (:func:`zfabric.sim.sweep.knee` of a :func:`~zfabric.sim.sweep.sweep`: coarse rates, then
bisection, each rate judged by the model's saturation verdict, whose reason at the first
saturated rate is printed) and the *peak*, the accepted throughput at full offered load.
Bernoulli traffic, 4-flit packets, the spec's 4-flit buffers. Writes one latency-throughput
plot per study, pattern and selection (``--plot-dir``, default ``bench/out``).

    .venv/bin/python bench/adaptive.py [--study torus|ndt] [--selections occupancy ...]
        [--cycles 2000] [--warmup 500] [--tolerance 0.02]
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from pathlib import Path

from zfabric.sim.measure import simulate
from zfabric.sim.plot import plot_curves
from zfabric.sim.sweep import COARSE_RATES, knee, sweep
from zfabric.sim.traffic import Traffic, TrafficConfig

from zfabric import compile_plan, load_spec
from zfabric.router_settings import SELECTIONS

#: the low-load rate (below the coarse rates) and the full load of the peak
LOW, FULL = 0.05, 1.0

STUDIES = {
    "torus": [
        (pattern, {"kind": "torus", "k": [8, 8]}, routing)
        for pattern in ("transpose", "bit-complement")
        for routing in ("dor", "duato")
    ],
    "ndt": [("uniform", {"kind": "ndt", "k": [4, 4, 4]}, "dort")]
    + [
        ("uniform", {"kind": "ndt", "k": [4, 4, 4]}, {"name": "dort_adaptive", "selection": s})
        for s in ("3_priority", "2_priority", "no_internal", "round_robin")
    ],
}


def label(routing) -> str:
    return routing if isinstance(routing, str) else f"{routing['name']} {routing['selection']}"


def curve(plan, pattern: str, args) -> dict:
    """The sweep's points (with the low rate), its knee, the reason its first saturated point
    is saturated, and the accepted throughput at full load."""
    config = TrafficConfig(pattern=pattern, packet_length=4)
    points = sweep(
        plan,
        config,
        (LOW, *COARSE_RATES),
        warmup=args.warmup,
        cycles=args.cycles,
        drain_limit=args.cycles,
        tolerance=args.tolerance,
    )
    assert not any(p["deadlock"] for p in points), points
    reason = next((p["saturation_reason"] for p in points if p["saturated"]), None)
    traffic = Traffic(dataclasses.replace(config, rate=FULL), len(plan.endpoints), 1)
    full = simulate(plan, traffic, warmup=args.warmup, cycles=args.cycles, drain_limit=0)
    assert full.deadlock is None, full.deadlock
    return {
        "points": points,
        "knee": knee(points) or 0.0,
        "reason": reason,
        "low": points[0]["latency"]["mean"],
        "peak": full.accepted,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--study", choices=sorted(STUDIES), action="append")
    parser.add_argument("--cycles", type=int, default=2000)
    parser.add_argument("--warmup", type=int, default=500)
    parser.add_argument("--tolerance", type=float, default=0.02, help="of the knee's bisection")
    parser.add_argument("--plot-dir", type=Path, default=Path(__file__).parent / "out")
    parser.add_argument("--selections", nargs="+", choices=SELECTIONS, default=list(SELECTIONS))
    args = parser.parse_args()
    print(
        f"# model, Bernoulli, 4-flit packets, 4-flit buffers, warm-up {args.warmup}, window"
        f" {args.cycles} cycles, drain limit {args.cycles}, seed 1; latency at {LOW}, knee of"
        f" the sweep (coarse rates 0.1..1.0, bisection to {args.tolerance}), peak = accepted"
        f" at {FULL}; router selections {', '.join(args.selections)}"
    )
    args.plot_dir.mkdir(parents=True, exist_ok=True)
    for study in args.study or sorted(STUDIES):
        for selection in args.selections:
            by_pattern: dict[str, dict[str, dict]] = {}
            for pattern, topology, routing in STUDIES[study]:
                router = {"selection": selection}
                spec = {"name": "bench", "topology": topology, "routing": routing, "router": router}
                plan = compile_plan(load_spec(spec))
                start = time.perf_counter()
                result = curve(plan, pattern, args)
                by_pattern.setdefault(pattern, {})[label(routing)] = result
                print(
                    f"{study} {selection:11s} {pattern:14s} {label(routing):26s} latency at"
                    f" {LOW}: {result['low']:.2f}  knee: {result['knee']:.3f}  peak:"
                    f" {result['peak']:.3f}  ({time.perf_counter() - start:.0f} s)"
                )
                print(f"    first saturated point: {result['reason']}")
            for pattern, curves in by_pattern.items():
                baseline, base = next(iter(curves.items()))
                for name, result in list(curves.items())[1:]:
                    print(
                        f"  {selection} {pattern}: {name} vs {baseline}: low-load latency"
                        f" {result['low'] / base['low'] - 1:+.1%}, knee"
                        f" {result['knee'] / base['knee'] - 1:+.1%}, peak"
                        f" {result['peak'] / base['peak'] - 1:+.1%}"
                    )
                path = args.plot_dir / f"adaptive-{study}-{pattern}-{selection}.png"
                title = f"{study} {pattern}, {selection} selection"
                curves = {name: result["points"] for name, result in curves.items()}
                plot_curves(curves, path, title=title, packet_length=4)
                print(f"  plot: {path}")


if __name__ == "__main__":
    main()
