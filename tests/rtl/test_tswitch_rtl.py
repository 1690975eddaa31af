"""Lock-step co-simulation of T-switch fat trees: the emitted Verilog (every T-switch a twin
node of two internal switches, table route units from the plan's DESTRO routing) against the
reference model, packet by packet and cycle by cycle, at low load, near the knee and past
saturation."""

from __future__ import annotations

import zlib

import pytest
from zfabric.hdl.router.route import RouteRows
from zfabric.sim.tb.runner import cosim, format_report, traffic_trace
from zfabric.sim.traffic import TrafficConfig

from zfabric import compile_plan, load_spec

pytestmark = pytest.mark.rtl

#: 4-ary 2-tree (16 endpoints, 8 T-switches) with the optimal SCP and one internal link (one
#: internal VC), or the bad SCP with two links (the internal classes on two VCs); 4-ary 3-tree
#: (64 endpoints, 48 T-switches)
FABRICS = {
    "t42-optimal": {"k": 4, "n": 2, "tswitch": {"internal_ports": 1, "scp": "optimal"}},
    "t42-bad-r2": {"k": 4, "n": 2, "tswitch": {"internal_ports": 2, "scp": "bad"}},
    "t43-optimal": {"k": 4, "n": 3, "tswitch": {"internal_ports": 1, "scp": "optimal"}},
}
#: offered flits/cycle/endpoint, 1-6 flit packets. Knees from `zfabric sweep` (seed 1, warm-up
#: 500, window 2000): t42-optimal stable at 0.4625, saturated from 0.469
RATES = {"low": 0.1, "near": 0.45, "past": 0.8}
CASES = [
    ("t42-optimal", "low"),
    pytest.param("t42-optimal", "near", marks=pytest.mark.matrix),
    pytest.param("t42-optimal", "past", marks=pytest.mark.matrix),
    pytest.param("t42-bad-r2", "past", marks=pytest.mark.matrix),
    pytest.param("t43-optimal", "low", marks=pytest.mark.matrix),
    pytest.param("t43-optimal", "near", marks=pytest.mark.matrix),
    pytest.param("t43-optimal", "past", marks=pytest.mark.matrix),
]


def _id(case) -> str:
    values = case.values if hasattr(case, "values") else case
    return "-".join(values)


@pytest.mark.parametrize("fabric, load", CASES, ids=[_id(c) for c in CASES])
def test_lockstep_icarus(need_sim, cosim_dir, fabric, load):
    topology = {"kind": "kary_ntree", **FABRICS[fabric]}
    plan = compile_plan(load_spec({"name": fabric, "topology": topology}))
    assert RouteRows(plan).kind == "table"
    assert any(p.role == "internal" for s in plan.switches for p in s.ports)
    config = TrafficConfig(rate=RATES[load], packet_length=(1, 6))
    trace = traffic_trace(plan, config, 300, seed=zlib.crc32(f"{fabric}/{load}".encode()))
    report = cosim(plan, trace, sim=need_sim("icarus"), build_dir=cosim_dir)
    assert report["passed"], format_report(report)
    assert report["packets"]["rtl"] == report["packets"]["model"] == report["packets"]["trace"]
    assert report["latency"]["rtl"] == report["latency"]["model"]
    assert report["drained"]
