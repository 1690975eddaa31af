"""The Znode flat-address decoder (``zfabric/routing/flat.py`` in logic)."""

from __future__ import annotations

from collections.abc import Sequence

from amaranth.hdl import Module
from amaranth.lib import wiring

from .logic import select_mask
from .ports import RouteUnitSignature

__all__ = ["FlatRoute"]


class FlatRoute(wiring.Component):
    """The flat-address decoder of one input port (``zfabric/routing/flat.py``).

    The head is the destination's eq. 6.3 address and passes unchanged. A ``down``-class input
    (local or down port) below the top level offers every up port, without looking at the
    head. At the top level, with several Znodes, a Znode id other than this switch's (the
    ``identity`` input) offers the side ports toward it. Otherwise, and on up or side inputs,
    this level's label field selects the down group.

    Parameters
    ----------
    head_width, n_out_vcs : int
    down_class, top : bool
        The input port is a local or down port; the switch is at the top level.
    label_offset, label_bits : int
        Where this level's label sits in the address.
    zid_offset, zid_bits : int
        Where the Znode id sits (0 bits with one Znode).
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
        top: bool,
        label_offset: int,
        label_bits: int,
        zid_offset: int,
        zid_bits: int,
        up_mask: int,
        down_masks: Sequence[tuple[int, int]],
        side_masks: Sequence[tuple[int, int]],
    ):
        self._climb = down_class and not top
        self._turn = down_class and top
        self._label = (label_offset, label_bits)
        self._zid = (zid_offset, zid_bits)
        self._up_mask = up_mask
        self._down_masks = tuple(down_masks)
        self._side_masks = tuple(side_masks)
        super().__init__(RouteUnitSignature(head_width, n_out_vcs, zid_bits))

    def elaborate(self, platform):
        m = Module()
        head = self.head
        m.d.comb += self.next_head.eq(head)
        offset, bits = self._label
        label = head[offset : offset + bits]
        if self._climb:
            m.d.comb += self.cand.eq(self._up_mask)
        elif self._turn and self._zid[1]:
            offset, bits = self._zid
            zid = head[offset : offset + bits]
            with m.If(zid != self.identity):
                select_mask(m, self.cand, zid, self._side_masks)
            with m.Else():
                select_mask(m, self.cand, label, self._down_masks)
        else:
            select_mask(m, self.cand, label, self._down_masks)
        return m
