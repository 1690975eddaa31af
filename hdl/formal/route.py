"""Route unit proofs: each unit's answer is the routing function's, for every head.

The route units are generated from the plan's routing function (``zfabric/routing``, the single
source of truth): tables for destination routings such as ``updown``, arithmetic on coordinates
for ``dor`` and ``dort``, header decoders for the Znode routings. The harness puts the route
units of some switches (one per input VC each) under a free ``head``; for a unit shared by
several switches that tell themselves apart by an ``identity`` input (a torus switch's
coordinates, a Znode id), a free choice of switch (``which``) drives that input. The reference
is the routing function's decision for that switch, input port, input VC and head, computed in
Python for every head value the ``head_width`` bits can hold and written into the harness as
one assertion per value, but for the values no packet carries that the routing function has no
route for (an id >= N where the endpoints do not fill the head's values: no endpoint may send
one, docs/rtl.md), which are left free.

Properties (assertions), for every switch, input VC and head: the unit's candidates (the flat
output-VC mask) are the decision's candidates (none where the routing function has no route);
where there is a candidate, the next head is the decision's. The units are combinational, so
one step proves it for all inputs. A head of the sliced routing is ``(value, width)``: the
harness gives it the full width, as the header a packet starts with.

Units alike on switches without an ``identity`` input are one module whatever the switch, so
the unit is checked against every distinct decision table of those switches: a switch whose
decisions differ from its unit's is a failure like any.

Sliced heads that span several flits (``router.head_bits``, docs/microarchitecture.md, *Heads
longer than a flit*) give the units two more outputs: ``flits``, the head flits of the head at
the input, and ``skip``, those the next head no longer needs. The head field does not carry
the header's length, which the unit reads from the bits themselves, so these are checked on
every head some packet brings to the input (:func:`~zfabric.hdl.router.route.reachable_states`):
``flits`` is ``head_flits`` of the routing function's ``head_length`` of the head, ``skip``
that less ``head_flits`` of the next head's length.
"""

from __future__ import annotations

from collections.abc import Sequence

from amaranth.hdl import Assert, Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In

from zfabric.plan import FabricPlan
from zfabric.routing import head_flits

from ..flit import surplus_head_flits
from ..router.route import RouteRows, candidate_mask, reachable_states

__all__ = ["RouteHarness"]


def carried_heads(rows: RouteRows) -> set[int]:
    """The head values some packet carries at some switch (its destination's head, or what a
    sliced routing leaves of it): other values are heads no endpoint may send (docs/rtl.md,
    *Packets*: an id >= N where N is not a power of two)."""
    return {
        rows.routing.head_value(head)
        for _s, _p, _v, head, _decision in reachable_states(rows.view, rows.routing)
    }


def reference(
    rows: RouteRows, switch: int, port: int, vc: int, carried: set[int]
) -> list[tuple[int, int | None] | None]:
    """Per head value: the routing function's candidate mask and next head value (None where
    it has no candidate); the entry itself is None (nothing to check) where the routing
    function has no route for a value outside ``carried`` (:func:`carried_heads`)."""
    row, routing = rows.row(switch), rows.routing
    table: list[tuple[int, int | None] | None] = []
    for value in range(1 << row.head_width):  # unreachable values are checked too
        try:
            decision = routing.route(switch, port, vc, routing.head_of_value(value, row.head_width))
        except LookupError:
            table.append((0, None) if value in carried else None)
            continue
        mask = candidate_mask(decision.hops, row.ports, ordered=rows.ordered)
        head = routing.head_value(decision.head)
        table.append((mask, head if mask else None))
    return table


def head_flit_table(rows: RouteRows) -> dict[tuple[int, int], dict[int, tuple[int, int]]]:
    """Per (switch, input port): per head value some packet brings there, its head flits and
    the surplus the switch drops with it (``flits``, ``skip``), from the routing function's
    head lengths; a value brought with two lengths is refused (no unit could tell them)."""
    bits = rows.plan.router.head_bits
    found: dict[tuple[int, int], dict[int, tuple[int, int]]] = {}
    for s, p, _v, head, decision in reachable_states(rows.view, rows.routing):
        flits = head_flits(rows.routing.head_length(head), bits)
        skip = flits - head_flits(rows.routing.head_length(decision.head), bits)
        known = found.setdefault((s, p), {}).setdefault(head[0], (flits, skip))
        if known != (flits, skip):
            raise ValueError(
                f"switch {s} port {p}: head {head[0]} reaches it as {known} and as"
                f" {(flits, skip)} head flits and surplus"
            )
    return found


