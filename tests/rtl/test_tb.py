"""The co-simulation components without a simulator: beat packing and the scoreboard's verdicts."""

from __future__ import annotations

import pytest
from zfabric.hdl.endpoint import PacketInLayout, PacketOutLayout, dst_width
from zfabric.hdl.flit import FlitLayout
from zfabric.sim.tb.packing import PacketCodec
from zfabric.sim.tb.runner import top_ports, wrapper_verilog
from zfabric.sim.tb.scoreboard import Expected, LockstepScoreboard, model_expectations
from zfabric.sim.traffic import TraceEntry

from zfabric import compile_plan, load_spec


@pytest.fixture(scope="module")
def torus(request):
    from pathlib import Path

    examples = Path(request.config.rootpath) / "examples"
    return compile_plan(load_spec(examples / "torus-4x4.yaml"))


@pytest.mark.parametrize("first, last", [(1, 0), (0, 0), (0, 1), (1, 1)])
def test_codec_packs_as_amaranth_lays_out(torus, first, last):
    codec = PacketCodec(torus)
    layout = FlitLayout.from_plan(torus)
    beat_in = PacketInLayout(layout, dst_width(torus))
    beat_out = PacketOutLayout(layout)
    word = codec.word(13, 200, 3)
    want = beat_in.const({"data": word, "dst": 9, "first": first, "last": last}).as_bits()
    assert codec.pack_in(word, 9, first, last) == want
    value = beat_out.const({"data": word, "first": first, "last": last}).as_bits()
    beat = codec.unpack_out(value)
    assert (beat.data, beat.first, beat.last) == (word, bool(first), bool(last))


def test_codec_head_loses_the_routing_head_bits(torus):
    codec = PacketCodec(torus)
    assert codec.data_width == codec.payload_width - codec.head_width
    word = codec.word(5, 0xABC, 0)
    assert codec.delivered_word(5, 0xABC, 0) == word & ((1 << codec.data_width) - 1)
    assert codec.delivered_word(5, 0xABC, 1) == codec.word(5, 0xABC, 1)


class FakePacket:
    def __init__(self, src, sequence, dst):
        self.src, self.sequence, self.dst = src, sequence, dst
        self.key = (src, sequence)


class FakeDelivery:
    def __init__(self, endpoint, words, cycle, attachment=0, faults=()):
        self.endpoint, self.words, self.cycle = endpoint, tuple(words), cycle
        self.attachment, self.faults, self.first = attachment, list(faults), cycle


def scoreboard_for(torus):
    """Two packets from the model: 0 -> 5 and 0 -> 6, both created at cycle 0."""
    expected, _ = model_expectations(torus, [TraceEntry(0, 0, 5, 2), TraceEntry(0, 0, 6, 1)])
    codec = PacketCodec(torus)
    board = LockstepScoreboard(expected, codec)
    for e in expected:
        board.injected(FakePacket(e.src, e.sequence, e.dst), e.injected)
    return board, codec, expected


def words(codec, e: Expected):
    return [codec.delivered_word(e.src, e.sequence, i) for i in range(e.length)]


def run(board, deliveries, until):
    by_cycle = {}
    for d in deliveries:
        by_cycle.setdefault(d.cycle, []).append(d)
    for cycle in range(until):
        for d in by_cycle.get(cycle, []):
            board.delivered(d)
        board.end_of_cycle(cycle)


def test_scoreboard_accepts_the_models_deliveries(torus):
    board, codec, expected = scoreboard_for(torus)
    run(board, [FakeDelivery(e.dst, words(codec, e), e.delivered) for e in expected], 100)
    assert board.mismatches == []
    assert board.rtl_delivered == {e.key: e.delivered for e in expected}


def test_scoreboard_reports_a_late_packet_with_both_cycles_and_its_path(torus):
    board, codec, (a, b) = scoreboard_for(torus)
    deliveries = [
        FakeDelivery(a.dst, words(codec, a), a.delivered + 3),
        FakeDelivery(b.dst, words(codec, b), b.delivered),
    ]
    run(board, deliveries, 100)
    (late,) = board.mismatches
    assert (late.kind, late.cycle, late.model_cycle, late.rtl_cycle) == (
        "late",
        a.delivered,
        a.delivered,
        a.delivered + 3,
    )
    assert late.path == a.path and late.path[-1].endswith("(local)")
    assert f"RTL cycle {a.delivered + 3}" in late.describe()


def test_scoreboard_reports_early_corrupt_duplicate_wrong_attachment_and_lost(torus):
    board, codec, (a, b) = scoreboard_for(torus)
    bad = words(codec, a)
    bad[1] ^= 4
    deliveries = [
        FakeDelivery(a.dst, bad, a.delivered - 1, attachment=1),
        FakeDelivery(a.dst, words(codec, a), a.delivered + 1),  # a second copy
    ]
    run(board, deliveries, 100)  # and b never arrives
    found = {m.kind: m for m in board.mismatches}
    assert sorted(found) == ["attachment", "corrupt", "early", "late", "unknown"]
    assert len(board.mismatches) == 5
    assert found["corrupt"].detail == f"flit 1 is {bad[1]:#x}, sent {bad[1] ^ 4:#x}"
    assert found["early"].rtl_cycle == a.delivered - 1
    assert found["unknown"].cycle == a.delivered + 1
    lost = found["late"]
    assert (lost.src, lost.sequence, lost.rtl_cycle) == (b.src, b.sequence, None)


def test_wrapper_passes_every_port_through():
    text = wrapper_verilog("fab", [("input", 38, "i__0__payload"), ("output", 1, "i__0__ready")])
    assert top_ports(text, "cosim_top") == [
        "cosim_dump",
        "clk",
        "rst",
        "i__0__payload",
        "i__0__ready",
    ]
    assert "  input [37:0] i__0__payload;" in text
    assert "    .clk(clk)," in text and "    .i__0__ready(i__0__ready)\n" in text


def test_scoreboard_follows_a_reordered_flow_when_heads_look_alike():
    """16-bit flits keep no sequence bits in a head: two packets of one flow that overtake
    each other (adaptive routing) are told apart by the model's cycle and their body flits."""
    narrow = compile_plan(
        load_spec({"name": "t16", "topology": {"kind": "torus", "k": [4, 4]}, "flit_width": 16})
    )
    codec = PacketCodec(narrow)
    assert codec.delivered_word(0, 0, 0) == codec.delivered_word(0, 1, 0)
    a = Expected(0, 0, 5, 3, 0, 0, 15, 0, ["sw"])
    b = Expected(0, 1, 5, 2, 1, 3, 12, 0, ["sw"])
    board = LockstepScoreboard([a, b], codec)
    for e in (a, b):
        board.injected(FakePacket(e.src, e.sequence, e.dst), e.injected)
    run(board, [FakeDelivery(5, words(codec, b), 12), FakeDelivery(5, words(codec, a), 15)], 20)
    assert board.mismatches == []
