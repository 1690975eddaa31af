"""Endpoint proofs: the ejection side's receive buffers and what the user sees.

The harness drives one attachment's ejection link of an :class:`~zfabric.hdl.endpoint.Endpoint`
(docs/microarchitecture.md, Endpoints) from free inputs, as the switch's local output would,
and takes its ``o`` stream with a free ``ready``; nothing is injected.

Environment (assumptions):

- the switch holds ``B`` credits per ejection VC at reset, spends one per flit and gets one back
  per credit pulse; it sends on a VC only while it holds a credit;
- per VC the flits form whole packets (a head exactly when the VC is between packets; the tail
  is free, so packets of any length, single flits included), interleaved between VCs at will,
  as wormhole switching delivers them;
- each flit's payload carries its VC and its sequence number on that VC (modulo
  ``2**tag_width``).

Properties (assertions):

- ``buffers``, per VC (needs ``state``: the harness reads each buffer's level through
  :func:`~zfabric.hdl.formal.state.opened`): switch credits + flits in the receive buffer ==
  ``B``, so no buffer overflows (a flit is never written into a full one). Inductive;
- ``presentation``: a credit pulse goes back exactly in the cycles the user takes a flit of
  that VC; the stream presents one packet at a time: a flit is a head exactly when
  no packet is under way, and until the tail is taken every flit presented is of the VC whose
  head was taken; a presented flit stays, unchanged, until it is taken; per VC every flit is
  presented once, in order (its sequence number is the count of that VC's flits taken). These
  depend on the buffers' contents and the choice of VC: with ``state`` the harness also reads
  each buffer's pointers and entries (:func:`~zfabric.hdl.formal.state.peek`) and the VC being
  presented, and asserts that the entries are the flits sent and not yet taken, in order, with
  the head and tail bits of whole packets (a head first unless that VC's packet is under way,
  a head after each tail, the last a tail unless the sender is inside a packet), and that the
  VC being presented is the one whose packet is under way (or, before its head is taken, one
  with a flit in its buffer). That strengthening makes them inductive (proven unbounded);
  without it they are checked bounded.

With ``head_flits`` H > 1 (``router.head_bits``, docs/microarchitecture.md, *Heads longer than a
flit*) every packet is its first flit, H - 1 head flits (kind body, the last a tail for a
one-beat packet) whose payload is free (the endpoint must never show it), then its other
beats; the sequence numbers count every flit, head flits included, and only the first flit
and the beats carry theirs. ``presentation`` then states: the user sees the first flit's
payload as the packet's first beat, then the beats, in order (a first beat's sequence number
is the one after the previous packet's last flit, a beat's after it skips the head flits);
a credit goes back for a VC only in a cycle its beat is taken or nothing is shown (a hidden
flit taken), at most one a cycle, and when a beat is taken exactly as many credits have come
back for its VC as flits were sent before the flit that shows it (so every hidden flit was
taken, once). The entries' invariants then give each entry its place in its packet (the
first flit, a head flit, a beat), from the place of the next flit to take (the head flits
the presented packet still hides, or whether a packet is under way) on, a tail resetting it;
the sender stands at the place after the last entry, and while head flits are hidden the
endpoint keeps the first flit's payload. Inductive as for heads of one flit.
"""

from __future__ import annotations

from amaranth.hdl import Assert, Assume, Cat, Const, Cover, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In

from ..endpoint import DirectHeads, Endpoint
from ..flit import FlitLayout
from .allocator import _at_most_one
from .state import opened, peek

__all__ = ["EndpointHarness"]


