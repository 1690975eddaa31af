"""Dimension-order routing for tori and meshes, with dateline VC classes on wrap-around rings.

Each class holds ``vcs`` VCs (the topology's ``vcs`` key; 1 by default) and a hop offers all of
them (:func:`~zfabric.routing.base.class_vcs`): on a torus class 0 is VCs 0..vcs-1 and class 1
is VCs vcs..2 vcs-1; on a mesh, or without datelines, every hop is in class 0.

On a ring of even size k a destination k/2 hops away is as near one way as the other. The
``tie`` parameter decides: ``alternate`` (default) goes + from an even coordinate and - from an
odd one, so each direction's links carry half the tied traffic; ``plus`` sends every tie +
(zfabric's rule before the parameter, and what plans written without it mean), which leaves the +
links of a 4-ring three times the load of the - links under uniform traffic and costs about a
seventh of a 4x4 torus's saturation throughput (bench/router_tradeoff.py). A tie is decided at
the first hop in its dimension only (the next hop is no longer a tie), so either rule is a pure
function of (switch, head), and the dateline classes keep each ring acyclic whichever way a
packet goes.

The ``vc_classes`` parameter decides how many VCs a packet may use on a ring. ``balanced``
(default) lets a packet that never crosses the dateline start on either class where the other
class's forbidden link is not on its way, and keep the class it took to the end of the ring
(:func:`may_take_either`): each class still never uses its forbidden link and a packet changes
class within a ring only at the wrap-around, so the proof finds the rings acyclic, and the
switch takes the lowest free VC of both classes. ``route`` then reads the input port (is the
packet already on this ring?) and VC (which class it kept). ``fixed`` takes each hop's class by
:func:`dateline_vc`: a packet that never crosses the dateline then has one class (half the
ring's VCs) all the way. Balanced classes lift the saturation knee (torus 4x4 0.619 -> 0.644,
8x8 0.350 -> 0.381) at the fixed classes' clock since the allocator's arbiters hold their
pointers as precedence pairs (docs/design/router-v2.md), hence the default; plans written before the
parameter mean ``fixed``.

``flow_control: bubble`` replaces the dateline classes on a torus by bubble flow control
(:mod:`zfabric.bubble`): one VC per link, and the switches keep a packet-sized bubble free in
every ring.
"""

from __future__ import annotations

import functools
from typing import Any

from ..bubble import FLOW_CONTROLS
from ..errors import SpecError
from ..fields import Reader, boolean, choice
from ..symmetry import Symmetry
from ..topologies.torus import reflection, translation
from .base import Decision, Hop, Injection, RoutingFunction, class_vcs, routing

__all__ = ["DOR", "TIES", "VC_CLASSES", "may_take_either", "ring_direction", "tie_sign"]

#: the ``tie`` parameter's values, the default first
TIES = ("alternate", "plus")
#: the ``vc_classes`` parameter's values, the default first
VC_CLASSES = ("balanced", "fixed")


def ring_direction(cur: int, dst: int, k: int, *, wrap: bool = True, tie: int = 1) -> int:
    """+1 / -1: the shorter way round a ring of ``k`` (``tie`` when equal); 0 if already there."""
    if cur == dst:
        return 0
    if not wrap:
        return 1 if dst > cur else -1
    forward = (dst - cur) % k
    backward = k - forward
    if forward == backward:
        return tie
    return 1 if forward < backward else -1


def tie_sign(rule: str, cur: int) -> int:
    """The direction a tie takes from coordinate ``cur`` under ``rule`` (one of :data:`TIES`)."""
    return 1 if rule == "plus" or cur % 2 == 0 else -1


def dateline_vc(cur: int, dst: int) -> int:
    """VC class of a ring hop: 0 ("upper") if dst > cur, else 1 ("lower").

    A packet whose destination coordinate is below its current one must still cross the
    wrap-around link (the dateline) in the + direction, so classes split exactly at the
    dateline: VC 1 never uses channel 0 -> 1 and VC 0 never uses the wrap link k-1 -> 0,
    hence neither class closes a ring cycle (the same per-hop rule as nDT's DORT).
    """
    return 0 if dst > cur else 1


def may_take_either(sign: int, cur: int, dst: int, k: int) -> bool:
    """Whether a ring hop from ``cur`` toward ``dst`` (direction ``sign``) may take either
    dateline class and keep it (``vc_classes: balanced``).

    The rest of the way must not cross the wrap-around link, and must not use the one link the
    other class never uses: going + the hop's class is 0 and class 1 never uses 0 -> 1, so
    ``cur`` must not be 0; going - the class is 1 and class 0 never uses k-1 -> k-2, so ``cur``
    must not be k-1.
    """
    if sign > 0:
        return dst > cur and cur != 0
    return dst < cur and cur != k - 1


