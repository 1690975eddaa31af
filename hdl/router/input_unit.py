"""Input unit: one FIFO of ``buffer_depth`` flits per VC, and the credit return wire."""

from __future__ import annotations

from amaranth.hdl import Cat, Const, Module, Mux, Signal, Value
from amaranth.lib import data, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from ..flit import FlitLayout, LinkSignature
from .allocator import indexed_mux, one_hot_index

__all__ = [
    "BufferedFlit",
    "FrontFIFO",
    "FrontFlit",
    "InputUnit",
    "PickedData",
    "RamQueues",
]


class BufferedFlit(data.StructLayout):
    """A flit as an input buffer holds it, ``kind`` and ``head`` first: the VC is implied by
    the buffer."""

    def __init__(self, flit_layout: FlitLayout):
        super().__init__({name: field.shape for name, field in flit_layout if name != "vc"})


class FrontFlit(data.StructLayout):
    """What a VC's front shows the allocator and the route unit: ``kind`` and ``head``."""

    def __init__(self, flit_layout: FlitLayout):
        super().__init__({"kind": flit_layout["kind"].shape, "head": flit_layout["head"].shape})


class PickedData(data.StructLayout):
    """The bits of a buffered flit only the crossbar reads: ``src`` and ``payload``."""

    def __init__(self, flit_layout: FlitLayout):
        super().__init__({"src": flit_layout["src"].shape, "payload": flit_layout["payload"].shape})


