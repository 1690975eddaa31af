"""DESTRO over T-switch fat trees: the tree's up/down routing, with internal hops.

DESTRO (J. A. Villar et al., "Formalization and configuration methodology for high-radix
combined switches", The Journal of Supercomputing, 2013; stage s =
level - 1): on the way up, take up port k + h'_s, h'_s the destination's digit for the stage;
turn at the first switch whose subtree holds the destination; on the way down, take down port
h'_s. ``updown`` on a k-ary n-tree is exactly that (its up port is the destination's label at
the level, its down group the label: the tests check it hop by hop against the definition), so
this routing reuses it and decides per *T-switch*: both internal switches of a T-switch see its
2k ports (:func:`~zfabric.topologies.tswitch.tswitch_port`). A port on the other internal
switch is reached over internal link ``i mod r``, i the port's index on that switch: a flow
keeps one path (deterministic, in order), and an internal link holds only packets for the
same few outputs, so a packet waiting there waits for an output it needs anyway (with r as
large as the ports beyond the link, each output has a link of its own, as an output queue).

Internal-link VCs by class (``internal_vcs``): ``up`` for a hop toward an up port (forward
connections), ``down`` toward a down port (turnaround and backward). The default shares one
class when no descending packet crosses (the optimal SCP), else gives each its own
(:func:`~zfabric.topologies.tswitch.default_internal_vcs`); the proof checks either.
"""

from __future__ import annotations

from typing import Any

from ..fields import Reader
from ..plan import PortRef
from ..topologies.tswitch import INTERNAL_CLASSES, tswitch_port
from .base import Hop, routing
from .dort import internal_class_vcs, internal_vc_option
from .updown import UpDown

__all__ = ["DESTRO"]


@routing("destro")
class DESTRO(UpDown):
    """DESTRO on the T-switches of a k-ary n-tree: one candidate, the internal link's VC by
    class."""

    @classmethod
    def parse_params(cls, reader: Reader, topology_params: Any) -> dict[str, Any]:
        if not reader.has("internal_vcs"):
            return {}
        sub = reader.sub("internal_vcs")
        vcs = {name: sub.get(name, internal_vc_option) for name in INTERNAL_CLASSES}
        sub.finish()
        return {"internal_vcs": vcs}

    def __init__(self, view):
        super().__init__(view)
        k = self.z[0]
        self.class_vcs = internal_class_vcs(self.params["internal_vcs"])
        switches = view.switches
        #: per internal switch: its internal ports (to its twin)
        self.internal = [view.ports_by_role[s.id].get("internal", []) for s in switches]
        for switch in switches:
            members = [switch.id]
            if self.internal[switch.id]:
                members.append(view.out_link[switch.id][self.internal[switch.id][0]].dst.switch)
            ports: dict[int, PortRef] = {}
            for member in members:
                for index, port in enumerate(switches[member].ports):
                    if port.role != "internal":
                        ports[tswitch_port(port, k)] = PortRef(member, index)
            self.up[switch.id] = [ports[p] for p in sorted(ports) if p >= k]
            self.down[switch.id] = {p: [ref] for p, ref in ports.items() if p < k}

    def _hop(self, switch: int, target: PortRef, head: int) -> Hop:
        if target.switch == switch:
            return super()._hop(switch, target.port, head)
        internal = self.internal[switch]
        role = self.view.switches[target.switch].ports[target.port].role
        vc_class = "up" if role == "up" else "down"
        return Hop(internal[target.port % len(internal)], self.class_vcs[vc_class])
