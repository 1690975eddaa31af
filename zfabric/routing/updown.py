"""Deterministic up/down (nearest-common-ancestor) routing for Znode / Snode fabrics: a baseline.

The head is the destination endpoint id (destination addressing, Peratikou's Znode thesis,
2014); every switch compares it with its own (Znode, level, zone) position, as k-ary n-tree
switches do, and returns one candidate:

- injection on attachment ``dst mod (number of attachments)`` (which fixes the layer);
- a switch whose zone holds the destination's zone, in the destination's Znode, goes down to
  group p_i (the destination's label at this level), port ``dst mod group size`` of the group;
  at level 1 that is the destination's local port;
- a switch whose zone matches but in another Znode takes a side hop to the destination's Znode
  (port ``dst mod h_i``) if it has side links (h_i > 0); else it keeps going up. So the side
  hop is at the lowest level >= the peer level with h > 0, like sliced routing (§7.6);
- otherwise it goes up through up port ``p_i mod (number of up ports)``, with p_i the
  destination's label at this level: DESTRO on a k-ary n-tree (up port k + h'_s, down port
  h'_s: Andújar et al., "Formalization and configuration methodology for high-radix combined
  switches", J. Supercomputing), which ``destro`` extends to T-switch trees.

Routes are up* -> (at most one side hop) -> down*: deadlock-free with one VC. With more VCs per
link (the topology's ``vcs``) every hop offers all of them: the port stays deterministic, the
switch takes the first free VC with a credit.
"""

from __future__ import annotations

import math

from ..topologies.znode import labels, port_groups
from .base import Decision, Hop, Injection, RoutingFunction, routing

__all__ = ["UpDown"]


@routing("updown")
class UpDown(RoutingFunction):
    """Nearest-common-ancestor routing with destination-label up-port selection."""

    one_port = True

    def __init__(self, view):
        super().__init__(view)
        self.z = tuple(self.params["z"])
        self.side = tuple(self.params["side"])
        self.zone_size = math.prod(self.z)
        self.under = [math.prod(self.z[:i]) for i in range(len(self.z) + 1)]
        self.labels = [labels(x, self.z) for x in range(self.zone_size)]
        self.where = [
            (s.position["znode"], s.position["level"], s.position["zone"]) for s in view.switches
        ]
        self.up: list[list[int]] = []
        self.down: list[dict[int, list[int]]] = []
        self.across: list[dict[int, list[int]]] = []
        for switch in view.switches:
            up, down, across = port_groups(switch)
            self.up.append(up)
            self.down.append(down)
            self.across.append(across)

    def injections(self, src: int, dst: int) -> tuple[Injection, ...]:
        attachments = self.view.plan.endpoints[src].attachments
        a = attachments[dst % len(attachments)]
        return (Injection(a.switch, a.port, dst),)

    def route(self, switch: int, in_port: int, in_vc: int, head: int) -> Decision:
        target = self._target(switch, head)
        if target is None:
            return Decision((), head)
        return Decision((self._hop(switch, target, head),), head)

    def _target(self, switch: int, head: int):
        """The port of ``self.down`` / ``self.across`` / ``self.up`` the head goes to (None: up
        from a switch without up ports, a head that cannot be here)."""
        znode, level, zone = self.where[switch]
        dst_znode, x = divmod(head, self.zone_size)
        label = self.labels[x][level - 1]
        if x // self.under[level] == zone:
            if dst_znode == znode:
                ports = self.down[switch][label]
                return ports[head % len(ports)]
            if self.side[level - 1] > 0:
                ports = self.across[switch][dst_znode]
                return ports[head % len(ports)]
        ports = self.up[switch]
        return ports[label % len(ports)] if ports else None

    def _hop(self, switch: int, port: int, head: int) -> Hop:
        link = self.view.out_link[switch][port]
        return Hop(port, tuple(range(link.vcs)) if link else self.ejection_vcs)
