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

Bubble flow control (:mod:`zfabric.bubble`) on the rings of a torus or an nDT: a packet that
holds a ring's channel always finds room on the ring's next one (the ring keeps a packet-sized
bubble), so the dependencies between consecutive channels of one ring are dropped, and the rest
of the CDG (dimension order across the rings) must be acyclic. A plan that asks for it outside the
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

from .bubble import asks_bubble, bubble_refusal, output_rings
from .destinations import map_groups, routing_of, setup_workers
from .errors import DeadlockError, PlanError
from .plan import FabricPlan, PlanView
from .routing import RoutingFunction
from .setup_cache import cached
from .symmetry import SymmetryGroup, channel_ids, symmetry_group

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
    wiring = _wiring_of(plan)
    if group is None:
        codes = _walk_all(plan, analysis, chosen, keep_pairs, progress, workers)
    else:
        walked = _walk_orbits(plan, group, analysis, keep_pairs, progress, workers)
        quotient = group.quotient(walked)
        if rings is None and _acyclic(
            quotient // wiring.channels, quotient % wiring.channels, wiring.channels
        ):  # proved from the channels' orbits: the CDG is closed when read
            analysis.edges = _Pairs(wiring, lambda: group.closure(walked))
            return analysis
        codes = group.closure(walked)
    if rings is not None:
        ring_a, ring_b = rings[codes // wiring.channels], rings[codes % wiring.channels]
        codes = codes[(ring_a < 0) | (ring_a != ring_b)]
    analysis.edges = _Pairs(wiring, lambda: codes)
    if not _acyclic(codes // wiring.channels, codes % wiring.channels, wiring.channels):
        analysis.cycle = find_cdg_cycle(view, analysis.cdg)
    return analysis


def _bubble_rings(view: PlanView) -> np.ndarray | None:
    """Under bubble flow control (:mod:`zfabric.bubble`), per channel the ring it belongs to
    (2 x dimension + 1 going +, 2 x dimension going -; -1 for a channel on no ring: to and
    from endpoints, an nDT's internal ``ch`` and ``pe`` VCs), whose consecutive channels the
    proof no longer counts as dependencies: a packet on a ring always finds the ring's bubble.
    None on any other plan; a plan that asks for bubble flow control outside the argument's
    premises is refused (:class:`PlanError`)."""
    plan = view.plan
    if not asks_bubble(plan):
        return None
    reason = bubble_refusal(plan)
    if reason:
        raise PlanError(f"bubble flow control not proven: it {reason}")
    wiring = _wiring_of(plan)
    rings = np.full(wiring.channels, -1)
    for switch in view.switches:
        for (port, vc), (dim, sign) in output_rings(view, switch.id).items():
            rings[wiring.base[view.out_link[switch.id][port].id] + vc] = 2 * dim + (sign > 0)
    return rings


class _Pairs:
    """CDG edges as ``a * channels + b`` codes (sorted, each once), made by ``make`` when first
    read, read as channel pairs ((link, VC), (link, VC)) a block at a time (26 million edges
    at 8192 endpoints: arrays of pairs would not fit)."""

    def __init__(self, wiring: _Wiring, make: Callable[[], np.ndarray]):
        self.channels = wiring.channels
        self.channel_link = wiring.channel_link  # per channel id, its link
        self.base = wiring.base  # per link, its first channel id
        self._make = make

    @functools.cached_property
    def codes(self) -> np.ndarray:
        return self._make()

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
) -> np.ndarray:
    """Every destination walked: the hop counts into ``analysis``; the CDG's edges as sorted
    codes (``a * channels + b``)."""
    walk = functools.partial(_walk_destinations, sources=chosen, keep_pairs=keep_pairs)
    channels = _wiring_of(plan).channels
    union = np.zeros(0, dtype=np.int64)
    for done, group in map_groups(walk, plan, chosen, workers=workers):
        union = _distinct(np.concatenate([union, group.codes(channels)]))
        analysis.min_hops.update(group.min_hops)
        analysis.max_hops.update(group.max_hops)
        if keep_pairs:
            analysis.pair_hops.update(group.pair_hops)
        if progress:
            progress(done, len(chosen))
    return union


def _walk_orbits(
    plan: FabricPlan,
    group: SymmetryGroup,
    analysis: RoutingAnalysis,
    keep_pairs: bool,
    progress: Callable[[int, int], None] | None,
    workers: int,
) -> np.ndarray:
    """One destination per orbit walked and its hops mapped onto its orbit, and the spot checks'
    walked in full and compared: the hop counts into ``analysis``; the representatives' CDG
    edges as sorted codes (``a * channels + b``), whose closure under the group
    (:meth:`SymmetryGroup.closure`) is the CDG."""
    n = len(plan.endpoints)
    orbit_of = {orbit[0]: orbit for orbit in group.orbits}
    checks = group.spot_check_members()
    walked: dict[int, _Footprint] = {}
    done = 0
    for _, part in map_groups(_walk_footprints, plan, [*orbit_of, *checks], workers=workers):
        for dst, footprint in part:
            walked[dst] = footprint
            orbit = orbit_of.get(dst)
            if orbit is None:
                continue
            if keep_pairs:
                hops = _Footprint(footprint.edges[:0], footprint.low, footprint.high)
                for member, image in group.images(
                    orbit, hops, functools.partial(_map_footprint, group)
                ):
                    for src in range(n):
                        if src != member:
                            analysis.pair_hops[(src, member)] = (
                                int(image.low[src]),
                                int(image.high[src]),
                            )
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
    return _distinct(np.concatenate([walked[dst].edges for dst in orbit_of]))


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
    channels = _wiring_of(plan).channels
    result = []
    for dst in destinations:
        group = _walk_destinations(plan, [dst], range(n), keep_pairs=True)
        hops = np.full((n, 2), -1, dtype=np.int64)
        if group.pair_hops:  # one array assignment, not two per source
            sources = [src for src, _ in group.pair_hops]
            hops[sources] = np.array(list(group.pair_hops.values()), dtype=np.int64)
        result.append(
            (dst, _Footprint(group.codes(channels), hops[:, 0].copy(), hops[:, 1].copy()))
        )
    return result


@dataclass
class _Group:
    """What the walk toward a group of destinations found: the CDG's edges by channel id
    (``base[link] + vc``), the hop counts."""

    edges: dict[int, set[int]]
    min_hops: Counter
    max_hops: Counter
    pair_hops: dict[tuple[int, int], tuple[int, int]]

    def codes(self, channels: int) -> np.ndarray:
        """The edges as sorted codes ``a * channels + b``, each once."""
        codes = [a * channels + b for a, targets in self.edges.items() for b in targets]
        return _distinct(np.array(codes, dtype=np.int64))


def _walk_destinations(
    plan: FabricPlan, destinations: Sequence[int], sources: Sequence[int], keep_pairs: bool
) -> _Group:
    """Every route from ``sources`` toward ``destinations``: the CDG's edges, the hop counts
    per pair."""
    wiring = _wiring_of(plan)
    view, rf = wiring.view, wiring.rf
    group = _Group(defaultdict(set), Counter(), Counter(), {})
    inputs, key_of = wiring.inputs, rf.state_key
    local_vcs = range(plan.router.injection_vcs)  # every local VC
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 4 * wiring.bound + 1000))
    try:
        for dst in destinations:
            walker = _DestinationWalk(wiring, dst, group.edges)
            visit, memo = walker.visit, walker.memo
            for src in sources:
                if src == dst:
                    continue
                injections = rf.injections(src, dst)
                if not injections:
                    raise PlanError(f"{_ep(view, src)} has no way to inject for {_ep(view, dst)}")
                lo, hi = wiring.bound, -1
                for i in injections:
                    if (i.switch, i.port) not in inputs[src]:
                        raise PlanError(
                            f"{_ep(view, src)} injects at {view.switches[i.switch].name}.p{i.port},"
                            " not an input it is attached to"
                        )
                    for vc in local_vcs:
                        key = key_of(i.switch, i.port, vc, i.head)
                        found = memo.get(key) or visit(key, i.switch, i.port, vc, i.head, 0)
                        lo, hi = min(lo, found[1]), max(hi, found[2])
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


