"""Saturation throughput under uniform traffic, next to the channel-load bound.

For each fabric: sweep the offered load in steps; the *knee* is the highest offered load the
model still accepts (accepted >= 95% of offered, mean latency <= 3x zero-load); the *peak* is
the accepted throughput at full offered load (1 flit/cycle/endpoint). The channel-load bound
is computed from the plan's routing (sim/analytic.py). Last line: one summary per fabric.

    .venv/bin/python bench/saturation.py [--cycles 3000] [--step 0.025] [fabric ...]

A fabric is an example's name or a path to a spec (``*.yaml``).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from zfabric.sim.analytic import uniform_channel_load, zero_load_latency
from zfabric.sim.measure import simulate
from zfabric.sim.traffic import Traffic, TrafficConfig

from zfabric import analyse_routing, compile_plan, load_spec

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("fabrics", nargs="*", default=["torus-4x4", "ndt-4x4x4", "znode-64"])
    parser.add_argument("--cycles", type=int, default=3000)
    parser.add_argument("--warmup", type=int, default=1000)
    parser.add_argument("--step", type=float, default=0.025)
    parser.add_argument("--packet-length", type=int, default=4)
    args = parser.parse_args()
    print(
        f"# uniform Bernoulli traffic, {args.packet_length}-flit packets, warm-up {args.warmup},"
        f" window {args.cycles} cycles, seed 1, rate step {args.step}"
    )
    summary = []
    for name in args.fabrics:
        plan = compile_plan(
            load_spec(name if name.endswith(".yaml") else EXAMPLES / f"{name}.yaml")
        )
        bound = uniform_channel_load(plan)
        zero = zero_load_latency(analyse_routing(plan).average_hops, args.packet_length)
        print(
            f"\n{name}: channel-load bound {bound.bound:.3f} (busiest {bound.busiest},"
            f" load {bound.max_load:.3f}); zero-load latency {zero:.2f}"
        )
        knee, rate = 0.0, args.step
        while rate <= 1.0 + 1e-9:
            traffic = Traffic(
                TrafficConfig(rate=round(rate, 4), packet_length=args.packet_length),
                len(plan.endpoints),
                seed=1,
            )
            result = simulate(
                plan, traffic, warmup=args.warmup, cycles=args.cycles, drain_limit=args.cycles
            )
            mean = result.latency["mean"]
            ok = not result.saturated and mean is not None and mean <= 3 * zero
            print(
                f"  offered {result.offered:.3f} accepted {result.accepted:.3f} latency "
                f"{'n/a' if mean is None else f'{mean:.1f}'}{'' if ok else '  (past the knee)'}"
            )
            if not ok:
                break
            knee = result.offered
            rate += args.step
        full = simulate(
            plan,
            Traffic(
                TrafficConfig(rate=1.0, packet_length=args.packet_length),
                len(plan.endpoints),
                seed=1,
            ),
            warmup=args.warmup,
            cycles=args.cycles,
            drain_limit=0,
        )
        gap = 1 - knee / bound.bound
        print(
            f"  knee {knee:.3f}, peak accepted at full load {full.accepted:.3f},"
            f" bound {bound.bound:.3f}: knee is {gap:.0%} below the bound"
        )
        summary.append(f"{name} knee {knee:.3f} / bound {bound.bound:.3f}")
    print("\n" + "; ".join(summary))


if __name__ == "__main__":
    main()
