"""``zfabric check``: compile a spec, prove it deadlock-free, print its metrics.

Also the summary and JSON report ``run`` reuses, and :func:`checked_plan`, the compile-and-
refuse-a-cyclic-plan step of every command that simulates or emits a fabric.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from typing import Any

from zfabric.deadlock import routing_summary
from zfabric.errors import SpecError
from zfabric.metrics import FabricMetrics, fabric_metrics
from zfabric.router_settings import RouterSettings
from zfabric.routing import ROUTINGS
from zfabric.spec import FabricSpec, load_spec
from zfabric.topologies import build_fabric
from zfabric.tswitch_paths import PATHS_ENDPOINT_LIMIT

from .common import add_command, check_output_file, plural, progress, write_atomically

__all__ = [
    "register",
    "run",
    "check_report",
    "summary",
    "checked_plan",
    "require_route_unit",
    "short",
    "router_text",
]


def register(commands) -> None:
    parser = add_command(
        commands, "check", "compile a spec, prove it deadlock-free and print its metrics"
    )
    parser.add_argument("spec", help="fabric spec (YAML)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--plan-out", metavar="PLAN.json", help="write the compiled plan as JSON")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    if args.plan_out:
        check_output_file(args.plan_out, "--plan-out")
    spec = load_spec(args.spec)
    plan, graph = build_fabric(spec)
    with progress(args, "routes", "destinations") as update:
        analysis = routing_summary(plan, progress=update)
    metrics = fabric_metrics(plan, analysis, graph)
    if args.plan_out:
        write_atomically(args.plan_out, plan.to_json(indent=1) + "\n", argument="--plan-out")
    if args.json:
        print(json.dumps(check_report(spec, metrics, analysis, plan.router), indent=1))
    else:
        print(summary(spec, metrics, analysis.cycle, plan.router, adaptive=analysis.adaptive))
    return 0 if analysis.deadlock_free else 1


def require_route_unit(spec: FabricSpec, command: str) -> None:
    """Refuse (exit 2) before any work what the RTL cannot build: an adaptive routing under
    first-free selection (a route unit's mask cannot hold its priority order,
    hdl/router/route)."""
    routing = ROUTINGS[spec.routing]
    if routing.adaptive and spec.router.selection == "first-free":
        raise SpecError(
            "router.selection",
            f"'first-free' with the adaptive routing {spec.routing!r}: zfabric {command}"
            " builds it with 'round-robin' or 'occupancy' only (check and simulate can)",
        )


def checked_plan(args: argparse.Namespace, spec_path: str, *, rtl: str | None = None):
    """Compile the spec and refuse a cyclic channel dependency graph unless
    ``--allow-deadlock``: returns ``(spec, plan, analysis, ok)``. ``rtl``: the command, which
    builds RTL (:func:`require_route_unit`)."""
    spec = load_spec(spec_path)
    if rtl:
        require_route_unit(spec, rtl)
    plan, _graph = build_fabric(spec)
    with progress(args, f"{spec.name} routes", "destinations") as update:
        analysis = routing_summary(plan, progress=update)
    if analysis.cycle and not getattr(args, "allow_deadlock", False):
        print(
            f"zfabric: {spec.name} is not deadlock-free (use --allow-deadlock to simulate it):\n  "
            + " ->\n  ".join([*analysis.cycle, analysis.cycle[0]]),
            file=sys.stderr,
        )
        return spec, plan, analysis, False
    return spec, plan, analysis, True


def short(value: Any) -> str:
    """A parameter as a person writes it: ``4x4``, ``d0+ d1-``."""
    if isinstance(value, tuple) and all(isinstance(v, int) for v in value):
        return "x".join(map(str, value))
    if isinstance(value, tuple) and all(_is_port_key(v) for v in value):
        return " ".join(f"d{dim}{'+' if sign > 0 else '-'}" for dim, sign in value)
    return str(value)


def _is_port_key(value: Any) -> bool:
    return isinstance(value, tuple) and len(value) == 2 and value[1] in (1, -1)


def _describe_topology(spec: FabricSpec) -> str:
    """The parameters ``key=value``, or in the family's own notation where it has one
    (``params.notation()``, e.g. HyperZ's ``H_{d,h}(s; Q)(Z_h(z; r; g))``)."""
    if hasattr(spec.params, "notation"):
        return f"{spec.kind} {spec.params.notation()}"
    shown = ", ".join(f"{key}={short(value)}" for key, value in spec.params.__dict__.items())
    return f"{spec.kind} ({shown})"


def router_text(router: RouterSettings) -> str:
    """The switch the figures are for: ``1 pipeline stage, separable allocator, ...``."""
    stages = f"{router.stages} pipeline stage{'s' if router.stages > 1 else ''}"
    text = f"{stages}, {router.allocator} allocator, {router.selection} output selection"
    injection = router.injection_vcs
    text += f", {injection} injection VC{'s' if injection != 1 else ''}"
    ejection = router.ejection_vcs
    text += f", {ejection} ejection VC{'s' if ejection != 1 else ''}"
    if router.head_bits is not None:
        text += f", {router.head_bits} head bits per flit"
    return text


def summary(
    spec: FabricSpec,
    metrics: FabricMetrics,
    cycle: list[str] | None,
    router: RouterSettings,
    *,
    adaptive: bool = False,
) -> str:
    """The text ``check`` prints; ``adaptive``: the proof was Duato's (escape channels)."""
    radix = ", ".join(f"{r} ({n} switches)" for r, n in metrics.radix.items())
    vcs = ", ".join(f"{role} {n}" for role, n in metrics.vcs.items())
    bisection = (
        plural(metrics.bisection, "link")
        if metrics.bisection is not None
        else "skipped (too large)"
    )
    lines = [
        f"{spec.name}: {_describe_topology(spec)}, routing {spec.routing}",
        f"  router: {router_text(router)}",
        f"  endpoints {metrics.endpoints}, switches {metrics.switches}, links {metrics.links}"
        f" (+{metrics.endpoint_links} endpoint links)",
        f"  radix: {radix}",
        f"  VCs per link: {vcs}",
        f"  routes: {_routes_text(metrics)}",
        f"  bisection: {bisection}",
    ]
    transit = metrics.extra.get("internal_transit")
    if transit:
        lines.append(
            f"  internal-link transit paths per node: {transit['crossing']} of {transit['transit']}"
        )
    if "tswitch_paths" in metrics.extra:
        lines.extend(tswitch_path_lines(metrics.extra["tswitch_paths"]))
    if cycle:
        what = "escape channels' extended channel dependency" if adaptive else "channel dependency"
        lines.append(f"  DEADLOCK: {what} cycle:")
        lines.extend(f"    {channel} ->" for channel in cycle)
        lines.append(f"    {cycle[0]}")
    elif adaptive:
        lines.append(
            "  deadlock-free: yes (Duato: escape sub-function connected, its extended channel"
            " dependency graph acyclic)"
        )
    else:
        lines.append("  deadlock-free: yes (channel dependency graph is acyclic)")
    return "\n".join(lines)


def tswitch_path_lines(paths: dict[str, Any] | None) -> list[str]:
    """Per stage, what every T-switch carries (a range where the stage's switches differ);
    ``None``: not counted (:data:`~zfabric.tswitch_paths.PATHS_ENDPOINT_LIMIT`)."""
    if paths is None:
        return [f"  T-switch paths: skipped (over {PATHS_ENDPOINT_LIMIT} endpoints)"]

    def per_switch(counts: dict[str, int]) -> str:
        low, high = counts["min"], counts["max"]
        return str(low) if low == high else f"{low}..{high}"

    lines = [
        f"  T-switch paths, per switch ({paths['pairs']} paths: every ordered pair once;"
        " C_f forward, T turnaround, C_b backward):"
    ]
    for stage in paths["stages"]:
        crossings = ", ".join(
            f"{kind} {per_switch(stage[f'crossings_{kind}'])}"
            for kind in ("forward", "turnaround", "backward")
        )
        lines.append(
            f"    stage {stage['stage']} ({stage['switches']} T-switch"
            f"{'' if stage['switches'] == 1 else 'es'}):"
            f" C_f {per_switch(stage['C_f'])}, T {per_switch(stage['T'])},"
            f" C_b {per_switch(stage['C_b'])}; internal-link crossings"
            f" {per_switch(stage['crossings'])} ({crossings})"
        )
    return lines


def _routes_text(metrics: FabricMetrics) -> str:
    """Diameter and average hop count; when a routing's choices differ in length, both for the
    pairs' shortest routes and for their longest (what any choice may take), each labelled."""
    if not metrics.choices_differ:
        return (
            f"diameter {metrics.diameter}, average {metrics.average_hops:.3f} switch-to-switch hops"
        )
    return (
        f"shortest choices diameter {metrics.shortest_diameter}, average"
        f" {metrics.average_hops:.3f}; longest choices diameter {metrics.diameter}, average"
        f" {metrics.longest_average_hops:.3f} switch-to-switch hops"
    )


def check_report(
    spec: FabricSpec, metrics: FabricMetrics, analysis, router: RouterSettings
) -> dict[str, Any]:
    """The ``check --json`` object."""
    return {
        "name": spec.name,
        "topology": spec.kind,
        "routing": spec.routing,
        "router": dataclasses.asdict(router),
        "endpoints": metrics.endpoints,
        "switches": metrics.switches,
        "links": metrics.links,
        "endpoint_links": metrics.endpoint_links,
        "max_radix": metrics.max_radix,
        "radix": metrics.radix,
        "vcs": metrics.vcs,
        "diameter": metrics.diameter,
        "average_hops": metrics.average_hops,
        "routes": metrics.routes(),
        "bisection": metrics.bisection,
        "deadlock_free": analysis.deadlock_free,
        "proof": "duato" if analysis.adaptive else "cdg",
        "cycle": analysis.cycle,
        **metrics.extra,
    }
