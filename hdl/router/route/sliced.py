"""The Znode sliced-address decoder (``zfabric/routing/sliced.py`` in logic)."""

from __future__ import annotations

from amaranth.hdl import Module
from amaranth.lib import wiring

from zfabric.routing import head_flits

from .logic import select_mask
from .ports import RouteUnitSignature

__all__ = ["SlicedRoute"]


class SlicedRoute(wiring.Component):
    """The sliced-address decoder of one input port (``zfabric/routing/sliced.py``).

    A ``down``-class input (local or down port) pops the direction bit: 1 sends the packet up
    (every up port is a candidate); 0 pops the Znode id when there are several Znodes and, if
    it is not this switch's (the ``identity`` input), offers the side ports toward it.
    Otherwise, and on up or side inputs, it pops this level's label and goes down to that
    group. The next head is the head shifted right by the bits popped, zero-filled from the top.

    Parameters
    ----------
    head_width, n_out_vcs : int
    down_class : bool
        The input port is a local or down port.
    zid_bits, label_bits : int
        Widths of the Znode id field (0 with one Znode) and of this level's label.
    up_mask : int
    down_masks, side_masks : tuple of (int, int)
        (label, mask) and (Znode id, mask) pairs.
    head_bits : int or None
        ``router.head_bits`` when heads span several flits: then the unit also gives ``flits``
        and ``skip`` (:class:`~zfabric.hdl.router.route.ports.RouteUnitSignature`), from
        ``lengths``.
    down_lengths : tuple of int
        The head's length in bits at a down-class input of this switch, by the number of
        one-bits it starts with (the levels it still climbs: ``down_lengths[t]``).
    up_length : int
        The head's length at an up or side input (this level's label and those below).
    """

    def __init__(
        self,
        *,
        head_width: int,
        n_out_vcs: int,
        down_class: bool,
        zid_bits: int,
        label_bits: int,
        up_mask: int,
        down_masks,
        side_masks,
        head_bits: int | None = None,
        down_lengths: tuple[int, ...] = (0,),
        up_length: int = 0,
    ):
        self._down_class = down_class
        self._head_bits = head_bits
        self._lengths = tuple(down_lengths) if down_class else (up_length,)
        self._zid_bits = zid_bits
        self._label_bits = label_bits
        self._up_mask = up_mask
        self._down_masks = tuple(down_masks)
        self._side_masks = tuple(side_masks)
        max_flits = head_flits(head_width, head_bits) if head_bits else 0
        super().__init__(RouteUnitSignature(head_width, n_out_vcs, zid_bits, max_flits))

    def _flits(self, length: int) -> int:
        return head_flits(length, self._head_bits)

    def _skip(self, m, length: int, popped: int) -> None:
        """The head flits a head of ``length`` bits drops when the switch pops ``popped``."""
        if self._head_bits:
            m.d.comb += self.skip.eq(self._flits(length) - self._flits(length - popped))

    def _go_down(self, m, head, length: int, popped: int):
        width = self._label_bits
        m.d.comb += self.next_head.eq(head[width:])
        select_mask(m, self.cand, head[:width], self._down_masks)
        self._skip(m, length, popped + width)

    def elaborate(self, platform):
        m = Module()
        head = self.head
        lengths = self._lengths
        if not self._down_class:
            if self._head_bits:
                m.d.comb += self.flits.eq(self._flits(lengths[0]))
            self._go_down(m, head, lengths[0], 0)
            return m
        if self._head_bits:
            # t, the one-bits the head starts with (the levels it still climbs), sets its
            # length; each climb pops one bit
            climbs = len(lengths) - 1
            m.d.comb += self.flits.eq(self._flits(lengths[0]))  # t = 0: it turns here
            for t in range(climbs, 0, -1):
                with m.If(head[:t].all()) if t == climbs else m.Elif(head[:t].all()):
                    m.d.comb += self.flits.eq(self._flits(lengths[t]))
                    self._skip(m, lengths[t], 1)
        turn = lengths[0]
        rest = head[1:]
        with m.If(head[0]):
            m.d.comb += [self.cand.eq(self._up_mask), self.next_head.eq(rest)]
        with m.Else():
            if self._zid_bits:
                zid, after_zid = rest[: self._zid_bits], rest[self._zid_bits :]
                with m.If(zid != self.identity):
                    m.d.comb += self.next_head.eq(after_zid)
                    select_mask(m, self.cand, zid, self._side_masks)
                    self._skip(m, turn, 1 + self._zid_bits)
                with m.Else():
                    self._go_down(m, after_zid, turn, 1 + self._zid_bits)
            else:
                self._go_down(m, rest, turn, 1)
        return m
