"""Topology registry: how a family parses its keys, sizes itself and wires a plan."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import networkx as nx

from ..errors import SpecError
from ..fields import Reader
from ..plan import FabricPlan, PlanBuilder, RoutingSpec
from ..router_settings import AUTO, default_endpoint_vcs
from ..spec import FabricSpec

__all__ = ["Topology", "TOPOLOGIES", "topology", "build_fabric", "compile_plan", "finish_plan"]


@dataclass(frozen=True)
class Topology:
    name: str
    parse: Callable[[Reader], Any]  # reads topology.* keys into a frozen params dataclass
    size: Callable[[Any], tuple[int, int]]  # (switches, endpoints), checked before building
    build: Callable[[FabricSpec], tuple[FabricPlan, PlanBuilder]]
    routings: tuple[str, ...]  # the first is the default
    builds: str  # the topology whose builder runs (presets expand to another family)
    #: the routings of a parsed fabric, when they depend on its parameters (the first is the
    #: default); ``routings`` must hold them all
    routings_for: Callable[[Any], tuple[str, ...]] | None = None

    def routing_names(self, params: Any | None) -> tuple[str, ...]:
        """The routings a fabric with ``params`` may take (``None``: parameters not known)."""
        if params is None or self.routings_for is None:
            return self.routings
        return self.routings_for(params)


TOPOLOGIES: dict[str, Topology] = {}


def topology(
    name: str,
    *,
    parse: Callable[[Reader], Any],
    size: Callable[[Any], tuple[int, int]],
    routings: tuple[str, ...],
    builds: str | None = None,
    routings_for: Callable[[Any], tuple[str, ...]] | None = None,
) -> Callable[[Callable], Callable]:
    """Register ``build(spec) -> (plan, builder)`` (:func:`finish_plan`) as topology ``name``."""

    def register(build: Callable) -> Callable:
        TOPOLOGIES[name] = Topology(
            name, parse, size, build, routings, builds or name, routings_for
        )
        return build

    return register


def finish_plan(
    builder: PlanBuilder, spec: FabricSpec, topology_params: dict, routing_params: dict
) -> tuple[FabricPlan, PlanBuilder]:
    """Seal a wired fabric into a plan (returned with its builder, which holds the graph).

    ``routing_params`` is what the routing function needs, computed by the builder from the
    user's routing options (``spec.routing_params``), so the builder's values win.
    """
    plan = builder.build(
        name=spec.name,
        topology=spec.topology,
        topology_params=topology_params,
        routing=RoutingSpec(spec.routing, {**spec.routing_params, **routing_params}),
        flit_width=spec.flit_width,
        buffer_depth=spec.buffer_depth,
        packet_length=spec.packet_length,
        router=spec.router,
    )
    settled = {
        key: default_endpoint_vcs([link.vcs for link in plan.links])
        for key in ("injection_vcs", "ejection_vcs")
        if getattr(plan.router, key) == AUTO
    }
    if settled:
        plan = dataclasses.replace(plan, router=dataclasses.replace(plan.router, **settled))
    if spec.link_latency != 1:  # internal links (nDT, T-switch nodes) stay inside: one cycle
        links = tuple(
            link
            if link.latency != 1
            or plan.switches[link.src.switch].ports[link.src.port].role == "internal"
            else dataclasses.replace(link, latency=spec.link_latency)
            for link in plan.links
        )
        plan = dataclasses.replace(plan, links=links)
    _check_head_flits(plan)
    return plan, builder


def _check_head_flits(plan: FabricPlan) -> None:
    """Refuse a buffer too shallow for the widest head's flits: a switch routes a head only
    once all its head flits are in its input buffer (docs/microarchitecture.md)."""
    from ..routing import head_flits, routing_head_width  # the routings import topologies

    bits, depth = plan.router.head_bits, plan.buffer_depth
    if bits is None:  # every head in one flit: nothing to check
        return
    width = routing_head_width(plan)
    flits = head_flits(width, bits)
    if flits > depth:
        raise SpecError(
            "router.head_bits",
            f"{bits} bits per flit split the {width}-bit {plan.routing.name} head into {flits}"
            f" head flits, more than buffer_depth {depth} holds; use head_bits >="
            f" {-(-width // depth)} or buffer_depth >= {flits}",
        )


def build_fabric(spec: FabricSpec) -> tuple[FabricPlan, nx.MultiGraph]:
    """The plan and its wiring as a networkx graph (what the metrics read); with faults, the
    degraded plan (:func:`zfabric.faults.compile_degraded`) and its surviving wiring."""
    plan, builder = TOPOLOGIES[spec.topology].build(spec)
    if not spec.faults:
        return plan, builder.graph
    from ..faults import compile_degraded, plan_graph  # the faults' proof imports the routings

    plan = compile_degraded(plan, spec.faults)
    return plan, plan_graph(plan)


def compile_plan(spec: FabricSpec) -> FabricPlan:
    """The plan alone (no networkx graph is built); with faults, the degraded plan."""
    plan = TOPOLOGIES[spec.topology].build(spec)[0]
    if not spec.faults:
        return plan
    from ..faults import compile_degraded

    return compile_degraded(plan, spec.faults)
