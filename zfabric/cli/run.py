"""``zfabric run``: the main job. Check, Verilog, a short lock-step co-simulation, the model's
latency-throughput curve with plot, and a Markdown report, written into one folder.

The folder rule: a new or empty folder, or one zfabric wrote before (it holds the manifest
``.zfabric-manifest``). zfabric then replaces only the files of its own result (the report's
files and ``verilog/``) that the manifest lists, keeping any other listed file; a non-empty
folder without one is refused, and no file zfabric did not write is ever touched.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from zfabric.report import check_fabric
from zfabric.routing import require_route_unit
from zfabric.sim.curve import describe_knee, knee_fields
from zfabric.spec import load_spec

from .common import (
    OutputFolder,
    add_command,
    cosim_cache,
    deadlock_text,
    integer,
    phase,
    progress,
    rate_text,
    report_deadlocks,
    status,
    write_atomically,
)
from .experiment import (
    Experiment,
    add_engine_argument,
    add_traffic_arguments,
    resolve,
    sweep_curve,
)

__all__ = ["register", "run"]

#: the offered load of the short co-simulation (flits/cycle/endpoint)
COSIM_RATE = 0.1
#: files the report folder holds (plus verilog/ and, when run, cosim.json)
FILES = ("report.md", "plan.json", "check.json", "sweep.json", "curve.png", "cosim.json")


def register(commands) -> None:
    parser = add_command(
        commands,
        "run",
        "the main job: check, Verilog, co-simulation, latency-throughput sweep with plot,"
        " Markdown report",
    )
    parser.add_argument("spec", help="fabric spec (YAML)")
    parser.add_argument(
        "-o",
        "--output",
        metavar="DIR",
        help="report folder: new, empty, or written by zfabric before (default: out/NAME)",
    )
    parser.add_argument(
        "--cosim-cycles",
        type=integer(0, 10**6),
        default=200,
        metavar="N",
        help=f"cycles of traffic at {COSIM_RATE} flits/cycle/endpoint in the lock-step"
        " co-simulation (0: skip it)",
    )
    parser.add_argument(
        "--sim", choices=["icarus", "verilator"], default="icarus", help="Verilog simulator"
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object on stdout (status text goes to stderr)",
    )
    add_traffic_arguments(
        parser,
        sweep=True,
        defaults={
            "warmup": 500,
            "cycles": 2000,
            "rates": tuple(round(0.05 * i, 2) for i in range(1, 21)),
        },
    )
    add_engine_argument(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Exit 1 if the fabric is not deadlock-free (refused before the sweep unless
    ``--allow-deadlock``; with it, if the model deadlocked at any swept rate: the report is
    written, the knot printed) or the RTL and the model disagree, else 3 if the co-simulation
    could not run."""
    from zfabric.sim.analytic import cached_pattern_limits
    from zfabric.sim.plot import plot_curves

    if args.output:  # before any work; the default needs the spec's name
        OutputFolder(args.output, "--output", exclusive=True)
    spec = load_spec(args.spec)
    require_route_unit(spec, "run")
    out = OutputFolder(args.output or f"out/{spec.name}", "--output", exclusive=True)
    out.check(FILES)
    with progress(args, "routes", "destinations") as update:
        checked = check_fabric(spec, progress=update)
    plan = checked.plan
    experiment = resolve(args, spec, plan)
    text = checked.text()
    say = (lambda line: status(args, line)) if args.json else print
    say(text)
    if not checked.deadlock_free and not args.allow_deadlock:
        if args.json:
            print(json.dumps({"check": checked.report()}, indent=1))
        return 1
    limits = cached_pattern_limits(plan, experiment.config(COSIM_RATE), experiment.seed)
    bound, zero = limits.channel_load, limits.zero_load_latency
    points = sweep_curve(spec.name, plan, args, experiment, experiment.rates)
    deadlocked = report_deadlocks(spec.name, points)
    rates = [point["rate"] for point in points]
    say(
        f"sweep: {len(points)} rates, {rate_text(min(rates))} to {rate_text(max(rates))}"
        f" flits/cycle/endpoint ({experiment.pattern}, packets of {experiment.lengths()});"
        f" zero-load latency {zero:.2f} cycles\n  knee: {describe_knee(points)}"
    )

    with out.staging() as staging:
        from zfabric.hdl.verilog import write

        status(args, f"{spec.name}: emitting Verilog")
        with phase(args, "Verilog"):
            emission = write(plan, staging / "verilog")
        say(f"verilog: {len(emission.kinds)} modules, {emission.seconds:.1f} s")
        cosim = _run_cosim(plan, args, experiment, say)
        if cosim is not None:
            write_atomically(staging / "cosim.json", json.dumps(cosim, indent=1) + "\n")
        write_atomically(staging / "plan.json", plan.to_json(indent=1) + "\n")
        report = checked.report()
        write_atomically(staging / "check.json", json.dumps(report, indent=1) + "\n")
        sweep = {"inputs": experiment.inputs(spec.name), **knee_fields(points), "points": points}
        write_atomically(staging / "sweep.json", json.dumps(sweep, indent=1) + "\n")
        plot_curves(
            {spec.name: points},
            staging / "curve.png",
            title=f"{spec.name}: {experiment.pattern} traffic, packets of {experiment.lengths()}",
            buffer_depth=plan.buffer_depth,
        )
        write_atomically(
            staging / "report.md",
            _report_markdown(
                spec, plan, text, bound, zero, points, experiment, args, emission, cosim
            ),
        )
        files = out.commit(staging, replaces=out.listed(*FILES, "verilog/*"))
    passed = cosim is None or cosim["passed"]
    could_not_run = cosim is not None and "error" in cosim
    if args.json:
        print(
            json.dumps(
                {
                    "name": spec.name,
                    "inputs": experiment.inputs(spec.name),
                    "output": str(out.path),
                    "files": files,
                    "check": report,
                    "zero_load_latency": zero,
                    **knee_fields(points),
                    "sweep": points,
                    "cosim": cosim,
                    "passed": passed,
                },
                indent=1,
            )
        )
    else:
        print(f"report: {out.path / 'report.md'}")
    if deadlocked or not passed and not could_not_run:
        return 1
    return 3 if could_not_run else 0


