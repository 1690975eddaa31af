"""The ``zfabric`` command line: thin, it parses, calls the library and prints.

Exit status: 0 success; 1 the fabric is not deadlock-free or does not deliver, the RTL and
the model disagree, or a board build fails or misses its clock; 2 a bad spec or bad arguments
(one line on stderr, no traceback); 3 the co-simulation could not run (simulator missing or its
build failed).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from .deadlock import analyse_routing
from .errors import PlanError, SpecError
from .metrics import FabricMetrics, fabric_metrics
from .spec import FabricSpec, load_spec
from .topologies import build_fabric

__all__ = ["main", "write_atomically"]


def write_atomically(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` via a temporary file, so a failure leaves no partial file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def progress_printer(label: str) -> Callable[[int, int], None] | None:
    """A ``(done, total)`` callback that redraws one stderr line, or None when not a terminal."""
    if not sys.stderr.isatty():
        return None
    started = time.monotonic()

    def show(done: int, total: int) -> None:
        if done == total or done % max(1, total // 100) == 0:
            elapsed = time.monotonic() - started
            end = "\n" if done == total else ""
            print(f"\r{label}: {done}/{total} ({elapsed:.1f} s)", end=end, file=sys.stderr)

    return show


def _describe_topology(spec: FabricSpec) -> str:
    params = spec.params.__dict__
    shown = ", ".join(f"{key}={_short(value)}" for key, value in params.items())
    return f"{spec.kind} ({shown})"


def _short(value: Any) -> str:
    if isinstance(value, tuple) and all(isinstance(v, int) for v in value):
        return "x".join(map(str, value))
    if isinstance(value, tuple) and all(_is_port_key(v) for v in value):
        return " ".join(f"d{dim}{'+' if sign > 0 else '-'}" for dim, sign in value)
    return str(value)


def _is_port_key(value: Any) -> bool:
    return isinstance(value, tuple) and len(value) == 2 and value[1] in (1, -1)


def _summary(spec: FabricSpec, metrics: FabricMetrics, cycle: list[str] | None) -> str:
    radix = ", ".join(f"{r} ({n} switches)" for r, n in metrics.radix.items())
    vcs = ", ".join(f"{role} {n}" for role, n in metrics.vcs.items())
    lines = [
        f"{spec.name}: {_describe_topology(spec)}, routing {spec.routing}",
        f"  endpoints {metrics.endpoints}, switches {metrics.switches}, links {metrics.links}"
        f" (+{metrics.endpoint_links} endpoint links)",
        f"  radix: {radix}",
        f"  VCs per link: {vcs}",
        f"  routes: diameter {metrics.diameter}, average {metrics.average_hops:.3f}"
        " switch-to-switch hops",
        "  bisection: "
        + (
            f"{metrics.bisection} links" if metrics.bisection is not None else "skipped (too large)"
        ),
    ]
    transit = metrics.extra.get("internal_transit")
    if transit:
        lines.append(
            f"  internal-link transit paths per node: {transit['crossing']} of {transit['transit']}"
        )
    if cycle:
        lines.append("  DEADLOCK: channel dependency cycle:")
        lines.extend(f"    {channel} ->" for channel in cycle)
        lines.append(f"    {cycle[0]}")
    else:
        lines.append("  deadlock-free: yes (channel dependency graph is acyclic)")
    return "\n".join(lines)


def cmd_check(args: argparse.Namespace) -> int:
    spec = load_spec(args.spec)
    plan, graph = build_fabric(spec)
    if args.plan_out:
        write_atomically(Path(args.plan_out), plan.to_json(indent=1) + "\n")
    analysis = analyse_routing(plan, progress=progress_printer("routes"))
    metrics = fabric_metrics(plan, analysis, graph)
    if args.json:
        print(json.dumps(check_report(spec, metrics, analysis), indent=1))
    else:
        print(_summary(spec, metrics, analysis.cycle))
    return 0 if analysis.deadlock_free else 1


def check_report(spec: FabricSpec, metrics: FabricMetrics, analysis) -> dict[str, Any]:
    """The ``check --json`` object."""
    return {
        "name": spec.name,
        "topology": spec.kind,
        "routing": spec.routing,
        "endpoints": metrics.endpoints,
        "switches": metrics.switches,
        "links": metrics.links,
        "endpoint_links": metrics.endpoint_links,
        "max_radix": metrics.max_radix,
        "radix": metrics.radix,
        "vcs": metrics.vcs,
        "diameter": metrics.diameter,
        "average_hops": metrics.average_hops,
        "bisection": metrics.bisection,
        "deadlock_free": analysis.deadlock_free,
        "cycle": analysis.cycle,
        **metrics.extra,
    }


def cmd_verilog(args: argparse.Namespace) -> int:
    """Emit the fabric's Verilog, plan JSON and port list (refusing a cyclic plan by default)."""
    import shutil

    spec, plan, _analysis, ok = _checked_plan(args)
    if not ok:
        return 1
    from zfabric.hdl.verilog import write

    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=out, prefix=".staging-"))
    try:
        emission = write(plan, staging, share=not args.flat)
        for path in staging.iterdir():
            os.replace(path, out / path.name)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    lines = emission.text.count("\n")
    print(f"{spec.name}: {len(plan.switches)} switches, {len(plan.endpoints)} endpoints")
    for module, count in emission.kinds.items():
        print(f"  module {module}: {count} instances")
    print(
        f"wrote {out / (emission.top + '.v')} ({lines} lines, {emission.seconds:.1f} s),"
        f" {emission.top}.plan.json and {emission.top}.ports"
    )
    return 0


