"""Faults: a plan compiled without its dead links, switches, chips and endpoint attachments, the
routing that still works on it, and every single failure in turn (docs/faults.md).

A degraded plan keeps every switch and port (ids stay what the family's routing knows); it
loses the dead channels (the rest renumbered) and the dead attachments. A dead switch loses
every channel into or out of it and every attachment on it; a dead chip is all its switches
(both halves of a Transit alternate-mode chip). A port that lost its channel faces nothing,
as a partial tree's unused port does: a routing that takes it fails the proof.

The routing of a degraded plan: the family's own when it still delivers every pair and is
proven deadlock-free (Transit's dilation offers a direction's other output; a Znode's other
layers and up ports), else up*/down* tables computed on the surviving channels
(:mod:`zfabric.routing.updown_table`), which the same proof checks (``faults.routing``).

Single failures that a symmetry of the plan maps onto each other leave isomorphic fabrics: each
failure's counts are its own, its proof may be another's moved (:func:`single_failures`).
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import networkx as nx
import numpy as np

from .deadlock import analyse_routing, routing_summary, symmetry_group_of
from .errors import PlanError, SpecError
from .fault_spec import FaultSpec
from .fields import short
from .plan import Endpoint, FabricPlan, Link, PlanView, RoutingSpec
from .routing.updown_table import centre_switch
from .symmetry import SPOT_CHECKS, SymmetryGroup

__all__ = [
    "COMPARED",
    "DeadSet",
    "FailureResult",
    "SINGLE_KINDS",
    "TABLE_ROUTING",
    "chips",
    "compile_degraded",
    "dead_channels",
    "degrade",
    "disconnected_pairs",
    "failure_candidates",
    "fault_entry",
    "link_groups",
    "own_routing_fails",
    "pairs_text",
    "plan_graph",
    "resolve",
    "single_failures",
    "switch_levels",
    "with_table_routing",
]

TABLE_ROUTING = "updown_table"
#: what ``zfabric faults --single`` fails in turn
SINGLE_KINDS = ("links", "switches", "chips")
#: cut pairs an error line names before it says how many more there are
SHOWN_PAIRS = 4


@dataclass(frozen=True)
class DeadSet:
    """What is dead, in the intact plan's ids."""

    channels: frozenset[int] = frozenset()
    switches: frozenset[int] = frozenset()
    attachments: frozenset[tuple[int, int]] = frozenset()  # (endpoint, attachment index)

    def __or__(self, other: DeadSet) -> DeadSet:
        return DeadSet(
            self.channels | other.channels,
            self.switches | other.switches,
            self.attachments | other.attachments,
        )


# ---- names --------------------------------------------------------------------------------------


def chips(plan: FabricPlan) -> dict[str, tuple[int, ...]]:
    """Chip name -> its switches, for families built of chips (Transit's RN1: a standard-mode
    chip is one switch, named as it; an alternate-mode chip's halves are its name + a / b)."""
    found: dict[int, list[int]] = {}
    for switch in plan.switches:
        if "chip" in switch.position:
            found.setdefault(switch.position["chip"], []).append(switch.id)
    named: dict[str, tuple[int, ...]] = {}
    for members in found.values():
        first = plan.switches[members[0]]
        name = first.name if len(members) == 1 else first.name[:-1]
        named[name] = tuple(members)
    return named


def _lookup(names: dict[str, Any], name: str, path: str, what: str) -> Any:
    if name in names:
        return names[name]
    close = difflib.get_close_matches(name, list(names), n=1) if len(name) <= 100 else []
    hint = f"; did you mean {close[0]!r}?" if close else ""
    raise SpecError(path, f"no {what} named {short(name)} in this fabric{hint}")


def link_groups(plan: FabricPlan) -> list[tuple[int, ...]]:
    """The channels of every physical link: a channel and its reverse between the same two
    ports, or a one-way channel alone; in the order of their first channel."""
    by_ends = {(link.src, link.dst): link.id for link in plan.links}
    groups, seen = [], set()
    for link in plan.links:
        if link.id in seen:
            continue
        reverse = by_ends.get((link.dst, link.src))
        group = (link.id,) if reverse is None else (link.id, reverse)
        seen.update(group)
        groups.append(group)
    return groups


