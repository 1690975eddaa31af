"""Input unit proofs: buffers, credit conservation and order behind a credit-obeying sender.

The harness drives an :class:`~zfabric.hdl.router.input_unit.InputUnit` from free inputs (the
solver picks them every cycle) constrained to the link protocol, and checks it on its ports.

Environment (assumptions):

- the upstream sender holds ``B`` credits per VC at reset, spends one per flit and gets one back
  per credit pulse the unit puts on the link; it sends on a VC only while it holds a credit;
- with ``order``, each flit carries its sequence number on its VC in its payload (modulo
  ``2**payload_width``) and the number's low bits in its ``head`` and ``src``; the kind is
  free;
- the switch pops (``o[vc].ready``) whenever it likes; with ``max_skip`` (a switch that drops
  a head's surplus head flits, docs/microarchitecture.md, *Heads longer than a flit*) a pop
  takes ``skip[vc]`` more entries with the front, any number up to ``max_skip`` the FIFO holds
  behind it, and the credit wire carries a count per VC; it picks (``pick``) any one VC or
  none, whose front's data the unit then shows (``picked``).

Properties (assertions), per VC:

- ``level`` stays within 0..B and equals flits written minus flits popped (modulo the
  counters' width; a pop with ``skip`` takes 1 + ``skip``); the sticky ``overflow`` stays low
  (no FIFO overflows; no pop underflows, since a pop needs ``valid``, which is ``level != 0``,
  and takes no more than the FIFO holds);
- credit conservation: sender credits + credits on the link + ``level`` == B (so the credits
  returned are the entries freed: one per flit popped, 1 + ``skip`` for a pop with ``skip``);
- with ``order``: the front's payload and source (``picked``, when the VC is picked; the head
  always) are those of the next flit to pop, so flits leave in the order they came, each
  once, unmodified (those a ``skip`` takes out included: the front after them is the flit
  behind them); with ``max_skip``, ``last_tail`` of a pop is the tail bit of the last flit it
  takes, checked on one flit of each VC whose sequence number the solver picks freely
  (``AnyConst``), whose kind the harness keeps;
- with ``count_ends`` (store-and-forward, docs/microarchitecture.md, *Switching modes*) and
  ``order``: with ``state`` any flit may be a tail (the solver picks each one's tail bit), the
  unit's count of ends equals the tail bits of the entries its FIFO holds, each entry's tail
  bit the one sent (one watched flit, as above), and ``ends`` says whether it is nonzero;
  without ``state`` (bounded runs) a flit is a tail exactly when its sequence number is odd,
  so the FIFO holds ⌊(level + (popped mod 2)) / 2⌋ tails.

The counting properties are inductive on the ports alone. The order property depends on the
FIFOs' pointers and RAM contents, which the ports do not show: with ``state`` the harness reads
them (:func:`~zfabric.hdl.formal.state.opened`, :func:`~zfabric.hdl.formal.state.peek`) and
asserts, per VC, that the read-ahead pointer is one past the read pointer, the write pointer
``level`` entries past it, the ``level`` entries from the read pointer on (the control bits
in the VC's FIFO, the data in the unit's shared RAM at the VC's stride or in the FIFO's
own) hold the sequence numbers of the next flits to pop, in order (and the watched
flit's kind), and the front register holds the control bits of the entry at the read pointer.
That strengthening makes order inductive (proven unbounded); without it order is checked
bounded (docs/design/verification.md).
"""

from __future__ import annotations

from amaranth.asserts import AnyConst
from amaranth.hdl import Assert, Assume, Cat, Cover, Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In

from ..flit import FlitLayout
from ..router.input_unit import BufferedFlit, InputUnit
from .state import opened, peek

__all__ = ["InputUnitHarness"]


