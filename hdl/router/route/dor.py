"""Dimension-order routing on tori and meshes (``zfabric/routing/dor.py`` in logic)."""

from __future__ import annotations

from amaranth.hdl import Module, Mux
from amaranth.lib import wiring

from zfabric.routing.base import class_vcs
from zfabric.routing.dor import TIES, VC_CLASSES

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
    deliver on the local port. With ``vc_classes: balanced`` a hop that may take either class
    (``zfabric.routing.dor.may_take_either``: not wrapping, and going + not from coordinate 0,
    going - not from k-1) offers both classes when the packet enters the ring here, and the
    class it arrived on when it is already on the ring: a unit is built per input port's
    direction (``arrival``) and input VC's class (``in_class``).

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
    vc_classes : str
        ``zfabric.routing.dor.VC_CLASSES``: ``"fixed"`` or ``"balanced"``.
    arrival : (dim, sign) or ()
        The direction a packet arriving on this unit's input port travels (empty: the local
        port); read with balanced classes only.
    in_class : int
        The dateline class of this unit's input VC (0 or 1); read with balanced classes only.
    """

    def __init__(
        self,
        *,
        head_width,
        ports,
        k,
        wrap,
        datelines,
        tie,
        vcs,
        port_of,
        local_port,
        vc_classes="fixed",
        arrival=(),
        in_class=0,
    ):
        if tie not in TIES:
            raise ValueError(f"tie must be one of {', '.join(TIES)}, not {tie!r}")
        if vc_classes not in VC_CLASSES:
            raise ValueError(
                f"vc_classes must be one of {', '.join(VC_CLASSES)}, not {vc_classes!r}"
            )
        self._ports, self._k, self._wrap, self._datelines = ports, tuple(k), wrap, datelines
        self._tie = tie
        self._balanced = wrap and datelines and vc_classes == "balanced"
        self._arrival, self._in_class = arrival, in_class
        self._classes = (class_vcs(0, vcs), class_vcs(1, vcs))
        self._port_of, self._local_port = dict(port_of), local_port
        super().__init__(
            RouteUnitSignature(head_width, ports.n_out_vcs, sum(coord_widths(self._k)))
        )

    def _hop(self, dim, sign, cur, upper):
        port = self._port_of.get((dim, sign))
        if port is None:  # a mesh edge: this direction never routes
            return 0
        up, down = (mask_bits(self._ports, port, vcs) for vcs in self._classes)
        if not self._datelines:
            return up
        own = Mux(upper, up, down)
        if not self._balanced:
            return own
        # ``may_take_either``: its own class is the upper going +, the lower going -
        if sign > 0:
            either, other, on_other = upper & (cur != 0), down, self._in_class == 1
        else:
            either, other, on_other = ~upper & (cur != self._k[dim] - 1), up, self._in_class == 0
        if self._arrival != (dim, sign):  # entering the ring here
            return Mux(either, up | down, own)
        return Mux(either, other, own) if on_other else own

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
            hops.append(Mux(plus, self._hop(dim, 1, cur, upper), self._hop(dim, -1, cur, upper)))
            directions.append((cur != dst, plus))
        for dim, (cur, dst) in enumerate(zip(here, there, strict=True)):
            with m.If(cur != dst) if dim == 0 else m.Elif(cur != dst):
                m.d.comb += cand.eq(hops[dim])
        with m.Else():
            local = range(self._ports.vcs[self._local_port])  # every ejection VC
            m.d.comb += cand.eq(mask_bits(self._ports, self._local_port, local))
        return directions
