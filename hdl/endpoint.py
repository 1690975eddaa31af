"""Endpoint: the network interface between packet streams and a switch's local port(s).

Injection (docs/microarchitecture.md, Endpoints): every beat of the ``i`` stream is one flit.
A beat with ``first`` is a head: the endpoint builds its routing head from ``dst`` (the
destination id, or the sliced header the routing function writes for this source and
destination) and sends it on the first of the routing function's injection choices whose
link has a credit; the packet's other beats follow on the same attachment. ``i.ready`` is
high exactly when the beat can be sent this cycle, so a source that presents a packet from the
cycle it is created sees the model's timing. A head flit carries the routing head in the low
``head_width`` bits of its payload and ``data``'s low ``flit_width - head_width`` bits above
it; other flits carry ``data`` whole.

Ejection: a flit on an ejection link is presented on that attachment's ``o`` stream in the same
cycle (the cycle the contract calls delivery), with ``first``/``last`` from its kind and the
head flit's data shifted back down. The endpoint always accepts: ``o`` streams have no
``ready``, as local outputs have no credits.
"""

from __future__ import annotations

from amaranth.hdl import Cat, Module, Signal, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from zfabric.plan import FabricPlan, PlanView, PortRef
from zfabric.routing import make_routing

from .flit import FlitLayout, LinkSignature
from .router.allocator import lowest_one

__all__ = [
    "PacketInLayout",
    "PacketOutLayout",
    "Endpoint",
    "injection_table",
    "dst_width",
]


class PacketInLayout(data.StructLayout):
    """One beat of an injected packet: ``data``, ``dst`` (read on the first beat), ``first``,
    ``last``."""

    def __init__(self, flit_layout: FlitLayout, dst_width: int):
        super().__init__(
            {
                "data": unsigned(flit_layout.payload_width),
                "dst": unsigned(dst_width),
                "first": 1,
                "last": 1,
            }
        )


class PacketOutLayout(data.StructLayout):
    """One beat of a delivered packet: ``data``, ``first``, ``last``."""

    def __init__(self, flit_layout: FlitLayout):
        super().__init__({"data": unsigned(flit_layout.payload_width), "first": 1, "last": 1})


def injection_table(plan: FabricPlan, src: int, routing=None) -> dict[int, tuple]:
    """Per destination: the injection choices of ``src`` as (attachment index, head) in order."""
    routing = routing or make_routing(PlanView(plan))
    attachments = plan.endpoints[src].attachments
    table = {}
    for dst in range(len(plan.endpoints)):
        if dst == src:
            continue
        choices = []
        for choice in routing.injections(src, dst):
            head = choice.head[0] if isinstance(choice.head, tuple) else choice.head
            choices.append((attachments.index(PortRef(choice.switch, choice.port)), head))
        table[dst] = tuple(choices)
    return table


