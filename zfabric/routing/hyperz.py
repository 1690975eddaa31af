"""HyperZ routings (digest ``reference/hyperz-transit.md`` §2, seed 001 L128-L178): ``odim``,
``cliod``, ``aliod`` and the deterministic baseline ``deter``.

Every switch decides from what it holds: its GHC coordinates (a_1..a_d), compared field by
field with the destination's, give the offset set O (Def 4.2); its level i and zone give the
tree part: the destination processor Y is below this switch's level-i zone iff zone ==
Y // (z_1 ... z_i), i.e. the packet has reached its lowest common level (LCL) and may go down.
Side links keep the flat address, so the LCL is the same in every Z-node. All four are minimal:
2 LCL + |O| links processor to processor.

- ``odim`` (ODim, 001:L196): up adaptively (any up port) until the LCL; there the side ports of
  dimension min(O) (ordered dimensions, lowest first), until O is empty; then down.
- ``deter`` (the paper's "Deter", DRR of [21], not defined in 001; digest H8): ODim with one
  port per decision: the up port by D-mod-K (``Y // m_i mod u_i``, u_i the up ports of level i,
  m_i the product of u_j below), the lane and the parallel down link ``Y mod`` their count,
  and one injection attachment (``dst mod`` the attachments). Deterministic, so it stands in
  for DRR; for h = 1 it is ODim with one lane, as the paper's Deter is ODim there.
- ``cliod`` (001:L152): up adaptively until the LCL; there every offset dimension's side ports
  (an *idle* one is taken first), ODim's when none is free; then down.
- ``aliod`` (Table 1, 001:L158-L176): O empty: up to the LCL then down. Otherwise every offset
  dimension's side ports at the current level, then Up (below the LCL) or Down (at or above it,
  not at level 1): "Side-ODim" is side(min O), first of the sides.

Candidates and VCs. ``odim`` and ``deter`` use every VC of every link (``vcs`` of the topology,
1 by default): up*, side hops in ascending dimension at one level, down*: channel ranks
strictly increase, so the CDG is acyclic (Dally and Seitz). ``cliod`` and ``aliod`` are
Duato routings: a link's first ``vcs`` VCs are the escape set, ``adaptive_vcs`` (routing
option, default 1) follow. A decision offers every candidate above on the adaptive VCs, then the
escape sub-function's on the escape VCs (digest §2 "Recommended"):

- ``cliod``'s escape is ODim itself: up, side(min O) at the LCL, down. Escape channel order
  up (level ascending) < side (dimension ascending) < down (level descending).
- ``aliod``'s escape: if O is non-empty the side hop in dimension min(O) *at the current
  level* (every q_ik >= 1, so it exists), else up to the LCL, then down. A packet holding an
  escape side channel of dimension k = min(O) only ever needs dimensions > k, and the escape up
  and down channels are only offered with O empty, so side (dimension ascending) < up < down
  orders the extended CDG.

``adaptive_vcs: 0`` offers the whole routing on every VC with every channel an escape channel:
then the proof checks the plain CDG, which has cycles for ``cliod`` as soon as two dimensions
can be crossed in either order (d >= 2), and for ``aliod`` also with one dimension when h >= 2
(side hops between up and down hops at different levels close a cycle, digest §2): ``check``
exits 1 with the cycle printed.

Selection (docs/microarchitecture.md step 2). The paper's "idle offset dimension" is a side
candidate with a free VC and a credit now: the switch's ``first-free`` selection takes the
first such candidate in the order above, which is the paper's rule (idle dimension first, the
escape hop only when no adaptive one is free). ``round-robin`` (the default) also only takes
free candidates, but rotates among them. ALIOD's "shortest queue among {Up, Side-ODim}" and
CLIOD's random choice among idle dimensions are approximated by ``occupancy``: the adaptive
candidates with more than half their downstream buffer free first, round-robin among equals,
the escape VCs last (:meth:`~zfabric.routing.base.RoutingFunction.priority`).
"""

from __future__ import annotations

import math
from typing import Any

from ..errors import SpecError
from ..fields import Reader, integer
from ..symmetry import Symmetry
from ..topologies.hyperz import coordinate_permutation, processor_permutation
from ..topologies.torus import coordinates
from .base import MAX_VCS, Decision, Hop, Injection, RoutingFunction, routing

__all__ = ["HyperzRouting", "ODim", "Deter", "CLIOD", "ALIOD", "DEFAULT_ADAPTIVE_VCS"]

#: adaptive VCs per link of ``cliod`` and ``aliod`` when the spec names none
DEFAULT_ADAPTIVE_VCS = 1

