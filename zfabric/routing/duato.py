"""Duato's fully adaptive minimal routing for tori and meshes (wormhole-models.md §1.6).

Every link carries two VC sets. The *escape* set is the link's first VCs: DOR's dateline classes
(:mod:`~zfabric.routing.dor`, ``2 x vcs`` VCs on a torus ring, ``vcs`` on a mesh), the routing
sub-function that is deadlock-free on its own. The *adaptive* set follows: ``adaptive_vcs``
VCs (default 2, so a torus link carries 4 VCs as in ndt.md §3.5 Table 3's adaptive mD torus).

A head is offered, in priority order:

1. the adaptive VCs of every productive direction, dimensions ascending (minimal routing: a
   dimension whose coordinate already matches is never offered);
2. last, the escape hop: DOR's output with its dateline class, exactly what ``dor`` routes.

A packet may go escape -> adaptive -> escape (the reference allows it, L755): the route does
not depend on the VC a packet arrived on. The proof is Duato's condition
(:mod:`zfabric.deadlock`): DOR with dateline classes is connected and, as every adaptive hop is
minimal, a packet on an escape channel of dimension i never again needs a lower dimension nor
moves backwards in dimension i, so the extended CDG stays acyclic. Without dateline classes
(``datelines: false`` on a torus) the escape rings close and the proof refuses the fabric.

Ties (a ring of even k at distance k/2). The reference breaks them toward the wrap-around link
in its adaptive step (Fig 2.8) and away from it in DOR (Fig 2.7), and picks its escape in the
highest unfinished dimension ("lowest, or alternatively highest", L755). zfabric uses one rule
for both sets: the ``tie`` parameter of ``dor`` (``alternate`` by default: + from an even
coordinate, - from an odd one), so the adaptive direction of a tied dimension is the escape's,
and the escape is ``dor`` itself (lowest unfinished dimension first). Both readings are minimal
and deadlock-free; ours keeps ``dor``'s even split of tied traffic over the two directions.

Which free candidate a head takes is the switch's ``router.selection`` (first free in this
order, round-robin, or ``occupancy``: the adaptive VCs by occupancy, the escape VCs only when
no adaptive one is usable, :meth:`~zfabric.routing.base.RoutingFunction.priority`).
"""

from __future__ import annotations

from typing import Any

from ..errors import SpecError
from ..fields import Reader, integer
from .base import MAX_VCS, Decision, Hop, routing
from .dor import DOR, ring_direction, tie_sign

__all__ = ["Duato", "DEFAULT_ADAPTIVE_VCS"]

#: adaptive VCs per link when the spec names none
DEFAULT_ADAPTIVE_VCS = 2


@routing("duato")
class Duato(DOR):
    """Minimal adaptive on the adaptive VCs, DOR with dateline classes on the escape VCs."""

    one_port = False
    adaptive = True

    @classmethod
    def parse_params(cls, reader: Reader, topology_params: Any) -> dict[str, Any]:
        params = cls.ring_params(reader)  # the escape's classes stay fixed
        dateline = topology_params.wrap and params["datelines"]
        escape = (2 if dateline else 1) * topology_params.vcs
        given = reader.has("adaptive_vcs")
        value = reader.get("adaptive_vcs", integer(1, MAX_VCS), DEFAULT_ADAPTIVE_VCS)
        if escape + value > MAX_VCS:  # a link carries at most MAX_VCS
            what = f"{value} adaptive VCs" if given else f"the default {value} adaptive VCs"
            classes = " x 2 dateline classes" if dateline else ""
            raise SpecError(
                reader.key("adaptive_vcs"),
                f"{what} after {escape} escape VCs (topology vcs {topology_params.vcs}{classes})"
                f" make {escape + value} VCs per link, at most {MAX_VCS}",
            )
        return {**params, "adaptive_vcs": value}

    def __init__(self, view):
        super().__init__(view)
        #: the escape VCs of every link: DOR's one or two classes, the link's first VCs
        self.escape_vcs = len(self.classes[0]) * (2 if self.datelines else 1)
        self.adaptive_vcs = tuple(
            range(self.escape_vcs, self.escape_vcs + self.params["adaptive_vcs"])
        )

    def is_escape(self, link: int, vc: int) -> bool:
        return vc < self.escape_vcs

    def route(self, switch: int, in_port: int, in_vc: int, head: int) -> Decision:
        escape = super().route(switch, in_port, in_vc, head)
        here, there = self.coords[switch], self.coords[self.home[head]]
        adaptive = []
        for dim, (cur, dst) in enumerate(zip(here, there, strict=True)):
            tie = tie_sign(self.tie, cur)
            sign = ring_direction(cur, dst, self.k[dim], wrap=self.wrap, tie=tie)
            if sign:
                adaptive.append(Hop(self.port_of[switch][(dim, sign)], self.adaptive_vcs))
        return Decision((*adaptive, *escape.hops), head)
