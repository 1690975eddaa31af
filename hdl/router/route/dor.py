"""Dimension-order routing on tori and meshes (``zfabric/routing/dor.py`` in logic)."""

from __future__ import annotations

from amaranth.hdl import Module, Mux
from amaranth.lib import wiring

from zfabric.routing.base import class_vcs
from zfabric.routing.dor import TIES

from .logic import (
    bit_fields,
    coord_widths,
    mask_bits,
    mixed_digits,
    named_signals,
    ring_plus,
)
from .ports import RouteUnitSignature

__all__ = ["DORRoute"]


class DORRoute(wiring.Component):
    """``zfabric.routing.dor`` by arithmetic: the switch's coordinates come in on ``identity``.

    The destination id is the linear index of its switch (dimension 0 least significant). The
    first dimension whose coordinates differ is routed the shorter way round (ties by ``tie``:
    toward + always, or toward + from an even coordinate and - from an odd one) on the VCs of
    class 0 if the destination coordinate is above the current one and of class 1 otherwise
    (dateline classes of ``vcs`` VCs each; class 0 alone without datelines). Equal coordinates
    deliver on the local port.

    Parameters
    ----------
    head_width : int
    ports : SwitchPorts
    k : tuple of int
    wrap, datelines : bool
    tie : str
        ``zfabric.routing.dor.TIES``: ``"alternate"`` or ``"plus"``.
    vcs : int
        VCs per class.
    port_of : tuple of ((dim, sign), port)
    local_port : int
    """

    def __init__(self, *, head_width, ports, k, wrap, datelines, tie, vcs, port_of, local_port):
        if tie not in TIES:
            raise ValueError(f"tie must be one of {', '.join(TIES)}, not {tie!r}")
        self._ports, self._k, self._wrap, self._datelines = ports, tuple(k), wrap, datelines
        self._tie = tie
        self._classes = (class_vcs(0, vcs), class_vcs(1, vcs))
        self._port_of, self._local_port = dict(port_of), local_port
        super().__init__(
            RouteUnitSignature(head_width, ports.n_out_vcs, sum(coord_widths(self._k)))
        )

    def _hop(self, dim, sign, upper):
        port = self._port_of.get((dim, sign))
        if port is None:  # a mesh edge: this direction never routes
            return 0
        up, down = (mask_bits(self._ports, port, vcs) for vcs in self._classes)
        if not self._datelines:
            return up
        return Mux(upper, up, down)

    def elaborate(self, platform):
        m = Module()
        self._route(m, self.cand)
        return m

    def _route(self, m, cand):
        """Drive ``cand`` with DOR's hop; returns, per dimension, (coordinates differ, the
        direction is +)."""
        here = bit_fields(self.identity, coord_widths(self._k))
        there = named_signals(m, mixed_digits(self.head, self._k), "dst")
        m.d.comb += self.next_head.eq(self.head)
        hops, directions = [], []
        for dim, (cur, dst) in enumerate(zip(here, there, strict=True)):
            tie_plus = True if self._tie == "plus" else ~cur[0]  # even coordinate: +
            plus = ring_plus(
                m, cur, dst, self._k[dim], wrap=self._wrap, tie_plus=tie_plus, name=f"d{dim}"
            )
            upper = dst > cur
            hops.append(Mux(plus, self._hop(dim, 1, upper), self._hop(dim, -1, upper)))
            directions.append((cur != dst, plus))
        for dim, (cur, dst) in enumerate(zip(here, there, strict=True)):
            with m.If(cur != dst) if dim == 0 else m.Elif(cur != dst):
                m.d.comb += cand.eq(hops[dim])
        with m.Else():
            local = range(self._ports.vcs[self._local_port])  # every ejection VC
            m.d.comb += cand.eq(mask_bits(self._ports, self._local_port, local))
        return directions
