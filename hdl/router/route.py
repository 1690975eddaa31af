"""Route units, generated from the plan's routing function (the single source of truth).

A route unit looks at the routing head of the flit at the front of one input VC and gives the
candidate output VCs (a mask over the switch's flat output-VC numbering, see
:class:`SwitchPorts`) and the head the next switch sees. The allocator takes the lowest usable
bit of the mask, so a routing decision ``Decision(hops=(Hop(port, vcs), ...))`` must list its
candidates in ascending (port, vc) order to be a mask; :func:`candidate_mask` checks it.

- Destination routing (``dor``, ``dort``, ``updown`` and any routing whose head is an endpoint
  id): :class:`TableRoute`, a ``m.Switch`` over every destination, filled by calling the routing
  function for each one (:func:`route_row`).
- Sliced routing (``sliced``): :class:`SlicedRoute`, the header decoder of
  ``zfabric/routing/sliced.py``. It pops fields of fixed widths and holds no table: the
  switch's level fixes the widths, its Znode id (SID) is compared with the header's, and the
  port groups come from the plan's port roles.
"""

from __future__ import annotations

from dataclasses import dataclass

from amaranth.hdl import Const, Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from zfabric.plan import FabricPlan, PlanView
from zfabric.routing import make_routing
from zfabric.routing.base import Hop, RoutingFunction
from zfabric.topologies.znode import field_width

from ..flit import head_width

__all__ = [
    "SwitchPorts",
    "candidate_mask",
    "RouteUnitSignature",
    "TableRoute",
    "SlicedRoute",
    "TableRoutes",
    "SlicedRoutes",
    "route_row",
]


@dataclass(frozen=True)
class SwitchPorts:
    """Per-port VC counts of one switch and whether each port faces an endpoint.

    Output VCs are numbered flat: port ``o``'s VC ``w`` is ``base[o] + w``.
    """

    vcs: tuple[int, ...]
    local: tuple[bool, ...]

    @classmethod
    def from_plan(cls, view: PlanView, switch: int) -> SwitchPorts:
        vcs, local = [], []
        for port in range(view.switches[switch].radix):
            into, out = view.in_link[switch][port], view.out_link[switch][port]
            if (into is None) != (out is None) or (into and into.vcs != out.vcs):
                name = view.switches[switch].name
                raise ValueError(f"{name}.p{port}: its two directions differ")
            vcs.append(into.vcs if into else 1)
            local.append(into is None)
        return cls(tuple(vcs), tuple(local))

    @property
    def n_ports(self) -> int:
        return len(self.vcs)

    @property
    def n_out_vcs(self) -> int:
        return sum(self.vcs)

    def base(self, port: int) -> int:
        return sum(self.vcs[:port])


def candidate_mask(hops: tuple[Hop, ...], ports: SwitchPorts) -> int:
    """The flat output-VC mask of a decision's candidates (priority order must be ascending)."""
    mask, last = 0, -1
    for hop in hops:
        for vc in hop.vcs:
            if not 0 <= vc < ports.vcs[hop.port]:
                raise ValueError(f"candidate {hop!r}: port {hop.port} has no VC {vc}")
            bit = ports.base(hop.port) + vc
            if bit <= last:
                raise ValueError(
                    f"candidates {hops!r} are not in ascending (port, VC) order: the first-free "
                    f"rule cannot be a priority encoder"
                )
            mask |= 1 << bit
            last = bit
    return mask


class RouteUnitSignature(wiring.Signature):
    """``head`` in; ``cand`` (flat output-VC mask) and ``next_head`` out."""

    def __init__(self, head_width: int, n_out_vcs: int):
        self._head_width, self._n_out_vcs = head_width, n_out_vcs
        super().__init__(
            {"head": In(head_width), "cand": Out(n_out_vcs), "next_head": Out(head_width)}
        )

    def __eq__(self, other):
        return (
            isinstance(other, RouteUnitSignature)
            and self._head_width == other._head_width
            and self._n_out_vcs == other._n_out_vcs
        )

    def __hash__(self):
        return hash((RouteUnitSignature, self._head_width, self._n_out_vcs))

    def __repr__(self):
        return f"RouteUnitSignature({self._head_width}, {self._n_out_vcs})"


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
        return m


