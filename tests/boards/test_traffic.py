# amaranth: UnusedElaboratable=no
"""Traffic generator and checker: the packet format model, the generator against the model,
every error kind of the checker, and a generator -> network -> checker loopback."""

from __future__ import annotations

import pytest
from amaranth.hdl import Module, Signal
from amaranth.lib import wiring
from amaranth.sim import Simulator
from board_helpers import have_fabric, torus_plan
from zfabric.boards.traffic import (
    Checker,
    ErrorKind,
    FaultInjector,
    Generator,
    IdealNetwork,
    PacketFormat,
    TrafficSettings,
)

FMT = PacketFormat(n_endpoints=4, flit_width=16, packet_length=4)


def simulate(dut, testbench):
    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(testbench)
    sim.run()


# -- the format ------------------------------------------------------------------------------


def test_tag_spreads_over_the_beats():
    # tag = dst 2 + src 2 + seq 8 + timestamp 16 = 28 bits: 16 in the head (every data bit of
    # a beat is usable), 12 in the next beat, none after
    assert FMT.tag_width == 28
    assert FMT.beats == [(16, 16, 0), (16, 12, 16), (16, 0, 28), (16, 0, 28)]


def test_encode_decode_round_trip_and_fill_check():
    fields = {"dst": 2, "src": 1, "seq": 200, "timestamp": 0xBEEF}
    beats = FMT.encode(**fields)
    assert FMT.decode(beats) == fields
    assert all(b < 1 << 16 for b in beats)
    for k in range(4):
        for bit in range(16):
            if k == 0 and bit >= 14:
                continue  # above the head's data bits: the endpoint drops them
            corrupted = list(beats)
            corrupted[k] ^= 1 << bit
            try:
                decoded = FMT.decode(corrupted)
            except ValueError:
                continue  # a fill mismatch
            # a tag bit in a beat with no fill after it can only show as a different tag
            assert decoded != fields, (k, bit)


def test_a_tag_that_does_not_fit_is_refused():
    with pytest.raises(
        ValueError,
        match=r"^a packet of 1 x 16-bit flits carries 16 data bits; the tag needs 28 "
        r"\(dst 2 \+ src 2 \+ seq 8 \+ timestamp 16\)",
    ):
        PacketFormat(n_endpoints=4, flit_width=16, packet_length=1)


def test_settings_are_validated():
    with pytest.raises(ValueError, match=r"^pattern must be one of .*, not 'zipf'$"):
        TrafficSettings(pattern="zipf")
    with pytest.raises(ValueError, match=r"^rate must be in \(0, 1\] flits/cycle/endpoint"):
        TrafficSettings(rate=0)


# -- generator -------------------------------------------------------------------------------


def collect_packets(gen, cycles, *, ready=lambda cycle: True, creations=None, tails=None):
    """Run a generator alone; returns [(head's first cycle on ``o``, dst, [data...])], and
    appends (``created`` cycle, ``created_dst``) to ``creations`` and the cycle each tail was
    taken to ``tails``."""
    packets, current, presented = [], None, False

    async def tb(ctx):
        nonlocal current, presented
        ctx.set(gen.en, 1)
        for cycle in range(cycles):
            ctx.set(gen.now, cycle & 0xFFFF)
            ctx.set(gen.o.ready, ready(cycle))
            if ctx.get(gen.created) and creations is not None:
                creations.append((cycle, ctx.get(gen.created_dst)))
            if ctx.get(gen.o.valid):
                beat = ctx.get(gen.o.payload)
                if beat.first and not presented:
                    current, presented = (cycle, beat.dst, []), True
                if ctx.get(gen.o.ready):
                    current[2].append(beat.data)
                    presented = False
                    if beat.last:
                        packets.append(current)
                        if tails is not None:
                            tails.append(cycle)
            await ctx.tick()

    simulate(gen, tb)
    return packets


def test_generator_sends_what_the_model_encodes():
    gen = Generator(src=1, fmt=FMT, settings=TrafficSettings(rate=1.0))
    packets = collect_packets(gen, 400, ready=lambda c: c % 3 != 0)
    assert len(packets) > 40
    seqs = {}
    for _created, dst, beats in packets:
        fields = FMT.decode(beats)
        assert fields["src"] == 1 and fields["dst"] == dst != 1
        assert fields["seq"] == seqs.get(dst, 0)  # per destination, from 0
        seqs[dst] = fields["seq"] + 1
    assert set(seqs) == {0, 2, 3}  # uniform over the other endpoints


