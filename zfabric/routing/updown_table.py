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
    #: its route units are tables (hdl/router/route: one per input state, phase and class)
    avoids_dead_ends = True

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
        #: per endpoint: the switches it receives at
        self.hosts = [{a.switch for a in e.ejections} for e in plan.endpoints]
        self._tables: dict[int, list[Hop | None]] = {}

    def _id(self, switch: int, phase: int, vc_class: int) -> int:
        """A state's index: (switch, phase, class) in one integer."""
        return (2 * switch + phase) * self.classes + vc_class

    @functools.cached_property
    def _moves(self) -> list[list[tuple[int, int, int]]]:
        """Per state, the (port, state after, VC) of every channel it may take, by port."""
        moves: list[list[tuple[int, int, int]]] = []
        for switch in range(len(self.view.switches)):
            for phase in (UP, DOWN):
                for vc_class in range(self.classes):
                    here = []
                    for port, link in enumerate(self.view.out_link[switch]):
                        if link is None:
                            continue
                        if self.direction[link.id] == DOWN:
                            after = (DOWN, vc_class)
                        elif phase == UP:
                            after = (UP, vc_class)
                        elif vc_class + 1 < self.classes:  # down, then up: the next class
                            after = (UP, vc_class + 1)
                        else:
                            continue
                        here.append((port, self._id(link.dst.switch, *after), after[1]))
                    moves.append(here)
        return moves

    @functools.cached_property
    def _into(self) -> list[list[int]]:
        """Per state, the states one channel before it (the search's edges, backward)."""
        into: list[list[int]] = [[] for _ in self._moves]
        for state, moves in enumerate(self._moves):
            for _, after, _ in moves:
                into[after].append(state)
        return into

    def table(self, dst: int) -> list[Hop | None]:
        """Per state, the hop toward ``dst`` (None: no legal route from there)."""
        if dst in self._tables:
            return self._tables[dst]
        into, moves = self._into, self._moves
        distance = [-1] * len(moves)
        table: list[Hop | None] = [None] * len(moves)
        queue: deque[int] = deque()
        for switch in sorted(self.hosts[dst]):
            hop = self.local_hop(switch, dst)
            for state in range(self._id(switch, UP, 0), self._id(switch + 1, UP, 0)):
                distance[state] = 0
                table[state] = hop
                queue.append(state)
        while queue:
            state = queue.popleft()
            for before in into[state]:
                if distance[before] < 0:
                    distance[before] = distance[state] + 1
                    queue.append(before)
        for state, cost in enumerate(distance):
            if cost > 0:  # the lowest port of the best next states
                port, vc = next((p, v) for p, a, v in moves[state] if distance[a] == cost - 1)
                table[state] = Hop(port, (vc,))
        self._tables[dst] = table
        return table

    def injections(self, src: int, dst: int) -> tuple[Injection, ...]:
        """Every attachment ``src`` injects through from which ``dst`` has a route (a Znode
        layer cut from the destination's switch offers none)."""
        endpoint = self.view.plan.endpoints[src]
        table = self.table(dst)
        return tuple(
            Injection(a.switch, a.port, dst)
            for i, a in enumerate(endpoint.attachments)
            if endpoint.injects(i) and table[self._id(a.switch, UP, 0)] is not None
        )

    def _state(self, switch: int, in_port: int, in_vc: int) -> int:
        link = self.view.in_link[switch][in_port]
        if link is None:  # injected: the route starts climbing in class 0
            return self._id(switch, UP, 0)
        return self._id(switch, self.direction[link.id], in_vc)

    def route(self, switch: int, in_port: int, in_vc: int, head: int) -> Decision:
        hop = self.table(head)[self._state(switch, in_port, in_vc)]
        return Decision(() if hop is None else (hop,), head)

    def state_key(self, switch: int, in_port: int, in_vc: int, head: int) -> Hashable:
        """``route`` sees the input only through its phase and class."""
        return self._state(switch, in_port, in_vc), head