def resolve(plan: FabricPlan, faults: FaultSpec) -> DeadSet:
    """The faults of the spec in ``plan``'s ids; a name, port or chip that does not exist is a
    SpecError naming the entry's key path (all of them, one line each)."""
    view = PlanView(plan)
    switch_ids = {switch.name: switch.id for switch in plan.switches}
    endpoint_ids = {endpoint.name: endpoint.id for endpoint in plan.endpoints}
    channels: set[int] = set()
    switches: set[int] = set()
    attachments: set[tuple[int, int]] = set()
    errors: list[SpecError] = []

    def attempt(read: Callable[[], None]) -> None:
        try:
            read()
        except SpecError as error:
            errors.append(error)

    def link(fault) -> None:
        if fault.between is not None:
            a, b = (
                _lookup(switch_ids, name, f"{fault.path}.between[{i}]", "switch")
                for i, name in enumerate(fault.between)
            )
            found = [x.id for x in plan.links if {x.src.switch, x.dst.switch} == {a, b} and a != b]
            if not found:
                raise SpecError(
                    f"{fault.path}.between",
                    f"no link joins {fault.between[0]} and {fault.between[1]}",
                )
            channels.update(found)
            return
        s = _lookup(switch_ids, fault.switch, f"{fault.path}.switch", "switch")
        radix = plan.switches[s].radix
        if fault.port >= radix:
            raise SpecError(
                f"{fault.path}.port",
                f"{fault.switch} has ports 0..{radix - 1}, got {fault.port}",
            )
        out = view.out_link[s][fault.port] if fault.side != "in" else None
        into = view.in_link[s][fault.port] if fault.side != "out" else None
        if out is None and into is None:
            sides = "" if fault.side == "both" else f" on its {fault.side}put side"
            raise SpecError(
                f"{fault.path}.port",
                f"{fault.switch}.p{fault.port} has no link{sides} (an endpoint's port or an"
                " unused one: use faults.attachments for an endpoint's)",
            )
        if fault.side == "both" and out is not None and into is not None:
            channels.update((out.id, into.id))
        else:
            channels.update(x.id for x in (out, into) if x is not None)

    def switch(fault) -> None:
        switches.add(_lookup(switch_ids, fault.name, fault.path, "switch"))

    named_chips = chips(plan) if faults.chips else {}

    def chip(fault) -> None:
        if not named_chips:
            raise SpecError(
                fault.path,
                f"a {plan.topology} fabric has no chips (Transit's RN1 chips have);"
                " use faults.switches",
            )
        halves = {
            plan.switches[s].name: members for members in named_chips.values() for s in members
        }
        switches.update(_lookup({**halves, **named_chips}, fault.name, fault.path, "chip"))

    def attachment(fault) -> None:
        e = _lookup(endpoint_ids, fault.endpoint, f"{fault.path}.endpoint", "endpoint")
        s = _lookup(switch_ids, fault.switch, f"{fault.path}.switch", "switch")
        found = [(e, i) for i, a in enumerate(plan.endpoints[e].attachments) if a.switch == s]
        if not found:
            raise SpecError(
                f"{fault.path}.switch", f"{fault.endpoint} is not attached to {fault.switch}"
            )
        attachments.update(found)

    for fault in faults.links:
        attempt(lambda fault=fault: link(fault))
    for fault in faults.switches:
        attempt(lambda fault=fault: switch(fault))
    for fault in faults.chips:
        attempt(lambda fault=fault: chip(fault))
    for fault in faults.attachments:
        attempt(lambda fault=fault: attachment(fault))
    if errors:
        raise SpecError.combine(errors)
    return DeadSet(frozenset(channels), frozenset(switches), frozenset(attachments))


# ---- the degraded plan ----------------------------------------------------------------------


def dead_channels(plan: FabricPlan, dead: DeadSet) -> set[int]:
    """The channels of ``plan`` that ``dead`` kills: its own and every one of a dead switch."""
    channels = set(dead.channels)
    channels.update(
        link.id
        for link in plan.links
        if link.src.switch in dead.switches or link.dst.switch in dead.switches
    )
    return channels


