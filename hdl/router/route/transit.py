"""The RN1-style route unit of Transit source routes (``zfabric/routing/transit.py`` in logic)."""

from __future__ import annotations

from amaranth.hdl import Module
from amaranth.lib import wiring

from .logic import select_mask
from .ports import RouteUnitSignature

__all__ = ["TransitRoute"]

#: bits of one route byte, the unit a swallow drops
BYTE = 8


class TransitRoute(wiring.Component):
    """The route unit of one input of an RN1 chip (A. DeHon, "Fat-Tree Routing for Transit",
    MIT AI Lab, 1990, §1.3).

    The head is the route's remaining bytes, the one read next in bits 7:0
    (:meth:`~zfabric.routing.transit.TransitRouting.head_value`). A swallowing input first
    drops that byte (the head shifts right by 8, zero-filled); the chip then reads its 2-bit
    slice of the byte in front (slice 0 = bits 7:6) and offers that direction's outputs: both
    wires of a standard-mode chip as equal candidates (the switch's output selection picks one,
    as the model's does), the one of an alternate-mode half. The head goes on as the next chip
    must see it: swallowed or not, never rotated (the slice index stands for the seed's
    rotating links).

    Parameters
    ----------
    head_width, n_out_vcs : int
    slice_index : int
        The chip's slice, 0..3.
    swallow : bool
        This input drops the head byte before reading.
    masks : tuple of 4 int
        Per direction 0..3, the candidates' output-VC mask.
    """

    def __init__(
        self,
        *,
        head_width: int,
        n_out_vcs: int,
        slice_index: int,
        swallow: bool,
        masks: tuple[int, int, int, int],
    ):
        if not 0 <= slice_index < 4:
            raise ValueError(f"slice_index must be 0..3, not {slice_index!r}")
        if len(masks) != 4:
            raise ValueError(f"masks must give 4 directions, not {len(masks)}")
        if head_width < BYTE * (1 + swallow):
            raise ValueError(f"a {head_width}-bit head holds no byte to read after a swallow")
        self._slice = slice_index
        self._swallow = bool(swallow)
        self._masks = tuple(masks)
        super().__init__(RouteUnitSignature(head_width, n_out_vcs))

    def elaborate(self, platform):
        m = Module()
        head = self.head[BYTE:] if self._swallow else self.head
        low = BYTE - 2 - 2 * self._slice
        m.d.comb += self.next_head.eq(head)
        select_mask(m, self.cand, head[low : low + 2], enumerate(self._masks))
        return m
