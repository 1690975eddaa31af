"""Adaptive nDT routing (ndt.md §3.5, the adaptive paper's Alg 1): DORT escape, adaptive VCs.

Every link carries DORT's VCs first (the escape sub-function, :mod:`~zfabric.routing.dort`,
with its ``internal_vcs``, ``external_vcs`` and ``tie`` options) and adaptive VCs after them:
``adaptive_external_vcs`` on external links and ``adaptive_internal_vcs`` on the internal link,
2 and 4 by default, so with DORT's defaults an odd-n fabric has the paper's Table 3 budget
(external 2 + 2 = 4, internal 4 + 4 = 8; an even n has 2 + 4 = 6 internal VCs, DORT needing
only its CH and PE classes there). One adaptive VC per link would suffice (footnote 9).

Alg 1's selectable set, as this function returns it (the escape hop, DORT's output, always
last):

- the adaptive VCs of every external port *on this card* in a productive direction of an
  unfinished dimension; at a tie (distance k/2) both directions are productive. Under CBest this
  is Alg 1's rule: Card0 checks d0 .. d_c and offers d_c- only, Card1 checks d_c .. d_{n-1} and
  offers d_c+ only;
- the internal link's adaptive VCs, only when DORT's output is the internal link (L8115-L8121,
  L8190), so the internal link is never taken where DORT would not take it;
- none at all for a packet that arrived on an escape VC: once escaped, a packet stays on DORT
  (L7955-L7975). A packet arriving on an adaptive VC, or injected, is offered the set again.

The ``selection`` option (L8225-L8420) is the static part of the paper's selection functions:
which candidates exist and their priority order (:meth:`DORTAdaptive.priority` gives each
output VC its level). The switch's ``router.selection`` picks among the free ones: first free
in this order, round-robin, or ``occupancy``, the paper's low/high ranges checked level by
level (docs/microarchitecture.md, step 2).

- ``3_priority`` (default, the paper's best, L8664-L8672): ports of dimensions lying wholly on
  this card first, then ports of split dimensions (d_c), then the internal link;
- ``2_priority``: every external port first, then the internal link;
- ``round_robin``: the internal link is a port like the others (ascending port order; the
  internal link is port 1, before the external ports);
- ``no_internal``: the internal link's adaptive VCs are never offered.
"""

from __future__ import annotations

from typing import Any

from ..errors import SpecError
from ..fields import Reader, choice, integer
from .base import MAX_VCS, Decision, Hop, routing
from .dort import DORT, default_internal_vcs, internal_class_vcs, internal_link_vcs

__all__ = ["DORTAdaptive", "SELECTIONS"]

#: the ``selection`` option's values, the default first
SELECTIONS = ("3_priority", "2_priority", "round_robin", "no_internal")
#: adaptive VCs per external / internal link when the spec names none (ndt.md §3.5 Table 3)
DEFAULT_ADAPTIVE = {"adaptive_external_vcs": 2, "adaptive_internal_vcs": 4}