class EndpointHarness(wiring.Component):
    """One endpoint's receive side (``ejection_vcs`` VCs, ``buffer_depth``) under the
    environment above; ``unit_class`` for planted bugs."""

    def __init__(
        self,
        *,
        ejection_vcs: int = 2,
        buffer_depth: int = 4,
        tag_width: int = 4,
        check: str = "buffers",
        state: bool = False,
        head_flits: int = 1,
        unit_class: type = Endpoint,
    ):
        if check not in ("buffers", "presentation"):
            raise ValueError(f"check must be 'buffers' or 'presentation', not {check!r}")
        if check == "buffers" and not state:
            raise ValueError("the buffer levels are internal: check='buffers' needs state=True")
        if (1 << tag_width) <= buffer_depth:
            raise ValueError(f"tag_width {tag_width!r} cannot count {buffer_depth!r} flits")
        if not isinstance(head_flits, int) or not 1 <= head_flits <= buffer_depth:
            raise ValueError(f"head_flits must be in 1..{buffer_depth}, not {head_flits!r}")
        self._head_flits = head_flits
        self._n, self._depth, self._tag_width = ejection_vcs, buffer_depth, tag_width
        self._vc_bits = max(1, (ejection_vcs - 1).bit_length())
        self._layout = FlitLayout(
            payload_width=self._vc_bits + tag_width,
            vc_width=self._vc_bits,
            head_width=1,
            src_width=1,
        )
        self._check, self._state, self._unit_class = check, state, unit_class
        super().__init__(
            {
                "send": In(1),
                "send_vc": In(self._vc_bits),
                "send_tail": In(1),
                "take": In(1),
                "junk": In(self._layout.payload_width),  # a head flit's payload
            }
        )

    def elaborate(self, platform):
        m = Module()
        n, depth, vc_bits = self._n, self._depth, self._vc_bits
        endpoint = self._unit_class(
            flit_layout=self._layout,
            dst_width=1,
            n_attachments=1,
            buffer_depth=depth,
            heads=DirectHeads(),
            source=0,
            ejection_vcs=n,
            head_flits=self._head_flits,
        )
        if self._state:
            m.submodules.endpoint, internal = opened(endpoint, platform)
        else:
            m.submodules.endpoint = endpoint
        link, out = endpoint.eject[0], endpoint.o[0]
        m.d.comb += [endpoint.i.valid.eq(0), out.ready.eq(self.take), Assume(self.send_vc < n)]
        taken = out.valid & out.ready
        shown_vc = out.payload.data[:vc_bits]
        shown_tag = out.payload.data[vc_bits:]
        current = Signal(range(n + 1))  # the VC whose packet is under way, + 1; 0 for none
        kinds = link.flit.payload.kind.as_value()
        h = self._head_flits
        for v in range(n):
            credits = Signal(range(depth + 1), name=f"credits{v}", init=depth)
            written = Signal(self._tag_width, name=f"written{v}")
            shown = Signal(self._tag_width, name=f"shown{v}")
            in_packet = Signal(name=f"in_packet{v}")
            left = Signal(range(h), name=f"head_flits_left{v}")  # behind the first, to send
            sent = Signal(name=f"sent{v}")
            mine = Signal(name=f"taken{v}")
            m.d.comb += [
                sent.eq(self.send & (self.send_vc == v)),
                mine.eq(taken & (shown_vc == v)),
                Assume(~sent | (credits != 0)),
                Cover(mine & (shown == depth + 1)),
            ]
            # the sequence number of the next flit to take (shown's, with heads of one flit)
            returned = Signal(self._tag_width, name=f"returned{v}")
            m.d.sync += returned.eq(returned + link.credit[v])
            if self._check == "presentation":
                m.d.comb += Assert(~mine | (shown_tag == shown))
                if h == 1:
                    m.d.comb += Assert(link.credit[v] == mine)
                else:  # hidden flits return credits with nothing shown, one a cycle
                    flit = (shown + Mux(out.payload.first, h - 1, 0))[: self._tag_width]
                    m.d.comb += [
                        Assert(~mine | link.credit[v]),
                        Assert(~link.credit[v] | mine | ~out.valid),
                        Assert(~mine | (returned == flit)),
                    ]
            head_flit = in_packet & (left != 0)
            with m.If(sent):
                # a head of several flits is no tail; its last head flit ends a one-beat packet
                ends = Mux(~in_packet, h == 1, Mux(left != 0, left == 1, 1))
                m.d.comb += [
                    link.flit.payload.vc.eq(v),
                    link.flit.payload.payload.eq(
                        Mux(head_flit, self.junk, Cat(Const(v, vc_bits), written))
                    ),
                    kinds.eq(Cat(~in_packet, self.send_tail & ends)),
                ]
                m.d.sync += in_packet.eq(~(self.send_tail & ends))
                with m.If(~in_packet):
                    m.d.sync += left.eq(h - 1)
                with m.Elif(left != 0):
                    m.d.sync += left.eq(left - 1)
            m.d.sync += [
                credits.eq(credits - sent + link.credit[v]),
                written.eq(written + sent),
                shown.eq(shown + Mux(mine, Mux(out.payload.first, h, 1), 0)),
            ]
            if self._state:
                fifo = f"received0_{v}." if n > 1 else "received0."
                level = internal[fifo + "level"]
                m.d.comb += [Assert(credits + level == depth), Cover(level == depth)]
                if self._check == "presentation":
                    sender = (in_packet, left, written)
                    self._invariants(m, internal, fifo, v, current, sender, shown, returned)
        m.d.comb += link.flit.valid.eq(self.send)
        if self._check == "buffers":
            return m
        if h > 1:
            m.d.comb += [
                Assert(_at_most_one(link.credit)),
                Cover(taken & out.payload.first & out.payload.last),  # a one-beat packet
            ]
        # one packet at a time, kept until its tail is taken
        m.d.comb += [
            Assert(~out.valid | (shown_vc < n)),
            Assert(~out.valid | (out.payload.first == (current == 0))),
            Assert(~out.valid | (current == 0) | (shown_vc == current - 1)),
        ]
        with m.If(taken & out.payload.first):
            m.d.sync += current.eq(shown_vc + 1)
        with m.If(taken & out.payload.last):
            m.d.sync += current.eq(0)
        # a presented flit stays until it is taken
        waiting = Signal()
        kept = Signal.like(out.payload.as_value(), name="kept")
        m.d.sync += [waiting.eq(out.valid & ~out.ready), kept.eq(out.payload.as_value())]
        m.d.comb += [
            Assert(~waiting | (out.valid & (out.payload.as_value() == kept))),
            # a second VC's packet follows a first's
            Cover(taken & out.payload.first & (shown_vc == n - 1) & (current == 0)),
        ]
        if self._state:
            m.d.comb += Assert(current <= n)
        if self._state and n > 1:  # the VC being presented is the one whose packet is under way
            presenting = internal["presenting0"]
            m.d.comb += Assert(_at_most_one(presenting))
            for v in range(n):
                m.d.comb += Assert((current != v + 1) | (presenting == 1 << v))
                # a VC chosen before its head is taken holds that head in its buffer
                level = internal[f"received0_{v}.level"]
                waiting = level != 0
                if h > 1:  # or its first flit taken, hidden, and head flits still to come
                    waiting = waiting | (internal["head_flits_behind0"] != 0)
                m.d.comb += Assert(~presenting[v] | (current != 0) | waiting)
            if h > 1:  # hidden head flits still to take: of the VC being presented
                m.d.comb += Assert((internal["head_flits_behind0"] == 0) | presenting.any())
        return m

    def _invariants(self, m, internal, fifo, v, current, sender, shown, returned) -> None:
        """Receive buffer ``fifo`` of VC ``v``: its pointers agree with its level, and its
        entries are the flits sent and not yet taken, in order: this VC's, tagged from
        ``returned`` on, each at its place in its packet (the first flit, a head flit, a beat:
        a first flit exactly after a tail, and after the ones this VC's packet has already
        taken), the last one where the sender stands (``sender``: inside a packet, head flits
        left to send, the next sequence number)."""
        depth, vc_bits, tags, h = self._depth, self._vc_bits, self._tag_width, self._head_flits
        in_packet, left, written = sender
        level, consume = internal[fifo + "level"], internal[fifo + "consume"]
        entries = [
            peek(internal[fifo + "storage"], i, f"{fifo[:-1]}_entry{i}") for i in range(depth)
        ]
        # hidden head flits this VC's packet still has to take (0 unless it is presented)
        behind = 0
        if h > 1:
            behind = internal["head_flits_behind0"]
            m.d.comb += Assert(behind < h)
            if self._n > 1:
                behind = Mux(internal["presenting0"][v], behind, 0)
            m.d.comb += [
                Assert((behind == 0) | (current == 0)),
                # the first flit's payload, kept for the first beat
                Assert((behind == 0) | (internal["first_data0"] == Cat(Const(v, vc_bits), shown))),
            ]
        # the place in its packet of the next flit to take: 0 the first flit, 1 to h - 1 its
        # head flits, h a beat after them
        place = Signal(range(h + 1), name=f"place{v}_0")
        m.d.comb += place.eq(Mux(behind != 0, h - behind, Mux(current == v + 1, h, 0)))
        m.d.comb += [
            Assert(consume < depth),
            Assert(internal[fifo + "produce"] == (consume + level) % depth),
            Assert(written == (returned + level)[:tags]),
            Assert(shown == (returned - Mux(behind != 0, h - behind, 0))[:tags]),
            Assert(in_packet | (left == 0)),
            Assert(left < h),  # counters of range(h) hold up to the next power of two
        ]
        places = [place]
        for j in range(depth):
            # the j-th flit to take: kind (head, tail), source, VC, tag
            entry = Signal(len(entries[0]), name=f"{fifo[:-1]}_at{j}")
            with m.Switch(consume):
                for r in range(depth):
                    with m.Case(r):
                        m.d.comb += entry.eq(entries[(r + j) % depth])
            at = places[j]
            with m.If(level > j):
                m.d.comb += [
                    Assert(entry[0] == (at == 0)),
                    Assert(~entry[1] | (at >= h - 1)),
                ]
                with m.If((at == 0) | (at == h)):  # head flits carry nothing to check
                    m.d.comb += [
                        Assert(entry[3 : 3 + vc_bits] == v),
                        Assert(entry[3 + vc_bits :] == (returned + j)[:tags]),
                    ]
            after = Signal(range(h + 1), name=f"place{v}_{j + 1}")
            m.d.comb += after.eq(Mux(entry[1], 0, Mux(at == h, h, at + 1)))
            places.append(after)
        # where the sender stands: the place of the next flit it sends
        standing = Mux(in_packet, h - left, 0)
        for j in range(depth + 1):
            with m.If(level == j):
                m.d.comb += Assert(standing == places[j])
