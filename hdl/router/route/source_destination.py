"""The Znode source-destination (turn-back) decoder (``zfabric/routing/source_destination.py``)."""

from __future__ import annotations

from collections.abc import Sequence

from amaranth.hdl import Const, Module
from amaranth.lib import wiring

from .logic import select_mask
from .ports import RouteUnitSignature

__all__ = ["SourceDestinationRoute"]


class SourceDestinationRoute(wiring.Component):
    """The turn-back decoder of one input port (``zfabric/routing/source_destination.py``).

    The head is the source's eq. 6.3 address in the low ``address_bits`` bits and the
    destination's above it; it passes unchanged. A ``down``-class input (local or down port)
    compares the two addresses' labels above this level (``above``) and Znode ids: all equal,
    this level's destination label selects the down group; labels equal but Znode ids not,
    and the level has side links (``side``), the side ports toward the destination's Znode;
    otherwise every up port. Up and side inputs go down by the label. No identity input: on
    the way up the switch's own zone is the source's.

    Parameters
    ----------
    head_width, n_out_vcs, address_bits : int
    down_class, side : bool
    label_offset, label_bits : int
        Where this level's label sits in an address.
    above : (int, int)
        (offset, bits) of the labels of the levels above this one in an address.
    zid_offset : int
        Where the Znode id sits in an address (it runs to ``address_bits``).
    up_mask : int
    down_masks, side_masks : tuple of (int, int)
        (label, mask) and (Znode id, mask) pairs.
    """

    def __init__(
        self,
        *,
        head_width: int,
        n_out_vcs: int,
        address_bits: int,
        down_class: bool,
        side: bool,
        label_offset: int,
        label_bits: int,
        above: tuple[int, int],
        zid_offset: int,
        up_mask: int,
        down_masks: Sequence[tuple[int, int]],
        side_masks: Sequence[tuple[int, int]],
    ):
        self._address_bits = address_bits
        self._down_class, self._side = down_class, side
        self._label = (label_offset, label_bits)
        self._above = above
        self._zid_offset = zid_offset
        self._up_mask = up_mask
        self._down_masks = tuple(down_masks)
        self._side_masks = tuple(side_masks)
        super().__init__(RouteUnitSignature(head_width, n_out_vcs))

    def elaborate(self, platform):
        m = Module()
        head, bits = self.head, self._address_bits
        m.d.comb += self.next_head.eq(head)
        src, dst = head[:bits], head[bits : 2 * bits]
        offset, width = self._label
        label = dst[offset : offset + width]
        if not self._down_class:
            select_mask(m, self.cand, label, self._down_masks)
            return m
        offset, width = self._above
        above = slice(offset, offset + width)
        labels_equal = src[above] == dst[above] if width else Const(1)
        zid = dst[self._zid_offset :]
        znode_equal = src[self._zid_offset :] == zid if len(zid) else Const(1)
        with m.If(labels_equal & znode_equal):
            select_mask(m, self.cand, label, self._down_masks)
        if self._side:
            with m.Elif(labels_equal):
                select_mask(m, self.cand, zid, self._side_masks)
        with m.Else():
            m.d.comb += self.cand.eq(self._up_mask)
        return m
