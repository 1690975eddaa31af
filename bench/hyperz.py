"""HyperZ's four routings in the model: normalised delay against offered load (M. Adda, HyperZ:
Hyper Z-Tree Topology, 2023, §5).

The paper (seed 001, Figs 5-8) plots *normalised delay* = mean message delay / the time to
transmit a whole message against offered load, for ODim, CLIOD, ALIOD and Deter on 1024-
processor d = 2 HyperZs (VCT switches). Here: a smaller d = 2 HyperZ in the wormhole model,
delay = mean packet latency (creation to tail delivered, source queueing included) divided by
the packet's serialisation time (``packet_length`` cycles at one flit per cycle), offered load =
flits/cycle/endpoint (the fraction of an injection link's capacity). Each point is one run
(Bernoulli, seed 1, warm-up then a measured window); a point is *saturated* by the model's
verdict (zfabric.sim.measure: accepted < 95 % of offered, latency past 3x zero-load, still
rising, or measured packets undelivered a window after it); a curve stops at its first saturated
point, and the knee is the highest offered load below it (zfabric.sim.sweep.knee).

Selection: ``--router-selection`` (default ``first-free``: the first free candidate in the
routing's order, which is the paper's "idle offset dimension first"; ``occupancy`` approximates
the paper's "shortest queue" with one low/high occupancy flag per output VC,
docs/microarchitecture.md step 2).

Fabrics (``--fabric``, default ``h2-256``): ``h2-256`` is H_{2,2}(4,4)(Z_2(4,4; 1,4; 1,1)),
256 processors; the paper's 1024-processor runs (d = 2, h = 1, 2, 3; their Z-nodes are not
given) stand as ``h1-1024``, HyperX 16 x 16 with 4 processors per switch (radix 34:
15 links per dimension for 4 processors, as balanced as a 1024-processor HyperX gets),
``h2-1024``, the 256-processor study's Z-node on an 8 x 8 GHC (Z_2(4,4; 1,4; 1,1), 64 Z-nodes
of 16), and ``h3-1024``, the §5.3 Z-node Z_2(8,4,8; 1,4,8; 1,2,2) on a 2 x 2 GHC (the
choice made here for h = 3, and the scalability series' first point). Each curve's pattern
limits are computed once, not per rate; their channel load (an equal split over the
candidates, no bound for an adaptive routing) is printed beside each curve, not used by the
verdict (:func:`curve`).

    .venv/bin/python bench/hyperz.py [--fabric h2-1024] [--pattern uniform --pattern transpose]
        [--routing aliod] [--rates 0.1,0.2,0.3] [--cycles 1000] [--warmup 300]
        [--router-selection first-free] [--plot-dir bench/out]
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import time
from pathlib import Path

from zfabric.sim.analytic import PatternLimits, pattern_limits
from zfabric.sim.measure import simulate
from zfabric.sim.sweep import knee
from zfabric.sim.traffic import Traffic, TrafficConfig

from zfabric import compile_plan, load_spec
from zfabric.plan import FabricPlan
from zfabric.router_settings import SELECTIONS

RATES = (0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.8)
ROUTINGS = ("deter", "odim", "cliod", "aliod")
PACKET_LENGTH = 4
#: the fabrics by name (see the module doc): (topology, its title in plots)
FABRICS = {
    # 16 Z-nodes of 16 processors (4 level-1 switches of 4 processors, 4 level-2 switches),
    # 128 switches of radix 14 and 10
    "h2-256": (
        {"kind": "hyperz", "s": [4, 4], "z": [4, 4], "R": [1, 4]},
        "H_2,2(4,4)(Z_2(4,4;1,4;1,1))",
    ),
    # 256 switches of radix 34
    "h1-1024": ({"kind": "hyperx", "s": [16, 16], "terminals": 4}, "HyperX 16x16, 4 per switch"),
    # 64 Z-nodes of 16 processors, 512 switches of radix 22 and 18
    "h2-1024": (
        {"kind": "hyperz", "s": [8, 8], "z": [4, 4], "R": [1, 4]},
        "H_2,2(8,8)(Z_2(4,4;1,4;1,1))",
    ),
    # 4 Z-nodes of 256 processors, 288 switches of radix 14 and 18
    "h3-1024": (
        {"kind": "hyperz", "s": [2, 2], "z": [8, 4, 8], "R": [1, 4, 8], "psi": [1, 2, 2]},
        "H_2,3(2,2)(Z(8,4,8;1,4,8;1,2,2))",
    ),
}


def curve(
    plan: FabricPlan, pattern: str, args: argparse.Namespace
) -> tuple[list[dict], PatternLimits]:
    """The points up to the first saturated one, and the pattern's limits. For the adaptive
    routings (every one here but ``deter``) the verdict's bound is the endpoints' alone
    (``ChannelLoad.proven``): the analysis splits a flow equally over its candidates, and an
    adaptive routing may balance better than that (ALIOD accepts 0.302 at 0.3 on h3-1024,
    where the equal split gives 0.259); the split's figure is printed beside."""
    config = TrafficConfig(pattern=pattern, packet_length=PACKET_LENGTH)
    limits = pattern_limits(plan, config)  # the same at every rate
    points = []
    for rate in args.rates:
        traffic = Traffic(dataclasses.replace(config, rate=rate), len(plan.endpoints), 1)
        result = simulate(plan, traffic, warmup=args.warmup, cycles=args.cycles, limits=limits)
        assert result.deadlock is None, result.deadlock
        points.append({"rate": rate, **result.to_dict()})
        if result.saturated:
            break  # past the knee: later points only cost time (the model slows down)
    return points, limits


