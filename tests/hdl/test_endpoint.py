# amaranth: UnusedElaboratable=no
"""Endpoints: injection heads against the routing function, and the packet streams."""

from __future__ import annotations

import pytest
from amaranth.hdl import Module, Signal
from amaranth.sim import Simulator
from hdl_bench import small_plan
from zfabric.hdl.endpoint import (
    DirectHeads,
    Endpoint,
    SlicedHeads,
    TableHeads,
    dst_width,
    heads_for,
)
from zfabric.hdl.flit import FlitKind, FlitLayout

from zfabric.plan import PlanView, PortRef
from zfabric.routing import make_routing

HEADS = [
    ("torus-4x4", DirectHeads),
    ("ndt-2x2x2", DirectHeads),
    ("snode-16-updown", TableHeads),
    ("znode-16", SlicedHeads),
    ("snode-16", SlicedHeads),
    ("znode-8-layers", SlicedHeads),
    ("snode-128", SlicedHeads),
]


@pytest.mark.parametrize("name, kind", HEADS, ids=[n for n, _ in HEADS])
def test_heads_agree_with_the_routing_functions_injections(example, name, kind):
    """Every (source, destination): the attachments in order and the head of each."""
    plan = small_plan(example, name)
    routing = make_routing(PlanView(plan))
    layout = FlitLayout.from_plan(plan)
    n = len(plan.endpoints)
    n_att = len(plan.endpoints[0].attachments)
    width = dst_width(plan)
    builders = [heads_for(plan, src, routing) for src in range(n)]
    assert {type(b) for b in builders} == {kind}
    # endpoints differ only by their identity: one module kind for all
    assert len({b.key for b in builders}) == 1
    m = Module()
    dst, identity = Signal(width), Signal(width)
    outputs = {}
    for src in (0,) if builders[0].by_source or kind is DirectHeads else range(n):
        outputs[src] = builders[src].build(m, dst, identity, n_att, layout.head_width)
    results = {}

    async def testbench(ctx):
        for src, (choices, heads) in outputs.items():
            sources = range(n) if len(outputs) == 1 else (src,)
            for s in sources:
                ctx.set(identity, s)
                for d in range(n):
                    if d == s:
                        continue
                    ctx.set(dst, d)
                    mask = choices if isinstance(choices, int) else ctx.get(choices)
                    results[s, d] = [
                        (a, ctx.get(heads[a]) if not isinstance(heads[a], int) else heads[a])
                        for a in range(n_att)
                        if mask >> a & 1
                    ]

    sim = Simulator(m)
    sim.add_testbench(testbench)
    sim.run()
    for src in range(n):
        attachments = plan.endpoints[src].attachments
        for d in range(n):
            if d == src:
                continue
            expected = [
                (
                    attachments.index(PortRef(c.switch, c.port)),
                    c.head[0] if isinstance(c.head, tuple) else c.head,
                )
                for c in routing.injections(src, d)
            ]
            assert results[src, d] == expected, (src, d)


def run(dut, testbench) -> None:
    """Simulate ``dut`` clocked, driven by ``testbench``."""
    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(testbench)
    sim.run()


def small_endpoint(*, buffer_depth: int = 2, source: int = 6, **options) -> Endpoint:
    """An endpoint of 16-bit flits with 4-bit direct heads (destination = head) on one
    attachment, for the stream tests."""
    layout = FlitLayout(payload_width=16, vc_width=1, head_width=4, src_width=4)
    return Endpoint(
        flit_layout=layout,
        dst_width=4,
        n_attachments=1,
        buffer_depth=buffer_depth,
        heads=DirectHeads(),
        source=source,
        **options,
    )


def test_packet_streams_through_an_endpoint():
    """The head's routing head built from dst, every flit's ``src`` the endpoint's id and its
    payload the beat's whole data; credits gate ``i.ready``; an ejected flit comes out as a
    beat in the same cycle with its data whole and its source."""
    dut = small_endpoint()
    log = []

    async def testbench(ctx):
        beats = [(1, 0, 0xFABC), (0, 0, 0x1234), (0, 1, 0x5678)]
        cycle = 0
        for first, last, data in beats:
            ctx.set(dut.i.valid, 1)
            ctx.set(dut.i.payload, {"data": data, "dst": 9, "first": first, "last": last})
            while not ctx.get(dut.i.ready):
                log.append(("stall", cycle))
                await ctx.tick()
                cycle += 1
            await ctx.tick()
            cycle += 1
            flit = ctx.get(dut.inject[0].flit.payload)
            assert ctx.get(dut.inject[0].flit.valid)
            log.append(("sent", cycle, flit.kind, int(flit.head), int(flit.src), int(flit.payload)))
            if cycle == 2:  # the switch returns one credit
                ctx.set(dut.inject[0].credit, 1)
                await ctx.tick()
                cycle += 1
                ctx.set(dut.inject[0].credit, 0)
        ctx.set(dut.i.valid, 0)
        # ejection: a head flit and its data
        ctx.set(dut.eject[0].flit.valid, 1)
        flit = {"kind": FlitKind.SINGLE, "vc": 0, "head": 0xF, "src": 11, "payload": 0xFABC}
        ctx.set(dut.eject[0].flit.payload, flit)
        assert ctx.get(dut.o[0].valid)
        beat = ctx.get(dut.o[0].payload)
        log.append(("out", int(beat.data), int(beat.first), int(beat.last), int(beat.src)))

    run(dut, testbench)
    assert log == [
        ("sent", 1, FlitKind.HEAD, 9, 6, 0xFABC),
        ("sent", 2, FlitKind.BODY, 0, 6, 0x1234),
        ("sent", 4, FlitKind.TAIL, 0, 6, 0x5678),
        ("out", 0xFABC, 1, 1, 11),
    ]


