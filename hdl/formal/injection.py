"""Endpoint injection proofs: the flits an endpoint sends into its switch.

The harness drives an :class:`~zfabric.hdl.endpoint.Endpoint` with one attachment (the head is
the destination, :class:`~zfabric.hdl.endpoint.DirectHeads`) from a free packet stream and
holds the switch's local input buffers behind its injection link; the ejection side is idle.

Environment (assumptions):

- the user's beats form whole packets (``first`` exactly on the first beat after a ``last``,
  or the first beat of all); ``valid``, ``dst``, ``data`` and ``last`` are free;
- per injection VC the switch holds the flits that reach it and pops one whenever it holds
  any and likes, returning a credit pulse in the same cycle (as the input unit does).

Properties (assertions):

- per VC: the switch's buffer never holds more than ``B`` flits, and (with ``state``: the
  harness reads the endpoint's credit counters) credits + flit on the link + flits held = ``B``;
- every flit on the link is the beat taken the cycle before: its data, its kind (head exactly
  on a first beat, tail on a last), the destination as the head of a head flit (zero on the
  others), and the link is idle otherwise;
- wormhole order on the link: a head only between packets, and every other flit on the VC of
  its packet's head.

Covers: each switch buffer full, and a packet's tail (not a single flit) on the last VC.

With ``state`` the harness also asserts that the endpoint's VC of the packet under way is the
one its flits go on: that, with the credit counters, makes the properties inductive.
"""

from __future__ import annotations

from amaranth.hdl import Assert, Assume, Cat, Cover, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In

from ..endpoint import DirectHeads, Endpoint
from ..flit import FlitLayout
from .state import opened

__all__ = ["InjectionHarness"]


class InjectionHarness(wiring.Component):
    """One endpoint's injection side (``injection_vcs`` VCs into buffers of ``buffer_depth``)
    under the environment above; ``unit_class`` for planted bugs."""

    def __init__(
        self,
        *,
        injection_vcs: int = 2,
        buffer_depth: int = 4,
        state: bool = False,
        unit_class: type = Endpoint,
    ):
        self._n, self._depth, self._state, self._unit_class = (
            injection_vcs,
            buffer_depth,
            state,
            unit_class,
        )
        self._layout = FlitLayout(
            payload_width=3,
            vc_width=max(1, (injection_vcs - 1).bit_length()),
            head_width=2,
            src_width=1,
        )
        super().__init__(
            {
                "valid": In(1),
                "first": In(1),
                "last": In(1),
                "dst": In(2),
                "data": In(3),
                "pop": In(injection_vcs),
            }
        )

    def elaborate(self, platform):
        m = Module()
        n, depth = self._n, self._depth
        endpoint = self._unit_class(
            flit_layout=self._layout,
            dst_width=2,
            n_attachments=1,
            buffer_depth=depth,
            heads=DirectHeads(),
            source=0,
            injection_vcs=n,
        )
        if self._state:
            m.submodules.endpoint, internal = opened(endpoint, platform)
        else:
            m.submodules.endpoint = endpoint
        beat = endpoint.i.payload
        m.d.comb += [
            endpoint.i.valid.eq(self.valid),
            beat.first.eq(self.first),
            beat.last.eq(self.last),
            beat.dst.eq(self.dst),
            beat.data.eq(self.data),
            endpoint.eject[0].flit.valid.eq(0),
        ]
        sending = Signal()  # the user is inside a packet
        sent = endpoint.i.valid & endpoint.i.ready
        m.d.comb += Assume(~self.valid | (self.first == ~sending))
        with m.If(sent):
            m.d.sync += sending.eq(~self.last)
        # the beat taken last cycle, as the link must show it now
        was_sent = Signal()
        taken = Signal(Cat(beat.data, beat.first, beat.last, beat.dst).shape())
        m.d.sync += [was_sent.eq(sent), taken.eq(Cat(beat.data, beat.first, beat.last, beat.dst))]
        link = endpoint.inject[0].flit
        kind = link.payload.kind.as_value()
        data, first, last, dst = taken[:3], taken[3], taken[4], taken[5:]
        m.d.comb += [
            Assert(link.valid == was_sent),
            Assert(~link.valid | (link.payload.payload == data)),
            Assert(~link.valid | (kind == Cat(first, last))),
            Assert(~link.valid | (link.payload.head == Mux(first, dst, 0))),
            Assert(~link.valid | (link.payload.vc < n)),
        ]
        # wormhole order on the link
        in_packet = Signal()
        packet_vc = Signal.like(link.payload.vc)
        with m.If(link.valid):
            m.d.comb += Assert(kind[0] | (in_packet & (link.payload.vc == packet_vc)))
            m.d.comb += Assert(~kind[0] | ~in_packet)
            m.d.sync += [in_packet.eq(~kind[1]), packet_vc.eq(link.payload.vc)]
        m.d.comb += Cover(link.valid & kind[1] & ~kind[0] & (link.payload.vc == n - 1))
        for v in range(n):
            level = Signal(range(depth + 2), name=f"level{v}")  # one over B shows an overflow
            arrives = link.valid & (link.payload.vc == v)
            pop = self.pop[v]
            m.d.comb += [
                Assume(~pop | (level != 0)),
                endpoint.inject[0].credit[v].eq(pop),
                Assert(level <= depth),
                Cover(level == depth),
            ]
            m.d.sync += level.eq(level + arrives - pop)
            if self._state:
                m.d.comb += Assert(internal[f"credit0_{v}"] + arrives + level == depth)
        if self._state:  # the packet under way: the endpoint's VC is the one its flits take
            vc = Mux(link.valid, link.payload.vc, packet_vc)
            m.d.comb += [
                Assert(sending == Mux(link.valid, ~kind[1], in_packet)),
                Assert(~sending | (internal["current_vc"] == (1 << vc)[:n])),
            ]
        return m
