"""nDT twin torus: an n-D torus whose every node is two cards joined by an internal link.

Each card is a switch of radix n+2: port 0 faces its PE (PE0 on Card0, PE1 on Card1), port 1 is
the internal link, ports 2.. are the card's n external ports sorted by (dim, + before -). Which
external ports sit on Card0 is the *port configuration* (ndt.md §1.2); CBest (§1.3) is the
default. Port ``d_i+`` of node ``o`` links to port ``d_i-`` of node ``o + e_i`` (mod ``k_i``), so a
packet moving + arrives on the neighbour's ``d_i-`` card (§1.1). Switch id = 2·node + card, and
each switch's PE has the switch's id.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

from ..errors import SpecError
from ..fields import Reader, describe, int_list
from ..plan import FabricPlan, PlanBuilder, PlanView, Port
from ..routing.base import make_routing
from ..routing.dort import default_internal_vcs, internal_link_vcs
from ..routing.tsdor import TSDOR_VCS
from ..spec import FabricSpec
from .base import finish_plan, topology
from .torus import coordinates

__all__ = [
    "NdtParams",
    "cbest",
    "ndt_configurations",
    "port_name",
    "internal_transit_counts",
    "transit_counts_into",
]

PortKey = tuple[int, int]  # (dim, sign)


@dataclass(frozen=True)
class NdtParams:
    k: tuple[int, ...]
    card0: tuple[PortKey, ...]  # the n external ports on Card0, sorted


def port_name(port: PortKey) -> str:
    dim, sign = port
    return f"d{dim}{'+' if sign > 0 else '-'}"


def _all_ports(n: int) -> list[PortKey]:
    return [(dim, sign) for dim in range(n) for sign in (1, -1)]


def cbest(n: int) -> tuple[PortKey, ...]:
    """CBest (ndt.md §1.3): dims 0..n/2-1 on Card0; for odd n also d_c- with c = (n-1)/2."""
    half = n // 2
    card0 = {(dim, sign) for dim in range(half) for sign in (1, -1)}
    if n % 2:
        card0.add((half, -1))
    return tuple(sorted(card0))


def ndt_configurations(n: int) -> list[tuple[PortKey, ...]]:
    """All ½·C(2n, n) port configurations, each as the Card0 set that holds d0+ (ndt.md §1.2)."""
    return [
        tuple(sorted(card0))
        for card0 in itertools.combinations(_all_ports(n), n)
        if (0, 1) in card0
    ]


_PORT = re.compile(r"^(?:d(\d+)|([xyz]))([+-])$", re.IGNORECASE)


def _port(value: Any, path: str, n: int) -> PortKey:
    match = _PORT.match(value) if isinstance(value, str) else None
    if match is None:
        raise SpecError(
            path, f"must be a port name like d0+ or d2- (or x+ .. z-), got {describe(value)}"
        )
    dim = int(match[1]) if match[1] is not None else "xyz".index(match[2].lower())
    if dim >= n:
        raise SpecError(path, f"port {value!r} names dimension {dim}, but k has {n} dimensions")
    return dim, 1 if match[3] == "+" else -1


def _card0(value: Any, path: str, n: int) -> tuple[PortKey, ...]:
    if isinstance(value, str):
        if value.lower() == "cbest":
            return cbest(n)
        raise SpecError(path, f"must be 'cbest' or a list of the {n} Card0 ports, got {value!r}")
    if not isinstance(value, list):
        raise SpecError(path, f"must be 'cbest' or a list of the {n} Card0 ports, got {value!r}")
    if len(value) != n:
        raise SpecError(
            path, f"must list exactly {n} Card0 ports (n of the 2n), got {len(value)}: {value!r}"
        )
    seen: dict[PortKey, int] = {}
    for i, item in enumerate(value):
        port = _port(item, f"{path}[{i}]", n)
        if port in seen:
            raise SpecError(
                f"{path}[{i}]", f"duplicate port {item!r} (already {path}[{seen[port]}])"
            )
        seen[port] = i
    return tuple(sorted(seen))


def parse(reader: Reader) -> NdtParams:
    k = reader.get("k", int_list(2, min_length=2))
    n = len(k)
    card0 = reader.get("ports", lambda value, path: _card0(value, path, n), None) or cbest(n)
    return NdtParams(k=k, card0=card0)


def size(params: NdtParams) -> tuple[int, int]:
    switches = 2 * math.prod(params.k)
    return switches, switches


@topology("ndt", parse=parse, size=size, routings=("dort", "dort_adaptive", "tsdor"))
def build(spec: FabricSpec):
    params: NdtParams = spec.params
    k, n = params.k, len(params.k)
    internal_vcs = dict(
        spec.routing_params.get("internal_vcs")
        or default_internal_vcs(params.card0, n, spec.routing_params.get("rings"))
    )
    external_vcs = spec.routing_params.get("external_vcs", 2)
    external_link, internal_link = external_vcs, internal_link_vcs(internal_vcs)
    if spec.routing == "tsdor":  # two traffic classes x {upper, lower} on every link
        external_link = internal_link = TSDOR_VCS
    # dort_adaptive's adaptive VCs follow DORT's (escape) VCs
    external_link += spec.routing_params.get("adaptive_external_vcs", 0)
    internal_link += spec.routing_params.get("adaptive_internal_vcs", 0)
    on_card0 = set(params.card0)
    layout = [
        sorted(
            (p for p in _all_ports(n) if (p in on_card0) == (card == 0)),
            key=lambda p: (p[0], -p[1]),
        )
        for card in (0, 1)
    ]
    where = {port: (card, 2 + i) for card in (0, 1) for i, port in enumerate(layout[card])}
    card_ports = [  # every card of a side has the same ports
        [Port("local"), Port("internal")]
        + [Port("external", dim=dim, sign=sign) for dim, sign in layout[card]]
        for card in (0, 1)
    ]
    builder = PlanBuilder()
    nodes = coordinates(k)
    for coords in nodes:
        tag = "_".join(map(str, coords))
        for card in (0, 1):
            switch = builder.add_switch(
                f"n{tag}c{card}", {"coords": list(coords), "card": card}, card_ports[card]
            )
            builder.attach(switch, switch, 0, name=f"n{tag}pe{card}")
    stride = [math.prod(k[:dim]) for dim in range(n)]  # linear_index's weight of each dim
    for node, coords in enumerate(nodes):
        builder.connect(2 * node, 1, 2 * node + 1, 1, internal_link)
        for dim in range(n):
            step = 1 - k[dim] if coords[dim] == k[dim] - 1 else 1  # + neighbour, wrapping
            other = node + step * stride[dim]
            (a_card, a_port), (b_card, b_port) = where[(dim, 1)], where[(dim, -1)]
            builder.connect(2 * node + a_card, a_port, 2 * other + b_card, b_port, external_link)
    card0 = [list(port) for port in params.card0]
    return finish_plan(
        builder,
        spec,
        {"k": list(k), "card0": card0, "ports": [port_name(p) for p in layout[0]]},
        {
            "k": list(k),
            "card0": card0,
            "internal_vcs": internal_vcs,
            "external_vcs": external_vcs,
            "tie": spec.routing_params.get("tie", "card0"),
        },
    )


# ---- transit paths over the internal link (ndt.md §1.4) ----------------------------------------


def internal_transit_counts(plan: FabricPlan) -> dict[str, int]:
    """A node's transit paths and how many of them cross its internal link (§1.4).

    A node is in transit on a route it enters on an external port and leaves on an external
    port; the route crosses it if it takes the internal link in between. Every node carries the
    same counts, and they are the totals over the routes into one node: the torus is
    vertex-transitive and the deterministic nDT routings (DORT, TSDOR) pick each hop from
    coordinate differences and the port layout alone (the shorter way round each ring, the card
    a port sits on), so translating a route's source and destination translates the route.
    :func:`transit_counts_into` of any node gives the same counts (the tests check every node).
    """
    return transit_counts_into(plan, 0)


def transit_counts_into(plan: FabricPlan, node: int) -> dict[str, int]:
    """``{"transit": ..., "crossing": ...}`` summed over the routes from PE0 of every other node
    to PE0 of ``node``, walking the plan's routing."""
    view = PlanView(plan)
    rf = make_routing(view)
    if rf.adaptive:
        raise ValueError(f"transit paths need a deterministic routing, got {rf.name!r}")
    node_of = [tuple(s.position["coords"]) for s in plan.switches]
    pe0 = [
        e.id for e in plan.endpoints if plan.switches[e.attachments[0].switch].position["card"] == 0
    ]

    def cross_node(state: tuple) -> tuple[bool, tuple | None]:
        """From arrival at a node: (internal link taken, arrival state at the next node)."""
        switch, in_port, in_vc, head = state
        crossed = False
        for _ in range(len(plan.switches) + 1):
            hop = rf.route(switch, in_port, in_vc, head)
            out = hop.hops[0]
            link = view.out_link[switch][out.port]
            if link is None:
                return crossed, None  # delivered: this is the destination node
            state = (link.dst.switch, link.dst.port, out.vcs[0], hop.head)
            if node_of[link.dst.switch] != node_of[switch]:
                return crossed, state
            crossed = True
            switch, in_port, in_vc, head = state
        raise RuntimeError("route loops inside a node")

    memo: dict[Hashable, tuple[int, int]] = {}  # state key -> (transit nodes, crossings) onward

    def onward(state: tuple) -> tuple[int, int]:
        """(transit nodes, crossings) from the node ``state`` arrives at, on to the end."""
        path: list[tuple[Hashable, bool]] = []  # the nodes walked, not yet in ``memo``
        key = rf.state_key(*state)
        while key not in memo:
            crossed, state = cross_node(state)
            if state is None:  # the destination node: not in transit
                memo[key] = (0, 0)
                break
            path.append((key, crossed))
            if len(path) > len(pe0):
                raise RuntimeError("route loops between nodes")
            key = rf.state_key(*state)
        transit, crossing = memo[key]
        for key, crossed in reversed(path):
            transit, crossing = transit + 1, crossing + crossed
            memo[key] = (transit, crossing)
        return transit, crossing

    transit = crossing = 0
    dst = pe0[node]
    for src in pe0:
        if src != dst:
            injection = rf.injections(src, dst)[0]
            _, nxt = cross_node((injection.switch, injection.port, 0, injection.head))
            t, c = onward(nxt)
            transit += t
            crossing += c
    return {"transit": transit, "crossing": crossing}