def test_receive_buffer_bypasses_when_empty_and_holds_flits_while_not_ready():
    """Ejection (docs/microarchitecture.md, Endpoints): a flit on the link comes out the same
    cycle when the buffer is empty and ``ready`` is high; otherwise it waits in the buffer, in
    order; a credit pulse goes back exactly in the cycles a flit is taken."""
    dut = small_endpoint()
    # per cycle: (flit on the link or None, ready)
    plan = [
        (0x11, 1),  # bypass: out and credit at once
        (0x22, 0),  # not taken: buffered
        (0x33, 0),  # buffered behind it (2 = buffer_depth)
        (None, 1),  # 0x22 from the buffer
        (0x44, 1),  # 0x33 from the buffer; 0x44 waits
        (None, 0),
        (None, 1),  # 0x44
        (None, 1),  # nothing left
    ]
    log = []

    async def testbench(ctx):
        for payload, ready in plan:
            link = dut.eject[0].flit
            ctx.set(link.valid, payload is not None)
            ctx.set(link.payload, {"kind": FlitKind.BODY, "vc": 0, "payload": payload or 0})
            ctx.set(dut.o[0].ready, ready)
            valid = ctx.get(dut.o[0].valid)
            data = int(ctx.get(dut.o[0].payload).data) if valid else None
            log.append((data, ctx.get(dut.eject[0].credit)))
            await ctx.tick()

    run(dut, testbench)
    assert log == [
        (0x11, 1),
        (0x22, 0),
        (0x22, 0),
        (0x22, 1),
        (0x33, 1),
        (0x44, 0),
        (0x44, 1),
        (None, 0),
    ]


def test_heads_take_injection_vcs_round_robin_among_those_with_credit():
    """Two injection VCs of depth 2, no credit back at first: single-flit packets take VC 0,
    1, 0, 1 (the injection pointer moves past each head's VC), then none has a credit and
    ``i.ready`` falls; a credit back on VC 1 lets the next head take VC 1 though the pointer
    is at 0 (docs/microarchitecture.md, Endpoints)."""
    dut = small_endpoint(injection_vcs=2)
    log = []

    async def testbench(ctx):
        ctx.set(dut.i.valid, 1)
        ctx.set(dut.i.payload, {"data": 1, "dst": 3, "first": 1, "last": 1})
        for cycle in range(7):
            ctx.set(dut.inject[0].credit, 0b10 if cycle == 5 else 0)
            ready = ctx.get(dut.i.ready)
            await ctx.tick()
            flit = dut.inject[0].flit
            log.append((ready, int(ctx.get(flit.payload.vc)) if ctx.get(flit.valid) else None))

    run(dut, testbench)
    # the credit pulse of cycle 5 counts at its end: VC 1 can be taken at 6
    assert log == [(1, 0), (1, 1), (1, 0), (1, 1), (0, None), (0, None), (1, 1)]


def test_axis_mode_knows_a_packets_first_beat_from_the_last_one():
    """``axis``: beats carry no ``first``; the beat after a ``last`` (or reset) is a head. Beats
    (last = 0, 1, 1, 0, 0, 1) are one 2-flit packet, a single flit and a 3-flit packet; only
    the heads carry the routing head (from ``dst``, read on the head beat only)."""
    dut = small_endpoint(buffer_depth=8, source=2, axis=True)
    beats = [(0, 5), (1, 6), (1, 7), (0, 9), (0, 3), (1, 3)]  # (last, dst)
    log = []

    async def testbench(ctx):
        for index, (last, dst) in enumerate(beats):
            ctx.set(dut.i.valid, 1)
            ctx.set(dut.i.payload, {"data": 0xA0 + index, "dst": dst, "last": last})
            assert ctx.get(dut.i.ready)
            await ctx.tick()
            flit = ctx.get(dut.inject[0].flit.payload)
            log.append((flit.kind, int(flit.head), int(flit.payload)))
        ctx.set(dut.i.valid, 0)

    run(dut, testbench)
    assert log == [
        (FlitKind.HEAD, 5, 0xA0),
        (FlitKind.TAIL, 0, 0xA1),
        (FlitKind.SINGLE, 7, 0xA2),
        (FlitKind.HEAD, 9, 0xA3),
        (FlitKind.BODY, 0, 0xA4),
        (FlitKind.TAIL, 0, 0xA5),
    ]


