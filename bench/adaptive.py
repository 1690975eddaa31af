"""Adaptive routings against their deterministic baselines in the model (issue 16's claims).

- ``torus``: 8x8 torus, ``duato`` against ``dor`` under transpose and bit-complement traffic
  (wormhole-models.md §1.6: adaptivity should raise saturation throughput);
- ``ndt``: ndt-4x4x4 (CBest), ``dort_adaptive`` with each selection function against ``dort``
  under uniform traffic (ndt.md §6.7: 3-priority 8-20 % lower latency and 10-20 % more accepted
  traffic than DORT; round-robin 3-10 % higher low-load latency; no-internal and 2-priority
  4-15 % lower latency).

Each curve is the model at fixed offered rates (Bernoulli, 4-flit packets, the spec's 4-flit
buffers, warm-up then a measured window); the *peak* is the accepted throughput at full offered
load. Which free candidate a head takes is the switch's ``router.selection``
(``--router-selection``): ``first-free`` takes the first in the routing's priority order, so the
selection functions differ by their candidate sets and orders; ``round-robin`` (the spec
default) ignores the order, so 3- and 2-priority coincide. Neither looks at occupancy yet
(issue 16, item 5): this measures the selection functions' static part. Writes one
latency-throughput plot per study and pattern (``--plot-dir``, default ``bench/out``).

    .venv/bin/python bench/adaptive.py [--study torus|ndt] [--router-selection first-free]
        [--cycles 2000] [--warmup 500]
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from pathlib import Path

from zfabric.sim.measure import simulate
from zfabric.sim.plot import plot_curves
from zfabric.sim.traffic import Traffic, TrafficConfig

from zfabric import compile_plan, load_spec

RATES = (0.05, 0.2, 0.4, 0.6, 0.8, 1.0)

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


def curve(plan, pattern: str, args) -> list[dict]:
    config = TrafficConfig(pattern=pattern, packet_length=4)
    points = []
    for rate in RATES:
        traffic = Traffic(dataclasses.replace(config, rate=rate), len(plan.endpoints), 1)
        result = simulate(plan, traffic, warmup=args.warmup, cycles=args.cycles, drain_limit=0)
        assert result.deadlock is None, result.deadlock
        points.append({"rate": rate, **result.to_dict()})
    return points


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--study", choices=sorted(STUDIES), action="append")
    parser.add_argument("--cycles", type=int, default=2000)
    parser.add_argument("--warmup", type=int, default=500)
    parser.add_argument("--plot-dir", type=Path, default=Path(__file__).parent / "out")
    parser.add_argument(
        "--router-selection", choices=["first-free", "round-robin"], default="first-free"
    )
    args = parser.parse_args()
    print(
        f"# model, Bernoulli, 4-flit packets, 4-flit buffers, warm-up {args.warmup}, window"
        f" {args.cycles} cycles, seed 1, {args.router_selection} router selection;"
        f" rates {RATES}"
    )
    args.plot_dir.mkdir(parents=True, exist_ok=True)
    for study in args.study or sorted(STUDIES):
        by_pattern: dict[str, dict[str, list[dict]]] = {}
        for pattern, topology, routing in STUDIES[study]:
            router = {"selection": args.router_selection}
            spec = {"name": "bench", "topology": topology, "routing": routing, "router": router}
            plan = compile_plan(load_spec(spec))
            start = time.perf_counter()
            points = curve(plan, pattern, args)
            by_pattern.setdefault(pattern, {})[label(routing)] = points
            low, full = points[0], points[-1]
            print(
                f"{study} {pattern:14s} {label(routing):26s} latency at {low['rate']}:"
                f" {low['latency']['mean']:.2f}  peak accepted at 1.0: {full['accepted']:.3f}"
                f"  ({time.perf_counter() - start:.0f} s)"
            )
        for pattern, curves in by_pattern.items():
            baseline = next(iter(curves))
            base_low = curves[baseline][0]["latency"]["mean"]
            base_peak = curves[baseline][-1]["accepted"]
            for name, points in list(curves.items())[1:]:
                low = points[0]["latency"]["mean"] / base_low - 1
                peak = points[-1]["accepted"] / base_peak - 1
                print(
                    f"  {pattern}: {name} vs {baseline}: low-load latency {low:+.1%},"
                    f" peak accepted {peak:+.1%}"
                )
            path = args.plot_dir / f"adaptive-{study}-{pattern}-{args.router_selection}.png"
            title = f"{study} {pattern}, {args.router_selection} selection"
            plot_curves(curves, path, title=title, packet_length=4)
            print(f"  plot: {path}")


if __name__ == "__main__":
    main()