def cmd_ndt_configs(args: argparse.Namespace) -> int:
    """Every port configuration of an nDT spec's k: internal-link transit, optionally proven."""
    import dataclasses

    from .topologies.ndt import internal_transit_counts, ndt_configurations, port_name

    spec = load_spec(args.spec)
    if spec.kind != "ndt":
        raise SpecError("topology.kind", f"ndt-configs needs an ndt spec, got {spec.kind!r}")
    rows = []
    configurations = ndt_configurations(len(spec.params.k))
    progress = progress_printer("configurations")
    for index, card0 in enumerate(configurations):
        variant = dataclasses.replace(spec, params=dataclasses.replace(spec.params, card0=card0))
        plan = build_fabric(variant)[0]
        row: dict[str, Any] = {
            "card0": [port_name(p) for p in card0],
            "this_spec": card0 == spec.params.card0,
            **internal_transit_counts(plan),
        }
        if args.proof:
            analysis = analyse_routing(plan)
            row.update(
                deadlock_free=analysis.deadlock_free,
                diameter=analysis.diameter,
                average_hops=analysis.average_hops,
            )
        rows.append(row)
        if progress:
            progress(index + 1, len(configurations))
    rows.sort(key=lambda r: (r["crossing"], r["card0"]))
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    print(
        f"{spec.name}: {len(rows)} port configurations of k={_short(spec.params.k)},"
        " sorted by internal-link transit paths per node (DORT)"
    )
    for row in rows:
        mark = "  <- this spec" if row["this_spec"] else ""
        proof = ""
        if args.proof:
            proof = (
                f"  {'deadlock-free' if row['deadlock_free'] else 'CYCLIC':13s}"
                f" diameter {row['diameter']:2d} average {row['average_hops']:.3f}"
            )
        print(
            f"  Card0 {' '.join(row['card0']):24s} crossing {row['crossing']} of"
            f" {row['transit']}{proof}{mark}"
        )
    return 0


def _traffic_config(args: argparse.Namespace, rate: float):
    from zfabric.sim.traffic import TrafficConfig

    try:
        return TrafficConfig(
            pattern=args.traffic,
            rate=rate,
            packet_length=args.packet_length,
            process=args.process,
            hotspot_fraction=args.hotspot_fraction,
        )
    except ValueError as error:
        raise SpecError("", str(error)) from None


def _checked_plan(args: argparse.Namespace):
    """Compile the spec and refuse a cyclic CDG unless --allow-deadlock."""
    spec = load_spec(args.spec)
    plan, _graph = build_fabric(spec)
    analysis = analyse_routing(plan)
    if analysis.cycle and not args.allow_deadlock:
        print(
            f"zfabric: {spec.name} is not deadlock-free (use --allow-deadlock to simulate it):\n  "
            + " ->\n  ".join([*analysis.cycle, analysis.cycle[0]]),
            file=sys.stderr,
        )
        return spec, plan, analysis, False
    return spec, plan, analysis, True