@pytest.mark.parametrize("refused", [False, True], ids=["ready", "refused-1-in-3"])
def test_generator_timestamp_is_the_creation_cycle(refused):
    """Each packet's timestamp is its ``created`` cycle, with its ``created_dst``; its head is
    presented on ``o`` in that cycle, or (the output stage holding the previous packet's beats,
    a source queue) the cycle after that packet's tail was taken, never later: the generator
    loses no cycle to its output registers."""
    creations, tails = [], []
    packets = collect_packets(
        Generator(src=0, fmt=FMT, settings=TrafficSettings(rate=1.0 if refused else 0.5)),
        300,
        ready=(lambda c: c % 3 != 0) if refused else (lambda c: True),
        creations=creations,
        tails=tails,
    )
    assert len(packets) > 20
    stamps = [FMT.decode(beats)["timestamp"] for _, _, beats in packets]
    assert stamps == [cycle for cycle, _ in creations[: len(packets)]]
    assert [dst for _, dst, _ in packets] == [dst for _, dst in creations[: len(packets)]]
    queued = 0
    for (head, _, _), stamp, tail_taken in zip(packets, stamps, [None, *tails], strict=False):
        assert head >= stamp
        if head > stamp:  # waited behind the previous packet only, and no longer
            queued += 1
            assert tail_taken is not None and head == tail_taken + 1
    assert (queued > 0) == refused


def test_generator_rate_and_fixed_patterns():
    packets = collect_packets(Generator(src=2, fmt=FMT, settings=TrafficSettings(rate=0.2)), 4000)
    # 0.2 flits/cycle = 0.05 packets per idle cycle; busy 4 of every ~24 cycles
    assert 4000 / 24 * 0.8 < len(packets) < 4000 / 24 * 1.2
    neighbour = Generator(src=3, fmt=FMT, settings=TrafficSettings(pattern="neighbour", rate=1.0))
    assert {dst for _, dst, _ in collect_packets(neighbour, 100)} == {0}
    # bit-complement on 4 endpoints: 1 -> 2
    complement = TrafficSettings(pattern="bit-complement", rate=1.0)
    assert {
        dst for _, dst, _ in collect_packets(Generator(src=1, fmt=FMT, settings=complement), 100)
    } == {2}


def test_generator_hotspot():
    settings = TrafficSettings(pattern="hotspot", hotspots=(3,), hotspot_fraction=0.5, rate=1.0)
    dsts = [
        dst for _, dst, _ in collect_packets(Generator(src=0, fmt=FMT, settings=settings), 2000)
    ]
    share = dsts.count(3) / len(dsts)
    assert 0.5 + 0.5 / 3 - 0.08 < share < 0.5 + 0.5 / 3 + 0.08


def test_generator_stops_when_disabled():
    gen = Generator(src=0, fmt=FMT, settings=TrafficSettings(rate=1.0))

    async def tb(ctx):
        ctx.set(gen.en, 0)
        ctx.set(gen.o.ready, 1)
        for _ in range(50):
            assert not ctx.get(gen.o.valid)
            await ctx.tick()

    simulate(gen, tb)


# -- checker ---------------------------------------------------------------------------------


def drive(checker, packets, *, gap=1):
    """Feed beats [(data, first, last)...] per packet; returns (received, error, latency)."""
    events = []

    async def tb(ctx):
        cycle = 0

        async def tick():
            nonlocal cycle
            _, _, received, error, latency = await ctx.tick().sample(
                checker.received, checker.error, checker.latency
            )
            if received or error:
                events.append((received, error, latency))
            cycle += 1
            ctx.set(checker.now, cycle)

        for beats in packets:
            for data, first, last in beats:
                ctx.set(checker.i.valid, 1)
                ctx.set(checker.i.payload, {"data": data, "first": first, "last": last})
                await tick()
            ctx.set(checker.i.valid, 0)
            for _ in range(gap):
                await tick()
        for _ in range(5):  # the checker's four stages, and one cycle to spare
            await tick()
        events.append(("kinds", ctx.get(checker.error_kinds)))

    simulate(checker, tb)
    return events


def framed(data):
    return [(d, k == 0, k == len(data) - 1) for k, d in enumerate(data)]


def packet(dst=1, src=2, seq=0, timestamp=0):
    return framed(FMT.encode(dst=dst, src=src, seq=seq, timestamp=timestamp))


def test_checker_accepts_good_packets_and_measures_latency():
    events = drive(Checker(endpoint=1, fmt=FMT, ordered=True), [packet(seq=0), packet(seq=1)])
    # the first packet's tail arrives in cycle 3 (timestamp 0); the second's in cycle 8
    assert events == [(1, 0, 3), (1, 0, 8), ("kinds", 0)]


def flipped(beats, k, bit):
    """The packet with data bit ``bit`` of beat ``k`` flipped."""
    return [(d ^ (1 << bit) if i == k else d, f, last) for i, (d, f, last) in enumerate(beats)]


def cut(beats, length):
    """The packet's first ``length`` beats, the last of them marked last."""
    return [(d, f, i == length - 1) for i, (d, f, _) in enumerate(beats[:length])]


