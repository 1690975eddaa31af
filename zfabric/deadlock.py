"""Deadlock proof: the channel dependency graph (CDG) of a plan under its own routing function.

Nodes are channels ``(link id, vc)``. For every destination the walk starts from every source's
every injection choice, on every local VC, and follows every candidate and every allowed VC the
routing function returns, so adaptive choices are all covered. An edge ``a -> b`` means a packet
holding ``a`` may wait for ``b``. The same walk checks delivery (every endpoint reaches every
other, at the right endpoint, with VCs that exist on each link, in a bounded number of hops)
and yields the hop counts the metrics report.

Deterministic routings (every channel an escape channel, the default of
:meth:`~zfabric.routing.base.RoutingFunction.is_escape`): an acyclic CDG proves the routing
deadlock-free (Dally and Seitz).

Adaptive routings (:attr:`~zfabric.routing.base.RoutingFunction.adaptive`) are proved by Duato's
condition (J. Duato, "A new theory of deadlock-free adaptive routing in wormhole networks",
IEEE TPDS 4(12), 1993, Theorem 1; for routing functions of the input channel and the
destination, as ours are, "A necessary and sufficient condition for deadlock-free adaptive
routing in wormhole networks", IEEE TPDS 6(10), 1995). With R(c, d) the channels the routing
offers a packet for destination d that holds channel c (a walk state), C1 the escape channels
and R1(c, d) = R(c, d) ∩ C1 (the restriction, so a packet holds an escape channel only if R1
gave it, and the 1995 paper's cross dependencies cannot arise), R is deadlock-free if

- R1 is *connected*: every state a packet reaches under R has an escape channel or delivers.
  The walk checks it at every state; as the walk also bounds every path under R, following
  R1 alone from any state ends at the destination;
- R1's *extended CDG* is acyclic. Its nodes are the escape channels; ``ci -> cj`` is an edge if
  for some destination d a packet holding ci may request cj either *directly*
  (cj ∈ R1(ci, d)) or *indirectly*, after adaptive channels ck1 .. ckm ∉ C1 with ck1 ∈ R(ci, d),
  ck(l+1) ∈ R(ckl, d) and cj ∈ R1(ckm, d) (a wormhole packet still holds ci there).

The theorem assumes that a buffer holds flits of one packet at a time, so that a packet on an
adaptive channel reaches that buffer's front, where R1 is offered; the switch keeps it by giving
a head an adaptive VC only when that VC's downstream buffer is empty
(:meth:`~zfabric.routing.base.RoutingFunction.atomic`, docs/microarchitecture.md step 2). Escape
channels need no such care: a packet queued behind another in an escape buffer waits on a
packet whose own requests are edges of the same graph.

Bubble flow control (:mod:`zfabric.bubble`) on the rings of a torus: a packet that holds a
ring's channel always finds room on the ring's next one (the ring keeps a packet-sized bubble),
so the dependencies between consecutive channels of one ring are dropped, and the rest of the
CDG (dimension order across the rings) must be acyclic. A plan that asks for it outside the
argument's premises is refused, not proved another way.

The walk computes both at once: a state's "outs" are the escape channels it may request next,
directly or through adaptive channels, so with every channel escape the extended CDG is the
CDG and the deterministic proof is unchanged.
"""

from __future__ import annotations

import functools
import sys
from collections import Counter, defaultdict
from collections.abc import Callable, Collection, Hashable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import networkx as nx
import numpy as np

from .bubble import asks_bubble, bubble_refusal, ring_of
from .destinations import map_groups, routing_of, setup_workers
from .errors import DeadlockError, PlanError
from .plan import FabricPlan, PlanView
from .routing import RoutingFunction
from .setup_cache import cached
from .symmetry import SymmetryGroup, symmetry_group

__all__ = [
    "RoutingAnalysis",
    "RoutingSummary",
    "analyse_routing",
    "routing_summary",
    "check_deadlock_free",
    "find_cdg_cycle",
    "find_wait_cycle",
]

Channel = tuple[int, int]


