"""Lock-step co-simulation of Transit fat trees: the emitted Verilog (RN1 route units reading a
2-bit slice and swallowing per input, dilated 8-port chips and alternate-mode halves, one-way
channels, processors injecting on two chips and receiving from two others, endpoints
computing the route) against the reference model, packet by packet and cycle by cycle, at low
load, near the knee and past saturation."""

from __future__ import annotations

import zlib

import pytest
from zfabric.hdl.router.route import RouteRows
from zfabric.sim.tb.runner import cosim, format_report, traffic_trace
from zfabric.sim.traffic import TrafficConfig

from zfabric import compile_plan, load_spec

pytestmark = pytest.mark.rtl

#: bidelta 64 (3 stages of 16 chips, the last in alternate mode), the same in two stacks (the
#: second's first stage swallows), full 64 (one UT64x2: alternate-mode up and level-1 chips)
#: and hybrid 768 (64 B12 leaves under a UT64x8, 848 switches: under Icarus a case takes 6-9
#: minutes and 5.3 GiB once its Verilog and build are cached, 13 minutes and 12.8 GiB the first
#: time, Icarus's build the peak)
FABRICS = {
    "bidelta-64": {"form": "bidelta", "stacks": [3]},
    "bidelta-64-two-stacks": {"form": "bidelta", "stacks": [1, 2]},
    "full-64": {"form": "full"},
    "hybrid-768": {"form": "hybrid", "leaf_stages": 2},
}
#: offered flits/cycle/endpoint, 1-6 flit packets, per fabric. Knees from `zfabric sweep`
#: (uniform, seed 1, warm-up 500, window 2000, round-robin selection): bidelta 64 stable at
#: 0.594, saturated from 0.6; full 64 stable at 0.3875, saturated from 0.394; hybrid 768's knee
#: 0.175 and peak 0.206 from the transit-sizes study (uniform 4-flit packets, seed 1, warm-up 300,
#: window 1500, knee bisected to 0.05 or better; docs/research/transit.md)
RATES = {
    "bidelta-64": {"low": 0.1, "near": 0.55, "past": 0.8},
    "bidelta-64-two-stacks": {"low": 0.1, "near": 0.55, "past": 0.8},
    "full-64": {"low": 0.1, "near": 0.375, "past": 0.8},
    "hybrid-768": {"low": 0.1, "near": 0.175, "past": 0.4},
}
#: the default run takes one case (bidelta 64 near its knee with the random pick: the route
#: units, the dilated chips, the alternate-mode halves and the LFSRs), the rest ``-m matrix``
CASES = [
    pytest.param("bidelta-64", "low", "round-robin", marks=pytest.mark.matrix),
    pytest.param("bidelta-64", "near", "round-robin", marks=pytest.mark.matrix),
    pytest.param("bidelta-64", "past", "round-robin", marks=pytest.mark.matrix),
    pytest.param("bidelta-64", "past", "first-free", marks=pytest.mark.matrix),
    pytest.param("bidelta-64-two-stacks", "past", "round-robin", marks=pytest.mark.matrix),
    pytest.param("full-64", "low", "round-robin", marks=pytest.mark.matrix),
    pytest.param("full-64", "near", "round-robin", marks=pytest.mark.matrix),
    pytest.param("full-64", "past", "round-robin", marks=pytest.mark.matrix),
    pytest.param("hybrid-768", "low", "round-robin", marks=pytest.mark.matrix),
    pytest.param("hybrid-768", "near", "round-robin", marks=pytest.mark.matrix),
    pytest.param("hybrid-768", "past", "round-robin", marks=pytest.mark.matrix),
    # the RN1's random pick between a direction's two outputs
    ("bidelta-64", "near", "random"),
    pytest.param("full-64", "past", "random", marks=pytest.mark.matrix),
]
#: cycles of traffic per load: loaded runs have packets enough in fewer
CYCLES = {"low": 200, "near": 120, "past": 120}


def _id(case) -> str:
    values = case.values if hasattr(case, "values") else case
    return "-".join(values)


@pytest.mark.parametrize("fabric, load, selection", CASES, ids=[_id(c) for c in CASES])
def test_lockstep_icarus(need_sim, cosim_dir, fabric, load, selection):
    topology = {"kind": "transit", **FABRICS[fabric]}
    spec = {"name": fabric, "topology": topology, "router": {"selection": selection}}
    plan = compile_plan(load_spec(spec))
    assert RouteRows(plan).kind == "transit"
    config = TrafficConfig(rate=RATES[fabric][load], packet_length=(1, 6))
    seed = zlib.crc32(f"{fabric}/{load}/{selection}".encode())
    trace = traffic_trace(plan, config, CYCLES[load], seed=seed)
    report = cosim(plan, trace, sim=need_sim("icarus"), build_dir=cosim_dir)
    assert report["passed"], format_report(report)
    assert report["packets"]["rtl"] == report["packets"]["model"] == report["packets"]["trace"]
    assert report["packets"]["trace"] > 250
    assert report["latency"]["rtl"] == report["latency"]["model"]
    assert report["drained"]
