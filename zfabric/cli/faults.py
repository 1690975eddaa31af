"""``zfabric faults``: every single link, switch or chip failure of a fabric in turn
(:func:`zfabric.faults.single_failures` does the work; docs/faults.md). With ``--rate`` the
model runs the fabric intact and with each failure that leaves it connected and proven, as
points of a study (:mod:`zfabric.sim.study`: ``--workers``, ``--scheduler``)."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from zfabric.faults import (
    SINGLE_KINDS,
    FailureResult,
    failure_candidates,
    fault_entry,
    single_failures,
)
from zfabric.plan import FabricPlan
from zfabric.spec import load_spec
from zfabric.topologies import compile_plan

from .common import (
    add_command,
    add_executor_arguments,
    atomic_file,
    check_plot_file,
    executor,
    plural,
    progress,
    rate_text,
)
from .experiment import Experiment, add_engine_argument, add_traffic_arguments, resolve

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
        help="what fails, one at a time (chips: families built of chips, Transit's RN1);"
        " failures a symmetry of the fabric maps onto each other share one proof: the"
        " up*/down* tables moved by it, the family's routing's verdict where the routing"
        " commutes with it (--json: each result's carried; two are checked from scratch)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument(
        "--plot",
        metavar="FILE",
        help="plot the pairs each failure disconnects and the channels it costs each level; the"
        " suffix picks the format (.png, .pdf, .svg...); with --rate, the accepted throughput too",
    )
    add_traffic_arguments(
        parser,
        single_rate=True,
        rate_help="run the model at offered load R (flits/cycle/endpoint, in (0, 1]), intact"
        " and with each failure that leaves every pair connected and a proven routing; the"
        " traffic, engine and executor options apply to these runs",
    )
    add_engine_argument(parser)
    add_executor_arguments(parser, default_workers=0)
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


def text(
    name: str,
    kind: str,
    results: list[FailureResult],
    model: dict[str, Any] | None = None,
    model_line: str | None = None,
) -> str:
    """What ``zfabric faults`` prints (``model``: each failure's model result by its ``what``,
    ``model_line``: what the model runs found overall)."""
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
    if model_line:
        lines.append(model_line)
    for result in results:
        line = _line(result)
        if model is not None:
            line += f"; model: {_model_text(model[result.what])}"
        lines.append(line)
    return "\n".join(lines)


def plot(
    results: list[FailureResult],
    path: str,
    title: str,
    model: tuple[dict | None, dict[str, Any]] | None = None,
) -> None:
    """Panels over the failures in order: the pairs each disconnects (coloured by what is
    proven), the channels into each level it costs, and with ``model`` (the intact result,
    each failure's) the accepted throughput at the rate run, the intact fabric's as a line."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = 3 if model is not None else 2
    figure, panels = plt.subplots(rows, 1, figsize=(8, 3 * rows), sharex=True)
    top, bottom = panels[0], panels[1]
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
    bottom.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    if model is not None:
        intact, runs = model
        accepted = panels[2]
        shown = [(i, runs[r.what]) for i, r in enumerate(results) if runs[r.what] is not None]
        accepted.scatter(
            [i for i, _ in shown],
            [run["accepted"] for _, run in shown],
            c=["tab:red" if run["deadlock"] else "tab:blue" for _, run in shown],
            s=12,
            label="with the failure",
        )
        if intact is not None:
            accepted.axhline(intact["accepted"], color="tab:green", label="intact")
        accepted.set_ylim(bottom=0)
        accepted.set_ylabel("accepted (flits/cycle/endpoint)")
        accepted.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    panels[-1].set_xlabel("failure (in the order zfabric faults lists them)")
    for axes in panels:
        axes.grid(True, alpha=0.3)
    suffix = Path(path).suffix[1:].lower()
    with atomic_file(path, "wb", argument="--plot") as handle:
        figure.savefig(handle, format=suffix, dpi=120, bbox_inches="tight")
    plt.close(figure)


def model_runs(
    args: argparse.Namespace,
    experiment: Experiment,
    plan: FabricPlan,
    results: list[FailureResult],
) -> tuple[dict[str, Any], list[str]]:
    """The model at ``--rate``: the intact fabric's result and each connected, proven
    failure's (with ``--allow-deadlock`` the unproven ones too; by its ``what``, None for the
    others), run as the points of a study; and the points that failed, one line each."""
    from zfabric.sim.study import PointCache, Study, failure_summary, run_study, spec_points

    base = spec_points(
        args.spec,
        plan.name,
        experiment.config(),
        [experiment.rate],
        seed=experiment.seed,
        warmup=experiment.warmup,
        cycles=experiment.cycles,
        engine=args.engine,
    )[0]
    entries = dict(failure_candidates(plan, args.single))
    points = [dataclasses.replace(base, spec_name="intact")]
    for result in results:
        proven = result.deadlock_free or (args.allow_deadlock and result.routing is not None)
        if result.disconnected == 0 and proven:
            data = json.loads(base.spec_json)
            faults = data.setdefault("faults", {})
            for key, entries_of_key in fault_entry(plan, entries[result.what]).items():
                faults[key] = [*faults.get(key, []), *entries_of_key]
            spec_json = json.dumps(data, sort_keys=True)
            points.append(dataclasses.replace(base, spec_name=result.what, spec_json=spec_json))
    study = Study("faults", tuple(points), retries=2)
    with (
        PointCache(None) as cache,
        executor(args, study.retries) as runner,
        progress(args, f"model at {rate_text(experiment.rate)}", "runs") as update,
    ):
        records = run_study(study, runner, cache, progress=update)
    by_what: dict[str, Any] = {r.what: None for r in results}
    for record in records:
        by_what[record["inputs"]["spec"]] = record["result"]
    return by_what, failure_summary(records)


def model_summary(intact: dict | None, model: dict[str, Any]) -> dict[str, Any]:
    """The intact fabric's accepted throughput, and over the failures run the lowest (with
    which failure) and the mean."""
    accepted = {what: r["accepted"] for what, r in model.items() if r is not None}
    lowest = min(accepted, key=accepted.get, default=None)
    return {
        "intact_accepted": intact["accepted"] if intact else None,
        "failures_run": len(accepted),
        "lowest_accepted": accepted[lowest] if lowest else None,
        "lowest_failure": lowest,
        "mean_accepted": sum(accepted.values()) / len(accepted) if accepted else None,
        "saturated": sum(1 for r in model.values() if r is not None and r["saturated"]),
        "deadlocked": sum(1 for r in model.values() if r is not None and r["deadlock"]),
    }


def _model_text(result: dict | None) -> str:
    if result is None:
        return "not run"
    flag = "deadlocked" if result["deadlock"] else "saturated" if result["saturated"] else ""
    mean = result["latency"]["mean"]
    latency = "n/a" if mean is None else f"{mean:.1f}"
    return f"accepted {result['accepted']:.3f}, latency {latency}" + (f" ({flag})" if flag else "")


def run(args: argparse.Namespace) -> int:
    """Exit 1 when a model run failed or deadlocked (with ``--rate``)."""
    if args.plot:
        check_plot_file(args.plot, "--plot")
    spec = load_spec(args.spec)
    plan = compile_plan(spec)
    label = f"single {args.single[:-1] if args.single != 'switches' else 'switch'} failures"
    experiment = resolve(args, spec, plan) if args.rate is not None else None
    with progress(args, label, "failures") as update:
        results = single_failures(plan, args.single, progress=update)
    model: dict[str, Any] | None = None
    failed: list[str] = []
    intact = None
    if experiment is not None:
        model, failed = model_runs(args, experiment, plan, results)
        intact = model.pop("intact", None)
    if args.plot:
        plot(
            results,
            args.plot,
            f"{spec.name}: {label}",
            None if model is None else (intact, model),
        )
    if args.json:
        report: dict[str, Any] = {
            "name": spec.name,
            "single": args.single,
            **summary(results),
            "results": [result.report() for result in results],
        }
        if model is not None:
            report["model"] = {
                "inputs": experiment.inputs(spec.name),
                "engine": args.engine,
                **model_summary(intact, model),
                "intact": intact,
            }
            for entry in report["results"]:
                entry["model"] = model[entry["what"]]
        print(json.dumps(report, indent=1))
    else:
        model_line = None
        if model is not None:
            total = model_summary(intact, model)
            model_line = (
                f"  model at rate {rate_text(experiment.rate)} ({experiment.pattern},"
                f" {experiment.lengths()}, {args.engine} engine): intact {_model_text(intact)}"
            )
            if total["lowest_failure"] is not None:
                model_line += (
                    f"; with one failure mean accepted {total['mean_accepted']:.3f}, lowest"
                    f" {total['lowest_accepted']:.3f} ({total['lowest_failure']})"
                )
        print(text(spec.name, args.single, results, model, model_line))
    for line in failed:
        print(f"zfabric: failed: {line}", file=sys.stderr)
    deadlocked = model is not None and any(r and r["deadlock"] for r in [intact, *model.values()])
    if deadlocked:
        print("zfabric: the model deadlocked (the JSON has each knot)", file=sys.stderr)
    return 1 if failed or deadlocked else 0
