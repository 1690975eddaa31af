"""Switch: the input-buffered wormhole VC switch of docs/microarchitecture.md.

One cycle per switch: the input units present each VC's front flit, the route units decode the
heads, the allocator decides who sends where, the crossbar moves the granted flits and the
output units register them onto the links. With the link register that makes 2 cycles per hop
(``stages: 1``); ``stages: 2`` registers the route first, ``stages: 3`` then allocates the
output VC in a cycle of its own, ``stages: 4`` also registers the input ports' picks before
the output ports grant and ``stages: 5`` does the same in VC allocation
(docs/microarchitecture.md).
"""

from __future__ import annotations

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from zfabric.bubble import entering_at
from zfabric.bypass import straight_outputs
from zfabric.plan import FabricPlan, PlanView
from zfabric.router_settings import RouterSettings

from .flit import (
    FlitLayout,
    LinkSignature,
    built_head_flits,
    check_head_flits,
    surplus_head_flits,
)
from .router.allocator import Allocator, one_hot_index
from .router.crossbar import Crossbar
from .router.input_unit import InputUnit
from .router.output_unit import OutputUnit
from .router.route import RouteRow, RouteRows, SwitchPorts

__all__ = [
    "Switch",
    "switch_kind",
    "input_vcs",
]


def input_vcs(ports: SwitchPorts, router: RouterSettings) -> tuple[int, ...]:
    """VCs per input port: a link's, or ``router.injection_vcs`` where an endpoint injects (or
    nothing does: an unused input, which receives nothing)."""
    return tuple(
        router.injection_vcs if ports.input_local(p) else ports.input_link_vcs(p)
        for p in range(ports.n_ports)
    )


def switch_kind(
    flit_layout,
    buffer_depth,
    routes: RouteRow,
    identity_port: bool,
    router: RouterSettings,
    head_flits: int = 1,
    surplus: int = 0,
    entering: frozenset[tuple[int, int, int]] = frozenset(),
    straight: dict[int, int] | None = None,
) -> tuple:
    """What makes two switches one module: everything but an identity taken from a port."""
    identity_port = bool(identity_port and routes.identity_width)
    return (
        "switch",
        flit_layout,
        buffer_depth,
        router,
        head_flits,
        surplus,
        routes.key,
        identity_port,
        None if identity_port else routes.identity,
        tuple(sorted(entering)),
        *((tuple(sorted(straight.items())),) if straight else ()),
    )


