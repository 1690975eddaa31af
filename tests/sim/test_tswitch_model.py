"""T-switch fat trees in the reference model: at full offered load no deadlock, every packet
delivered once, intact and contiguous (the model's invariants), in order per source and
destination (DESTRO is deterministic, one internal link per destination), and drained once
injection stops; for each pattern and internal-VC set the proof accepts."""

from __future__ import annotations

import pytest
from zfabric.sim.model import DeadlockWatch, FabricModel
from zfabric.sim.traffic import Traffic, TrafficConfig

from zfabric import analyse_routing, compile_plan, load_spec

SHARED = {"name": "destro", "internal_vcs": {"up": 0, "down": 0}}
CASES = {
    "4-ary-2-tree-optimal-r1": ({"k": 4, "n": 2, "tswitch": {}}, "destro"),
    "4-ary-2-tree-bad-r2-shared": (
        {"k": 4, "n": 2, "tswitch": {"scp": "bad", "internal_ports": 2}},
        SHARED,
    ),
    "4-ary-2-tree-mixed-r1": (
        {"k": 4, "n": 2, "tswitch": {"scp": [[0, 1, 6, 7], [0, 1, 2, 3]]}},
        "destro",
    ),
    "2-ary-3-tree-bad-r1": ({"k": 2, "n": 3, "tswitch": {"scp": "bad"}}, "destro"),
    "8-ary-2-tree-optimal-r2": ({"k": 8, "n": 2, "tswitch": {"internal_ports": 2}}, "destro"),
}
CYCLES, DRAIN = 1500, 20_000


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(name, marks=pytest.mark.slow) if name.startswith("8-ary") else name
        for name in CASES
    ],
)
def test_full_load_drains_in_order(name):
    topology, routing = CASES[name]
    plan = compile_plan(
        load_spec(
            {"name": name, "topology": {"kind": "kary_ntree", **topology}, "routing": routing}
        )
    )
    assert analyse_routing(plan).deadlock_free
    model = FabricModel(plan)
    watch = DeadlockWatch(model)
    traffic = Traffic(TrafficConfig(rate=1.0, packet_length=(1, 6)), len(plan.endpoints), 7)
    offered = []
    for cycle in range(CYCLES):
        for src, dst, length in traffic.packets_at(cycle):
            offered.append(model.offer(src, dst, length))
        model.step()
        assert watch() is None
    for _ in range(DRAIN):
        if len(model.delivered) == len(offered):
            break
        model.step()
        assert watch() is None
    assert len(model.delivered) == len(offered)
    model.check_credits()
    last: dict[tuple[int, int], int] = {}
    for packet in sorted(model.delivered, key=lambda p: p.delivered):
        pair = (packet.src, packet.dst)
        assert last.get(pair, -1) < packet.id, f"{pair}: packet {packet.id} overtook one"
        last[pair] = packet.id
