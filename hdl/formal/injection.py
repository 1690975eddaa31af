"""Endpoint injection proofs: the flits an endpoint sends into its switch.

The harness drives an :class:`~zfabric.hdl.endpoint.Endpoint` with one attachment (the head is
the destination, :class:`~zfabric.hdl.endpoint.DirectHeads`) from a free packet stream and
holds the switch's local input buffers behind its injection link; the ejection side is idle.

With ``head_flits`` H > 1 (``router.head_bits``, docs/microarchitecture.md, *Heads longer than a
flit*) every packet's first flit is followed by H - 1 head flits; with ``varying`` each packet
has its own count, free in 1..H (a sliced head's, which the endpoint takes from its
destination), and the switch's input returns a credit count (``credit_width`` bits per VC)
rather than a pulse, as a switch input that drops a head's surplus head flits does.

Environment (assumptions):

- the user's beats form whole packets (``first`` exactly on the first beat after a ``last``,
  or the first beat of all); ``valid``, ``dst``, ``data`` and ``last`` are free;
- per injection VC the switch holds the flits that reach it and pops one whenever it holds
  any and likes, returning a credit pulse in the same cycle (as the input unit does); with
  ``credit_width`` > 1 it pops any number up to those it holds and what the count can say,
  and returns that count.

Properties (assertions):

- per VC: the switch's buffer never holds more than ``B`` flits, and (with ``state``: the
  harness reads the endpoint's credit counters) credits + flit on the link + flits held = ``B``;
- every flit on the link is the beat taken the cycle before: its data, its kind (head exactly
  on a first beat, tail on a last), the destination as the head of a head flit (zero on the
  others), and the link is idle otherwise; except, with head flits, that a first flit is
  followed by its packet's head flits before any other beat is taken: each with zero head
  and payload, kind body but the last of a one-beat packet (a tail), and the first flit is
  a tail only if it is all the packet (one head flit, one beat);
- wormhole order on the link: a head only between packets, and every other flit on the VC of
  its packet's head.

Covers: each switch buffer full, and a packet's tail (not a single flit) on the last VC.

With ``state`` the harness also asserts that the endpoint's VC of the packet under way is the
one its flits go on and, with head flits, that its count of head flits still to send (and
whether they end the packet) is the harness's: that, with the credit counters, makes the
properties inductive.
"""

from __future__ import annotations

from amaranth.hdl import Assert, Assume, Cat, Cover, Module, Mux, Signal, Value
from amaranth.lib import wiring
from amaranth.lib.wiring import In

from ..endpoint import DirectHeads, Endpoint
from ..flit import FlitLayout
from .state import opened

__all__ = ["FreeCountHeads", "InjectionHarness"]


class FreeCountHeads(DirectHeads):
    """Destination heads whose head flit count is ``count``, a signal the harness leaves free
    (each packet's, as a sliced head's varies with its destination)."""

    key = ("free count",)

    def __init__(self, count: Signal):
        self.count = count

    def head_flits(self, m, dst, identity):
        return self.count