def _run_cosim(plan, args: argparse.Namespace, experiment: Experiment, say) -> dict | None:
    """The short lock-step co-simulation's report (``error`` when it could not run: a
    simulator that cannot build, a missing simulator), or None with ``--cosim-cycles 0``."""
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
        error = f"{args.sim} not found (scripts/setup.sh installs iverilog)"
        print(f"cosim: could not run: {error}", file=sys.stderr)
        return {"passed": False, "error": error}
    config = experiment.config(COSIM_RATE)
    trace = traffic_trace(plan, config, args.cosim_cycles, seed=experiment.seed)
    status(args, f"cosim: {len(trace)} packets on {args.sim} (the first run builds the simulation)")
    try:
        with phase(args, f"cosim on {args.sim}"):
            report = cosim(plan, trace, sim=args.sim, build_dir=cosim_cache())
    except CosimError as error:  # CosimDeadlock too: the model deadlocked
        report = {"passed": False, "error": str(error)}
        print(f"cosim: could not run: {error}", file=sys.stderr)
    else:
        say(format_report(report))
    return report


def _cosim_markdown(report: dict[str, Any] | None, experiment: Experiment, args) -> str:
    if report is None:
        return "Skipped (`--cosim-cycles 0`)."
    if "error" in report:
        return f"**Could not run**:\n\n```\n{report['error']}\n```"
    packets, latency = report["packets"], report["latency"]
    verdict = (
        "**PASS**: every packet delivered by the RTL intact, once, in the model's cycle."
        if report["passed"]
        else f"**FAIL**: {report['mismatches']} mismatches; first: {report['first_mismatch_text']}"
    )
    return f"""{experiment.pattern.capitalize()} {experiment.process} traffic at {COSIM_RATE}
flits/cycle/endpoint, packets of {experiment.lengths()}, for {args.cosim_cycles} cycles (seed
{experiment.seed}), {report["sim"]}: {packets["trace"]} packets, {report["cycles"]} cycles
simulated.

| | packets delivered | mean latency | max latency |
| --- | --- | --- | --- |
| model | {packets["model"]} | {latency["model"]["mean"]} | {latency["model"]["max"]} |
| RTL | {packets["rtl"]} | {latency["rtl"]["mean"]} | {latency["rtl"]["max"]} |

{verdict}"""