def _read_trace(path: str, plan) -> list:
    """The trace file's entries, each checked against the plan's endpoints (a bad line or an
    endpoint out of range is a user error naming ``--trace``)."""
    from zfabric.sim.traffic import read_trace

    try:
        trace = read_trace(path)
    except (OSError, ValueError) as error:
        raise SpecError("--trace", str(error)) from None
    n = len(plan.endpoints)
    for entry in trace:
        if not (0 <= entry.src < n and 0 <= entry.dst < n):
            raise SpecError("--trace", f"{entry} does not fit {plan.name}'s {n} endpoints")
    return trace


def cmd_simulate(args: argparse.Namespace) -> int:
    from zfabric.sim.analytic import zero_load_latency
    from zfabric.sim.measure import replay, simulate
    from zfabric.sim.traffic import Traffic

    config = _traffic_config(args, args.rate)
    spec, plan, analysis, ok = _checked_plan(args)
    if not ok:
        return 1
    if args.trace:
        result = replay(plan, _read_trace(args.trace, plan))
    else:
        traffic = Traffic(config, len(plan.endpoints), seed=args.seed)
        result = simulate(
            plan,
            traffic,
            warmup=args.warmup,
            cycles=args.cycles,
            records=bool(args.records),
            progress=progress_printer("cycles"),
        )
    report = result.to_dict()
    report["zero_load_latency"] = zero_load_latency(analysis.average_hops, config.mean_length)
    if args.records:
        write_atomically(Path(args.records), json.dumps(report.pop("records"), indent=0) + "\n")
    if args.json:
        print(json.dumps({"name": spec.name, **report}, indent=1))
    else:
        latency = result.latency
        mean = "n/a" if latency["mean"] is None else f"{latency['mean']:.2f}"
        ci = "" if latency["ci95"] is None else f" ±{latency['ci95']:.2f}"
        print(
            f"{spec.name}: {config.pattern} traffic at {config.rate} flits/cycle/endpoint,"
            f" packets of {_short(config.packet_length).replace('x', '-')} flits"
        )
        print(
            f"  offered {result.offered:.4f}, accepted {result.accepted:.4f} flits/cycle/endpoint"
        )
        print(
            f"  latency: mean {mean}{ci}, p50 {latency['p50']}, p99 {latency['p99']},"
            f" max {latency['max']} cycles (zero-load {report['zero_load_latency']:.2f})"
        )
        print(f"  packets {result.packets}, average hops {result.average_hops}")
        if result.saturated:
            print("  SATURATED: the fabric does not accept the offered load")
    if result.deadlock:
        channels = result.deadlock["channels"]
        print(
            f"zfabric: deadlock at cycle {result.deadlock['cycle']}; waiting channels:\n  "
            + " ->\n  ".join([*channels, channels[0]] if channels else ["(none found)"]),
            file=sys.stderr,
        )
        return 1
    return 0


def cmd_cosim(args: argparse.Namespace) -> int:
    """Lock-step co-simulation of the spec's Verilog against the model (exit 1 on a mismatch)."""
    from zfabric.sim.tb.runner import CosimError, cosim, format_report, traffic_trace

    spec, plan, _analysis, ok = _checked_plan(args)
    if not ok:
        return 1
    if args.trace:
        trace = _read_trace(args.trace, plan)
    else:
        trace = traffic_trace(plan, _traffic_config(args, args.rate), args.cycles, seed=args.seed)
    try:
        report = cosim(plan, trace, sim=args.sim, vcd=args.vcd, build_dir=args.build_dir)
    except CosimError as error:
        print(f"zfabric: the co-simulation could not run: {error}", file=sys.stderr)
        return 3
    print(json.dumps(report, indent=1) if args.json else format_report(report))
    return 0 if report["passed"] else 1


def cmd_board_targets(args: argparse.Namespace) -> int:
    """The boards ``zfabric board build`` knows, with their default specs."""
    from zfabric.boards.targets import TARGETS

    for target in TARGETS.values():
        print(f"{target.name:12} {target.board} ({target.device}); default spec {target.spec}")
    return 0