def degrade(plan: FabricPlan, dead: DeadSet) -> tuple[FabricPlan, list[int]]:
    """``plan`` without what ``dead`` names, and the endpoints cut off (no attachment left to
    inject or to receive through; they keep their attachments in the plan, so that a routing's
    tables still build, and the analysis walks no route to or from them). The routing is still
    the plan's own, its params marked ``degraded``."""
    channels = dead_channels(plan, dead)
    links = []
    for link in plan.links:
        if link.id not in channels:
            links.append(Link(len(links), link.src, link.dst, link.vcs, link.latency))
    endpoints, cut = [], []
    for endpoint in plan.endpoints:
        keep = [
            i
            for i, a in enumerate(endpoint.attachments)
            if (endpoint.id, i) not in dead.attachments and a.switch not in dead.switches
        ]
        modes = tuple(endpoint.mode(i) for i in keep) if endpoint.modes else ()
        survivor = Endpoint(
            endpoint.id, endpoint.name, tuple(endpoint.attachments[i] for i in keep), modes
        )
        sides = {survivor.mode(i) for i in range(len(keep))}
        if not keep or ("both" not in sides and sides != {"in", "out"}):
            cut.append(endpoint.id)
            survivor = endpoint  # attached as it was, for the routing's tables: never walked
        endpoints.append(survivor)
    # the routing's params say so: a routing that can avoid dead ends (Transit) looks for them
    routing = RoutingSpec(plan.routing.name, {**plan.routing.params, "degraded": True})
    return (
        dataclasses.replace(plan, links=tuple(links), endpoints=tuple(endpoints), routing=routing),
        cut,
    )


def _reach(plan: FabricPlan) -> list[int]:
    """Per switch, the switches its channels reach (itself included), as a bit mask."""
    following: list[set[int]] = [set() for _ in plan.switches]
    for link in plan.links:
        following[link.src.switch].add(link.dst.switch)
    graph = nx.DiGraph()
    graph.add_nodes_from(range(len(plan.switches)))
    graph.add_edges_from((a, b) for a, targets in enumerate(following) for b in targets)
    # one mask per strongly connected component, in reverse topological order of the DAG
    condensed = nx.condensation(graph)
    members = condensed.graph["mapping"]
    masks = [0] * condensed.number_of_nodes()
    for component in reversed(list(nx.topological_sort(condensed))):
        mask = 0
        for s in condensed.nodes[component]["members"]:
            mask |= 1 << s
        for after in condensed.successors(component):
            mask |= masks[after]
        masks[component] = mask
    return [masks[members[s]] for s in range(len(plan.switches))]


def disconnected_pairs(plan: FabricPlan, endpoints: Iterable[int] | None = None) -> list[tuple]:
    """The ordered pairs (src, dst) of ``endpoints`` (all: None) with no channel path from any
    switch ``src`` injects at to any switch ``dst`` receives at."""
    chosen = list(range(len(plan.endpoints)) if endpoints is None else endpoints)
    reach = _reach(plan)
    sources, targets = {}, {}
    for e in chosen:
        endpoint = plan.endpoints[e]
        mask = 0
        for i, a in enumerate(endpoint.attachments):
            if endpoint.injects(i):
                mask |= reach[a.switch]
        sources[e] = mask
        targets[e] = sum({1 << a.switch for a in endpoint.ejections})
    return [(s, d) for s in chosen for d in chosen if s != d and not sources[s] & targets[d]]


def pairs_text(plan: FabricPlan, pairs: list[tuple[int, int]]) -> str:
    """``p0->p5, p1->p5, ... (12 pairs)``: the first few pairs by name and how many."""
    names = [f"{plan.endpoints[s].name}->{plan.endpoints[d].name}" for s, d in pairs]
    shown = ", ".join(names[:SHOWN_PAIRS]) + (", ..." if len(names) > SHOWN_PAIRS else "")
    return f"{shown} ({len(pairs)} pair{'' if len(pairs) == 1 else 's'})"


def with_table_routing(plan: FabricPlan, because: str, root: int | None = None) -> FabricPlan:
    """``plan`` routed by up*/down* tables in place of its own routing (``because``: why)."""
    params: dict[str, Any] = {"replaces": plan.routing.name, "because": because, "degraded": True}
    if root is not None:
        params["root"] = root
    return dataclasses.replace(plan, routing=RoutingSpec(TABLE_ROUTING, params))


def own_routing_fails(
    plan: FabricPlan, prove: Callable[[FabricPlan], Any] | None = None
) -> str | None:
    """Why the plan's own routing does not survive (it does not deliver, or its channel
    dependencies have a cycle), or None if it is proven. ``prove``: the analysis (cached by
    default)."""
    try:
        analysis = (prove or routing_summary)(plan)
    except PlanError as error:
        return str(error)
    except LookupError as error:  # its tables assume a part the faults took away
        return f"its tables do not build on the degraded fabric ({error!r})"
    if analysis.cycle:
        return f"channel dependency cycle through {analysis.cycle[0]}"
    return None


