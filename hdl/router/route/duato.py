"""Duato's adaptive routing on tori and meshes (``zfabric/routing/duato.py`` in logic)."""

from __future__ import annotations

from amaranth.hdl import Module, Mux, Signal

from .dor import DORRoute
from .logic import mask_bits

__all__ = ["DuatoRoute"]


class DuatoRoute(DORRoute):
    """``zfabric.routing.duato`` by arithmetic: :class:`DORRoute`'s escape hop (on the escape
    VCs, the link's first) plus the adaptive VCs of every productive direction.

    A dimension is productive where the coordinates differ; its direction is DOR's (the shorter
    way, ties by ``tie``), so the escape hop's port is the first productive dimension's. The
    mask is the candidate set: the routing function lists the escape hop last, after higher VCs
    of its own port, which only round-robin selection (by output port, whatever the order) can
    take from a mask (:func:`~zfabric.hdl.router.route.candidate_mask`).

    Parameters
    ----------
    adaptive_vcs : tuple of int
        The adaptive VCs of every external link; the others as :class:`DORRoute`'s.
    """

    def __init__(self, *, adaptive_vcs, **fields):
        self._adaptive = tuple(adaptive_vcs)
        super().__init__(**fields)

    def _adaptive_hop(self, dim, sign):
        port = self._port_of.get((dim, sign))
        if port is None:  # a mesh edge: never productive
            return 0
        return mask_bits(self._ports, port, self._adaptive)

    def elaborate(self, platform):
        m = Module()
        escape = Signal(len(self.cand))
        adaptive = 0
        for dim, (productive, plus) in enumerate(self._route(m, escape)):
            hop = Mux(plus, self._adaptive_hop(dim, 1), self._adaptive_hop(dim, -1))
            adaptive = adaptive | Mux(productive, hop, 0)
        m.d.comb += self.cand.eq(escape | adaptive)
        return m
