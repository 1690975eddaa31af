"""DORT on nDT twin nodes (``zfabric/routing/dort.py`` in logic), and the routings built on
it: TSDOR (``zfabric/routing/tsdor.py``) and adaptive nDT routing
(``zfabric/routing/dort_adaptive.py``)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import wiring

from zfabric.routing.dort import ring_class

from .logic import (
    bit_fields,
    coord_widths,
    mask_bits,
    mixed_digits,
    named_signals,
    ring_plus,
)
from .ports import RouteUnitSignature, SwitchPorts

__all__ = ["DORTRoute", "DORTAdaptiveRoute"]


class DORTRoute(wiring.Component):
    """``zfabric.routing.dort`` by arithmetic for one card; its node's coordinates on
    ``identity``.

    The destination id is 2 x (linear index of its node) + its card. Same node: deliver on the
    local port if the card matches, else cross the internal link on the ``pe`` VCs. Otherwise the
    first differing dimension in ``order`` is routed the shorter way round (ties by ``tie``):
    through this card's port in that direction (the upper or lower dateline class's VCs), or
    across the internal link on the ``ring_upper`` / ``ring_lower`` VCs (the dimension's own
    pair with ``rings: per_dimension``) if the dimension is split, on the ``ch`` VCs if not.

    TSDOR is this unit once per traffic class: class 1 takes the dimensions in descending
    ``order``, and each class its own VCs and ties (:class:`~zfabric.hdl.router.route.RouteRows`
    gives each input VC the unit of the class it carries).

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
    external : (tuple of int, tuple of int)
        The upper and lower classes' VCs on external links
        (:func:`~zfabric.routing.dort.external_classes`).
    order : tuple of int, optional
        The dimensions in routing order (ascending by default).
    """

    def __init__(
        self,
        *,
        head_width: int,
        ports: SwitchPorts,
        k: Sequence[int],
        card: int,
        port_of: Iterable[tuple[tuple[int, int], int]],
        internal_port: int,
        local_port: int,
        split: Iterable[int],
        tie: Sequence[int],
        internal_vcs: Iterable[tuple[str, tuple[int, ...]]],
        external: tuple[tuple[int, ...], tuple[int, ...]],
        order: Sequence[int] | None = None,
    ) -> None:
        self._ports, self._k, self._card = ports, tuple(k), card
        self._port_of = dict(port_of)
        self._internal_port, self._local_port = internal_port, local_port
        self._split, self._tie = set(split), tuple(tie)
        self._internal_vcs = dict(internal_vcs)
        self._external = tuple(external)
        self._order = tuple(range(len(self._k))) if order is None else tuple(order)
        if sorted(self._order) != list(range(len(self._k))):
            raise ValueError(f"order must list the dimensions 0..{len(self._k) - 1}, not {order!r}")
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
        if dim in self._split:  # its own ring pair, or the pair every split dimension shares
            per_dimension = ring_class(dim, True, True) in self._internal_vcs
            ring_upper, ring_lower = (ring_class(dim, u, per_dimension) for u in (True, False))
            return Mux(upper, self._internal(ring_upper), self._internal(ring_lower))
        return self._internal("ch")

    def elaborate(self, platform):
        m = Module()
        self._route(m, self.cand)
        return m

    def _route(self, m, cand):
        """Drive ``cand`` with DORT's hop; returns the coordinates (here, there) per dimension."""
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
        for i, dim in enumerate(self._order):
            differ = here[dim] != there[dim]
            with m.If(differ) if i == 0 else m.Elif(differ):
                m.d.comb += cand.eq(hops[dim])
        with m.Else():
            with m.If(card == self._card):
                local = range(self._ports.vcs[self._local_port])  # every ejection VC
                m.d.comb += cand.eq(mask_bits(self._ports, self._local_port, local))
            with m.Else():
                m.d.comb += cand.eq(self._internal("pe"))
        return here, there


class DORTAdaptiveRoute(DORTRoute):
    """``zfabric.routing.dort_adaptive`` by arithmetic: :class:`DORTRoute`'s escape hop plus,
    for a packet that has not escaped, the adaptive VCs of this card's ports in every productive
    direction (both at a tie) and, when the escape hop crosses the internal link, the internal
    link's adaptive VCs.

    The mask is the candidate set (round-robin selection; the ``selection`` option's priority
    order is not in a mask, ``no_internal`` is: no internal adaptive VCs).

    Parameters
    ----------
    escaped : bool
        This input VC is an escape VC: DORT only.
    adaptive_external, adaptive_internal : tuple of int
        The adaptive VCs of external links and of the internal link (empty: none offered).
    """

    def __init__(
        self,
        *,
        escaped: bool,
        adaptive_external: Sequence[int],
        adaptive_internal: Sequence[int],
        **fields,
    ) -> None:
        self._escaped = escaped
        self._adaptive_external = tuple(adaptive_external)
        self._adaptive_internal = tuple(adaptive_internal)
        super().__init__(**fields)

    def elaborate(self, platform):
        m = Module()
        if self._escaped:
            self._route(m, self.cand)
            return m
        escape = Signal(len(self.cand))
        here, there = self._route(m, escape)
        adaptive = 0
        for dim, (cur, dst) in enumerate(zip(here, there, strict=True)):
            k = self._k[dim]
            forward = Signal(range(k), name=f"a{dim}_forward")  # (dst - cur) mod k
            m.d.comb += forward.eq(Mux(dst >= cur, dst - cur, dst + k - cur))
            # a direction is productive if it is no longer than the other way round
            for sign, productive in ((1, 2 * forward <= k), (-1, 2 * forward >= k)):
                port = self._port_of.get((dim, sign))
                if port is not None:
                    mask = mask_bits(self._ports, port, self._adaptive_external)
                    adaptive = adaptive | Mux((cur != dst) & productive, mask, 0)
        every = range(self._ports.vcs[self._internal_port])
        crossing = (escape & mask_bits(self._ports, self._internal_port, every)).any()
        internal = mask_bits(self._ports, self._internal_port, self._adaptive_internal)
        m.d.comb += self.cand.eq(escape | adaptive | Mux(crossing, internal, 0))
        return m