class SlicedRoute(wiring.Component):
    """The sliced-address decoder of one input port (``zfabric/routing/sliced.py``).

    A ``down``-class input (local or down port) pops the direction bit: 1 sends the packet up
    (every up port is a candidate); 0 pops the Znode id when there are several Znodes and, if
    it is not this switch's, offers the side ports toward it. Otherwise, and on up or side
    inputs, it pops this level's label and goes down to that group. The next head is the head
    shifted right by the bits popped, zero-filled from the top.

    Parameters
    ----------
    head_width, n_out_vcs : int
    down_class : bool
        The input port is a local or down port.
    zid_bits, label_bits : int
        Widths of the Znode id field (0 with one Znode) and of this level's label.
    sid : int
        This switch's Znode id.
    up_mask : int
    down_masks, side_masks : tuple of (int, int)
        (label, mask) and (Znode id, mask) pairs.
    """

    def __init__(
        self,
        *,
        head_width: int,
        n_out_vcs: int,
        down_class: bool,
        zid_bits: int,
        label_bits: int,
        sid: int,
        up_mask: int,
        down_masks,
        side_masks,
    ):
        self._down_class = down_class
        self._zid_bits = zid_bits
        self._label_bits = label_bits
        self._sid = sid
        self._up_mask = up_mask
        self._down_masks = tuple(down_masks)
        self._side_masks = tuple(side_masks)
        super().__init__(RouteUnitSignature(head_width, n_out_vcs))

    def _go_down(self, m, head):
        width = self._label_bits
        m.d.comb += self.next_head.eq(head[width:])
        if width == 0:  # a level with one zone below: a single group
            m.d.comb += self.cand.eq(dict(self._down_masks).get(0, 0))
            return
        label = head[:width]
        with m.Switch(label):
            for value, mask in self._down_masks:
                with m.Case(value):
                    m.d.comb += self.cand.eq(mask)

    def elaborate(self, platform):
        m = Module()
        head = self.head
        if not self._down_class:
            self._go_down(m, head)
            return m
        rest = head[1:]
        with m.If(head[0]):
            m.d.comb += [self.cand.eq(self._up_mask), self.next_head.eq(rest)]
        with m.Else():
            if self._zid_bits:
                zid, after_zid = rest[: self._zid_bits], rest[self._zid_bits :]
                with m.If(zid != Const(self._sid, self._zid_bits)):
                    m.d.comb += self.next_head.eq(after_zid)
                    with m.Switch(zid):
                        for value, mask in self._side_masks:
                            with m.Case(value):
                                m.d.comb += self.cand.eq(mask)
                with m.Else():
                    self._go_down(m, after_zid)
            else:
                self._go_down(m, rest)
        return m


class TableRoutes:
    """Route tables of one switch, one per (input port, input VC), from the routing function."""

    def __init__(self, *, head_width: int, ports: SwitchPorts, tables: dict):
        self.head_width = head_width
        self.ports = ports
        self.tables = tables  # (port, vc) -> rows

    def unit(self, port: int, vc: int) -> TableRoute:
        return TableRoute(
            head_width=self.head_width, n_out_vcs=self.ports.n_out_vcs, rows=self.tables[port, vc]
        )


class SlicedRoutes:
    """Sliced decoders of one switch: one configuration per input port class."""

    def __init__(self, *, head_width: int, ports: SwitchPorts, down_class, **fields):
        self.head_width = head_width
        self.ports = ports
        self.down_class = tuple(down_class)
        self.fields = fields

    def unit(self, port: int, vc: int) -> SlicedRoute:
        return SlicedRoute(
            head_width=self.head_width,
            n_out_vcs=self.ports.n_out_vcs,
            down_class=self.down_class[port],
            **self.fields,
        )


def _table(
    routing: RoutingFunction, switch: int, port: int, vc: int, ports: SwitchPorts, heads
) -> tuple:
    """Rows of (heads, mask, next_head) for every head, grouped by identical result."""
    groups: dict[tuple[int, int | None], list[int]] = {}
    for head in heads:
        try:
            decision = routing.route(switch, port, vc, head)
        except (KeyError, IndexError, LookupError):
            continue  # a head this input can never see
        if not decision.hops:
            continue
        next_head = None if decision.head == head else decision.head
        groups.setdefault((candidate_mask(decision.hops, ports), next_head), []).append(head)
    return tuple((tuple(hs), mask, nxt) for (mask, nxt), hs in groups.items())


def _sliced(plan: FabricPlan, view: PlanView, switch: int, ports: SwitchPorts) -> SlicedRoutes:
    params = plan.routing.params
    sw = view.switches[switch]
    level, sid = sw.position["level"], sw.position["znode"]
    znodes = params["znodes"]
    up, down, side = 0, {}, {}
    for port, info in enumerate(sw.ports):
        mask = ((1 << ports.vcs[port]) - 1) << ports.base(port)
        if info.role == "up":
            up |= mask
        elif info.role in ("down", "local"):
            down[info.group] = down.get(info.group, 0) | mask
        elif info.role == "side":
            side[info.group] = side.get(info.group, 0) | mask
    return SlicedRoutes(
        head_width=head_width(plan),
        ports=ports,
        down_class=[p.role in ("local", "down") for p in sw.ports],
        zid_bits=field_width(znodes) if znodes > 1 else 0,
        label_bits=field_width(params["z"][level - 1]),
        sid=sid,
        up_mask=up,
        down_masks=tuple(sorted(down.items())),
        side_masks=tuple(sorted(side.items())),
    )


def route_row(
    plan: FabricPlan, switch: int, *, view: PlanView | None = None, routing=None
) -> TableRoutes | SlicedRoutes:
    """The route units of ``switch``: a sliced decoder, or tables from the routing function."""
    view = view or PlanView(plan)
    ports = SwitchPorts.from_plan(view, switch)
    if plan.routing.name == "sliced":
        return _sliced(plan, view, switch, ports)
    routing = routing or make_routing(view)
    heads = range(len(plan.endpoints))
    tables, cache = {}, {}
    for port in range(ports.n_ports):
        for vc in range(ports.vcs[port]):
            key = (
                port if routing.uses_input_port else None,
                vc if routing.uses_input_vc else None,
            )
            if key not in cache:
                cache[key] = _table(routing, switch, port, vc, ports, heads)
            tables[port, vc] = cache[key]
    return TableRoutes(head_width=head_width(plan), ports=ports, tables=tables)
