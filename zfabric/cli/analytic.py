"""``zfabric analytic``: the latency the thesis's finite-buffer models predict for a torus or
mesh (Alzeidi, chapter 4 for ``dor``, chapter 5 for ``duato``; docs/analytic.md), and with
``--compare`` the cycle model's curve beside it, each with the saturation rate it predicts; for
a Transit fat tree, DeHon's empty-network latency per crossover level (docs/research/transit.md)."""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path
from typing import Any

from zfabric.errors import SpecError
from zfabric.spec import load_spec

from .common import (
    add_command,
    check_plot_file,
    claim_output_file,
    integer,
    packet_length,
    progress,
    rates,
)
from .experiment import OPTIONS, resolve

__all__ = ["register", "run"]

#: rates when neither --rates nor the spec's traffic.rates gives them: fractions of the
#: model's own saturation rate
DEFAULT_FRACTIONS = (0.1, 0.3, 0.5, 0.7, 0.9)
#: model points drawn per curve on the plot (the listed rates are points of their own)
PLOT_POINTS = 40


def register(commands) -> None:
    parser = add_command(
        commands,
        "analytic",
        "the theses' latency models: a torus or mesh against the cycle model; a Transit fat tree",
        "Predict mean packet latency under uniform traffic with the queueing models of"
        " Alzeidi's thesis (chapter 4: dimension-order routing, chapter 5: Duato's adaptive"
        " routing; finite buffers, virtual channels), and the rate at which each saturates."
        " With --compare, run the cycle model at the same rates (slow) and give each point's"
        " error. For a Transit fat tree (kind transit), print DeHon's latency of a circuit"
        " through an empty network at each crossover level, with the worst-case and one-cycle"
        " wire delays, in cycles and ns (only --json applies). Other families are refused"
        " (exit 2).",
    )
    parser.add_argument(
        "spec", help="fabric spec (YAML) of a torus or mesh under dor or duato, or of a Transit"
    )
    parser.add_argument(
        "--model",
        choices=["dor", "duato"],
        help="the model: dor (chapter 4) or duato (chapter 5); it must be the spec's routing"
        " (default: the spec's routing)",
    )
    parser.add_argument(
        "--timing",
        choices=["zfabric", "thesis"],
        default="zfabric",
        help="zfabric: the switch contract's cycles (docs/analytic.md); thesis: the thesis's"
        " unit-cycle router, its equations as printed",
    )
    parser.add_argument(
        "--rates",
        type=rates,
        metavar="R,R,...",
        help="comma-separated offered loads in flits/cycle/endpoint, each in (0, 1] (default:"
        " the spec's traffic.rates, else 0.1, 0.3, 0.5, 0.7 and 0.9 of the model's saturation)",
    )
    parser.add_argument(
        "--packet-length",
        type=packet_length,
        metavar="L",
        help="flits per packet, one fixed length (default: the spec's traffic.packet_length,"
        " else its packet_length)",
    )
    parser.add_argument(
        "--compare",
        action="store_true",
        help="also run the cycle model (sim.sweep: each rate, then its knee bisected to 0.01)",
    )
    parser.add_argument(
        "--process",
        choices=["bernoulli", "poisson"],
        help="the cycle model's injection process (default: the spec's traffic.process, else"
        " bernoulli; the models assume Poisson)",
    )
    parser.add_argument(
        "--seed",
        type=integer(0, 2**63 - 1),
        metavar="N",
        help="the cycle model's random seed (default: the spec's traffic.seed, else 1)",
    )
    parser.add_argument(
        "--warmup",
        type=integer(0, 10**8),
        metavar="N",
        help="the cycle model's cycles before measuring (default: the spec's, else 1000)",
    )
    parser.add_argument(
        "--cycles",
        type=integer(1, 10**8),
        metavar="N",
        help="the cycle model's measurement window (default: the spec's, else 10000)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument(
        "--plot",
        metavar="FILE",
        help="write latency against throughput, the model's curve (and the cycle model's);"
        " the suffix picks the format",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from zfabric import compile_plan
    from zfabric.sim.wormhole_fabric import fabric_model

    spec = load_spec(args.spec, size_limit=False)  # the Transit model reads sizes past it
    if spec.kind == "transit":
        return _transit(args, spec)
    spec = load_spec(args.spec)
    if spec.link_latency != 1:  # the thesis's models take one cycle a link
        raise SpecError(
            "link_latency", f"the models take links of one cycle, got {spec.link_latency}"
        )
    if args.plot:
        check_plot_file(args.plot, "--plot")
    plan = compile_plan(spec)
    # the models know uniform traffic only: the cycle model runs it too, whatever the spec says
    defaults = {name: default for name, (_flag, default) in OPTIONS.items()}
    namespace = {**vars(args), "pattern": "uniform", "hotspot_fraction": None}
    experiment = resolve(argparse.Namespace(**namespace, builtin_defaults=defaults), spec, plan)
    experiment = dataclasses.replace(
        experiment, sources={**experiment.sources, "pattern": "the models' assumption"}
    )
    length = experiment.packet_length
    if isinstance(length, tuple):  # a range comes from the flag or traffic.packet_length
        where = "--packet-length" if args.packet_length else "traffic.packet_length"
        raise SpecError(where, f"the models take one fixed length, got {length[0]}-{length[1]}")
    model = fabric_model(
        plan, spec.kind, model=args.model, timing=args.timing, packet_length=length
    )
    saturation = model.saturation()
    given = args.rates if args.rates is not None else getattr(spec.traffic, "rates", None)
    if given is None and saturation > 0:  # (a model saturated at every rate keeps the default)
        wanted = tuple(float(f"{f * saturation:.4g}") for f in DEFAULT_FRACTIONS)
        experiment = dataclasses.replace(
            experiment,
            rates=wanted,
            sources={**experiment.sources, "rates": "fractions of the model's saturation"},
        )
    wanted = tuple(sorted(experiment.rates))
    cycle_points: list[dict[str, Any]] = []
    if args.compare:
        from zfabric.sim.sweep import sweep

        with progress(args, f"{spec.name} rates", "runs") as update:
            cycle_points = sweep(
                plan,
                experiment.config(wanted[0]),
                wanted,
                seed=experiment.seed,
                warmup=experiment.warmup,
                cycles=experiment.cycles,
                progress=update,
            )
    report = _report(spec.name, model, saturation, experiment, wanted, cycle_points, args.compare)
    if args.plot:
        claim_output_file(args.plot, "--plot")
        _plot(Path(args.plot), spec.name, model, saturation, wanted, cycle_points)
    if args.json:
        print(json.dumps(report, indent=1))
    else:
        _print(report, model)
    return 0


def _model_point(model, rate: float) -> dict[str, float] | None:
    prediction = model.latency(rate)
    if prediction is None:
        return None
    return {
        "latency": prediction.latency,
        "network_latency": prediction.network_latency,
        "source_wait": prediction.source_wait,
        "multiplexing": prediction.multiplexing,
        "channel_rate": prediction.channel_rate,
    }


def _report(name, model, saturation, experiment, wanted, cycle_points, compare) -> dict:
    """The JSON object: inputs, the model and its parameters, saturation rates, points."""
    from zfabric.sim.sweep import knee

    by_rate = {p["rate"]: p for p in cycle_points}
    points = []
    for rate in sorted(set(wanted) | set(by_rate)):
        point: dict[str, Any] = {"rate": rate, "model": _model_point(model, rate)}
        if compare:
            measured = by_rate.get(rate)
            point["cycle_model"] = None if measured is None else {
                "latency": measured["latency"]["mean"],
                "ci95": measured["latency"]["ci95"],
                "accepted": measured["accepted"],
                "saturated": measured["saturated"],
                "saturation_reason": measured["saturation_reason"],
            }  # fmt: skip
            point["error"] = _error(point)
        points.append(point)
    inputs = experiment.inputs(name)
    if not compare:
        for key in ("process", "seed", "warmup", "cycles"):
            inputs.pop(key, None)
            inputs["sources"].pop(key, None)
    stable = knee(cycle_points) if compare else None
    return {
        "name": name,
        "inputs": inputs,
        "model": model.to_dict(),
        "zero_load_latency": {
            "model": model.zero_load(),
            **({"cycle_model": cycle_points[0]["limits"]["zero_load_latency"]} if compare else {}),
        },
        "saturation": {
            "model": saturation,
            **(
                {
                    "cycle_model": stable if any(p["saturated"] for p in cycle_points) else None,
                    "cycle_model_highest_stable": stable,
                }
                if compare
                else {}
            ),
        },
        "points": points,
    }


def _error(point: dict[str, Any]) -> float | None:
    """(model - cycle model) / cycle model at a point both call stable."""
    model, measured = point["model"], point["cycle_model"]
    if model is None or measured is None or measured["saturated"] or not measured["latency"]:
        return None
    return (model["latency"] - measured["latency"]) / measured["latency"]


def _print(report: dict[str, Any], model) -> None:
    saturation = report["saturation"]
    compare = "cycle_model" in report["zero_load_latency"]
    print(f"{report['name']}: {model.describe()}")
    zero = report["zero_load_latency"]
    line = f"  zero-load latency: model {zero['model']:.2f}"
    if compare:
        line += f", cycle model {zero['cycle_model']:.2f}"
    print(line + " cycles")
    line = f"  saturation: model {saturation['model']:.3f} flits/cycle/endpoint"
    if compare:
        knee = saturation["cycle_model"]
        line += (
            f"; cycle model {knee:.3f} (the highest stable rate below the first saturated)"
            if knee is not None
            else f"; cycle model above {saturation['cycle_model_highest_stable']} (no rate"
            " saturated)"
        )
    print(line)
    print(
        "  rate: model latency"
        + (", cycle model latency (95% CI), model error" if compare else "")
        + " (cycles)"
    )
    for point in report["points"]:
        shown = "saturated" if point["model"] is None else f"{point['model']['latency']:.2f}"
        text = f"  {point['rate']:.4g}: {shown}"
        if compare:
            measured = point["cycle_model"]
            if measured is None:
                text += ", not run (above the cycle model's first saturated rate)"
            elif measured["latency"] is None:
                text += ", no packet delivered"
            else:
                ci = "" if measured["ci95"] is None else f" ±{measured['ci95']:.2f}"
                text += f", {measured['latency']:.2f}{ci}"
                if measured["saturated"]:
                    text += "  saturated"
                elif point["error"] is not None:
                    text += f", {100 * point['error']:+.1f}%"
        print(text)


def _plot(path: Path, name, model, saturation, wanted, cycle_points) -> None:
    from zfabric.sim.plot import plot_curves

    label = f"{name} chapter {4 if model.model == 'dor' else 5} model"
    grid = {round(saturation * (i + 1) / PLOT_POINTS, 6) for i in range(PLOT_POINTS)}
    model_points = []
    for rate in sorted(grid | set(wanted)):
        prediction = model.latency(rate)
        if prediction is None:
            continue
        model_points.append({
            "rate": rate,
            "accepted": rate,
            "latency": {"mean": prediction.latency, "ci95": None},
            "saturated": False,
            "limits": {"zero_load_latency": model.zero_load(), "bound": saturation},
        })  # fmt: skip
    curves = {label: model_points}
    if cycle_points:
        curves[f"{name} cycle model"] = cycle_points
    plot_curves(
        curves,
        path,
        title=f"{name}: uniform traffic, the thesis's model against the cycle model"
        if cycle_points
        else f"{name}: uniform traffic, the thesis's model",
        packet_length=model.payload_length,
        buffer_depth=model.buffer_depth,
    )


#: the flags of the queueing models, which mean nothing to the Transit model
_QUEUEING_FLAGS = (
    "model", "rates", "packet_length", "compare", "process", "seed", "warmup", "cycles", "plot",
)  # fmt: skip


#: the thesis's latency table of each form
TABLES = {"full": "4.5", "hybrid": "4.7", "bidelta": "4.9"}


def _transit(args: argparse.Namespace, spec) -> int:
    """DeHon's empty-network latency of a Transit fat tree, per crossover level."""
    from zfabric.sim.transit_analytic import TC_NS, transit_report

    for name in _QUEUEING_FLAGS:
        if getattr(args, name) not in (None, False):
            flag = "--" + name.replace("_", "-")
            raise SpecError(
                flag,
                "the Transit latency model (DeHon, §4.3) is an empty network's: it takes no"
                " load, packet or cycle-model option",
            )
    if args.timing != "zfabric":
        raise SpecError("--timing", "the Transit latency model has the thesis's timing only")
    try:
        report = transit_report(spec.params)
    except ValueError as error:
        raise SpecError("topology.cap", str(error)) from None
    report = {"name": spec.name, **report}
    if args.json:
        print(json.dumps(report, indent=1))
        return 0
    wires = report["wire_delays"]
    print(f"{spec.name}: Transit {report['network']}, {report['processors']} processors")
    print(
        "  DeHon's latency model (Fat-Tree Routing for Transit, 1990, §4.3): a circuit through"
        f" an empty network, tc = {TC_NS} ns"
    )
    shown = (
        ", ".join(map(str, wires["worst"])) + " cycles" if wires["worst"] else "none (one stack)"
    )
    print(f"  wire delays n(m) between stack stages, worst case: {shown}; best case: 1 cycle")
    print("                                 | worst-case wires            | one-cycle wires")
    print("  level  stages  swallows  wires | connect       open          | connect       open")

    def cell(cycles: int) -> str:
        return f"{cycles:>3} ({cycles * TC_NS:>4} ns)"

    for row in report["levels"]:
        worst, best = row["worst"], row["best"]
        print(
            f"  {row['level']:>5}  {row['stages']:>6}  {row['swallows']:>8}  {row['wires']:>5} |"
            f" {cell(worst['connect'])} {cell(worst['open'])} |"
            f" {cell(best['connect'])} {cell(best['open'])}"
        )
    worst, best = report["extremes"]["worst"], report["extremes"]["best"]
    print(
        f"  the model's row of Table {TABLES[spec.params.form]}: connect worst"
        f" {worst['connect'] * TC_NS} ns, best {best['connect'] * TC_NS} ns;"
        f" open worst {worst['open'] * TC_NS} ns, best {best['open'] * TC_NS} ns"
    )
    print(f"  level: {report['level_meaning']}")
    return 0