class _Wiring:
    """What the walk reads at every hop of ``plan``, looked up once per plan: each output's
    link, VC count, next input and first channel id (None at a local port), which channels
    are escape channels."""

    def __init__(self, plan: FabricPlan):
        self.plan = plan
        self.view, self.rf = routing_of(plan)
        self.base, self.channels = channel_ids(plan)
        self.channel_link = np.repeat(np.arange(len(plan.links)), [link.vcs for link in plan.links])
        first = self.base.tolist()
        self.radix = [switch.radix for switch in plan.switches]
        self.out: list[list[tuple[int, int, int, int, int] | None]] = [
            [
                None
                if link is None
                else (link.id, link.vcs, link.dst.switch, link.dst.port, first[link.id])
                for link in ports
            ]
            for ports in self.view.out_link
        ]
        #: per endpoint, the switch inputs it injects into
        self.inputs = [
            {(a.switch, a.port) for i, a in enumerate(e.attachments) if e.injects(i)}
            for e in plan.endpoints
        ]
        if type(self.rf).is_escape is RoutingFunction.is_escape:
            self.escape = [True] * self.channels
        else:
            self.escape = [
                self.rf.is_escape(link.id, vc) for link in plan.links for vc in range(link.vcs)
            ]
        # the longest route any sane routing takes: every channel at most once
        self.bound = len(plan.links) + 1


