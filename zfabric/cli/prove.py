"""``zfabric prove``: the formal proofs of the switch's units, at each switch kind's
configuration (docs/design/verification.md)."""

from __future__ import annotations

import argparse
import json
import shutil
import sys

from zfabric.routing import require_route_unit
from zfabric.spec import load_spec
from zfabric.topologies.base import build_fabric

from .common import OutputFolder, add_command, integer, progress, status

__all__ = ["register", "run"]

#: the report written into the output folder beside the counterexamples
REPORT = "prove.json"


def register(commands) -> None:
    parser = add_command(
        commands,
        "prove",
        "prove the switch units' and endpoints' properties per kind (SymbiYosys + Yices)",
        description=(
            "For every distinct switch kind of the fabric (ports, VCs per port, buffer depth, "
            "turns, router settings) run the formal harnesses of its input units, output units "
            "and allocator at that configuration and check its route units against the routing "
            "function for every head, and run those of the endpoints' injection side and "
            "receive buffers, "
            "and print per property: proven "
            "(k-induction), bounded to N cycles from reset, or FAILED with the counterexample "
            "trace (a VCD in the output folder). Takes minutes."
        ),
    )
    parser.add_argument("spec", help="fabric spec (YAML)")
    parser.add_argument(
        "--depth",
        type=integer(2, 200),
        help="cycles from reset for the bounded properties (default: two credit round trips "
        "and a packet, 2 * (buffer_depth + 3) + packet_length)",
    )
    parser.add_argument(
        "--timeout",
        type=integer(10, 86400),
        default=300,
        help="seconds per solver run; a bounded check stopped by it reports the depth reached",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument(
        "-o",
        "--output",
        metavar="DIR",
        default="build/prove",
        help=f"folder for {REPORT} and the counterexample traces; files zfabric did not write"
        " there are never overwritten",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    out = OutputFolder(args.output, "--output", exclusive=True)
    out.check([REPORT])
    spec = load_spec(args.spec)
    require_route_unit(spec, "prove")
    plan, _graph = build_fabric(spec)
    from zfabric.hdl.formal.kinds import default_depth, proof_kinds, prove
    from zfabric.hdl.formal.sby import tools_missing

    missing = tools_missing()
    if missing:
        print(
            f"zfabric: {', '.join(missing)} not installed (pip install -e '.[formal]')",
            file=sys.stderr,
        )
        return 3
    depth = args.depth or default_depth(plan)
    kinds = proof_kinds(plan)
    status(args, f"{spec.name}: {len(kinds)} kinds, bounded checks to {depth} cycles")
    with out.staging() as staging:
        work = staging / "work"
        with progress(args, "proofs", "properties") as update:
            results = prove(kinds, work, depth=depth, timeout=args.timeout, each=update)
        traces = {}
        for k, (_kind, checked) in enumerate(results):
            for i, (prop, outcome) in enumerate(checked):
                if outcome.vcd is not None and outcome.vcd not in traces:
                    # the index keeps apart units that differ only in VCs or depth
                    unit = prop.unit.split(" (")[0]
                    name = f"kind{k}_{i}_{unit}_{prop.name}".replace(" ", "_") + ".vcd"
                    shutil.copyfile(outcome.vcd, staging / name)
                    traces[outcome.vcd] = out.path / name
        report = _report(spec.name, depth, args.timeout, results, traces)
        shutil.rmtree(work)
        (staging / REPORT).write_text(json.dumps(report, indent=1) + "\n")
        out.commit(staging, replaces=out.listed(REPORT, "kind*.vcd"))
    if args.json:
        print(json.dumps(report, indent=1))
    else:
        _print(report)
    return 0 if report["holds"] else 1


def _report(name, depth, timeout, results, traces) -> dict:
    """The whole result as one JSON-ready object."""
    kinds = []
    first: dict[tuple, int] = {}  # property key -> the kind whose list shows it first
    for k, (kind, checked) in enumerate(results):
        props = []
        for prop, outcome in checked:
            entry = {
                "unit": prop.unit,
                "property": prop.name,
                "statement": prop.statement,
                "result": "proven" if outcome.mode == "prove" else outcome.mode,
                "depth": outcome.depth,
                "seconds": round(outcome.seconds, 1),
                "text": outcome.text(),
            }
            if outcome.note:
                entry["note"] = outcome.note
            if first.setdefault(prop.key, k) != k:  # one proof, shown under each kind
                entry["same_as_kind"] = first[prop.key]
            if outcome.vcd is not None:
                entry["vcd"] = str(traces[outcome.vcd])
                entry["text"] = f"FAILED at step {outcome.depth}: counterexample {entry['vcd']}"
            props.append(entry)
        kinds.append(
            {"kind": k, "units": kind.label, "instances": list(kind.switches), "properties": props}
        )
    return {
        "spec": name,
        "depth": depth,
        "timeout": timeout,
        "solver": "yowasp-sby, smtbmc yices",
        "kinds": kinds,
        "holds": all(p["result"] in ("proven", "bmc") for k in kinds for p in k["properties"]),
    }


def _print(report: dict) -> None:
    print(
        f"{report['spec']}: {len(report['kinds'])} kinds (switches, endpoints); bounded checks"
        f" to {report['depth']} cycles from reset, {report['timeout']} s per solver run"
    )
    for kind in report["kinds"]:
        switches = kind["instances"]
        shown = ", ".join(switches[:4]) + (f", ... ({len(switches)} in all)" * (len(switches) > 4))
        print(f"  kind {kind['kind']}: {kind['units']}: {shown}")
        for p in kind["properties"]:
            when = f"as kind {p['same_as_kind']}" if "same_as_kind" in p else f"{p['seconds']} s"
            print(f"    {p['unit']:32} {p['property']:20} {p['text']} [{when}]")
    print("all properties hold" if report["holds"] else "some property FAILED or gave no verdict")
