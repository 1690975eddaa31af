"""The co-simulation components without a simulator: beat packing and the scoreboard's verdicts."""

from __future__ import annotations

import pytest
from zfabric.sim.tb.packing import PacketCodec, data_word
from zfabric.sim.tb.runner import top_ports, wrapper_verilog
from zfabric.sim.tb.scoreboard import Expected, LockstepScoreboard, model_expectations
from zfabric.sim.traffic import TraceEntry

from zfabric import compile_plan, load_spec


@pytest.fixture(scope="module")
def torus(request):
    from pathlib import Path

    examples = Path(request.config.rootpath) / "examples"
    return compile_plan(load_spec(examples / "torus-4x4.yaml"))


def test_data_words_are_full_width_and_differ_by_packet_and_flit(torus):
    """Pseudo-random over every bit of the flit (32 here), the top bits of a head included, and
    a function of (src, sequence, index) only."""
    codec = PacketCodec(torus)
    words = [codec.word(src, seq, i) for src in range(16) for seq in range(8) for i in range(4)]
    assert len(set(words)) == len(words)
    assert max(words) < 1 << 32 and max(words) >> 31 == 1
    heads = [codec.word(src, seq, 0) for src in range(16) for seq in range(8)]
    # each of the 32 bits is set in some head and clear in another
    assert all(0 < sum(w >> b & 1 for w in heads) < len(heads) for b in range(32))
    assert codec.word(5, 0xABC, 0) == data_word(32, 5, 0xABC, 0)
    assert data_word(100, 5, 0xABC, 0) & ((1 << 64) - 1) == data_word(64, 5, 0xABC, 0)


class FakePacket:
    def __init__(self, src, sequence, dst):
        self.src, self.sequence, self.dst = src, sequence, dst
        self.key = (src, sequence)


class FakeDelivery:
    def __init__(self, endpoint, words, cycle, attachment=0, faults=(), tid=0):
        self.endpoint, self.words, self.cycle = endpoint, tuple(words), cycle
        self.attachment, self.faults, self.first = attachment, list(faults), cycle
        self.tid = tid


def scoreboard_for(torus):
    """Two packets from the model: 0 -> 5 and 0 -> 6, both created at cycle 0."""
    expected, _ = model_expectations(torus, [TraceEntry(0, 0, 5, 2), TraceEntry(0, 0, 6, 1)])
    codec = PacketCodec(torus)
    board = LockstepScoreboard(expected, codec)
    for e in expected:
        board.injected(FakePacket(e.src, e.sequence, e.dst), e.injected)
    return board, codec, expected


def words(codec, e: Expected):
    return [codec.word(e.src, e.sequence, i) for i in range(e.length)]


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


def test_scoreboard_reports_a_wrong_tid_and_a_lost_top_bit_of_a_head(torus):
    """The bug this bench was built against: a head whose top data bit (where the routing head
    used to sit) is lost is no packet in flight, and its packet never arrives; a packet naming
    another source in ``tid`` is reported as such."""
    board, codec, (a, b) = scoreboard_for(torus)
    cut = words(codec, b)
    cut[0] ^= 1 << 31
    deliveries = [
        FakeDelivery(a.dst, words(codec, a), a.delivered, tid=a.src + 3),
        FakeDelivery(b.dst, cut, b.delivered, tid=b.src),
    ]
    run(board, deliveries, 100)
    assert sorted(m.kind for m in board.mismatches) == ["late", "tid", "unknown"]
    found = {m.kind: m for m in board.mismatches}
    assert found["tid"].detail == f"tid {a.src + 3}, sent by {a.src}"
    assert (found["late"].src, found["late"].sequence) == (b.src, b.sequence)


def test_wrapper_passes_every_port_through():
    ports = [("input", 32, "s0_axis_tdata"), ("output", 1, "s0_axis_tready")]
    text = wrapper_verilog("fab", ports)
    assert top_ports(text, "cosim_top") == [
        "cosim_dump",
        "clk",
        "rst",
        "s0_axis_tdata",
        "s0_axis_tready",
    ]
    assert "  input [31:0] s0_axis_tdata;" in text
    assert "    .clk(clk)," in text and "    .s0_axis_tready(s0_axis_tready)\n" in text


def test_scoreboard_follows_a_reordered_flow_when_heads_look_alike():
    """8-bit flits: two packets of one flow whose random head words are equal (found by
    enumeration), overtaking each other (adaptive routing), are told apart by the model's
    cycle and their body flits."""
    narrow = compile_plan(
        load_spec({"name": "t8", "topology": {"kind": "torus", "k": [4, 4]}, "flit_width": 8})
    )
    codec = PacketCodec(narrow)
    first = {}
    for seq in range(1000):
        head = codec.word(0, seq, 0)
        if head in first and codec.word(0, seq, 1) != codec.word(0, first[head], 1):
            s0, s1 = first[head], seq
            break
        first.setdefault(head, seq)
    a = Expected(0, s0, 5, 3, 0, 0, 15, 0, ["sw"])
    b = Expected(0, s1, 5, 2, 1, 3, 12, 0, ["sw"])
    board = LockstepScoreboard([a, b], codec)
    for e in (a, b):
        board.injected(FakePacket(e.src, e.sequence, e.dst), e.injected)
    run(board, [FakeDelivery(5, words(codec, b), 12), FakeDelivery(5, words(codec, a), 15)], 20)
    assert board.mismatches == []
    assert board.rtl_delivered == {a.key: 15, b.key: 12}


def test_a_simulator_build_is_named_by_the_cocotb_libraries_it_links(monkeypatch, tmp_path):
    """A Verilator executable cached by another virtualenv (since deleted) fails to start: the
    build folder's name must change with the cocotb library folder, so it is rebuilt instead."""
    import cocotb_tools.config
    from zfabric.sim.tb.runner import toolchain_digest

    here = toolchain_digest("verilator")
    assert here == toolchain_digest("verilator")
    assert here != toolchain_digest("icarus")
    monkeypatch.setattr(cocotb_tools.config, "libs_dir", tmp_path / "other-venv" / "libs")
    assert toolchain_digest("verilator") != here
