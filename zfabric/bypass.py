"""The straight bypass (docs/microarchitecture.md, *Straight bypass*): which input port of a
switch feeds which output port straight, so that a flit may cross from the link in the cycle
it arrives.

A pair is straight when both ports are on one ring of a torus or one line of a mesh, in the
same direction: the input receives from the neighbour at direction -d of dimension i and the
output sends to the neighbour at +d of i (:func:`zfabric.bubble.ring_of`), as a packet going on
in dimension order does. Each input has at most one straight output and each output at most
one straight input, so a bypass never meets another bypass at an output, and the hardware's
bypass path into an output comes from one fixed input: a two-way multiplexer in front of the
output register, no crossbar.
"""

from __future__ import annotations

from .bubble import ring_of
from .plan import PlanView

__all__ = ["straight_outputs"]


def straight_outputs(view: PlanView) -> list[dict[int, int]]:
    """Per switch, input port -> the output port it feeds straight (both with links); every
    dict empty when the plan does not bypass."""
    if not view.plan.router.bypasses:
        return [{} for _ in view.switches]
    result = []
    for switch in view.switches:
        s = switch.id
        outputs = {
            ring_of(view, s, o): o
            for o in range(switch.radix)
            if view.out_link[s][o] is not None and ring_of(view, s, o) is not None
        }
        pairs = {}
        for p in range(switch.radix):
            came = ring_of(view, s, p) if view.in_link[s][p] is not None else None
            if came is not None and (came[0], -came[1]) in outputs:
                pairs[p] = outputs[(came[0], -came[1])]
        result.append(pairs)
    return result