def compile_degraded(plan: FabricPlan, faults: FaultSpec) -> FabricPlan:
    """The plan of a spec with ``faults``: degraded, refused when an endpoint is cut off (a
    SpecError) or pairs are disconnected (a PlanError naming them), routed as ``faults.routing``
    says."""
    plan, cut = degrade(plan, resolve(plan, faults))
    if cut:
        names = ", ".join(plan.endpoints[e].name for e in cut[:SHOWN_PAIRS])
        more = f" and {len(cut) - SHOWN_PAIRS} more" if len(cut) > SHOWN_PAIRS else ""
        raise SpecError(
            "faults",
            f"cut off endpoint{'s' if len(cut) > 1 else ''} {names}{more}: no attachment"
            " left to send or to receive through",
        )
    pairs = disconnected_pairs(plan)
    if pairs:
        raise PlanError(f"the faults disconnect {pairs_text(plan, pairs)}")
    if faults.routing == "own":
        return plan
    if faults.routing == "auto":
        why = own_routing_fails(plan)
        if why is None:
            return plan
    else:
        why = "faults.routing: table"
    return with_table_routing(plan, why, centre_switch(PlanView(plan)))


def plan_graph(plan: FabricPlan) -> nx.MultiGraph:
    """The plan's wiring as the builder draws it (nodes ``("sw", id)``, ``("ep", id)``; a
    one-way edge has ``one_way=(from, to)``): what the metrics read of a degraded plan."""
    graph = nx.MultiGraph()
    graph.add_nodes_from(("sw", s.id) for s in plan.switches)
    for group in link_groups(plan):
        link = plan.links[group[0]]
        ends = ("sw", link.src.switch), ("sw", link.dst.switch)
        graph.add_edge(*ends, **({} if len(group) == 2 else {"one_way": ends}))
    for endpoint in plan.endpoints:
        for i, a in enumerate(endpoint.attachments):
            ends = ("ep", endpoint.id), ("sw", a.switch)
            mode = endpoint.mode(i)
            attributes = {} if mode == "both" else {"one_way": ends if mode == "in" else ends[::-1]}
            graph.add_edge(*ends, **attributes)
    return graph


# ---- every single failure -----------------------------------------------------------------


def switch_levels(plan: FabricPlan) -> list[str | None]:
    """Per switch, the level bandwidth is counted into (None: the family has no levels): a
    tree's level; in Transit a leaf cluster, a bidelta stage, or a unit-tree layer's up chips,
    down level or cap."""
    levels: list[str | None] = []
    for switch in plan.switches:
        position = switch.position
        kind = position.get("kind")
        if plan.topology == "transit":
            if kind == "leaf":
                levels.append("leaf")
            elif kind == "bidelta":
                levels.append(f"stage {position['stage']}")
            elif kind == "down":
                levels.append(f"layer {position['layer']} level {position['level']}")
            else:  # up chips, cap chips
                levels.append(f"layer {position['layer']} {kind}")
        elif "level" in position:
            levels.append(f"level {position['level']}")
        else:
            levels.append(None)
    return levels


@dataclass(frozen=True)
class FailureResult:
    """One single failure: what died, what it disconnects, what it costs, and whether the
    degraded fabric is proven (``routing``: the routing proven on it, None if none is)."""

    what: str
    cut_off: tuple[str, ...]  # endpoints left with no way to send or receive
    disconnected: int  # ordered endpoint pairs with no path, the cut-off endpoints' included
    channels_lost: int
    lost: dict[str, tuple[int, int]]  # level -> (channels into it lost, channels into it)
    routing: str | None
    deadlock_free: bool | None  # None: not analysed (pairs are disconnected)
    problem: str | None  # why the family's routing did not survive, or why nothing is proven
    #: None: proven for this failure; else the failure whose proof a symmetry carried over
    #: and what it moved
    carried: str | None = None

    def report(self) -> dict[str, Any]:
        return {
            **dataclasses.asdict(self),
            "cut_off": list(self.cut_off),
            "lost": {level: list(pair) for level, pair in self.lost.items()},
        }