class _Verdict:
    """The figures every command reads: deadlock freedom and the hop counts."""

    cycle: list[str] | None
    pairs: int
    min_hops: Counter
    max_hops: Counter

    @property
    def deadlock_free(self) -> bool:
        return self.cycle is None

    @property
    def diameter(self) -> int:
        return max(self.max_hops, default=0)

    @property
    def average_hops(self) -> float:
        total = sum(h * n for h, n in self.min_hops.items())
        return total / self.pairs if self.pairs else 0.0


@dataclass
class RoutingAnalysis(_Verdict):
    """What the walk found. Hops count switch-to-switch links (injection/ejection excluded)."""

    view: PlanView
    cycle: list[str] | None
    pairs: int
    min_hops: Counter = field(default_factory=Counter)  # histogram over ordered pairs
    max_hops: Counter = field(default_factory=Counter)
    pair_hops: dict[tuple[int, int], tuple[int, int]] | None = None  # (src, dst) -> (min, max)
    #: the proof is Duato's (``cdg`` is the escape channels' extended CDG)
    adaptive: bool = False
    #: the CDG's edges, made into ``cdg`` when it is first read (the verdict needs no graph)
    edges: Iterable[tuple[Channel, Channel]] = field(default=(), repr=False)

    @functools.cached_property
    def cdg(self) -> nx.DiGraph:
        """The CDG (Duato's extended CDG of the escape channels for an adaptive routing):
        nodes are the escape channels ``(link id, vc)``."""
        rf = routing_of(self.view.plan)[1]
        graph = nx.DiGraph()
        graph.add_nodes_from(
            (link.id, vc)
            for link in self.view.plan.links
            for vc in range(link.vcs)
            if rf.is_escape(link.id, vc)
        )
        graph.add_edges_from(self.edges)
        return graph


@dataclass
class RoutingSummary(_Verdict):
    """:class:`RoutingAnalysis` without its graphs: what :func:`routing_summary` caches."""

    cycle: list[str] | None
    pairs: int
    min_hops: Counter
    max_hops: Counter
    adaptive: bool


def routing_summary(
    plan: FabricPlan, *, progress: Callable[[int, int], None] | None = None
) -> RoutingSummary:
    """:func:`analyse_routing`'s verdict and hop counts, from the set-up cache when this plan
    was analysed before (:mod:`zfabric.setup_cache`); ``progress`` as there, on a miss only."""

    def compute() -> dict[str, Any]:
        analysis = analyse_routing(plan, progress=progress)
        return {
            "cycle": analysis.cycle,
            "pairs": analysis.pairs,
            "min_hops": sorted(analysis.min_hops.items()),
            "max_hops": sorted(analysis.max_hops.items()),
            "adaptive": analysis.adaptive,
        }

    entry = cached("routing", plan, compute)
    return RoutingSummary(
        entry["cycle"],
        entry["pairs"],
        Counter(dict(entry["min_hops"])),
        Counter(dict(entry["max_hops"])),
        entry["adaptive"],
    )


def find_cdg_cycle(view: PlanView, cdg: nx.DiGraph) -> list[str] | None:
    # find_cycle alone takes seconds to prove a 10k-edge graph acyclic; the DAG test takes ms
    if nx.is_directed_acyclic_graph(cdg):
        return None
    try:
        cycle = nx.find_cycle(cdg)
    except nx.NetworkXNoCycle:
        return None
    return [view.channel_name(*edge[0]) for edge in cycle]


def find_wait_cycle(waits: dict[Hashable, set[Hashable]]) -> list[Hashable]:
    """A cycle in a wait-for graph (node -> nodes it waits on), or [] if there is none."""
    graph = nx.DiGraph()
    graph.add_edges_from((a, b) for a, targets in waits.items() for b in targets)
    try:
        return [edge[0] for edge in nx.find_cycle(graph)]
    except nx.NetworkXNoCycle:
        return []


