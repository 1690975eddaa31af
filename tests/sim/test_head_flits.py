"""Heads longer than a flit (``router.head_bits``, docs/microarchitecture.md, *Heads longer than
a flit*) in the model: zero-load latencies derived by hand on znode-64, the surplus head flits
a sliced switch drops, conservation under load, the refused buffer depth, and the RTL commands
that build them."""

from __future__ import annotations

import random

import pytest
import yaml
from zfabric.sim.analytic import channel_load, flow_zero_load_latency
from zfabric.sim.model import FabricModel

from zfabric import SpecError, compile_plan, load_spec
from zfabric.cli import main
from zfabric.routing import head_flits


def plan_for(example, name: str, routing: str, router: dict, depth: int = 8, length: int = 4):
    data = yaml.safe_load(example(name).read_text())
    data.update(routing=routing, router=router, buffer_depth=depth, packet_length=length)
    return compile_plan(load_spec(data))


def lone(plan, src: int, dst: int) -> int:
    model = FabricModel(plan)
    packet = model.offer(src, dst)
    model.run(200)
    assert packet.flits_delivered == packet.length and model.in_network == 0
    return packet.latency


@pytest.mark.parametrize(
    "width, bits, flits",
    [(9, None, 1), (9, 1, 9), (9, 3, 3), (9, 4, 3), (9, 8, 2), (9, 9, 1), (9, 64, 1), (0, 1, 1)],
)
def test_head_flits_is_the_ceiling_and_never_zero(width, bits, flits):
    """ceil(width / bits); an empty head (a sliced one at delivery) still has its first flit."""
    assert head_flits(width, bits) == flits


# znode-64: z = (4,4,4), 2-bit labels. 0 -> 63 turns at level 3 (4 switch-to-switch links, 5
# switches); 0 -> 4 at level 2 (2 links); 0 -> 1 at level 1 (one switch). 4-flit packets,
# stages 1: 2H + L + 2 = 14, 10 and 6 cycles with one-flit heads.
HAND = [
    # flat: 6-bit address, 3 head flits at 2 bits a flit, into all 5 switches (flat always
    # climbs) and on the ejection link: 14 + 5 * 2 + 2, whatever the destination
    ("flat", 2, 63, 14 + 5 * 2 + 2),
    ("flat", 2, 1, 14 + 5 * 2 + 2),
    # source-destination: 12 bits, 4 head flits at 3 bits, into 5 switches and the ejection
    # link: 14 + 5 * 3 + 3; to 1: one switch and the link, 6 + 3 + 3
    ("source_destination", 3, 63, 14 + 5 * 3 + 3),
    ("source_destination", 3, 1, 6 + 3 + 3),
    # sliced at 3 bits a flit, to 63: the 9-bit head (1,1,0 then three labels) is 9, 8, 7 bits
    # into the level-1, 2, 3 switches (3 flits each), 4 bits after the turn (2 flits), 2 into
    # the last level-1 switch and 0 on the ejection link (1 flit each): 14 + 2 + 2 + 2 + 1
    ("sliced", 3, 63, 14 + 7),
    # to 4: 6 bits (1,0, two labels), then 5, then 2, then 0: 2, 2, 1 flits into the 3
    # switches and 1 on the link: 10 + 1 + 1
    ("sliced", 3, 4, 10 + 2),
    # to 1: 3 bits (0, a label): one flit, nothing added
    ("sliced", 3, 1, 6),
]


@pytest.mark.parametrize("routing, bits, dst, latency", HAND)
def test_zero_load_latency_by_hand(example, routing, bits, dst, latency):
    plan = plan_for(example, "znode-64", routing, {"head_bits": bits})
    assert lone(plan, 0, dst) == latency
    assert flow_zero_load_latency(plan, {(0, dst): 1.0}, 4) == latency


@pytest.mark.parametrize("stages", [2, 3, 4, 5])
def test_head_flits_add_the_same_cycles_at_every_pipeline_depth(example, stages):
    """The wait for head flits adds to the stages' (S + 1)(H + 1): flat's 12 extra cycles to 63
    (test above) on top of 1 + (S + 1) * 5 + 3."""
    plan = plan_for(example, "znode-64", "flat", {"head_bits": 2, "stages": stages})
    assert lone(plan, 0, 63) == 1 + (stages + 1) * 5 + 3 + 12


@pytest.mark.parametrize("routing", ["sliced", "flat"])
def test_one_flit_payload_keeps_its_head_flits_and_arrives_whole(example, routing):
    """L = 1: the last head flit is the tail; sliced drops it on the way (the head then ends
    the packet), flat carries it to the endpoint, which strips it. 3 cycles less than L = 4."""
    four = plan_for(example, "znode-64", routing, {"head_bits": 3 if routing == "sliced" else 2})
    one = plan_for(
        example, "znode-64", routing, {"head_bits": 3 if routing == "sliced" else 2}, length=1
    )
    assert lone(one, 0, 63) == lone(four, 0, 63) - 3


