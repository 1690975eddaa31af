"""TwinSwitchNode: two switches joined by internal links: an nDT node (two cards, one internal
link) or a T-switch of a fat tree (internal switches α and β, r internal links)."""

from __future__ import annotations

from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from zfabric.bubble import entering_at
from zfabric.plan import FabricPlan, PlanView

from .flit import FlitLayout, LinkSignature, built_head_flits
from .router.route import RouteRows
from .switch import Switch, input_vcs, switch_kind

__all__ = [
    "TwinSwitchNode",
    "twin_nodes",
]


def twin_nodes(view: PlanView) -> list[tuple[int, int]]:
    """Pairs of switches joined by their ``internal`` ports, lower id first."""
    pairs = []
    for switch in view.switches:
        ports = view.ports_by_role[switch.id].get("internal", [])
        if ports:
            other = view.out_link[switch.id][ports[0]].dst.switch
            if switch.id < other:
                pairs.append((switch.id, other))
    return pairs


class TwinSwitchNode(wiring.Component):
    """Two switches of one nDT node or T-switch and the internal links between them
    (composition only).

    Parameters
    ----------
    plan : FabricPlan
    switches : (int, int)
        The two switch ids (the node's cards), joined by their internal ports (every
        internal port of each leads to the other).
    identity_ports : bool
        Give the cards ``identity`` inputs (see :class:`~zfabric.hdl.switch.Switch`), forwarded as
        ``s<c>_identity``: every node is then the same module.

    Members
    -------
    s<c>_i<p>, s<c>_o<p> : ``In`` / ``Out(LinkSignature(...))``
        Port ``p`` of card ``c`` (0 or 1: the order of ``switches``), for every port but the
        internal ones.
    s<c>_identity : ``In(...)``, with ``identity_ports`` only
    """

    def __init__(
        self,
        plan: FabricPlan,
        switches: tuple[int, int],
        *,
        flit_layout: FlitLayout | None = None,
        rows: RouteRows | None = None,
        identity_ports: bool = False,
    ):
        rows = rows or RouteRows(plan)
        view = rows.view
        flit_layout = flit_layout or FlitLayout.from_plan(plan)
        self._plan, self._switches, self._rows = plan, tuple(switches), rows
        self._flit_layout, self._identity_ports = flit_layout, identity_ports
        #: per card, its internal ports; ``_pairs``: (card 0 port, card 1 port) per link
        self._internal = [view.ports_by_role[switch].get("internal", []) for switch in switches]
        self._pairs = []
        for port in self._internal[0]:
            link = view.out_link[switches[0]][port]
            if link.dst.switch != switches[1]:
                raise ValueError(f"switches {switches!r}: internal port {port} leads elsewhere")
            self._pairs.append((port, link.dst.port))
        if not self._pairs or len(self._pairs) != len(self._internal[1]):
            raise ValueError(f"switches {switches!r} are not joined by their internal links")
        self._routes = [rows.row(s) for s in switches]
        #: per card, the (input, output, output VC)s a head enters a ring on (bubble flow
        #: control; the nDT's internal link carries a split dimension's ring on one VC)
        self._entering = [frozenset(entering_at(view, s)) for s in switches]
        self._cards = None  # built on first use, as a switch's parts are
        members = {}
        for card, routes in enumerate(self._routes):
            in_vcs = input_vcs(routes.ports, plan.router)
            for port, n_vcs in enumerate(routes.ports.vcs):
                if port not in self._internal[card]:
                    members[f"s{card}_i{port}"] = In(LinkSignature(flit_layout, in_vcs[port]))
                    members[f"s{card}_o{port}"] = Out(LinkSignature(flit_layout, n_vcs))
            if identity_ports and routes.identity_width:
                members[f"s{card}_identity"] = In(routes.identity_width)
        super().__init__(members)

    @property
    def cards(self) -> list[Switch]:
        if self._cards is None:
            self._cards = [
                Switch(
                    flit_layout=self._flit_layout,
                    ports=routes.ports,
                    buffer_depth=self._plan.buffer_depth,
                    routes=routes,
                    identity_port=self._identity_ports,
                    router=self._plan.router,
                    head_flits=built_head_flits(self._plan),
                    entering=entering,
                )
                for routes, entering in zip(self._routes, self._entering, strict=True)
            ]
        return self._cards

    def i(self, card: int, port: int):
        return getattr(self, f"s{card}_i{port}")

    def o(self, card: int, port: int):
        return getattr(self, f"s{card}_o{port}")

    @property
    def kind(self) -> tuple:
        depth = self._plan.buffer_depth
        return (
            "node",
            *(
                switch_kind(
                    self._flit_layout,
                    depth,
                    routes,
                    self._identity_ports,
                    self._plan.router,
                    built_head_flits(self._plan),
                    entering,
                )
                for routes, entering in zip(self._routes, self._entering, strict=True)
            ),
        )

    @property
    def identity_values(self) -> dict[str, int]:
        """Member name -> value, for the parent to drive."""
        return {
            f"s{c}_identity": routes.identity
            for c, routes in enumerate(self._routes)
            if f"s{c}_identity" in self.signature.members
        }

    def elaborate(self, platform):
        m = Module()
        for card, switch in enumerate(self.cards):
            m.submodules[f"card{card}"] = switch
            if "identity" in switch.signature.members:
                m.d.comb += switch.identity.eq(getattr(self, f"s{card}_identity"))
        a, b = self.cards
        for pa, pb in self._pairs:
            wiring.connect(m, card0=a.o(pa), card1=b.i(pb))
            wiring.connect(m, card1=b.o(pb), card0=a.i(pa))
        for card, switch in enumerate(self.cards):
            for port in range(switch.ports.n_ports):
                if port not in self._internal[card]:
                    outside = wiring.flipped(self.i(card, port))
                    wiring.connect(m, outside=outside, card=switch.i(port))
                    outside = wiring.flipped(self.o(card, port))
                    wiring.connect(m, card=switch.o(port), outside=outside)
        return m