def cmd_board_build(args: argparse.Namespace) -> int:
    """Build (or with --plan-only, prepare) a self-checking board design around a fabric."""
    from zfabric.boards.build import BuildError, board_build, format_report
    from zfabric.boards.targets import TARGETS

    if args.target not in TARGETS:
        raise SpecError("TARGET", f"unknown board {args.target!r}; known: {', '.join(TARGETS)}")
    try:
        report = board_build(
            args.target,
            args.spec,
            args.output,
            plan_only=args.plan_only,
            progress=None if args.json else print,
        )
    except BuildError as error:
        where = f" (log: {error.log})" if error.log else ""
        print(f"zfabric: board build failed: {error}{where}", file=sys.stderr)
        return 1
    print(json.dumps(report, indent=1) if args.json else format_report(report))
    return 0 if not report["built"] or report["timing_pass"] else 1


def cmd_sweep(args: argparse.Namespace) -> int:
    try:
        rates = sorted(float(r) for r in args.rates.split(","))
    except ValueError:
        raise SpecError("--rates", f"must be comma-separated numbers, got {args.rates!r}") from None
    curves, plans = {}, {}
    for path in args.spec:
        args.spec = path
        spec, plan, _analysis, ok = _checked_plan(args)
        if not ok:
            return 1
        curves[spec.name] = sweep_curve(spec.name, plan, args, rates)
        plans[spec.name] = plan
    if args.plot:
        bounds = None
        if args.traffic == "uniform":
            from zfabric.sim.analytic import uniform_channel_load

            bounds = {name: uniform_channel_load(plan).bound for name, plan in plans.items()}
        plot_curves(curves, Path(args.plot), title=f"{args.traffic} traffic", bounds=bounds)
    if args.json:
        print(json.dumps(curves, indent=1))
    else:
        for name, points in curves.items():
            print(f"{name}: offered -> accepted, mean latency")
            for point in points:
                mean = point["latency"]["mean"]
                shown = "n/a" if mean is None else f"{mean:.2f}"
                flag = "  saturated" if point["saturated"] else ""
                print(f"  {point['offered']:.3f} -> {point['accepted']:.3f}, {shown}{flag}")
    return 0


def sweep_curve(
    name: str, plan, args: argparse.Namespace, rates: list[float]
) -> list[dict[str, Any]]:
    """Simulate each rate in turn (stopping at saturation), reporting progress on stderr."""
    from zfabric.sim.measure import simulate
    from zfabric.sim.traffic import Traffic

    points = []
    for index, rate in enumerate(rates):
        traffic = Traffic(_traffic_config(args, rate), len(plan.endpoints), seed=args.seed)
        result = simulate(plan, traffic, warmup=args.warmup, cycles=args.cycles)
        points.append({"rate": rate, **result.to_dict()})
        mean = result.latency["mean"]
        print(
            f"[{index + 1}/{len(rates)}] {name} rate {rate}: accepted {result.accepted:.4f},"
            f" mean latency {'n/a' if mean is None else f'{mean:.2f}'}"
            + (" (saturated)" if result.saturated else ""),
            file=sys.stderr,
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
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.stem}.tmp{path.suffix}")
    figure.savefig(tmp, dpi=120)
    plt.close(figure)
    os.replace(tmp, path)


