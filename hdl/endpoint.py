"""Endpoint: the network interface between packet streams and a switch's local port(s).

Injection (docs/microarchitecture.md, Endpoints): every beat of the ``i`` stream is one flit.
A beat with ``first`` is a head: the endpoint builds its routing head from ``dst`` (the
destination id, or the sliced header the routing function writes for this source and
destination) and sends it on the first of the routing function's injection choices whose
link has a credit; the packet's other beats follow on the same attachment. ``i.ready`` is
high exactly when the beat can be sent this cycle, so a source that presents a packet from the
cycle it is created sees the model's timing. Every flit carries ``data`` whole in its payload
and the endpoint's id in ``src``; a head flit carries the routing head in ``head`` (zero on
other flits).

With ``head_flits`` H > 1 (``router.head_bits``, docs/microarchitecture.md, *Heads longer than
a flit*) the first flit carries the routing head and the first beat as always, and the endpoint
then sends H - 1 head flits (kind body, or tail for a one-beat packet; no head, zero payload)
with ``i.ready`` low, before the packet's second beat. On ejection the first flit and the head
flits behind it but the last are taken hidden (``o.valid`` low), one per cycle whatever
``o.ready`` (AXI4-Stream: a transmitter must not wait for ``tready`` before ``tvalid``),
returning a credit each, the first beat's data kept in a register: the last head flit is
presented as the packet's first beat with that data, so the user sees the packet's beats only
and a one-beat packet ends in the cycle the model delivers it.

A packet must not be addressed to its own source: the model refuses it, and switches build
no logic for turns no packet takes (``zfabric.hdl.router.route.reachable_turns``), so it would wait
forever.

Ejection: each attachment has, per ejection VC (``router.ejection_vcs``), a receive buffer of
``buffer_depth`` flits. Its ``o`` stream presents one packet at a time: the front (the buffer's
front, or, when the buffer is empty, the flit arriving on that VC in the same cycle: a bypass)
of the presented VC, chosen round-robin among the VCs with a front when no packet is being
presented and kept until that packet's tail is taken; ``first``/``last`` come from the flit's
kind and ``src`` from the flit. A beat is taken (the cycle the contract calls delivery) when
``o.ready`` is high; a flit on the link that is not taken is written into its VC's buffer, and
every taken flit returns its VC's credit to the switch's local output at once. With ``ready``
held high and one ejection VC the buffer stays empty and each flit comes out the cycle it is on
the link.
"""

from __future__ import annotations

import math

from amaranth.hdl import Cat, Const, Module, Mux, Signal, Value, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.fifo import SyncFIFO
from amaranth.lib.wiring import In, Out

from zfabric.plan import ATTACHMENT_MODES, FabricPlan, PlanView, PortRef
from zfabric.routing import head_flits, make_routing
from zfabric.routing.sliced import header_length
from zfabric.routing.transit import params_of as transit_params
from zfabric.topologies.transit import leaf_processors
from zfabric.topologies.znode import field_width

from .flit import (
    FlitLayout,
    LinkSignature,
    built_head_flits,
    check_head_flits,
    credit_width,
    dst_width,
    surplus_head_flits,
)
from .router.allocator import after, lowest_one, one_hot_index, round_robin

__all__ = [
    "AxisInLayout",
    "PacketInLayout",
    "PacketOutLayout",
    "Endpoint",
    "injection_table",
    "Heads",
    "DirectHeads",
    "TableHeads",
    "SlicedHeads",
    "heads_for",
    "dst_width",
]


class PacketInLayout(data.StructLayout):
    """One beat of an injected packet: ``data``, ``dst`` (read on the first beat), ``first``,
    ``last``."""

    def __init__(self, flit_layout: FlitLayout, dst_width: int):
        super().__init__(
            {
                "data": unsigned(flit_layout.payload_width),
                "dst": unsigned(dst_width),
                "first": 1,
                "last": 1,
            }
        )


