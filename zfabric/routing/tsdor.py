"""TSDOR, twin-source dimension-order routing for the nDT twin torus (ndt.md §3.4, for EXTOLL).

A packet's *traffic class* is the card of its source PE: PE0-sourced packets (class 0) route
the dimensions in ascending order d0 -> d_{n-1}, PE1-sourced packets (class 1) in descending
order d_{n-1} -> d0, each along the shorter way round every ring, crossing the internal link
when the port it needs (or the destination PE) is on the other card, as DORT does. The classes
never mix: class c owns VCs 2c (upper) and 2c + 1 (lower) on every link, 4 VCs per link,
internal and external (L8900-L8906). Within a class:

- external hop: upper if the destination coordinate is above the current one, else lower;
- internal hop while routing a split dimension (its two ports on different cards, d_c under
  CBest): upper or lower by the same comparison (the internal link is part of that ring);
- internal hop for any other reason (a dimension whose ports are both on the other card, or the
  destination PE): upper from Card0 to Card1, lower from Card1 to Card0.

Ties (distance k/2 on an even ring): in a split dimension class 0 goes to the Card0 port and
class 1 to the Card1 port (under CBest, d_c- and d_c+: Fig 4, L6429); in a dimension whose
ports share a card, toward + (as DORT). The class is read from the input VC (``vc // 2``), and
at injection from the card the source PE sits on, so the head is DORT's: the destination.
"""

from __future__ import annotations

from .base import Decision, Hop, Injection, RoutingFunction, routing
from .dor import dateline_vc, ring_direction
from .dort import split_dims

__all__ = ["TSDOR", "TSDOR_VCS"]

#: VCs on every link: two traffic classes x {upper, lower}
TSDOR_VCS = 4


@routing("tsdor")
class TSDOR(RoutingFunction):
    """Class 0 (PE0 sources) ascending, class 1 (PE1 sources) descending dimension order."""

    one_port = True
    uses_input_port = True
    uses_input_vc = True

    def __init__(self, view):
        super().__init__(view)
        k = tuple(self.params["k"])
        n = len(k)
        card0 = {(dim, sign) for dim, sign in self.params["card0"]}
        split = set(split_dims(card0, n))
        self.order = (tuple(range(n)), tuple(reversed(range(n))))
        switches = view.switches
        self.coords = [tuple(s.position["coords"]) for s in switches]
        self.card = [s.position["card"] for s in switches]
        self.source = [
            (e.attachments[0].switch, e.attachments[0].port) for e in view.plan.endpoints
        ]
        home = [switch for switch, _ in self.source]
        self.dst_coords = [self.coords[h] for h in home]
        self.dst_card = [self.card[h] for h in home]
        self.deliver = [(self.local_hop(h, e),) for e, h in enumerate(home)]
        self.local = [set(view.ports_by_role[s.id].get("local", ())) for s in switches]
        #: per switch, per class: the internal hop toward the destination PE on the other card
        self.to_pe: list[tuple[tuple[Hop, ...], ...]] = []
        #: per switch, per class, per dimension, per destination coordinate: the hop
        self.table: list[list[list[list[tuple[Hop, ...] | None]]]] = []
        for switch in switches:
            here, card = self.coords[switch.id], self.card[switch.id]
            internal = view.ports_by_role[switch.id]["internal"][0]
            on_card = {
                (p.dim, p.sign): i for i, p in enumerate(switch.ports) if p.role == "external"
            }
            crossing = 0 if card == 0 else 1  # upper from Card0 to Card1, lower back
            self.to_pe.append(tuple((Hop(internal, (2 * tc + crossing,)),) for tc in (0, 1)))
            classes = []
            for tc in (0, 1):
                rows = []
                for dim in range(n):
                    if dim in split:  # toward the port on the class's own card
                        tie = 1 if ((dim, 1) in card0) == (tc == 0) else -1
                    else:
                        tie = 1
                    row: list[tuple[Hop, ...] | None] = []
                    for dst in range(k[dim]):
                        sign = ring_direction(here[dim], dst, k[dim], tie=tie)
                        if not sign:
                            row.append(None)
                            continue
                        vc = 2 * tc + dateline_vc(here[dim], dst)
                        port = on_card.get((dim, sign))
                        if port is not None:
                            row.append((Hop(port, (vc,)),))
                        elif dim in split:
                            row.append((Hop(internal, (vc,)),))
                        else:
                            row.append((Hop(internal, (2 * tc + crossing,)),))
                    rows.append(row)
                classes.append(rows)
            self.table.append(classes)

    def injections(self, src: int, dst: int) -> tuple[Injection, ...]:
        switch, port = self.source[src]
        return (Injection(switch, port, dst),)

    def traffic_class(self, switch: int, in_port: int, in_vc: int) -> int:
        """The source PE's card at injection, the VC's class after."""
        return self.card[switch] if in_port in self.local[switch] else in_vc // 2

    def state_key(self, switch: int, in_port: int, in_vc: int, head: int) -> tuple:
        """The route depends on the input only through the traffic class."""
        return (switch, self.traffic_class(switch, in_port, in_vc), head)

    def route(self, switch: int, in_port: int, in_vc: int, head: int) -> Decision:
        tc = self.traffic_class(switch, in_port, in_vc)
        here, there = self.coords[switch], self.dst_coords[head]
        for dim in self.order[tc]:
            if here[dim] != there[dim]:
                return Decision(self.table[switch][tc][dim][there[dim]], head)
        if self.dst_card[head] == self.card[switch]:
            return Decision(self.deliver[head], head)
        return Decision(self.to_pe[switch][tc], head)