def plot(curves: dict[str, list[dict]], path: Path, title: str) -> None:
    """Normalised delay against offered load, saturated points hollow (written atomically)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(6.4, 4.4))
    for name, points in curves.items():
        rates = [p["rate"] for p in points]
        delays = [p["latency"]["mean"] / PACKET_LENGTH for p in points]
        (line,) = axes.plot(rates, delays, marker="o", label=name)
        hollow = [(r, d) for p, r, d in zip(points, rates, delays, strict=True) if p["saturated"]]
        if hollow:
            axes.scatter(
                *zip(*hollow, strict=True),
                s=60,
                facecolors="white",
                edgecolors=line.get_color(),
                zorder=3,
            )
    axes.set_xlabel("offered load (flits/cycle/endpoint)")
    axes.set_ylabel("normalised delay (latency / packet time)")
    axes.set_ylim(0, 12)
    axes.set_title(title, fontsize=9)
    axes.legend(title="hollow: saturated")
    axes.grid(alpha=0.3)
    temporary = path.with_suffix(f".{os.getpid()}.tmp{path.suffix}")
    figure.savefig(temporary, dpi=110, bbox_inches="tight")
    plt.close(figure)
    os.replace(temporary, path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fabric", choices=FABRICS, default="h2-256")
    parser.add_argument("--pattern", action="append", help="uniform, transpose, ...")
    parser.add_argument("--routing", action="append", choices=ROUTINGS, help="default all four")
    parser.add_argument(
        "--rates",
        type=lambda v: tuple(float(x) for x in v.split(",")),
        default=RATES,
        help="offered loads, comma-separated (a curve stops at its first saturated one)",
    )
    parser.add_argument("--cycles", type=int, default=1000)
    parser.add_argument("--warmup", type=int, default=300)
    parser.add_argument("--plot-dir", type=Path, default=Path(__file__).parent / "out")
    parser.add_argument("--router-selection", choices=SELECTIONS, default="first-free")
    args = parser.parse_args()
    patterns = args.pattern or ["uniform", "transpose"]
    fabric, title = FABRICS[args.fabric]
    print(
        f"# model, {args.fabric} = {fabric}, Bernoulli, {PACKET_LENGTH}-flit packets, 4-flit"
        f" buffers, warm-up {args.warmup}, window {args.cycles} cycles, seed 1,"
        f" {args.router_selection} selection; aliod/cliod 1 escape + 1 adaptive VC, odim/deter"
        f" 1 VC; rates {args.rates}"
    )
    args.plot_dir.mkdir(parents=True, exist_ok=True)
    for pattern in patterns:
        curves = {}
        for name in args.routing or ROUTINGS:
            spec = {
                "name": "bench",
                "topology": fabric,
                "routing": name,
                "router": {"selection": args.router_selection},
                "packet_length": PACKET_LENGTH,
            }
            plan = compile_plan(load_spec(spec))
            start = time.process_time()
            points, split = curve(plan, pattern, args)
            curves[name] = points
            delays = "  ".join(
                f"{p['rate']}:{p['latency']['mean'] / PACKET_LENGTH:.2f}"
                + ("*" if p["saturated"] else "")
                for p in points
            )
            print(
                f"{pattern:10s} {name:6s} knee {knee(points)}  accepted at"
                f" {points[-1]['rate']}: {points[-1]['accepted']:.3f}  normalised delay"
                f" (* saturated) {delays}  equal-split load bound {split.channel_load.bound:.3f}"
                f"  ({time.process_time() - start:.0f} CPU s)"
                + (
                    f"\n    saturated: {points[-1]['saturation_reason']}"
                    if points[-1]["saturated"]
                    else ""
                ),
                flush=True,
            )
        stem = "hyperz" if args.fabric == "h2-256" else f"hyperz-{args.fabric}"
        path = args.plot_dir / f"{stem}-{pattern}-{args.router_selection}.png"
        plot(curves, path, f"HyperZ {title}, {pattern}, wormhole model")
        print(f"  plot: {path}")


if __name__ == "__main__":
    main()
