"""``zfabric sweep``: latency-throughput curves over injection rates, and the curve and plot
code ``run`` shares (kept together so a refined sweep or another plotter swaps in here)."""

from __future__ import annotations

import argparse
import io
import json
from pathlib import Path
from typing import Any

from .check import checked_plan
from .common import add_command, check_output_file, progress, status, write_atomically
from .experiment import Experiment, add_traffic_arguments, resolve

__all__ = ["register", "run", "sweep_curve", "plot_curves"]


def register(commands) -> None:
    parser = add_command(commands, "sweep", "latency-throughput curves over injection rates")
    parser.add_argument("spec", nargs="+", help="one or more fabric specs (YAML)")
    parser.add_argument("--plot", metavar="PNG", help="write the latency-throughput plot")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    add_traffic_arguments(parser, sweep=True)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    if args.plot:
        check_output_file(args.plot, "--plot")
    curves, plans, experiments = {}, {}, {}
    for path in args.spec:
        spec, plan, _analysis, ok = checked_plan(args, path)
        if not ok:
            return 1
        experiment = resolve(args, spec)
        curves[spec.name] = sweep_curve(spec.name, plan, args, experiment, experiment.rates)
        plans[spec.name] = plan
        experiments[spec.name] = experiment
    if args.plot:
        patterns = {e.pattern for e in experiments.values()}
        bounds = None
        if patterns == {"uniform"}:
            from zfabric.sim.analytic import uniform_channel_load

            bounds = {name: uniform_channel_load(plan).bound for name, plan in plans.items()}
        lengths = ", ".join(sorted({e.lengths() for e in experiments.values()}))
        title = f"{'/'.join(sorted(patterns))} traffic, packets of {lengths}"
        plot_curves(curves, Path(args.plot), title=title, bounds=bounds)
    if args.json:
        report = {
            name: {"inputs": experiments[name].inputs(name), "points": points}
            for name, points in curves.items()
        }
        print(json.dumps(report, indent=1))
    else:
        for name, points in curves.items():
            print(f"{name}: packets of {experiments[name].lengths()}")
            print("  offered -> accepted, mean latency")
            for point in points:
                mean = point["latency"]["mean"]
                shown = "n/a" if mean is None else f"{mean:.2f}"
                flag = "  saturated" if point["saturated"] else ""
                print(f"  {point['offered']:.3f} -> {point['accepted']:.3f}, {shown}{flag}")
    return 0


def sweep_curve(
    name: str,
    plan,
    args: argparse.Namespace,
    experiment: Experiment,
    rates: tuple[float, ...] | list[float],
) -> list[dict[str, Any]]:
    """Simulate each rate in turn, stopping at saturation or deadlock."""
    from zfabric.sim.measure import simulate
    from zfabric.sim.traffic import Traffic

    points = []
    with progress(args, f"{name} rates", "rates") as update:
        for index, offered in enumerate(rates):
            traffic = Traffic(experiment.config(offered), len(plan.endpoints), seed=experiment.seed)
            result = simulate(plan, traffic, warmup=experiment.warmup, cycles=experiment.cycles)
            points.append({"rate": offered, **result.to_dict()})
            if update:
                update(index + 1, len(rates))
            mean = result.latency["mean"]
            status(
                args,
                f"[{index + 1}/{len(rates)}] {name} rate {offered}: accepted"
                f" {result.accepted:.4f}, mean latency {'n/a' if mean is None else f'{mean:.2f}'}"
                + (" (saturated)" if result.saturated else ""),
            )
            if result.saturated or result.deadlock:
                break
    return points


def plot_curves(
    curves: dict[str, list[dict]],
    path: Path,
    *,
    title: str,
    bounds: dict[str, float] | None = None,
) -> None:
    """Latency against accepted throughput, one line per fabric (written atomically).

    ``bounds`` draws each fabric's channel-load bound as a dashed vertical line; saturated
    points are drawn hollow.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(6.4, 4.2))
    for name, points in curves.items():
        shown = [p for p in points if p["latency"]["mean"] is not None]
        (line,) = axes.plot(
            [p["accepted"] for p in shown],
            [p["latency"]["mean"] for p in shown],
            marker="o",
            label=name,
        )
        saturated = [p for p in shown if p["saturated"]]
        axes.plot(
            [p["accepted"] for p in saturated],
            [p["latency"]["mean"] for p in saturated],
            "o",
            markerfacecolor="white",
            color=line.get_color(),
        )
        if bounds and name in bounds:
            axes.axvline(
                bounds[name],
                linestyle="--",
                color=line.get_color(),
                alpha=0.6,
                label=f"{name} channel-load bound",
            )
    axes.set_xlabel("accepted throughput (flits/cycle/endpoint)")
    axes.set_ylabel("mean packet latency (cycles)")
    axes.set_title(title)
    axes.grid(True, alpha=0.3)
    axes.legend()
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=120)
    plt.close(figure)
    write_atomically(path, buffer.getvalue())