def failure_candidates(plan: FabricPlan, kind: str) -> list[tuple[str, DeadSet]]:
    """Every single failure of ``kind`` as (its name, what it kills)."""
    names = [s.name for s in plan.switches]
    if kind == "links":
        found = []
        for group in link_groups(plan):
            link = plan.links[group[0]]
            arrow = "<->" if len(group) == 2 else "->"
            text = f"{names[link.src.switch]}.p{link.src.port} {arrow} "
            text += f"{names[link.dst.switch]}.p{link.dst.port}"
            found.append((text, DeadSet(channels=frozenset(group))))
        return found
    if kind == "switches":
        return [(f"switch {s.name}", DeadSet(switches=frozenset({s.id}))) for s in plan.switches]
    named = chips(plan)
    if not named:
        raise SpecError("--single", f"chips: a {plan.topology} fabric has no chips")
    return [(f"chip {name}", DeadSet(switches=frozenset(ids))) for name, ids in named.items()]


def fault_entry(plan: FabricPlan, dead: DeadSet) -> dict[str, list]:
    """A single failure of :func:`failure_candidates` as a ``faults:`` section says it (the
    model runs a spec with it added)."""
    names = [s.name for s in plan.switches]
    if dead.channels:
        first = plan.links[min(dead.channels)]
        entry: dict[str, Any] = {"switch": names[first.src.switch], "port": first.src.port}
        if len(dead.channels) == 1:
            entry["side"] = "out"
        return {"links": [entry]}
    for name, members in chips(plan).items():
        if set(members) == dead.switches and len(members) > 1:
            return {"chips": [name]}
    return {"switches": [names[s] for s in sorted(dead.switches)]}


class _Failing:
    """What every single failure of one plan reads: the levels' channels, the tables' root."""

    def __init__(self, plan: FabricPlan):
        self.plan = plan
        levels = switch_levels(plan)
        self.into: dict[str, list[int]] = {}  # level -> the channels entering it from another
        for link in plan.links:
            a, b = levels[link.src.switch], levels[link.dst.switch]
            if b is not None and a != b:
                self.into.setdefault(b, []).append(link.id)
        self.root = centre_switch(PlanView(plan))

    def counted(self, what: str, dead: DeadSet) -> tuple[FailureResult, FabricPlan, list[int]]:
        """The failure's counts, no routing yet (``problem`` set when there is nothing to
        prove: pairs disconnected), its degraded plan and the endpoints left."""
        plan, n = self.plan, len(self.plan.endpoints)
        channels = dead_channels(plan, dead)
        degraded, cut = degrade(plan, dead)
        survivors = [e for e in range(n) if e not in set(cut)]
        pairs = disconnected_pairs(degraded, survivors)
        m = len(survivors)
        problem = None
        if pairs:
            problem = f"disconnects {pairs_text(degraded, pairs)}"
        elif m < 2:
            problem = "fewer than two endpoints left"
        result = FailureResult(
            what=what,
            cut_off=tuple(plan.endpoints[e].name for e in cut),
            disconnected=n * (n - 1) - m * (m - 1) + len(pairs),
            channels_lost=len(channels),
            lost={
                level: (len(channels.intersection(ids)), len(ids))
                for level, ids in sorted(self.into.items())
            },
            routing=None,
            deadlock_free=None,
            problem=problem,
        )
        return result, degraded, survivors

    @staticmethod
    def own(degraded: FabricPlan, survivors: list[int]) -> str | None:
        """Why the family's routing does not survive, None if it is proven; walked in this
        process (a routing that does not survive stops at its first dead end, sooner than a
        pool of processes starts: 0.014 s against 0.13 s on the torus 16x16)."""
        prove = functools.partial(analyse_routing, endpoints=survivors, workers=1)
        return own_routing_fails(degraded, prove)

    def table_root(self, degraded: FabricPlan, dead: DeadSet) -> int:
        """The intact plan's centre, or the degraded plan's where the failure killed it."""
        return self.root if self.root not in dead.switches else centre_switch(PlanView(degraded))

    @staticmethod
    def table(
        degraded: FabricPlan, survivors: list[int], because: str, root: int
    ) -> tuple[bool | None, str | None]:
        """(deadlock-free, None) under up*/down* tables from ``root``, or (None, why not)."""
        try:
            table = with_table_routing(degraded, because, root)
            return analyse_routing(table, endpoints=survivors).deadlock_free, None
        except PlanError as error:
            return None, str(error)

    def proven(
        self, result: FailureResult, degraded: FabricPlan, survivors: list[int], dead: DeadSet
    ) -> FailureResult:
        """``result`` (counted, something to prove) with the family's routing if it is
        proven, else the tables'."""
        problem = self.own(degraded, survivors)
        if problem is None:
            return dataclasses.replace(result, routing=self.plan.routing.name, deadlock_free=True)
        free, error = self.table(degraded, survivors, problem, self.table_root(degraded, dead))
        if error is not None:
            return dataclasses.replace(result, problem=f"{problem}; {TABLE_ROUTING}: {error}")
        return dataclasses.replace(
            result, routing=TABLE_ROUTING, deadlock_free=free, problem=problem
        )

    def full(self, what: str, dead: DeadSet) -> FailureResult:
        """The failure computed from scratch."""
        result, degraded, survivors = self.counted(what, dead)
        return result if result.problem else self.proven(result, degraded, survivors, dead)


