"""Allocator proofs: one grant per port, grants only to requesters, one owner per output VC.

The harness drives an :class:`~zfabric.hdl.router.allocator.Allocator` (any setting; the
ownership properties only without ``pipelined``, whose owners move on ``acquire``) from free
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

The single-cycle properties hold for any pointers and assignments; the ownership ones depend
on the allocator's internal assignment registers and are checked bounded (docs/formal.md).
"""

from __future__ import annotations

from amaranth.hdl import Assert, Cover, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In

from ..router.allocator import Allocator

__all__ = ["AllocatorHarness"]


def _at_most_one(value) -> object:
    """``value`` has at most one bit set."""
    return (value & (value - 1))[: len(value)] == 0


class AllocatorHarness(wiring.Component):
    """An ``Allocator`` (or ``unit_class``, for planted bugs) of ``n_ports`` ports with
    ``n_vcs`` VCs each, under the environment above.

    Parameters
    ----------
    ownership : bool
        Assert the ownership properties (bounded) besides the single-cycle ones.
    **settings
        ``selection``, ``iterations`` and ``pipelined``, as the allocator's.
    """

    def __init__(
        self,
        *,
        n_ports: int = 3,
        n_vcs: int = 2,
        ownership: bool = True,
        unit_class: type = Allocator,
        **settings,
    ):
        if ownership and settings.get("pipelined"):
            raise ValueError(
                "ownership properties model owners taken by a crossing head, not by the "
                "pipelined allocator's acquire: pass ownership=False with pipelined=True"
            )
        self._n_ports, self._n_vcs, self._ownership = n_ports, n_vcs, ownership
        self._unit_class, self._settings = unit_class, settings
        n_ovc = n_ports * n_vcs
        super().__init__(
            {
                "valid": In(n_vcs).array(n_ports),
                "tail": In(n_vcs).array(n_ports),
                "cand": In(n_ovc).array(n_ports, n_vcs),
                "spare": In(n_ovc),
            }
        )

    def elaborate(self, platform):
        m = Module()
        n_ports, n_vcs = self._n_ports, self._n_vcs
        n_ovc = n_ports * n_vcs
        m.submodules.alloc = alloc = self._unit_class(
            in_vcs=(n_vcs,) * n_ports, out_vcs=(n_vcs,) * n_ports, **self._settings
        )
        # reference owner per output VC: an input VC's flat index + 1, 0 for none
        owners = [Signal(range(n_ports * n_vcs + 1), name=f"owner{w}") for w in range(n_ovc)]
        in_packet = [
            [Signal(name=f"in_packet_{p}_{v}") for v in range(n_vcs)] for p in range(n_ports)
        ]
        ready = Signal(n_ovc, init=(1 << n_ovc) - 1)
        sent = [0] * n_ovc  # per output VC: a flit goes out on it this cycle
        m.d.comb += [
            alloc.ready.eq(ready),
            alloc.spare.eq(self.spare),
            alloc.free.eq(sum((owner == 0) << w for w, owner in enumerate(owners))),
        ]
        for p in range(n_ports):
            m.d.comb += [
                alloc.valid[p].eq(self.valid[p]),
                alloc.tail[p].eq(self.tail[p]),
                alloc.head[p].eq(~sum(in_packet[p][v] << v for v in range(n_vcs))),
                Assert(_at_most_one(alloc.pop[p])),
                Assert((alloc.pop[p] & ~(alloc.pick[p] & self.valid[p])) == 0),
                Assert(_at_most_one(alloc.grant[p])),
            ]
            for v in range(n_vcs):
                m.d.comb += alloc.cand[p][v].eq(self.cand[p][v])
        for p in range(n_ports):
            granted_by = sum(alloc.grant[o][p] for o in range(n_ports))
            m.d.comb += Assert((granted_by != 0) == alloc.pop[p].any())
            if self._ownership:  # one output only: needs the assignments one-hot
                m.d.comb += Assert(granted_by <= 1)
        for o in range(n_ports):
            for p in range(n_ports):
                for v in range(n_vcs):
                    crosses = Signal(name=f"crosses_{p}_{v}_{o}")
                    m.d.comb += crosses.eq(alloc.grant[o][p] & alloc.pop[p][v])
                    for w in range(n_vcs):
                        flat = o * n_vcs + w
                        onto = crosses & (alloc.vc[o] == w)
                        head, me = ~in_packet[p][v], p * n_vcs + v + 1
                        sent[flat] = sent[flat] | onto
                        if self._ownership:
                            m.d.comb += [
                                Assert(~onto | ready[flat]),
                                Assert(~onto | ~head | (owners[flat] == 0)),
                                Assert(~onto | ~head | self.cand[p][v][flat]),
                                Assert(~onto | head | (owners[flat] == me)),
                            ]
                        with m.If(onto & head):
                            m.d.sync += owners[flat].eq(me)
                        with m.If(onto & self.tail[p][v]):
                            m.d.sync += owners[flat].eq(0)
                    with m.If(crosses & ~self.tail[p][v]):
                        m.d.sync += in_packet[p][v].eq(1)
                    with m.If(crosses & self.tail[p][v]):
                        m.d.sync += in_packet[p][v].eq(0)
        for flat in range(n_ovc):
            m.d.sync += ready[flat].eq(self.spare[flat] | (ready[flat] & ~sent[flat]))
        # an input port loses the output it picked to another; output VC 0 passes from one
        # input VC to another after the first one's tail
        previous = Signal.like(owners[0], name="previous_owner0")
        with m.If(owners[0] != 0):
            m.d.sync += previous.eq(owners[0])
        m.d.comb += [
            Cover((alloc.pick[0] != 0) & (alloc.pop[0] == 0) & (alloc.pop[1] != 0)),
            Cover((owners[0] != 0) & (previous != 0) & (owners[0] != previous)),
        ]
        return m
