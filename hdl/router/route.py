"""Route units, generated from the plan's routing function (the single source of truth).

A route unit looks at the routing head of the flit at the front of one input VC and gives the
candidate output VCs (a mask over the switch's flat output-VC numbering, see
:class:`SwitchPorts`) and the head the next switch sees. The allocator takes the lowest usable
bit of the mask, so a routing decision ``Decision(hops=(Hop(port, vcs), ...))`` must list its
candidates in ascending (port, vc) order to be a mask; :func:`candidate_mask` checks it.

- Destination routing (``updown`` and any routing whose head is an endpoint id):
  :class:`TableRoute`, a ``m.Switch`` over every destination, filled by calling the routing
  function for each one.
- ``dor`` and ``dort``: :class:`DORRoute` and :class:`DORTRoute` compute the same decision by
  arithmetic on coordinates (the destination's, decoded from its id, and the switch's own),
  so that every switch of a kind (a torus switch, an nDT card) is the same module with its
  coordinates as an input. Tests check them exhaustively against the routing function; tables
  stay available (``arithmetic=False``).
- Sliced routing (``sliced``): :class:`SlicedRoute`, the header decoder of
  ``zfabric/routing/sliced.py``. It pops fields of fixed widths and holds no table: the
  switch's level fixes the widths, its Znode id (SID) is compared with the header's, and the
  port groups come from the plan's port roles.
"""

from __future__ import annotations

from dataclasses import dataclass

from amaranth.hdl import Module, Mux, Signal, Value
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from zfabric.plan import FabricPlan, PlanView
from zfabric.routing import make_routing
from zfabric.routing.base import Hop, RoutingFunction, class_vcs
from zfabric.routing.dort import external_classes, internal_class_vcs, split_dims
from zfabric.topologies.znode import field_width

from ..flit import head_width

__all__ = [
    "SwitchPorts",
    "candidate_mask",
    "RouteUnitSignature",
    "TableRoute",
    "SlicedRoute",
    "DORRoute",
    "DORTRoute",
    "RouteRow",
    "RouteRows",
    "route_row",
    "reachable_turns",
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
    """``head`` (and ``identity``, if any) in; ``cand`` (flat output-VC mask), ``next_head`` out."""

    def __init__(self, head_width: int, n_out_vcs: int, identity_width: int = 0):
        self._head_width, self._n_out_vcs = head_width, n_out_vcs
        self._identity_width = identity_width
        members = {"head": In(head_width), "cand": Out(n_out_vcs), "next_head": Out(head_width)}
        if identity_width:
            members["identity"] = In(identity_width)
        super().__init__(members)

    def __eq__(self, other):
        return isinstance(other, RouteUnitSignature) and self._params() == other._params()

    def __hash__(self):
        return hash((RouteUnitSignature, self._params()))

    def _params(self):
        return self._head_width, self._n_out_vcs, self._identity_width

    def __repr__(self):
        return f"RouteUnitSignature{self._params()!r}"


def _bit(ports: SwitchPorts, port: int, vc: int) -> int:
    return 1 << (ports.base(port) + vc)


def _bits(ports: SwitchPorts, port: int, vcs) -> int:
    """The mask of a candidate that may take any of ``vcs`` on ``port``."""
    return sum(_bit(ports, port, vc) for vc in vcs)


def _digits(value: Value, radices) -> list[Value]:
    """Mixed-radix digits of ``value``, least significant first (bit slices for powers of 2)."""
    digits = []
    for radix in radices:
        if radix & (radix - 1) == 0:
            bits = (radix - 1).bit_length()
            digits.append(value[:bits])
            value = value[bits:]
        else:
            digits.append((value % radix)[: (radix - 1).bit_length()])
            value = value // radix
    return digits


def _fields(value: Value, widths) -> list[Value]:
    out, offset = [], 0
    for width in widths:
        out.append(value[offset : offset + width])
        offset += width
    return out


def _coord_widths(k) -> tuple[int, ...]:
    return tuple(max(1, (radix - 1).bit_length()) for radix in k)


def _ring(m, cur: Value, dst: Value, k: int, *, wrap: bool, tie_plus: bool, name: str) -> Value:
    """``zfabric.routing.dor.ring_direction`` in logic: 1 for +, 0 for - (cur != dst assumed)."""
    if not wrap:
        return dst > cur
    forward = Signal(range(k), name=f"{name}_forward")  # (dst - cur) mod k
    m.d.comb += forward.eq(Mux(dst >= cur, dst - cur, dst + k - cur))
    backward = k - forward
    return (forward < backward) | ((forward == backward) & tie_plus)


def _named(m, values, name: str) -> list[Signal]:
    """Comb signals for expressions used more than once (simulation expands shared trees)."""
    signals = []
    for i, value in enumerate(values):
        signal = Signal(len(value), name=f"{name}{i}")
        m.d.comb += signal.eq(value)
        signals.append(signal)
    return signals


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
    it is not this switch's (the ``identity`` input), offers the side ports toward it.
    Otherwise, and on up or side inputs, it pops this level's label and goes down to that
    group. The next head is the head shifted right by the bits popped, zero-filled from the top.

    Parameters
    ----------
    head_width, n_out_vcs : int
    down_class : bool
        The input port is a local or down port.
    zid_bits, label_bits : int
        Widths of the Znode id field (0 with one Znode) and of this level's label.
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
        up_mask: int,
        down_masks,
        side_masks,
    ):
        self._down_class = down_class
        self._zid_bits = zid_bits
        self._label_bits = label_bits
        self._up_mask = up_mask
        self._down_masks = tuple(down_masks)
        self._side_masks = tuple(side_masks)
        super().__init__(RouteUnitSignature(head_width, n_out_vcs, zid_bits))

    def _go_down(self, m, head):
        width = self._label_bits
        m.d.comb += self.next_head.eq(head[width:])
        if width == 0:  # a level with one zone below: a single group
            m.d.comb += self.cand.eq(dict(self._down_masks).get(0, 0))
            return
        with m.Switch(head[:width]):
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
                with m.If(zid != self.identity):
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


