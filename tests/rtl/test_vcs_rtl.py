"""Lock-step co-simulation with several VCs per class: a head may take any VC of its class and
takes the first free one with a credit (docs/microarchitecture.md), in the model and the RTL.

mesh-4x4 (examples/mesh-4x4.yaml: 2 VCs per link, one class) and a 4x4 torus with 2 VCs per
dateline class (4 per link), at low load and near the knee.
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
#: uniform-traffic knee in flits/cycle/endpoint (bench/saturation.py, model, 4-flit packets)
KNEE = {"mesh-4x4": 0.496, "torus-4x4-vcs2": 0.571}
LOADS = {"low": 0.2, "near": 0.9}
CASES = [(fabric, load) for fabric in KNEE for load in LOADS]


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


@pytest.mark.parametrize("fabric, load", CASES, ids=[f"{f}-{load}" for f, load in CASES])
def test_lockstep_icarus(example, need_sim, cosim_dir, monkeypatch, fabric, load):
    spec = TORUS if fabric == TORUS["name"] else example(fabric)
    plan = compile_plan(load_spec(spec))
    link_vcs = 2 if fabric == "mesh-4x4" else 4
    assert {link.vcs for link in plan.links} == {link_vcs}
    config = TrafficConfig(rate=KNEE[fabric] * LOADS[load], packet_length=(1, 6))
    trace = traffic_trace(plan, config, 400, seed=zlib.crc32(f"{fabric}/{load}".encode()))
    if load == "near":  # near the knee every VC of every class carries packets
        with monkeypatch.context() as patch:
            assert vcs_taken(plan, trace, patch) == set(range(link_vcs))
    check(cosim(plan, trace, sim=need_sim("icarus"), build_dir=cosim_dir))