@dataclass
class _FailureOrbits:
    """Orbits of failure candidates under a group's generators: per candidate, the first
    candidate of its orbit and the switch map (a group element) taking that one onto it."""

    head: list[int]
    moves: list[np.ndarray]

    @classmethod
    def of(
        cls, candidates: list[tuple[str, DeadSet]], generators: list[Any], switches: int
    ) -> _FailureOrbits:
        """Breadth first from each orbit's first candidate; an image that is no candidate (a
        sample's) is left out."""
        keys = {(dead.channels, dead.switches): i for i, (_, dead) in enumerate(candidates)}
        maps = [(g.switch.tolist(), g.link.tolist()) for g in generators]
        head = [-1] * len(candidates)
        moves: list[np.ndarray] = [np.arange(switches)] * len(candidates)
        for start in range(len(candidates)):
            if head[start] >= 0:
                continue
            head[start] = start
            orbit = [start]
            for member in orbit:  # grows as it goes
                dead = candidates[member][1]
                for generator, (switch, link) in zip(generators, maps, strict=True):
                    image = keys.get(
                        (
                            frozenset(link[c] for c in dead.channels),
                            frozenset(switch[s] for s in dead.switches),
                        )
                    )
                    if image is not None and head[image] < 0:
                        head[image] = start
                        moves[image] = generator.switch[moves[member]]
                        orbit.append(image)
        return cls(head, moves)

    def between(self, a: int, b: int) -> np.ndarray:
        """The switch map taking candidate ``a`` onto ``b`` (one orbit)."""
        back = np.empty_like(self.moves[a])
        back[self.moves[a]] = np.arange(len(back))
        return self.moves[b][back]