def cmd_run(args: argparse.Namespace) -> int:
    """The main job: check, Verilog, short lock-step co-simulation, model latency-throughput
    curve with plot, and a Markdown report (exit 1 if the RTL and the model disagree)."""
    import shutil

    from zfabric.sim.analytic import uniform_channel_load, zero_load_latency

    spec = load_spec(args.spec)
    plan, graph = build_fabric(spec)
    analysis = analyse_routing(plan, progress=progress_printer("routes"))
    metrics = fabric_metrics(plan, analysis, graph)
    summary = _summary(spec, metrics, analysis.cycle)
    print(summary)
    if not analysis.deadlock_free:
        return 1
    bound = uniform_channel_load(plan)
    rates = [round(0.05 * i, 2) for i in range(1, 21)]
    zero = zero_load_latency(analysis.average_hops, _traffic_config(args, rates[0]).mean_length)
    points = sweep_curve(spec.name, plan, args, rates)

    out = Path(args.output or Path("out") / spec.name)
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=out.parent, prefix=f".{out.name}.staging-"))
    try:
        from zfabric.hdl.verilog import write

        emission = write(plan, staging / "verilog")
        print(f"verilog: {len(emission.kinds)} modules, {emission.seconds:.1f} s")
        cosim = _run_cosim(plan, args)
        if cosim is not None:
            (staging / "cosim.json").write_text(json.dumps(cosim, indent=1) + "\n")
        (staging / "plan.json").write_text(plan.to_json(indent=1) + "\n")
        report = check_report(spec, metrics, analysis)
        (staging / "check.json").write_text(json.dumps(report, indent=1) + "\n")
        (staging / "sweep.json").write_text(json.dumps(points, indent=1) + "\n")
        plot_curves(
            {spec.name: points},
            staging / "curve.png",
            title=f"{spec.name}: {args.traffic} traffic",
            bounds={spec.name: bound.bound},
        )
        (staging / "report.md").write_text(
            _report_markdown(spec, summary, bound, zero, points, args, emission, cosim)
        )
        if out.exists():
            shutil.rmtree(out)
        os.replace(staging, out)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    print(f"report: {out / 'report.md'}")
    return 0 if cosim is None or cosim["passed"] else 1


def _run_cosim(plan, args: argparse.Namespace) -> dict[str, Any] | None:
    """The main job's short lock-step co-simulation, or None when skipped (no simulator, or
    ``--cosim-cycles 0``); a simulator that cannot build counts as a failure, not a skip."""
    from zfabric.sim.tb.runner import (
        CosimError,
        cosim,
        format_report,
        simulator_available,
        traffic_trace,
    )

    if args.cosim_cycles <= 0:
        return None
    if not simulator_available(args.sim):
        print(f"cosim: skipped, {args.sim} not found (scripts/setup.sh installs iverilog)")
        return None
    config = _traffic_config(args, 0.1)
    trace = traffic_trace(plan, config, args.cosim_cycles, seed=args.seed)
    print(f"cosim: {len(trace)} packets on {args.sim} (the first run builds the simulation)")
    try:
        report = cosim(plan, trace, sim=args.sim)
    except CosimError as error:
        report = {"passed": False, "error": str(error)}
        print(f"cosim: could not run: {error}", file=sys.stderr)
    else:
        print(format_report(report))
    return report


def _cosim_markdown(report: dict[str, Any] | None, args: argparse.Namespace) -> str:
    if report is None:
        return "Skipped (no simulator, or `--cosim-cycles 0`)."
    if "error" in report:
        return f"**FAILED to run**: {report['error']}"
    packets, latency = report["packets"], report["latency"]
    verdict = (
        "**PASS**: every packet delivered by the RTL intact, once, in the model's cycle."
        if report["passed"]
        else f"**FAIL**: {report['mismatches']} mismatches; first: {report['first_mismatch_text']}"
    )
    return f"""{args.traffic.capitalize()} {args.process} traffic at 0.1 flits/cycle/endpoint for
{args.cosim_cycles} cycles (seed {args.seed}), {report["sim"]}: {packets["trace"]} packets,
{report["cycles"]} cycles simulated.

| | packets delivered | mean latency | max latency |
| --- | --- | --- | --- |
| model | {packets["model"]} | {latency["model"]["mean"]} | {latency["model"]["max"]} |
| RTL | {packets["rtl"]} | {latency["rtl"]["mean"]} | {latency["rtl"]["max"]} |

{verdict}"""