class FrontFIFO(wiring.Component):
    """A first-word-fall-through FIFO whose front entry comes from a register.

    The behaviour is ``lib.fifo.SyncFIFO``'s: an entry written at the end of cycle t is at
    the front (``r_rdy``) during t+1, ``r_en`` pops the front, a write to a full FIFO is
    dropped. What differs is timing: the front entry's ``ctrl_width`` bits (a flit's kind and
    routing head, which the allocator decides on) come straight from flip-flops, not from
    behind the distributed RAM's read. The entries are kept in a RAM read one entry ahead, so
    the register reloads in the cycle the front is popped without waiting for the new read
    address.

    The other bits of an entry (data only the crossbar reads) stay behind a RAM read: with
    ``ctrl_width`` < ``width`` in a RAM of the FIFO's own, read at the front entry's place;
    with ``ctrl_width`` = ``width`` (the default) in its owner's, which it writes at ``w_addr``
    when the FIFO takes an entry (``w_en & w_rdy``) and reads at ``r_addr``, the front entry's
    place: the input unit can keep its VCs' data in one RAM, read at the picked VC's front, so
    the data of the VC that crosses needs no multiplexer.

    With ``max_skip`` > 0 a pop may take ``skip`` more entries out with the front, up to
    ``max_skip`` (a head's surplus head flits, docs/microarchitecture.md, *Heads longer than a
    flit*); ``last`` gives the ctrl bits of the last entry a pop takes (the front's with
    ``skip`` 0). The FIFO must hold them: ``skip`` < ``level``.

    Members
    -------
    w_en, w_data, w_rdy, r_en, r_data, r_rdy, level : as ``lib.fifo.SyncFIFO``'s.
    w_addr, r_addr : ``Out(range(depth))``
        Where the entry written now goes, where the front entry is.
    skip : ``In(range(max_skip + 1))``, only with ``max_skip``
    last : ``Out(ctrl_width)``, only with ``max_skip``
    """

    def __init__(self, *, width: int, depth: int, ctrl_width: int | None = None, max_skip: int = 0):
        ctrl_width = width if ctrl_width is None else ctrl_width
        if not isinstance(ctrl_width, int) or not 0 < ctrl_width <= width:
            raise ValueError(f"ctrl_width must be in 1..{width}, not {ctrl_width!r}")
        if not isinstance(max_skip, int) or not 0 <= max_skip < depth:
            raise ValueError(f"max_skip must be an integer in 0..{depth - 1}, not {max_skip!r}")
        self._width, self._ctrl_width, self._depth = width, ctrl_width, depth
        self._max_skip = max_skip
        skip = {"skip": In(range(max_skip + 1)), "last": Out(ctrl_width)} if max_skip else {}
        super().__init__(
            skip
            | {
                "w_en": In(1),
                "w_data": In(width),
                "w_rdy": Out(1),
                "r_en": In(1),
                "r_data": Out(width),
                "r_rdy": Out(1),
                "level": Out(range(depth + 1)),
                "w_addr": Out(range(depth)),
                "r_addr": Out(range(depth)),
            }
        )

    def _next(self, pointer):
        if self._depth & (self._depth - 1) == 0:
            return pointer + 1
        return Mux(pointer == self._depth - 1, 0, pointer + 1)

    def _add(self, pointer, count):
        """``pointer + count`` modulo the depth (``count`` < depth)."""
        total = pointer + count
        if self._depth & (self._depth - 1) == 0:
            return total[: max(1, (self._depth - 1).bit_length())]
        return Mux(total >= self._depth, total - self._depth, total)

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
            self.w_addr.eq(w_ptr),
            self.r_addr.eq(r_ptr),
        ]
        skip = self.skip if self._max_skip else 0
        m.d.sync += nonempty.eq(write | (self.level > 1 + skip) | (nonempty & ~pop))
        m.submodules.ctrl = ctrl = Memory(shape=ctrl_width, depth=depth, init=[])
        memories = [(ctrl, self.w_data[:ctrl_width])]
        if ctrl_width < self._width:
            rest_width = self._width - ctrl_width
            m.submodules.rest = rest = Memory(shape=rest_width, depth=depth, init=[])
            memories.append((rest, self.w_data[ctrl_width:]))
        for memory, bits in memories:
            port = memory.write_port()
            m.d.comb += [port.addr.eq(w_ptr), port.data.eq(bits), port.en.eq(write)]
        ahead = ctrl.read_port(domain="comb")
        m.d.comb += ahead.addr.eq(r_ahead if not self._max_skip else self._add(r_ahead, skip))
        if ctrl_width < self._width:
            behind = rest.read_port(domain="comb")
            m.d.comb += [behind.addr.eq(r_ptr), self.r_data.eq(Cat(front, behind.data))]
        else:
            m.d.comb += self.r_data.eq(front)
        if self._max_skip:
            last = ctrl.read_port(domain="comb")
            m.d.comb += [
                last.addr.eq(self._add(r_ptr, skip)),
                self.last.eq(Mux(skip == 0, front, last.data)),
            ]
        # the front register holds the entry at r_ptr: after a pop the one behind it (in the
        # RAM if there are two or more, else the one written now), or the first one written.
        # An empty FIFO loads the link's data whether or not it writes: the allocator ignores
        # an invalid front, and a narrower load enable cost 6 MHz on the torus switch
        behind_front = self.level >= 2 + skip
        with m.If(pop | ~nonempty):
            m.d.sync += front.eq(Mux(behind_front, ahead.data, self.w_data[:ctrl_width]))
        with m.If(write):
            m.d.sync += w_ptr.eq(self._next(w_ptr))
        with m.If(pop):
            if self._max_skip:
                after = self._add(r_ahead, skip)
                m.d.sync += [r_ptr.eq(after), r_ahead.eq(self._next(after))]
            else:
                m.d.sync += [r_ptr.eq(r_ahead), r_ahead.eq(self._next(r_ahead))]
        taken = pop if not self._max_skip else Mux(pop, 1 + skip, 0)
        m.d.sync += self.level.eq(self.level + write - taken)
        return m


