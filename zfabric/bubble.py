"""Bubble flow control on the rings of a torus (docs/microarchitecture.md, *Bubble flow control*).

A head that **enters** a ring (from the endpoint, or turning from another dimension) takes the
ring's output VC only if its downstream buffer has room for two longest packets (credits
>= 2L); a head that **continues** along the ring needs room for one (credits >= L, the
cut-through rule). So every ring keeps a packet-sized bubble, and its packets can always move
(C. Carrión, R. Beivide, J. A. Gregorio, F. Vallejo, "A flow control mechanism to avoid
message deadlock in k-ary n-cube networks", 1997; V. Puente, R. Beivide, J. A. Gregorio,
J. M. Prellezo, J. Duato, C. Izu, "Adaptive bubble router: a design to improve performance in
torus networks", 1999): the proof drops the dependencies between consecutive channels of one
ring from the channel dependency graph, and what is left (dimension order across rings) must
be acyclic.

The argument holds only where its premises do, which :func:`bubble_refusal` checks: one VC per
link (a ring is one buffer per link), virtual cut-through (a packet that holds an output VC
never waits for a credit), buffers of at least 2L flits, dimension-order routing on a torus,
and every packet of the one length L (a ring whose buffers hold shorter packets can be full
of fragments smaller than a bubble).
"""

from __future__ import annotations

from .plan import FabricPlan, PlanView

__all__ = [
    "FLOW_CONTROLS",
    "asks_bubble",
    "bubble_refusal",
    "check_packet_length",
    "entering_pairs",
    "ring_of",
]

#: a ``dor`` routing's ``flow_control`` values, the default first: ``datelines`` keeps the rings
#: acyclic with dateline VC classes (or not at all, ``datelines: false``); ``bubble`` with a
#: bubble kept free in every ring, one VC per link
FLOW_CONTROLS = ("datelines", "bubble")


def asks_bubble(plan: FabricPlan) -> bool:
    """The plan's routing asks for bubble flow control."""
    return plan.routing.params.get("flow_control") == "bubble"


def check_packet_length(plan: FabricPlan, length: int) -> None:
    """Refuse (ValueError) a packet the plan's switches cannot carry: longer than a switching
    mode holds whole, or under bubble flow control of another length than the longest (the
    bubble argument counts packets of one length)."""
    plan.router.check_length(length)
    if asks_bubble(plan) and length != plan.router.longest_packet:
        raise ValueError(
            f"a {length}-flit packet under bubble flow control built for packets of"
            f" {plan.router.longest_packet} flits"
        )


def bubble_refusal(plan: FabricPlan) -> str | None:
    """Why the bubble argument does not prove ``plan`` (which asks for it), or None when it
    does: the premises of the argument, each one a clause of the message."""
    params, router = plan.routing.params, plan.router
    if plan.routing.name != "dor":
        return f"needs dimension-order routing, not {plan.routing.name}"
    if not params.get("wrap"):
        return "needs the wrap-around rings of a torus"
    if params.get("datelines"):
        return "needs one VC class per ring (no dateline classes)"
    wider = [link for link in plan.links if link.vcs != 1]
    if wider:
        return f"needs one VC per link, link {wider[0].id} has {wider[0].vcs}"
    if router.switching != "cut_through":
        return f"needs router.switching cut_through, not {router.switching}"
    longest = router.whole_packets
    if plan.buffer_depth < 2 * longest:
        return (
            f"needs buffers of at least two longest packets ({2 * longest} flits), not"
            f" buffer_depth {plan.buffer_depth}"
        )
    return None


def ring_of(view: PlanView, switch: int, port: int) -> tuple[int, int] | None:
    """The (dimension, direction) of a torus switch's external port: its output sends along
    that ring, its input receives the ring going the other way (:func:`entering_pairs`);
    None for a local port."""
    spec = view.switches[switch].ports[port]
    return None if spec.role != "external" else (spec.dim, spec.sign)


def entering_pairs(view: PlanView) -> list[set[tuple[int, int]]]:
    """Per switch, the (input port, output port) pairs on which a head **enters** a ring: the
    output is a ring's and the input is not the same ring's (a packet arriving on the port
    facing direction -d of dimension i travels in direction d of i). Empty on a plan that
    does not ask for bubble flow control."""
    if not asks_bubble(view.plan):
        return [set() for _ in view.switches]
    result = []
    for switch in view.switches:
        pairs = set()
        for o in range(switch.radix):
            ring = ring_of(view, switch.id, o) if view.out_link[switch.id][o] else None
            if ring is None:
                continue
            for p in range(switch.radix):
                came = ring_of(view, switch.id, p) if view.in_link[switch.id][p] else None
                if came != (ring[0], -ring[1]):
                    pairs.add((p, o))
        result.append(pairs)
    return result