def _report_markdown(spec, summary, bound, zero, points, args, emission, cosim) -> str:
    rows = "\n".join(
        f"| {p['offered']:.3f} | {p['accepted']:.3f} | "
        + (
            "n/a | n/a"
            if p["latency"]["mean"] is None
            else f"{p['latency']['mean']:.2f} | {p['latency']['p99']:.0f}"
        )
        + f" | {'yes' if p['saturated'] else 'no'} |"
        for p in points
    )
    knee = max((p["offered"] for p in points if not p["saturated"]), default=0.0)
    lengths = _short(args.packet_length).replace("x", "-")
    return f"""# {spec.name}

## Fabric

```
{summary}
```

## Performance (cycle-level reference model)

{args.traffic.capitalize()} {args.process} traffic, {lengths}-flit packets, warm-up
{args.warmup} cycles, measurement window {args.cycles} cycles, seed {args.seed}. Latency is from
packet creation to tail delivery, in cycles.

- Zero-load latency (analytic, 2·hops + L + 2): {zero:.2f} cycles
- Channel-load bound under uniform traffic: {bound.bound:.3f} flits/cycle/endpoint
  (busiest channel {bound.busiest}, load {bound.max_load:.3f} per unit injection)
- Highest offered load accepted in this sweep: {knee:.3f} flits/cycle/endpoint

![latency-throughput curve](curve.png)

| offered | accepted | mean latency | p99 latency | saturated |
| --- | --- | --- | --- | --- |
{rows}

## RTL

`verilog/{emission.top}.v`: {sum(emission.kinds.values())} instances of {len(emission.kinds)}
modules, emitted in {emission.seconds:.1f} s (with `{emission.top}.plan.json` and the port list
`{emission.top}.ports`).

## Lock-step co-simulation (RTL against the model)

{_cosim_markdown(cosim, args)}

Files: `plan.json` (the compiled plan), `check.json` (`zfabric check --json`),
`sweep.json` (every measured point), `verilog/`, `cosim.json` (the co-simulation report).
"""


def _packet_length(text: str) -> int | tuple[int, int]:
    try:
        low, _, high = text.partition("-")
        value = (int(low), int(high)) if high else int(low)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected N or MIN-MAX, got {text!r}") from None
    if min(value if isinstance(value, tuple) else (value,)) < 1 or (
        isinstance(value, tuple) and value[0] > value[1]
    ):
        raise argparse.ArgumentTypeError(f"lengths must be >= 1 and MIN <= MAX, got {text!r}")
    return value


def _traffic_arguments(parser: argparse.ArgumentParser) -> None:
    from zfabric.sim.traffic import PATTERNS

    parser.add_argument("--traffic", choices=PATTERNS, default="uniform")
    parser.add_argument(
        "--packet-length",
        type=_packet_length,
        default=4,
        help="flits per packet: N, or MIN-MAX for uniformly distributed lengths",
    )
    parser.add_argument("--process", choices=["bernoulli", "poisson"], default="bernoulli")
    parser.add_argument("--hotspot-fraction", type=float, default=0.2)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.add_argument(
        "--allow-deadlock",
        action="store_true",
        help="simulate a fabric whose CDG is cyclic; report a run-time deadlock",
    )


