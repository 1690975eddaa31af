"""Lock-step co-simulation of HyperZ fabrics: the emitted Verilog (the comparator route unit,
hdl/router/route/hyperz.py, one per level) against the reference model, packet by packet and
cycle by cycle, at low load, near the knee and past saturation."""

from __future__ import annotations

import zlib

import pytest
from zfabric.hdl.router.route import RouteRows
from zfabric.sim.tb.runner import cosim, format_report, traffic_trace
from zfabric.sim.traffic import TrafficConfig

from zfabric import compile_plan, load_spec

pytestmark = pytest.mark.rtl

#: HyperX 3x2 with 2 processors per switch (6 switches); a 2x2 HyperZ of two-level Z-nodes
#: (16 switches: up, down and side ports at both levels)
FABRICS = {
    "hyperx-3x2": {"kind": "hyperx", "s": [3, 2], "terminals": 2},
    "hyperz-2x2-h2": {"kind": "hyperz", "s": [2, 2], "z": [2, 2], "R": [1, 2]},
}
#: offered flits/cycle/endpoint: low, and past the knee (`zfabric cosim` of hyperx-3x2 under
#: aliod, 4-flit packets: mean latency 9.3 cycles at 0.1, 58 at 0.7, past the 3x criterion)
RATES = {"low": 0.1, "past": 0.7}
#: just below the model's knee (`zfabric sweep`, 1-6 flit packets, seed 1, warm-up 500, window
#: 2000): hyperx-3x2 under aliod stable at 0.525, saturated from 0.531 (zero-load 8.05
#: cycles); hyperz-2x2-h2 under cliod stable at 0.614, saturated from 0.620
NEAR = {("hyperx-3x2", "aliod"): 0.5, ("hyperz-2x2-h2", "cliod"): 0.6}
#: each fabric and routing once by default (under contention), the rest under ``-m matrix``
CASES = [
    pytest.param("hyperx-3x2", "aliod", "low", marks=pytest.mark.matrix),
    pytest.param("hyperx-3x2", "aliod", "near", marks=pytest.mark.matrix),
    ("hyperx-3x2", "aliod", "past"),
    pytest.param("hyperz-2x2-h2", "cliod", "low", marks=pytest.mark.matrix),
    ("hyperz-2x2-h2", "cliod", "near"),
    pytest.param("hyperz-2x2-h2", "aliod", "past", marks=pytest.mark.matrix),
]


def _case_id(case) -> str:
    return "-".join(case.values if hasattr(case, "values") else case)


@pytest.mark.parametrize("fabric, routing, load", CASES, ids=[_case_id(c) for c in CASES])
def test_lockstep_icarus(need_sim, cosim_dir, fabric, routing, load):
    plan = compile_plan(
        load_spec({"name": fabric, "topology": FABRICS[fabric], "routing": routing})
    )
    rate = NEAR[(fabric, routing)] if load == "near" else RATES[load]
    config = TrafficConfig(rate=rate, packet_length=(1, 6))
    assert RouteRows(plan).kind == "hyperz"  # the comparator unit, not tables
    trace = traffic_trace(plan, config, 300, seed=zlib.crc32(f"{fabric}/{routing}".encode()))
    report = cosim(plan, trace, sim=need_sim("icarus"), build_dir=cosim_dir)
    assert report["passed"], format_report(report)
    assert report["packets"]["rtl"] == report["packets"]["model"] == report["packets"]["trace"]
    assert report["latency"]["rtl"] == report["latency"]["model"]
    assert report["drained"]


#: the 2x2x2 HyperX that froze under ``aliod`` and ``cliod`` at ``stages`` 4 and 5 while its
#: switches took an adaptive VC whose next buffer still held another packet's tail: past
#: saturation, with the buffer depth that streams one flit per cycle at those stages (one case
#: in the default run, the others under ``-m matrix``)
TWO_CUBED = {"kind": "hyperx", "s": [2, 2, 2], "terminals": 2}


@pytest.mark.parametrize(
    "routing, stages",
    [
        ("aliod", 5),
        pytest.param("aliod", 4, marks=pytest.mark.matrix),
        pytest.param("cliod", 5, marks=pytest.mark.matrix),
    ],
    ids=["aliod-5", "aliod-4", "cliod-5"],
)
def test_lockstep_adaptive_hyperx_past_saturation(need_sim, cosim_dir, routing, stages):
    spec = {
        "name": "hx",
        "topology": TWO_CUBED,
        "routing": routing,
        "router": {"stages": stages},
        "buffer_depth": 6,
    }
    plan = compile_plan(load_spec(spec))
    config = TrafficConfig(rate=0.9, packet_length=4)
    trace = traffic_trace(plan, config, 600, seed=zlib.crc32(f"hx/{routing}/{stages}".encode()))
    report = cosim(plan, trace, sim=need_sim("icarus"), build_dir=cosim_dir)
    assert report["passed"], format_report(report)
    assert report["packets"]["rtl"] == report["packets"]["model"] == report["packets"]["trace"]
    assert report["latency"]["rtl"] == report["latency"]["model"]
    assert report["drained"]
