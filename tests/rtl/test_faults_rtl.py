"""A degraded fabric's RTL against the model in lock-step: the 4x4 torus without the link
sw0_0-sw1_0, routed by up*/down* tables (examples/torus-4x4-dead-link.yaml), built with table
route units and the dead ports left unconnected. Every packet of a random trace must come out
of the RTL intact, exactly once, by the model's attachment and in the model's cycle."""

from __future__ import annotations

import zlib

import pytest
from zfabric.sim.tb.runner import cosim, format_report, traffic_trace
from zfabric.sim.traffic import TrafficConfig

pytestmark = pytest.mark.rtl

#: offered flits/cycle/endpoint: low, and past the intact torus's uniform knee (0.49)
RATES = {"low": 0.1, "past": 0.7}


@pytest.mark.parametrize("load", list(RATES))
def test_lockstep_icarus_of_a_torus_with_a_dead_link(plan_of, need_sim, cosim_dir, load):
    plan = plan_of("torus-4x4-dead-link")
    assert plan.routing.name == "updown_table"
    config = TrafficConfig(rate=RATES[load], packet_length=(1, 6))
    trace = traffic_trace(plan, config, 300, seed=zlib.crc32(f"dead-link/{load}".encode()))
    report = cosim(plan, trace, sim=need_sim("icarus"), build_dir=cosim_dir)
    assert report["passed"], format_report(report)
    assert report["packets"]["rtl"] == report["packets"]["model"] == report["packets"]["trace"]
    assert report["latency"]["rtl"] == report["latency"]["model"]
    assert report["drained"]