class InputUnitHarness(wiring.Component):
    """An ``InputUnit`` (or ``unit_class``, for planted bugs) between a credit-obeying sender
    and a free-running consumer, with the properties above.

    Parameters
    ----------
    n_vcs, buffer_depth : int
        As the unit's.
    payload_width : int
        Flit payload bits (also the width of the sequence numbers).
    order : bool
        Tag flits with sequence numbers and assert the order.
    state : bool
        With ``order``: also assert the invariants on the FIFOs' pointers and contents (for
        k-induction).
    max_skip : int
        As the unit's: the most entries a pop takes behind the front (0: none).
    shared_data : bool
        As the unit's: its VCs' data in one RAM (or a RAM per VC).
    count_ends : bool
        As the unit's: it counts the packet ends each VC holds (needs ``order``).
    unit_class : type
        The unit under proof: ``InputUnit`` or a deliberately broken subclass.
    """

    def __init__(
        self,
        *,
        n_vcs: int = 2,
        buffer_depth: int = 4,
        payload_width: int = 4,
        order: bool = False,
        state: bool = False,
        max_skip: int = 0,
        shared_data: bool = True,
        count_ends: bool = False,
        unit_class: type = InputUnit,
    ):
        if (state or count_ends) and not order:
            raise ValueError("state invariants and ends strengthen the order property: pass both")
        if (1 << payload_width) <= buffer_depth:
            raise ValueError(
                f"payload_width {payload_width!r} cannot count {buffer_depth!r} flits in a buffer"
            )
        self._layout = FlitLayout(
            payload_width=payload_width,
            vc_width=max(1, (n_vcs - 1).bit_length()),
            head_width=2,
            src_width=2,
        )
        self._n_vcs, self._depth, self._order, self._state = n_vcs, buffer_depth, order, state
        self._unit_class, self._max_skip = unit_class, max_skip
        self._shared_data = shared_data
        self._count_ends = count_ends
        skip = {"skip": In(range(max_skip + 1)).array(n_vcs)} if max_skip else {}
        super().__init__(
            skip
            | {
                "send": In(1),
                "send_vc": In(self._layout.vc_width),
                "send_kind": In(2),
                "send_payload": In(payload_width),
                "pop": In(n_vcs),
                "pick": In(n_vcs),
            }
        )

    def elaborate(self, platform):
        m = Module()
        depth, layout = self._depth, self._layout
        unit = self._unit_class(
            flit_layout=layout,
            n_vcs=self._n_vcs,
            buffer_depth=depth,
            max_skip=self._max_skip,
            shared_data=self._shared_data,
            count_ends=self._count_ends,
        )
        if self._state:
            m.submodules.unit, internal = opened(unit, platform)
        else:
            m.submodules.unit = unit
        flit = unit.link.flit
        m.d.comb += [
            flit.valid.eq(self.send),
            flit.payload.vc.eq(self.send_vc),
            flit.payload.kind.eq(self.send_kind),
            flit.payload.payload.eq(self.send_payload),
            # the head (in the FIFO's front register) and the source (with the payload, in the
            # data RAM) carry data too, for the order check
            flit.payload.head.eq(self.send_payload[: layout.head_width]),
            flit.payload.src.eq(self.send_payload[: layout.src_width]),
        ]
        m.d.comb += [
            Assume(self.send_vc < self._n_vcs),
            Assume((self.pick & (self.pick - 1)) == 0),  # one VC or none
            unit.pick.eq(self.pick),
        ]
        width = layout.payload_width
        for vc in range(self._n_vcs):
            credits = Signal(range(depth + 1), name=f"credits{vc}", init=depth)
            written = Signal(width, name=f"written{vc}")
            popped = Signal(width, name=f"popped{vc}")
            sent = Signal(name=f"sent{vc}")
            taken = Signal(name=f"taken{vc}")
            pulse = unit.link.credit[vc]
            level = unit.level[vc]
            m.d.comb += [
                sent.eq(self.send & (self.send_vc == vc)),
                unit.o[vc].ready.eq(self.pop[vc]),
                taken.eq(unit.o[vc].valid & unit.o[vc].ready),
                Assume(~sent | (credits != 0)),
            ]
            skip = 0
            if self._max_skip:
                skip = self.skip[vc]
                m.d.comb += [
                    unit.skip[vc].eq(skip),
                    Assume(skip <= self._max_skip),
                    Assume(~taken | (skip < level)),
                    Cover(taken & (skip == self._max_skip)),
                ]
            m.d.sync += [
                credits.eq(credits - sent + pulse),
                written.eq(written + sent),
                popped.eq(popped + Mux(taken, 1 + skip, 0)),
            ]
            m.d.comb += [
                Assert(level <= depth),
                Assert((written - popped)[:width] == level),
                Assert(credits + pulse + level == depth),
                Assert(unit.o[vc].valid == (level != 0)),
                Assert(~unit.overflow),
                Cover(level == depth),
                Cover(taken & (level == depth)),
            ]
            if self._order:
                m.d.comb += [
                    Assume(~sent | (self.send_payload == written)),
                    Assert(~(unit.o[vc].valid & self.pick[vc]) | (unit.picked.payload == popped)),
                    Assert(
                        ~(unit.o[vc].valid & self.pick[vc])
                        | (unit.picked.src == popped[: layout.src_width])
                    ),
                    Assert(
                        ~unit.o[vc].valid | (unit.o[vc].payload.head == popped[: layout.head_width])
                    ),
                    Cover(taken & (popped == depth + 1)),
                ]
            if self._count_ends and not self._state:
                # tails are the odd tags: the FIFO holds the odd ones of popped .. written - 1
                ends = (level + popped[0]) >> 1
                m.d.comb += [
                    Assume(~sent | (self.send_kind[1] == written[0])),
                    Assert(unit.ends[vc] == (ends != 0)),
                    Cover((level == depth) & (ends == depth // 2)),
                ]
            elif self._count_ends:
                # any flit may be a tail: the unit's count equals the tail bits its entries hold
                # (_invariants), each entry's tail bit the one sent (the watched flit below)
                m.d.comb += [
                    Assert(unit.ends[vc] == (internal[f"ends{vc}"] != 0)),
                    Cover((level == depth) & (internal[f"ends{vc}"] == depth)),
                ]
            watch = None
            if self._order and (self._max_skip or (self._count_ends and self._state)):
                # one flit the solver picks by its sequence number; its tail bit, kept
                watch, watched = AnyConst(width), Signal(name=f"watched_tail{vc}")
                with m.If(sent & (written == watch)):
                    m.d.sync += watched.eq(self.send_kind[1])
                if self._max_skip:
                    last = (popped + skip)[:width]
                    m.d.comb += Assert(~taken | (last != watch) | (unit.last_tail[vc] == watched))
                watch = (watch, watched)
            if self._state:
                self._invariants(m, internal, vc, level, popped, watch)
        return m

    def _invariants(self, m: Module, internal: dict, vc: int, level, popped, watch) -> None:
        """VC ``vc``'s FIFO pointers and entries agree with ``level`` and the tags."""
        depth, layout = self._depth, self._layout
        fifo = f"vc{vc}."
        if self._shared_data:
            stride = 1 << (depth - 1).bit_length()  # the shared RAM's entries per VC
            rest, base = internal["rest"], vc * stride
        else:
            rest, base = internal[fifo + "rest"], 0
        entries = [
            data.View(
                BufferedFlit(layout),
                Cat(
                    peek(internal[fifo + "ctrl"], i, f"vc{vc}_ctrl{i}"),
                    peek(rest, base + i, f"vc{vc}_rest{i}"),
                ),
            )
            for i in range(depth)
        ]
        r_ptr, w_ptr = internal[fifo + "r_ptr"], internal[fifo + "w_ptr"]
        front, r_ahead = internal[fifo + "front"], internal[fifo + "r_ahead"]
        m.d.comb += [Assert(r_ptr < depth), Assert(w_ptr < depth), Assert(r_ahead < depth)]
        for r in range(depth):
            with m.If(r_ptr == r):
                m.d.comb += [
                    Assert(r_ahead == (r + 1) % depth),
                    Assert(
                        ~internal[fifo + "nonempty"]
                        | (front == entries[r].as_value()[: len(front)])
                    ),
                ]
                for n in range(depth + 1):
                    with m.If(level == n):
                        m.d.comb += Assert(w_ptr == (r + n) % depth)
                if self._count_ends:
                    held = sum(
                        Mux(level > j, entries[(r + j) % depth].kind.as_value()[1], 0)
                        for j in range(depth)
                    )
                    m.d.comb += Assert(internal[f"ends{vc}"] == held)
                for j in range(depth):
                    tag = (popped + j)[: layout.payload_width]
                    entry = entries[(r + j) % depth]
                    with m.If(level > j):
                        m.d.comb += [
                            Assert(entry.payload == tag),
                            Assert(entry.head == tag[: layout.head_width]),
                            Assert(entry.src == tag[: layout.src_width]),
                        ]
                        if watch is not None:
                            tail = entry.kind.as_value()[1]
                            m.d.comb += Assert((tag != watch[0]) | (tail == watch[1]))