class Switch(wiring.Component):
    """Wormhole switch with virtual channels and credit-based links (or, by
    ``router.switching``, cut-through or store-and-forward: docs/microarchitecture.md,
    *Switching modes*).

    Parameters
    ----------
    flit_layout : FlitLayout
    ports : SwitchPorts
        VCs per port and which ports face endpoints. Each port's input and output have the
        same count, but for local inputs: they have ``router.injection_vcs``
        (:func:`input_vcs`), and local outputs ``router.ejection_vcs`` (``ports.vcs``).
    buffer_depth : int
        Flits per input VC buffer, and the initial credit of every output VC (local outputs
        included: an endpoint's receive buffer has the same depth).
    routes : RouteRow
        Builds the route unit of each (input port, input VC); see
        :class:`~zfabric.hdl.router.route.RouteRows`.
    identity_port : bool
        Take the switch's identity (coordinates, Znode id: ``routes.identity``) from an
        ``identity`` input instead of a constant, so that every switch of a kind is one module.
    router : RouterSettings, optional
        The plan's ``router:`` settings (allocator iterations, candidate selection).
    head_flits : int
        Head flits of every packet (:func:`~zfabric.hdl.flit.built_head_flits`): a head is
        routed only once its VC's FIFO holds that many flits (docs/microarchitecture.md,
        *Heads longer than a flit*). 1 (the default) builds no logic for it.
    surplus : int
        With heads that shrink (``sliced``), the most head flits a head drops
        (:func:`~zfabric.hdl.flit.surplus_head_flits`): the route units then give each head's
        count and surplus, an input FIFO pops a head with its surplus in one cycle and the
        links into inputs carry credit counts. 0 (the default) builds none of it.
    entering : set of (int, int, int)
        Bubble flow control (docs/microarchitecture.md, *Bubble flow control*): the (input
        port, output port, output VC)s on which a head enters a ring
        (:func:`~zfabric.bubble.entering_pairs`) and needs room for two longest packets. Empty
        (the default) builds none of it.
    straight : dict of int to int
        The straight bypass (docs/microarchitecture.md, *Straight bypass*): input port -> the
        output port it feeds straight (:func:`~zfabric.bypass.straight_outputs`). Each such
        input gets a route unit per VC on its link's flit, and each such output a multiplexer
        between the crossbar and that input's link in front of its register. Empty (the
        default) builds none of it.

    Members
    -------
    i<p> : ``In(LinkSignature(flit_layout, input_vcs(ports, router)[p], w))``, one per port ``p``
    o<p> : ``Out(LinkSignature(flit_layout, ports.vcs[p], w))``, one per port ``p``
        ``w``, the credit count's width, is 1 but with ``surplus``: then ``(1 +
        surplus).bit_length()`` on every input and on outputs toward switches.
    overflow : ``Out(1)``
        Sticky: some input buffer received a flit while full (never, under the credit protocol).
    identity : ``In(routes.identity_width)``
        Only with ``identity_port`` (and a nonzero width); the parent drives ``identity_value``.
    """

    def __init__(
        self,
        *,
        flit_layout: FlitLayout,
        ports: SwitchPorts,
        buffer_depth: int,
        routes: RouteRow,
        identity_port: bool = False,
        router: RouterSettings | None = None,
        head_flits: int = 1,
        surplus: int = 0,
        entering: frozenset[tuple[int, int, int]] = frozenset(),
        straight: dict[int, int] | None = None,
    ):
        if not isinstance(flit_layout, FlitLayout):
            raise TypeError(f"flit_layout must be a FlitLayout, not {flit_layout!r}")
        if ports.n_ports < 2:
            raise ValueError(f"a switch needs at least 2 ports, not {ports.n_ports}")
        if not isinstance(buffer_depth, int) or buffer_depth < 1:
            raise TypeError(f"buffer_depth must be a positive integer, not {buffer_depth!r}")
        router = RouterSettings() if router is None else router
        if not isinstance(router, RouterSettings):
            raise TypeError(f"router must be a RouterSettings, not {router!r}")
        check_head_flits(head_flits, buffer_depth)
        if routes.ports != ports:
            raise ValueError(f"routes are for ports {routes.ports!r}, the switch has {ports!r}")
        if routes.head_width != flit_layout.head_width:
            raise ValueError(
                f"routes read {routes.head_width}-bit heads, the flit carries "
                f"{flit_layout.head_width}"
            )
        self._flit_layout = flit_layout
        self._ports = ports
        self._buffer_depth = buffer_depth
        self._routes = routes
        self._router = router
        self._head_flits = head_flits
        if not isinstance(surplus, int) or not 0 <= surplus < buffer_depth:
            raise ValueError(
                f"surplus must be an integer in 0..{buffer_depth - 1}, not {surplus!r}"
            )
        self._surplus = surplus
        self._entering = frozenset(entering)
        if self._entering and (router.whole_packets == 0 or router.stages == 5):
            raise ValueError("entering pairs need cut-through switching and stages 1 to 4")
        self._straight = dict(straight or {})
        if self._straight and not router.bypasses:
            raise ValueError("straight pairs need router bypass straight")
        self._in_vcs = input_vcs(ports, router)
        members = {}
        for port, n_vcs in enumerate(ports.vcs):
            credits = self._credit_width(port)
            members[f"i{port}"] = In(
                LinkSignature(flit_layout, self._in_vcs[port], (1 + surplus).bit_length())
            )
            members[f"o{port}"] = Out(LinkSignature(flit_layout, n_vcs, credits))
        members["overflow"] = Out(1)
        self._identity_port = bool(identity_port and routes.identity_width)
        if self._identity_port:
            members["identity"] = In(routes.identity_width)
        super().__init__(members)
        # the parts are built on first use (a fabric emitted as Verilog instantiates one switch
        # per kind and never elaborates the others); tests look inside through them
        self._parts = None

    def _credit_width(self, port: int) -> int:
        """Bits of the credit count output ``port`` receives: an endpoint returns one credit
        per flit, a switch input a head's surplus with it."""
        return 1 if self._ports.local[port] else (1 + self._surplus).bit_length()

    def _atomic(self, port: int) -> tuple[bool, ...]:
        """Per VC of output ``port``: taken only when empty (the route row's ``atomic``)."""
        atomic = self._routes.atomic
        if not atomic:
            return ()
        base = sum(self._ports.vcs[:port])
        return atomic[base : base + self._ports.vcs[port]]

    def _build_parts(self):
        if self._parts is None:
            layout, ports, depth = self._flit_layout, self._ports, self._buffer_depth
            self._parts = (
                [
                    InputUnit(
                        flit_layout=layout,
                        n_vcs=n,
                        buffer_depth=depth,
                        max_skip=self._surplus,
                        # stages 5 measured lower with it (InputUnit's shared_data)
                        shared_data=self._router.stages <= 3,
                        count_ends=self._router.stores,
                        block_ram=self._router.buffers == "block-ram",
                        bypass=port in self._straight,
                    )
                    for port, n in enumerate(self._in_vcs)
                ],
                [
                    OutputUnit(
                        flit_layout=layout,
                        n_vcs=n,
                        buffer_depth=depth,
                        acquire=self._router.stages >= 3,
                        second=self._router.stages >= 4,
                        low=self._router.selection == "occupancy",
                        credit_width=self._credit_width(port),
                        atomic=self._atomic(port),
                        whole=self._router.whole_packets,
                        entering=2 * self._router.whole_packets
                        if port in {o for _, o, _ in self._entering}
                        else 0,
                    )
                    for port, n in enumerate(ports.vcs)
                ],
                {
                    # routing functions never read the VC of a local input: the route units
                    # of local VC 0 serve every local VC
                    (port, vc): self._routes.unit(port, 0 if ports.input_local(port) else vc)
                    for port, n_vcs in enumerate(self._in_vcs)
                    for vc in range(n_vcs)
                },
                Allocator(
                    in_vcs=self._in_vcs,
                    out_vcs=ports.vcs,
                    turns=self._routes.turns,
                    selection=self._router.selection,  # one_port: no selection pointer
                    levels=self._routes.levels,
                    iterations=2 if self._router.allocator == "separable-2" else 1,
                    pipelined=self._router.stages >= 3,
                    split=self._router.stages >= 4,
                    vc_split=self._router.stages == 5,
                    one_port=self._routes.one_port,
                    entering=self._entering_masks(),
                    straight=tuple(self._straight.get(p, -1) for p in range(ports.n_ports))
                    if self._straight
                    else (),
                ),
            )
        return self._parts

    def _entering_masks(self) -> tuple[int, ...]:
        """Per input port, the output VCs (flat bits) a head of it enters a ring on."""
        if not self._entering:
            return ()
        vcs = self._ports.vcs
        masks = [0] * len(vcs)
        for p, o, w in self._entering:
            masks[p] |= 1 << (sum(vcs[:o]) + w)
        return tuple(masks)

    @property
    def input_units(self) -> list[InputUnit]:
        return self._build_parts()[0]

    @property
    def output_units(self) -> list[OutputUnit]:
        return self._build_parts()[1]

    @property
    def route_units(self) -> dict:
        return self._build_parts()[2]

    @property
    def allocator(self) -> Allocator:
        return self._build_parts()[3]

    @classmethod
    def from_plan(
        cls,
        plan: FabricPlan,
        switch: int,
        *,
        flit_layout: FlitLayout | None = None,
        rows: RouteRows | None = None,
        identity_port: bool = False,
    ) -> Switch:
        rows = rows or RouteRows(plan)
        routes = rows.row(switch)
        return cls(
            flit_layout=flit_layout or FlitLayout.from_plan(plan),
            ports=routes.ports,
            buffer_depth=plan.buffer_depth,
            routes=routes,
            identity_port=identity_port,
            router=plan.router,
            head_flits=built_head_flits(plan),
            surplus=surplus_head_flits(plan),
            entering=frozenset(entering_at(rows.view, switch)),
            straight=straight_outputs(PlanView(plan))[switch],
        )

    @property
    def ports(self) -> SwitchPorts:
        return self._ports

    @property
    def identity_value(self) -> int:
        """What the parent drives onto ``identity``."""
        return self._routes.identity

    @property
    def kind(self) -> tuple:
        """Switches with equal kinds elaborate to the same module (given their identity)."""
        return switch_kind(
            self._flit_layout,
            self._buffer_depth,
            self._routes,
            self._identity_port,
            self._router,
            self._head_flits,
            self._surplus,
            self._entering,
            self._straight,
        )

    def i(self, port: int):
        """The input link of ``port``."""
        return getattr(self, f"i{port}")

    def o(self, port: int):
        """The output link of ``port``."""
        return getattr(self, f"o{port}")

    @staticmethod
    def _route_stage(m: Module, port: int, vc: int, front, valid, route, alloc) -> tuple:
        """``stages: 2`` and ``3``: register the route unit's answer for the head at the front.

        The head is routed in its first cycle at the front and requests from the next (the
        ``routed`` bit), so the allocator reads registered candidates and next head instead of
        the FIFO -> route unit path. Returns (head, candidates, next head, surplus head flits)
        for the allocator.
        """
        kind = front.payload.kind.as_value()
        routed = Signal(name=f"route_valid{port}_{vc}")
        cand = Signal(len(route.cand), name=f"cand{port}_{vc}")
        next_head = Signal(len(route.next_head), name=f"next_head{port}_{vc}")
        # set by a head at the front and cleared when it pops (a head pops only once routed),
        # so ``routed`` is the front's head bit whenever it is set: the allocator reads it
        # alone, not the front's kind, which block-RAM buffers give from the RAM's output in a
        # flit's first cycle at the front (a longer path into VC allocation)
        with m.If(alloc.pop[port][vc] & routed):
            m.d.sync += routed.eq(0)
        with m.Elif(~routed):
            m.d.sync += routed.eq(valid & kind[0])
        # a head pops only once routed, so loading on ``~routed`` alone is the same as in the
        # ``Elif`` above, and keeps the pop (the allocator's last output) off these enables
        skip = 0
        with m.If(~routed):
            m.d.sync += [cand.eq(route.cand), next_head.eq(route.next_head)]
            if "skip" in route.signature.members:
                skip = Signal(len(route.skip), name=f"skip{port}_{vc}")
                m.d.sync += skip.eq(route.skip)
        return routed, cand, next_head, skip

    def _bypass_flits(self, m: Module, alloc: Allocator) -> dict:
        """The straight bypass's datapath (docs/microarchitecture.md, *Straight bypass*): per
        straight input, route units on its link's flit (one per VC: a route may read the input
        VC) for the allocator, and its input unit told when the flit crosses; per straight
        output, whether a flit crosses into it from its straight input this cycle and that
        flit, its head the next switch's and its VC the one the allocator chose."""
        layout = self._flit_layout
        flits = {}
        for port, o in self._straight.items():
            link = self.i(port).flit
            kind = link.payload.kind.as_value()
            arriving = Cat(
                *(link.valid & (link.payload.vc == vc) for vc in range(self._in_vcs[port]))
            )
            cand, next_head = 0, 0
            for vc in range(self._in_vcs[port]):
                m.submodules[f"straight_route{port}_{vc}"] = route = self._routes.unit(port, vc)
                if self._routes.identity_width:
                    identity = self.identity if self._identity_port else self._routes.identity
                    m.d.comb += route.identity.eq(identity)
                m.d.comb += route.head.eq(link.payload.head)
                cand = cand | (route.cand & arriving[vc].replicate(len(route.cand)))
                next_head = next_head | (
                    route.next_head & arriving[vc].replicate(len(route.next_head))
                )
            m.d.comb += [
                alloc.arriving[port].eq(arriving),
                alloc.link_head[port].eq(kind[0]),
                alloc.link_tail[port].eq(kind[1]),
                alloc.link_cand[port].eq(cand),
                self.input_units[port].bypass.eq(alloc.bypass[port].any()),
            ]
            base, n = sum(self._ports.vcs[:o]), self._ports.vcs[o]
            taken = alloc.bypass_vc[base : base + n]
            flit = Signal(layout, name=f"bypass_flit{o}")
            m.d.comb += [
                flit.kind.eq(link.payload.kind),
                flit.vc.eq(one_hot_index(taken, layout.vc_width)),
                flit.head.eq(next_head),
                flit.src.eq(link.payload.src),
                flit.payload.eq(link.payload.payload),
            ]
            flits[o] = (taken.any(), flit)
        return flits

    def elaborate(self, platform):
        m = Module()
        layout = self._flit_layout
        n_ports = self._ports.n_ports
        m.submodules.allocator = alloc = self.allocator
        m.submodules.crossbar = xbar = Crossbar(
            flit_layout=layout, n_in=n_ports, n_out=n_ports, turns=self._routes.turns
        )

        bypassed = self._bypass_flits(m, alloc) if self._straight else {}
        free, ready, spare, spare2, keep2, low = [], [], [], [], [], []
        free2 = []  # bubble flow control: per output, free with room for two packets
        ring_outputs = {o for _, o, _ in self._entering}
        for port, n_vcs in enumerate(self._ports.vcs):
            m.submodules[f"in{port}"] = unit = self.input_units[port]
            wiring.connect(m, upstream=wiring.flipped(self.i(port)), input_unit=unit.link)
            m.submodules[f"out{port}"] = out = self.output_units[port]
            if port in bypassed:
                # the straight input's bypassing flit, or the crossbar's (never both: the
                # bypass takes an output no input VC requests)
                valid, flit = bypassed[port]
                crossed = out.i
                m.d.comb += [
                    out.i.valid.eq(xbar.o[port].valid | valid),
                    out.i.payload.eq(Mux(valid, flit, xbar.o[port].payload)),
                ]
            else:
                crossed = xbar.o[port]
                wiring.connect(m, crossbar=xbar.o[port], output_unit=out.i)
            wiring.connect(m, output_unit=out.link, downstream=wiring.flipped(self.o(port)))
            m.d.comb += xbar.vc[port].eq(alloc.vc[port])
            m.d.comb += xbar.grant[port].eq(alloc.grant[port])
            base = sum(self._ports.vcs[:port])
            if self._router.stages >= 3:  # the allocator's one-hot VC, off the crossbar's path
                sent = alloc.send[base : base + n_vcs]
            else:  # the crossed flit's VC field decoded: fewer LUT4 where the clock gains nothing
                sent = Cat(*(crossed.valid & (crossed.payload.vc == vc) for vc in range(n_vcs)))
            m.d.comb += out.sent.eq(sent)
            if self._router.stages >= 4:  # from the staged picks' registered tail bits
                m.d.comb += out.released.eq(alloc.release[base : base + n_vcs])
            else:  # the crossed flit's own tail bit: shares the crossbar's kind mux
                tail = crossed.payload.kind.as_value()[1]
                m.d.comb += out.released.eq(sent & tail.replicate(n_vcs))
            free.append(out.free)
            free2.append(out.free2 if port in ring_outputs else out.free)
            ready.append(out.ready)
            spare.append(out.spare)
            if self._router.selection == "occupancy":
                low.append(out.low)
            if self._router.stages >= 3:
                m.d.comb += out.acquire.eq(alloc.acquire[base : base + n_vcs])
            if self._router.stages >= 4:
                spare2.append(out.spare2)
                keep2.append(out.keep2)

            # the picked VC's front flit, its head replaced by the one the next switch sees; its
            # data is the input unit's for the picked VC (``picked``)
            m.d.comb += unit.pick.eq(alloc.pick[port])
            forward = 0
            for vc in range(self._in_vcs[port]):
                m.submodules[f"route{port}_{vc}"] = route = self.route_units[port, vc]
                front = unit.o[vc]
                kind = front.payload.kind.as_value()
                if self._routes.identity_width:
                    identity = self.identity if self._identity_port else self._routes.identity
                    m.d.comb += route.identity.eq(identity)
                valid = front.valid
                if self._router.stores:
                    # store-and-forward: a head is at the front only once its packet is whole
                    valid = Signal(name=f"valid{port}_{vc}")
                    m.d.comb += valid.eq(front.valid & (~kind[0] | unit.ends[vc]))
                elif self._head_flits > 1 or self._surplus:
                    # a head is at the front only once all its head flits are in the FIFO
                    valid = Signal(name=f"valid{port}_{vc}")
                    flits = route.flits if self._surplus else self._head_flits
                    whole = unit.level[vc] >= flits
                    m.d.comb += valid.eq(front.valid & (~kind[0] | whole))
                head, cand, next_head = kind[0], route.cand, route.next_head
                skip = route.skip if self._surplus else 0
                if self._router.stages >= 2:
                    head, cand, next_head, skip = self._route_stage(
                        m, port, vc, front, valid, route, alloc
                    )
                tail = kind[1]
                if self._surplus:
                    # a head pops with the head flits the next head no longer needs, and ends
                    # the packet if they do (a one-flit payload)
                    leaving = Signal(len(unit.skip[vc]), name=f"surplus{port}_{vc}")
                    m.d.comb += [
                        leaving.eq(Mux(kind[0], skip, 0)),
                        unit.skip[vc].eq(leaving),
                    ]
                    tail = unit.last_tail[vc]
                m.d.comb += [
                    route.head.eq(front.payload.head),
                    alloc.valid[port][vc].eq(valid),
                    alloc.head[port][vc].eq(head),
                    alloc.tail[port][vc].eq(tail),
                    alloc.cand[port][vc].eq(cand),
                    front.ready.eq(alloc.pop[port][vc]),
                ]
                if self._router.stages >= 4:
                    beyond = 1 + leaving if self._surplus else 1
                    m.d.comb += alloc.more[port][vc].eq(unit.level[vc] > beyond)
                # the next head goes out on every flit: only a head's is read downstream
                control = Cat(
                    Cat(kind[0], tail) if self._surplus else kind,
                    Const(0, layout.vc_width),
                    next_head,
                )
                forward = forward | (control & alloc.pick[port][vc].replicate(len(control)))
            m.d.comb += xbar.i[port].eq(Cat(forward, unit.picked))

        m.d.comb += [
            alloc.free.eq(Cat(*free)),
            alloc.ready.eq(Cat(*ready)),
            alloc.spare.eq(Cat(*spare)),
        ]
        if self._router.stages >= 4:
            m.d.comb += [alloc.spare2.eq(Cat(*spare2)), alloc.keep2.eq(Cat(*keep2))]
        if self._entering:
            m.d.comb += alloc.free2.eq(Cat(*free2))
        if low:
            m.d.comb += alloc.low.eq(Cat(*low))
        overflow = 0
        for unit in self.input_units:
            overflow = overflow | unit.overflow
        m.d.comb += self.overflow.eq(overflow)
        return m
