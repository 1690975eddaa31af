"""``zfabric faults``: every single link, switch or chip failure of a fabric in turn
(:func:`zfabric.faults.single_failures` does the work; docs/faults.md)."""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path
from typing import Any

from zfabric.faults import SINGLE_KINDS, FailureResult, single_failures
from zfabric.spec import load_spec
from zfabric.topologies import compile_plan

from .common import add_command, atomic_file, check_plot_file, plural, progress

__all__ = ["register", "run", "summary"]


def register(commands) -> None:
    parser = add_command(
        commands,
        "faults",
        "fail every link, switch or chip in turn: pairs cut, bandwidth lost, deadlock proof",
    )
    parser.add_argument("spec", help="fabric spec (YAML); its own faults: are failed first")
    parser.add_argument(
        "--single",
        choices=SINGLE_KINDS,
        default="links",
        help="what fails, one at a time (chips: families built of chips, Transit's RN1)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument(
        "--plot",
        metavar="FILE",
        help="plot the pairs each failure disconnects and the channels it costs each level; the"
        " suffix picks the format (.png, .pdf, .svg...)",
    )
    parser.set_defaults(run=run)


def summary(results: list[FailureResult]) -> dict[str, Any]:
    """How many failures leave every pair connected and the fabric proven, by which routing,
    and per level the most channels into it one failure costs."""
    worst: dict[str, list[int]] = {}
    for result in results:
        for level, (lost, total) in result.lost.items():
            if level not in worst or lost > worst[level][0]:
                worst[level] = [lost, total]
    return {
        "failures": len(results),
        "all_pairs_connected": sum(r.disconnected == 0 for r in results),
        "proven_deadlock_free": sum(bool(r.deadlock_free) for r in results),
        "by_routing": dict(Counter(r.routing or "none proven" for r in results)),
        "most_pairs_disconnected": max((r.disconnected for r in results), default=0),
        "worst_level_loss": worst,
    }


def _line(result: FailureResult) -> str:
    lost = "; ".join(
        f"{level} {lost}/{total}" for level, (lost, total) in result.lost.items() if lost
    )
    text = f"  {result.what}: {plural(result.disconnected, 'pair')} disconnected"
    if result.cut_off:
        text += f" ({', '.join(result.cut_off)} cut off)"
    text += f", {plural(result.channels_lost, 'channel')} lost"
    if lost:
        text += f" (into {lost})"
    if result.deadlock_free:
        text += f"; proven deadlock-free under {result.routing}"
    elif result.deadlock_free is False:
        text += f"; NOT deadlock-free under {result.routing}"
    else:
        text += f"; not proven: {result.problem}"
    return text


def text(name: str, kind: str, results: list[FailureResult]) -> str:
    """What ``zfabric faults`` prints."""
    total = summary(results)
    n = total["failures"]
    routings = ", ".join(f"{r} {c}" for r, c in total["by_routing"].items())
    lines = [
        f"{name}: every single {kind[:-1] if kind != 'switches' else 'switch'} failure ({n})",
        f"  every pair still connected: {total['all_pairs_connected']} of {n}",
        f"  proven deadlock-free between the endpoints left: {total['proven_deadlock_free']}"
        f" of {n} (routing: {routings})",
    ]
    if total["worst_level_loss"]:
        worst = ", ".join(
            f"{level} {lost} of {count}"
            for level, (lost, count) in total["worst_level_loss"].items()
        )
        lines.append(f"  most channels into a level one failure costs: {worst}")
    lines.extend(_line(result) for result in results)
    return "\n".join(lines)


def plot(results: list[FailureResult], path: str, title: str) -> None:
    """Two panels over the failures in order: the pairs each disconnects (coloured by what is
    proven), and the channels into each level it costs."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, (top, bottom) = plt.subplots(2, 1, figsize=(8, 6), sharex=True)
    x = range(len(results))
    colours = [
        "tab:green"
        if r.deadlock_free and r.problem is None
        else "tab:blue"
        if r.deadlock_free
        else "tab:red"
        for r in results
    ]
    top.scatter(x, [r.disconnected for r in results], c=colours, s=12)
    top.set_ylim(bottom=-0.05 * max(1, max((r.disconnected for r in results), default=0)) - 0.5)
    top.yaxis.get_major_locator().set_params(integer=True)
    top.set_ylabel("pairs disconnected")
    top.set_title(
        f"{title}\ngreen: own routing proven, blue: up*/down* tables proven, red: not proven",
        fontsize=9,
    )
    levels = sorted({level for r in results for level in r.lost})
    for level in levels:
        bottom.plot(x, [r.lost.get(level, (0, 0))[0] for r in results], label=level, marker=".")
    if not levels:
        bottom.plot(x, [r.channels_lost for r in results], label="all channels", marker=".")
    bottom.set_ylim(bottom=0)
    bottom.yaxis.get_major_locator().set_params(integer=True)
    bottom.set_ylabel("channels lost")
    bottom.set_xlabel("failure (in the order zfabric faults lists them)")
    bottom.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    for axes in (top, bottom):
        axes.grid(True, alpha=0.3)
    suffix = Path(path).suffix[1:].lower()
    with atomic_file(path, "wb", argument="--plot") as handle:
        figure.savefig(handle, format=suffix, dpi=120, bbox_inches="tight")
    plt.close(figure)


def run(args: argparse.Namespace) -> int:
    if args.plot:
        check_plot_file(args.plot, "--plot")
    spec = load_spec(args.spec)
    plan = compile_plan(spec)
    label = f"single {args.single[:-1] if args.single != 'switches' else 'switch'} failures"
    with progress(args, label, "failures") as update:
        results = single_failures(plan, args.single, progress=update)
    if args.plot:
        plot(results, args.plot, f"{spec.name}: {label}")
    if args.json:
        report = {
            "name": spec.name,
            "single": args.single,
            **summary(results),
            "results": [result.report() for result in results],
        }
        print(json.dumps(report, indent=1))
    else:
        print(text(spec.name, args.single, results))
    return 0
