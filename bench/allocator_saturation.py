"""Saturation throughput and latency per router setting (allocator x selection), by the model.

For each fabric and ``router:`` setting, the saturation rate is found by bisection on the
offered rate: a rate passes when the measured packets all drain, accepted >= 0.95 x offered and
mean latency <= 3 x the zero-load latency (docs/microarchitecture.md's formula, averaged over
uniform pairs). Then the mean latency at a fixed load (default 0.30) is printed next to the
zero-load latency. Uniform Bernoulli traffic; the fabric's own VCs and buffers.

    .venv/bin/python bench/allocator_saturation.py [--cycles 2000] [--steps 7] [fabric ...]
"""

from __future__ import annotations

import argparse
import copy
from pathlib import Path

import yaml
from zfabric.sim.measure import simulate
from zfabric.sim.traffic import Traffic, TrafficConfig

from zfabric import analyse_routing, compile_plan, load_spec
from zfabric.router_settings import ALLOCATORS, SELECTIONS, STAGES

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

#: fabric name -> (example, topology overrides)
FABRICS = {
    "torus-4x4": ("torus-4x4", {}),
    "torus-8x8": ("torus-4x4", {"k": [8, 8]}),
    "mesh-4x4": ("mesh-4x4", {}),
    "znode-64": ("znode-64", {}),
}


def plan_for(fabric: str, router: dict, packet_length: int):
    example, overrides = FABRICS[fabric]
    data = yaml.safe_load((EXAMPLES / f"{example}.yaml").read_text())
    data = copy.deepcopy(data)
    data["name"] = fabric
    data["topology"].update(overrides)
    data["packet_length"] = packet_length
    data["router"] = router
    return compile_plan(load_spec(data))


def run(plan, rate: float, args) -> tuple[float, float, float | None, bool]:
    """(offered, accepted, mean latency, saturated) at ``rate`` flits/cycle/endpoint."""
    config = TrafficConfig(rate=round(rate, 4), packet_length=args.packet_length)
    traffic = Traffic(config, len(plan.endpoints), seed=args.seed)
    result = simulate(
        plan, traffic, warmup=args.warmup, cycles=args.cycles, drain_limit=args.cycles
    )
    return result.offered, result.accepted, result.latency["mean"], result.saturated


def saturation(plan, zero: float, args) -> float:
    """The highest rate (within 2^-steps) that passes the latency criterion."""
    low, high = 0.0, 1.0
    for _ in range(args.steps):
        rate = (low + high) / 2
        _offered, _accepted, mean, saturated = run(plan, rate, args)
        if not saturated and mean is not None and mean <= 3 * zero:
            low = rate
        else:
            high = rate
    return low


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("fabrics", nargs="*", default=list(FABRICS), choices=list(FABRICS))
    parser.add_argument("--stages", nargs="*", type=int, default=[1], choices=STAGES)
    parser.add_argument("--allocators", nargs="*", default=list(ALLOCATORS))
    parser.add_argument("--selections", nargs="*", default=list(SELECTIONS))
    parser.add_argument("--cycles", type=int, default=2000)
    parser.add_argument("--warmup", type=int, default=1000)
    parser.add_argument("--steps", type=int, default=7)
    parser.add_argument("--load", type=float, default=0.30)
    parser.add_argument("--packet-length", type=int, default=4)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    print(
        f"# uniform Bernoulli traffic, {args.packet_length}-flit packets, fabric's VCs and "
        f"buffers, warm-up {args.warmup}, window {args.cycles} cycles, seed {args.seed}; "
        f"saturation: bisection ({args.steps} steps) on the highest rate with every measured "
        f"packet drained, accepted >= 0.95 offered, mean latency <= 3 x zero-load"
    )
    print(
        f"{'fabric':<10} {'stages':>6} {'allocator':<12} {'selection':<12} {'zero-load':>9} "
        f"{'saturation':>10} {f'lat@{args.load:.2f}':>9} {'ratio':>6}"
    )
    settings = [
        {"stages": stages, "allocator": allocator, "selection": selection}
        for stages in args.stages
        for allocator in args.allocators
        for selection in args.selections
    ]
    for fabric in args.fabrics:
        for router in settings:
            plan = plan_for(fabric, router, args.packet_length)
            hops = analyse_routing(plan).average_hops
            zero = plan.router.zero_load_latency(hops, args.packet_length)
            knee = saturation(plan, zero, args)
            _offered, _accepted, mean, _saturated = run(plan, args.load, args)
            latency = f"{mean:9.2f} {mean / zero:6.2f}" if mean else f"{'n/a':>9} {'':>6}"
            print(
                f"{fabric:<10} {router['stages']:>6} {router['allocator']:<12} "
                f"{router['selection']:<12} {zero:9.2f} {knee:10.3f} {latency}",
                flush=True,
            )


if __name__ == "__main__":
    main()
