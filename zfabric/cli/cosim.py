"""``zfabric cosim``: the fabric's Verilog against the model in lock-step (cocotb)."""

from __future__ import annotations

import argparse
import json
import shutil
import sys

from zfabric.fields import short

from .common import (
    add_command,
    check_output_dir,
    check_output_file,
    checked_plan,
    claim_output_file,
    cosim_cache,
    fraction,
    phase,
    plural,
    status,
)
from .experiment import add_traffic_arguments, read_checked_trace, resolve

__all__ = ["register", "run"]


def register(commands) -> None:
    parser = add_command(
        commands, "cosim", "run the fabric's Verilog against the model in lock-step (cocotb)"
    )
    parser.add_argument("spec", help="fabric spec (YAML)")
    parser.add_argument(
        "--sim", choices=["icarus", "verilator"], default="icarus", help="Verilog simulator"
    )
    parser.add_argument(
        "--trace", metavar="FILE", help="replay 'cycle src dst length' lines instead of traffic"
    )
    parser.add_argument(
        "--vcd", metavar="FILE", help="dump the whole run as a VCD waveform into FILE"
    )
    parser.add_argument(
        "--build-dir",
        metavar="DIR",
        help="Verilog and simulator build cache (default: $ZFABRIC_COSIM_DIR, else cosim/ in"
        " zfabric's user cache folder; see `zfabric cache info`)",
    )
    parser.add_argument(
        "--eject-stall",
        metavar="P",
        type=stall_probability,
        default=0.0,
        help="hold every endpoint's output ready low with probability P in each cycle, the same"
        " pattern (from --seed) in the model and the RTL (default 0: always ready)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    add_traffic_arguments(parser, single_rate=True, windows=False, defaults={"cycles": 1000})
    parser.set_defaults(run=run)


def stall_probability(text: str) -> float:
    """A per-cycle stall probability in [0, 1): 1 would never take a flit."""
    try:
        value = fraction(text)
    except argparse.ArgumentTypeError:
        value = 1.0
    if value >= 1:
        raise argparse.ArgumentTypeError(f"must be a probability in [0, 1), got {short(text)}")
    return value


def run(args: argparse.Namespace) -> int:
    """Exit 1 on a mismatch (or a model deadlock), 3 when the simulation cannot run."""
    from zfabric.sim.tb.runner import (
        CosimDeadlock,
        CosimError,
        cosim,
        format_report,
        simulator_available,
        traffic_trace,
    )

    vcd = check_output_file(args.vcd, "--vcd") if args.vcd else None
    build_dir = check_output_dir(args.build_dir or cosim_cache(), "--build-dir")
    spec, plan, _analysis, ok = checked_plan(args, args.spec, rtl="cosim")
    if not ok:
        return 1
    experiment = resolve(args, spec, plan)
    if args.trace:
        trace = read_checked_trace(args.trace, plan)
        inputs = {"spec": spec.name, "trace": args.trace, "packets": len(trace)}
        heading = f"{spec.name}: trace {args.trace} ({plural(len(trace), 'packet')})"
    else:
        trace = traffic_trace(plan, experiment.config(), experiment.cycles, seed=experiment.seed)
        inputs = experiment.inputs(spec.name)
        heading = (
            f"{spec.name}: {experiment.pattern} {experiment.process} traffic at"
            f" {experiment.rate} flits/cycle/endpoint ({experiment.sources['rate']}) for"
            f" {experiment.cycles} cycles, packets of {experiment.lengths()}"
        )
    if not trace:
        where = f"--trace {args.trace}" if args.trace else f"--cycles {experiment.cycles}"
        print(f"zfabric: error: {where}: no packets to simulate", file=sys.stderr)
        return 2
    if not simulator_available(args.sim):  # the user's input is valid: the tool is missing
        print(
            f"zfabric: the co-simulation could not run: {args.sim} is not available",
            file=sys.stderr,
        )
        return 3
    status(args, f"cosim: {len(trace)} packets on {args.sim} (the first run builds the simulation)")
    try:
        with phase(args, f"cosim on {args.sim}"):
            report = cosim(
                plan,
                trace,
                sim=args.sim,
                vcd=vcd is not None,
                build_dir=build_dir,
                eject_stall=args.eject_stall,
                eject_seed=experiment.seed,
            )
    except CosimDeadlock as error:
        print(
            f"zfabric: the model deadlocked, nothing to compare: {error.deadlock}", file=sys.stderr
        )
        return 1
    except CosimError as error:
        print(f"zfabric: the co-simulation could not run: {error}", file=sys.stderr)
        return 3
    if vcd is not None and report["vcd"]:
        claim_output_file(vcd, "--vcd")
        shutil.move(report["vcd"], vcd)
        report["vcd"] = str(vcd)
    report["inputs"] = {**inputs, "eject_stall": args.eject_stall}
    print(json.dumps(report, indent=1) if args.json else f"{heading}\n{format_report(report)}")
    return 0 if report["passed"] else 1
