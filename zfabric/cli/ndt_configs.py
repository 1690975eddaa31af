"""``zfabric ndt-configs``: every port configuration of an nDT spec's k, optionally proven."""

from __future__ import annotations

import argparse
import dataclasses
import gc
import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from zfabric.deadlock import analyse_routing
from zfabric.errors import SpecError
from zfabric.report import param_text
from zfabric.routing import ROUTINGS
from zfabric.spec import load_spec
from zfabric.topologies import compile_plan

from .common import add_command, progress

__all__ = ["register", "run"]


def register(commands) -> None:
    parser = add_command(
        commands,
        "ndt-configs",
        "list every nDT port configuration with its internal-link transit (and proof)",
    )
    parser.add_argument("spec", help="an ndt spec (YAML); its k is used, its ports marked")
    parser.add_argument(
        "--proof", action="store_true", help="also prove each deadlock-free and report hops"
    )
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.set_defaults(run=run)


@contextmanager
def collector_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector: a plan is tens of thousands of objects without
    cycles (freed by reference counting), which the collector would otherwise rescan many times
    over while they are being made."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def run(args: argparse.Namespace) -> int:
    from zfabric.topologies.ndt import internal_transit_counts, ndt_configurations, port_name

    spec = load_spec(args.spec)
    if spec.kind != "ndt":
        raise SpecError("topology.kind", f"ndt-configs needs an ndt spec, got {spec.kind!r}")
    if ROUTINGS[spec.routing].adaptive:  # transit paths are counted along one route per pair
        raise SpecError(
            "routing", f"ndt-configs needs a deterministic routing, got {spec.routing!r}"
        )
    rows = []
    configurations = ndt_configurations(len(spec.params.k))
    with progress(args, "configurations") as update:
        for index, card0 in enumerate(configurations):
            params = dataclasses.replace(spec.params, card0=card0)
            routing = spec.routing_params
            if card0 != spec.params.card0:  # its internal link has classes of its own:
                # the spec's internal_vcs name this configuration's, the others get the defaults
                routing = {k: v for k, v in routing.items() if k != "internal_vcs"}
            variant = dataclasses.replace(spec, params=params, routing_params=routing)
            with collector_paused():
                plan = compile_plan(variant)
                transit = internal_transit_counts(plan)
            row: dict[str, Any] = {
                "card0": [port_name(p) for p in card0],
                "this_spec": card0 == spec.params.card0,
                **transit,
            }
            if args.proof:
                analysis = analyse_routing(plan)
                row.update(
                    deadlock_free=analysis.deadlock_free,
                    diameter=analysis.diameter,
                    average_hops=analysis.average_hops,
                )
            rows.append(row)
            if update:
                update(index + 1, len(configurations))
    rows.sort(key=lambda r: (r["crossing"], r["card0"]))
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    print(
        f"{spec.name}: {len(rows)} port configurations of k={param_text(spec.params.k)},"
        f" sorted by internal-link transit paths per node ({spec.routing})"
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
