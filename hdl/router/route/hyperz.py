"""HyperZ's routings by arithmetic (``zfabric/routing/hyperz.py`` in logic)."""

from __future__ import annotations

import math
from collections.abc import Sequence

from amaranth.hdl import Module, Mux, Signal, Value
from amaranth.lib import wiring

from zfabric.plan import PlanView
from zfabric.routing.hyperz import Deter, HyperzRouting

from .logic import bit_fields, coord_widths, mask_bits, mixed_digits, named_signals, select_mask
from .ports import RouteUnitSignature, SwitchPorts

__all__ = ["HyperzRoute", "HYPERZ_ROUTINGS", "hyperz_unit"]

#: the routings this unit computes
HYPERZ_ROUTINGS = ("odim", "deter", "cliod", "aliod")


def _mod(value: Value, n: int) -> Value:
    """``value mod n``: a bit slice for a power of 2."""
    return value[: (n - 1).bit_length()] if n & (n - 1) == 0 else value % n


def _div(value: Value, n: int) -> Value:
    return value[(n - 1).bit_length() :] if n & (n - 1) == 0 else value // n


class HyperzRoute(wiring.Component):
    """One level-``level`` HyperZ switch's route unit: ``odim``, ``deter``, ``cliod`` or
    ``aliod`` by comparators, no table.

    The head is the destination's endpoint id ``g * prod(z) + Y`` and passes unchanged. Its
    mixed-radix digits (radices ``z`` then ``s``, least significant first) are the flat
    address's tree labels y_1..y_h and the destination Z-node's coordinates a_1..a_d. The
    ``identity`` input holds this switch's zone as digits (the labels y_{level+1}..y_h of every
    processor below it) and then its own coordinates. One comparator per dimension gives the
    offset set O; the zone's digits against the head's give *reached* (the lowest common level
    is this one); label y_level picks the down group. The side ports toward coordinate t of
    dimension k are that dimension's group number t - (t > own) (the builder's order), so every
    switch of a level is one module whatever its Z-node and zone.

    The candidates are the routing's moves on ``vcs`` and its escape sub-function's on
    ``escape_vcs`` (empty when the routing offers no separate escape), as
    :meth:`zfabric.routing.hyperz.HyperzRouting.route` lists them; a level-1 switch above the
    destination delivers on every ejection VC. A head past the last endpoint (``endpoints``)
    gets no candidate, as the routing function has no route for it.

    Parameters
    ----------
    head_width : int
    ports : SwitchPorts
    routing : str
        One of :data:`HYPERZ_ROUTINGS`.
    s, z : tuple of int
        Z-nodes per dimension; children per zone per level (``z[0]`` processors per level-1
        switch).
    level : int
        This switch's level (1 .. len(z)); level 1's down groups are its local ports.
    up : tuple of int
        Up ports, ascending.
    down : tuple of (int, tuple of int)
        (label, ports) of every down group (local ports at level 1).
    side : tuple of tuple of tuple of int
        ``side[k][g]``: the ``q`` lane ports of dimension k's group g.
    vcs, escape_vcs : tuple of int
        The VCs of the moves and of the escape sub-function.
    endpoints : int
        The fabric's endpoint count.
    spread : int
        ``deter``'s m_level (the product of the up-port counts below this level): its up port
        is ``Y // spread mod len(up)``, its lane and down link ``Y mod`` their count.
    """

    def __init__(
        self,
        *,
        head_width: int,
        ports: SwitchPorts,
        routing: str,
        s: Sequence[int],
        z: Sequence[int],
        level: int,
        up: Sequence[int],
        down: Sequence[tuple[int, Sequence[int]]],
        side: Sequence[Sequence[Sequence[int]]],
        vcs: Sequence[int],
        escape_vcs: Sequence[int],
        endpoints: int,
        spread: int = 1,
    ):
        if routing not in HYPERZ_ROUTINGS:
            choices = ", ".join(HYPERZ_ROUTINGS)
            raise ValueError(f"routing must be one of {choices}, not {routing!r}")
        if not 1 <= level <= len(z):
            raise ValueError(f"level must be 1 .. {len(z)}, not {level!r}")
        self._ports, self._routing = ports, routing
        self._s, self._z, self._level = tuple(s), tuple(z), level
        self._up, self._down = tuple(up), tuple((c, tuple(p)) for c, p in down)
        self._side = tuple(tuple(tuple(lanes) for lanes in groups) for groups in side)
        self._vcs, self._escape_vcs = tuple(vcs), tuple(escape_vcs)
        self._spread, self._endpoints = spread, endpoints
        super().__init__(RouteUnitSignature(head_width, ports.n_out_vcs, sum(self.widths)))

    @property
    def widths(self) -> tuple[int, ...]:
        """The identity's fields: the zone's digits (radices z[level:]), then the coordinates."""
        return coord_widths(self._z[self._level :]) + coord_widths(self._s)

    def _mask(self, ports: Sequence[int], vcs: Sequence[int]) -> int:
        return sum(mask_bits(self._ports, port, vcs) for port in ports)

    def _signal(self, name: str) -> Signal:
        return Signal(self._ports.n_out_vcs, name=name)

    def elaborate(self, platform):
        m = Module()
        m.d.comb += self.next_head.eq(self.head)
        h, level, d = len(self._z), self._level, len(self._s)
        deter = self._routing == "deter"
        digits = named_signals(m, mixed_digits(self.head, self._z + self._s), "dst")
        labels, there = digits[:h], digits[h:]
        fields = bit_fields(self.identity, self.widths)
        zone, here = fields[: h - level], fields[h - level :]
        reached = Signal(name="reached")  # the LCL: the destination is below this zone
        same = [own == label for own, label in zip(zone, labels[level:], strict=True)]
        m.d.comb += reached.eq(~_or(~v for v in same))  # the top: no zone digits, reached
        offset, group = [], []
        for k, (own, dst) in enumerate(zip(here, there, strict=True)):
            differ = Signal(name=f"offset{k}")  # one comparator per dimension
            rank = Signal(range(self._s[k] - 1), name=f"group{k}")
            m.d.comb += [differ.eq(own != dst), rank.eq(Mux(dst > own, dst - 1, dst))]
            offset.append(differ)
            group.append(rank)
        any_offset = Signal(name="any_offset")
        m.d.comb += any_offset.eq(_or(offset))
        label = labels[level - 1]
        zone_size = math.prod(self._z)
        flat = Signal(range(zone_size), name="flat")  # Y, deter's spreading
        if zone_size > 1:
            m.d.comb += flat.eq(_mod(self.head, zone_size))

        def pick(ports, index, vcs, name):
            """The mask of every port of ``ports`` or, for ``deter``, of one: index mod len."""
            if not deter or len(ports) == 1:
                return self._mask(ports, vcs)
            chosen = self._signal(name)
            masks = [(i, self._mask((p,), vcs)) for i, p in enumerate(ports)]
            select_mask(m, chosen, _mod(index, len(ports)), masks)
            return chosen

        def select(selector, masks, name):
            chosen = self._signal(name)
            select_mask(m, chosen, selector, masks)
            return chosen

        def side(k, vcs, name):
            lanes = self._side[k]
            masks = [(g, pick(ports, flat, vcs, f"{name}_{g}")) for g, ports in enumerate(lanes)]
            return select(group[k], masks, name)

        def down(vcs, name):
            if level == 1:  # local ports: delivery only (below)
                return 0
            masks = [(c, pick(ports, flat, vcs, f"{name}_{c}")) for c, ports in self._down]
            return select(label, masks, name)

        def up(vcs, name):
            if not self._up:  # the top level: always reached
                return 0
            return pick(self._up, _div(flat, self._spread), vcs, name)

        def first_side(vcs, name):
            """side(min O), 0 with O empty."""
            chosen = self._signal(name)
            for k in range(d):
                with m.If(offset[k]) if k == 0 else m.Elif(offset[k]):
                    m.d.comb += chosen.eq(side(k, vcs, f"{name}{k}"))
            return chosen

        def every_side(vcs, name):
            return _or(Mux(offset[k], side(k, vcs, f"{name}{k}"), 0) for k in range(d))

        def odim(vcs, name):
            at_lcl = Mux(any_offset, first_side(vcs, f"{name}_side"), down(vcs, f"{name}_down"))
            return Mux(reached, at_lcl, up(vcs, f"{name}_up"))

        vcs, escape_vcs = self._vcs, self._escape_vcs
        if self._routing == "cliod":
            moves = Mux(reached & any_offset, every_side(vcs, "side"), odim(vcs, "odim"))
        elif self._routing == "aliod":  # Table 1: the sides alternate with up or down
            tree = Mux(reached, down(vcs, "down") if level > 1 else 0, up(vcs, "up"))
            moves = every_side(vcs, "side") | tree
        else:
            moves = odim(vcs, "odim")
        if not escape_vcs:
            escape = 0
        elif self._routing == "aliod":  # side(min O) at this level, else up, then down
            tree = Mux(reached, down(escape_vcs, "escape_down"), up(escape_vcs, "escape_up"))
            escape = Mux(any_offset, first_side(escape_vcs, "escape_side"), tree)
        else:
            escape = odim(escape_vcs, "escape")
        cand = moves | escape
        if level == 1:  # the destination's switch: deliver, on any ejection VC
            masks = [(c, self._mask(p, range(self._ports.vcs[p[0]]))) for c, p in self._down]
            local = select(label, masks, "local")
            cand = Mux(reached & ~any_offset, local, cand)
        if self._endpoints < 1 << len(self.head):  # a head naming no endpoint: no route
            cand = Mux(self.head < self._endpoints, cand, 0)
        m.d.comb += self.cand.eq(cand)
        return m


