"""Transit fat trees in the reference model and the fast engine: at low and past-saturation
load no deadlock, every packet delivered once and intact (the models' invariants, credits
checked), and drained once injection stops. A processor injects on either of its two inputs
and receives on either of its two outputs, on different chips; the dilated outputs are taken
by the router's output selection."""

from __future__ import annotations

import pytest
from zfabric.sim.fast import FastModel
from zfabric.sim.model import DeadlockWatch, FabricModel
from zfabric.sim.traffic import Traffic, TrafficConfig

from zfabric import compile_plan, load_spec

FABRICS = {
    "full-64": {"form": "full"},
    "bidelta-64": {"form": "bidelta", "stacks": [3]},
    "bidelta-64-two-stacks": {"form": "bidelta", "stacks": [1, 2]},
}
CYCLES, DRAIN = 600, 20_000


@pytest.mark.parametrize("engine", [FabricModel, FastModel], ids=["reference", "fast"])
@pytest.mark.parametrize("rate", [0.1, 1.0])
@pytest.mark.parametrize("name", list(FABRICS))
def test_every_packet_is_delivered(name, rate, engine):
    plan = compile_plan(load_spec({"name": name, "topology": {"kind": "transit", **FABRICS[name]}}))
    model = engine(plan)
    watch = DeadlockWatch(model)
    traffic = Traffic(TrafficConfig(rate=rate, packet_length=(1, 6)), len(plan.endpoints), 3)
    offered = 0
    for cycle in range(CYCLES):
        for src, dst, length in traffic.packets_at(cycle):
            model.offer(src, dst, length)
            offered += 1
        model.step()
        assert watch() is None
        if cycle % 100 == 0:
            model.check_credits()
    for _ in range(DRAIN):
        if model.delivered_count == offered:
            break
        model.step()
        assert watch() is None
    model.check_credits()
    assert offered > 100
    assert model.delivered_count == offered
    assert model.in_network == 0
