"""What every Znode routing (sliced, flat, source-destination) reads off the fabric: the
levels and Znode ids of the switches, each input port's role, and each switch's port groups as
hops (Peratikou's Znode thesis, 2014: processor addressing and port labels; ``port_groups``)."""

from __future__ import annotations

from ..topologies.znode import field_width, port_groups
from .base import Hop, RoutingFunction

__all__ = ["ZnodeRouting"]


class ZnodeRouting(RoutingFunction):
    """The Znode fabric as the Znode routings see it: ``z``, ``znodes``, ``side`` from the
    plan's routing parameters, label and Znode-id field widths, each endpoint's attachments,
    each switch's level and Znode id, each input port's class (``"down"`` for local and down
    inputs, else ``"up"``/``"side"``), and per switch its up ports, and its down and across
    port groups by label, as hops on every VC of the link (ejection VCs on local ports)."""

    uses_input_port = True

    def __init__(self, view):
        super().__init__(view)
        self.z = tuple(self.params["z"])
        self.znodes = self.params["znodes"]
        self.side = tuple(self.params["side"])
        self.zid_bits = field_width(self.znodes)
        self.label_bits = [0] + [field_width(zi) for zi in self.z]  # by level
        self.attachments = [
            [(a.switch, a.port) for a in e.attachments] for e in view.plan.endpoints
        ]
        self.level = [s.position["level"] for s in view.switches]
        self.sid = [s.position["znode"] for s in view.switches]
        self.kind = [
            ["down" if p.role in ("local", "down") else p.role for p in s.ports]
            for s in view.switches
        ]
        self.up: list[tuple[Hop, ...]] = []
        self.down: list[dict[int, tuple[Hop, ...]]] = []
        self.across: list[dict[int, tuple[Hop, ...]]] = []
        for switch in view.switches:
            out_links = view.out_link[switch.id]

            def hops(ports: list[int], out_links=out_links) -> tuple[Hop, ...]:
                return tuple(
                    Hop(p, tuple(range(out_links[p].vcs)) if out_links[p] else self.ejection_vcs)
                    for p in ports
                )

            up, down, across = port_groups(switch)
            self.up.append(hops(up))
            self.down.append({g: hops(ports) for g, ports in down.items()})
            self.across.append({g: hops(ports) for g, ports in across.items()})
