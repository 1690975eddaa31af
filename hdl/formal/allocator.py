"""Allocator proofs: one grant per port, grants only to requesters, one owner per output VC.

The harness drives an :class:`~zfabric.hdl.router.allocator.Allocator` (any setting) from free
inputs: which input VCs have a flit at their front, the route unit's candidates, the output
VCs' credits. It keeps a reference owner per output VC, which also drives the allocator's
``free`` input as the output units' owner bits would, and a ``ready`` bit per output VC that
behaves as an output unit's: it rises or stays when the free ``spare`` input says a credit
remains for the next cycle, and otherwise falls in a cycle a flit goes out on that VC.

Environment (by construction rather than assumption): packets are well formed per input VC
(the harness drives ``head`` high exactly when the VC is between packets); ``tail``, ``valid``,
``cand`` and ``spare`` are free, so packets of any length, any candidates and any credits
(any counter depth: ``ready`` falls only in a cycle its VC sends).

Properties (assertions), every cycle:

- each input port pops at most one VC, only one that has a flit and that it picked;
- each output port grants at most one input port, and an input port pops exactly when one
  output grants it;
- a granted flit's output VC has a credit; a head takes an output VC without owner among its
  candidates; a body or tail flit goes on the output VC its packet's head took (so an output
  VC is owned by at most one input VC, and only a tail releases it).
- ``entering`` (bubble flow control, docs/microarchitecture.md, *Bubble flow control*): the
  harness drives ``free2`` as ``free`` and a free ``roomy`` input (room for two longest
  packets), and asserts that a head takes an output VC its port enters a ring on only when it
  was roomy (in VC allocation with ``pipelined``).
- with ``pipelined`` and the ownership properties, ``send`` is exactly the output VCs the
  granted flits go out on (what the output units count credits on), and with ``split``
  ``release`` those of them whose flit is a tail (without ``pipelined`` the switch decodes
  ``vc`` itself, as this harness does).
- ``pipelined`` (VC allocation in a cycle of its own): the harness follows VC allocation
  through the allocator's state (which input VC wins it, ``va_pop_*``, and the VC it chose,
  ``chosen_*``) to keep its reference owners, and asserts that only a head at the front of an
  input VC holding nothing wins, that it takes one owner-less VC among its candidates, that
  ``acquire`` is exactly the VCs taken, and that every flit, head included, crosses on the VC
  its input VC owns.

- ``split`` (switch allocation in two cycles, ``stages: 4``): the environment changes, since a
  pick is staged a cycle before it crosses and its flit must still be there. Per input VC the
  harness keeps a buffer level (0..B, ``buffer_depth``) that rises by a free arrival and falls
  only by a pop, and drives ``valid`` (level != 0) and ``more`` (level >= 2) from it, so
  ``valid`` falls only by a pop; the front's ``tail`` stays while its flit does. Per output VC
  it keeps a credit count (0..B, from B) that falls by a send and rises by a free credit pulse,
  and drives ``ready``, ``spare``, ``spare2`` and ``keep2`` from it as the output unit does.
  It asserts that the staged picks are one-hot, on VCs with a flit; with the ownership
  properties, that a granted flit's output VC has a credit by that count (so a staged VC's
  second flit crosses only with a second credit) and, with ``state``, that a staged VC holds
  an output VC with a credit, that the staged output VC is the one it holds, and that
  ``held_two`` is "the held output VC has two credits or more".

- ``vc_split`` (VC allocation in two cycles too, ``stages: 5``): the harness follows the VC
  that wins VC allocation (``va_pop_*``) to the output VC its port staged the cycle before
  (``va_staged_target_*``) and asserts the same of it (owner-less when it is taken, among
  the head's candidates, ``acquire`` exactly those). It assumes a staged head's candidates
  stay as they were when it was staged (the switch's route register holds them while the head
  waits) and, with ``state``, asserts that the staged heads are one-hot per port, each at the
  front of an input VC that holds nothing, with a one-hot staged output VC among its
  candidates whose output port is the staged one.

- ``straight`` (the straight bypass, docs/microarchitecture.md, *Straight bypass*): per input
  port a free flit on its link (``arriving``, at most one VC; a head exactly when its VC is
  between packets, a free tail bit and free candidates in one output port). The harness
  asserts that a flit bypasses only from an input VC whose FIFO is empty (``valid`` low) onto
  its port's straight output, that no output takes a bypass and a crossbar grant in one cycle,
  and at most one bypass; with the ownership properties, that a bypassing flit's output VC
  has a credit, that a head takes an owner-less one among its candidates and a body or tail
  goes on the one its packet owns. The reference owners, packets and credits follow the
  bypasses as they follow the pops.

The single-cycle properties hold for any pointers and assignments (with ``split``, together
with the staged picks' invariant above, which the harness always asserts). The ownership ones
depend on the allocator's internal assignment registers: with ``state`` the harness reads them
(:func:`~zfabric.hdl.formal.state.opened`) and asserts, per input VC, that ``held`` is one-hot
or zero, nonzero exactly inside a packet, equal to the output VC the reference owners give it,
and that ``held_ready`` is ``ready`` of that VC. That strengthening makes the ownership
properties inductive (proven unbounded); without it they are checked bounded
(docs/design/verification.md).
"""

