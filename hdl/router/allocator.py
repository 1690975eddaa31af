"""Allocator: requests, input round-robin, output round-robin, first-free candidate.

This is steps 2 to 5 of docs/microarchitecture.md for the control state: which input VC of
each port sends, which input each output takes, which output VC a head acquires, and how the
round-robin pointers and the input VCs' assignments move.
"""

from __future__ import annotations

from amaranth.hdl import Cat, Const, Module, Mux, Signal, Value
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

__all__ = [
    "Allocator",
    "lowest_one",
    "round_robin",
    "after",
    "one_hot_index",
]


def lowest_one(value: Value) -> Value:
    """The lowest set bit of ``value`` alone (zero if none): ``value & -value``."""
    width = len(value)
    return (value & (~value + 1))[:width]


def round_robin(request: Value, mask: Value) -> Value:
    """One-hot pick of the first requester at or after the pointer, cyclically.

    ``mask`` is the pointer as a thermometer: the bits at and above it are set. Requesters
    under the mask come first, lowest first; if there are none, the lowest requester wins, which
    is the cyclic wrap. A zero mask therefore means pointer 0, like an all-ones one.
    """
    masked = request & mask
    return Mux(masked.any(), lowest_one(masked), lowest_one(request))


def after(one_hot: Value) -> Value:
    """The thermometer mask of the pointer just after a one-hot grant (zero after the last)."""
    bits = []
    seen = Const(0, 1)
    for bit in one_hot:
        bits.append(seen)
        seen = seen | bit
    return Cat(*bits)


def one_hot_index(one_hot: Value, width: int) -> Value:
    """Index of the set bit of a one-hot value, ``width`` bits (zero if none is set)."""
    return Cat(
        *(Cat(*(one_hot[i] for i in range(len(one_hot)) if i >> b & 1)).any() for b in range(width))
    )