@routing("dor")
class DOR(RoutingFunction):
    """Ascending dimension order, shortest direction (ties by ``tie``), one candidate."""

    one_port = True

    @classmethod
    def parse_params(cls, reader: Reader, topology_params: Any) -> dict[str, Any]:
        params = cls.ring_params(reader) | {
            "vc_classes": reader.get("vc_classes", choice(VC_CLASSES), VC_CLASSES[0])
        }
        flow_control = reader.get("flow_control", choice(FLOW_CONTROLS), FLOW_CONTROLS[0])
        if flow_control == "datelines":
            return params  # plans written before the parameter have none
        if reader.has("datelines") and params["datelines"]:
            reader.report(
                SpecError(reader.key("datelines"), "cannot be used with flow_control bubble")
            )
        # bubble flow control keeps the rings free of deadlock with one VC class (zfabric.bubble)
        return params | {"datelines": False, "flow_control": flow_control}

    @staticmethod
    def ring_params(reader: Reader) -> dict[str, Any]:
        """The options of the rings' dateline classes and ties (``duato``'s escape's too)."""
        return {
            "datelines": reader.get("datelines", boolean, True),
            "tie": reader.get("tie", choice(TIES), TIES[0]),
        }

    def __init__(self, view):
        super().__init__(view)
        self.k = tuple(self.params["k"])
        self.wrap = self.params["wrap"]
        self.datelines = self.params["datelines"]
        self.tie = self.params.get("tie", "plus")  # plans written before the parameter: plus
        per_class = self.params.get("vcs", 1)  # plans written before per-class counts: 1
        self.classes = (class_vcs(0, per_class), class_vcs(1, per_class))
        #: ``vc_classes: balanced`` on a torus with datelines (plans written before: fixed)
        self.balanced = self.wrap and self.datelines and self.params.get("vc_classes") == "balanced"
        self.coords = [tuple(s.position["coords"]) for s in view.switches]
        self.port_of = [
            {(p.dim, p.sign): i for i, p in enumerate(s.ports) if p.role == "external"}
            for s in view.switches
        ]
        #: per switch, per port: whether it is a ring's (an external port)
        self.on_ring = [[p.role == "external" for p in s.ports] for s in view.switches]
        self.home = [e.attachments[0].switch for e in view.plan.endpoints]

    def injections(self, src: int, dst: int) -> tuple[Injection, ...]:
        attachment = self.view.plan.endpoints[src].attachments[0]
        return (Injection(attachment.switch, attachment.port, dst),)

    def symmetries(self) -> tuple[Symmetry, ...]:
        """Per dimension of size k: the reflection c -> k - 1 - c, where ties are broken by
        the coordinate's parity or never occur (k odd), or on a mesh; with dateline classes it
        swaps them on that dimension's links (a hop toward a higher coordinate is class 0, its
        mirror image toward a lower one class 1). Without dateline classes, the translation by
        one (by two where ``alternate`` ties read the parity of an even ring). With dateline
        classes the translations are no symmetry: a class is chosen by where the ring's
        wrap-around link is."""
        return self._symmetries(self.datelines)

    def port_symmetries(self) -> tuple[Symmetry, ...]:
        """The translations too with dateline classes: a class never changes a port, and a
        decision offers one port (DOR) or the same number of VCs on each (Duato's adaptive
        hops, then its escape's one class)."""
        return self._symmetries(False)

    def _symmetries(self, datelines: bool) -> tuple[Symmetry, ...]:
        plan = self.view.plan
        result = []
        for dim, size in enumerate(self.k):
            if self.wrap and not datelines:
                shift = 2 if self.tie == "alternate" and size % 2 == 0 else 1
                if shift < size:
                    result.append(translation(plan, dim, shift))
            if not self.wrap or self.tie == "alternate" or size % 2:
                mirror = reflection(plan, dim)
                if self.datelines:
                    mirror = mirror.with_vcs(plan, functools.partial(self._swapped, dim))
                result.append(mirror)
        return tuple(result)

    def _swapped(self, dim: int, link_id: int) -> tuple[int, ...] | None:
        """The VCs of a link of dimension ``dim`` with the two dateline classes swapped (the
        VCs after them, Duato's adaptive ones, stay); None for other links."""
        link = self.view.plan.links[link_id]
        if self.view.switches[link.src.switch].ports[link.src.port].dim != dim:
            return None
        lower, upper = self.classes
        return upper + lower + tuple(range(len(lower) + len(upper), link.vcs))

    def state_key(self, switch: int, in_port: int, in_vc: int, head: Any) -> tuple:
        """Balanced classes read the input port and, on a ring's input, the class of the input
        VC (:meth:`ring_vcs` reads it only there: from an endpoint a packet enters a ring, on
        whichever local VC, and the proof walks one state for them all)."""
        if not self.balanced:
            return super().state_key(switch, in_port, in_vc, head)
        return (switch, in_port, self.on_ring[switch][in_port] and in_vc in self.classes[1], head)

    def route(self, switch: int, in_port: int, in_vc: int, head: int) -> Decision:
        there = self.coords[self.home[head]]
        for dim, cur in enumerate(self.coords[switch]):
            dst = there[dim]
            if cur != dst:
                tie = tie_sign(self.tie, cur)
                sign = ring_direction(cur, dst, self.k[dim], wrap=self.wrap, tie=tie)
                port = self.port_of[switch][(dim, sign)]
                vcs = self.ring_vcs(switch, in_port, in_vc, dim, sign, dst)
                return Decision((Hop(port, vcs),), head)
        return Decision((self.local_hop(switch, head),), head)

    def ring_vcs(
        self, switch: int, in_port: int, in_vc: int, dim: int, sign: int, dst: int
    ) -> tuple[int, ...]:
        """The VCs of a hop in dimension ``dim``, direction ``sign``, toward coordinate
        ``dst``: its dateline class's (one class without datelines); with balanced classes,
        both on entering the ring (from another dimension or the endpoint) where
        :func:`may_take_either`, and then the class the packet arrived on."""
        cur = self.coords[switch][dim]
        if not self.datelines:
            return self.classes[0]
        own = dateline_vc(cur, dst)
        if not (self.balanced and may_take_either(sign, cur, dst, self.k[dim])):
            return self.classes[own]
        if self.port_of[switch].get((dim, -sign)) != in_port:  # entering the ring here
            return self.classes[0] + self.classes[1]
        return self.classes[1 - own] if in_vc in self.classes[1 - own] else self.classes[own]