class AxisInLayout(data.StructLayout):
    """One beat of an injected packet as the AXI4-Stream ports give it: ``data``, ``dst``
    (``tdest``, read on the first beat), ``last``; the endpoint knows the first beat as the
    one after a ``last`` (or reset)."""

    def __init__(self, flit_layout: FlitLayout, dst_width: int):
        super().__init__(
            {"data": unsigned(flit_layout.payload_width), "dst": unsigned(dst_width), "last": 1}
        )


class PacketOutLayout(data.StructLayout):
    """One beat of a delivered packet: ``data``, ``first``, ``last``, ``src`` (the source
    endpoint's id, on every beat)."""

    def __init__(self, flit_layout: FlitLayout):
        super().__init__(
            {
                "data": unsigned(flit_layout.payload_width),
                "first": 1,
                "last": 1,
                "src": unsigned(flit_layout.src_width),
            }
        )


def injection_table(plan: FabricPlan, src: int, routing=None) -> dict[int, tuple]:
    """Per destination: the injection choices of ``src`` as (attachment index, head) in order.

    The entry for ``src`` itself is included when the routing function gives one (it is never
    used), so that endpoints whose tables differ only there are one module kind.
    """
    routing = routing or make_routing(PlanView(plan))
    attachments = plan.endpoints[src].attachments
    table = {}
    for dst in range(len(plan.endpoints)):
        try:
            injections = routing.injections(src, dst)
        except (LookupError, ValueError, ZeroDivisionError):
            if dst == src:
                continue
            raise
        choices = []
        for choice in injections:
            head = routing.head_value(choice.head)
            choices.append((attachments.index(PortRef(choice.switch, choice.port)), head))
        table[dst] = tuple(choices)
    return table


class Heads:
    """How an endpoint turns a destination into injection choices and routing heads.

    ``build(m, dst, identity)`` returns (a mask of allowed attachments, whose order is the
    choices' priority, and one head value per attachment). ``identity`` is the source's id,
    which only heads with ``by_source`` read. ``head_flits(m, dst, identity)`` gives the head
    flits of the head, where they vary by destination (None: the endpoint's fixed count).
    """

    by_source = False
    key: tuple = ()

    def build(self, m, dst, identity, n_attachments, head_width):
        raise NotImplementedError

    def head_flits(self, m, dst, identity):
        return None


class DirectHeads(Heads):
    """Attachment 0, with the destination id as the head (``dor``, ``dort``)."""

    key = ("direct",)

    def build(self, m, dst, identity, n_attachments, head_width):
        return 1, [dst] + [0] * (n_attachments - 1)


class TableHeads(Heads):
    """A ``m.Switch`` over destinations, from :func:`injection_table`."""

    def __init__(self, table):
        self.table = table
        self.key = ("table", tuple(sorted(table.items())))

    def build(self, m, dst, identity, n_attachments, head_width):
        # an attachment no choice takes (one the endpoint only receives through) is a constant
        used = {a for options in self.table.values() for a, _ in options}
        choice = [
            Signal(name=f"choice{a}") if a in used else Const(0, 1) for a in range(n_attachments)
        ]
        heads = [
            Signal(head_width, name=f"head{a}") if a in used else Const(0, head_width)
            for a in range(n_attachments)
        ]
        with m.Switch(dst):
            for d, options in self.table.items():
                with m.Case(d):
                    for a, head in options:
                        m.d.comb += [choice[a].eq(1), heads[a].eq(head)]
        return Cat(*choice), heads