def test_stripped_head_flits_leave_without_ready():
    """Heads of 3 flits (docs/microarchitecture.md, *Heads longer than a flit*): the first flit
    and the head flit behind it are taken hidden whatever ``ready``, one per cycle, each with
    its credit; the last head flit is presented as the first beat with the first flit's data.
    The receiver here raises ``ready`` only in a cycle after ``valid`` is high (AXI4-Stream
    lets a receiver wait for tvalid), so the packet comes out only if the endpoint never waits
    for ``ready`` to raise ``valid``."""
    dut = small_endpoint(buffer_depth=4, head_flits=3)
    # the packet on the ejection link, one flit per cycle: first flit, two head flits, tail
    link = [
        (FlitKind.HEAD, 0xAAAA),
        (FlitKind.BODY, 0),
        (FlitKind.BODY, 0),
        (FlitKind.TAIL, 0xBBBB),
    ]
    log = []

    async def testbench(ctx):
        ready = 0
        for cycle in range(10):
            kind, payload = link[cycle] if cycle < len(link) else (FlitKind.BODY, 0)
            ctx.set(dut.eject[0].flit.valid, cycle < len(link))
            ctx.set(dut.eject[0].flit.payload, {"kind": kind, "vc": 0, "payload": payload})
            ctx.set(dut.o[0].ready, ready)
            valid = ctx.get(dut.o[0].valid)
            beat = ctx.get(dut.o[0].payload)
            taken = valid and ready
            log.append((cycle, valid, ready, ctx.get(dut.eject[0].credit)))
            if taken:
                log.append(("beat", int(beat.data), int(beat.first), int(beat.last)))
            ready = valid and not taken  # up the cycle after valid, down after a beat
            await ctx.tick()

    run(dut, testbench)
    assert log == [
        (0, 0, 0, 1),  # the first flit, hidden: taken through the bypass
        (1, 0, 0, 1),  # the head flit behind it, hidden
        (2, 1, 0, 0),  # the last head flit: the first beat, waiting for ready
        (3, 1, 1, 1),
        ("beat", 0xAAAA, 1, 0),
        (4, 1, 0, 0),  # the tail, buffered, waits for ready
        (5, 1, 1, 1),
        ("beat", 0xBBBB, 0, 1),
        (6, 0, 0, 0),
        (7, 0, 0, 0),
        (8, 0, 0, 0),
        (9, 0, 0, 0),
    ]


def test_stripped_head_flits_of_interleaved_packets_on_two_ejection_vcs():
    """Two packets with 3-flit heads interleaved on the link, P on VC 0 and Q on VC 1, and a
    receiver that raises ``ready`` the cycle after ``valid`` and drops it after each beat: P
    is presented first (the ejection pointer starts at VC 0), its hidden flits leave as they
    come, Q's wait in VC 1's buffer (no credit) until P's tail is taken, then leave hidden one
    per cycle whatever ``ready`` (docs/microarchitecture.md, *Heads longer than a flit*)."""
    dut = small_endpoint(buffer_depth=4, head_flits=3, ejection_vcs=2)
    # one flit a cycle, (VC, kind, payload): P's and Q's flits alternate, P first
    link = [
        (0, FlitKind.HEAD, 0xA1),
        (1, FlitKind.HEAD, 0xB1),
        (0, FlitKind.BODY, 0),
        (1, FlitKind.BODY, 0),
        (0, FlitKind.BODY, 0),
        (1, FlitKind.BODY, 0),
        (0, FlitKind.TAIL, 0xA2),
        (1, FlitKind.TAIL, 0xB2),
    ]
    log = []

    async def testbench(ctx):
        ready = 0
        for cycle in range(15):
            vc, kind, payload = link[cycle] if cycle < len(link) else (0, FlitKind.BODY, 0)
            ctx.set(dut.eject[0].flit.valid, cycle < len(link))
            ctx.set(dut.eject[0].flit.payload, {"kind": kind, "vc": vc, "payload": payload})
            ctx.set(dut.o[0].ready, ready)
            valid = ctx.get(dut.o[0].valid)
            beat = ctx.get(dut.o[0].payload)
            taken = valid and ready
            credit = ctx.get(dut.eject[0].credit)
            log.append((cycle, credit, (int(beat.data), int(beat.first), int(beat.last))))
            if not taken:
                log[-1] = log[-1][:2]
            ready = valid and not taken
            await ctx.tick()

    run(dut, testbench)
    assert log == [
        (0, 0b01),  # P's first flit: presented VC 0, hidden
        (1, 0b00),  # Q's first flit: buffered on VC 1
        (2, 0b01),  # P's head flit, hidden
        (3, 0b00),
        (4, 0b00),  # P's last head flit: the first beat, ready still low
        (5, 0b01, (0xA1, 1, 0)),
        (6, 0b00),  # P's tail: ready low after a beat
        (7, 0b01, (0xA2, 0, 1)),
        (8, 0b10),  # Q presented: its first flit hidden, from the buffer
        (9, 0b10),  # its head flit, hidden
        (10, 0b00),  # its last head flit, the first beat, ready low
        (11, 0b10, (0xB1, 1, 0)),
        (12, 0b00),
        (13, 0b10, (0xB2, 0, 1)),
        (14, 0b00),
    ]