def _window_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--warmup", type=int, default=1000)
    parser.add_argument("--cycles", type=int, default=10000, help="measurement window")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="zfabric", description="Compile, check and analyse interconnection fabrics."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    check = commands.add_parser(
        "check", help="compile a spec, prove it deadlock-free and print its metrics"
    )
    check.add_argument("spec", help="fabric spec (YAML)")
    check.add_argument("--json", action="store_true", help="print one JSON object")
    check.add_argument("--plan-out", metavar="PLAN.json", help="write the compiled plan as JSON")
    check.set_defaults(run=cmd_check)

    verilog = commands.add_parser(
        "verilog", help="emit the fabric's Verilog, its plan JSON and a port list"
    )
    verilog.add_argument("spec", help="fabric spec (YAML)")
    verilog.add_argument("-o", "--output", metavar="DIR", default="build", help="output folder")
    verilog.add_argument("--flat", action="store_true", help="one module per switch instance")
    verilog.add_argument(
        "--allow-deadlock", action="store_true", help="emit even if the CDG is cyclic"
    )
    verilog.set_defaults(run=cmd_verilog)

    configs = commands.add_parser(
        "ndt-configs",
        help="list every nDT port configuration with its internal-link transit (and proof)",
    )
    configs.add_argument("spec", help="an ndt spec (YAML); its k is used, its ports marked")
    configs.add_argument(
        "--proof", action="store_true", help="also prove each deadlock-free and report hops"
    )
    configs.add_argument("--json", action="store_true", help="print JSON")
    configs.set_defaults(run=cmd_ndt_configs)

    simulate = commands.add_parser(
        "simulate", help="run the cycle-level reference model and report latency and throughput"
    )
    simulate.add_argument("spec", help="fabric spec (YAML)")
    simulate.add_argument("--rate", type=float, default=0.1, help="flits/cycle/endpoint")
    simulate.add_argument("--trace", metavar="FILE", help="replay 'cycle src dst length' lines")
    simulate.add_argument("--records", metavar="FILE", help="write per-packet records (JSON)")
    _traffic_arguments(simulate)
    _window_arguments(simulate)
    simulate.set_defaults(run=cmd_simulate)

    sweep = commands.add_parser("sweep", help="latency-throughput curves over injection rates")
    sweep.add_argument("spec", nargs="+", help="one or more fabric specs (YAML)")
    sweep.add_argument(
        "--rates", default="0.05,0.1,0.2,0.3,0.4,0.5,0.6", help="comma-separated rates"
    )
    sweep.add_argument("--plot", metavar="PNG", help="write the latency-throughput plot")
    _traffic_arguments(sweep)
    _window_arguments(sweep)
    sweep.set_defaults(run=cmd_sweep)

    cosim = commands.add_parser(
        "cosim", help="run the fabric's Verilog against the model in lock-step (cocotb)"
    )
    cosim.add_argument("spec", help="fabric spec (YAML)")
    cosim.add_argument("--sim", choices=["icarus", "verilator"], default="icarus")
    cosim.add_argument("--rate", type=float, default=0.1, help="flits/cycle/endpoint")
    cosim.add_argument("--cycles", type=int, default=1000, help="cycles of injection")
    cosim.add_argument("--trace", metavar="FILE", help="replay 'cycle src dst length' lines")
    cosim.add_argument("--vcd", action="store_true", help="dump the whole run as a VCD")
    cosim.add_argument(
        "--build-dir",
        metavar="DIR",
        help="Verilog and simulator build cache (default "
        "$ZFABRIC_COSIM_DIR or ~/.cache/zfabric/cosim)",
    )
    _traffic_arguments(cosim)
    cosim.set_defaults(run=cmd_cosim)

    board = commands.add_parser("board", help="self-checking FPGA prototypes of a fabric")
    board_commands = board.add_subparsers(dest="board_command", required=True)
    targets = board_commands.add_parser("targets", help="list the boards and their default specs")
    targets.set_defaults(run=cmd_board_targets)
    build = board_commands.add_parser(
        "build", help="bitstream with traffic generators, checkers and a UART report"
    )
    build.add_argument("target", help="board: icebreaker, ulx3s-85f, orangecrab (see targets)")
    build.add_argument("spec", nargs="?", help="fabric spec (YAML); default: the board's own")
    build.add_argument(
        "-o", "--output", metavar="DIR", help="build folder (default build/TARGET-SPEC)"
    )
    build.add_argument(
        "--plan-only", action="store_true", help="write the build plan, do not run the tools"
    )
    build.add_argument("--json", action="store_true", help="print the report as JSON")
    build.set_defaults(run=cmd_board_build)

    run = commands.add_parser(
        "run", help="the main job: check, latency-throughput sweep with plot, Markdown report"
    )
    run.add_argument("spec", help="fabric spec (YAML)")
    run.add_argument("-o", "--output", metavar="DIR", help="report folder (default out/NAME)")
    run.add_argument(
        "--cosim-cycles",
        type=int,
        default=200,
        metavar="N",
        help="cycles of traffic at 0.1 flits/cycle/endpoint in the lock-step co-simulation"
        " (0: skip it)",
    )
    run.add_argument("--sim", choices=["icarus", "verilator"], default="icarus")
    _traffic_arguments(run)
    _window_arguments(run)
    run.set_defaults(run=cmd_run, warmup=500, cycles=2000)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except SpecError as error:
        print(f"zfabric: error: {error}", file=sys.stderr)
        return 2
    except PlanError as error:
        print(f"zfabric: the fabric does not route: {error}", file=sys.stderr)
        return 1
    except BrokenPipeError:  # output piped into head and the like
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        print("zfabric: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