@pytest.mark.parametrize(
    "name, packets, kind",
    [
        ("wrong destination", [packet(dst=3)], ErrorKind.DEST),
        ("flipped fill bit", [flipped(packet(), 2, 3)], ErrorKind.DATA),
        # seq bit 1: the fill of the next beat and the sequence check both see it
        ("flipped tag bit", [flipped(packet(), 0, 5)], ErrorKind.DATA | ErrorKind.SEQ),
        ("skipped sequence number", [packet(seq=0), packet(seq=2)], ErrorKind.SEQ),
        ("short packet", [cut(packet(), 3)], ErrorKind.FRAME),
    ],
)
def test_checker_reports_each_error_kind(name, packets, kind):
    events = drive(Checker(endpoint=1, fmt=FMT, ordered=True), packets)
    errors = [e for e in events[:-1] if e[1]]
    assert len(errors) == 1, name
    assert events[-1] == ("kinds", kind), name


def test_checker_resynchronises_after_a_lost_packet():
    packets = [packet(seq=0), packet(seq=2), packet(seq=3)]
    events = drive(Checker(endpoint=1, fmt=FMT, ordered=True), packets)
    assert [e[1] for e in events[:-1]] == [0, 1, 0]


def test_unordered_checker_ignores_sequence_numbers():
    events = drive(Checker(endpoint=1, fmt=FMT, ordered=False), [packet(seq=5), packet(seq=1)])
    assert events[-1] == ("kinds", 0)


def test_stray_body_beat_is_an_error():
    events = drive(Checker(endpoint=1, fmt=FMT, ordered=True), [[(0x1234, 0, 1)]])
    assert events == [(0, 1, 0), ("kinds", ErrorKind.FRAME)]


# -- loopback --------------------------------------------------------------------------------


def loopback(fmt, network, *, settings, cycles, run, fault=None, ordered=True):
    """Generators -> network -> (fault) -> checkers; returns totals and error kinds."""
    m = Module()
    m.submodules.net = network
    now = Signal(fmt.timestamp_bits)
    m.d.sync += now.eq(now + 1)
    gens, checks = [], []
    for e in range(fmt.n_endpoints):
        gen = Generator(src=e, fmt=fmt, settings=settings)
        check = Checker(endpoint=e, fmt=fmt, ordered=ordered)
        m.submodules[f"gen{e}"], m.submodules[f"check{e}"] = gen, check
        m.d.comb += [gen.now.eq(now), check.now.eq(now)]
        wiring.connect(m, gen.o, network.i[e])
        source = network.o[e][0]
        if fault is not None and fault[0] == e:
            m.submodules.fault = injector = FaultInjector(
                flit_width=fmt.flit_width, src_width=fmt.dst_width, after=fault[1]
            )
            wiring.connect(m, source, injector.i)
            source = injector.o
        wiring.connect(m, source, check.i)
        gens.append(gen)
        checks.append(check)
    totals = {"sent": 0, "recv": 0, "err": 0, "lat_sum": 0, "lat_max": 0, "created": []}

    async def tb(ctx):
        for cycle in range(cycles):
            for gen in gens:
                ctx.set(gen.en, cycle < run)
            await ctx.tick()
            for gen in gens:
                totals["sent"] += ctx.get(gen.sent)
            for check in checks:
                if ctx.get(check.received):
                    totals["recv"] += 1
                    latency = ctx.get(check.latency)
                    totals["lat_sum"] += latency
                    totals["lat_max"] = max(totals["lat_max"], latency)
                totals["err"] += ctx.get(check.error)
        totals["kinds"] = [ctx.get(c.error_kinds) for c in checks]

    simulate(m, tb)
    return totals


def test_loopback_through_the_ideal_network():
    totals = loopback(
        FMT, IdealNetwork(FMT), settings=TrafficSettings(rate=0.6), cycles=1200, run=1000
    )
    assert totals["sent"] > 150
    assert totals["recv"] == totals["sent"] and totals["err"] == 0
    assert totals["kinds"] == [0, 0, 0, 0]
    assert totals["lat_max"] >= 4  # L beats through one register


def test_loopback_fault_is_reported():
    totals = loopback(
        FMT,
        IdealNetwork(FMT),
        settings=TrafficSettings(rate=0.6),
        cycles=600,
        run=500,
        fault=(2, 9),
    )
    assert totals["err"] == 1
    assert totals["kinds"] == [0, 0, ErrorKind.DATA, 0]
    assert totals["recv"] == totals["sent"]


@pytest.mark.skipif(not have_fabric(), reason="zfabric.hdl.fabric is not there yet")
def test_layouts_match_the_endpoint():
    from zfabric.boards.traffic import packet_in_layout, packet_out_layout
    from zfabric.hdl.endpoint import PacketInLayout, PacketOutLayout
    from zfabric.hdl.flit import FlitLayout

    plan = torus_plan([2, 2])
    layout = FlitLayout.from_plan(plan)
    assert packet_in_layout(16, 2) == PacketInLayout(layout, 2)
    assert packet_out_layout(16, 2) == PacketOutLayout(layout)
