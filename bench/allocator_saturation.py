"""Saturation throughput and latency per router setting (stages x allocator x selection x
injection VCs x ejection VCs), by the model.

For each fabric and ``router:`` setting, the saturation rate is the knee of the model's sweep
(:func:`zfabric.sim.sweep.sweep`: coarse rates, then bisection), each rate judged by the model's
saturation verdict (:mod:`zfabric.sim.measure`: the measured packets drain, accepted >= 0.95 x
offered within counting noise, mean latency <= 3 x the setting's zero-load latency, latency not
rising over the window, offered load not above the channel-load bound). Then the mean latency
at a fixed load (default 0.30) is printed next to the zero-load latency, and the *peak*: the
accepted throughput at full offered load (1 flit/cycle/endpoint), where latency grows without
bound (the plateau a sweep approaches when only accepted-vs-offered is judged). Uniform
Bernoulli traffic; the fabric's own VCs and buffers. The tori let a packet that stays off
the wrap-around take either dateline class (``vc_classes: balanced``, the default), the
``-fixed`` ones give each hop its class (``routing: {vc_classes: fixed}``); the ``-plus`` ones
send ring ties toward + (``tie: plus``, zfabric's rule before alternate ties became the
default).

    .venv/bin/python bench/allocator_saturation.py [--cycles 2000] [--tolerance 0.01]
        [--injection-vcs 1 2 auto] [--ejection-vcs 1 2 auto] [--bypass none straight]
        [--seed 1] [--seeds 1]
        [fabric ...]

With ``--seeds N`` every figure is the median over the traffic seeds ``--seed`` to ``--seed`` +
N - 1 (the knee moves by about +-0.015 from seed to seed), and the per-seed knees follow it.
"""

from __future__ import annotations

import argparse
import copy
import statistics
from pathlib import Path

import yaml
from zfabric.sim.analytic import lone_packet_latency
from zfabric.sim.measure import simulate
from zfabric.sim.sweep import saturation
from zfabric.sim.traffic import Traffic, TrafficConfig

from zfabric import compile_plan, load_spec
from zfabric.errors import SpecError
from zfabric.router_settings import ALLOCATORS, BYPASSES, SELECTIONS, STAGES

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

#: fabric name -> (example, topology overrides, routing or None for the example's);
#: znode-64 is the 4-ary 3-tree (kary_ntree), with 1 VC per link as the example or 2
FABRICS = {
    "torus-4x4": ("torus-4x4", {}, None),
    "torus-4x4-fixed": ("torus-4x4", {}, {"name": "dor", "vc_classes": "fixed"}),
    "torus-4x4-plus": ("torus-4x4", {}, {"name": "dor", "tie": "plus"}),
    "torus-8x8": ("torus-4x4", {"k": [8, 8]}, None),
    "torus-8x8-fixed": ("torus-4x4", {"k": [8, 8]}, {"name": "dor", "vc_classes": "fixed"}),
    "torus-8x8-plus": ("torus-4x4", {"k": [8, 8]}, {"name": "dor", "tie": "plus"}),
    "mesh-4x4": ("mesh-4x4", {}, None),
    "znode-64": ("znode-64", {}, None),
    "znode-64-vcs2": ("znode-64", {"vcs": 2}, None),
}


def plan_for(fabric: str, router: dict, packet_length: int):
    example, overrides, routing = FABRICS[fabric]
    data = yaml.safe_load((EXAMPLES / f"{example}.yaml").read_text())
    data = copy.deepcopy(data)
    data["name"] = fabric
    data["topology"].update(overrides)
    if routing is not None:
        data["routing"] = routing
    data["packet_length"] = packet_length
    data["router"] = router
    return compile_plan(load_spec(data))