def _wiring_of(plan: FabricPlan) -> _Wiring:
    """The :class:`_Wiring` of ``plan``, kept for the last plan asked."""
    global _WIRING
    if _WIRING is None or _WIRING.plan is not plan or _WIRING.rf is not routing_of(plan)[1]:
        _WIRING = _Wiring(plan)
    return _WIRING


_WIRING: _Wiring | None = None


class _DestinationWalk:
    """Memoised walk of all routes toward one destination, one state per routing state key."""

    def __init__(self, wiring: _Wiring, dst: int, edges: dict[int, set[int]]):
        self.wiring, self.dst, self.edges = wiring, dst, edges
        self.view, self.key, self.route = wiring.view, wiring.rf.state_key, wiring.rf.route
        # key -> (escape channels requested next, directly or through adaptive ones; min hops,
        # max hops); None while the key is being walked (met again there: a loop)
        self.memo: dict[Hashable, tuple[frozenset[int], int, int] | None] = {}

    def visit(
        self, key: Hashable, switch: int, in_port: int, in_vc: int, head: Any, depth: int
    ) -> tuple[frozenset[int], int, int]:
        """The state ``key`` (of the routing's :meth:`state_key`, not yet in the memo) walked:
        its memo entry. Its callers look the memo up themselves (most states are reached again
        and again: a call each would cost more than the lookup)."""
        wiring, memo = self.wiring, self.memo
        if key in memo or depth > wiring.bound:
            raise PlanError(f"route to {self._dst} loops at {self._name(switch)} (head {head!r})")
        memo[key] = None
        decision = self.route(switch, in_port, in_vc, head)
        if not decision.hops:
            raise PlanError(f"no route from {self._name(switch)}.p{in_port} to {self._dst}")
        outs: set[int] = set()
        escapes = False  # R1 offers a channel here, or the packet is delivered
        low, high = wiring.bound, -1
        radix, out, escape = wiring.radix[switch], wiring.out[switch], wiring.escape
        key_of, next_head, edges = self.key, decision.head, self.edges
        for port, vcs in decision.hops:
            if not 0 <= port < radix:
                raise PlanError(f"{self._name(switch)} has no port {port} (routing to {self._dst})")
            target = out[port]
            if target is None:  # a local port: delivery
                self._check_delivery(switch, port, vcs)
                low, high, escapes = 0, max(high, 0), True
                continue
            if not vcs:
                raise PlanError(f"{self._name(switch)}.p{port}: routing offers no VC")
            link, link_vcs, next_switch, next_port, first = target
            for vc in vcs:
                if not 0 <= vc < link_vcs:
                    raise PlanError(
                        f"{self.view.channel_name(link, vc)}: VC out of range ({link_vcs} VCs)"
                    )
                channel = first + vc
                child = key_of(next_switch, next_port, vc, next_head)
                child_outs, lo, hi = memo.get(child) or self.visit(
                    child, next_switch, next_port, vc, next_head, depth + 1
                )
                if escape[channel]:
                    escapes = True
                    outs.add(channel)
                    edges[channel] |= child_outs
                else:  # an adaptive channel: what it leads to are indirect dependencies
                    outs |= child_outs
                if lo + 1 < low:
                    low = lo + 1
                if hi + 1 > high:
                    high = hi + 1
        if not escapes:
            raise PlanError(
                f"the escape sub-function is not connected: {self._name(switch)}.p{in_port} VC "
                f"{in_vc} offers no escape channel toward {self._dst}"
            )
        result = memo[key] = (frozenset(outs), low, high)
        return result

    def _check_delivery(self, switch: int, port: int, vcs: tuple[int, ...]) -> None:
        name = self._name(switch)
        reached = self.view.ejection_at.get((switch, port))
        if reached is None:
            raise PlanError(
                f"route to {self._dst} takes {name}.p{port}, an output that faces nothing"
            )
        if reached != self.dst:
            raise PlanError(f"route to {self._dst} delivers to {_ep(self.view, reached)} at {name}")
        ejection_vcs = self.view.plan.router.ejection_vcs
        if not vcs or not all(0 <= vc < ejection_vcs for vc in vcs):
            raise PlanError(
                f"{name}.p{port}: delivery on VCs {vcs!r}, the ejection link has {ejection_vcs}"
            )

    @property
    def _dst(self) -> str:
        return _ep(self.view, self.dst)

    def _name(self, switch: int) -> str:
        return self.view.switches[switch].name
