"""The Znode sliced-address decoder (``zfabric/routing/sliced.py`` in logic)."""

from __future__ import annotations

from amaranth.hdl import Module
from amaranth.lib import wiring

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
    ):
        self._down_class = down_class
        self._zid_bits = zid_bits
        self._label_bits = label_bits
        self._up_mask = up_mask
        self._down_masks = tuple(down_masks)
        self._side_masks = tuple(side_masks)
        super().__init__(RouteUnitSignature(head_width, n_out_vcs, zid_bits))

    def _go_down(self, m, head):
        width = self._label_bits
        m.d.comb += self.next_head.eq(head[width:])
        select_mask(m, self.cand, head[:width], self._down_masks)

    def elaborate(self, platform):
        m = Module()
        head = self.head
        if not self._down_class:
            self._go_down(m, head)
            return m
        rest = head[1:]
        with m.If(head[0]):
            m.d.comb += [self.cand.eq(self._up_mask), self.next_head.eq(rest)]
        with m.Else():
            if self._zid_bits:
                zid, after_zid = rest[: self._zid_bits], rest[self._zid_bits :]
                with m.If(zid != self.identity):
                    m.d.comb += self.next_head.eq(after_zid)
                    select_mask(m, self.cand, zid, self._side_masks)
                with m.Else():
                    self._go_down(m, after_zid)
            else:
                self._go_down(m, rest)
        return m
