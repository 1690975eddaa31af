"""Closed-form predictions from a plan: zero-load latency and the channel-load throughput bound.

Both follow the plan's own routing function, like the model, and both take a traffic pattern's
own flows (:func:`zfabric.sim.traffic.pattern_flows`: the probability that a packet from src
goes to dst), so a permutation is judged by its own routes, not by uniform's.

Zero-load latency comes from docs/microarchitecture.md: a packet of L flits crossing H
switch-to-switch links is delivered 2H + L + 2 cycles after it is created at ``stages: 1``
(each setting's formula: :meth:`RouterSettings.zero_load_latency`), plus H_f - 1 cycles at
every switch and on the ejection link when ``router.head_bits`` splits its head into H_f head
flits. An uncontended packet takes its routing function's first choice everywhere (first
injection, first candidate, first VC: the model's tie rule), so H is that path's length,
averaged over the pattern's flows.

The channel-load bound spreads each flow over its routes (equal shares across adaptive
candidates, allowed VCs and injection choices) and finds the most loaded switch-to-switch link.
At injection rate r (flits/cycle per endpoint) that link carries r x its load, and one link
carries at most one flit per cycle, so no rate above 1 / (max load) is sustainable. An
endpoint's ejection links take at most one flit per cycle each, and a source injects at most one,
so the bound is min(1, 1 / link load, ejection links / ejection load). It is a true bound for a
routing with one candidate per decision; with several, the equal split is one way to route, and
an adaptive routing may balance better (HyperZ's ALIOD on 1024 processors accepts 0.302 under
uniform where the split gives 0.259: docs/research/hyperz.md). Where some flow is
spread over several links (``ChannelLoad.spread``: adaptive candidates, or injection at several
switches) only the endpoints' limits are proven, min(1, ejection links / ejection load):
``ChannelLoad.proven``, what the model's saturation verdict reads.

The walk has one node per routing state key (:meth:`RoutingFunction.state_key`, what ``route``
reads), not per (switch, input port, VC, head) state, and takes the flows destination by
destination (:func:`~zfabric.sim.traffic.flows_by_destination`).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections import defaultdict
from collections.abc import Hashable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from zfabric.bypass import straight_outputs
from zfabric.deadlock import symmetry_group_of
from zfabric.destinations import map_groups, routing_of, setup_workers
from zfabric.plan import FabricPlan, PlanView
from zfabric.router_settings import RouterSettings
from zfabric.routing import head_flits
from zfabric.setup_cache import cached
from zfabric.symmetry import SymmetryGroup

from .traffic import (
    TrafficConfig,
    by_destination,
    flows_by_destination,
    uniform_sources,
)

__all__ = [
    "zero_load_latency",
    "ChannelLoad",
    "channel_load",
    "uniform_channel_load",
    "flow_zero_load_latency",
    "lone_packet_latency",
    "PatternLimits",
    "pattern_limits",
    "cached_pattern_limits",
]

Flows = Mapping[tuple[int, int], float]


def zero_load_latency(
    hops: float, packet_length: float, router: RouterSettings | None = None
) -> float:
    """Cycles from creation to tail delivery for an uncontended packet under ``router``'s
    pipeline (default: today's one-stage switch, 2H + L + 2); the formula of each setting is
    :meth:`RouterSettings.zero_load_latency` (docs/microarchitecture.md)."""
    return (router or RouterSettings()).zero_load_latency(hops, packet_length)


@dataclass(frozen=True)
class ChannelLoad:
    max_load: float  # flits per cycle on the busiest link per flit/cycle injected per endpoint
    busiest: str  # that link's name
    bound: float  # sustainable injection rate in flits/cycle/endpoint (see the module doc)
    ejection_load: float = 0.0  # the busiest endpoint's arrivals per ejection link, same units
    #: some flow is spread over several links (a decision offering several links, or injection
    #: at several switch ports): ``bound`` is then the equal split's figure, not a bound (see the
    #: module doc). Several VCs of one link count as one path: a routing whose next decision
    #: differs by the VC taken onto one link would need its VCs counted too (none does today)
    spread: bool = False

    @property
    def proven(self) -> float:
        """The highest injection rate not proven unsustainable: ``bound`` where every flow has
        one path, else the endpoints' limits alone (ejection and injection)."""
        if not self.spread:
            return self.bound
        return min(1.0, 1.0 / self.ejection_load if self.ejection_load else 1.0)

    @property
    def limited_by(self) -> str:
        """What sets the bound: the busiest link, the endpoints' ejection, or injection."""
        if self.bound == 1.0:
            return "injection (one flit per cycle per endpoint)"
        if self.max_load >= self.ejection_load:
            return f"channel {self.busiest} (load {self.max_load:.3f})"
        return f"ejection at the busiest endpoint (load {self.ejection_load:.3f})"


class _Walk(NamedTuple):
    load: ChannelLoad
    hops: float  # share-weighted mean first-choice hop count
    heads: float  # share-weighted mean cycles the heads' extra flits and long links add
    longest: float  # the largest zero-load latency of one flow along its first choices


def _walk(
    plan: FabricPlan,
    flows: Iterable[tuple[int, Mapping[int, float]]],
    packet_length: float,
    *,
    uniform: bool = False,
) -> _Walk:
    """The channel load of ``flows`` ((dst, {src: share}) by destination), their share-weighted
    mean first-choice hop count and the mean cycles their heads' extra flits add
    (``router.head_bits``), and the longest flow's zero-load latency, from one route graph per
    destination (the first-choice path is each node's first child), in processes for a big
    plan (:mod:`zfabric.destinations`). With heads longer than a flit a packet of
    ``packet_length`` payload flits is L + H_f - 1 flits on a link where its head takes H_f
    flits: the loads count them. ``uniform``: ``flows`` are uniform traffic's, invariant under
    every permutation of the endpoints, so where the routing declares port symmetries
    (:meth:`~zfabric.routing.base.RoutingFunction.port_symmetries`: the loads are the links', not
    the channels') one destination per orbit is walked and mapped onto the rest."""
    load: dict[int, float] = defaultdict(float)
    spread = False  # some flow on several links
    total = weighted_hops = weighted_heads = 0.0
    longest = 0.0
    arrivals: dict[int, float] = {}  # per destination, with head flits
    workers = setup_workers(len(plan.endpoints))
    group = symmetry_group_of(plan, ports=True) if uniform else None
    if group is None:
        work = functools.partial(_walk_flows, packet_length=packet_length)
        parts = (sums for _, sums in map_groups(work, plan, flows, workers=workers))
    else:
        parts = _orbit_sums(plan, group, packet_length, workers)
    for sums in parts:
        for link_id, value in sums.load.items():
            load[link_id] += value
        spread = spread or sums.spread
        total += sums.total
        weighted_hops += sums.weighted_hops
        weighted_heads += sums.weighted_heads
        longest = max(longest, sums.longest)
        arrivals.update(sums.arrivals)
    if not arrivals:
        raise ValueError("the traffic pattern has no flows")
    ejection = max(arrivals[dst] / len(plan.endpoints[dst].ejections) for dst in arrivals)
    max_load = max(load.values(), default=0.0)
    busiest = "none"
    if max_load:
        # ties (within rounding: the sums' order follows the walk) named by the lowest link id
        link_id = min(i for i, value in load.items() if value >= max_load * (1 - 1e-9))
        link = plan.links[link_id]
        switch = plan.switches[link.src.switch]
        busiest = f"{switch.name}.p{link.src.port}({switch.ports[link.src.port].label})"
    bound = min(1.0, 1.0 / max_load if max_load else 1.0, 1.0 / ejection)
    load = ChannelLoad(max_load, busiest, bound, ejection, spread)
    return _Walk(load, weighted_hops / total, weighted_heads / total, longest)


def _orbit_sums(
    plan: FabricPlan, group: SymmetryGroup, packet_length: float, workers: int
) -> Iterator[_Sums]:
    """Uniform traffic's sums, one per orbit: its representative walked, its figures alike for
    every member; then the loads of all (:meth:`SymmetryGroup.link_sums`); then the spot checks'
    walked in full and compared with their mapped loads."""
    orbit_of = {orbit[0]: orbit for orbit in group.orbits}
    checks = group.spot_check_members()
    work = functools.partial(_walk_uniform, packet_length=packet_length)
    walked: dict[int, tuple[_Sums, np.ndarray]] = {}
    total = np.zeros(len(plan.links))
    for _, part in map_groups(work, plan, [*orbit_of, *checks], workers=workers):
        for dst, sums, loads in part:
            walked[dst] = sums, loads
            orbit = orbit_of.get(dst)
            if orbit is None:
                continue
            total += group.link_sums(loads, len(orbit))
            size = len(orbit)
            yield _Sums(
                {},
                sums.spread,
                sums.total * size,
                sums.weighted_hops * size,
                sums.weighted_heads * size,
                sums.longest,
                dict.fromkeys(orbit, sums.arrivals[dst]),
            )
    yield _Sums({int(i): float(total[i]) for i in np.flatnonzero(total)}, False, 0, 0, 0, 0, {})
    for member in checks:
        representative = next(orbit[0] for orbit in group.orbits if member in orbit)
        sums, loads = walked[representative]
        mapped = group.image_of(member, loads, group.map_links)
        own, own_loads = walked[member]
        if not np.allclose(mapped, own_loads, rtol=1e-9, atol=1e-12 * max(1.0, loads.max())):
            raise group.mismatch("channel loads", member)
        pairs = (
            (sums.total, own.total),
            (sums.weighted_hops, own.weighted_hops),
            (sums.weighted_heads, own.weighted_heads),
            (sums.longest, own.longest),
            (sums.arrivals[representative], own.arrivals[member]),
        )
        if sums.spread != own.spread or not all(math.isclose(a, b) for a, b in pairs):
            raise group.mismatch("hop counts and arrivals", member)


def _walk_uniform(
    plan: FabricPlan, destinations: list[int], packet_length: float
) -> list[tuple[int, _Sums, np.ndarray]]:
    """:func:`_walk_flows` of uniform traffic, each of ``destinations`` on its own: its sums and
    its loads as an array over the links."""
    n = len(plan.endpoints)
    result = []
    for dst in destinations:
        sums = _walk_flows(plan, [(dst, uniform_sources(dst, n))], packet_length)
        loads = np.zeros(len(plan.links))
        for link_id, value in sums.load.items():
            loads[link_id] = value
        result.append((dst, sums, loads))
    return result


@dataclass
class _Sums:
    """What :func:`_walk_flows` adds up over a group of destinations."""

    load: dict[int, float]
    spread: bool
    total: float
    weighted_hops: float
    weighted_heads: float
    longest: float
    arrivals: dict[int, float]


def _walk_flows(
    plan: FabricPlan, flows: list[tuple[int, Mapping[int, float]]], packet_length: float
) -> _Sums:
    """:func:`_walk` over one group of destinations."""
    view, rf = routing_of(plan)
    bits = plan.router.head_bits

    def flits(head) -> int:
        return 1 if bits is None else head_flits(rf.head_length(head), bits)

    def size(head) -> float:
        """Flits on a link per payload flit, for a packet whose head is ``head`` there."""
        return (packet_length + flits(head) - 1) / packet_length

    outputs = straight_outputs(view)

    def straight(link_id: int, child: Any) -> int:
        """1 if a packet arriving over ``link_id`` at route graph node ``child`` leaves it
        straight (its first choice there is the output that link's input feeds straight)."""
        out_id = child.children[0][0]
        if out_id < 0:
            return 0
        into, out = plan.links[link_id].dst, plan.links[out_id].src
        return int(outputs[into.switch].get(into.port) == out.port)

    sums = _Sums(defaultdict(float), False, 0.0, 0.0, 0.0, 0.0, defaultdict(float))
    load, arrivals = sums.load, sums.arrivals
    for dst, sources in flows:
        flow: dict[Hashable, float] = defaultdict(float)
        roots: dict[Hashable, tuple] = {}  # key -> its first injection state
        firsts = []
        for src, share in sources.items():
            states = [(i.switch, i.port, 0, i.head) for i in rf.injections(src, dst)]
            sums.spread = sums.spread or len({state[:2] for state in states}) > 1  # switch, port
            keys = [rf.state_key(*state) for state in states]
            for key, state in zip(keys, states, strict=True):
                flow[key] += share / len(states)
                roots.setdefault(key, state)
            firsts.append((keys[0], share))  # an uncontended packet's first injection
        graph = _route_graph(rf, view, roots)
        # push each node's flow along its candidates in equal shares, parents first
        order = _topological(list(roots), graph)
        for key in order:
            amount = flow.pop(key, 0.0)
            node = graph[key]
            part = amount / node.fanout
            sums.spread = sums.spread or len({link_id for link_id, _, _ in node.children}) > 1
            for link_id, child, ways in node.children:
                if link_id >= 0:
                    carried = part * ways
                    flow[child] += carried
                    load[link_id] += carried if bits is None else carried * size(graph[child].head)
        # an uncontended packet's links: its first injection, then first choices (children first)
        # and the head flits it waits for at each switch, then carries onto the ejection link
        hops: dict[Hashable, int] = {}
        heads: dict[Hashable, tuple[int, int]] = {}  # (head cycles from here, ejection flits)
        for key in reversed(order):
            node = graph[key]
            link_id, child, _ = node.children[0]
            hops[key] = 0 if link_id < 0 else 1 + hops[child]
            if link_id < 0:
                ejected = flits(node.next_head) if bits is not None else 1
                after = (ejected - 1, ejected)
            else:
                after = heads[child]
            # a link longer than a cycle adds its extra cycles as a head's extra flits do, and
            # the straight bypass takes one off the next switch if the packet goes straight
            wire = 0
            if link_id >= 0:
                wire = plan.links[link_id].latency - 1 - straight(link_id, graph[child])
            heads[key] = (flits(node.head) - 1 + wire + after[0], after[1])
        for root, share in firsts:
            sums.weighted_hops += share * hops[root]
            sums.weighted_heads += share * heads[root][0]
            arrivals[dst] += share * (packet_length + heads[root][1] - 1) / packet_length
            sums.total += share
            latency = plan.router.zero_load_latency(
                hops[root], packet_length, heads[root][0], plan.buffer_depth, plan.link_latency, 0
            )
            sums.longest = max(sums.longest, latency)
    return sums


def channel_load(plan: FabricPlan, flows: Flows) -> ChannelLoad:
    """Channel-load bound for ``flows`` ((src, dst) -> share of src's packets) under the routing."""
    return _walk(plan, by_destination(flows), plan.packet_length).load


def uniform_channel_load(plan: FabricPlan) -> ChannelLoad:
    """Channel-load bound for uniform traffic under the plan's routing."""
    n = len(plan.endpoints)
    flows = flows_by_destination(TrafficConfig(), n)
    return _walk(plan, flows, plan.packet_length, uniform=True).load


def flow_zero_load_latency(plan: FabricPlan, flows: Flows, packet_length: float) -> float:
    """Mean zero-load latency over ``flows`` (weighted by share) under the plan's router
    settings, along each flow's first-choice path (first injection, candidate and VC), head
    flits included (``router.head_bits``: their cycles as the contract's sum, exact while the
    buffers cover the credit loop the head's waits stretch, short of the model below it)."""
    walk = _walk(plan, by_destination(flows), packet_length)
    return plan.router.zero_load_latency(
        walk.hops, packet_length, walk.heads, plan.buffer_depth, plan.link_latency, 0
    )


def lone_packet_latency(plan: FabricPlan, packet_length: int = 1) -> tuple[float, float]:
    """``(longest, mean)`` zero-load latency of a lone packet of ``packet_length`` flits over
    the ordered pairs of distinct endpoints, along the first choices an uncontended packet
    takes, head flits included (``router.head_bits``): what the model gives such a packet."""
    flows = flows_by_destination(TrafficConfig(), len(plan.endpoints))
    walk = _walk(plan, flows, packet_length, uniform=True)
    mean = plan.router.zero_load_latency(
        walk.hops, packet_length, walk.heads, plan.buffer_depth, plan.link_latency, 0
    )
    return walk.longest, mean


@dataclass(frozen=True)
class PatternLimits:
    """What the analysis predicts for one traffic configuration on one plan."""

    zero_load_latency: float  # cycles, averaged over the pattern's flows
    channel_load: ChannelLoad  # its bound is the highest sustainable injection rate

    def to_dict(self) -> dict[str, float | str | bool]:
        return {
            "zero_load_latency": self.zero_load_latency,
            "bound": self.channel_load.bound,
            "limited_by": self.channel_load.limited_by,
            "spread": self.channel_load.spread,  # ``bound`` is then no bound: ``proven`` is
            "proven": self.channel_load.proven,
        }


def pattern_limits(
    plan: FabricPlan, config: TrafficConfig, seed: int = 1, *, symmetry: bool = True
) -> PatternLimits:
    """Zero-load latency and channel-load bound of ``config``'s pattern (``seed`` for zipf).
    Uniform traffic goes through the routing's symmetries (:func:`_walk`) unless ``symmetry``
    is False; every other pattern walks every destination."""
    flows = flows_by_destination(config, len(plan.endpoints), seed)
    uniform = symmetry and config.pattern == "uniform"
    walk = _walk(plan, flows, config.mean_length, uniform=uniform)
    zero = plan.router.zero_load_latency(
        walk.hops, config.mean_length, walk.heads, plan.buffer_depth, plan.link_latency, 0
    )
    return PatternLimits(zero, walk.load)


def cached_pattern_limits(plan: FabricPlan, config: TrafficConfig, seed: int = 1) -> PatternLimits:
    """:func:`pattern_limits`, from the set-up cache when this plan and pattern were walked
    before (:mod:`zfabric.setup_cache`): the rate and the injection process change neither."""
    fields = dataclasses.asdict(config)
    del fields["rate"], fields["process"]

    def compute() -> dict[str, Any]:
        limits = pattern_limits(plan, config, seed)
        return {"zero_load_latency": limits.zero_load_latency, **vars(limits.channel_load)}

    entry = cached(
        "limits", plan, compute, inputs={**fields, "seed": seed}, sources=_LIMITS_SOURCES
    )
    zero = entry.pop("zero_load_latency")
    return PatternLimits(zero, ChannelLoad(**entry))


#: the walk's own sources beyond the compiler's (part of the cache key)
_LIMITS_SOURCES = (Path(__file__), Path(__file__).with_name("traffic.py"))


class _Node(NamedTuple):
    """One routing state key (:meth:`~zfabric.routing.base.RoutingFunction.state_key`: what
    ``route`` depends on) in a destination's route graph: every state of the key has the same
    decision, so their flows add up and move on together."""

    head: Any  # the head a packet in this state carries
    next_head: Any  # the head its decision passes on
    #: (link id or -1 for delivery, the child's key, how many of the decision's candidates lead
    #: there: the VCs of one link whose states share a key), in the decision's order
    children: tuple[tuple[int, Hashable, int], ...]
    fanout: int  # candidates in all: a flow splits into this many equal shares


def _route_graph(rf, view: PlanView, roots: dict[Hashable, tuple]) -> dict[Hashable, _Node]:
    """Every routing state key reachable from ``roots`` (key -> a state of it) -> its node.

    One node per key, not per (switch, input port, VC, head) state: where ``route`` ignores
    the input port and VC (HyperZ's routings, up*/down* on trees) that divides the states by
    the ports times the VCs (tests/sim/test_route_graph.py checks the figures against the walk
    over whole states)."""
    graph: dict[Hashable, _Node] = {}
    stack = list(roots.items())
    while stack:
        key, state = stack.pop()
        if key in graph:
            continue
        switch, _, _, head = state
        decision = rf.route(*state)
        ways: dict[tuple[int, Hashable], int] = {}
        fanout = 0
        for hop in decision.hops:
            link = view.out_link[switch][hop.port]
            if link is None:
                fanout += 1
                ways[(-1, fanout)] = 1  # a delivery: one share per hop, whatever its VCs
                continue
            for w in hop.vcs:
                child = (link.dst.switch, link.dst.port, w, decision.head)
                edge = (link.id, rf.state_key(*child))
                if edge in ways:
                    ways[edge] += 1
                else:
                    ways[edge] = 1
                    stack.append((edge[1], child))
                fanout += 1
        children = tuple(
            (link_id, child if link_id >= 0 else None, n) for (link_id, child), n in ways.items()
        )
        graph[key] = _Node(head, decision.head, children, fanout)
    return graph


def _topological(roots: list[Hashable], graph: dict[Hashable, _Node]) -> list[Hashable]:
    """Keys with every parent before its children (depth-first post-order, reversed)."""
    seen: set[Hashable] = set()
    result: list[Hashable] = []
    for root in roots:
        if root in seen:
            continue
        stack = [(root, iter(graph[root].children))]
        seen.add(root)
        while stack:
            key, pending = stack[-1]
            for link_id, child, _ in pending:
                if link_id >= 0 and child not in seen:
                    seen.add(child)
                    stack.append((child, iter(graph[child].children)))
                    break
            else:
                stack.pop()
                result.append(key)
    result.reverse()
    return result
