"""Saturation throughput of a traffic pattern, next to its channel-load bound.

For each fabric: a sweep (sim/sweep.py) over coarse rates, bisected near the knee to --tolerance;
the *knee* is the highest stable rate (the verdict of sim/measure.py: under the bound, accepted
>= 95% of offered, mean latency <= 3x zero-load, latency converged); the *peak* is the accepted
throughput at full offered load (1 flit/cycle/endpoint). The bound and the zero-load latency
are the pattern's own (sim/analytic.py). Last line: one summary per fabric.

    .venv/bin/python bench/saturation.py [--pattern uniform] [--cycles 3000] [fabric ...]

A fabric is an example's name or a path to a spec (``*.yaml``).
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from pathlib import Path

from zfabric.sim.analytic import pattern_limits
from zfabric.sim.measure import simulate
from zfabric.sim.sweep import knee, sweep
from zfabric.sim.traffic import PATTERNS, Traffic, TrafficConfig

from zfabric import compile_plan, load_spec

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("fabrics", nargs="*", default=["torus-4x4", "ndt-4x4x4", "znode-64"])
    parser.add_argument("--pattern", choices=PATTERNS, default="uniform")
    parser.add_argument("--cycles", type=int, default=3000)
    parser.add_argument("--warmup", type=int, default=1000)
    parser.add_argument("--step", type=float, default=0.1, help="coarse rate step")
    parser.add_argument("--tolerance", type=float, default=0.01, help="knee bisection bracket")
    parser.add_argument("--packet-length", type=int, default=4)
    args = parser.parse_args()
    print(
        f"# {args.pattern} Bernoulli traffic, {args.packet_length}-flit packets, warm-up"
        f" {args.warmup}, window {args.cycles} cycles, seed 1, coarse step {args.step},"
        f" knee bisected to {args.tolerance}"
    )
    config = TrafficConfig(pattern=args.pattern, packet_length=args.packet_length)
    rates = [round(args.step * i, 6) for i in range(1, int(1 / args.step + 1e-9) + 1)]
    summary = []
    for name in args.fabrics:
        plan = compile_plan(
            load_spec(name if name.endswith(".yaml") else EXAMPLES / f"{name}.yaml")
        )
        limits = pattern_limits(plan, config)
        bound = limits.channel_load
        # an adaptive routing's equal split is no bound: only the endpoints' limits are
        what = "equal-split channel load" if bound.spread else "channel-load bound"
        print(
            f"\n{name}: buffers of {plan.buffer_depth} flits; {what} {bound.bound:.3f} (set by"
            f" {bound.limited_by}); proven bound {bound.proven:.3f}; zero-load latency"
            f" {limits.zero_load_latency:.2f}"
        )
        start = time.perf_counter()
        points = sweep(plan, config, rates, warmup=args.warmup, cycles=args.cycles)
        for p in points:
            mean = p["latency"]["mean"]
            print(
                f"  rate {p['rate']:.4f} offered {p['offered']:.3f} accepted {p['accepted']:.3f}"
                f" latency {'n/a' if mean is None else f'{mean:.1f}'}"
                + (f"  (saturated: {p['saturation_reason']})" if p["saturated"] else "")
            )
        full = simulate(
            plan,
            Traffic(dataclasses.replace(config, rate=1.0), len(plan.endpoints)),
            warmup=args.warmup,
            cycles=args.cycles,
            drain_limit=0,
            limits=limits,
        )
        found = knee(points) or 0.0
        gap = 1 - found / bound.proven
        print(
            f"  knee {found:.3f}, peak accepted at full load {full.accepted:.3f},"
            f" proven bound {bound.proven:.3f}: knee is {gap:.0%} below it"
            f" ({len(points)} sweep runs, {time.perf_counter() - start:.0f} s)"
        )
        summary.append(f"{name} knee {found:.3f} / proven bound {bound.proven:.3f}")
    print("\n" + "; ".join(summary))


if __name__ == "__main__":
    main()
