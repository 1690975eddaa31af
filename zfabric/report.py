"""What ``check`` reports of a compiled fabric: the proof, the metrics, the text it prints and
the JSON object it writes. :func:`check_fabric` is the work of ``zfabric check`` and of the
first step of ``zfabric run``; a script or a notebook calling it gets the same figures and text.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .deadlock import RoutingSummary, routing_summary
from .metrics import FabricMetrics, fabric_metrics
from .plan import FabricPlan
from .router_settings import RouterSettings
from .spec import FabricSpec, load_spec
from .topologies import build_fabric
from .tswitch_paths import PATHS_ENDPOINT_LIMIT

__all__ = [
    "FabricCheck",
    "check_fabric",
    "summary",
    "check_report",
    "router_text",
    "param_text",
    "plural",
]


@dataclass(frozen=True)
class FabricCheck:
    """A spec compiled and proven: its plan, the routing's analysis (the deadlock proof and
    the hop counts) and the fabric's metrics."""

    spec: FabricSpec
    plan: FabricPlan
    analysis: RoutingSummary
    metrics: FabricMetrics

    @property
    def deadlock_free(self) -> bool:
        return self.analysis.deadlock_free

    def text(self) -> str:
        """What ``zfabric check`` prints."""
        text = summary(
            self.spec,
            self.metrics,
            self.analysis.cycle,
            self.plan.router,
            adaptive=self.analysis.adaptive,
            routing=self.plan.routing.name,
        )
        if not self.spec.faults:
            return text
        lines = text.split("\n")
        return "\n".join([lines[0], *fault_lines(self.spec, self.plan), *lines[1:]])

    def report(self) -> dict[str, Any]:
        """What ``zfabric check --json`` prints."""
        report = check_report(self.spec, self.metrics, self.analysis, self.plan.router)
        report["routing"] = self.plan.routing.name
        if self.spec.faults:
            report["faults"] = fault_report(self.spec, self.plan)
        return report


def fault_report(spec: FabricSpec, plan: FabricPlan) -> dict[str, Any]:
    """What ``check --json`` says of a degraded fabric: the faults as given, the routing
    the spec names, and, when tables replace it, why."""
    faults = spec.faults
    return {
        "links": [
            {"between": list(f.between)}
            if f.between
            else {"switch": f.switch, "port": f.port, "side": f.side}
            for f in faults.links
        ],
        "switches": [f.name for f in faults.switches],
        "chips": [f.name for f in faults.chips],
        "attachments": [{"endpoint": f.endpoint, "switch": f.switch} for f in faults.attachments],
        "left": _survivors(plan),
        "own_routing": spec.routing,
        "own_routing_survives": plan.routing.name == spec.routing,
        "because": plan.routing.params.get("because"),
    }


def fault_lines(spec: FabricSpec, plan: FabricPlan) -> list[str]:
    """The lines ``check`` adds for a degraded fabric: what is dead and which routing it uses."""
    faults = spec.faults
    dead = [
        f"link {f.between[0]}-{f.between[1]}"
        if f.between
        else f"link {f.switch}.p{f.port}" + ("" if f.side == "both" else f" ({f.side}put)")
        for f in faults.links
    ]
    dead += [f"switch {f.name}" for f in faults.switches]
    dead += [f"chip {f.name}" for f in faults.chips]
    dead += [f"attachment {f.endpoint}@{f.switch}" for f in faults.attachments]
    left = ", ".join(
        f"{n['alive']} of {n['built']} {'RN1 chips' if what == 'chips' else what}"
        for what, n in _survivors(plan).items()
    )
    lines = [f"  faults: {', '.join(dead)}", f"  left: {left}"]
    if plan.routing.name == spec.routing:
        lines.append(
            f"  routing on the degraded fabric: {spec.routing}, its own, with the candidates"
            " that lead to a dead end masked"
        )
    else:
        root = plan.switches[plan.routing.params["root"]].name
        lines.append(
            f"  routing on the degraded fabric: {plan.routing.name} (up*/down* tables from root"
            f" {root}) in place of {spec.routing}, which does not survive:"
            f" {plan.routing.params['because']}"
        )
    return lines


def _survivors(plan: FabricPlan) -> dict[str, dict[str, int]]:
    """The switches (and Transit's RN1 chips: a chip counts while one of its halves does) that
    still have a channel, of those built: a dead switch has none, nor has a live one whose
    every link died."""
    from .faults import chips

    alive = {link.src.switch for link in plan.links} | {link.dst.switch for link in plan.links}
    left = {"switches": {"alive": len(alive), "built": len(plan.switches)}}
    built = chips(plan)
    if built:
        living = sum(any(s in alive for s in members) for members in built.values())
        left["chips"] = {"alive": living, "built": len(built)}
    return left