class Endpoint(wiring.Component):
    """Network interface of one endpoint with ``n_attachments`` local links.

    Parameters
    ----------
    flit_layout : FlitLayout
    dst_width : int
        Bits of a destination endpoint id.
    n_attachments : int
    buffer_depth : int
        Depth of the switches' local input buffers: the initial injection credit.
    injections : dict
        Destination id -> ((attachment index, head), ...) in the routing function's order
        (:func:`injection_table`). Attachments must be listed in ascending order.

    Members
    -------
    i : ``In(stream.Signature(PacketInLayout(flit_layout, dst_width)))``
    o : ``Out(stream.Signature(PacketOutLayout(flit_layout), always_ready=True))
        .array(n_attachments)``
    inject : ``Out(LinkSignature(flit_layout, 1)).array(n_attachments)``
    eject : ``In(LinkSignature(flit_layout, 1)).array(n_attachments)``
    """

    def __init__(
        self,
        *,
        flit_layout: FlitLayout,
        dst_width: int,
        n_attachments: int,
        buffer_depth: int,
        injections: dict,
    ):
        for dst, choices in injections.items():
            order = [a for a, _ in choices]
            if not choices or order != sorted(set(order)) or order[-1] >= n_attachments:
                raise ValueError(
                    f"injection choices for destination {dst} must be distinct attachments "
                    f"below {n_attachments} in ascending order, not {order!r}"
                )
        self._flit_layout = flit_layout
        self._dst_width = dst_width
        self._n_attachments = n_attachments
        self._buffer_depth = buffer_depth
        self._injections = injections
        link = LinkSignature(flit_layout, 1)
        super().__init__(
            {
                "i": In(stream.Signature(PacketInLayout(flit_layout, dst_width))),
                "o": Out(stream.Signature(PacketOutLayout(flit_layout), always_ready=True)).array(
                    n_attachments
                ),
                "inject": Out(link).array(n_attachments),
                "eject": In(link).array(n_attachments),
            }
        )

    @classmethod
    def from_plan(cls, plan: FabricPlan, endpoint: int, *, flit_layout=None, routing=None):
        return cls(
            flit_layout=flit_layout or FlitLayout.from_plan(plan),
            dst_width=dst_width(plan),
            n_attachments=len(plan.endpoints[endpoint].attachments),
            buffer_depth=plan.buffer_depth,
            injections=injection_table(plan, endpoint, routing),
        )

    def _direct(self) -> bool:
        """Every destination injects on attachment 0 with the destination id as its head."""
        return all(choices == ((0, dst),) for dst, choices in self._injections.items())

    def elaborate(self, platform):
        m = Module()
        layout = self._flit_layout
        n = self._n_attachments
        beat = self.i.payload

        credits = [
            Signal(range(self._buffer_depth + 1), name=f"credit{a}", init=self._buffer_depth)
            for a in range(n)
        ]
        has_credit = Cat(*(c != 0 for c in credits))
        choices = Signal(n)  # the head's injection choices (a mask: ascending attachments)
        heads = [Signal(layout.head_width, name=f"head{a}") for a in range(n)]
        if self._direct():
            m.d.comb += [choices.eq(1), heads[0].eq(beat.dst)]
        else:
            with m.Switch(beat.dst):
                for dst, options in self._injections.items():
                    with m.Case(dst):
                        for a, head in options:
                            m.d.comb += [choices[a].eq(1), heads[a].eq(head)]

        current = Signal(n, init=1)  # the attachment of the packet being sent (one-hot)
        chosen = Signal(n)
        with m.If(beat.first):
            m.d.comb += chosen.eq(lowest_one(choices & has_credit))
        with m.Else():
            m.d.comb += chosen.eq(current & has_credit)
        m.d.comb += self.i.ready.eq(chosen.any())
        send = self.i.valid & self.i.ready
        with m.If(send & beat.first):
            m.d.sync += current.eq(chosen)

        head = 0
        for a in range(n):
            head = head | (heads[a] & chosen[a].replicate(layout.head_width))
        payload = Signal(layout.payload_width)
        with m.If(beat.first):
            m.d.comb += payload.eq(Cat(head, beat.data[: layout.data_width]))
        with m.Else():
            m.d.comb += payload.eq(beat.data)

        for a in range(n):
            link = self.inject[a]
            sent = send & chosen[a]
            m.d.sync += [
                link.flit.valid.eq(sent),
                link.flit.payload.kind.eq(Cat(beat.first, beat.last)),
                link.flit.payload.vc.eq(0),
                link.flit.payload.payload.eq(payload),
                credits[a].eq(credits[a] - sent + link.credit[0]),
            ]

            flit = self.eject[a].flit
            kind = flit.payload.kind.as_value()
            out = self.o[a]
            m.d.comb += [
                out.valid.eq(flit.valid),
                out.payload.first.eq(kind[0]),
                out.payload.last.eq(kind[1]),
                out.payload.data.eq(flit.payload.payload),
                self.eject[a].credit.eq(flit.valid),  # a local output keeps no count of these
            ]
            with m.If(kind[0]):
                m.d.comb += out.payload.data.eq(flit.payload.payload[layout.head_width :])
        return m


def dst_width(plan: FabricPlan) -> int:
    """Bits of an endpoint id."""
    return max(1, (len(plan.endpoints) - 1).bit_length())
