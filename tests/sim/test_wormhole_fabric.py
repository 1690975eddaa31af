"""A plan in the terms of the thesis's chapter 4 and 5 models (sim/wormhole_fabric.py): the
switch contract's cycles against the analysis's own zero-load latency, the VC counts, refusals."""

from __future__ import annotations

import pytest
from zfabric.sim.analytic import pattern_limits
from zfabric.sim.traffic import TrafficConfig
from zfabric.sim.wormhole_fabric import fabric_model

from zfabric import SpecError, compile_plan, load_spec


def plan(topology=None, **keys):
    spec = {"name": "t", "topology": topology or {"kind": "torus", "k": [4, 4]}, **keys}
    return compile_plan(load_spec(spec))


@pytest.mark.parametrize(
    "keys",
    [
        {},
        {"router": {"stages": 3}},
        {"router": {"stages": 5}, "buffer_depth": 8},
        {"router": {"head_bits": 2}},  # 4-bit destination ids: 2 head flits
        {"buffer_depth": 2, "packet_length": 9},  # B < 4: the stream moves 2 flits in 4 cycles
        {"topology": {"kind": "mesh", "k": [4, 3]}, "packet_length": 16},
        {"routing": "duato", "packet_length": 7},
    ],
    ids=["default", "stages-3", "stages-5", "head-bits", "short-buffers", "mesh", "duato"],
)
def test_zero_load_is_the_contracts(keys):
    # the model's lone message (M flits, hop cycles a hop, extra cycles) against the analysis's
    # walk of the routing (docs/microarchitecture.md, Consequences): equal for uniform traffic
    fabric = plan(**keys)
    model = fabric_model(fabric, "torus")
    config = TrafficConfig(packet_length=fabric.packet_length)
    assert model.zero_load() == pytest.approx(pattern_limits(fabric, config).zero_load_latency)
    assert model.latency(1e-6).latency == pytest.approx(model.zero_load(), rel=1e-4)


def test_vcs_and_usable_vcs():
    # dor: a torus link carries 2 x vcs, a hop takes one dateline class; a mesh link vcs, all
    # usable. duato: the escape VCs (dor's), then adaptive_vcs, one escape class a hop
    cases = [
        ({"topology": {"kind": "torus", "k": [4, 4], "vcs": 2}}, ("dor", 4, 2, 0)),
        ({"topology": {"kind": "mesh", "k": [4, 4], "vcs": 2}}, ("dor", 2, 2, 0)),
        ({"routing": "duato"}, ("duato", 4, 2, 1)),
        ({"routing": {"name": "duato", "adaptive_vcs": 1}}, ("duato", 3, 1, 1)),
        ({"topology": {"kind": "mesh", "k": [4, 4]}, "routing": "duato"}, ("duato", 3, 2, 1)),
    ]
    for keys, (model, vcs, usable, escape) in cases:
        found = fabric_model(plan(**keys), "torus")
        assert (found.model, found.vcs, found.usable, found.escape_usable) == (
            model,
            vcs,
            usable,
            escape,
        ), keys


def test_thesis_timing_is_the_unit_cycle_router():
    # M + d̄ on a 4-ary 2-cube: a ring of 4 offsets 0..3 is 0, 1, 2, 1 hops, 1 a node on
    # average, so 2 a node over 16 destinations with itself, 2 x 16/15 over the other 15
    model = fabric_model(plan(packet_length=16), "torus", timing="thesis")
    assert model.zero_load() == pytest.approx(16 + 32 / 15)
    assert model.usable == model.vcs - 1  # (4.29)


def test_refusals_name_the_key():
    with pytest.raises(SpecError, match="topology.kind.*not kary_ntree"):
        spec = load_spec({"name": "z", "topology": {"kind": "kary_ntree", "k": 2, "n": 2}})
        fabric_model(compile_plan(spec), spec.kind)
    with pytest.raises(SpecError, match="routing.datelines"):
        fabric_model(plan(routing={"name": "dor", "datelines": False}), "torus")
    with pytest.raises(SpecError, match="--model.*routes by dor"):
        fabric_model(plan(), "torus", model="duato")
