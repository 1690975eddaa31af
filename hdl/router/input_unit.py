"""Input unit: one FIFO of ``buffer_depth`` flits per VC, and the credit return wire."""

from __future__ import annotations

from amaranth.hdl import Cat, Module, Shape, Signal, unsigned
from amaranth.lib import data, fifo, stream, wiring
from amaranth.lib.wiring import In, Out

from ..flit import FlitKind, FlitLayout, LinkSignature

__all__ = [
    "BufferedFlit",
    "InputUnit",
]


class BufferedFlit(data.StructLayout):
    """A flit as an input buffer holds it: the VC is implied by the buffer."""

    def __init__(self, flit_layout: FlitLayout):
        super().__init__({"kind": FlitKind, "payload": unsigned(flit_layout.payload_width)})


class InputUnit(wiring.Component):
    """Per-VC input buffers of one switch port (docs/microarchitecture.md, Structure).

    A flit on the link is written into its VC's FIFO at the end of the cycle it is on the link,
    so it is at the front (``o[vc].valid``) one cycle later. Popping a flit (``o[vc].ready``
    while valid) puts a credit pulse for that VC on the link's credit wire during the next
    cycle: both are the link timing of step 6.

    Parameters
    ----------
    flit_layout : FlitLayout
    n_vcs : int
    buffer_depth : int

    Members
    -------
    link : ``In(LinkSignature(flit_layout, n_vcs))``
    o : ``Out(stream.Signature(BufferedFlit(flit_layout))).array(n_vcs)``
        The front of each VC's FIFO; ``ready`` pops it.
    level : ``Out(range(buffer_depth + 1)).array(n_vcs)``
        Flits held per VC.
    overflow : ``Out(1)``
        Sticky: a flit arrived for a full buffer (a sender broke the credit protocol).
    """

    def __init__(self, *, flit_layout: FlitLayout, n_vcs: int, buffer_depth: int):
        if not isinstance(n_vcs, int) or n_vcs < 1:
            raise TypeError(f"n_vcs must be a positive integer, not {n_vcs!r}")
        if not isinstance(buffer_depth, int) or buffer_depth < 1:
            raise TypeError(f"buffer_depth must be a positive integer, not {buffer_depth!r}")
        self._flit_layout = flit_layout
        self._n_vcs = n_vcs
        self._buffer_depth = buffer_depth
        super().__init__(
            {
                "link": In(LinkSignature(flit_layout, n_vcs)),
                "o": Out(stream.Signature(BufferedFlit(flit_layout))).array(n_vcs),
                "level": Out(range(buffer_depth + 1)).array(n_vcs),
                "overflow": Out(1),
            }
        )

    def elaborate(self, platform):
        m = Module()
        flit = self.link.flit
        width = Shape.cast(BufferedFlit(self._flit_layout)).width
        lost = Signal()
        for vc in range(self._n_vcs):
            # lib.fifo reads asynchronously: a flit written at the end of cycle t is at the
            # front during t+1, as the contract's link timing needs
            m.submodules[f"vc{vc}"] = queue = fifo.SyncFIFO(width=width, depth=self._buffer_depth)
            write = flit.valid & (flit.payload.vc == vc)
            m.d.comb += [
                queue.w_en.eq(write),
                queue.w_data.eq(Cat(flit.payload.kind.as_value(), flit.payload.payload)),
                self.o[vc].valid.eq(queue.r_rdy),
                self.o[vc].payload.eq(queue.r_data),
                queue.r_en.eq(self.o[vc].ready),
                self.level[vc].eq(queue.level),
            ]
            m.d.sync += self.link.credit[vc].eq(self.o[vc].valid & self.o[vc].ready)
            lost = lost | (write & ~queue.w_rdy)
        with m.If(lost):
            m.d.sync += self.overflow.eq(1)
        return m