class RamQueues(wiring.Component):
    """The VC queues of one input port in one synchronous-read RAM, each front in a register.

    The behaviour is one :class:`FrontFIFO` per VC: an entry written at the end of cycle t is
    at its queue's front during t+1, ``r_en[v]`` pops queue ``v``'s front, a write to a full
    queue is dropped. What differs is the memory: every entry goes into one RAM of
    ``n_vcs`` x ``2 ** ceil(log2(depth))`` entries (the VC number above the queue's pointer)
    whose read is registered, so that block RAM (SB_RAM40_4K, DP16KD) holds it. Each queue's
    front is a copy in a register, refilled from the RAM read the pop issues: a pop in cycle t
    reads the entry behind the front, which is the front during t+1 straight from the RAM's
    output and in the register from then on. That is one read per cycle, so at most one queue
    may pop per cycle (an input port crosses one flit per cycle); an entry written while its
    queue is empty, or in the cycle its last entry pops, goes to the register directly.

    Members
    -------
    w_en : ``In(1)``
    w_vc : ``In(range(n_vcs))``
    w_data : ``In(width)``
        The entry written, and its queue.
    w_rdy : ``Out(n_vcs)``
        Bit ``v``: queue ``v`` has room.
    r_en : ``In(n_vcs)``
        Pops; at most one bit set per cycle.
    r_rdy : ``Out(n_vcs)``
        Bit ``v``: queue ``v`` holds an entry (``front[v]`` is it), from a register.
    front : ``Out(width).array(n_vcs)``
    pick : ``In(n_vcs)``
        One-hot (or zero): the queue whose front ``picked`` shows.
    picked : ``Out(width)``
        ``front`` of the picked queue, meaningless with no pick: one multiplexer of the
        registers and the RAM's output rather than one per queue.
    level : ``Out(range(depth + 1)).array(n_vcs)``
    """

    def __init__(self, *, width: int, depth: int, n_vcs: int):
        for name, value in (("width", width), ("depth", depth), ("n_vcs", n_vcs)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, not {value!r}")
        self._width, self._depth, self._n_vcs = width, depth, n_vcs
        super().__init__(
            {
                "w_en": In(1),
                "w_vc": In(range(n_vcs)),
                "w_data": In(width),
                "w_rdy": Out(n_vcs),
                "r_en": In(n_vcs),
                "r_rdy": Out(n_vcs),
                "front": Out(width).array(n_vcs),
                "pick": In(n_vcs),
                "picked": Out(width),
                "level": Out(range(depth + 1)).array(n_vcs),
            }
        )

    def _next(self, pointer):
        if self._depth & (self._depth - 1) == 0:
            return (pointer + 1)[: len(pointer)]
        return Mux(pointer == self._depth - 1, 0, pointer + 1)

    def elaborate(self, platform):
        m = Module()
        depth, n_vcs, width = self._depth, self._n_vcs, self._width
        vc_bits = (n_vcs - 1).bit_length()
        stride = 1 << (depth - 1).bit_length()
        # ``ram_style``: yosys would put so small a memory in LUTRAM on ECP5; ``no_rw_check``:
        # a read of the entry written in the same cycle (a pop of a queue's last entry while
        # the link writes behind it) is never used, so yosys need not emulate the read-first
        # result with a register and a multiplexer per bit (iCE40 torus input unit: 263 -> 222
        # LUT4, 194 -> 105 FF)
        attrs = {"ram_style": "block", "no_rw_check": 1}
        m.submodules.ram = ram = Memory(shape=width, depth=n_vcs * stride, init=[], attrs=attrs)
        write_port, read_port = ram.write_port(), ram.read_port()
        bits = len(read_port.addr)
        w_addr = r_addr = written = from_ram = from_held = 0
        for vc in range(n_vcs):
            w_ptr = Signal(range(depth), name=f"w_ptr{vc}")
            # the place behind the front's, which a pop reads
            r_ahead = Signal(range(depth), init=1 % depth, name=f"r_ahead{vc}")
            held = Signal(width, name=f"held{vc}")
            # the front is the RAM's output this cycle: the previous cycle popped and read
            refill = Signal(name=f"refill{vc}")
            nonempty = Signal(name=f"nonempty{vc}")
            level = self.level[vc]
            write = Signal(name=f"write{vc}")
            pop = Signal(name=f"pop{vc}")
            behind = level >= 2  # the entry behind the front is in the RAM
            m.d.comb += [
                self.w_rdy[vc].eq(level != depth),
                write.eq(self.w_en & (self.w_vc == vc) & self.w_rdy[vc]),
                self.r_rdy[vc].eq(nonempty),
                pop.eq(self.r_en[vc] & nonempty),
                self.front[vc].eq(Mux(refill, read_port.data, held)),
            ]
            m.d.sync += [
                nonempty.eq(write | (level > 1) | (nonempty & ~pop)),
                level.eq(level + write - pop),
                refill.eq(self.r_en[vc] & behind),
            ]
            # an empty queue (or one popping its last entry) loads the written entry, written
            # or not (its front is invalid until a write); a refilled one keeps the RAM's. A
            # pop with an entry behind the front may load anything: the next cycle's front is
            # the RAM's output, and the register takes it then. So each of three slices of the
            # register has a different pop term, all right where it matters:
            # synthesis cannot merge them into one enable of ``width`` flip-flops, which
            # nextpnr would put on an iCE40 global buffer (more than 15) at some 8 ns from
            # the pop, the allocator's last output, on the switch's critical path
            pop_terms = (
                self.r_en[vc] & ~behind,
                self.r_en[vc],
                self.r_en[vc] & write,  # without a write the popped queue is empty
            )
            groups = min(len(pop_terms), width)
            for group, popping in enumerate(pop_terms[:groups]):
                part = slice(group * width // groups, (group + 1) * width // groups)
                with m.If(~nonempty | refill | popping):
                    m.d.sync += held[part].eq(
                        Mux(~refill | popping, self.w_data[part], read_port.data[part])
                    )
            with m.If(write):
                m.d.sync += w_ptr.eq(self._next(w_ptr))
            with m.If(pop):
                m.d.sync += r_ahead.eq(self._next(r_ahead))
            written = written | write
            w_addr = w_addr | (Cat(w_ptr, Const(vc, vc_bits)) & write.replicate(bits))
            r_addr = r_addr | (Cat(r_ahead, Const(vc, vc_bits)) & self.r_en[vc].replicate(bits))
            from_ram = from_ram | (self.pick[vc] & refill)
            from_held = from_held | (held & self.pick[vc].replicate(width))
        m.d.comb += [
            write_port.en.eq(written),
            write_port.addr.eq(w_addr),
            write_port.data.eq(self.w_data),
            read_port.addr.eq(r_addr),
            self.picked.eq(Mux(from_ram, read_port.data, from_held)),
        ]
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
    max_skip : int
        The most surplus head flits a head takes out of its FIFO when it pops
        (:func:`~zfabric.hdl.flit.surplus_head_flits`); their credits go upstream in the same
        cycle as a count (``credit_width`` bits per VC). 0 (the default) builds none of it.
    shared_data : bool
        Keep every VC's ``src`` and ``payload`` in one RAM, read at the picked VC's front
        (the default), rather than in each VC's FIFO, read at its front and multiplexed by
        ``pick``. Same cycles either way; the shared RAM saves the multiplexer (36 bits per
        port for 2 VCs, 152 LUT4 of the ``stages: 5`` torus switch), but that switch closed
        at a median 129.6 MHz with it and 139.4 with the FIFOs' (seeds 1-5), within the spread
        of netlists of one logic (a RAM per VC outside the FIFOs: 125.8): ``stages`` 4 and 5
        keep the FIFOs' as the cautious choice, not a proven loss.
    block_ram : bool
        Keep the flits in one synchronous-read RAM per port (:class:`RamQueues`, block RAM on
        iCE40 and ECP5) rather than in asynchronous-read memories (LUTRAM on ECP5, flip-flops
        on iCE40). Same cycles; each VC's whole front flit is in a register, ``picked`` its
        data multiplexed by ``pick``. Not with ``max_skip``: a pop reads one entry.

    Members
    -------
    link : ``In(LinkSignature(flit_layout, n_vcs, credit_width))``
    o : ``Out(stream.Signature(FrontFlit(flit_layout))).array(n_vcs)``
        The front of each VC's FIFO (kind and routing head, from a register); ``ready`` pops
        it.
    pick : ``In(n_vcs)``
        One-hot (or zero): the VC whose front's data ``picked`` shows.
    picked : ``Out(PickedData(flit_layout))``
        ``src`` and ``payload`` of the front flit of the VC ``pick`` selects (meaningless with
        no pick). With ``shared_data`` every VC's data sits in one RAM,
        ``2 ** ceil(log2(buffer_depth))`` entries per VC, read at the picked VC's front: the
        crossbar's data needs no VC multiplexer, only its read address does (2 VCs of 4 flits
        fill half a 16-entry DPR16X4).
    level : ``Out(range(buffer_depth + 1)).array(n_vcs)``
        Flits held per VC.
    overflow : ``Out(1)``
        Sticky: a flit arrived for a full buffer (a sender broke the credit protocol).
    skip : ``In(range(max_skip + 1)).array(n_vcs)``, only with ``max_skip``
        Entries behind the front that a pop of VC ``v`` takes out with it.
    last_tail : ``Out(n_vcs)``, only with ``max_skip``
        Bit ``v``: the last entry a pop of VC ``v`` takes (with ``skip``) is a tail.
    bypass : ``In(1)``, only with ``bypass``
        The flit on the link crosses the switch now (docs/microarchitecture.md, *Straight
        bypass*): it is not written, and its VC's credit goes upstream as for a pop.
    ends : ``Out(n_vcs)``, only with ``count_ends``
        Bit ``v``: VC ``v``'s FIFO holds a flit that ends a packet (a tail, or a single), from
        a count of those written in and popped out: the packet at its front is whole
        (store-and-forward, docs/microarchitecture.md, *Switching modes*).
    """

    def __init__(
        self,
        *,
        flit_layout: FlitLayout,
        n_vcs: int,
        buffer_depth: int,
        max_skip: int = 0,
        shared_data: bool = True,
        count_ends: bool = False,
        block_ram: bool = False,
        bypass: bool = False,
    ):
        if not isinstance(n_vcs, int) or n_vcs < 1:
            raise TypeError(f"n_vcs must be a positive integer, not {n_vcs!r}")
        if not isinstance(buffer_depth, int) or buffer_depth < 1:
            raise TypeError(f"buffer_depth must be a positive integer, not {buffer_depth!r}")
        self._flit_layout = flit_layout
        self._n_vcs = n_vcs
        self._buffer_depth = buffer_depth
        self._max_skip = max_skip
        self._shared_data = shared_data
        if count_ends and max_skip:
            raise ValueError("count_ends needs max_skip 0: a surplus pop may take a tail unseen")
        self._count_ends = bool(count_ends)
        if block_ram and max_skip:
            raise ValueError("block_ram pops one flit at a time: max_skip must be 0")
        self._block_ram = block_ram
        if bypass and (block_ram or max_skip):
            raise ValueError("bypass needs distributed buffers and max_skip 0")
        self._bypass = bool(bypass)
        width = (1 + max_skip).bit_length()
        skip = (
            {"skip": In(range(max_skip + 1)).array(n_vcs), "last_tail": Out(n_vcs)}
            if max_skip
            else {}
        )
        super().__init__(
            skip
            | {
                "link": In(LinkSignature(flit_layout, n_vcs, width)),
                "o": Out(stream.Signature(FrontFlit(flit_layout))).array(n_vcs),
                "pick": In(n_vcs),
                "picked": Out(PickedData(flit_layout)),
                "level": Out(range(buffer_depth + 1)).array(n_vcs),
                "overflow": Out(1),
            }
            | ({"ends": Out(n_vcs)} if count_ends else {})
            | ({"bypass": In(1)} if self._bypass else {})
        )

    def elaborate(self, platform):
        if self._block_ram:
            return self._elaborate_block_ram()
        m = Module()
        flit = self.link.flit
        front_layout = FrontFlit(self._flit_layout)
        # without the shared RAM each FIFO keeps the whole flit, its data in a RAM of its own
        layout = front_layout if self._shared_data else BufferedFlit(self._flit_layout)
        lost = Signal()
        queues, arrivals, picked = [], [], 0
        for vc in range(self._n_vcs):
            # a flit written at the end of cycle t is at the front during t+1, as the
            # contract's link timing needs; its kind and routing head sit in a register
            m.submodules[f"vc{vc}"] = queue = FrontFIFO(
                width=layout.size,
                ctrl_width=front_layout.size,
                depth=self._buffer_depth,
                max_skip=self._max_skip,
            )
            write = flit.valid & (flit.payload.vc == vc)
            credit = pop = self.o[vc].valid & self.o[vc].ready
            if self._bypass:  # it crosses instead of being written: its credit goes back now
                credit = pop | (write & self.bypass)
                write = write & ~self.bypass
            m.d.comb += [
                queue.w_en.eq(write),
                queue.w_data.eq(Cat(*(Value.cast(flit.payload[name]) for name, _ in layout))),
                self.o[vc].valid.eq(queue.r_rdy),
                self.o[vc].payload.eq(queue.r_data[: front_layout.size]),
                queue.r_en.eq(self.o[vc].ready),
                self.level[vc].eq(queue.level),
            ]
            queues.append(queue)
            arrivals.append(write)
            if not self._shared_data:  # the picked VC's data, from behind its FIFO's read
                data = queue.r_data[front_layout.size :]
                picked = picked | (data & self.pick[vc].replicate(len(data)))
            if self._max_skip:
                m.d.comb += [
                    queue.skip.eq(self.skip[vc]),
                    self.last_tail[vc].eq(queue.last[1]),  # kind's tail bit
                ]
                m.d.sync += self.link.credit[vc].eq(Mux(pop, 1 + self.skip[vc], 0))
            else:
                m.d.sync += self.link.credit[vc].eq(credit)
            if self._count_ends:
                self._count_packet_ends(m, vc, write & queue.w_rdy, pop)
            lost = lost | (write & ~queue.w_rdy)
        if self._shared_data:
            self._shared_ram(m, queues, arrivals)
        else:
            m.d.comb += self.picked.eq(picked)
        with m.If(lost):
            m.d.sync += self.overflow.eq(1)
        return m

    def _count_packet_ends(self, m: Module, vc: int, accepted, pop) -> None:
        """Store-and-forward: VC ``vc``'s count of the packet ends (tails and singles) its FIFO
        holds, +1 for one written (``accepted``), -1 for one popped (``pop``; kind's tail bit),
        and ``ends`` whether it is nonzero."""
        ends = Signal(range(self._buffer_depth + 1), name=f"ends{vc}")
        written = accepted & self.link.flit.payload.kind.as_value()[1]
        popped = pop & self.o[vc].payload.kind.as_value()[1]
        m.d.sync += ends.eq(ends + written - popped)
        m.d.comb += self.ends[vc].eq(ends != 0)

    def _elaborate_block_ram(self) -> Module:
        m = Module()
        flit = self.link.flit
        front_size = FrontFlit(self._flit_layout).size
        layout = BufferedFlit(self._flit_layout)  # kind and head first, as FrontFlit
        m.submodules.queues = queues = RamQueues(
            width=layout.size, depth=self._buffer_depth, n_vcs=self._n_vcs
        )
        m.d.comb += [
            queues.w_en.eq(flit.valid),
            queues.w_vc.eq(flit.payload.vc),
            queues.w_data.eq(Cat(*(Value.cast(flit.payload[name]) for name, _ in layout))),
        ]
        lost = 0
        for vc in range(self._n_vcs):
            m.d.comb += [
                self.o[vc].valid.eq(queues.r_rdy[vc]),
                self.o[vc].payload.eq(queues.front[vc][:front_size]),
                queues.r_en[vc].eq(self.o[vc].ready),
                self.level[vc].eq(queues.level[vc]),
            ]
            pop = self.o[vc].valid & self.o[vc].ready
            m.d.sync += self.link.credit[vc].eq(pop)
            write = flit.valid & (flit.payload.vc == vc)
            if self._count_ends:
                self._count_packet_ends(m, vc, write & queues.w_rdy[vc], pop)
            lost = lost | (write & ~queues.w_rdy[vc])
        m.d.comb += [queues.pick.eq(self.pick), self.picked.eq(queues.picked[front_size:])]
        with m.If(lost):
            m.d.sync += self.overflow.eq(1)
        return m

    def _shared_ram(self, m: Module, queues: list, arrivals: list) -> None:
        """Every VC's data in one RAM, a power-of-two stride of entries per VC (an address is
        the VC's pointer with the VC number above it), read at the picked VC's front. The
        write address needs only the flit's VC (``arrivals``), not whether its FIFO has room,
        which gates the write itself. The read address is the picked VC's index above the
        read pointers multiplexed on that index, rather than an AND-OR of each pointer with
        its bit of the one-hot pick: the torus switch at ``stages: 1``, whose critical path
        runs pick -> read address -> RAM -> crossbar, closed higher so
        (docs/design/router-measurements.md)."""
        vc_bits = (self._n_vcs - 1).bit_length()
        stride = 1 << (self._buffer_depth - 1).bit_length()
        layout = PickedData(self._flit_layout)
        m.submodules.rest = rest = Memory(shape=layout, depth=self._n_vcs * stride, init=[])
        write_port, read_port = rest.write_port(), rest.read_port(domain="comb")
        bits = len(read_port.addr)
        w_addr, written = 0, 0
        for vc, (queue, arrival) in enumerate(zip(queues, arrivals, strict=True)):
            written = written | (arrival & queue.w_rdy)
            w_addr = w_addr | (Cat(queue.w_addr, Const(vc, vc_bits)) & arrival.replicate(bits))
        if vc_bits:
            picked_vc = one_hot_index(self.pick, vc_bits)
            pointers = [queue.r_addr for queue in queues]
            r_addr = Cat(indexed_mux(picked_vc, pointers), picked_vc)
        else:
            r_addr = queues[0].r_addr
        flit = self.link.flit.payload
        m.d.comb += [
            write_port.en.eq(written),
            write_port.addr.eq(w_addr),
            write_port.data.eq(Cat(flit.src, flit.payload)),
            read_port.addr.eq(r_addr),
            self.picked.eq(read_port.data),
        ]