class DORRoute(wiring.Component):
    """``zfabric.routing.dor`` by arithmetic: the switch's coordinates come in on ``identity``.

    The destination id is the linear index of its switch (dimension 0 least significant). The
    first dimension whose coordinates differ is routed the shorter way round (ties toward +,
    or toward the destination on a mesh) on the VCs of class 0 if the destination coordinate is
    above the current one and of class 1 otherwise (dateline classes of ``vcs`` VCs each; class
    0 alone without datelines). Equal coordinates deliver on the local port.

    Parameters
    ----------
    head_width : int
    ports : SwitchPorts
    k : tuple of int
    wrap, datelines : bool
    vcs : int
        VCs per class.
    port_of : tuple of ((dim, sign), port)
    local_port : int
    """

    def __init__(self, *, head_width, ports, k, wrap, datelines, vcs, port_of, local_port):
        self._ports, self._k, self._wrap, self._datelines = ports, tuple(k), wrap, datelines
        self._classes = (class_vcs(0, vcs), class_vcs(1, vcs))
        self._port_of, self._local_port = dict(port_of), local_port
        super().__init__(
            RouteUnitSignature(head_width, ports.n_out_vcs, sum(_coord_widths(self._k)))
        )

    def _hop(self, dim, sign, upper):
        port = self._port_of.get((dim, sign))
        if port is None:  # a mesh edge: this direction never routes
            return 0
        up, down = (_bits(self._ports, port, vcs) for vcs in self._classes)
        if not self._datelines:
            return up
        return Mux(upper, up, down)

    def elaborate(self, platform):
        m = Module()
        here = _fields(self.identity, _coord_widths(self._k))
        there = _named(m, _digits(self.head, self._k), "dst")
        m.d.comb += self.next_head.eq(self.head)
        hops = []
        for dim, (cur, dst) in enumerate(zip(here, there, strict=True)):
            plus = _ring(m, cur, dst, self._k[dim], wrap=self._wrap, tie_plus=True, name=f"d{dim}")
            upper = dst > cur
            hops.append(Mux(plus, self._hop(dim, 1, upper), self._hop(dim, -1, upper)))
        for dim, (cur, dst) in enumerate(zip(here, there, strict=True)):
            with m.If(cur != dst) if dim == 0 else m.Elif(cur != dst):
                m.d.comb += self.cand.eq(hops[dim])
        with m.Else():
            m.d.comb += self.cand.eq(_bit(self._ports, self._local_port, 0))
        return m


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
            RouteUnitSignature(head_width, ports.n_out_vcs, sum(_coord_widths(self._k)))
        )

    def _internal(self, name):
        return _bits(self._ports, self._internal_port, self._internal_vcs[name])

    def _hop(self, dim, sign, upper):
        port = self._port_of.get((dim, sign))
        if port is not None:
            up, down = (_bits(self._ports, port, vcs) for vcs in self._external)
            return up if up == down else Mux(upper, up, down)
        if dim in self._split:
            return Mux(upper, self._internal("ring_upper"), self._internal("ring_lower"))
        return self._internal("ch")

    def elaborate(self, platform):
        m = Module()
        here = _fields(self.identity, _coord_widths(self._k))
        card, *there = _named(m, _digits(self.head, (2, *self._k)), "dst")
        m.d.comb += self.next_head.eq(self.head)
        hops = []
        for dim, (cur, dst) in enumerate(zip(here, there, strict=True)):
            tie_plus = self._tie[dim] > 0
            plus = _ring(m, cur, dst, self._k[dim], wrap=True, tie_plus=tie_plus, name=f"d{dim}")
            upper = dst > cur
            hops.append(Mux(plus, self._hop(dim, 1, upper), self._hop(dim, -1, upper)))
        for dim, (cur, dst) in enumerate(zip(here, there, strict=True)):
            with m.If(cur != dst) if dim == 0 else m.Elif(cur != dst):
                m.d.comb += self.cand.eq(hops[dim])
        with m.Else():
            with m.If(card == self._card):
                m.d.comb += self.cand.eq(_bit(self._ports, self._local_port, 0))
            with m.Else():
                m.d.comb += self.cand.eq(self._internal("pe"))
        return m


