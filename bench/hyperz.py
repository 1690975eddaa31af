"""HyperZ's four routings in the model: normalised delay against offered load (issue 17 item 5,
first cut; digest reference/hyperz-transit.md §3).

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

    .venv/bin/python bench/hyperz.py [--pattern uniform --pattern transpose] [--cycles 1000]
        [--warmup 300] [--router-selection first-free] [--plot-dir bench/out]
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import time
from pathlib import Path

from zfabric.sim.measure import simulate
from zfabric.sim.sweep import knee
from zfabric.sim.traffic import Traffic, TrafficConfig

from zfabric import compile_plan, load_spec
from zfabric.plan import FabricPlan
from zfabric.router_settings import SELECTIONS

RATES = (0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.8)
ROUTINGS = ("deter", "odim", "cliod", "aliod")
PACKET_LENGTH = 4
#: H_{2,2}(4,4; 1,1)(Z_2(4,4; 1,4; 1,1)): 16 Z-nodes of 16 processors (4 level-1 switches of
#: 4 processors, 4 level-2 switches), 256 processors, 128 switches of radix 14 and 10
FABRIC = {"kind": "hyperz", "s": [4, 4], "z": [4, 4], "R": [1, 4]}


def curve(plan: FabricPlan, pattern: str, args: argparse.Namespace) -> list[dict]:
    config = TrafficConfig(pattern=pattern, packet_length=PACKET_LENGTH)
    points = []
    for rate in RATES:
        traffic = Traffic(dataclasses.replace(config, rate=rate), len(plan.endpoints), 1)
        result = simulate(plan, traffic, warmup=args.warmup, cycles=args.cycles)
        assert result.deadlock is None, result.deadlock
        points.append({"rate": rate, **result.to_dict()})
        if result.saturated:
            break  # past the knee: later points only cost time (the model slows down)
    return points


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
    parser.add_argument("--pattern", action="append", help="uniform, transpose, ...")
    parser.add_argument("--cycles", type=int, default=1000)
    parser.add_argument("--warmup", type=int, default=300)
    parser.add_argument("--plot-dir", type=Path, default=Path(__file__).parent / "out")
    parser.add_argument("--router-selection", choices=SELECTIONS, default="first-free")
    args = parser.parse_args()
    patterns = args.pattern or ["uniform", "transpose"]
    print(
        f"# model, {FABRIC}, Bernoulli, {PACKET_LENGTH}-flit packets, 4-flit buffers, warm-up"
        f" {args.warmup}, window {args.cycles} cycles, seed 1, {args.router_selection}"
        f" selection; aliod/cliod 1 escape + 1 adaptive VC, odim/deter 1 VC; rates {RATES}"
    )
    args.plot_dir.mkdir(parents=True, exist_ok=True)
    for pattern in patterns:
        curves = {}
        for name in ROUTINGS:
            spec = {
                "name": "bench",
                "topology": FABRIC,
                "routing": name,
                "router": {"selection": args.router_selection},
                "packet_length": PACKET_LENGTH,
            }
            plan = compile_plan(load_spec(spec))
            start = time.perf_counter()
            points = curves[name] = curve(plan, pattern, args)
            delays = "  ".join(
                f"{p['rate']}:{p['latency']['mean'] / PACKET_LENGTH:.2f}"
                + ("*" if p["saturated"] else "")
                for p in points
            )
            print(
                f"{pattern:10s} {name:6s} knee {knee(points)}  accepted at"
                f" {points[-1]['rate']}: {points[-1]['accepted']:.3f}  normalised delay"
                f" (* saturated) {delays}  ({time.perf_counter() - start:.0f} s)"
            )
        path = args.plot_dir / f"hyperz-{pattern}-{args.router_selection}.png"
        plot(curves, path, f"HyperZ H_2,2(4,4)(Z_2(4,4;1,4;1,1)), {pattern}, wormhole model")
        print(f"  plot: {path}")


if __name__ == "__main__":
    main()