def _or(values) -> Value:
    result = 0
    for value in values:
        result = value | result
    return Value.cast(result)


def hyperz_unit(
    view: PlanView, routing: HyperzRouting, switch: int
) -> tuple[dict, tuple[int, int]]:
    """:class:`HyperzRoute`'s parameters for ``switch`` (all but ``head_width`` and ``ports``),
    read from the routing function's port groups, and its identity (width, value)."""
    params = view.plan.routing.params
    s, z = tuple(params["s"]), tuple(params["z"])
    sw = view.switches[switch]
    level, coords = sw.position["level"], tuple(sw.position["coords"])
    sides = routing.side[switch]
    fields = {
        "routing": view.plan.routing.name,
        "s": s,
        "z": z,
        "level": level,
        "up": routing.up[switch],
        "down": tuple(sorted(routing.down[switch].items())),
        "side": tuple(
            tuple(sides[k, t] for t in range(s[k]) if t != coords[k]) for k in range(len(s))
        ),
        "vcs": routing.adaptive_vcs if routing.adaptive else routing.escape_vcs,
        "escape_vcs": routing.escape_vcs if routing.adaptive else (),
        "endpoints": len(view.plan.endpoints),
        "spread": routing.spread[level - 1] if isinstance(routing, Deter) else 1,
    }
    zone_digits, zone = [], sw.position["zone"]
    for radix in z[level:]:
        zone, digit = divmod(zone, radix)
        zone_digits.append(digit)
    widths = coord_widths(z[level:]) + coord_widths(s)
    identity, offset = 0, 0
    for value, width in zip((*zone_digits, *coords), widths, strict=True):
        identity |= value << offset
        offset += width
    return fields, (offset, identity)