class RouteHarness(wiring.Component):
    """The route units of ``switches`` of ``plan`` against the routing function.

    Parameters
    ----------
    plan : FabricPlan
    switches : sequence of int
        The switches whose units are checked; those whose units are alike (one
        :class:`~zfabric.hdl.router.route.RouteRow` key) share one set of units.
    rows : RouteRows, optional
        The plan's route rows (built if not given).
    """

    def __init__(self, plan: FabricPlan, switches: Sequence[int], *, rows: RouteRows | None = None):
        if not switches:
            raise ValueError(f"switches {switches!r}: no switch to check")
        self._rows = rows or RouteRows(plan)
        self._groups: dict[tuple, list[int]] = {}
        for switch in switches:
            self._groups.setdefault(self._rows.row(switch).key, []).append(switch)
        self._head_width = self._rows.head_width
        self._carried = carried_heads(self._rows)
        # sliced heads of several flits: the units also give their head flits and surplus
        several = self._rows.kind == "sliced" and surplus_head_flits(plan)
        self._flits = head_flit_table(self._rows) if several else None
        size = max(2, *(len(group) for group in self._groups.values()))
        # per group: which of its switches the units are (free), by position in the group
        super().__init__(
            {"head": In(self._head_width), "which": In(range(size)).array(len(self._groups))}
        )

    def unit(self, switch: int, port: int, vc: int) -> wiring.Component:
        """The route unit of ``switch``'s input VC (overridden for planted bugs)."""
        return self._rows.row(switch).unit(port, vc)

    def elaborate(self, platform):
        m = Module()
        for g, group in enumerate(self._groups.values()):
            ports = self._rows.row(group[0]).ports
            for port in range(ports.n_ports):
                for vc in range(ports.vcs[port]):
                    self._check(m, f"g{g}_p{port}_v{vc}", group, self.which[g], port, vc)
        return m

    def _check(self, m: Module, name: str, group: list[int], which, port: int, vc: int):
        """One unit shared by ``group``'s switches (with an ``identity``: ``which`` of them it
        is), against each switch's decision table, head value by head value."""
        row = self._rows.row(group[0])
        unit = self.unit(group[0], port, vc)
        m.submodules[f"route_{name}"] = unit
        m.d.comb += unit.head.eq(self.head)
        # per switch (by position in the group, with an identity), or per distinct table
        tables: dict[tuple, object] = {}
        for i, switch in enumerate(group):
            table = tuple(reference(self._rows, switch, port, vc, self._carried))
            if row.identity_width:
                tables[(i, table)] = which == i
            else:
                tables.setdefault((0, table), True)
        if row.identity_width:
            with m.Switch(which):
                for i, switch in enumerate(group):
                    with m.Case(i):
                        m.d.comb += unit.identity.eq(self._rows.row(switch).identity)
        # an assertion per head value rather than a table lookup, which synthesis would turn
        # into a ROM that the solver handles as an array (and k-induction as free state)
        for (_i, table), this in tables.items():
            for value, entry in enumerate(table):
                if entry is None:
                    continue
                mask, head = entry
                asked = this & (self.head == value)
                m.d.comb += Assert(~asked | (unit.cand == mask))
                if head is not None:
                    m.d.comb += Assert(~asked | (unit.next_head == head))
        if self._flits is None:
            return
        for i, switch in enumerate(group):
            this = (which == i) if row.identity_width else True
            for value, (flits, skip) in self._flits.get((switch, port), {}).items():
                asked = this & (self.head == value)
                m.d.comb += Assert(~asked | ((unit.flits == flits) & (unit.skip == skip)))
