"""DORT on nDT twin nodes (``zfabric/routing/dort.py`` in logic)."""

from __future__ import annotations

from amaranth.hdl import Module, Mux
from amaranth.lib import wiring

from zfabric.routing.dort import external_classes

from .logic import (
    bit_fields,
    coord_widths,
    mask_bits,
    mixed_digits,
    named_signals,
    ring_plus,
)
from .ports import RouteUnitSignature

__all__ = ["DORTRoute"]


class DORTRoute(wiring.Component):
    """``zfabric.routing.dort`` by arithmetic for one card; its node's coordinates on
    ``identity``.

    The destination id is 2 x (linear index of its node) + its card. Same node: deliver on the
    local port if the card matches, else cross the internal link on the ``pe`` VC. Otherwise the
    first differing dimension is routed the shorter way round (ties by ``tie``): through this
    card's port in that direction (the upper or lower dateline class's VCs; VC 0 with one
    external VC), or across the internal link on the ``ring_upper`` / ``ring_lower`` VCs if the
    dimension is split, on the ``ch`` VCs if not.

    Parameters
    ----------
    head_width : int
    ports : SwitchPorts
    k : tuple of int
    card : int
    port_of : tuple of ((dim, sign), port)
        This card's external ports.
    internal_port, local_port : int
    split : tuple of int
    tie : tuple of int
        +1 / -1 per dimension.
    internal_vcs : tuple of (str, tuple of int)
        The VCs of each internal class.
    external_vcs : int
        VCs on external links (:func:`~zfabric.routing.dort.external_classes`).
    """

    def __init__(
        self,
        *,
        head_width,
        ports,
        k,
        card,
        port_of,
        internal_port,
        local_port,
        split,
        tie,
        internal_vcs,
        external_vcs,
    ):
        self._ports, self._k, self._card = ports, tuple(k), card
        self._port_of = dict(port_of)
        self._internal_port, self._local_port = internal_port, local_port
        self._split, self._tie = set(split), tuple(tie)
        self._internal_vcs = dict(internal_vcs)
        self._external = external_classes(external_vcs)
        super().__init__(
            RouteUnitSignature(head_width, ports.n_out_vcs, sum(coord_widths(self._k)))
        )

    def _internal(self, name):
        return mask_bits(self._ports, self._internal_port, self._internal_vcs[name])

    def _hop(self, dim, sign, upper):
        port = self._port_of.get((dim, sign))
        if port is not None:
            up, down = (mask_bits(self._ports, port, vcs) for vcs in self._external)
            return up if up == down else Mux(upper, up, down)
        if dim in self._split:
            return Mux(upper, self._internal("ring_upper"), self._internal("ring_lower"))
        return self._internal("ch")

    def elaborate(self, platform):
        m = Module()
        here = bit_fields(self.identity, coord_widths(self._k))
        card, *there = named_signals(m, mixed_digits(self.head, (2, *self._k)), "dst")
        m.d.comb += self.next_head.eq(self.head)
        hops = []
        for dim, (cur, dst) in enumerate(zip(here, there, strict=True)):
            tie_plus = self._tie[dim] > 0
            plus = ring_plus(
                m, cur, dst, self._k[dim], wrap=True, tie_plus=tie_plus, name=f"d{dim}"
            )
            upper = dst > cur
            hops.append(Mux(plus, self._hop(dim, 1, upper), self._hop(dim, -1, upper)))
        for dim, (cur, dst) in enumerate(zip(here, there, strict=True)):
            with m.If(cur != dst) if dim == 0 else m.Elif(cur != dst):
                m.d.comb += self.cand.eq(hops[dim])
        with m.Else():
            with m.If(card == self._card):
                local = range(self._ports.vcs[self._local_port])  # every ejection VC
                m.d.comb += self.cand.eq(mask_bits(self._ports, self._local_port, local))
            with m.Else():
                m.d.comb += self.cand.eq(self._internal("pe"))
        return m
