"""Bubble flow control on the rings of a torus or of an nDT twin torus
(docs/microarchitecture.md, *Bubble flow control*).

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
ring channel (a ring is one buffer per hop), virtual cut-through (a packet that holds an output
VC never waits for a credit), buffers of at least 2L flits, dimension-order routing on a torus
or DORT on an nDT, and every packet of the one length L (a ring whose buffers hold shorter
packets can be full of fragments smaller than a bubble).

On an nDT (Andújar's thesis: DORT with bubble flow control, ndt.md §4.3) a ring of a
dimension whose two ports sit on one card is a cycle of external links, as on a torus. A
*split* dimension's ring (its + port on one card, its - port on the other, CBest's central
dimension) alternates external links and internal links: a packet going + arrives on the
card of the - port and crosses the internal link to leave by the + port. Its internal hops
take one VC of the internal link, the ring VC, that no other class (``ch``, ``pe``) takes, so
that VC's buffer is a ring channel like an external link's; its ``ch`` and ``pe`` VCs are on
no ring (a ``ch`` hop leads to an unsplit dimension, a ``pe`` hop to the endpoint) and, with
the rings' in-ring edges dropped, lie in DORT's order with the rest: the walk checks that the
remainder is acyclic. The hardware decides entering per input port and output VC (no input
VC): an input port must then receive one ring at most, which holds when at most one dimension
is split (an internal link then carries one ring each way); a configuration splitting more
is refused. A head that arrives on the internal ring VC continues its ring; one that arrives
on the ``ch`` VC takes an unsplit dimension, and enters its ring.
"""

from __future__ import annotations

from .plan import FabricPlan, PlanView

__all__ = [
    "FLOW_CONTROLS",
    "asks_bubble",
    "bubble_refusal",
    "check_packet_length",
    "entering_at",
    "entering_pairs",
    "input_ring",
    "output_rings",
    "ring_of",
]

#: a ring as (dimension, direction of travel)
Ring = tuple[int, int]

#: a ``dor`` routing's ``flow_control`` values, the default first: ``datelines`` keeps the rings
#: acyclic with dateline VC classes (or not at all, ``datelines: false``); ``bubble`` with a
#: bubble kept free in every ring, one VC per link
FLOW_CONTROLS = ("datelines", "bubble")


def asks_bubble(plan: FabricPlan) -> bool:
    """The plan's routing asks for bubble flow control."""
    return plan.routing.params.get("flow_control") == "bubble"


def check_packet_length(plan: FabricPlan, length: int) -> None:
    """Refuse (ValueError) a packet the plan's switches cannot carry: of no flit, longer than
    a switching mode holds whole, or under bubble flow control of another length than the
    longest (the bubble argument counts packets of one length)."""
    if length < 1:
        raise ValueError(f"a packet of {length} flits (at least 1)")
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
    if plan.routing.name == "dort":
        reason = _ndt_refusal(plan)
        if reason:
            return reason
    elif plan.routing.name != "dor":
        return f"needs dimension-order routing (dor, or dort on an nDT), not {plan.routing.name}"
    elif not params.get("wrap"):
        return "needs the wrap-around rings of a torus"
    elif params.get("datelines"):
        return "needs one VC class per ring (no dateline classes)"
    else:
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


def _ndt_refusal(plan: FabricPlan) -> str | None:
    """The nDT's premises: at most one split dimension, its ring on one internal VC of its
    own, one VC per external link."""
    from .routing.dort import ring_vc_use, split_dims  # the routings import this module

    params = plan.routing.params
    split = split_dims(params["card0"], len(params["k"]))
    if len(split) > 1:
        return (
            "needs at most one dimension split across the cards (each internal link on one"
            f" ring), not {len(split)} ({', '.join(f'd{dim}' for dim in split)})"
        )
    for dim in split:
        vcs, others = ring_vc_use(params["internal_vcs"], dim)
        if len(vcs) != 1:
            return f"needs d{dim}'s ring on one internal VC, not {vcs}"
        if others:
            return f"needs internal VC {vcs[0]} to d{dim}'s ring alone, {others[0]} takes it too"
    view = PlanView(plan)
    wider = [
        link
        for link in plan.links
        if link.vcs != 1 and ring_of(view, link.src.switch, link.src.port) is not None
    ]
    if wider:
        return f"needs one VC per external link, link {wider[0].id} has {wider[0].vcs}"
    return None


