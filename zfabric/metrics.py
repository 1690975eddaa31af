"""Fabric metrics: sizes, radix, VCs per link class, route lengths, bisection, nDT transit,
T-switch paths."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

import networkx as nx

from .deadlock import RoutingAnalysis, RoutingSummary
from .plan import FabricPlan
from .tswitch_paths import PATHS_ENDPOINT_LIMIT, tswitch_paths

__all__ = [
    "FabricMetrics",
    "fabric_metrics",
    "bisection_width",
    "physical_links",
    "BISECTION_NODE_LIMIT",
]

#: Bisection is a max-flow over the whole graph; past this many nodes it is skipped.
BISECTION_NODE_LIMIT = 3000


@dataclass(frozen=True)
class FabricMetrics:
    endpoints: int
    switches: int
    links: int  # physical switch-to-switch links: a bidirectional pair or a one-way channel
    endpoint_links: int  # endpoint attachments (multi-homed endpoints count each)
    radix: dict[int, int]  # ports per switch -> number of switches
    vcs: dict[str, int]  # link class (role of the sending port) -> VCs per channel
    diameter: int  # switch-to-switch links on the longest route any routing choice takes
    average_hops: float  # mean over ordered pairs of distinct endpoints of each one's shortest
    bisection: int | None  # links cut between the endpoint halves by id; None if skipped
    extra: dict[str, Any]  # topology-specific figures (nDT transit counts, T-switch paths)
    #: the other two figures of an adaptive routing, whose choices may differ in length: the
    #: longest of the pairs' shortest routes, and the mean of the pairs' longest routes
    shortest_diameter: int = 0
    longest_average_hops: float = 0.0

    @property
    def max_radix(self) -> int:
        return max(self.radix)

    @property
    def choices_differ(self) -> bool:
        """Whether some pair's routing choices differ in length (the figures of its shortest
        and of its longest routes then differ)."""
        return (self.shortest_diameter, self.longest_average_hops) != (
            self.diameter,
            self.average_hops,
        )

    def routes(self) -> dict[str, dict[str, float]]:
        """Diameter and mean hop count over the pairs' shortest and over their longest routes."""
        return {
            "shortest": {"diameter": self.shortest_diameter, "average": self.average_hops},
            "longest": {"diameter": self.diameter, "average": self.longest_average_hops},
        }


def bisection_width(plan: FabricPlan, graph: nx.MultiGraph) -> int | None:
    """Min number of links separating endpoints [0, N/2) from [N/2, N) (max-flow/min-cut)."""
    if graph.number_of_nodes() > BISECTION_NODE_LIMIT:
        return None
    flow = nx.DiGraph()
    for u, v, one_way in graph.edges(data="one_way"):
        for a, b in [one_way] if one_way else ((u, v), (v, u)):
            capacity = flow.get_edge_data(a, b, {"capacity": 0})["capacity"]
            flow.add_edge(a, b, capacity=capacity + 1)
    half = len(plan.endpoints) // 2
    for endpoint in plan.endpoints:
        if endpoint.id < half:
            flow.add_edge("source", ("ep", endpoint.id))  # no capacity: unbounded
        else:
            flow.add_edge(("ep", endpoint.id), "sink")
    return int(nx.maximum_flow_value(flow, "source", "sink"))


def physical_links(plan: FabricPlan) -> int:
    """Switch-to-switch links: a channel pair between the same two ports counts once, a
    one-way channel once (the directed view: ``len(plan.links)`` channels)."""
    ends = {(link.src, link.dst) for link in plan.links}
    pairs = sum((link.dst, link.src) in ends for link in plan.links) // 2
    return len(plan.links) - pairs


def fabric_metrics(
    plan: FabricPlan,
    analysis: RoutingAnalysis | RoutingSummary,
    graph: nx.MultiGraph | None = None,
) -> FabricMetrics:
    vcs: dict[str, int] = {}
    for link in plan.links:
        role = plan.switches[link.src.switch].ports[link.src.port].role
        vcs[role] = max(vcs.get(role, 0), link.vcs)
    extra: dict[str, Any] = {}
    if plan.topology == "ndt" and not analysis.adaptive:  # a route per pair: no choices
        # §1.4's figure: the routes from PE0 to PE0 of every node. Under tsdor these are its
        # traffic class 0 alone (dimensions ascending); class 1, PE1 to PE1 in descending
        # order, is not counted (docs/commands.md, ``zfabric check``)
        from .topologies.ndt import internal_transit_counts

        extra["internal_transit"] = internal_transit_counts(plan)
    if plan.topology == "transit":
        from .routing.transit import pair_classes
        from .topologies.transit import transit_summary

        extra["transit"] = transit_summary(plan)
        extra["transit_classes"] = pair_classes(plan)
    if "tswitch" in plan.topology_params:  # None: skipped, too large
        small = len(plan.endpoints) <= PATHS_ENDPOINT_LIMIT
        extra["tswitch_paths"] = tswitch_paths(plan).report() if small else None
    return FabricMetrics(
        endpoints=len(plan.endpoints),
        switches=len(plan.switches),
        links=physical_links(plan),
        endpoint_links=sum(len(e.attachments) for e in plan.endpoints),
        radix=dict(sorted(Counter(s.radix for s in plan.switches).items())),
        vcs=dict(sorted(vcs.items())),
        diameter=analysis.diameter,
        average_hops=analysis.average_hops,
        bisection=bisection_width(plan, graph) if graph is not None else None,
        extra=extra,
        shortest_diameter=max(analysis.min_hops, default=0),
        longest_average_hops=(
            sum(h * n for h, n in analysis.max_hops.items()) / analysis.pairs
            if analysis.pairs
            else 0.0
        ),
    )
