"""Lock-step co-simulation with several VCs per class: a head may take any VC of its class and
takes the first free one with a credit (docs/microarchitecture.md), in the model and the RTL.

mesh-4x4 (examples/mesh-4x4.yaml: 2 VCs per link, one class) and a 4x4 torus with 2 VCs per
dateline class (4 per link), at low load and near the knee; that torus again at `stages: 5`
with 6-flit buffers (the best Gbit/s per endpoint on torus 8x8,
docs/design/router-measurements.md) at low load, near the knee and past it, under ``-m matrix``
(the default run has stages 5 and 4 VCs apart).
"""

from __future__ import annotations

import zlib

import pytest
from test_fabric_rtl import check
from zfabric.sim.model.fabric_model import FabricModel
from zfabric.sim.tb.runner import cosim, traffic_trace
from zfabric.sim.tb.scoreboard import model_expectations
from zfabric.sim.traffic import TrafficConfig

from zfabric import compile_plan, load_spec

pytestmark = pytest.mark.rtl

TORUS = {"name": "torus-4x4-vcs2", "topology": {"kind": "torus", "k": [4, 4], "vcs": 2}}
DEEP = {**TORUS, "name": "torus-4x4-vcs2-s5", "router": {"stages": 5}, "buffer_depth": 6}
SPECS = {spec["name"]: spec for spec in (TORUS, DEEP)}
#: uniform-traffic knee in flits/cycle/endpoint (model, 4-flit packets: bench/saturation.py;
#: the stages 5 torus zfabric.sim.sweep.saturation, warm-up 1000, window 2000, seed 1)
KNEE = {"mesh-4x4": 0.496, "torus-4x4-vcs2": 0.571, "torus-4x4-vcs2-s5": 0.631}
LOADS = {"low": 0.2, "near": 0.9, "past": 1.5}
MATRIX = [pytest.mark.matrix, pytest.mark.slow]
CASES = [
    pytest.param(
        fabric, load, id=f"{fabric}-{load}", marks=MATRIX if fabric == DEEP["name"] else ()
    )
    for fabric in KNEE
    for load in LOADS
    # the 2-VC-per-class torus at stages 1 and the mesh past the knee are not run
    if fabric == DEEP["name"] or load != "past"
]


def vcs_taken(plan, trace, monkeypatch) -> set[int]:
    """The VCs flits of ``trace`` are written into on switch-to-switch links, in the model."""
    taken = set()
    write = FabricModel._write

    def spy(model, s, p, v, flit):
        if model.view.in_link[s][p] is not None:
            taken.add(v)
        write(model, s, p, v, flit)

    monkeypatch.setattr(FabricModel, "_write", spy)
    model_expectations(plan, trace)
    return taken


@pytest.mark.parametrize("fabric, load", CASES)
def test_lockstep_icarus(example, need_sim, cosim_dir, monkeypatch, fabric, load):
    plan = compile_plan(load_spec(SPECS.get(fabric) or example(fabric)))
    link_vcs = 2 if fabric == "mesh-4x4" else 4
    assert {link.vcs for link in plan.links} == {link_vcs}
    config = TrafficConfig(rate=min(1.0, KNEE[fabric] * LOADS[load]), packet_length=(1, 6))
    trace = traffic_trace(plan, config, 400, seed=zlib.crc32(f"{fabric}/{load}".encode()))
    if load == "near":  # near the knee every VC of every class carries packets
        with monkeypatch.context() as patch:
            assert vcs_taken(plan, trace, patch) == set(range(link_vcs))
    check(cosim(plan, trace, sim=need_sim("icarus"), build_dir=cosim_dir))