class SlicedHeads(Heads):
    """The sliced header of ``zfabric/routing/sliced.py``, computed from the source id
    (``identity``) and the destination id; every attachment is a choice, in order.

    The packet turns at the lowest level c whose zone holds both processors (raised, across
    Znodes, to the lowest level >= c with side links). The header is c-1 one-bits, a zero bit,
    the destination Znode id (several Znodes only) and the destination's labels of levels c
    down to 1.
    """

    by_source = True

    def __init__(self, *, z, znodes, side, head_bits: int | None = None):
        self.z, self.znodes, self.side = tuple(z), znodes, tuple(side)
        self.head_bits = head_bits
        self.key = ("sliced", self.z, znodes, self.side, head_bits)

    def head_flits(self, m, dst, identity):
        """With ``head_bits`` (heads of several flits): the head flits of the header, whose
        length is the turn level's c bits, the Znode id's and the labels of levels c to 1."""
        if self.head_bits is None:
            return None
        z, n = self.z, len(self.z)
        turn = self._turn(m, dst, identity)
        flits = Signal(
            range(head_flits(header_length(z, self.znodes, n), self.head_bits) + 1),
            name="head_flits",
        )
        with m.Switch(turn):
            for c in range(1, n + 1):
                length = header_length(z, self.znodes, c)
                with m.Default() if c == n else m.Case(c):
                    m.d.comb += flits.eq(head_flits(length, self.head_bits))
        return flits

    def _turn(self, m, dst, identity):
        """The turn level c (1 to n) of the packet from ``identity`` to ``dst``."""
        z, n = self.z, len(self.z)
        zone = math.prod(z)
        src_x, src_k = identity % zone, identity // zone
        dst_x, dst_k = dst % zone, dst // zone
        under = [math.prod(z[:c]) for c in range(n + 1)]
        common = Signal(range(n + 1), name="common_level")
        for c in range(n, 0, -1):  # the lowest level whose zone holds both wins
            with m.If((src_x // under[c]) == (dst_x // under[c])):
                m.d.comb += common.eq(c)
        turn = Signal(range(n + 1), name="turn")
        m.d.comb += turn.eq(common)
        if self.znodes > 1:
            with m.If(src_k != dst_k):
                with m.Switch(common):
                    for c in range(1, n + 1):
                        raised = next(c2 for c2 in range(c, n + 1) if self.side[c2 - 1])
                        # common is 1..n (level n's zone holds every processor): the last
                        # level as Default keeps the case complete (Verilator CASEINCOMPLETE)
                        with m.Default() if c == n else m.Case(c):
                            m.d.comb += turn.eq(raised)
        return turn

    def build(self, m, dst, identity, n_attachments, head_width):
        z, n = self.z, len(self.z)
        zone = math.prod(z)
        dst_x, dst_k = dst % zone, dst // zone
        under = [math.prod(z[:c]) for c in range(n + 1)]
        labels = [(dst_x // under[j]) % z[j] for j in range(n)]  # q_1 .. q_n
        zid_bits = field_width(self.znodes) if self.znodes > 1 else 0
        turn = self._turn(m, dst, identity)
        head = Signal(head_width, name="header")
        with m.Switch(turn):
            for c in range(1, n + 1):
                parts = [Const((1 << (c - 1)) - 1, c - 1), Const(0, 1)]
                if zid_bits:
                    parts.append(dst_k[:zid_bits])
                parts += [labels[j - 1][: field_width(z[j - 1])] for j in range(c, 0, -1)]
                with m.Default() if c == n else m.Case(c):  # turn is 1..n, as common
                    m.d.comb += head.eq(Cat(*parts))
        return (1 << n_attachments) - 1, [head] * n_attachments


class TransitHeads(Heads):
    """The Transit route R = RU.RD.RC of ``zfabric/routing/transit.py`` (A. DeHon, "Fat-Tree
    Routing for Transit", MIT AI Lab, 1990, §3.8.3), computed from the source id
    (``identity``) and the destination id, for the hybrid and full forms; the same head on each
    of the processor's inputs (``inputs``, its attachments that inject), in order.

    C (a byte per unit-tree layer, root first) holds a layer's child, 0..63, in bits 7:2; P (a
    hybrid's position in its leaf of n processors, j slices) is the position shifted to the
    top. The first byte where the C differ sets the layer j of the crossover and, by its
    highest differing bit pair, the code O; then R is (11)^j.O padded to whole bytes (a full
    tree climbs one layer less; a capped network's copies differing cross into the cap, O =
    11), the destination's C from that byte on, and P. The head value holds R's first byte
    in bits 7:0 (:meth:`~zfabric.routing.transit.TransitRouting.head_value`).
    """

    by_source = True

    def __init__(self, *, params, inputs: tuple[int, ...]):
        self.params, self.inputs = params, tuple(inputs)
        self.key = ("transit", params, self.inputs)

    def _address(self, endpoint: Value) -> tuple[list[Value], Value | None]:
        """C's bytes and P of ``endpoint`` (``zfabric.topologies.transit.address``)."""
        params = self.params
        layers = params.ut_layers
        if params.form == "full":
            leaf, p = endpoint, None
        else:
            n = leaf_processors(params.leaf_stages)
            leaf, x = endpoint // n, endpoint % n
            p = (x << (8 - 2 * params.leaf_stages))[:8]
        c = [Cat(Const(0, 2), (leaf >> 6 * (layers - 1 - k))[:6]) for k in range(layers)]
        if params.cap:
            c.insert(0, Cat(Const(0, 6), (leaf >> 6 * layers)[:2]))
        return c, p

    def build(self, m, dst, identity, n_attachments, head_width):
        params = self.params
        full = params.form == "full"
        if isinstance(identity, int):  # the source as a constant (no identity port)
            identity = Const(identity, len(dst))
        c1, _ = self._address(identity)
        c2, p2 = self._address(dst)
        rc = [] if p2 is None else [p2]
        head = Signal(head_width, name="route")
        codes = {0b10: (6, 8), 0b01: (4, 6), 0b00: (2, 4)}  # O by the highest differing pair
        m.d.comb += head.eq(Cat(*rc))  # the same C: R = RC
        for lead in range(len(c2)):  # the first byte where the C differ, the bytes before equal
            differ = c1[lead] ^ c2[lead]
            with m.If(differ.any() & ~Cat(*(c1[k] != c2[k] for k in range(lead))).any()):
                j = len(c2) - lead
                if params.cap and lead == 0:
                    choices = [(0b11, j - 1, Const(1, 1))]
                else:
                    choices = [
                        (code, j, differ[low:high].any()) for code, (low, high) in codes.items()
                    ]
                for i, (code, layer, taken) in enumerate(choices):
                    climb = layer - 1 if full else layer
                    digits = [0b11] * climb + [code]
                    digits += [0] * (-len(digits) % 4)
                    ru = [
                        sum(d << (6 - 2 * t) for t, d in enumerate(digits[k : k + 4]))
                        for k in range(0, len(digits), 4)
                    ]
                    route = Cat(*(Const(b, 8) for b in ru), *c2[lead:], *rc)
                    # the highest differing pair first; the last (bits 3:2) is all that is left
                    with m.If(taken) if i == 0 else m.Elif(taken) if i < 2 else m.Else():
                        m.d.comb += head.eq(route)
        mask = sum(1 << a for a in self.inputs)
        return mask, [
            head if a in self.inputs else Const(0, head_width) for a in range(n_attachments)
        ]


def heads_for(plan: FabricPlan, src: int, routing=None) -> Heads:
    """The head builder of endpoint ``src``: arithmetic where the routing allows, else a table."""
    if plan.routing.name == "sliced":
        params = plan.routing.params
        bits = plan.router.head_bits if surplus_head_flits(plan) else None
        return SlicedHeads(
            z=params["z"], znodes=params["znodes"], side=params["side"], head_bits=bits
        )
    if plan.routing.name == "transit" and plan.topology_params["form"] != "bidelta":
        endpoint = plan.endpoints[src]
        inputs = tuple(a for a in range(len(endpoint.attachments)) if endpoint.injects(a))
        return TransitHeads(params=transit_params(plan), inputs=inputs)
    table = injection_table(plan, src, routing)
    if all(choices == ((0, dst),) for dst, choices in table.items()):
        return DirectHeads()
    return TableHeads(table)


class Endpoint(wiring.Component):
    """Network interface of one endpoint with ``n_attachments`` local links.

    Parameters
    ----------
    flit_layout : FlitLayout
    dst_width : int
        Bits of a destination endpoint id.
    n_attachments : int
    buffer_depth : int
        Depth of the switches' local input buffers (the initial injection credit of each VC)
        and of each attachment's receive buffer (the switch's initial ejection credit).
    injection_vcs : int
        VCs of each injection link (``router.injection_vcs``).
    ejection_vcs : int
        VCs of each ejection link (``router.ejection_vcs``), each with a receive buffer.
    heads : Heads
        Injection choices and routing heads per destination (:func:`heads_for`).
    source : int
        The endpoint's id: every flit it sends carries it (``src``), and sliced heads depend
        on it.
    identity_port : bool
        Take the endpoint's id from an ``identity`` input instead of the constant ``source``,
        so that endpoints of a kind are one module.
    axis : bool
        Take beats without ``first`` (:class:`AxisInLayout`), as the AXI4-Stream ports of the
        Verilog top give them: a register remembers whether the next beat starts a packet.
    head_flits : int
        Head flits of every packet (:func:`~zfabric.hdl.flit.built_head_flits`), sent after the
        first and stripped on ejection; 1 (the default) builds no logic for them. Heads whose
        count varies (``heads.head_flits``, sliced) are sent with theirs, and arrive as one.
    credit_width : int
        Bits of each injection link's credit count (:class:`~zfabric.hdl.flit.LinkSignature`).
    modes : tuple of str
        Per attachment, what it carries (:data:`~zfabric.plan.ATTACHMENT_MODES`): ``both``,
        ``in`` (the endpoint only injects there: no receive buffers, ``o`` and ``eject`` idle)
        or ``out`` (it only receives there: ``inject`` idle); empty, every one both ways.

    Members
    -------
    i : ``In(stream.Signature(PacketInLayout(flit_layout, dst_width)))`` (``AxisInLayout``
        with ``axis``)
    o : ``Out(stream.Signature(PacketOutLayout(flit_layout))).array(n_attachments)``
    inject : ``Out(LinkSignature(flit_layout, injection_vcs, credit_width)).array(n_attachments)``
    eject : ``In(LinkSignature(flit_layout, ejection_vcs)).array(n_attachments)``
    identity : ``In(flit_layout.src_width)``, with ``identity_port`` only
    """

    def __init__(
        self,
        *,
        flit_layout: FlitLayout,
        dst_width: int,
        n_attachments: int,
        buffer_depth: int,
        heads: Heads,
        source: int,
        identity_port: bool = False,
        injection_vcs: int = 1,
        ejection_vcs: int = 1,
        axis: bool = False,
        head_flits: int = 1,
        credit_width: int = 1,
        modes: tuple[str, ...] = (),
    ):
        modes = tuple(modes) or ("both",) * n_attachments
        if len(modes) != n_attachments or not set(modes) <= set(ATTACHMENT_MODES):
            raise ValueError(
                f"modes must give one of {', '.join(ATTACHMENT_MODES)} per attachment"
                f" ({n_attachments}), not {modes!r}"
            )
        self._modes = modes
        if isinstance(heads, TableHeads):
            for dst, choices in heads.table.items():
                order = [a for a, _ in choices]
                if not choices or order != sorted(set(order)) or order[-1] >= n_attachments:
                    raise ValueError(
                        f"injection choices for destination {dst} must be distinct attachments "
                        f"below {n_attachments} in ascending order, not {order!r}"
                    )
                for _, head in choices:
                    if head >> flit_layout.head_width:
                        raise ValueError(f"head {head!r} does not fit the flit's head field")
        self._flit_layout = flit_layout
        self._dst_width = dst_width
        self._n_attachments = n_attachments
        self._buffer_depth = buffer_depth
        for name, vcs in (("injection_vcs", injection_vcs), ("ejection_vcs", ejection_vcs)):
            if not isinstance(vcs, int) or not 1 <= vcs <= 1 << flit_layout.vc_width:
                raise ValueError(
                    f"{name} must be a positive integer the flit's VC field holds, not {vcs!r}"
                )
        self._n_vcs = injection_vcs
        self._ejection_vcs = ejection_vcs
        self._heads = heads
        if not isinstance(source, int) or not 0 <= source < 1 << flit_layout.src_width:
            raise ValueError(
                f"source must be an endpoint id the flit's {flit_layout.src_width}-bit src field "
                f"holds, not {source!r}"
            )
        self._source = source
        check_head_flits(head_flits, buffer_depth)
        self._head_flits = head_flits
        self._identity_port = bool(identity_port)
        self._axis = bool(axis)
        beats = (AxisInLayout if self._axis else PacketInLayout)(flit_layout, dst_width)
        members = {
            "i": In(stream.Signature(beats)),
            "o": Out(stream.Signature(PacketOutLayout(flit_layout))).array(n_attachments),
            "inject": Out(LinkSignature(flit_layout, injection_vcs, credit_width)).array(
                n_attachments
            ),
            "eject": In(LinkSignature(flit_layout, ejection_vcs)).array(n_attachments),
        }
        if self._identity_port:
            members["identity"] = In(flit_layout.src_width)
        super().__init__(members)

    @classmethod
    def from_plan(
        cls, plan: FabricPlan, endpoint: int, *, flit_layout=None, routing=None, **kwargs
    ):
        return cls(
            flit_layout=flit_layout or FlitLayout.from_plan(plan),
            dst_width=dst_width(plan),
            n_attachments=len(plan.endpoints[endpoint].attachments),
            buffer_depth=plan.buffer_depth,
            heads=heads_for(plan, endpoint, routing),
            source=endpoint,
            injection_vcs=plan.router.injection_vcs,
            ejection_vcs=plan.router.ejection_vcs,
            head_flits=built_head_flits(plan),
            credit_width=credit_width(plan),
            modes=plan.endpoints[endpoint].modes,
            **kwargs,
        )

    @property
    def identity_value(self) -> int:
        return self._source

    @property
    def kind(self) -> tuple:
        return (
            "endpoint",
            self._flit_layout,
            self._dst_width,
            self._n_attachments,
            self._buffer_depth,
            self._n_vcs,
            self._heads.key,
            self._identity_port,
            None if self._identity_port else self._source,
            self._axis,
            self._head_flits,
            self._modes,
        )

    def elaborate(self, platform):
        m = Module()
        layout = self._flit_layout
        n = self._n_attachments
        beat = self.i.payload
        send = self.i.valid & self.i.ready
        if self._axis:
            first = Signal(init=1, name="first")  # the next beat starts a packet
            with m.If(send):
                m.d.sync += first.eq(beat.last)
        else:
            first = beat.first

        vcs = self._n_vcs
        injects = [mode != "out" for mode in self._modes]
        credits = [
            [
                Signal(
                    range(self._buffer_depth + 1), name=f"credit{a}_{v}", init=self._buffer_depth
                )
                for v in range(vcs)
            ]
            if injects[a]
            else []
            for a in range(n)
        ]
        # per VC; an attachment the endpoint does not inject through never has one
        has_credit = [
            Cat(*(c != 0 for c in credits[a])) if injects[a] else Const(0, vcs) for a in range(n)
        ]
        identity = self.identity if self._identity_port else self._source
        source = identity
        choices, heads = self._heads.build(m, beat.dst, identity, n, layout.head_width)

        # a head takes the first attachment (in choice order) with a credit on some VC, and
        # on it the first VC with a credit at or after the injection pointer
        pointer = Signal(vcs, name="inject_pointer")  # thermometer: bits at and above it
        vc_pick = [round_robin(m, has_credit[a], pointer, f"vc_pick{a}") for a in range(n)]
        first_choice = lowest_one(m, choices & Cat(*(h.any() for h in has_credit)), "first_choice")
        current = Signal(n, init=1)  # the attachment of the packet being sent (one-hot)
        current_vc = Signal(vcs, init=1)  # and its VC (one-hot)
        chosen = [Signal(vcs, name=f"chosen{a}") for a in range(n)]  # per attachment: the VC
        # the user's beat is the next flit, but while head flits behind the first are still to
        # send (``busy``): then the packet's next flit is one of them
        step, kind, data, starts = send, Cat(first, beat.last), beat.data, first
        varying = self._heads.head_flits(m, beat.dst, identity)  # sliced: by destination
        several = self._head_flits > 1 or varying is not None
        if several:
            count = self._head_flits if varying is None else varying
            extra = Signal(range(self._buffer_depth), name="head_flits_left")
            extra_tail = Signal(name="head_flits_tail")  # the last of them ends the packet
            busy = extra != 0
            starts = first & ~busy
            step = send | (busy & Cat(*chosen).any())
            with m.If(send & first):
                m.d.sync += [extra.eq(count - 1), extra_tail.eq(beat.last)]
            with m.Elif(busy & step):
                m.d.sync += extra.eq(extra - 1)
            last_extra = Cat(Const(0, 1), extra_tail & (extra == 1))
            single = beat.last & ~(first & (count > 1))  # a head of several flits is no tail
            kind = Mux(busy, last_extra, Cat(first, single))
            data = Mux(busy, 0, beat.data)
        for a in range(n):
            with m.If(starts):
                m.d.comb += chosen[a].eq(vc_pick[a] & first_choice[a].replicate(vcs))
            with m.Else():
                m.d.comb += chosen[a].eq(current_vc & has_credit[a] & current[a].replicate(vcs))
        ready = Cat(*chosen).any()
        m.d.comb += self.i.ready.eq(ready & ~busy if several else ready)
        head_vc = 0
        for a in range(n):
            head_vc = head_vc | chosen[a]
        with m.If(send & first):
            m.d.sync += [
                current.eq(first_choice),
                current_vc.eq(head_vc),
                pointer.eq(after(head_vc)),
            ]

        head = 0
        for a in range(n):
            head = head | (heads[a] & first_choice[a].replicate(layout.head_width))
        head = head & starts.replicate(layout.head_width)  # zero on every other flit

        for a in range(n):
            if self._modes[a] != "in":
                self._receive(m, a)
            if not injects[a]:
                continue
            link = self.inject[a]
            m.d.sync += [
                link.flit.valid.eq(step & chosen[a].any()),
                link.flit.payload.kind.eq(kind),
                link.flit.payload.vc.eq(one_hot_index(chosen[a], layout.vc_width)),
                link.flit.payload.head.eq(head),
                link.flit.payload.src.eq(source),
                link.flit.payload.payload.eq(data),
            ]
            for v in range(vcs):
                sent = step & chosen[a][v]
                m.d.sync += credits[a][v].eq(credits[a][v] - sent + link.credit[v])
        return m

    def _receive(self, m: Module, a: int) -> None:
        """The receive buffers of attachment ``a``, one per ejection VC, each with its bypass,
        and the choice of the VC whose packet ``o`` presents (the module docstring)."""
        layout = self._flit_layout
        flit = self.eject[a].flit
        out = self.o[a]
        n = self._ejection_vcs
        # kind, source and payload: the VC picks the buffer, the head is spent
        arriving = Cat(flit.payload.kind.as_value(), flit.payload.src, flit.payload.payload)
        here, front_valid, fronts, fifos = [], [], [], []
        for v in range(n):
            m.submodules[f"received{a}_{v}" if n > 1 else f"received{a}"] = fifo = SyncFIFO(
                width=len(arriving), depth=self._buffer_depth
            )
            here.append(flit.valid & (flit.payload.vc == v) if n > 1 else flit.valid)
            front_valid.append(fifo.r_rdy | here[v])
            fronts.append(Mux(fifo.r_rdy, fifo.r_data, arriving))
            fifos.append(fifo)
        if n == 1:
            select = Const(1, 1)
        else:
            # one-hot: the VC whose packet is being presented (zero: none chosen yet), and the
            # ejection pointer as a thermometer mask
            presenting = Signal(n, name=f"presenting{a}")
            pointer = Signal(n, name=f"eject_pointer{a}")
            chosen = round_robin(m, Cat(*front_valid), pointer, f"eject_pick{a}")
            select = Signal(n, name=f"eject_select{a}")
            m.d.comb += select.eq(Mux(presenting.any(), presenting, chosen))
        presented = Signal(len(arriving), name=f"presented{a}")
        front = Cat(*(select[v] & front_valid[v] for v in range(n))).any()
        m.d.comb += presented.eq(fronts[0] if n == 1 else _one_hot_mux(select, fronts))
        src_end = 2 + layout.src_width
        several = self._head_flits > 1
        if several:
            # heads of several flits: the first flit and the head flits behind it but the last
            # are taken hidden, whatever ``ready`` (a transmitter must not wait for tready
            # before tvalid); the last is presented as the first beat with the first's data
            behind = Signal(range(self._head_flits), name=f"head_flits_behind{a}")
            first_data = Signal(layout.payload_width, name=f"first_data{a}")
            take = out.ready | presented[0]
            if self._head_flits > 2:  # head flits hidden behind the first
                take = take | (behind > 1)
        else:
            take = out.ready
        for v, fifo in enumerate(fifos):
            mine = take & select[v]
            m.d.comb += [
                fifo.r_en.eq(mine),
                # a flit on the link waits in the buffer unless it is taken through the bypass
                fifo.w_en.eq(here[v] & ~(mine & ~fifo.r_rdy)),
                fifo.w_data.eq(arriving),
                self.eject[a].credit[v].eq(mine & front_valid[v]),
            ]
        if n > 1:
            with m.If(~presenting.any() & Cat(*front_valid).any()):
                m.d.sync += [presenting.eq(chosen), pointer.eq(after(chosen))]
            with m.If(front & take & presented[1]):  # a tail taken ends the packet
                m.d.sync += presenting.eq(0)
        m.d.comb += [
            out.payload.last.eq(presented[1]),
            out.payload.src.eq(presented[2:src_end]),
        ]
        if not several:
            m.d.comb += [
                out.valid.eq(front),
                out.payload.first.eq(presented[0]),
                out.payload.data.eq(presented[src_end:]),
            ]
            return
        with m.If(front & take):
            with m.If(presented[0]):
                m.d.sync += [behind.eq(self._head_flits - 1), first_data.eq(presented[src_end:])]
            with m.Elif(behind != 0):
                m.d.sync += behind.eq(behind - 1)
        shown = behind == 1
        m.d.comb += [
            out.valid.eq(front & ~presented[0] & ((behind == 0) | shown)),
            out.payload.first.eq(shown),
            out.payload.data.eq(Mux(shown, first_data, presented[src_end:])),
        ]


def _one_hot_mux(select: Value, values: list[Value]) -> Value:
    """The value whose bit of ``select`` is set (zero if none): an AND-OR, not a priority chain."""
    result = 0
    for v, value in enumerate(values):
        result = result | Mux(select[v], value, 0)
    return result