def run(plan, rate: float, args, seed: int) -> tuple[float | None, float]:
    """Mean latency (None if nothing was measured) and accepted throughput at ``rate``
    flits/cycle/endpoint."""
    config = TrafficConfig(rate=rate, packet_length=args.packet_length)
    traffic = Traffic(config, len(plan.endpoints), seed=seed)
    result = simulate(
        plan, traffic, warmup=args.warmup, cycles=args.cycles, drain_limit=args.cycles
    )
    return result.latency["mean"], result.accepted


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("fabrics", nargs="*", help=f"any of {', '.join(FABRICS)} (default: all)")
    parser.add_argument("--stages", nargs="*", type=int, default=[1], choices=STAGES)
    parser.add_argument("--allocators", nargs="*", default=list(ALLOCATORS))
    parser.add_argument("--selections", nargs="*", default=list(SELECTIONS))
    parser.add_argument(
        "--injection-vcs", nargs="*", default=["auto"], help="integers or auto (the default)"
    )
    parser.add_argument(
        "--ejection-vcs", nargs="*", default=["auto"], help="integers or auto (the default)"
    )
    parser.add_argument(
        "--bypass", nargs="*", default=["none"], choices=BYPASSES, help="router.bypass values"
    )
    parser.add_argument("--cycles", type=int, default=2000)
    parser.add_argument("--warmup", type=int, default=1000)
    parser.add_argument("--tolerance", type=float, default=0.01, help="of the knee's bisection")
    parser.add_argument("--load", type=float, default=0.30)
    parser.add_argument("--packet-length", type=int, default=4)
    parser.add_argument("--seed", type=int, default=1, help="the first traffic seed")
    parser.add_argument("--seeds", type=int, default=1, help="how many seeds (medians)")
    args = parser.parse_args()
    if args.seeds < 1:
        parser.error(f"--seeds must be at least 1, got {args.seeds}")
    seeds = range(args.seed, args.seed + args.seeds)
    unknown = sorted(set(args.fabrics) - set(FABRICS))
    if unknown:
        parser.error(f"unknown fabric {unknown[0]!r}; known: {', '.join(FABRICS)}")
    print(
        f"# uniform Bernoulli traffic, {args.packet_length}-flit packets, fabric's VCs and "
        f"buffers, warm-up {args.warmup}, window {args.cycles} cycles, "
        f"{'seed' if args.seeds == 1 else 'medians over seeds'} "
        f"{', '.join(str(seed) for seed in seeds)}; "
        f"saturation: the sweep's knee (coarse rates 0.1..1.0, bisection to {args.tolerance}) "
        f"judged by the model's verdict (zfabric.sim.measure: drained, accepted >= 0.95 "
        f"offered within counting noise, mean latency <= 3 x zero-load, not rising, not above "
        f"the channel-load bound)"
    )
    print(
        f"{'fabric':<14} {'stages':>6} {'allocator':<12} {'selection':<12} {'inj':>3} {'ej':>2} "
        f"{'bypass':<8} "
        f"{'zero-load':>9} "
        f"{'saturation':>10} {'peak':>6} {f'lat@{args.load:.2f}':>9} {'ratio':>6}"
        + ("  knee per seed" if args.seeds > 1 else "")
    )
    settings = [
        {
            "stages": stages,
            "allocator": allocator,
            "selection": selection,
            "injection_vcs": injection if injection == "auto" else int(injection),
            "ejection_vcs": ejection if ejection == "auto" else int(ejection),
            **({} if bypass == "none" else {"bypass": bypass}),
        }
        for stages in args.stages
        for allocator in args.allocators
        for selection in args.selections
        for injection in args.injection_vcs
        for ejection in args.ejection_vcs
        for bypass in args.bypass
    ]
    for fabric in args.fabrics or FABRICS:
        for router in settings:
            try:
                plan = plan_for(fabric, router, args.packet_length)
            except SpecError as error:  # a combination the settings refuse (the bypass's)
                print(f"{fabric:<14} skipped: {error}", flush=True)
                continue
            zero = lone_packet_latency(plan, args.packet_length)[1]
            knees = [
                saturation(
                    plan,
                    TrafficConfig(packet_length=args.packet_length),
                    seed=seed,
                    warmup=args.warmup,
                    cycles=args.cycles,
                    tolerance=args.tolerance,
                )
                for seed in seeds
            ]
            knee_rate = statistics.median(knees)
            means = [run(plan, args.load, args, seed)[0] for seed in seeds]
            peak = statistics.median(run(plan, 1.0, args, seed)[1] for seed in seeds)
            mean = statistics.median(means) if None not in means else None
            latency = f"{mean:9.2f} {mean / zero:6.2f}" if mean else f"{'n/a':>9} {'':>6}"
            per_seed = "  " + " ".join(f"{knee:.3f}" for knee in knees) if args.seeds > 1 else ""
            print(
                f"{fabric:<14} {router['stages']:>6} {router['allocator']:<12} "
                f"{router['selection']:<12} {plan.router.injection_vcs:>3} "
                f"{plan.router.ejection_vcs:>2} {plan.router.bypass:<8} {zero:9.2f} "
                f"{knee_rate:10.3f} {peak:6.3f} {latency}{per_seed}",
                flush=True,
            )


if __name__ == "__main__":
    main()
