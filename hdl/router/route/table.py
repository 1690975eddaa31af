"""Destination routing as a table: one case per head value."""

from __future__ import annotations

from amaranth.hdl import Module
from amaranth.lib import wiring

from .ports import RouteUnitSignature

__all__ = ["TableRoute"]


class TableRoute(wiring.Component):
    """A route table as a ``m.Switch`` on the head.

    Parameters
    ----------
    head_width, n_out_vcs : int
    rows : tuple of (heads, mask, next_head)
        ``heads`` (a tuple of head values) all route to ``mask``; ``next_head`` is ``None`` when
        the head passes unchanged. Heads in no row get an empty mask.
    """

    def __init__(self, *, head_width: int, n_out_vcs: int, rows):
        self._rows = tuple(rows)
        super().__init__(RouteUnitSignature(head_width, n_out_vcs))

    def elaborate(self, platform):
        m = Module()
        m.d.comb += self.next_head.eq(self.head)
        with m.Switch(self.head):
            for heads, mask, next_head in self._rows:
                with m.Case(*heads):
                    m.d.comb += self.cand.eq(mask)
                    if next_head is not None:
                        m.d.comb += self.next_head.eq(next_head)
            with m.Default():  # a head no row has: no candidate, said (Verilator's lint)
                m.d.comb += self.cand.eq(0)
        return m
