"""Output unit proofs: credit counting and VC ownership, checked on the unit's ports.

The harness drives an :class:`~zfabric.hdl.router.output_unit.OutputUnit` from free inputs
constrained to the allocator's contract, and keeps a reference count of credits and owners.

Environment (assumptions):

- the crossbar sends a flit on output VC ``w`` only while the reference count says ``w`` has a
  credit; a head (or single) only on a VC without owner, a body or tail only on an owned VC
  (what the allocator grants: tests/formal checks that side on the allocator). With
  ``acquire`` (``stages: 3``) owners are taken by the free ``acquire`` input instead, only of a
  VC without owner and sending nothing (VC allocation's contract), and every flit goes on an
  owned VC; ``sent`` and ``released`` are the flit's VC one-hot and that bit if it is a tail,
  as the allocator drives them;
- the downstream receiver holds every flit that reaches it and returns a credit pulse for one
  of them whenever it likes, so the output may stall for ever; with ``credit_width`` > 1 (a
  switch input that drops a head's surplus head flits, docs/microarchitecture.md, *Heads
  longer than a flit*) it returns a count of any number of them it holds, up to what the
  count's width says.

Properties (assertions), per output VC:

- the receiver never holds more than ``B`` flits (the unit spends no credit it lacks);
- credit conservation: reference credits (``B`` minus flits sent plus credits returned) +
  flits on the link + flits the receiver holds == ``B``, so the counter never exceeds ``B``
  and adds exactly the count returned;
- ``ready`` (the registered credit-nonzero flag) equals ``credit != 0`` every cycle, and
  ``spare`` says whether the next cycle's count is nonzero even if this one spends a credit;
- with ``second`` (``stages: 4``), ``spare2`` and ``keep2`` say whether the next cycle's
  count is two or more if this one spends a credit (in a cycle with a credit to spend: the
  allocator reads it only when a flit goes), and if it does not;
- ``free`` is low exactly between a head's crossing and its tail's (set by a head, cleared by a
  tail; a single flit leaves it free); for an ``atomic`` VC (an adaptive one) also while any
  credit is out: free means no owner and nothing in the receiver, on the link or coming back;
  with ``whole`` (cut-through and store-and-forward, docs/microarchitecture.md, *Switching
  modes*) also while the reference count is below ``whole``;
- with ``entering`` (bubble flow control, docs/microarchitecture.md, *Bubble flow control*),
  ``free2``, what a head entering a ring reads, is high exactly when the VC has no owner and
  the reference count is at least ``entering`` (two longest packets): the ring keeps its bubble.

With ``state`` the harness also reads the unit's counters, credit-nonzero flags and owner bits
(:func:`~zfabric.hdl.formal.state.opened`) and asserts they equal the reference ones: that
strengthening makes the properties inductive, so they are proven unbounded; without it they
are checked bounded (docs/design/verification.md).
"""

from __future__ import annotations

from amaranth.hdl import Assert, Assume, Cover, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In

from ..flit import FlitLayout
from ..router.output_unit import OutputUnit
from .state import opened

__all__ = ["OutputUnitHarness"]


