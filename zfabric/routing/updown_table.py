"""Up*/down* routing computed from the channels a plan has: the routing of a degraded fabric.

M. D. Schroeder et al., "Autonet: a high-speed, self-configuring local area network using
point-to-point links", IEEE JSAC 9(8), 1991: the switches are ordered by their distance from a
root switch (ties by id), a channel toward a smaller switch in that order goes *up*, the others
*down*, and a route takes up channels and then down channels only. Its channel dependencies
then run up the order and down it, never back up, so they have no cycle, whatever the graph.

Links with several VCs buy shorter routes: VC c is class c, and a route may turn from down back
to up by moving to the next class (c + 1), so with C classes a route is at most C up*/down*
segments. The dependencies stay acyclic: inside a class as above, and from class c only to
classes > c. Every table is computed from the plan alone (no family's addressing), so it works
for any family and any set of dead links and switches (:mod:`zfabric.faults`); a switch routes
on the destination id, its phase (the input channel's direction) and its class (the input VC).

The route of a head is the shortest one the rules allow, computed per destination by a
breadth-first search backward from the destination's switches over the states (switch, phase,
class); among equal next hops the lowest port wins, so the routing is deterministic.
"""

from __future__ import annotations

import functools
from collections import deque
from collections.abc import Hashable

from ..plan import PlanView
from .base import Decision, Hop, Injection, RoutingFunction, routing

__all__ = ["UpDownTable", "centre_switch"]

UP, DOWN = 0, 1


def centre_switch(view: PlanView) -> int:
    """The root: a switch of least eccentricity over the links taken both ways (the lowest id
    among them), so that up*/down* routes stay short; switches without links are skipped."""
    neighbours = _undirected(view)
    best, best_reach = 0, (-1, 0)
    for start in range(len(view.switches)):
        if not neighbours[start]:
            continue
        distance = _distances(neighbours, start)
        # reach as many switches as possible, then as near as possible
        reach = (len(distance), -max(distance.values()))
        if reach > best_reach:
            best, best_reach = start, reach
    return best


def _undirected(view: PlanView) -> list[set[int]]:
    neighbours: list[set[int]] = [set() for _ in view.switches]
    for link in view.plan.links:
        neighbours[link.src.switch].add(link.dst.switch)
        neighbours[link.dst.switch].add(link.src.switch)
    return neighbours


def _distances(neighbours: list[set[int]], start: int) -> dict[int, int]:
    distance = {start: 0}
    queue = deque([start])
    while queue:
        switch = queue.popleft()
        for other in neighbours[switch]:
            if other not in distance:
                distance[other] = distance[switch] + 1
                queue.append(other)
    return distance


@routing("updown_table")
class UpDownTable(RoutingFunction):
    """Up*/down* with VC classes, from tables computed on the plan's channels."""

    uses_input_port = True
    uses_input_vc = True
    one_port = True
    #: no table route unit is generated from a plan yet
    rtl = False

    def __init__(self, view: PlanView):
        super().__init__(view)
        plan = view.plan
        neighbours = _undirected(view)
        root = self.params.get("root")
        self.root = centre_switch(view) if root is None else root
        #: per switch: its place in the order (component, distance from its root, id); a part
        #: the root does not reach (a Znode's other layer, which meets it only at the
        #: processors) is ordered from a root of its own, its lowest switch
        order: list[tuple[int, int, int]] = [(0, 0, 0)] * len(view.switches)
        placed: set[int] = set()
        for part, start in enumerate([self.root, *range(len(view.switches))]):
            if start in placed:
                continue
            distance = _distances(neighbours, start)
            placed.update(distance)
            for switch, hops in distance.items():
                order[switch] = (part, hops, switch)
        #: per channel: UP or DOWN
        self.direction = [
            UP if order[link.dst.switch] < order[link.src.switch] else DOWN for link in plan.links
        ]
        self.classes = max(1, min((link.vcs for link in plan.links), default=1))
        #: per switch: (port, link) of every output channel, by port
        self.outputs = [
            [(port, link) for port, link in enumerate(view.out_link[s]) if link is not None]
            for s in range(len(view.switches))
        ]
        #: per endpoint: the switches it receives at
        self.hosts = [{a.switch for a in e.ejections} for e in plan.endpoints]
        self._tables: dict[int, dict[tuple[int, int, int], Hop]] = {}

    def _next(self, phase: int, vc_class: int, link) -> tuple[int, int] | None:
        """The (phase, class) after taking ``link`` from (``phase``, ``vc_class``), or None."""
        if self.direction[link.id] == DOWN:
            return DOWN, vc_class
        if phase == UP:
            return UP, vc_class
        if vc_class + 1 < self.classes:
            return UP, vc_class + 1
        return None

    @functools.cached_property
    def _into(self) -> dict[tuple[int, int, int], list[tuple[int, int, int]]]:
        """State -> the states one channel before it (the search's edges, backward)."""
        into: dict[tuple[int, int, int], list[tuple[int, int, int]]] = {}
        for switch, outputs in enumerate(self.outputs):
            for phase in (UP, DOWN):
                for vc_class in range(self.classes):
                    for _, link in outputs:
                        after = self._next(phase, vc_class, link)
                        if after is not None:
                            target = (link.dst.switch, *after)
                            into.setdefault(target, []).append((switch, phase, vc_class))
        return into

    def table(self, dst: int) -> dict[tuple[int, int, int], Hop]:
        """(switch, phase, class) -> the hop toward ``dst`` (absent: no legal route)."""
        if dst in self._tables:
            return self._tables[dst]
        into = self._into
        distance: dict[tuple[int, int, int], int] = {}
        queue: deque[tuple[int, int, int]] = deque()
        for switch in sorted(self.hosts[dst]):
            for phase in (UP, DOWN):
                for vc_class in range(self.classes):
                    distance[(switch, phase, vc_class)] = 0
                    queue.append((switch, phase, vc_class))
        while queue:
            state = queue.popleft()
            for before in into.get(state, ()):
                if before not in distance:
                    distance[before] = distance[state] + 1
                    queue.append(before)
        table: dict[tuple[int, int, int], Hop] = {}
        for (switch, phase, vc_class), cost in distance.items():
            if cost == 0:
                table[(switch, phase, vc_class)] = self.local_hop(switch, dst)
                continue
            for port, link in self.outputs[switch]:  # by port: the lowest of the best wins
                after = self._next(phase, vc_class, link)
                if after is not None and distance.get((link.dst.switch, *after)) == cost - 1:
                    table[(switch, phase, vc_class)] = Hop(port, (after[1],))
                    break
        self._tables[dst] = table
        return table

    def injections(self, src: int, dst: int) -> tuple[Injection, ...]:
        endpoint = self.view.plan.endpoints[src]
        return tuple(
            Injection(a.switch, a.port, dst)
            for i, a in enumerate(endpoint.attachments)
            if endpoint.injects(i)
        )

    def _state(self, switch: int, in_port: int, in_vc: int) -> tuple[int, int, int]:
        link = self.view.in_link[switch][in_port]
        if link is None:  # injected: the route starts climbing in class 0
            return switch, UP, 0
        return switch, self.direction[link.id], in_vc

    def route(self, switch: int, in_port: int, in_vc: int, head: int) -> Decision:
        hop = self.table(head).get(self._state(switch, in_port, in_vc))
        return Decision(() if hop is None else (hop,), head)

    def state_key(self, switch: int, in_port: int, in_vc: int, head: int) -> Hashable:
        """``route`` sees the input only through its phase and class."""
        return (*self._state(switch, in_port, in_vc), head)