class RouteRow:
    """The route units of one switch.

    Attributes
    ----------
    ports : SwitchPorts
    head_width : int
    identity_width : int
        Width of the units' ``identity`` input (0: none).
    identity : int
        This switch's identity value (coordinates packed dimension 0 lowest, or the Znode id).
    key : hashable
        Everything but the identity that shapes the units: switches with equal keys are one
        module kind.
    turns : frozenset of (int, int) or None
        The (input port, output port) pairs a packet can take through this switch (or any
        switch of its kind), from :func:`reachable_turns`; ``None``: every pair. The allocator
        and crossbar build only these.
    """

    identity_width = 0
    identity = 0

    def __init__(
        self, *, head_width: int, ports: SwitchPorts, make, key, identity=(0, 0), turns=None
    ):
        self.head_width = head_width
        self.ports = ports
        self._make = make  # (port, vc) -> route unit
        self._base_key = (head_width, ports, key)
        self.identity_width, self.identity = identity
        self.turns = turns

    @property
    def key(self) -> tuple:
        turns = None if self.turns is None else tuple(sorted(self.turns))
        return (*self._base_key, turns)

    def unit(self, port: int, vc: int) -> wiring.Component:
        return self._make(port, vc)


def reachable_turns(view: PlanView, routing: RoutingFunction) -> list[set[tuple[int, int]]]:
    """Per switch, the (input port, output port) pairs some packet takes.

    Walks every source's every injection choice to every destination through every candidate
    and VC the routing function offers, as the deadlock proof does. Turns no packet takes (a
    U-turn, a DOR turn back to a lower dimension) need no crossbar connection and no
    arbitration. A packet to its own source is not a packet (the model refuses it too).
    """
    plan = view.plan
    turns: list[set[tuple[int, int]]] = [set() for _ in plan.switches]
    n = len(plan.endpoints)
    out_link = view.out_link
    for dst in range(n):
        seen = set()  # heads name their destination, so states never repeat across dst
        stack = [
            (inj.switch, inj.port, 0, inj.head)
            for src in range(n)
            if src != dst
            for inj in routing.injections(src, dst)
        ]
        while stack:
            s, p, v, head = stack.pop()
            key = (p, routing.state_key(s, p, v, head))
            if key in seen:
                continue
            seen.add(key)
            decision = routing.route(s, p, v, head)
            for hop in decision.hops:
                turns[s].add((p, hop.port))
                link = out_link[s][hop.port]
                if link is not None:
                    for w in hop.vcs:
                        stack.append((link.dst.switch, link.dst.port, w, decision.head))
    return turns


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