class OutputUnitHarness(wiring.Component):
    """An ``OutputUnit`` (or ``unit_class``, for planted bugs) between a crossbar that obeys
    the allocator's contract and a receiver that returns credits when it likes."""

    def __init__(
        self,
        *,
        n_vcs: int = 2,
        buffer_depth: int = 2,
        acquire: bool = False,
        second: bool = False,
        state: bool = False,
        credit_width: int = 1,
        atomic: tuple[bool, ...] = (),
        whole: int = 0,
        entering: int = 0,
        unit_class: type = OutputUnit,
    ):
        self._layout = FlitLayout(
            payload_width=2, vc_width=max(1, (n_vcs - 1).bit_length()), head_width=1, src_width=1
        )
        self._n_vcs, self._depth, self._unit_class = n_vcs, buffer_depth, unit_class
        self._acquire, self._second, self._state = acquire, second, state
        self._credit_width = credit_width
        self._atomic = atomic
        self._whole, self._entering = whole, entering
        super().__init__(
            {
                "send": In(1),
                "send_vc": In(self._layout.vc_width),
                "send_kind": In(2),
                "send_payload": In(2),
                "give_back": In(credit_width).array(n_vcs),
                "take": In(n_vcs),
            }
        )

    def elaborate(self, platform):
        m = Module()
        depth = self._depth
        unit = self._unit_class(
            flit_layout=self._layout,
            n_vcs=self._n_vcs,
            buffer_depth=depth,
            acquire=self._acquire,
            second=self._second,
            credit_width=self._credit_width,
            atomic=self._atomic,
            whole=self._whole,
            entering=self._entering,
        )
        if self._state:
            m.submodules.unit, internal = opened(unit, platform)
        else:
            m.submodules.unit = unit
        if self._acquire:
            m.d.comb += unit.acquire.eq(self.take)
        m.d.comb += [
            unit.i.valid.eq(self.send),
            unit.i.payload.vc.eq(self.send_vc),
            unit.i.payload.kind.eq(self.send_kind),
            unit.i.payload.payload.eq(self.send_payload),
            Assume(self.send_vc < self._n_vcs),
        ]
        link = unit.link.flit
        for vc in range(self._n_vcs):
            credits = Signal(range(depth + 1), name=f"credits{vc}", init=depth)
            held = Signal(range(depth + 2), name=f"held{vc}")  # one over B shows an overflow
            owned = Signal(name=f"owned{vc}")
            sent = Signal(name=f"sent{vc}")
            arrives = Signal(name=f"arrives{vc}")
            pulse = unit.link.credit[vc]
            m.d.comb += [
                sent.eq(self.send & (self.send_vc == vc)),
                # the allocator's one-hot view of the flit (its proofs assert it is this)
                unit.sent[vc].eq(sent),
                unit.released[vc].eq(sent & self.send_kind[1]),
                arrives.eq(link.valid & (link.payload.vc == vc)),
                pulse.eq(self.give_back[vc]),
                Assume(pulse <= held),
                Assume(~sent | (credits != 0)),
            ]
            if self._acquire:
                take = self.take[vc]
                m.d.comb += [Assume(~sent | owned), Assume(~take | (~owned & ~sent))]
            else:
                take = sent & self.send_kind[0]
                m.d.comb += Assume(~sent | (self.send_kind[0] == ~owned))
            m.d.sync += [
                credits.eq(credits - sent + pulse),
                held.eq(held + arrives - pulse),
            ]
            if self._state:
                m.d.comb += [
                    Assert(internal[f"credit{vc}"] == credits),
                    Assert(internal[f"nonzero{vc}"] == (credits != 0)),
                    Assert(internal["owned"][vc] == owned),
                ]
            with m.If(take):
                m.d.sync += owned.eq(1)
            with m.If(sent & self.send_kind[1]):
                m.d.sync += owned.eq(0)
            m.d.comb += [
                Assert(held <= depth),
                Assert(credits + arrives + held == depth),
                Assert(unit.ready[vc] == (credits != 0)),
                # the next count if this cycle spends a credit whenever it has one
                Assert(unit.spare[vc] == (credits + pulse - (credits != 0) != 0)),
                Assert(unit.free[vc] == (~owned & (held == 0) & ~arrives))
                if self._atomic and self._atomic[vc]
                else Assert(unit.free[vc] == (~owned & (credits >= self._whole))),
                *(
                    [
                        # read only in a cycle that sends, so with a credit (a count of two
                        # coming back to none is not "two after sending")
                        Assert((credits == 0) | (unit.spare2[vc] == (credits + pulse - 1 >= 2))),
                        Assert(unit.keep2[vc] == (credits + pulse >= 2)),
                    ]
                    if self._second
                    else []
                ),
                *(
                    [Assert(unit.free2[vc] == (~owned & (credits >= self._entering)))]
                    if self._entering
                    else []
                ),
                Cover((credits == 0) & owned),
                Cover(sent & self.send_kind[1] & ~self.send_kind[0] & (held == depth - 1)),
            ]
            if self._credit_width > 1:  # the widest count back in one cycle
                m.d.comb += Cover(pulse == (1 << self._credit_width) - 1)
        return m
