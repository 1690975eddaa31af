"""``zfabric simulate``: run the cycle-level model, report latency and throughput."""

from __future__ import annotations

import argparse
import collections
import contextlib
import json
import sys
from typing import Any

from .common import (
    add_command,
    atomic_file,
    check_output_file,
    checked_plan,
    deadlock_text,
    plural,
    progress,
)
from .experiment import add_engine_argument, add_traffic_arguments, read_checked_trace, resolve

__all__ = ["register", "run", "latency_text"]


def register(commands) -> None:
    parser = add_command(
        commands,
        "simulate",
        "run the cycle-level model and report latency and throughput",
    )
    parser.add_argument("spec", help="fabric spec (YAML)")
    parser.add_argument(
        "--trace", metavar="FILE", help="replay 'cycle src dst length' lines instead of traffic"
    )
    parser.add_argument(
        "--records",
        metavar="FILE",
        help="write per-packet records: CSV when FILE ends in .csv, else JSON",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    add_traffic_arguments(parser, single_rate=True)
    add_engine_argument(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from zfabric.sim.analytic import flow_zero_load_latency
    from zfabric.sim.measure import RecordWriter, replay, simulate
    from zfabric.sim.traffic import Traffic

    if args.records:
        check_output_file(args.records, "--records")
    spec, plan, analysis, ok = checked_plan(args, args.spec)
    if not ok:
        return 1
    experiment = resolve(args, spec, plan)
    trace = read_checked_trace(args.trace, plan) if args.trace else []
    # the records stream, as packets complete, into a temporary file that becomes --records
    records = atomic_file(args.records, argument="--records") if args.records else None
    with records or contextlib.nullcontext() as stream:
        writer = None
        if stream is not None:
            writer = RecordWriter(
                stream, "csv" if args.records.lower().endswith(".csv") else "json"
            )
        if args.trace:
            result = replay(plan, trace, records=writer, engine=args.engine)
        else:
            config = experiment.config()
            traffic = Traffic(config, len(plan.endpoints), seed=experiment.seed)
            with progress(args, f"{spec.name} cycles", "cycles") as update:
                result = simulate(
                    plan,
                    traffic,
                    warmup=experiment.warmup,
                    cycles=experiment.cycles,
                    records=writer,
                    progress=update,
                    engine=args.engine,
                )
        if writer:
            writer.close()
    if args.trace:
        inputs: dict[str, Any] = {"spec": spec.name, "trace": args.trace, "packets": len(trace)}
        mean_length = sum(e.length for e in trace) / len(trace)
        title = f"{spec.name}: trace {args.trace} ({plural(len(trace), 'packet')})"
    else:
        inputs = experiment.inputs(spec.name)
        mean_length = config.mean_length
        title = (
            f"{spec.name}: {config.pattern} {config.process} traffic at {config.rate}"
            f" flits/cycle/endpoint ({experiment.sources['rate']}),"
            f" packets of {experiment.lengths()}"
        )
    report = result.to_dict()
    # the prediction for these packets' own routes (the pattern's flows, or the trace's)
    if result.limits:
        report["zero_load_latency"] = result.limits["zero_load_latency"]
    elif args.trace and trace:
        flows = collections.Counter((e.src, e.dst) for e in trace)
        report["zero_load_latency"] = flow_zero_load_latency(plan, flows, mean_length)
    else:
        report["zero_load_latency"] = plan.router.zero_load_latency(
            analysis.average_hops,
            mean_length,
            buffer_depth=plan.buffer_depth,
            link_latency=plan.link_latency,
        )
    if args.json:
        print(json.dumps({"name": spec.name, "inputs": inputs, **report}, indent=1))
    else:
        print(title)
        if not args.trace:
            print(
                f"  offered {result.offered:.4f}, accepted {result.accepted:.4f}"
                " flits/cycle/endpoint"
            )
        print(f"  {latency_text(report)}")
        hops = "n/a" if result.average_hops is None else f"{result.average_hops:.3f}"
        print(f"  packets {result.packets}, average hops {hops}")
        if result.saturated:
            print(f"  SATURATED: {result.saturation_reason}")
    if result.deadlock:
        print(f"zfabric: {deadlock_text(result.deadlock)}", file=sys.stderr)
        return 1
    return 0


def latency_text(report: dict[str, Any]) -> str:
    """Packet latency (and network latency, from head injection, when the model gives it)."""
    latency = report["latency"]
    if latency["mean"] is None:
        return (
            "latency: n/a, no measured packet was delivered"
            f" (zero-load {report['zero_load_latency']:.2f})"
        )
    mean = f"{latency['mean']:.2f}"
    ci = "" if latency.get("ci95") is None else f" ±{latency['ci95']:.2f}"
    text = (
        f"latency: mean {mean}{ci}, p50 {latency['p50']}, p99 {latency['p99']},"
        f" max {latency['max']} cycles (zero-load {report['zero_load_latency']:.2f})"
    )
    network = report.get("network_latency")
    if isinstance(network, dict) and network.get("mean") is not None:
        text += f"; network latency mean {network['mean']:.2f}"
    return text