@routing("dort_adaptive")
class DORTAdaptive(DORT):
    """DORT on the escape VCs; minimal adaptive on this card's ports and, where DORT takes it,
    the internal link; escaped packets stay escaped."""

    one_port = False
    adaptive = True
    uses_input_port = True
    uses_input_vc = True

    @classmethod
    def parse_params(cls, reader: Reader, topology_params: Any) -> dict[str, Any]:
        params = super().parse_params(reader, topology_params)
        params["selection"] = reader.get("selection", choice(SELECTIONS), SELECTIONS[0])
        n = len(topology_params.k)
        internal = params.get("internal_vcs") or default_internal_vcs(
            topology_params.card0, n, params.get("rings")
        )
        escape = {
            "adaptive_external_vcs": ("external", params.get("external_vcs", 2)),
            "adaptive_internal_vcs": ("internal", internal_link_vcs(internal)),
        }
        for key, default in DEFAULT_ADAPTIVE.items():
            given = reader.has(key)
            params[key] = value = reader.get(key, integer(1, MAX_VCS), default)
            link, vcs = escape[key]
            if vcs + value > MAX_VCS:  # a link carries at most MAX_VCS
                what = f"{value} adaptive VCs" if given else f"the default {value} adaptive VCs"
                raise SpecError(
                    reader.key(key),
                    f"{what} after DORT's {vcs} make {vcs + value} VCs per {link}"
                    f" link, at most {MAX_VCS}",
                )
        return params

    def __init__(self, view):
        super().__init__(view)
        params = self.params
        k = tuple(params["k"])
        selection = params["selection"]
        external_escape = params.get("external_vcs", 2)
        internal_escape = internal_link_vcs(internal_class_vcs(params["internal_vcs"]))
        #: per link: how many of its VCs (the first ones) are escape VCs
        self.escape_count = [
            internal_escape
            if view.switches[link.src.switch].ports[link.src.port].role == "internal"
            else external_escape
            for link in view.plan.links
        ]
        external = tuple(range(external_escape, external_escape + params["adaptive_external_vcs"]))
        internal = tuple(range(internal_escape, internal_escape + params["adaptive_internal_vcs"]))
        #: per switch, per input port: how many of its VCs are escape VCs (0: injection)
        self.in_escape = [
            [0 if link is None else self.escape_count[link.id] for link in links]
            for links in view.in_link
        ]
        self.internal_port = [view.ports_by_role[s.id]["internal"][0] for s in view.switches]
        self.internal_adaptive = [
            () if selection == "no_internal" else (Hop(port, internal),)
            for port in self.internal_port
        ]
        #: the internal link's rank among the candidates (ties go by port number)
        self.internal_rank = 1 if selection == "round_robin" else 2
        #: per switch, per port: the priority rank of its adaptive VCs (0 first)
        self.port_rank: list[list[int]] = []
        #: per switch, per dimension, per destination coordinate: the adaptive hops on this
        #: card, each with its rank
        self.adaptive_hops: list[list[list[tuple[tuple[int, Hop], ...]]]] = []
        for switch in view.switches:
            here = self.coords[switch.id]
            on_card = {
                (p.dim, p.sign): i for i, p in enumerate(switch.ports) if p.role == "external"
            }
            whole = {dim for dim, sign in on_card if (dim, -sign) in on_card}
            ranks = [
                self.internal_rank
                if p.role == "internal"
                else int(not (selection == "3_priority" and p.dim in whole))
                for p in switch.ports
            ]
            self.port_rank.append(ranks)
            rows = []
            for dim in range(len(k)):
                row = []
                for dst in range(k[dim]):
                    forward = (dst - here[dim]) % k[dim]
                    backward = k[dim] - forward
                    signs = [s for s, d in ((1, forward), (-1, backward)) if 2 * d <= k[dim]]
                    row.append(
                        tuple(
                            (ranks[on_card[(dim, sign)]], Hop(on_card[(dim, sign)], external))
                            for sign in signs
                            if forward and (dim, sign) in on_card
                        )
                    )
                rows.append(row)
            self.adaptive_hops.append(rows)

    def is_escape(self, link: int, vc: int) -> bool:
        return vc < self.escape_count[link]

    def priority(self, switch: int, port: int, vc: int) -> int:
        """The selection function's levels (3_priority: whole dimensions, split dimension,
        internal link; 2_priority: external, internal), DORT's escape VCs after them all."""
        link = self.view.out_link[switch][port]
        if link is None:
            return 0
        return 3 if self.is_escape(link.id, vc) else self.port_rank[switch][port]

    def state_key(self, switch: int, in_port: int, in_vc: int, head: int) -> tuple:
        """The route depends on the input only through whether it arrived escaped."""
        return (switch, in_vc < self.in_escape[switch][in_port], head)

    def route(self, switch: int, in_port: int, in_vc: int, head: int) -> Decision:
        escape = super().route(switch, in_port, in_vc, head)
        if in_vc < self.in_escape[switch][in_port]:
            return escape  # once escaped, never back to adaptive
        here, there = self.coords[switch], self.dst_coords[head]
        ranked = [
            candidate
            for dim, (cur, dst) in enumerate(zip(here, there, strict=True))
            if cur != dst
            for candidate in self.adaptive_hops[switch][dim][dst]
        ]
        if escape.hops[0].port == self.internal_port[switch]:
            ranked += [(self.internal_rank, hop) for hop in self.internal_adaptive[switch]]
        ranked.sort(key=lambda candidate: (candidate[0], candidate[1].port))
        return Decision((*(hop for _, hop in ranked), *escape.hops), head)