def _pack(values, widths) -> int:
    packed, offset = 0, 0
    for value, width in zip(values, widths, strict=True):
        packed |= value << offset
        offset += width
    return packed


class RouteRows:
    """Builds :class:`RouteRow` objects for the switches of one plan.

    Parameters
    ----------
    plan : FabricPlan
    arithmetic : bool
        Use :class:`DORRoute` / :class:`DORTRoute` for ``dor`` / ``dort`` plans whose endpoint
        numbering they decode (tables otherwise).
    prune_turns : bool
        Give each row the turns packets take through its switch kind (:func:`reachable_turns`),
        so that switches build no crossbar connection nobody uses.
    """

    def __init__(
        self,
        plan: FabricPlan,
        *,
        view=None,
        routing=None,
        arithmetic: bool = True,
        prune_turns: bool = True,
    ):
        self.plan = plan
        self.view = view or PlanView(plan)
        self.routing = routing or make_routing(self.view)
        self.prune_turns = prune_turns
        self._rows: dict[int, RouteRow] = {}
        self._turns = None
        self.head_width = head_width(plan)
        name = plan.routing.name
        self.kind = "table"
        if name == "sliced":
            self.kind = "sliced"
        elif arithmetic and name in ("dor", "dort") and self._numbered_by_coordinates():
            self.kind = name

    def _numbered_by_coordinates(self) -> bool:
        """Endpoint e sits alone on switch e, and e is the mixed-radix number DOR/DORT decode."""
        plan, view = self.plan, self.view
        k = tuple(plan.routing.params["k"])
        twin = plan.routing.name == "dort"
        for endpoint in plan.endpoints:
            if len(endpoint.attachments) != 1 or endpoint.attachments[0].switch != endpoint.id:
                return False
        for switch in plan.switches:
            if len(view.ports_by_role[switch.id].get("local", [])) != 1:
                return False
            coords = tuple(switch.position["coords"])
            digits = ((switch.position["card"],) if twin else ()) + coords
            radices = ((2,) if twin else ()) + k
            index, scale = 0, 1
            for digit, radix in zip(digits, radices, strict=True):
                index += digit * scale
                scale *= radix
            if index != switch.id:
                return False
        return True

    def row(self, switch: int) -> RouteRow:
        """The route units of ``switch`` (with the turns of its whole kind)."""
        if self.prune_turns and self._turns is None:
            self._share_turns()
        if switch not in self._rows:
            self._rows[switch] = self._row(switch)
            if self._turns is not None:
                self._rows[switch].turns = self._turns[switch]
        return self._rows[switch]

    def _share_turns(self) -> None:
        """Every switch of a kind gets the union of the kind's turns: they are one module."""
        by_switch = reachable_turns(self.view, self.routing)
        by_kind: dict[tuple, set] = {}
        for switch in range(len(self.plan.switches)):
            row = self._rows.setdefault(switch, self._row(switch))
            by_kind.setdefault(row._base_key, set()).update(by_switch[switch])
        self._turns = [
            frozenset(by_kind[self._rows[s]._base_key]) for s in range(len(self.plan.switches))
        ]
        for switch, row in self._rows.items():
            row.turns = self._turns[switch]

    def _row(self, switch: int) -> RouteRow:
        ports = SwitchPorts.from_plan(self.view, switch)
        if self.kind == "sliced":
            return self._sliced(switch, ports)
        if self.kind == "dor":
            return self._dor(switch, ports)
        if self.kind == "dort":
            return self._dort(switch, ports)
        return self._tables(switch, ports)

    def _tables(self, switch: int, ports: SwitchPorts) -> RouteRow:
        routing = self.routing
        heads = range(len(self.plan.endpoints))
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
        hw, n = self.head_width, ports.n_out_vcs
        return RouteRow(
            head_width=hw,
            ports=ports,
            make=lambda p, v: TableRoute(head_width=hw, n_out_vcs=n, rows=tables[p, v]),
            key=("table", tuple(sorted(tables.items()))),
        )

    def _sliced(self, switch: int, ports: SwitchPorts) -> RouteRow:
        params = self.plan.routing.params
        sw = self.view.switches[switch]
        level = sw.position["level"]
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
        fields = {
            "zid_bits": field_width(znodes) if znodes > 1 else 0,
            "label_bits": field_width(params["z"][level - 1]),
            "up_mask": up,
            "down_masks": tuple(sorted(down.items())),
            "side_masks": tuple(sorted(side.items())),
        }
        down_class = tuple(p.role in ("local", "down") for p in sw.ports)
        hw, n = self.head_width, ports.n_out_vcs
        return RouteRow(
            head_width=hw,
            ports=ports,
            make=lambda p, v: SlicedRoute(
                head_width=hw, n_out_vcs=n, down_class=down_class[p], **fields
            ),
            key=("sliced", down_class, tuple(sorted(fields.items()))),
            identity=(fields["zid_bits"], sw.position["znode"] if fields["zid_bits"] else 0),
        )

    def _coordinates(self, switch: int) -> tuple[int, int]:
        k = tuple(self.plan.routing.params["k"])
        coords = self.view.switches[switch].position["coords"]
        widths = _coord_widths(k)
        return sum(widths), _pack(coords, widths)

    def _dor(self, switch: int, ports: SwitchPorts) -> RouteRow:
        params = self.plan.routing.params
        sw = self.view.switches[switch]
        fields = {
            "k": tuple(params["k"]),
            "wrap": params["wrap"],
            "datelines": params["datelines"],
            "vcs": params.get("vcs", 1),
            "port_of": tuple(
                ((p.dim, p.sign), i) for i, p in enumerate(sw.ports) if p.role == "external"
            ),
            "local_port": self.view.ports_by_role[switch]["local"][0],
        }
        hw = self.head_width
        return RouteRow(
            head_width=hw,
            ports=ports,
            make=lambda p, v: DORRoute(head_width=hw, ports=ports, **fields),
            key=("dor", tuple(fields.items())),
            identity=self._coordinates(switch),
        )

    def _dort(self, switch: int, ports: SwitchPorts) -> RouteRow:
        params = self.plan.routing.params
        sw = self.view.switches[switch]
        k = tuple(params["k"])
        card0 = {(dim, sign) for dim, sign in params["card0"]}
        split = split_dims(card0, len(k))
        if params.get("tie", "card0") == "card0":
            tie = tuple((1 if (d, 1) in card0 else -1) if d in split else 1 for d in range(len(k)))
        else:
            tie = (1,) * len(k)
        fields = {
            "k": k,
            "card": sw.position["card"],
            "port_of": tuple(
                ((p.dim, p.sign), i) for i, p in enumerate(sw.ports) if p.role == "external"
            ),
            "internal_port": self.view.ports_by_role[switch]["internal"][0],
            "local_port": self.view.ports_by_role[switch]["local"][0],
            "split": tuple(split),
            "tie": tie,
            "internal_vcs": tuple(sorted(internal_class_vcs(params["internal_vcs"]).items())),
            "external_vcs": params.get("external_vcs", 2),
        }
        hw = self.head_width
        return RouteRow(
            head_width=hw,
            ports=ports,
            make=lambda p, v: DORTRoute(head_width=hw, ports=ports, **fields),
            key=("dort", tuple(fields.items())),
            identity=self._coordinates(switch),
        )


def route_row(
    plan: FabricPlan,
    switch: int,
    *,
    view=None,
    routing=None,
    arithmetic: bool = True,
    prune_turns: bool = False,
) -> RouteRow:
    """The route units of one switch (see :class:`RouteRows` for building many)."""
    rows = RouteRows(
        plan, view=view, routing=routing, arithmetic=arithmetic, prune_turns=prune_turns
    )
    return rows.row(switch)