def check_fabric(
    spec: FabricSpec | str | Path | dict[str, Any],
    *,
    progress: Callable[[int, int], None] | None = None,
) -> FabricCheck:
    """Compile ``spec`` (a :class:`~zfabric.spec.FabricSpec`, a YAML path or a dict), prove it
    and measure it. A cyclic fabric is returned, not raised: ``deadlock_free`` says which.
    ``progress(done, total)`` is called as the destinations' routes are analysed."""
    if not isinstance(spec, FabricSpec):
        spec = load_spec(spec)
    plan, graph = build_fabric(spec)
    analysis = routing_summary(plan, progress=progress)
    return FabricCheck(spec, plan, analysis, fabric_metrics(plan, analysis, graph))


def plural(count: int, noun: str) -> str:
    """``1 packet``, ``2 packets``: a count and its noun, for status and report lines."""
    return f"{count} {noun}{'' if count == 1 else 's'}"


def param_text(value: Any) -> str:
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
    shown = ", ".join(f"{key}={param_text(value)}" for key, value in spec.params.__dict__.items())
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
    if router.switching != "wormhole":
        text += f", {router.switching.replace('_', '-')} switching"
        text += f" of packets up to {router.longest_packet} flits"
    if router.buffers != RouterSettings.buffers:
        text += f", input buffers in {router.buffers}"
    if router.bypasses:
        text += ", straight bypass"
    return text


def summary(
    spec: FabricSpec,
    metrics: FabricMetrics,
    cycle: list[str] | None,
    router: RouterSettings,
    *,
    adaptive: bool = False,
    routing: str | None = None,
) -> str:
    """The text ``check`` prints; ``adaptive``: the proof was Duato's (escape channels);
    ``routing``: the plan's routing, when it is not the spec's (a degraded fabric's tables)."""
    radix = ", ".join(f"{r} ({n} switches)" for r, n in metrics.radix.items())
    vcs = ", ".join(f"{role} {n}" for role, n in metrics.vcs.items())
    bisection = (
        plural(metrics.bisection, "link")
        if metrics.bisection is not None
        else "skipped (too large)"
    )
    lines = [
        f"{spec.name}: {_describe_topology(spec)}, routing {routing or spec.routing}",
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
    if "transit" in metrics.extra:
        lines.append(transit_line(metrics.extra["transit"]))
        lines.append(transit_classes_line(metrics.extra["transit_classes"]))
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
    elif (spec.routing_params or {}).get("flow_control") == "bubble":
        lines.append(
            "  deadlock-free: yes (bubble flow control: every ring keeps a packet-sized bubble,"
            " an entering packet needs room for two; the channel dependency graph without"
            " in-ring dependencies is acyclic)"
        )
    else:
        lines.append("  deadlock-free: yes (channel dependency graph is acyclic)")
    return "\n".join(lines)


def transit_line(summary: dict[str, Any]) -> str:
    """RN1 chips counted (and by the seed's formula), unit trees by kind, leaf clusters."""
    blocks = [
        f"{n} {kind}" for kind, n in {**summary["unit_trees"], **summary.get("leaves", {})}.items()
    ]
    if "stages" in summary:
        blocks.append(f"{summary['stages']} stages")
    return (
        f"  RN1 chips: {summary['chips']} (formula {summary['chips_by_formula']}):"
        f" {', '.join(blocks)}"
    )


def transit_classes_line(classes: dict[int, dict[str, Any]] | None) -> str:
    """Per crossover level k, the chips and swallows of the pairs' routes (``None``: not
    counted, :data:`~zfabric.routing.transit.CLASSES_ENDPOINT_LIMIT`)."""
    if classes is None:
        from .routing.transit import CLASSES_ENDPOINT_LIMIT

        return f"  per crossover level: skipped (over {CLASSES_ENDPOINT_LIMIT} endpoints)"

    def span(values: list[int]) -> str:
        return str(values[0]) if len(values) == 1 else f"{values[0]}..{values[-1]}"

    shown = "; ".join(
        f"k={k}: {span(c['stages'])} stages, {span(c['swallows'])} swallows ({c['pairs']} pairs)"
        for k, c in classes.items()
    )
    return f"  per crossover level: {shown}"


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
    spec: FabricSpec, metrics: FabricMetrics, analysis: RoutingSummary, router: RouterSettings
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
