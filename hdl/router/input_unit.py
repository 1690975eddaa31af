"""Input unit: one FIFO of ``buffer_depth`` flits per VC, and the credit return wire."""

from __future__ import annotations

from amaranth.hdl import Cat, Module, Mux, Signal, Value
from amaranth.lib import data, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from ..flit import FlitLayout, LinkSignature

__all__ = [
    "BufferedFlit",
    "FrontFIFO",
    "InputUnit",
]


class BufferedFlit(data.StructLayout):
    """A flit as an input buffer holds it, ``kind`` and ``head`` first: the VC is implied by
    the buffer."""

    def __init__(self, flit_layout: FlitLayout):
        super().__init__({name: field.shape for name, field in flit_layout if name != "vc"})


class FrontFIFO(wiring.Component):
    """A first-word-fall-through FIFO whose front ``ctrl`` bits come from a register.

    The behaviour is ``lib.fifo.SyncFIFO``'s: an entry written at the end of cycle t is at
    the front (``r_rdy``) during t+1, ``r_en`` pops the front, a write to a full FIFO is
    dropped. What differs is timing: the ``ctrl_width`` low bits of the front entry (a flit's
    kind and routing head, which the allocator decides on) come straight from flip-flops, not
    from behind the distributed RAM's read. They are kept in a separate RAM read one entry
    ahead, so the register reloads in the cycle the front is popped without waiting for the
    new read address. The other bits (data only the crossbar reads) stay behind the RAM read.

    Members
    -------
    w_en, w_data, w_rdy, r_en, r_data, r_rdy, level : as ``lib.fifo.SyncFIFO``'s.
    """

    def __init__(self, *, width: int, ctrl_width: int, depth: int):
        if not 0 < ctrl_width <= width:
            raise ValueError(f"ctrl_width must be in 1..{width}, not {ctrl_width!r}")
        self._width, self._ctrl_width, self._depth = width, ctrl_width, depth
        super().__init__(
            {
                "w_en": In(1),
                "w_data": In(width),
                "w_rdy": Out(1),
                "r_en": In(1),
                "r_data": Out(width),
                "r_rdy": Out(1),
                "level": Out(range(depth + 1)),
            }
        )

    def _next(self, pointer):
        if self._depth & (self._depth - 1) == 0:
            return pointer + 1
        return Mux(pointer == self._depth - 1, 0, pointer + 1)

    def elaborate(self, platform):
        m = Module()
        depth, ctrl_width = self._depth, self._ctrl_width
        w_ptr = Signal(range(depth))
        r_ptr = Signal(range(depth))
        r_ahead = Signal(range(depth), init=1 % depth)  # r_ptr + 1, registered
        front = Signal(ctrl_width)
        # ``level != 0`` as its own flip-flop, set from the next level: the allocator's
        # requests start from a register rather than a comparison
        nonempty = Signal()
        write = Signal()
        pop = Signal()
        m.d.comb += [
            self.w_rdy.eq(self.level != depth),
            write.eq(self.w_en & self.w_rdy),
            self.r_rdy.eq(nonempty),
            pop.eq(self.r_en & nonempty),
        ]
        m.d.sync += nonempty.eq(write | (self.level > 1) | (nonempty & ~pop))
        m.submodules.ctrl = ctrl = Memory(shape=ctrl_width, depth=depth, init=[])
        m.submodules.rest = rest = Memory(shape=self._width - ctrl_width, depth=depth, init=[])
        for memory, bits in ((ctrl, self.w_data[:ctrl_width]), (rest, self.w_data[ctrl_width:])):
            port = memory.write_port()
            m.d.comb += [port.addr.eq(w_ptr), port.data.eq(bits), port.en.eq(write)]
        ahead = ctrl.read_port(domain="comb")
        behind = rest.read_port(domain="comb")
        m.d.comb += [
            ahead.addr.eq(r_ahead),
            behind.addr.eq(r_ptr),
            self.r_data.eq(Cat(front, behind.data)),
        ]
        # the front register holds the entry at r_ptr: after a pop the one behind it (in the
        # RAM if there are two or more, else the one written now), or the first one written.
        # An empty FIFO loads the link's data whether or not it writes: the allocator ignores
        # an invalid front, and a narrower load enable cost 6 MHz on the torus switch
        behind_front = self.level >= 2
        with m.If(pop | ~nonempty):
            m.d.sync += front.eq(Mux(behind_front, ahead.data, self.w_data[:ctrl_width]))
        with m.If(write):
            m.d.sync += w_ptr.eq(self._next(w_ptr))
        with m.If(pop):
            m.d.sync += [r_ptr.eq(r_ahead), r_ahead.eq(self._next(r_ahead))]
        m.d.sync += self.level.eq(self.level + write - pop)
        return m


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
        stored = BufferedFlit(self._flit_layout)
        width = stored.size
        ctrl_width = 2 + self._flit_layout.head_width
        lost = Signal()
        for vc in range(self._n_vcs):
            # a flit written at the end of cycle t is at the front during t+1, as the
            # contract's link timing needs; its kind and routing head sit in a register
            m.submodules[f"vc{vc}"] = queue = FrontFIFO(
                width=width, ctrl_width=ctrl_width, depth=self._buffer_depth
            )
            write = flit.valid & (flit.payload.vc == vc)
            m.d.comb += [
                queue.w_en.eq(write),
                queue.w_data.eq(Cat(*(Value.cast(flit.payload[name]) for name, _ in stored))),
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