def ring_of(view: PlanView, switch: int, port: int) -> tuple[int, int] | None:
    """The (dimension, direction) of a torus or nDT switch's external port: its output sends
    along that ring, its input receives the ring going the other way; None for another
    port."""
    spec = view.switches[switch].ports[port]
    return None if spec.role != "external" else (spec.dim, spec.sign)


def _split_ring(view: PlanView, switch: int) -> tuple[int, int, Ring] | None:
    """On an nDT card whose one split dimension's ring crosses the internal link (DORT): its
    internal port, the ring's internal VC and (dimension, sign of that dimension's port on
    this card); None on any other switch, and where the premises of
    :func:`bubble_refusal` do not hold."""
    from .routing.dort import ring_vc_use  # the routings import this module

    plan = view.plan
    internal = view.ports_by_role[switch].get("internal")
    if not internal or plan.routing.name != "dort":
        return None
    ports = [(p.dim, p.sign) for p in view.switches[switch].ports if p.role == "external"]
    alone = [(dim, sign) for dim, sign in ports if (dim, -sign) not in ports]
    if len(alone) != 1:
        return None
    dim, sign = alone[0]
    vcs, _ = ring_vc_use(plan.routing.params["internal_vcs"], dim)
    return (internal[0], vcs[0], (dim, sign)) if len(vcs) == 1 else None


def output_rings(view: PlanView, switch: int) -> dict[tuple[int, int], Ring]:
    """The ring (dimension, direction of travel) each output channel (port, VC) of ``switch``
    sends along; a channel on no ring is absent. An external port's every VC (one under the
    bubble) is on its ring; an nDT card's internal ring VC is on its split dimension's ring
    the way the other card's port sends, as a packet that arrived on this card's port of
    that dimension continues."""
    rings: dict[tuple[int, int], Ring] = {}
    for o, link in enumerate(view.out_link[switch]):
        ring = ring_of(view, switch, o) if link is not None else None
        if ring is not None:
            rings.update({(o, w): ring for w in range(link.vcs)})
    split = _split_ring(view, switch)
    if split is not None:
        port, vc, (dim, sign) = split
        rings[port, vc] = (dim, -sign)
    return rings


def input_ring(view: PlanView, switch: int, port: int) -> Ring | None:
    """The ring (dimension, direction of travel) input ``port`` of ``switch`` receives: an
    external port's the other way from the one it sends; an nDT card's internal port's, its
    split dimension's ring the way this card's port sends; None for a local port."""
    if view.in_link[switch][port] is None:
        return None
    ring = ring_of(view, switch, port)
    if ring is not None:
        return ring[0], -ring[1]
    split = _split_ring(view, switch)
    return split[2] if split is not None and split[0] == port else None


def entering_pairs(view: PlanView) -> list[set[tuple[int, int, int]]]:
    """Per switch, its :func:`entering_at`."""
    return [entering_at(view, switch.id) for switch in view.switches]


def entering_at(view: PlanView, switch: int) -> set[tuple[int, int, int]]:
    """The (input port, output port, output VC)s of ``switch`` on which a head **enters** a
    ring: the output channel is on a ring (:func:`output_rings`) and the input does not
    receive that ring (:func:`input_ring`). Empty on a plan that does not ask for bubble flow
    control."""
    if not asks_bubble(view.plan):
        return set()
    radix = view.switches[switch].radix
    came = [input_ring(view, switch, p) for p in range(radix)]
    return {
        (p, o, w)
        for (o, w), ring in output_rings(view, switch).items()
        for p in range(radix)
        if came[p] != ring
    }