Ports = tuple[int, ...]


class HyperzRouting(RoutingFunction):
    """What every HyperZ routing reads: per switch its coordinates, level, zone and port groups
    (up, down by child label, side by (dimension, target coordinate)); per endpoint its Z-node
    coordinates and flat address. Subclasses give :meth:`moves`."""

    def __init__(self, view):
        super().__init__(view)
        z, s = tuple(self.params["z"]), tuple(self.params["s"])
        self.d = len(s)
        self.z = z
        self.under = [math.prod(z[:i]) for i in range(len(z) + 1)]  # processors per zone
        escape = self.params["vcs"]
        adaptive = self.params.get("adaptive_vcs", 0)
        self.escape_count = escape if adaptive else MAX_VCS  # every VC escapes without adaptive
        self.adaptive = adaptive > 0
        self.escape_vcs = tuple(range(escape))
        self.adaptive_vcs = tuple(range(escape, escape + adaptive))
        everywhere = coordinates(s)
        zone_size = math.prod(z)
        #: per endpoint: (coords, flat address Y)
        self.dst = [(everywhere[e.id // zone_size], e.id % zone_size) for e in view.plan.endpoints]
        self.attachments = [
            [(a.switch, a.port) for a in e.attachments] for e in view.plan.endpoints
        ]
        self.coords = [tuple(sw.position["coords"]) for sw in view.switches]
        self.level = [sw.position["level"] for sw in view.switches]
        self.zone = [sw.position["zone"] for sw in view.switches]
        self.up: list[Ports] = []
        self.down: list[dict[int, Ports]] = []
        self.side: list[dict[tuple[int, int], Ports]] = []
        for sw in view.switches:
            up, down, side = [], {}, {}
            for index, port in enumerate(sw.ports):
                if port.role == "up":
                    up.append(index)
                elif port.role in ("down", "local"):
                    down.setdefault(port.group, []).append(index)
                else:
                    side.setdefault((port.dim, port.group), []).append(index)
            self.up.append(tuple(up))
            self.down.append({g: tuple(p) for g, p in down.items()})
            self.side.append({g: tuple(p) for g, p in side.items()})

    @classmethod
    def parse_params(cls, reader: Reader, topology_params: Any) -> dict[str, Any]:
        if not cls.adaptive:
            return {}
        given = reader.has("adaptive_vcs")
        value = reader.get("adaptive_vcs", integer(0, MAX_VCS), DEFAULT_ADAPTIVE_VCS)
        if topology_params.vcs + value > MAX_VCS:
            what = f"{value} adaptive VCs" if given else f"the default {value} adaptive VC"
            raise SpecError(
                reader.key("adaptive_vcs"),
                f"{what} after {topology_params.vcs} escape VCs (topology vcs) make"
                f" {topology_params.vcs + value} VCs per link, at most {MAX_VCS}",
            )
        return {"adaptive_vcs": value}

    def is_escape(self, link: int, vc: int) -> bool:
        return vc < self.escape_count

    #: decisions read a processor's place under its level-1 switch only to deliver (not D-mod-K)
    processors_alike: bool = True

    def symmetries(self) -> tuple[Symmetry, ...]:
        """Every permutation of a dimension's coordinate values (a switch compares coordinates
        for equality only, and side ports go to every other value) and, unless
        :attr:`processors_alike` is off, of the processors under each level-1 switch (above
        level 1 a decision reads a processor's zone, not its place in it): generated by a
        transposition and a cycle each."""
        plan = self.view.plan
        result = [
            coordinate_permutation(plan, dim, values)
            for dim, size in enumerate(self.params["s"])
            for values in _generators(size)
        ]
        if self.processors_alike:
            result += [processor_permutation(plan, values) for values in _generators(self.z[0])]
        return tuple(result)

    def injections(self, src: int, dst: int) -> tuple[Injection, ...]:
        return tuple(Injection(switch, port, dst) for switch, port in self.attachments[src])

    # ---- what a switch sees --------------------------------------------------------------

    def offsets(self, switch: int, dst: int) -> list[int]:
        """O: the dimensions (0-based, ascending) where this Z-node and the destination's
        differ (one comparator per dimension)."""
        here, there = self.coords[switch], self.dst[dst][0]
        return [k for k in range(self.d) if here[k] != there[k]]

    def reached(self, switch: int, dst: int) -> bool:
        """The destination processor is below this switch's zone: the LCL is reached."""
        return self.zone[switch] == self.dst[dst][1] // self.under[self.level[switch]]

    def down_ports(self, switch: int, dst: int) -> Ports:
        level, flat = self.level[switch], self.dst[dst][1]
        return self.down[switch][(flat // self.under[level - 1]) % self.z[level - 1]]

    def side_ports(self, switch: int, dim: int, dst: int) -> Ports:
        return self.side[switch][(dim, self.dst[dst][0][dim])]

    def moves(self, switch: int, dst: int) -> tuple[list[Ports], list[Ports]]:
        """(the routing's port groups in priority order, the escape sub-function's)."""
        raise NotImplementedError

    def route(self, switch: int, in_port: int, in_vc: int, head: int) -> Decision:
        if (
            self.level[switch] == 1
            and self.reached(switch, head)
            and not self.offsets(switch, head)
        ):
            return Decision((self.local_hop(switch, head),), head)
        moves, escape = self.moves(switch, head)
        if not self.adaptive:
            vcs = self.escape_vcs
            return Decision(tuple(Hop(p, vcs) for move in moves for p in move), head)
        hops = [Hop(p, self.adaptive_vcs) for move in moves for p in move]
        hops += [Hop(p, self.escape_vcs) for move in escape for p in move]
        return Decision(tuple(hops), head)


def _generators(size: int) -> list[tuple[int, ...]]:
    """A transposition and a cycle: together they span every permutation of ``size`` values."""
    if size < 2:
        return []
    swap = (1, 0, *range(2, size))
    cycle = (*range(1, size), 0)
    return [swap] if size == 2 else [swap, cycle]


def _odim(rf: HyperzRouting, switch: int, dst: int) -> list[Ports]:
    """ODim's one move: up below the LCL, side(min O) at it, then down."""
    if not rf.reached(switch, dst):
        return [rf.up[switch]]
    offsets = rf.offsets(switch, dst)
    if offsets:
        return [rf.side_ports(switch, offsets[0], dst)]
    return [rf.down_ports(switch, dst)]


@routing("odim")
class ODim(HyperzRouting):
    """Adaptive up to the LCL, the offset dimensions in ascending order there, then down."""

    def moves(self, switch: int, dst: int) -> tuple[list[Ports], list[Ports]]:
        move = _odim(self, switch, dst)
        return move, move


@routing("deter")
class Deter(HyperzRouting):
    """ODim with D-mod-K up ports and one lane and down link per destination."""

    one_port = True
    processors_alike = False  # D-mod-K reads the processor's place

    def __init__(self, view):
        super().__init__(view)
        ups: dict[int, int] = {}
        for switch, level in enumerate(self.level):
            ups[level] = len(self.up[switch])
        #: m_i: the product of the up-port counts of the levels below level i
        self.spread = [1]
        for level in range(1, max(ups) + 1):
            self.spread.append(self.spread[-1] * max(ups[level], 1))

    def injections(self, src: int, dst: int) -> tuple[Injection, ...]:
        switch, port = self.attachments[src][dst % len(self.attachments[src])]
        return (Injection(switch, port, dst),)

    def moves(self, switch: int, dst: int) -> tuple[list[Ports], list[Ports]]:
        (ports,) = _odim(self, switch, dst)
        flat = self.dst[dst][1]
        if self.reached(switch, dst):
            pick = flat % len(ports)
        else:
            pick = (flat // self.spread[self.level[switch] - 1]) % len(ports)
        move = [(ports[pick],)]
        return move, move

    def symmetries(self) -> tuple[Symmetry, ...]:
        """The coordinate permutations where injecting at attachment ``dst mod`` their count
        does not read the Z-node (a Z-node's processors a multiple of that count)."""
        zone_size = math.prod(self.z)
        if any(zone_size % len(places) for places in self.attachments):
            return ()
        return super().symmetries()


@routing("cliod")
class CLIOD(HyperzRouting):
    """Up to the LCL; there any offset dimension (escape: ODim's); then down."""

    adaptive = True

    def moves(self, switch: int, dst: int) -> tuple[list[Ports], list[Ports]]:
        escape = _odim(self, switch, dst)
        offsets = self.offsets(switch, dst)
        if self.reached(switch, dst) and offsets:
            return [self.side_ports(switch, k, dst) for k in offsets], escape
        return escape, escape


@routing("aliod")
class ALIOD(HyperzRouting):
    """Table 1: offset dimensions at any level, alternating with up (below the LCL) or down
    (at or above it); escape: side(min O) at the current level, else up, then down.

    Recoil (001 §5.4, the Z-tree's recoil of Adda and Peratikou): on a degraded fabric, at a
    switch where every side link of dimension min(O) toward the destination is dead, the escape
    climbs (or, with no working level above, descends) inside the Z-node toward a switch whose
    link of that dimension works, and crosses there; the adaptive up and down moves only lead
    to such switches, so no route turns back. A recoil hop holds an up or down channel before a
    side one, the reverse of the escape order, so with two escape VCs or more (topology
    ``vcs``) the recoil hops take the last and the other escape hops the rest: the recoil
    channels then rank just before the side channels of their dimension, which is acyclic while
    the dead side links are all of one dimension (the proof checks every degraded plan). The
    switch knows which of its ports are wired: a decision is still a function of the switch and
    the head.
    """

    adaptive = True

    def __init__(self, view):
        super().__init__(view)
        self._recoil: dict[tuple[int, int, int, str], Ports] = {}
        recoils = any(
            not self.live(switch, ports)
            for switch, groups in enumerate(self.side)
            for ports in groups.values()
        )
        split = recoils and self.adaptive and len(self.escape_vcs) > 1
        self.recoil_vcs = self.escape_vcs[-1:] if split else self.escape_vcs
        self.plain_escape_vcs = self.escape_vcs[:-1] if split else self.escape_vcs

    def live(self, switch: int, ports: Ports) -> Ports:
        """``ports`` of ``switch`` that still have a link (a fault took the others)."""
        return tuple(p for p in ports if self.view.out_link[switch][p] is not None)

    def recoil(self, switch: int, dim: int, dst: int, way: str = "") -> Ports:
        """The tree ports leading (``way``: "up", "down"; "": up if any, else down) to a switch
        of this Z-node whose side link of ``dim`` toward the destination works."""
        if not way:
            return self.recoil(switch, dim, dst, "up") or self.recoil(switch, dim, dst, "down")
        key = (switch, dim, self.dst[dst][0][dim], way)
        if key not in self._recoil:
            if way == "up":
                ports = self.up[switch]
            elif self.level[switch] > 1:
                ports = tuple(p for group in self.down[switch].values() for p in group)
            else:
                ports = ()  # level 1's down ports are its processors'
            found = []
            for port in self.live(switch, ports):
                there = self.view.out_link[switch][port].dst.switch
                if self.live(there, self.side_ports(there, dim, dst)) or self.recoil(
                    there, dim, dst, way
                ):
                    found.append(port)
            self._recoil[key] = tuple(found)
        return self._recoil[key]

    def crossing(self, switch: int, ports: Ports, dim: int, dst: int) -> Ports:
        """``ports`` (an adaptive up or down move) leading to a switch whose side link of
        ``dim`` toward the destination works: never back to one the escape recoils from."""
        found = []
        for port in self.live(switch, ports):
            there = self.view.out_link[switch][port].dst.switch
            if self.live(there, self.side_ports(there, dim, dst)):
                found.append(port)
        return tuple(found)

    def moves(self, switch: int, dst: int) -> tuple[list[Ports], list[Ports]]:
        offsets = self.offsets(switch, dst)
        reached = self.reached(switch, dst)
        if not offsets:
            move = [self.down_ports(switch, dst) if reached else self.up[switch]]
            return move, move
        sides = [self.side_ports(switch, k, dst) for k in offsets]
        if not reached:
            tree = [self.crossing(switch, self.up[switch], offsets[0], dst)]
        elif self.level[switch] > 1:
            tree = [self.crossing(switch, self.down_ports(switch, dst), offsets[0], dst)]
        else:
            tree = []
        escape = self.live(switch, sides[0]) or self.recoil(switch, offsets[0], dst)
        return sides + tree, [escape]

    def route(self, switch: int, in_port: int, in_vc: int, head: int) -> Decision:
        offsets = self.offsets(switch, head)
        recoiling = bool(offsets) and not self.live(
            switch, self.side_ports(switch, offsets[0], head)
        )
        if self.level[switch] == 1 and self.reached(switch, head) and not offsets:
            return super().route(switch, in_port, in_vc, head)  # delivery
        if not self.adaptive:  # every VC escapes: the recoil joins the moves
            moves, escape = self.moves(switch, head)
            ports = [p for move in moves + (escape if recoiling else []) for p in move]
            return Decision(tuple(Hop(p, self.escape_vcs) for p in ports), head)
        moves, escape = self.moves(switch, head)
        vcs = self.recoil_vcs if recoiling else self.plain_escape_vcs
        hops = [Hop(p, self.adaptive_vcs) for move in moves for p in move]
        hops += [Hop(p, vcs) for move in escape for p in move]
        return Decision(tuple(hops), head)
