"""Which route unit each switch input gets: the plan's routing function, made into hardware."""

from __future__ import annotations

from collections.abc import Iterator

from amaranth.lib import wiring

from zfabric.plan import FabricPlan, PlanView
from zfabric.routing import make_routing
from zfabric.routing.base import RoutingFunction
from zfabric.routing.dort import (
    external_classes,
    internal_class_vcs,
    internal_link_vcs,
    split_dims,
)
from zfabric.routing.flat import address_offsets, address_width
from zfabric.routing.sliced import header_length
from zfabric.topologies.znode import field_width

from ...flit import head_width, surplus_head_flits
from .dor import DORRoute
from .dort import DORTAdaptiveRoute, DORTRoute
from .duato import DuatoRoute
from .flat import FlatRoute
from .hyperz import HYPERZ_ROUTINGS, HyperzRoute, hyperz_unit
from .logic import coord_widths
from .ports import SwitchPorts, candidate_mask
from .sliced import SlicedRoute
from .source_destination import SourceDestinationRoute
from .table import TableRoute
from .transit import TransitRoute

__all__ = ["RouteRow", "RouteRows", "route_row", "reachable_states", "reachable_turns"]

#: the nDT routings :class:`DORTRoute` and :class:`DORTAdaptiveRoute` compute by arithmetic
NDT_ARITHMETIC = ("dort", "tsdor", "dort_adaptive")


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
    one_port : bool
        The routing function offers one output port per decision
        (:attr:`~zfabric.routing.base.RoutingFunction.one_port`): the allocator builds no
        selection pointer (first-free and round-robin pick alike there; occupancy keeps its
        low-occupancy choice within the port).
    levels : tuple of int
        Per flat output VC, its priority level for occupancy selection
        (:meth:`~zfabric.routing.base.RoutingFunction.priority`); empty: all level 0.
    atomic : tuple of bool
        Per flat output VC, whether a head takes it only when it is empty
        (:meth:`~zfabric.routing.base.RoutingFunction.atomic`); empty: none does.
    """

    identity_width = 0
    identity = 0
    one_port = False
    levels: tuple[int, ...] = ()
    atomic: tuple[bool, ...] = ()

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
        return (*self._base_key, turns, self.one_port, self.levels, self.atomic)

    def unit(self, port: int, vc: int) -> wiring.Component:
        return self._make(port, vc)


def reachable_states(view: PlanView, routing: RoutingFunction) -> Iterator[tuple]:
    """Every ``(switch, in_port, in_vc, head, decision)`` some packet reaches, once per input
    port and routing state key (:meth:`~zfabric.routing.base.RoutingFunction.state_key`; the
    port kept apart because the route units are per input port).

    Walks every source's every injection choice to every destination through every candidate
    and VC the routing function offers, as the deadlock proof does. A packet to its own source
    is not a packet (the model refuses it too).
    """
    n = len(view.plan.endpoints)
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
            yield s, p, v, head, decision
            for hop in decision.hops:
                link = out_link[s][hop.port]
                if link is not None:
                    for w in hop.vcs:
                        stack.append((link.dst.switch, link.dst.port, w, decision.head))


def reachable_turns(view: PlanView, routing: RoutingFunction) -> list[set[tuple[int, int]]]:
    """Per switch, the (input port, output port) pairs some packet takes
    (:func:`reachable_states`). Turns no packet takes (a U-turn, a DOR turn back to a lower
    dimension) need no crossbar connection and no arbitration."""
    turns: list[set[tuple[int, int]]] = [set() for _ in view.plan.switches]
    for s, p, _v, _head, decision in reachable_states(view, routing):
        for hop in decision.hops:
            turns[s].add((p, hop.port))
    return turns


def _table(
    routing: RoutingFunction,
    switch: int,
    port: int,
    vc: int,
    ports: SwitchPorts,
    heads,
    *,
    ordered: bool = True,
) -> tuple:
    """Rows of (heads, mask, next_head) for every head, grouped by identical result
    (``ordered``: as :func:`candidate_mask`'s)."""
    groups: dict[tuple[int, int | None], list[int]] = {}
    for head in heads:
        try:
            decision = routing.route(switch, port, vc, head)
        except (KeyError, IndexError, LookupError):
            continue  # a head this input can never see
        if not decision.hops:
            continue
        next_head = None if decision.head == head else decision.head
        mask = candidate_mask(decision.hops, ports, ordered=ordered)
        groups.setdefault((mask, next_head), []).append(head)
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
        Use :class:`DORRoute` / :class:`DuatoRoute` / :class:`DORTRoute` for ``dor`` /
        ``duato`` / ``dort`` plans whose endpoint numbering they decode, :class:`HyperzRoute`
        for the HyperZ routings (tables otherwise).
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
        #: the switches select first-free: masks must list candidates in priority order
        self.ordered = self.routing.one_port or plan.router.selection == "first-free"
        if self.routing.adaptive and self.ordered:
            raise ValueError(
                f"routing {plan.routing.name!r} is adaptive: its route units need"
                " router.selection 'round-robin', not 'first-free' (a mask cannot hold its"
                " priority order, the escape hop last)"
            )
        name = plan.routing.name
        self.kind = "table"
        if name in ("sliced", "flat", "source_destination", "transit"):
            self.kind = name
        elif (
            arithmetic
            and name in ("dor", "duato", *NDT_ARITHMETIC)
            and self._numbered_by_coordinates()
        ):
            self.kind = name
        elif arithmetic and name in HYPERZ_ROUTINGS:
            self.kind = "hyperz"

    def _numbered_by_coordinates(self) -> bool:
        """Endpoint e sits alone on switch e, and e is the mixed-radix number DOR/DORT decode."""
        plan, view = self.plan, self.view
        k = tuple(plan.routing.params["k"])
        twin = plan.routing.name in NDT_ARITHMETIC
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
            row = self._sliced(switch, ports)
        elif self.kind == "flat":
            row = self._flat(switch, ports)
        elif self.kind == "source_destination":
            row = self._source_destination(switch, ports)
        elif self.kind in ("dor", "duato"):
            row = self._dor(switch, ports)
        elif self.kind in NDT_ARITHMETIC:
            row = self._dort(switch, ports)
        elif self.kind == "hyperz":
            row = self._hyperz(switch, ports)
        elif self.kind == "transit":
            row = self._transit(switch, ports)
        else:
            row = self._tables(switch, ports)
        row.one_port = self.routing.one_port
        levels = tuple(
            self.routing.priority(switch, port, vc)
            for port in range(ports.n_ports)
            for vc in range(ports.vcs[port])
        )
        row.levels = levels if any(levels) else ()
        atomic = tuple(
            self.routing.atomic(switch, port, vc)
            for port in range(ports.n_ports)
            for vc in range(ports.vcs[port])
        )
        row.atomic = atomic if any(atomic) else ()
        return row

    def _tables(self, switch: int, ports: SwitchPorts) -> RouteRow:
        """One table per distinct input state: the routing's :meth:`state_key` of the input
        (its traffic class, whether it escaped, ...; the head left out), so input VCs that
        route alike share one table."""
        routing = self.routing
        heads = range(len(self.plan.endpoints))
        tables, cache = {}, {}
        for port in range(ports.n_ports):
            for vc in range(ports.vcs[port]):
                key = routing.state_key(switch, port, vc, None)
                if key not in cache:
                    cache[key] = _table(
                        routing, switch, port, vc, ports, heads, ordered=self.ordered
                    )
                tables[port, vc] = cache[key]
        hw, n = self.head_width, ports.n_out_vcs
        return RouteRow(
            head_width=hw,
            ports=ports,
            make=lambda p, v: TableRoute(head_width=hw, n_out_vcs=n, rows=tables[p, v]),
            key=("table", tuple(sorted(tables.items()))),
        )

    def _znode_masks(self, switch: int, ports: SwitchPorts) -> dict:
        """A Znode switch's port groups as output-VC masks: the up pool, the down groups by
        label and the side groups by Znode id (every VC of every port of each)."""
        up, down, side = 0, {}, {}
        for port, info in enumerate(self.view.switches[switch].ports):
            mask = ((1 << ports.vcs[port]) - 1) << ports.base(port)
            if info.role == "up":
                up |= mask
            elif info.role in ("down", "local"):
                down[info.group] = down.get(info.group, 0) | mask
            elif info.role == "side":
                side[info.group] = side.get(info.group, 0) | mask
        return {
            "up_mask": up,
            "down_masks": tuple(sorted(down.items())),
            "side_masks": tuple(sorted(side.items())),
        }

    def _znode_row(self, switch: int, ports: SwitchPorts, unit, fields: dict, zid_bits: int):
        """A row whose unit for input port p is ``unit(down_class=..., **fields)``, the
        switch's Znode id its identity when ``zid_bits``."""
        sw = self.view.switches[switch]
        fields = {**fields, **self._znode_masks(switch, ports)}
        down_class = tuple(p.role in ("local", "down") for p in sw.ports)
        hw, n = self.head_width, ports.n_out_vcs
        return RouteRow(
            head_width=hw,
            ports=ports,
            make=lambda p, v: unit(head_width=hw, n_out_vcs=n, down_class=down_class[p], **fields),
            key=(self.kind, down_class, tuple(sorted(fields.items()))),
            identity=(zid_bits, sw.position["znode"] if zid_bits else 0),
        )

    def _sliced(self, switch: int, ports: SwitchPorts) -> RouteRow:
        params = self.plan.routing.params
        level = self.view.switches[switch].position["level"]
        znodes = params["znodes"]
        zid_bits = field_width(znodes) if znodes > 1 else 0
        z = params["z"]
        fields = {"zid_bits": zid_bits, "label_bits": field_width(z[level - 1])}
        if surplus_head_flits(self.plan):
            # the head's length here: on the way up, the header of a packet turning t levels
            # higher less the level - 1 bits the switches below popped; on the way down, the
            # labels of this level and those below
            fields |= {
                "head_bits": self.plan.router.head_bits,
                "down_lengths": tuple(
                    header_length(z, znodes, level + t) - (level - 1)
                    for t in range(len(z) - level + 1)
                ),
                "up_length": sum(field_width(zj) for zj in z[:level]),
            }
        return self._znode_row(switch, ports, SlicedRoute, fields, zid_bits)

    def _address_fields(self, switch: int) -> tuple[dict, list[int]]:
        """This level's label field in an eq. 6.3 address, and every field's offset by level
        (index n + 1: the Znode id; ``zfabric/routing/flat.py``)."""
        z = self.plan.routing.params["z"]
        level = self.view.switches[switch].position["level"]
        offset = address_offsets(z)
        label = {"label_offset": offset[level], "label_bits": field_width(z[level - 1])}
        return label, offset

    def _flat(self, switch: int, ports: SwitchPorts) -> RouteRow:
        params = self.plan.routing.params
        n, zid_bits = len(params["z"]), field_width(params["znodes"])
        label, offset = self._address_fields(switch)
        fields = {
            **label,
            "top": self.view.switches[switch].position["level"] == n,
            "zid_offset": offset[n + 1],
            "zid_bits": zid_bits,
        }
        return self._znode_row(switch, ports, FlatRoute, fields, zid_bits)

    def _source_destination(self, switch: int, ports: SwitchPorts) -> RouteRow:
        params = self.plan.routing.params
        n = len(params["z"])
        level = self.view.switches[switch].position["level"]
        label, offset = self._address_fields(switch)
        fields = {
            **label,
            "address_bits": address_width(params["z"], params["znodes"]),
            "side": params["side"][level - 1] > 0 and params["znodes"] > 1,
            "above": (offset[level + 1], offset[n + 1] - offset[level + 1]),
            "zid_offset": offset[n + 1],
        }
        return self._znode_row(switch, ports, SourceDestinationRoute, fields, 0)

    def _coordinates(self, switch: int) -> tuple[int, int]:
        k = tuple(self.plan.routing.params["k"])
        coords = self.view.switches[switch].position["coords"]
        widths = coord_widths(k)
        return sum(widths), _pack(coords, widths)

    def _dor(self, switch: int, ports: SwitchPorts) -> RouteRow:
        params = self.plan.routing.params
        fields = {
            "k": tuple(params["k"]),
            "wrap": params["wrap"],
            "datelines": params["datelines"],
            "tie": params.get("tie", "plus"),  # plans written before the parameter: plus
            "vcs": params.get("vcs", 1),
            "port_of": self._external_ports(switch),
            "local_port": self.view.ports_by_role[switch]["local"][0],
        }
        if self.kind == "duato":
            fields["adaptive_vcs"] = self.routing.adaptive_vcs
            return self._arithmetic_row(
                "duato", DuatoRoute, {(): fields}, lambda p, v: (), switch, ports
            )
        if not self.routing.balanced:
            return self._arithmetic_row(
                "dor", DORRoute, {(): fields}, lambda p, v: (), switch, ports
            )
        # balanced classes: a unit per input port's direction of travel and input VC's class
        travel = {p: (dim, -sign) for (dim, sign), p in fields["port_of"]}
        upper_vcs = len(self.routing.classes[0])
        by_input = {
            (arrival, in_class): {
                **fields,
                "vc_classes": "balanced",
                "arrival": arrival,
                "in_class": in_class,
            }
            for arrival, in_class in [((), 0), *((a, c) for a in travel.values() for c in (0, 1))]
        }
        return self._arithmetic_row(
            "dor",
            DORRoute,
            by_input,
            lambda p, v: (travel.get(p, ()), 0 if p not in travel else int(v >= upper_vcs)),
            switch,
            ports,
        )

    def _dort(self, switch: int, ports: SwitchPorts) -> RouteRow:
        """DORT's unit; TSDOR's per traffic class; dort_adaptive's per escaped / not."""
        params = self.plan.routing.params
        sw = self.view.switches[switch]
        k = tuple(params["k"])
        card0 = {(dim, sign) for dim, sign in params["card0"]}
        split = split_dims(card0, len(k))
        fields = {
            "k": k,
            "card": sw.position["card"],
            "port_of": self._external_ports(switch),
            "internal_port": self.view.ports_by_role[switch]["internal"][0],
            "local_port": self.view.ports_by_role[switch]["local"][0],
            "split": tuple(split),
        }
        if self.kind == "tsdor":
            return self._tsdor(switch, ports, fields, card0)
        if params.get("tie", "card0") == "card0":
            tie = tuple((1 if (d, 1) in card0 else -1) if d in split else 1 for d in range(len(k)))
        else:
            tie = (1,) * len(k)
        internal_vcs = internal_class_vcs(params["internal_vcs"])
        external_escape = params.get("external_vcs", 2)
        fields |= {
            "tie": tie,
            "internal_vcs": tuple(sorted(internal_vcs.items())),
            "external": external_classes(external_escape),
        }
        if self.kind == "dort":
            return self._arithmetic_row(
                "dort", DORTRoute, {(): fields}, lambda p, v: (), switch, ports
            )
        internal_escape = internal_link_vcs(internal_vcs)
        fields |= {
            "adaptive_external": tuple(
                range(external_escape, external_escape + params["adaptive_external_vcs"])
            ),
            "adaptive_internal": ()
            if params["selection"] == "no_internal"
            else tuple(range(internal_escape, internal_escape + params["adaptive_internal_vcs"])),
        }
        escape = self.routing.in_escape[switch]  # per input port: its escape VCs (0: injection)
        by_escaped = {escaped: {**fields, "escaped": escaped} for escaped in (False, True)}
        return self._arithmetic_row(
            "dort_adaptive",
            DORTAdaptiveRoute,
            by_escaped,
            lambda p, v: v < escape[p],
            switch,
            ports,
        )

    def _tsdor(self, switch: int, ports: SwitchPorts, fields: dict, card0: set) -> RouteRow:
        """TSDOR is DORT per traffic class: class c in its own dimension order, ties and VCs
        (2c upper, 2c + 1 lower; 2c + card on an internal hop of no split dimension)."""
        n, split, card = len(fields["k"]), fields["split"], fields["card"]
        by_class = {}
        for tc in (0, 1):
            # a split dimension's tie goes to the port on the class's own card
            tie = tuple(
                (1 if ((d, 1) in card0) == (tc == 0) else -1) if d in split else 1 for d in range(n)
            )
            upper, lower, crossing = (2 * tc,), (2 * tc + 1,), (2 * tc + card,)
            internal = {"ring_upper": upper, "ring_lower": lower, "ch": crossing, "pe": crossing}
            by_class[tc] = {
                **fields,
                "tie": tie,
                "internal_vcs": tuple(sorted(internal.items())),
                "external": (upper, lower),
                "order": tuple(range(n)) if tc == 0 else tuple(reversed(range(n))),
            }
        local = ports.local
        return self._arithmetic_row(
            "tsdor", DORTRoute, by_class, lambda p, v: card if local[p] else v // 2, switch, ports
        )

    def _hyperz(self, switch: int, ports: SwitchPorts) -> RouteRow:
        fields, identity = hyperz_unit(self.view, self.routing, switch)
        hw = self.head_width
        return RouteRow(
            head_width=hw,
            ports=ports,
            make=lambda p, v: HyperzRoute(head_width=hw, ports=ports, **fields),
            key=("hyperz", tuple(fields.items())),
            identity=identity,
        )

    def _transit(self, switch: int, ports: SwitchPorts) -> RouteRow:
        """The chip's slice and per-direction candidates (both wires of a dilated direction),
        each input's swallow."""
        routing = self.routing
        masks = tuple(
            candidate_mask(hops, ports, ordered=self.ordered) for hops in routing.hops[switch]
        )
        slice_index = routing.slice[switch]
        swallow = tuple(routing.swallow[switch])
        hw, n = self.head_width, ports.n_out_vcs
        return RouteRow(
            head_width=hw,
            ports=ports,
            make=lambda p, v: TransitRoute(
                head_width=hw,
                n_out_vcs=n,
                slice_index=slice_index,
                swallow=swallow[p],
                masks=masks,
            ),
            key=("transit", slice_index, swallow, masks),
        )

    def _external_ports(self, switch: int) -> tuple:
        """((dimension, sign), port) of every external port: the units' direction map."""
        return tuple(
            ((p.dim, p.sign), i)
            for i, p in enumerate(self.view.switches[switch].ports)
            if p.role == "external"
        )

    def _arithmetic_row(
        self, name: str, unit, fields: dict, which, switch: int, ports: SwitchPorts
    ) -> RouteRow:
        """A row whose unit for input (p, v) is ``unit(**fields[which(p, v)])``, the switch's
        coordinates its identity."""
        hw = self.head_width
        choice = tuple(
            tuple(which(p, v) for v in range(ports.vcs[p])) for p in range(ports.n_ports)
        )
        return RouteRow(
            head_width=hw,
            ports=ports,
            make=lambda p, v: unit(head_width=hw, ports=ports, **fields[choice[p][v]]),
            key=(name, tuple((key, tuple(f.items())) for key, f in sorted(fields.items())), choice),
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
