"""Closed-form predictions from a plan: zero-load latency and the channel-load throughput bound.

Both follow the plan's own routing function, like the model. Zero-load latency comes from
docs/microarchitecture.md: a packet of L flits crossing H switch-to-switch links is delivered
2H + L + 2 cycles after it is created. The channel-load bound spreads each source's uniform
traffic over its routes (equal shares across adaptive candidates and injection choices) and
finds the most loaded channel; no fabric accepts more than 1 / (that load) flits per cycle
per endpoint, nor more than 1 (an endpoint link carries one flit per cycle).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from zfabric.plan import FabricPlan, PlanView
from zfabric.routing import make_routing

__all__ = ["zero_load_latency", "ChannelLoad", "uniform_channel_load"]


def zero_load_latency(hops: int, packet_length: int) -> int:
    """Cycles from creation to tail delivery for an uncontended packet (microarchitecture.md)."""
    return 2 * hops + packet_length + 2


@dataclass(frozen=True)
class ChannelLoad:
    max_load: float  # flits per cycle on the busiest link per flit/cycle injected per endpoint
    busiest: str  # that link's name
    bound: float  # saturation bound in flits/cycle/endpoint: min(1, 1 / max_load)


def uniform_channel_load(plan: FabricPlan) -> ChannelLoad:
    """Channel-load bound for uniform traffic under the plan's routing."""
    view = PlanView(plan)
    rf = make_routing(view)
    n = len(plan.endpoints)
    load: dict[int, float] = defaultdict(float)
    share = 1.0 / (n - 1)
    for dst in range(n):
        flow: dict[tuple, float] = defaultdict(float)
        roots = []
        for src in range(n):
            if src == dst:
                continue
            injections = rf.injections(src, dst)
            for injection in injections:
                state = (injection.switch, injection.port, 0, injection.head)
                roots.append(state)
                flow[state] += share / len(injections)
        children = _route_graph(rf, view, roots)
        # push each state's flow along its candidates in equal shares, parents first
        for state in _topological(roots, children):
            amount = flow.pop(state, 0.0)
            nexts = children[state]
            part = amount / len(nexts)
            for link_id, child in nexts:
                if link_id >= 0:
                    load[link_id] += part
                    flow[child] += part
    link_id, max_load = max(load.items(), key=lambda item: item[1])
    link = plan.links[link_id]
    switch = plan.switches[link.src.switch]
    busiest = f"{switch.name}.p{link.src.port}({switch.ports[link.src.port].label})"
    return ChannelLoad(max_load, busiest, min(1.0, 1.0 / max_load))


def _route_graph(rf, view: PlanView, roots: list[tuple]) -> dict[tuple, list[tuple[int, tuple]]]:
    """Every routing state reachable from ``roots`` -> [(link id or -1 for delivery, next)]."""
    children: dict[tuple, list[tuple[int, tuple]]] = {}
    stack = list(roots)
    while stack:
        state = stack.pop()
        if state in children:
            continue
        switch, port, vc, head = state
        decision = rf.route(switch, port, vc, head)
        nexts = []
        for hop in decision.hops:
            link = view.out_link[switch][hop.port]
            if link is None:
                nexts.append((-1, ()))
                continue
            for w in hop.vcs:
                nexts.append((link.id, (link.dst.switch, link.dst.port, w, decision.head)))
        children[state] = nexts
        stack.extend(child for link_id, child in nexts if link_id >= 0)
    return children


def _topological(order: list[tuple], children: dict[tuple, list]) -> list[tuple]:
    """States with every parent before its children (depth-first post-order, reversed)."""
    seen: set[tuple] = set()
    result: list[tuple] = []
    for root in order:
        if root in seen:
            continue
        stack = [(root, iter(children[root]))]
        seen.add(root)
        while stack:
            state, pending = stack[-1]
            for link_id, child in pending:
                if link_id >= 0 and child not in seen:
                    seen.add(child)
                    stack.append((child, iter(children[child])))
                    break
            else:
                stack.pop()
                result.append(state)
    result.reverse()
    return result
