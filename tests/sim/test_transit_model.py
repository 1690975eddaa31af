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


def test_the_channel_load_bound_counts_ejection_links_only():
    """Full 64 under uniform traffic: a processor's packets split over its two inputs (two up
    halves), so an up half carries 4 x 1/2 = 2 flits per unit of rate; its one wire toward
    level 3 carries the 48/63 of them that cross over there: 96/63, the busiest link. Each
    processor receives on its two outputs: 1/2 each (its two inputs do not receive)."""
    from zfabric.sim.analytic import uniform_channel_load

    plan = compile_plan(load_spec({"name": "t", "topology": {"kind": "transit", "form": "full"}}))
    load = uniform_channel_load(plan)
    assert load.max_load == pytest.approx(96 / 63)
    assert load.ejection_load == pytest.approx(1 / 2)
    assert load.bound == pytest.approx(63 / 96)


def test_full_4096s_bound_is_its_top_layers_crossover_into_level_3():
    """Full 4096 under uniform traffic: 3072 of a processor's 4095 destinations sit under
    another quarter of the top layer's 64 children, so their packets cross over into down
    level 3 of one of the four top UT64x8s, through the 4 x 64 dilated up chips' direction 10:
    512 wires, 4096 x 3072/4095 / 512 = 6.0015 flits a wire per unit of rate, the bound 1/that."""
    from zfabric.sim.analytic import uniform_channel_load

    topology = {"kind": "transit", "form": "full", "ut_layers": 2}
    load = uniform_channel_load(compile_plan(load_spec({"name": "t", "topology": topology})))
    assert load.max_load == pytest.approx(4096 * 3072 / 4095 / 512)
    assert load.bound == pytest.approx(4095 * 512 / (4096 * 3072))


@pytest.mark.matrix
@pytest.mark.slow
def test_hybrid_768_in_lockstep_past_saturation():
    """64 B12 leaves under one UT64x8 (848 switches): the fast engine equals the reference
    cycle for cycle past saturation, and every packet drains."""
    from lockstep import lockstep

    spec = {
        "name": "hybrid-768",
        "topology": {"kind": "transit", "form": "hybrid", "leaf_stages": 2},
        "router": {"selection": "round-robin"},
    }
    shown = lockstep(spec, 0.9, cycles=150, drain=5000)
    traffic = Traffic(TrafficConfig(rate=0.9, packet_length=4), 768, 1)  # lockstep's traffic
    offered = sum(len(list(traffic.packets_at(cycle))) for cycle in range(150))
    assert offered > 10_000
    assert shown["delivered"] == offered