from __future__ import annotations

import itertools

from amaranth.hdl import Assert, Assume, Cat, Const, Cover, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In

from ..router.allocator import Allocator
from .state import opened

__all__ = ["AllocatorHarness"]


def _at_most_one(value) -> object:
    """``value`` has at most one bit set."""
    return (value & (value - 1))[: len(value)] == 0


class AllocatorHarness(wiring.Component):
    """An ``Allocator`` (or ``unit_class``, for planted bugs) of ``n_ports`` ports with
    ``n_vcs`` VCs each, or with ``in_vcs`` and ``out_vcs`` VCs per port, under the environment
    above.

    Parameters
    ----------
    ownership : bool
        Assert the ownership properties besides the single-cycle ones.
    state : bool
        Also assert the invariants on the allocator's assignments (for k-induction).
    buffer_depth : int
        With ``split``: the input buffers' depth and the output VCs' initial credits.
    **settings
        ``turns``, ``selection``, ``levels``, ``iterations``, ``pipelined``, ``split`` and
        ``one_port``, as the allocator's (with ``occupancy`` selection its ``low`` flags are
        free inputs); with ``one_port`` the environment offers each head candidates in
        one output port only (the routing's ``one_port``, as the switch builds it).
    """

    def __init__(
        self,
        *,
        n_ports: int = 3,
        n_vcs: int = 2,
        in_vcs: tuple[int, ...] | None = None,
        out_vcs: tuple[int, ...] | None = None,
        ownership: bool = True,
        state: bool = False,
        unit_class: type = Allocator,
        buffer_depth: int = 2,
        **settings,
    ):
        if state and not ownership:
            raise ValueError("state invariants strengthen the ownership properties: pass both")
        self._in_vcs = tuple(in_vcs) if in_vcs is not None else (n_vcs,) * n_ports
        self._out_vcs = tuple(out_vcs) if out_vcs is not None else (n_vcs,) * n_ports
        self._ownership, self._state = ownership, state
        self._unit_class, self._settings = unit_class, settings
        self._buffer_depth = buffer_depth
        n_ovc, max_in = sum(self._out_vcs), max(self._in_vcs)
        n_ports = len(self._in_vcs)
        # with split switch allocation the harness keeps the levels and credits (see above):
        # ``arrive`` and ``pulse`` stand for ``valid`` and ``spare``
        if settings.get("split"):
            members = {"arrive": In(max_in).array(n_ports), "pulse": In(n_ovc)}
        else:
            members = {"valid": In(max_in).array(n_ports), "spare": In(n_ovc)}
        if settings.get("selection") == "occupancy":  # any low-occupancy flags at all
            members["low"] = In(n_ovc)
        if any(settings.get("entering", ())):  # any room for two packets at all
            members["roomy"] = In(n_ovc)
        if settings.get("straight"):  # the flit on each input's link
            members |= {
                "arriving": In(max_in).array(n_ports),
                "link_tail": In(1).array(n_ports),
                "link_cand": In(n_ovc).array(n_ports),
            }
        super().__init__(
            members
            | {
                "tail": In(max_in).array(n_ports),
                "cand": In(n_ovc).array(n_ports, max_in),
            }
        )

    def elaborate(self, platform):
        m = Module()
        in_vcs, out_vcs = self._in_vcs, self._out_vcs
        n_ports, n_ovc, max_in = len(in_vcs), sum(out_vcs), max(in_vcs)
        split = self._settings.get("split", False)
        vc_split = self._settings.get("vc_split", False)
        alloc = self._unit_class(in_vcs=in_vcs, out_vcs=out_vcs, **self._settings)
        pipelined = self._settings.get("pipelined", False)
        # the pipelined allocator's owners are taken in VC allocation, which the harness
        # follows through its state; the staged picks are state too
        if self._state or split or (pipelined and self._ownership):
            m.submodules.alloc, internal = opened(alloc, platform)
        else:
            m.submodules.alloc = alloc
        # reference owner per output VC: an input VC's flat index + 1, 0 for none
        n_ivc = sum(in_vcs)
        owners = [Signal(range(n_ivc + 1), name=f"owner{w}") for w in range(n_ovc)]
        in_packet = [
            [Signal(name=f"in_packet_{p}_{v}") for v in range(n)] for p, n in enumerate(in_vcs)
        ]
        valid = [Signal(max_in, name=f"valid_{p}") for p in range(n_ports)]
        sent = [Const(0, 1)] * n_ovc  # per output VC: a flit goes out on it this cycle
        released = [Const(0, 1)] * n_ovc  # per output VC: a tail goes out on it this cycle
        if split:  # credit counts (see above): ``ready`` and the output unit's flags from them
            depth = self._buffer_depth
            credits = [
                Signal(range(depth + 1), name=f"credits{w}", init=depth) for w in range(n_ovc)
            ]
            ready = Cat(*(c != 0 for c in credits))
            two = Cat(*(c > 1 for c in credits))
            # the next count if the VC sends now (when it has a credit), and if it does not
            sends = [c + self.pulse[w] - (c != 0) for w, c in enumerate(credits)]
            keeps = [c + self.pulse[w] for w, c in enumerate(credits)]
            m.d.comb += [
                alloc.spare.eq(Cat(*(n >= 1 for n in sends))),
                alloc.spare2.eq(Cat(*(n >= 2 for n in sends))),
                alloc.keep2.eq(Cat(*(n >= 2 for n in keeps))),
            ]
        else:
            ready = Signal(n_ovc, init=(1 << n_ovc) - 1)
            m.d.comb += alloc.spare.eq(self.spare)
        if self._settings.get("selection") == "occupancy":
            m.d.comb += alloc.low.eq(self.low)
        entering = self._settings.get("entering", ()) if "roomy" in self.signature.members else ()
        if entering:
            m.d.comb += alloc.free2.eq(alloc.free & self.roomy)
        m.d.comb += [
            alloc.ready.eq(ready),
            alloc.free.eq(sum((owner == 0) << w for w, owner in enumerate(owners))),
        ]
        for p, n_vcs in enumerate(in_vcs):
            if vc_split:  # a waiting head's candidates are a register in the switch
                for v in range(n_vcs):
                    last_cand = Signal(n_ovc, name=f"last_cand_{p}_{v}")
                    m.d.sync += last_cand.eq(self.cand[p][v])
                    staged = internal[f"va_staged_{p}"][v]
                    m.d.comb += Assume(~staged | (self.cand[p][v] == last_cand))
            if split:  # buffer levels: ``valid`` falls only by a pop, the front's tail stays
                stays = Signal(n_vcs, name=f"stays_{p}")
                last_tail = Signal(n_vcs, name=f"last_tail_{p}")
                m.d.sync += [
                    stays.eq(valid[p] & ~alloc.pop[p]),
                    last_tail.eq(self.tail[p]),
                ]
                m.d.comb += Assume(((self.tail[p] ^ last_tail) & stays) == 0)
                for v in range(n_vcs):
                    level = Signal(range(self._buffer_depth + 1), name=f"level_{p}_{v}")
                    after = level + self.arrive[p][v] - alloc.pop[p][v]
                    m.d.sync += level.eq(after)
                    m.d.comb += [
                        Assume(after <= self._buffer_depth),
                        valid[p][v].eq(level != 0),
                        alloc.more[p][v].eq(level > 1),
                    ]
                staged = internal[f"staged_{p}"]
                m.d.comb += [  # a staged pick keeps its flit
                    Assert(_at_most_one(staged)),
                    Assert((staged & ~valid[p][:n_vcs]) == 0),
                ]
            else:
                m.d.comb += valid[p].eq(self.valid[p])
            m.d.comb += [
                alloc.valid[p].eq(valid[p]),
                alloc.tail[p].eq(self.tail[p]),
                alloc.head[p].eq(~sum(in_packet[p][v] << v for v in range(n_vcs))),
                Assert(_at_most_one(alloc.pop[p])),
                Assert((alloc.pop[p] & ~(alloc.pick[p] & valid[p])) == 0),
                Assert(_at_most_one(alloc.grant[p])),
            ]
            for v in range(n_vcs):
                m.d.comb += alloc.cand[p][v].eq(self.cand[p][v])
                if self._settings.get("one_port"):  # the routing offers one port per head
                    ends = [sum(out_vcs[:o]) for o in range(n_ports + 1)]
                    cand = self.cand[p][v]
                    offered = Cat(*(cand[a:b].any() for a, b in itertools.pairwise(ends)))
                    m.d.comb += Assume(_at_most_one(offered))
        straight = self._settings.get("straight", ())
        if straight:
            self._straight_environment(m, alloc, in_packet, valid)
        for p in range(n_ports):
            granted_by = sum(alloc.grant[o][p] for o in range(n_ports))
            m.d.comb += Assert((granted_by != 0) == alloc.pop[p].any())
            if self._ownership:  # one output only: needs the assignments one-hot
                m.d.comb += Assert(granted_by <= 1)
        acquired = 0  # pipelined: the output VCs VC allocation hands out this cycle
        for p, n_vcs in enumerate(in_vcs):
            staged_targets = 0  # split: per staged VC, the output VC it holds
            for v in range(n_vcs):
                me = sum(in_vcs[:p]) + v + 1
                head = ~in_packet[p][v]
                crosses = Signal(name=f"crosses_{p}_{v}")
                m.d.comb += crosses.eq(alloc.pop[p][v])
                if pipelined and self._ownership:  # VC allocation: who wins it, which VC
                    takes = internal[f"va_pop_{p}"][v]
                    # vc_split: the VC its port staged last cycle, not the one it would choose
                    chosen = internal[f"va_staged_target_{p}" if vc_split else f"chosen_{p}_{v}"]
                    acquired = acquired | (chosen & takes.replicate(n_ovc))
                    m.d.comb += [
                        Assert(~takes | (valid[p][v] & head & ~internal[f"held_{p}_{v}"].any())),
                        Assert(~takes | _at_most_one(chosen) & chosen.any()),
                    ]
                    for flat in range(n_ovc):
                        m.d.comb += Assert(
                            ~takes | ~chosen[flat] | ((owners[flat] == 0) & self.cand[p][v][flat])
                        )
                        if entering and entering[p] >> flat & 1:
                            m.d.comb += Assert(~takes | ~chosen[flat] | self.roomy[flat])
                        with m.If(takes & chosen[flat]):
                            m.d.sync += owners[flat].eq(me)
                for o in range(n_ports):
                    for w in range(out_vcs[o]):
                        flat = sum(out_vcs[:o]) + w
                        onto = alloc.grant[o][p] & crosses & (alloc.vc[o] == w)
                        sent[flat] = sent[flat] | onto
                        released[flat] = released[flat] | (onto & self.tail[p][v])
                        if self._ownership and pipelined:  # every flit on the VC it took
                            m.d.comb += [
                                Assert(~onto | ready[flat]),
                                Assert(~onto | (owners[flat] == me)),
                            ]
                        elif self._ownership:
                            m.d.comb += [
                                Assert(~onto | ready[flat]),
                                Assert(~onto | ~head | (owners[flat] == 0)),
                                Assert(~onto | ~head | self.cand[p][v][flat]),
                                Assert(~onto | head | (owners[flat] == me)),
                            ]
                            if entering and entering[p] >> flat & 1:
                                m.d.comb += Assert(~onto | ~head | self.roomy[flat])
                            with m.If(onto & head):
                                m.d.sync += owners[flat].eq(me)
                        with m.If(onto & self.tail[p][v]):
                            m.d.sync += owners[flat].eq(0)
                if straight and straight[p] >= 0:  # the bypass: as a crossing flit does
                    sent, released = self._bypass_properties(
                        m, alloc, p, v, me, owners, in_packet, ready, sent, released
                    )
                with m.If(crosses & ~self.tail[p][v]):
                    m.d.sync += in_packet[p][v].eq(1)
                with m.If(crosses & self.tail[p][v]):
                    m.d.sync += in_packet[p][v].eq(0)
                if self._state:
                    held = internal[f"held_{p}_{v}"]
                    mine = sum((owner == me) << w for w, owner in enumerate(owners))
                    m.d.comb += [
                        Assert(_at_most_one(held)),
                        # pipelined: a head holds its VC from VC allocation on, before it
                        # crosses
                        Assert(
                            (~in_packet[p][v] | held.any())
                            if pipelined
                            else (held.any() == in_packet[p][v])
                        ),
                        Assert(held == mine),
                        Assert(internal[f"held_ready_{p}_{v}"] == (held & ready).any()),
                    ]
                    if pipelined:  # only VC allocation reads ``holding``
                        m.d.comb += Assert(internal[f"holding_{p}_{v}"] == held.any())
                    if split:  # a staged VC holds an output VC with a credit; two credits
                        is_staged = internal[f"staged_{p}"][v]
                        staged_targets = staged_targets | (held & is_staged.replicate(n_ovc))
                        m.d.comb += [
                            Assert(~is_staged | (held & ready).any()),
                            Assert(internal[f"held_two_{p}_{v}"] == (held & two).any()),
                        ]
            if self._state and split:
                m.d.comb += Assert(internal[f"staged_target_{p}"] == staged_targets)
            if self._state and vc_split:  # the staged head waits at its front, holding nothing
                staged = internal[f"va_staged_{p}"]
                target = internal[f"va_staged_target_{p}"]
                ports = Cat(
                    *(
                        target[sum(out_vcs[:o]) : sum(out_vcs[: o + 1])].any()
                        for o in range(n_ports)
                    )
                )
                m.d.comb += [
                    Assert(_at_most_one(staged) & _at_most_one(target)),
                    Assert(staged.any() == target.any()),
                    Assert(internal[f"va_staged_port_{p}"] == ports),
                ]
                for v in range(n_vcs):
                    waits = valid[p][v] & ~in_packet[p][v] & ~internal[f"held_{p}_{v}"].any()
                    m.d.comb += Assert(~staged[v] | (waits & ((target & ~self.cand[p][v]) == 0)))
        if pipelined and self._ownership:
            m.d.comb += Assert(alloc.acquire == acquired)
        if self._ownership and pipelined:  # one-hot only with one-hot ``held`` (ownership)
            # the output units' one-hot views of the crossing flits: ``vc`` decoded, tails
            m.d.comb += Assert(alloc.send == Cat(*sent))
            if split:
                m.d.comb += Assert(alloc.release == Cat(*released))
        for flat in range(n_ovc):
            if split:
                after = credits[flat] - sent[flat] + self.pulse[flat]
                m.d.sync += credits[flat].eq(after)
                m.d.comb += Assume(after <= self._buffer_depth)
            else:
                m.d.sync += ready[flat].eq(self.spare[flat] | (ready[flat] & ~sent[flat]))
        if straight:  # a head bypasses; a body bypasses behind it
            m.d.comb += Cover(alloc.bypass_vc.any())
        # an input port loses the output it picked to another; output VC 0 passes from one
        # input VC to another after the first one's tail
        previous = Signal.like(owners[0], name="previous_owner0")
        with m.If(owners[0] != 0):
            m.d.sync += previous.eq(owners[0])
        m.d.comb += [
            Cover((alloc.pick[0] != 0) & (alloc.pop[0] == 0) & (alloc.pop[1] != 0)),
            Cover((owners[0] != 0) & (previous != 0) & (owners[0] != previous)),
        ]
        if split:  # input VC 0 of port 0 sends in two cycles running (a second-flit pick)
            popped = Signal(name="popped_0_0")
            m.d.sync += popped.eq(alloc.pop[0][0])
            m.d.comb += Cover(popped & alloc.pop[0][0])
        return m

    def _straight_environment(self, m: Module, alloc, in_packet, valid) -> None:
        """The flits on the links (a head exactly between packets) and the single-cycle
        bypass properties: from an empty FIFO, onto the straight output, never beside a
        crossbar grant there, at most one VC per output (with the ownership properties: a body's
        VC is its one-hot assignment)."""
        in_vcs, out_vcs = self._in_vcs, self._out_vcs
        n_ports = len(in_vcs)
        ends = [sum(out_vcs[:o]) for o in range(n_ports + 1)]
        straight = self._settings["straight"]
        taken = alloc.bypass_vc
        for p, n_vcs in enumerate(in_vcs):
            arriving = self.arriving[p]
            between = sum(~in_packet[p][v] << v for v in range(n_vcs))
            cand = self.link_cand[p]
            offered = Cat(*(cand[a:b].any() for a, b in itertools.pairwise(ends)))
            m.d.comb += [
                Assume(_at_most_one(arriving)),
                Assume((arriving >> n_vcs) == 0),
                Assume(_at_most_one(offered)),
                alloc.arriving[p].eq(arriving),
                alloc.link_head[p].eq((arriving & between).any()),
                alloc.link_tail[p].eq(self.link_tail[p]),
                alloc.link_cand[p].eq(cand),
                Assert((alloc.bypass[p] & ~(arriving & ~valid[p])) == 0),
            ]
            if straight[p] < 0:
                m.d.comb += Assert(alloc.bypass[p] == 0)
                continue
            o = straight[p]
            into = taken[ends[o] : ends[o + 1]]
            # a bypass from p lands on p's straight output, and only there
            m.d.comb += Assert(alloc.bypass[p].any() == into.any())
        for o in range(n_ports):
            into = taken[ends[o] : ends[o + 1]]
            m.d.comb += Assert(~(into.any() & alloc.grant[o].any()))
            if self._ownership:  # one VC: needs the assignments one-hot
                m.d.comb += Assert(_at_most_one(into))
            if o not in straight:
                m.d.comb += Assert(~into.any())

    def _bypass_properties(self, m, alloc, p, v, me, owners, in_packet, ready, sent, released):
        """Input VC ``v`` of port ``p`` (flat index ``me`` - 1) bypassing: its output VC
        has a credit, a head takes an owner-less candidate, a body or tail the VC it owns;
        the reference owners and packets follow. Returns ``sent`` and ``released`` with it."""
        out_vcs = self._out_vcs
        o = self._settings["straight"][p]
        base = sum(out_vcs[:o])
        head = ~in_packet[p][v]
        crossed = alloc.bypass[p][v]
        tail = self.link_tail[p]
        for w in range(out_vcs[o]):
            flat = base + w
            onto = crossed & alloc.bypass_vc[flat]
            sent[flat] = sent[flat] | onto
            released[flat] = released[flat] | (onto & tail)
            if self._ownership:
                m.d.comb += [
                    Assert(~onto | ready[flat]),
                    Assert(~onto | ~head | (owners[flat] == 0)),
                    Assert(~onto | ~head | self.link_cand[p][flat]),
                    Assert(~onto | head | (owners[flat] == me)),
                ]
                with m.If(onto & head):
                    m.d.sync += owners[flat].eq(me)
            with m.If(onto & tail):
                m.d.sync += owners[flat].eq(0)
        with m.If(crossed & ~tail):
            m.d.sync += in_packet[p][v].eq(1)
        with m.If(crossed & tail):
            m.d.sync += in_packet[p][v].eq(0)
        return sent, released