def _report_markdown(
    spec, plan, text, bound, zero, points, experiment: Experiment, args, emission, cosim
) -> str:
    rows = "\n".join(
        f"| {rate_text(p['rate'])} | {p['offered']:.3f} | {p['accepted']:.3f} | "
        + (
            "n/a | n/a"
            if p["latency"]["mean"] is None
            else f"{p['latency']['mean']:.2f} | {p['latency']['p99']:.0f}"
        )
        + f" | {'deadlock' if p['deadlock'] else 'yes' if p['saturated'] else 'no'} |"
        for p in points
    )
    knee_text = describe_knee(points)
    knots = "".join(
        f"\n\n```\nrate {rate_text(p['rate'])}: {deadlock_text(p['deadlock'])}\n```"
        for p in points
        if p["deadlock"]
    )
    pattern = experiment.pattern
    zero_terms = _zero_load_terms(plan, experiment)
    bound_text = (
        f"Channel-load bound under {pattern} traffic: {bound.bound:.3f} flits/cycle/endpoint"
        f"\n  (set by {bound.limited_by})"
        if not bound.spread
        else f"Channel load under {pattern} traffic split equally over the routing's choices:"
        f" {bound.bound:.3f}\n  flits/cycle/endpoint (set by {bound.limited_by}; the routing may"
        f" balance better: the\n  proven bound is the endpoints' {bound.proven:.3f})"
    )
    return f"""# {spec.name}

## Fabric

```
{text}
```

## Performance (cycle-level reference model)

{experiment.pattern.capitalize()} {experiment.process} traffic, packets of
{experiment.lengths()}, warm-up {experiment.warmup} cycles, measurement window
{experiment.cycles} cycles, seed {experiment.seed}. Latency is from packet creation to tail
delivery, in cycles.

- Zero-load latency (analytic, {pattern} flows, {zero_terms}): {zero:.2f} cycles
- {bound_text}
- Knee: {knee_text}{knots}

![latency-throughput curve](curve.png)

| rate | offered | accepted | mean latency | p99 latency | saturated |
| --- | --- | --- | --- | --- | --- |
{rows}

## RTL

`verilog/{emission.top}.v`: {sum(emission.kinds.values())} instances of {len(emission.kinds)}
modules, emitted in {emission.seconds:.1f} s (with `{emission.top}.plan.json`, the port list
`{emission.top}.ports` and Verilator's -Wall waivers `{emission.top}.vlt`).

## Lock-step co-simulation (RTL against the model)

{_cosim_markdown(cosim, experiment, args)}

Files: `plan.json` (the compiled plan), `check.json` (`zfabric check --json`),
`sweep.json` (the inputs, the knee and every measured point), `verilog/`,{
        " `cosim.json` (the co-simulation report)," if cosim is not None else ""
    } `.zfabric-manifest` (the files zfabric wrote here).
"""


def _zero_load_terms(plan, experiment: Experiment) -> str:
    """The zero-load formula the figure is of: (stages + 1)·(hops + 1) + L, and the terms
    short buffers and head flits add when this fabric has them (RouterSettings)."""
    router, depth = plan.router, plan.buffer_depth
    terms = f"{router.stages + 1}·(hops + 1) + L"
    if depth < router.credit_period and experiment.packet_length != 1:
        period = router.credit_period
        terms += f" + ⌊(L − 1)/{depth}⌋·{period - depth} (buffers under {period} flits)"
    if router.head_bits is not None:
        terms += " + the head flits' cycles"
    if router.stores:
        terms += " + (hops + 1)·(L − 1) (store-and-forward)"
    if router.bypasses:
        terms += " − the switches gone straight through (straight bypass)"
    return terms
