"""Output unit: the link register, per-VC credit counters and per-VC owners."""

from __future__ import annotations

from collections.abc import Sequence

from amaranth.hdl import Cat, Const, Module, Signal, Value
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from zfabric.router_settings import low_occupancy

from ..flit import FlitLayout, LinkSignature
from .allocator import indexed_mux

__all__ = [
    "OutputUnit",
]


class OutputUnit(wiring.Component):
    """One switch output (docs/microarchitecture.md, Structure and step 5).

    A flit granted in cycle t (``i.valid``) is registered onto the link, where it is during
    t+1. Per VC the unit keeps a credit counter (initialised to the downstream depth; it drops
    by one per flit sent and rises by one per credit pulse, each at the end of its cycle) and
    an owner bit (set by a head, cleared by a tail, both at the end of the cycle). A local
    output (toward an endpoint) is no different: its credits count the endpoint's receive
    buffer, and the endpoint returns one in the cycle its user takes a flit.

    Parameters
    ----------
    flit_layout : FlitLayout
    n_vcs : int
    buffer_depth : int
        Depth of the downstream buffers: the initial credit.
    acquire : bool
        Owners are set by VC allocation (the ``acquire`` input, ``stages: 3`` and ``4``) rather
        than by a head crossing.
    second : bool
        Also tell whether each VC will have two credits at the start of the next cycle
        (``spare2`` and ``keep2``, for the input stage of ``stages: 4``).
    low : bool
        Also tell whether each VC has low occupancy (``low``, for ``occupancy`` selection).
    credit_width : int
        Bits of the link's credit count per VC (:class:`~zfabric.hdl.flit.LinkSignature`):
        wider than 1 where the downstream input returns a head's surplus head flits' credits
        with its own.
    atomic : sequence of bool
        Per VC, whether it is free only when empty too (an adaptive VC of an adaptive routing,
        docs/microarchitecture.md step 2): no owner and its credit counter at
        ``buffer_depth``. Empty: no VC waits for that.
    whole : int
        The credits every VC needs to be free (docs/microarchitecture.md, *Switching modes*:
        the longest packet under cut-through and store-and-forward): a compare of the
        registered counter with this constant. 0 (the default, wormhole) builds none.
    entering : int
        The credits a head entering a ring needs (bubble flow control, docs/microarchitecture.md,
        *Bubble flow control*: two longest packets): builds ``free2``. 0 (the default) does not.

    Members
    -------
    i : ``In(stream.Signature(flit_layout, always_ready=True))``
        The flit the crossbar sends this cycle, with its output VC.
    sent : ``In(n_vcs)``
        One-hot (zero if ``i`` is not valid): the VC of the flit on ``i``. Credits and owners
        move on it. The switch drives it with the allocator's one-hot choice at ``stages`` 3-5
        (off the crossbar's path) and with a decode of ``i``'s VC field at 1-2 (fewer LUT4,
        where the clock gains nothing from it).
    released : ``In(n_vcs)``
        The bit of ``sent`` if the flit is a tail: the owner is cleared on it (``stages`` 4 and 5
        take it from the allocator's staged picks, off the crossbar's path).
    link : ``Out(LinkSignature(flit_layout, n_vcs))``
    free : ``Out(n_vcs)``
        Bit ``w``: output VC ``w`` has no owner (and, if it is ``atomic``, every credit; with
        ``whole``, that many credits).
    free2 : ``Out(n_vcs)``
        Only with ``entering``: bit ``w``: output VC ``w`` has no owner and ``entering``
        credits.
    ready : ``Out(n_vcs)``
        Bit ``w``: output VC ``w`` has a credit.
    spare : ``Out(n_vcs)``
        Bit ``w``: output VC ``w`` has a credit at the start of the next cycle even if it
        sends a flit in this one (a credit comes back, or it has more than one): what the
        allocator needs to know its holders' ``ready`` one cycle ahead.
    low : ``Out(n_vcs)``
        Only with ``low``: bit ``w``: output VC ``w``'s credit counter is at least
        :func:`~zfabric.router_settings.low_occupancy` of the buffer depth (more than half the
        downstream buffer free), compared with the registered counter.
    acquire : ``In(n_vcs)``
        Only with ``acquire``: bit ``w`` takes output VC ``w`` at the end of the cycle.
    spare2, keep2 : ``Out(n_vcs)``
        Only with ``second``: bit ``w``: output VC ``w`` has two credits or more at the start
        of the next cycle if it sends a flit in this one (``spare2``), if it does not
        (``keep2``).
    """

    def __init__(
        self,
        *,
        flit_layout: FlitLayout,
        n_vcs: int,
        buffer_depth: int,
        acquire: bool = False,
        second: bool = False,
        low: bool = False,
        credit_width: int = 1,
        atomic: Sequence[bool] = (),
        whole: int = 0,
        entering: int = 0,
    ):
        if not isinstance(n_vcs, int) or n_vcs < 1:
            raise TypeError(f"n_vcs must be a positive integer, not {n_vcs!r}")
        if not isinstance(buffer_depth, int) or buffer_depth < 1:
            raise TypeError(f"buffer_depth must be a positive integer, not {buffer_depth!r}")
        self._n_vcs = n_vcs
        atomic = tuple(bool(a) for a in atomic)
        if atomic and len(atomic) != n_vcs:
            raise ValueError(f"atomic must have {n_vcs} entries, not {len(atomic)}")
        self._atomic = atomic if any(atomic) else ()
        if not isinstance(whole, int) or not 0 <= whole <= buffer_depth:
            raise ValueError(f"whole must be an integer in 0..{buffer_depth}, not {whole!r}")
        self._whole = whole
        if not isinstance(entering, int) or not 0 <= entering <= buffer_depth:
            raise ValueError(f"entering must be an integer in 0..{buffer_depth}, not {entering!r}")
        self._entering = entering
        self._buffer_depth = buffer_depth
        self._acquire = bool(acquire)
        self._second = bool(second)
        self._low = bool(low)
        super().__init__(
            ({"acquire": In(n_vcs)} if self._acquire else {})
            | ({"free2": Out(n_vcs)} if self._entering else {})
            | ({"low": Out(n_vcs)} if self._low else {})
            | ({"spare2": Out(n_vcs), "keep2": Out(n_vcs)} if self._second else {})
            | {
                "i": In(stream.Signature(flit_layout, always_ready=True)),
                "sent": In(n_vcs),
                "released": In(n_vcs),
                "link": Out(LinkSignature(flit_layout, n_vcs, credit_width)),
                "free": Out(n_vcs),
                "ready": Out(n_vcs),
                "spare": Out(n_vcs),
            }
        )

    def elaborate(self, platform):
        m = Module()
        flit = self.i.payload
        m.d.sync += [
            self.link.flit.valid.eq(self.i.valid),
            self.link.flit.payload.eq(flit),
        ]
        kind = flit.kind.as_value()
        owned = Signal(self._n_vcs)
        empty = []  # per VC: no condition beyond the owner, every credit home, or enough
        roomy = []  # per VC, with ``entering``: that many credits
        for vc in range(self._n_vcs):
            sent = self.sent[vc]
            with m.If(self.acquire[vc] if self._acquire else sent & kind[0]):
                m.d.sync += owned[vc].eq(1)
            with m.If(self.released[vc]):  # after the head's: a single flit leaves it free
                m.d.sync += owned[vc].eq(0)
            credit = Signal(
                range(self._buffer_depth + 1), name=f"credit{vc}", init=self._buffer_depth
            )
            pulse = self.link.credit[vc]
            m.d.sync += credit.eq(credit - sent + pulse)
            atomic = bool(self._atomic) and self._atomic[vc]
            if atomic:  # every credit home: the longest packet fits too
                empty.append(credit == self._buffer_depth)
            elif self._whole:  # room for the longest packet
                empty.append(credit >= self._whole)
            else:
                empty.append(Const(1, 1))
            if self._entering:
                roomy.append(credit >= self._entering)
            # ``credit != 0`` as its own flip-flop, set from the next count: the allocator reads
            # a register rather than a comparison at the start of its long path
            nonzero = Signal(name=f"nonzero{vc}", init=1)
            spare = (pulse if len(pulse) == 1 else pulse.any()) | (credit > 1)
            m.d.sync += nonzero.eq(spare | (nonzero & ~sent))
            m.d.comb += [self.ready[vc].eq(nonzero), self.spare[vc].eq(spare)]
            if self._low:
                m.d.comb += self.low[vc].eq(credit >= low_occupancy(self._buffer_depth))
            if self._second:
                m.d.comb += [
                    self.spare2[vc].eq(_sum_above(credit, pulse, 2)),
                    self.keep2[vc].eq(_sum_above(credit, pulse, 1)),
                ]
        m.d.comb += self.free.eq(~owned & Cat(*empty))
        if self._entering:
            m.d.comb += self.free2.eq(~owned & Cat(*roomy))
        return m


def _sum_above(count: Value, pulse: Value, bound: int) -> Value:
    """``count + pulse > bound`` as comparisons of the registered ``count`` alone, selected by
    the incoming ``pulse``: the credit wire (combinational where an endpoint drives it, in
    the cycle it takes a flit) then reaches a multiplexer, not an adder and a comparator."""
    above = [count > bound - p for p in range(2 ** len(pulse))]
    return indexed_mux(pulse, above)