def analyse_routing(
    plan: FabricPlan,
    *,
    keep_pairs: bool = False,
    progress: Callable[[int, int], None] | None = None,
    endpoints: Collection[int] | None = None,
    workers: int | None = None,
    symmetry: bool = True,
) -> RoutingAnalysis:
    """Walk every (source, destination, choice) route of ``plan`` and build its CDG, in
    ``workers`` processes (default :func:`~zfabric.destinations.setup_workers`).
    ``endpoints``: walk the routes among these only (a degraded fabric's survivors).
    ``symmetry``: walk one destination per orbit of the symmetries the routing declares
    (:mod:`zfabric.symmetry`) and map the rest, the same results; False walks them all."""
    view, rf = routing_of(plan)
    chosen = tuple(range(len(plan.endpoints)) if endpoints is None else sorted(endpoints))
    n = len(chosen)
    analysis = RoutingAnalysis(view, None, n * (n - 1), adaptive=rf.adaptive)
    if keep_pairs:
        analysis.pair_hops = {}
    workers = setup_workers(n) if workers is None else workers
    rings = _bubble_rings(view)
    group = symmetry_group_of(plan) if symmetry and endpoints is None else None
    if group is None:
        edges = _walk_all(plan, analysis, chosen, keep_pairs, progress, workers)
        analysis.edges = [(a, b) for a, b in edges if rings is None or not _same_ring(rings, a, b)]
        analysis.cycle = find_cdg_cycle(view, analysis.cdg)
        return analysis
    codes = _walk_orbits(plan, group, analysis, keep_pairs, progress, workers)
    channel_link = np.repeat(np.arange(len(plan.links)), [link.vcs for link in plan.links])
    if rings is not None:
        ring_a = rings[channel_link[codes // group.channels]]
        ring_b = rings[channel_link[codes % group.channels]]
        codes = codes[(ring_a < 0) | (ring_a != ring_b)]
    analysis.edges = _Pairs(codes, group.channels, channel_link, group.base)
    if not _acyclic(codes // group.channels, codes % group.channels, group.channels):
        analysis.cycle = find_cdg_cycle(view, analysis.cdg)
    return analysis


def _bubble_rings(view: PlanView) -> np.ndarray | None:
    """Under bubble flow control (:mod:`zfabric.bubble`), per link the ring it belongs to
    (2 x dimension + 1 going +, 2 x dimension going -; -1 for links to and from endpoints),
    whose consecutive channels the proof no longer counts as dependencies: a packet on a ring
    always finds the ring's bubble. None on any other plan; a plan that asks for bubble flow
    control outside the argument's premises is refused (:class:`PlanError`)."""
    plan = view.plan
    if not asks_bubble(plan):
        return None
    reason = bubble_refusal(plan)
    if reason:
        raise PlanError(f"bubble flow control not proven: it {reason}")
    rings = np.full(len(plan.links), -1)
    for link in plan.links:
        ring = ring_of(view, link.src.switch, link.src.port)
        if ring is not None:
            rings[link.id] = 2 * ring[0] + (ring[1] > 0)
    return rings


def _same_ring(rings: np.ndarray, a: Channel, b: Channel) -> bool:
    return rings[a[0]] >= 0 and rings[a[0]] == rings[b[0]]


@dataclass
class _Pairs:
    """CDG edges as ``a * channels + b`` codes, read as channel pairs ((link, VC), (link, VC))
    a block at a time (26 million edges at 8192 endpoints: arrays of pairs would not fit)."""

    codes: np.ndarray
    channels: int
    channel_link: np.ndarray  # per channel id, its link
    base: np.ndarray  # per link, its first channel id

    def __iter__(self) -> Iterator[tuple[Channel, Channel]]:
        for start in range(0, len(self.codes), 1 << 16):
            block = self.codes[start : start + (1 << 16)]
            a, b = block // self.channels, block % self.channels
            links = self.channel_link[a], self.channel_link[b]
            columns = (links[0], a - self.base[links[0]], links[1], b - self.base[links[1]])
            for x, v, y, w in zip(*(column.tolist() for column in columns), strict=True):
                yield (x, v), (y, w)


def _acyclic(a: np.ndarray, b: np.ndarray, nodes: int) -> bool:
    """Whether the graph of edges ``a[i] -> b[i]`` (``a`` sorted) on ``nodes`` nodes has no
    cycle: Kahn's peeling of the nodes nothing waits for, a frontier at a time."""
    starts = np.searchsorted(a, np.arange(nodes + 1))
    waiting = np.bincount(b, minlength=nodes)
    peeled = waiting == 0
    frontier = np.flatnonzero(peeled)
    while frontier.size:
        counts = starts[frontier + 1] - starts[frontier]
        offsets = np.repeat(starts[frontier] - np.cumsum(counts) + counts, counts)
        waiting -= np.bincount(b[offsets + np.arange(counts.sum())], minlength=nodes)
        frontier = np.flatnonzero((waiting == 0) & ~peeled)
        peeled[frontier] = True
    return bool(peeled.all())


def symmetry_group_of(plan: FabricPlan, *, ports: bool = False) -> SymmetryGroup | None:
    """The group of the symmetries ``plan``'s routing declares (none on a degraded plan); with
    ``ports``, of its port symmetries (what link loads may use). Kept for the last plan asked
    (its proof and its limits use both)."""
    if plan.routing.params.get("degraded"):
        return None
    global _GROUPS
    if _GROUPS is None or _GROUPS[0] is not plan:
        _GROUPS = (plan, {})
    groups = _GROUPS[1]
    if ports not in groups:
        rf = routing_of(plan)[1]
        if ports and type(rf).port_symmetries is RoutingFunction.port_symmetries:
            groups[ports] = symmetry_group_of(plan)  # the same declarations
        else:
            symmetries = rf.port_symmetries() if ports else rf.symmetries()
            groups[ports] = symmetry_group(plan, symmetries)
    return groups[ports]


#: the last plan :func:`symmetry_group_of` was asked for, its groups by ``ports``
_GROUPS: tuple[FabricPlan, dict[bool, SymmetryGroup | None]] | None = None


def _walk_all(
    plan: FabricPlan,
    analysis: RoutingAnalysis,
    chosen: tuple[int, ...],
    keep_pairs: bool,
    progress: Callable[[int, int], None] | None,
    workers: int,
) -> Iterator[tuple[Channel, Channel]]:
    """Every destination walked: the hop counts into ``analysis``; the CDG's edges."""
    # channel -> the channels it may wait for (the edges, grouped: set unions are the hot loop)
    edges: dict[Channel, set[Channel]] = defaultdict(set)
    walk = functools.partial(_walk_destinations, sources=chosen, keep_pairs=keep_pairs)
    for done, group in map_groups(walk, plan, chosen, workers=workers):
        for channel, targets in group.edges.items():
            edges[channel] |= targets
        analysis.min_hops.update(group.min_hops)
        analysis.max_hops.update(group.max_hops)
        if keep_pairs:
            analysis.pair_hops.update(group.pair_hops)
        if progress:
            progress(done, len(chosen))
    return ((a, b) for a, targets in edges.items() for b in targets)


def _walk_orbits(
    plan: FabricPlan,
    group: SymmetryGroup,
    analysis: RoutingAnalysis,
    keep_pairs: bool,
    progress: Callable[[int, int], None] | None,
    workers: int,
) -> np.ndarray:
    """One destination per orbit walked and mapped onto its orbit, and the spot checks' walked
    in full and compared: the hop counts into ``analysis``; the CDG's edges as sorted codes
    (``a * channels + b``)."""
    n = len(plan.endpoints)
    orbit_of = {orbit[0]: orbit for orbit in group.orbits}
    checks = group.spot_check_members()
    walked: dict[int, _Footprint] = {}
    done = 0
    union = np.zeros(0, dtype=np.int64)
    for _, part in map_groups(_walk_footprints, plan, [*orbit_of, *checks], workers=workers):
        for dst, footprint in part:
            walked[dst] = footprint
            orbit = orbit_of.get(dst)
            if orbit is None:
                continue
            images = group.images(orbit, footprint, functools.partial(_map_footprint, group))
            codes = []
            for member, image in images:
                codes.append(image.edges)
                if keep_pairs:
                    for src in range(n):
                        if src != member:
                            analysis.pair_hops[(src, member)] = (
                                int(image.low[src]),
                                int(image.high[src]),
                            )
            union = _distinct(np.concatenate([union, *codes]))
            low, high = footprint.low[footprint.low >= 0], footprint.high[footprint.high >= 0]
            for hops, counts in ((low, analysis.min_hops), (high, analysis.max_hops)):
                for value, count in zip(*np.unique(hops, return_counts=True), strict=True):
                    counts[int(value)] += int(count) * len(orbit)
            done += len(orbit)
            if progress:
                progress(done, n)
    for member in checks:
        representative = next(orbit[0] for orbit in group.orbits if member in orbit)
        mapped = group.image_of(
            member, walked[representative], functools.partial(_map_footprint, group)
        )
        if not np.array_equal(_distinct(mapped.edges), walked[member].edges):
            raise group.mismatch("channel dependencies", member)
        if not (
            np.array_equal(mapped.low, walked[member].low)
            and np.array_equal(mapped.high, walked[member].high)
        ):
            raise group.mismatch("hop counts", member)
    return union


def _distinct(codes: np.ndarray) -> np.ndarray:
    """``codes`` sorted, each once (by sorting: numpy's hashing ``unique`` is slower here)."""
    codes = np.sort(codes)
    return codes[np.concatenate(([True], codes[1:] != codes[:-1]))] if len(codes) else codes


@dataclass
class _Footprint:
    """What the walk toward one destination found: its CDG edges (``a * channels + b`` codes,
    sorted as walked, not once mapped), the fewest and most hops from each source (-1 at the
    destination itself)."""

    edges: np.ndarray
    low: np.ndarray
    high: np.ndarray


def _map_footprint(group: SymmetryGroup, generator, footprint: _Footprint) -> _Footprint:
    return _Footprint(
        group.map_edges(generator, footprint.edges),
        group.map_endpoints(generator, footprint.low),
        group.map_endpoints(generator, footprint.high),
    )


def _walk_footprints(plan: FabricPlan, destinations: Sequence[int]) -> list[tuple[int, _Footprint]]:
    """Each of ``destinations`` walked on its own from every source: its footprint."""
    n = len(plan.endpoints)
    base = np.cumsum([0] + [link.vcs for link in plan.links])
    channels = int(base[-1])
    result = []
    for dst in destinations:
        group = _walk_destinations(plan, [dst], range(n), keep_pairs=True)
        codes = [
            (base[a[0]] + a[1]) * channels + base[b[0]] + b[1]
            for a, targets in group.edges.items()
            for b in targets
        ]
        low = np.full(n, -1, dtype=np.int64)
        high = np.full(n, -1, dtype=np.int64)
        for (src, _), (lo, hi) in group.pair_hops.items():
            low[src], high[src] = lo, hi
        result.append((dst, _Footprint(_distinct(np.array(codes, dtype=np.int64)), low, high)))
    return result


@dataclass
class _Group:
    """What the walk toward a group of destinations found."""

    edges: dict[Channel, set[Channel]]
    min_hops: Counter
    max_hops: Counter
    pair_hops: dict[tuple[int, int], tuple[int, int]]


def _walk_destinations(
    plan: FabricPlan, destinations: Sequence[int], sources: Sequence[int], keep_pairs: bool
) -> _Group:
    """Every route from ``sources`` toward ``destinations``: the CDG's edges, the hop counts
    per pair."""
    view, rf = routing_of(plan)
    # the longest route any sane routing takes: every channel at most once
    bound = len(plan.links) + 1
    group = _Group(defaultdict(set), Counter(), Counter(), {})
    #: per endpoint, the switch inputs it injects into
    inputs = [
        {(a.switch, a.port) for i, a in enumerate(e.attachments) if e.injects(i)}
        for e in plan.endpoints
    ]
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 4 * bound + 1000))
    try:
        for dst in destinations:
            walker = _DestinationWalk(view, rf, dst, group.edges, bound)
            for src in sources:
                if src == dst:
                    continue
                injections = rf.injections(src, dst)
                if not injections:
                    raise PlanError(f"{_ep(view, src)} has no way to inject for {_ep(view, dst)}")
                for i in injections:
                    if (i.switch, i.port) not in inputs[src]:
                        raise PlanError(
                            f"{_ep(view, src)} injects at {view.switches[i.switch].name}.p{i.port},"
                            " not an input it is attached to"
                        )
                results = [
                    walker.visit((i.switch, i.port, vc, i.head), 0)
                    for i in injections
                    for vc in range(view.plan.router.injection_vcs)  # every local VC
                ]
                lo, hi = min(r[1] for r in results), max(r[2] for r in results)
                group.min_hops[lo] += 1
                group.max_hops[hi] += 1
                if keep_pairs:
                    group.pair_hops[(src, dst)] = (lo, hi)
    finally:
        sys.setrecursionlimit(limit)
    return group


def check_deadlock_free(plan: FabricPlan) -> RoutingAnalysis:
    """Analyse ``plan`` and raise :class:`DeadlockError` with the cycle if the CDG (the extended
    CDG of the escape channels, for an adaptive routing) has one."""
    analysis = analyse_routing(plan)
    if analysis.cycle:
        raise DeadlockError(analysis.cycle)
    return analysis


def _ep(view: PlanView, endpoint: int) -> str:
    return view.plan.endpoints[endpoint].name


class _DestinationWalk:
    """Memoised walk of all routes toward one destination, one state per routing state key."""

    def __init__(self, view: PlanView, rf: RoutingFunction, dst: int, edges: dict, bound: int):
        self.view, self.rf, self.dst, self.edges, self.bound = view, rf, dst, edges, bound
        # key -> (escape channels requested next, directly or through adaptive ones; min hops,
        # max hops)
        self.memo: dict[Hashable, tuple[frozenset[Channel], int, int]] = {}
        self.active: set[Hashable] = set()

    def visit(
        self, state: tuple[int, int, int, Any], depth: int
    ) -> tuple[frozenset[Channel], int, int]:
        switch, in_port, in_vc, head = state
        key = self.rf.state_key(switch, in_port, in_vc, head)
        if key in self.memo:
            return self.memo[key]
        view = self.view
        name = view.switches[switch].name
        if key in self.active or depth > self.bound:
            raise PlanError(f"route to {_ep(view, self.dst)} loops at {name} (head {head!r})")
        self.active.add(key)
        decision = self.rf.route(switch, in_port, in_vc, head)
        if not decision.hops:
            raise PlanError(f"no route from {name}.p{in_port} to {_ep(view, self.dst)}")
        outs: set[Channel] = set()
        escapes = False  # R1 offers a channel here, or the packet is delivered
        lows, highs = [], []
        for hop in decision.hops:
            if not 0 <= hop.port < view.switches[switch].radix:
                raise PlanError(f"{name} has no port {hop.port} (routing to {_ep(view, self.dst)})")
            link = view.out_link[switch][hop.port]
            if link is None:  # a local port: delivery
                reached = view.ejection_at.get((switch, hop.port))
                if reached is None:
                    raise PlanError(
                        f"route to {_ep(view, self.dst)} takes {name}.p{hop.port}, an output that"
                        " faces nothing"
                    )
                if reached != self.dst:
                    raise PlanError(
                        f"route to {_ep(view, self.dst)} delivers to {_ep(view, reached)} at {name}"
                    )
                ejection_vcs = view.plan.router.ejection_vcs
                if not hop.vcs or not all(0 <= vc < ejection_vcs for vc in hop.vcs):
                    raise PlanError(
                        f"{name}.p{hop.port}: delivery on VCs {hop.vcs!r}, the ejection link has "
                        f"{ejection_vcs}"
                    )
                lows.append(0)
                highs.append(0)
                escapes = True
                continue
            if not hop.vcs:
                raise PlanError(f"{name}.p{hop.port}: routing offers no VC")
            for vc in hop.vcs:
                if not 0 <= vc < link.vcs:
                    raise PlanError(
                        f"{view.channel_name(link.id, vc)}: VC out of range ({link.vcs} VCs)"
                    )
                channel = (link.id, vc)
                child = (link.dst.switch, link.dst.port, vc, decision.head)
                child_outs, lo, hi = self.visit(child, depth + 1)
                if self.rf.is_escape(link.id, vc):
                    escapes = True
                    outs.add(channel)
                    self.edges[channel] |= child_outs
                else:  # an adaptive channel: what it leads to are indirect dependencies
                    outs.update(child_outs)
                lows.append(lo + 1)
                highs.append(hi + 1)
        if not escapes:
            raise PlanError(
                f"the escape sub-function is not connected: {name}.p{in_port} VC {in_vc} offers "
                f"no escape channel toward {_ep(view, self.dst)}"
            )
        self.active.discard(key)
        result = (frozenset(outs), min(lows), max(highs))
        self.memo[key] = result
        return result