class _Carried:
    """The proofs a symmetry group carries from failure to failure (:func:`single_failures`):
    per orbit of the family's own symmetries its routing's verdict, per orbit of the port
    symmetries the up*/down* tables' proof, each from the orbit's first failure that needed
    it."""

    def __init__(
        self,
        failing: _Failing,
        candidates: list[tuple[str, DeadSet]],
        ports: SymmetryGroup,
        own: SymmetryGroup | None,
    ):
        self.failing, self.candidates = failing, candidates
        self.names = [what for what, _ in candidates]
        switches = len(failing.plan.switches)
        self.by_ports = _FailureOrbits.of(candidates, ports.generators, switches)
        self.by_own = _FailureOrbits.of(candidates, own.generators if own else [], switches)
        self.own: dict[int, str | None] = {}  # an orbit's first failure -> its routing's verdict
        # an orbit -> the failure whose tables were proven: it, their root, verdict, error
        self.tables: dict[int, tuple[int, int, bool | None, str | None]] = {}

    def proven(
        self,
        i: int,
        result: FailureResult,
        degraded: FabricPlan,
        survivors: list[int],
        dead: DeadSet,
    ) -> FailureResult:
        """Failure ``i``'s ``result`` (counted, something to prove) with a proof carried from
        its orbit's where there is one (``carried`` says whose and what), else its own."""
        plan, failing, names = self.failing.plan, self.failing, self.names
        carried = []
        first = self.by_own.head[i]
        if first == i:
            self.own[i] = failing.own(degraded, survivors)
        elif first not in self.own:
            raise _not_carried(
                plan, names[i], names[first], "one has a routing to prove, the other none"
            )
        problem = self.own[first]
        if first != i:
            carried.append(f"{plan.routing.name}'s proof from {names[first]}")
            if problem is not None:
                problem = f"as for {names[first]}: {problem}"
        if problem is None:
            result = dataclasses.replace(result, routing=plan.routing.name, deadlock_free=True)
        else:
            orbit = self.by_ports.head[i]
            if orbit not in self.tables:
                root = failing.table_root(degraded, dead)
                self.tables[orbit] = (i, root, *failing.table(degraded, survivors, problem, root))
            source, root, free, error = self.tables[orbit]
            if source != i:
                root = int(self.by_ports.between(source, i)[root])
                carried.append(
                    f"the up*/down* tables of {names[source]} moved, rooted at"
                    f" {plan.switches[root].name}, and their proof"
                )
                if error is not None:
                    error = f"as for {names[source]}: {error}"
            if error is not None:
                result = dataclasses.replace(result, problem=f"{problem}; {TABLE_ROUTING}: {error}")
            else:
                result = dataclasses.replace(
                    result, routing=TABLE_ROUTING, deadlock_free=free, problem=problem
                )
        if not carried:
            return result
        return dataclasses.replace(
            result, carried=f"by a symmetry of the fabric: {'; '.join(carried)}"
        )

    def spot_check(self, results: list[FailureResult], seed: int) -> None:
        """:data:`~zfabric.symmetry.SPOT_CHECKS` failures whose proof was carried over (chosen
        by ``seed``) computed from scratch: a field of :data:`COMPARED` that differs is an
        error naming the family."""
        carried = [i for i, result in enumerate(results) if result.carried is not None]
        for i in sorted(random.Random(seed).sample(carried, min(SPOT_CHECKS, len(carried)))):
            full, result = self.failing.full(*self.candidates[i]), results[i]
            for name in COMPARED:
                if getattr(full, name) != getattr(result, name):
                    raise _not_carried(
                        self.failing.plan,
                        result.what,
                        str(result.carried),
                        f"{name} {getattr(full, name)!r} from scratch,"
                        f" {getattr(result, name)!r} carried over",
                    )


#: the fields of a failure's result that do not depend on the tables' root
COMPARED = ("cut_off", "disconnected", "channels_lost", "lost", "routing", "deadlock_free")


def single_failures(
    plan: FabricPlan,
    kind: str,
    *,
    progress: Callable[[int, int], None] | None = None,
    candidates: list[tuple[str, DeadSet]] | None = None,
    symmetry: bool = True,
    seed: int = 1,
) -> list[FailureResult]:
    """Fail every link, switch or chip (``kind``) of ``plan`` in turn (``candidates``: these
    of :func:`failure_candidates` only).

    ``symmetry``: a failure that an automorphism g of the plan (a symmetry its routing
    declares, VCs ignored) maps from an earlier one e has its counts computed, and e's proof
    carried over: e's up*/down* tables moved by g are tables of its degraded fabric, rooted
    at g(root), their dependency graph g's image of e's; the family's routing carries over
    only where g is among the symmetries it commutes with (VCs included), else it is proven
    here. :data:`~zfabric.symmetry.SPOT_CHECKS` carried failures (chosen by ``seed``) are
    computed from scratch too and must agree (a :class:`PlanError` naming the family). False
    computes every failure from scratch."""
    if candidates is None:
        candidates = failure_candidates(plan, kind)
    failing = _Failing(plan)
    ports = symmetry_group_of(plan, ports=True) if symmetry else None
    carrier = (
        None if ports is None else _Carried(failing, candidates, ports, symmetry_group_of(plan))
    )
    results = []
    for i, (what, dead) in enumerate(candidates):
        result, degraded, survivors = failing.counted(what, dead)
        if result.problem is None:
            if carrier is None:
                result = failing.proven(result, degraded, survivors, dead)
            else:
                result = carrier.proven(i, result, degraded, survivors, dead)
        results.append(result)
        if progress:
            progress(i + 1, len(candidates))
    if carrier is not None:
        carrier.spot_check(results, seed)
    return results


def _not_carried(plan: FabricPlan, what: str, source: str, why: str) -> PlanError:
    return PlanError(
        f"the {plan.topology} {plan.routing.name} symmetries do not carry single failures"
        f" over: {what} (from {source}): {why}"
    )