def test_whole_heads_in_a_flit_change_no_cycle(example):
    """head_bits at or above the widest head (9 bits for sliced on znode-64) is the default
    switch: the same packets in the same cycles under load, and so is the key's absence."""
    runs = []
    for router in ({}, {"head_bits": 9}, {"head_bits": 64}):
        model = FabricModel(plan_for(example, "znode-64", "sliced", router, depth=4))
        rng = random.Random(5)
        for _ in range(300):
            for src in range(64):
                if rng.random() < 0.08:
                    model.offer(src, (src + rng.randrange(1, 64)) % 64)
            model.step()
        model.run(300)
        runs.append([(p.id, p.delivered) for p in model.delivered])
    assert runs[0] == runs[1] == runs[2] and len(runs[0]) > 1000


@pytest.mark.parametrize("stages", [1, 3, 4, 5])
@pytest.mark.parametrize("routing", ["sliced", "source_destination"])
def test_credits_and_packets_are_conserved_under_load(example, routing, stages):
    """snode-128 (two Znodes, side hops) with heads over several flits and one- and
    three-flit payloads: every credit accounted for each cycle, every packet whole."""
    plan = plan_for(example, "snode-128", routing, {"head_bits": 3, "stages": stages}, depth=6)
    model = FabricModel(plan)
    rng = random.Random(stages)
    offered = []
    for cycle in range(500):
        for src in range(128):
            if cycle < 250 and rng.random() < 0.03:
                dst = (src + rng.randrange(1, 128)) % 128
                offered.append(model.offer(src, dst, rng.choice((1, 3))))
        model.step()
        model.check_credits()
    assert offered and all(p.flits_delivered == p.length for p in offered)
    assert model.in_network == 0


def test_a_buffer_shallower_than_the_head_is_refused(example):
    with pytest.raises(SpecError, match=r"^router\.head_bits: 2 bits per flit split the 12-bit"):
        plan_for(example, "znode-64", "source_destination", {"head_bits": 2}, depth=4)


RTL_COMMANDS = {
    "verilog": ["verilog", "SPEC", "-o", "OUT"],
    "board": ["board", "build", "icebreaker", "SPEC", "--plan-only", "-o", "OUT"],
}


def run_rtl_command(
    example, tmp_path, monkeypatch, command: str, routing: str, name="znode-64", head_bits=4
) -> int:
    data = yaml.safe_load(example(name).read_text())
    data["routing"] = routing
    data["router"] = {"head_bits": head_bits}
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(data))
    out = tmp_path / "out"
    args = [{"SPEC": str(path), "OUT": str(out)}.get(arg, arg) for arg in RTL_COMMANDS[command]]
    monkeypatch.chdir(tmp_path)  # a default output folder would land here
    return main(args)


def test_board_build_takes_heads_of_several_flits(example, tmp_path, monkeypatch, capsys):
    """board build no longer refuses heads of several flits: the endpoints send and strip them
    under the traffic generators and checkers (tests/boards/test_top.py runs the board core
    with them against the model); the plan-only build writes the design."""
    assert run_rtl_command(example, tmp_path, monkeypatch, "board", "dor", "torus-2x2", 1) == 0
    assert "error" not in capsys.readouterr().err
    assert (tmp_path / "out" / "top.il").stat().st_size > 0


def test_verilog_builds_heads_of_several_flits(example, tmp_path, monkeypatch, capsys):
    """sliced heads (up to 9 bits on znode-64) at 4 bits a flit travel as 1 to 3 flits: zfabric
    verilog builds them (tests/rtl/test_fabric_rtl.py runs them in lock-step with the model)."""
    assert run_rtl_command(example, tmp_path, monkeypatch, "verilog", "sliced") == 0
    assert "error" not in capsys.readouterr().err
    assert any((tmp_path / "out").rglob("*.v"))


def test_channel_load_counts_head_flits(example):
    """updown on znode-64 sends 0 -> 63 down one path: with a 6-bit head at 2 bits a flit, a
    4-flit packet is 4 + 3 - 1 = 6 flits on every link and on the ejection link, 1.5 flits
    per payload flit, so the bound is 1 / 1.5; with whole heads, 1 and 1."""
    flows = {(0, 63): 1.0}
    whole = channel_load(plan_for(example, "znode-64", "updown", {}), flows)
    split = channel_load(plan_for(example, "znode-64", "updown", {"head_bits": 2}), flows)
    assert (whole.max_load, whole.ejection_load, whole.bound) == (1.0, 1.0, 1.0)
    assert (split.max_load, split.ejection_load) == (1.5, 1.5)
    assert split.bound == pytest.approx(2 / 3)
