"""Fabric(plan): every switch (nDT cards grouped into twin nodes), endpoint and link of a plan."""

from __future__ import annotations

from amaranth.hdl import ClockDomain, Module, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from zfabric.plan import FabricPlan, PlanView
from zfabric.routing import make_routing

from .endpoint import Endpoint, PacketInLayout, PacketOutLayout
from .flit import FlitLayout, dst_width
from .naming import axis_name, axis_ports, clock_ports
from .node import TwinSwitchNode, twin_nodes
from .router.route import RouteRows
from .switch import Switch

__all__ = [
    "Fabric",
]


class Fabric(wiring.Component):
    """A whole fabric: only endpoint packet streams (and clock and reset) come out.

    Parameters
    ----------
    plan : FabricPlan
    identity_ports : bool
        Build switches, nodes and endpoints with ``identity`` inputs (driven here with
        constants), so that each kind elaborates to one module whatever its position: what
        :mod:`zfabric.hdl.verilog` emits. The behaviour is the same either way.
    arithmetic : bool
        Route ``dor`` / ``dort`` by coordinates rather than by tables (see
        :class:`~zfabric.hdl.router.route.RouteRows`).
    wrap : callable, optional
        Applied to every node, switch and endpoint before it becomes a submodule; the
        connections are made to the original's members. :mod:`zfabric.hdl.verilog` passes black
        boxes that instantiate one module per kind.
    axis : bool
        Give the endpoint streams as AXI4-Stream ports (docs/rtl.md) instead of ``i`` and
        ``o``: per endpoint ``s<e>_axis_*`` in, ``m<e>_axis_*`` out, each a member named by
        :func:`~zfabric.hdl.naming.axis_name`, in :func:`~zfabric.hdl.naming.axis_ports`
        order. The Verilog top is built this way; the timing is the same.
    reset : str
        The reset port (:data:`~zfabric.hdl.naming.RESETS`): ``"rst"``, active high, the one
        Amaranth gives the ``sync`` domain; or ``"aresetn"``, active low as AXI's ARESETn, with
        ``clk`` and ``aresetn`` members that drive a ``sync`` domain of the fabric's own (its
        reset is ``~aresetn``, so every switch and endpoint sees the same active-high reset).

    Members
    -------
    (with ``axis``: ``s<e>_axis_*`` and ``m<e>_axis_*`` instead, docs/rtl.md)
    i : ``In(stream.Signature(PacketInLayout(...))).array(n_endpoints)``
        Packets into endpoint ``e``, by endpoint id.
    o : ``Out(stream.Signature(PacketOutLayout(...))).array(n_endpoints, n_attachments)``
        Packets out of endpoint ``e``, one stream per attachment (every endpoint of a plan has
        the same number of attachments; one it only injects through never has a packet). The
        user may hold ``ready`` low: the endpoint's receive buffer and the switch's ejection
        credits hold the flits back (docs/microarchitecture.md, Endpoints). An attachment that
        carries one way only (a one-way plan's) is wired that way; a switch side nothing faces
        (an unused port of a partial tree) is left idle.
    """

    def __init__(
        self,
        plan: FabricPlan,
        *,
        identity_ports: bool = False,
        arithmetic: bool = True,
        wrap=None,
        axis: bool = False,
        reset: str = "rst",
    ):
        clock_ports(reset)  # a known reset
        attachments = {len(e.attachments) for e in plan.endpoints}
        if len(attachments) != 1:
            raise ValueError(f"endpoints differ in their number of attachments: {attachments}")
        (n_attachments,) = attachments
        self._plan = plan
        self._wrap = wrap or (lambda component: component)
        self._axis = bool(axis)
        self._reset = reset
        self._n_attachments = n_attachments
        self.view = view = PlanView(plan)
        self.flit_layout = layout = FlitLayout.from_plan(plan)
        routing = make_routing(view)
        rows = RouteRows(plan, view=view, routing=routing, arithmetic=arithmetic)
        width = dst_width(plan)
        n = len(plan.endpoints)
        if axis:
            flows = {"input": In, "output": Out}
            members = {name: flows[d](w) for d, w, name in axis_ports(plan)}
        else:
            members = {
                "i": In(stream.Signature(PacketInLayout(layout, width))).array(n),
                "o": Out(stream.Signature(PacketOutLayout(layout))).array(n, n_attachments),
            }
        if reset != "rst":
            members = {"clk": In(1), reset: In(1), **members}
        super().__init__(members)
        self._switches: list[Switch | None] = [None] * len(plan.switches)
        #: per switch id: (node index, card) for nDT cards
        self._card: dict[int, tuple[int, int]] = {}
        self.nodes: list[TwinSwitchNode] = []
        for pair in twin_nodes(view):
            node = TwinSwitchNode(
                plan, pair, flit_layout=layout, rows=rows, identity_ports=identity_ports
            )
            for card, s in enumerate(pair):
                self._card[s] = (len(self.nodes), card)
            self.nodes.append(node)
        for s in range(len(plan.switches)):
            if s not in self._card:
                self._switches[s] = Switch.from_plan(
                    plan, s, flit_layout=layout, rows=rows, identity_port=identity_ports
                )
        self.endpoints = [
            Endpoint.from_plan(
                plan,
                e,
                flit_layout=layout,
                routing=routing,
                identity_port=identity_ports,
                axis=axis,
            )
            for e in range(n)
        ]

    @property
    def plan(self) -> FabricPlan:
        return self._plan

    @property
    def switches(self) -> list[Switch]:
        """Every switch by id (nDT cards inside their nodes)."""
        return [
            self.nodes[self._card[s][0]].cards[self._card[s][1]] if s in self._card else switch
            for s, switch in enumerate(self._switches)
        ]

    def _port(self, switch: int, port: int, direction: str):
        if switch in self._card:
            node, card = self._card[switch]
            return getattr(self.nodes[node], direction)(card, port)
        return getattr(self._switches[switch], direction)(port)

    def elaborate(self, platform):
        m = Module()
        if self._reset != "rst":
            m.domains.sync = domain = ClockDomain("sync")
            m.d.comb += [domain.clk.eq(self.clk), domain.rst.eq(~getattr(self, self._reset))]
        for index, node in enumerate(self.nodes):
            m.submodules[f"node{index}"] = self._wrap(node)
            for name, value in node.identity_values.items():
                m.d.comb += getattr(node, name).eq(value)
        for s, switch in enumerate(self._switches):
            if s not in self._card:
                m.submodules[f"sw{s}"] = self._wrap(switch)
                if "identity" in switch.signature.members:
                    m.d.comb += switch.identity.eq(switch.identity_value)
        for link in self._plan.links:
            src, dst = link.src, link.dst
            if self.view.switches[src.switch].ports[src.port].role == "internal":
                continue  # inside a TwinSwitchNode
            upstream = self._port(src.switch, src.port, "o")
            downstream = self._port(dst.switch, dst.port, "i")
            if link.latency == 1:
                wiring.connect(m, upstream=upstream, downstream=downstream)
            else:
                _delay(m, upstream, downstream, link.latency, f"link{link.id}")
        for e, endpoint in enumerate(self.endpoints):
            m.submodules[f"ep{e}"] = self._wrap(endpoint)
            if "identity" in endpoint.signature.members:
                m.d.comb += endpoint.identity.eq(endpoint.identity_value)
            if self._axis:
                self._axis_in(m, e, endpoint.i)
            else:
                wiring.connect(m, outside=wiring.flipped(self.i[e]), endpoint=endpoint.i)
            plan_endpoint = self._plan.endpoints[e]
            for a, at in enumerate(plan_endpoint.attachments):
                if plan_endpoint.injects(a):
                    wiring.connect(
                        m, endpoint=endpoint.inject[a], switch=self._port(at.switch, at.port, "i")
                    )
                if plan_endpoint.ejects(a):
                    wiring.connect(
                        m, switch=self._port(at.switch, at.port, "o"), endpoint=endpoint.eject[a]
                    )
                    if self._axis:
                        self._axis_out(m, e, a, endpoint.o[a])
                if not self._axis:
                    wiring.connect(m, endpoint=endpoint.o[a], outside=wiring.flipped(self.o[e][a]))
        return m

    def _axis_in(self, m: Module, e: int, stream) -> None:
        """Endpoint ``e``'s ``s<e>_axis`` ports onto its ``i`` stream (``AxisInLayout``)."""

        def port(signal):
            return getattr(self, axis_name(e, signal))

        m.d.comb += [
            stream.valid.eq(port("tvalid")),
            port("tready").eq(stream.ready),
            stream.payload.data.eq(port("tdata")),
            stream.payload.dst.eq(port("tdest")),
            stream.payload.last.eq(port("tlast")),
        ]

    def _axis_out(self, m: Module, e: int, a: int, stream) -> None:
        """Attachment ``a`` of endpoint ``e``: its ``o`` stream onto the ``m<e>_axis`` ports."""

        def port(signal):
            return getattr(self, axis_name(e, signal, a, attachments=self._n_attachments))

        m.d.comb += [
            port("tvalid").eq(stream.valid),
            stream.ready.eq(port("tready")),
            port("tdata").eq(stream.payload.data),
            port("tlast").eq(stream.payload.last),
            port("tid").eq(stream.payload.src),
        ]


def _delay(m: Module, upstream, downstream, latency: int, name: str) -> None:
    """A link of ``latency`` cycles: ``latency`` - 1 registers on its flits and as many on its
    credits, beyond the cycle every link takes (docs/microarchitecture.md, Link)."""
    valid, payload, credit = upstream.flit.valid, upstream.flit.payload, downstream.credit
    for stage in range(latency - 1):
        valid_r = Signal(name=f"{name}_valid{stage}")
        payload_r = Signal.like(payload, name=f"{name}_flit{stage}")
        credit_r = Signal.like(credit, name=f"{name}_credit{stage}")
        m.d.sync += [valid_r.eq(valid), payload_r.eq(payload), credit_r.eq(credit)]
        valid, payload, credit = valid_r, payload_r, credit_r
    m.d.comb += [
        downstream.flit.valid.eq(valid),
        downstream.flit.payload.eq(payload),
        upstream.credit.eq(credit),
    ]