class Allocator(wiring.Component):
    """Route-to-grant control of one switch.

    Output VCs are numbered flat: output port ``o``'s VC ``w`` is bit ``sum(out_vcs[:o]) + w``
    of the candidate, ``free`` and ``ready`` vectors. Per input VC the allocator holds the
    output VC its packet owns (one-hot, zero when it holds none).

    Per cycle (all on the state at the start of the cycle):

    - an input VC with a flit at its front requests its own output VC if it holds one and that
      VC has a credit; otherwise, if the front is a head, the first of its candidates (lowest
      flat index: the route unit orders candidates by priority that way) that is free and has a
      credit;
    - each input port picks the first requesting VC at or after its pointer, cyclically;
    - each output port grants the first input port whose pick wants it, at or after its
      pointer, cyclically;
    - a granted input VC pops its flit; a head takes the output VC, a tail gives it back; the
      input port's pointer moves to the VC after the granted one and the output port's to the
      input after the granted one. Ports that sent or granted nothing keep their pointers.

    Parameters
    ----------
    in_vcs : tuple of int
        VCs per input port.
    out_vcs : tuple of int
        VCs per output port (same number of ports as ``in_vcs``).

    Members
    -------
    valid, head, tail : ``In(max(in_vcs)).array(n_ports)``
        Per input VC: a flit is at the front; it is a head; it is a tail.
    cand : ``In(n_out_vcs).array(n_ports, max(in_vcs))``
        Per input VC: the route unit's candidate output VCs for the head at its front.
    free, ready : ``In(n_out_vcs)``
        Per output VC: no owner; a credit.
    pick : ``Out(max(in_vcs)).array(n_ports)``
        Per input port: the VC it picked (one-hot, zero if none requested).
    pop : ``Out(max(in_vcs)).array(n_ports)``
        Per input port: ``pick`` if the output granted it, else zero.
    grant : ``Out(n_ports).array(n_ports)``
        Per output port: the input port it takes (one-hot, zero if none).
    vc : ``Out(range(max(out_vcs))).array(n_ports)``
        Per output port: the output VC of the granted flit.
    """

    def __init__(self, *, in_vcs, out_vcs):
        in_vcs, out_vcs = tuple(in_vcs), tuple(out_vcs)
        if len(in_vcs) != len(out_vcs) or not in_vcs:
            raise ValueError(f"in_vcs {in_vcs!r} and out_vcs {out_vcs!r} must be as long")
        for counts in (in_vcs, out_vcs):
            if any(not isinstance(n, int) or n < 1 for n in counts):
                raise TypeError(f"VC counts must be positive integers, not {counts!r}")
        self._in_vcs = in_vcs
        self._out_vcs = out_vcs
        self._base = [sum(out_vcs[:o]) for o in range(len(out_vcs))]
        n_ports, max_in, n_ovc = len(in_vcs), max(in_vcs), sum(out_vcs)
        super().__init__(
            {
                "valid": In(max_in).array(n_ports),
                "head": In(max_in).array(n_ports),
                "tail": In(max_in).array(n_ports),
                "cand": In(n_ovc).array(n_ports, max_in),
                "free": In(n_ovc),
                "ready": In(n_ovc),
                "pick": Out(max_in).array(n_ports),
                "pop": Out(max_in).array(n_ports),
                "grant": Out(n_ports).array(n_ports),
                "vc": Out(range(max(out_vcs))).array(n_ports),
            }
        )

    def elaborate(self, platform):
        m = Module()
        n_ports, n_ovc = len(self._in_vcs), sum(self._out_vcs)
        usable = self.free & self.ready

        picked_target = []  # per input port: the picked VC's output VC, one-hot
        targets = []  # per input port, per VC: what it requests
        for port, n_vcs in enumerate(self._in_vcs):
            requests, wanted = [], []
            for vc in range(n_vcs):
                held = Signal(n_ovc, name=f"held_{port}_{vc}")
                first_free = lowest_one(self.cand[port][vc] & usable)
                requests.append(
                    self.valid[port][vc]
                    & Mux(
                        held.any(),
                        (held & self.ready).any(),
                        self.head[port][vc] & first_free.any(),
                    )
                )
                wanted.append(Mux(held.any(), held, first_free))
                targets.append((port, vc, held, wanted[-1]))
            pointer = Signal(n_vcs, name=f"in_pointer_{port}", init=(1 << n_vcs) - 1)
            pick = Signal(n_vcs, name=f"pick_{port}")
            m.d.comb += [pick.eq(round_robin(Cat(*requests), pointer)), self.pick[port].eq(pick)]
            target = 0
            for vc in range(n_vcs):
                target = target | (wanted[vc] & pick[vc].replicate(n_ovc))
            picked = Signal(n_ovc, name=f"picked_{port}")
            m.d.comb += picked.eq(target)
            picked_target.append((pointer, pick, picked))

        granted = [0] * n_ports
        for out, n_vcs in enumerate(self._out_vcs):
            base = self._base[out]
            wants = Cat(*(picked[base : base + n_vcs].any() for _, _, picked in picked_target))
            pointer = Signal(n_ports, name=f"out_pointer_{out}", init=(1 << n_ports) - 1)
            grant = Signal(n_ports, name=f"grant_{out}")
            m.d.comb += [grant.eq(round_robin(wants, pointer)), self.grant[out].eq(grant)]
            with m.If(wants.any()):
                m.d.sync += pointer.eq(after(grant))
            vcs = 0
            for port, (_, _, picked) in enumerate(picked_target):
                vcs = vcs | (picked[base : base + n_vcs] & grant[port].replicate(n_vcs))
                granted[port] = granted[port] | grant[port]
            m.d.comb += self.vc[out].eq(one_hot_index(vcs, len(self.vc[out])))

        for port, (pointer, pick, _) in enumerate(picked_target):
            pop = Signal(len(pick), name=f"pop_{port}")
            m.d.comb += [pop.eq(pick & granted[port].replicate(len(pick))), self.pop[port].eq(pop)]
            with m.If(granted[port]):
                m.d.sync += pointer.eq(after(pick))
        for port, vc, held, wanted in targets:
            with m.If(self.pop[port][vc] & self.head[port][vc]):
                m.d.sync += held.eq(wanted)
            with m.If(self.pop[port][vc] & self.tail[port][vc]):
                m.d.sync += held.eq(0)
        return m