class InjectionHarness(wiring.Component):
    """One endpoint's injection side (``injection_vcs`` VCs into buffers of ``buffer_depth``)
    under the environment above; ``unit_class`` for planted bugs."""

    def __init__(
        self,
        *,
        injection_vcs: int = 2,
        buffer_depth: int = 4,
        head_flits: int = 1,
        varying: bool = False,
        credit_width: int = 1,
        state: bool = False,
        unit_class: type = Endpoint,
    ):
        self._n, self._depth, self._state, self._unit_class = (
            injection_vcs,
            buffer_depth,
            state,
            unit_class,
        )
        if not isinstance(head_flits, int) or not 1 <= head_flits <= buffer_depth:
            raise ValueError(f"head_flits must be in 1..{buffer_depth}, not {head_flits!r}")
        self._head_flits, self._varying, self._credit_width = head_flits, varying, credit_width
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
                "pop": In(credit_width).array(injection_vcs),
                "count": In(range(head_flits + 1)),
            }
        )

    def elaborate(self, platform):
        m = Module()
        n, depth, most = self._n, self._depth, self._head_flits
        count = self.count if self._varying else most  # this beat's packet's head flits
        endpoint = self._unit_class(
            flit_layout=self._layout,
            dst_width=2,
            n_attachments=1,
            buffer_depth=depth,
            heads=FreeCountHeads(self.count) if self._varying else DirectHeads(),
            source=0,
            injection_vcs=n,
            head_flits=1 if self._varying else most,
            credit_width=self._credit_width,
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
        if self._varying:
            m.d.comb += Assume((self.count >= 1) & (self.count <= most))
        sending = Signal()  # the user is inside a packet
        sent = endpoint.i.valid & endpoint.i.ready
        m.d.comb += Assume(~self.valid | (self.first == ~sending))
        with m.If(sent):
            m.d.sync += sending.eq(~self.last)
        # the beat taken last cycle (and its packet's head flits), as the link must show it now
        was_sent = Signal()
        fields = Cat(
            beat.data, beat.first, beat.last, beat.dst, Value.cast(count)[: len(self.count)]
        )
        taken = Signal(fields.shape())
        m.d.sync += [was_sent.eq(sent), taken.eq(fields)]
        link = endpoint.inject[0].flit
        kind = link.payload.kind.as_value()
        data, first, last, dst, flits = taken[:3], taken[3], taken[4], taken[5:7], taken[7:]
        # head flits still to come on the link after the first flit, and whether they end it
        owed = Signal(range(most), name="owed")
        owed_tail = Signal(name="owed_tail")
        beat_kind = Cat(first, last & ~(first & (flits > 1)))  # a head of several is no tail
        m.d.comb += [
            Assert(~was_sent | (owed == 0)),  # no beat before the head flits owed
            Assert(~link.valid | (link.payload.vc < n)),
        ]
        with m.If(owed == 0):
            m.d.comb += [
                Assert(link.valid == was_sent),
                Assert(~link.valid | (link.payload.payload == data)),
                Assert(~link.valid | (kind == beat_kind)),
                Assert(~link.valid | (link.payload.head == Mux(first, dst, 0))),
            ]
        with m.Else():
            m.d.comb += [
                Assert(~link.valid | (link.payload.payload == 0)),
                Assert(~link.valid | (kind == Cat(0, owed_tail & (owed == 1)))),
                Assert(~link.valid | (link.payload.head == 0)),
            ]
        owed_next, tail_next = Signal.like(owed), Signal()
        m.d.comb += [owed_next.eq(owed), tail_next.eq(owed_tail)]
        with m.If(link.valid & (owed == 0) & first):
            m.d.comb += [owed_next.eq(flits - 1), tail_next.eq(last)]
        with m.Elif(link.valid & (owed != 0)):
            m.d.comb += owed_next.eq(owed - 1)
        m.d.sync += [owed.eq(owed_next), owed_tail.eq(tail_next)]
        # wormhole order on the link
        in_packet = Signal()
        packet_vc = Signal.like(link.payload.vc)
        with m.If(link.valid):
            m.d.comb += Assert(kind[0] | (in_packet & (link.payload.vc == packet_vc)))
            m.d.comb += Assert(~kind[0] | ~in_packet)
            m.d.sync += [in_packet.eq(~kind[1]), packet_vc.eq(link.payload.vc)]
        m.d.comb += Cover(link.valid & kind[1] & ~kind[0] & (link.payload.vc == n - 1))
        if most > 1:  # a one-beat packet whose last head flit ends it
            m.d.comb += Cover(link.valid & kind[1] & (owed == 1))
        for v in range(n):
            level = Signal(range(depth + 2), name=f"level{v}")  # one over B shows an overflow
            arrives = link.valid & (link.payload.vc == v)
            pop = self.pop[v]
            m.d.comb += [
                Assume(pop <= level),
                endpoint.inject[0].credit[v].eq(pop),
                Assert(level <= depth),
                Cover(level == depth),
            ]
            m.d.sync += level.eq(level + arrives - pop)
            if self._state:
                m.d.comb += Assert(internal[f"credit0_{v}"] + arrives + level == depth)
        if self._state:  # the packet under way: the endpoint's VC is the one its flits take
            vc = Mux(link.valid, link.payload.vc, packet_vc)
            link_open = Mux(link.valid, ~kind[1], in_packet)  # inside a packet after this flit
            m.d.comb += [
                Assert(sending == (link_open & ~((owed_next != 0) & tail_next))),
                Assert(~link_open | (internal["current_vc"] == (1 << vc)[:n])),
            ]
            if self._varying or most > 1:
                m.d.comb += [
                    Assert((owed_next == 0) | link_open),
                    Assert(internal["head_flits_left"] == owed_next),
                    Assert((owed_next == 0) | (internal["head_flits_tail"] == tail_next)),
                ]
        return m
