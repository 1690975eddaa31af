"""Sweeps: coarse rates up to the first saturated point, then bisection of the knee."""

from __future__ import annotations

import pytest
from zfabric.sim.sweep import knee, sweep
from zfabric.sim.traffic import TrafficConfig

from zfabric import compile_plan, load_spec

RING = {"topology": {"kind": "torus", "k": [8]}}


def test_the_knee_is_bracketed_to_the_tolerance_below_the_bound():
    plan = compile_plan(load_spec(RING))
    calls = []
    rates = [0.2, 0.4, 0.6, 0.8]
    points = sweep(
        plan,
        TrafficConfig(pattern="bit-complement"),
        rates,
        warmup=200,
        cycles=1000,
        tolerance=0.01,
        progress=lambda done, total: calls.append((done, total)),
    )
    assert [p["rate"] for p in points] == sorted(p["rate"] for p in points)
    coarse = [p for p in points if p["rate"] in rates]
    assert coarse[-1]["saturated"] and not any(p["saturated"] for p in coarse[:-1])
    assert 0.8 not in [p["rate"] for p in points]  # nothing past the first saturated rate
    found = knee(points)
    first_saturated = min(p["rate"] for p in points if p["saturated"])
    assert 0 < first_saturated - found <= 0.01
    # over the 0.5 bisection bound of bit-complement on an 8-ring nothing is stable
    assert found <= 0.5 and all(p["saturated"] for p in points if p["rate"] > 0.5)
    assert calls[-1] == (len(points), len(points))
    assert [done for done, _ in calls] == list(range(1, len(points) + 1))


def test_a_sweep_that_never_saturates_runs_the_coarse_rates_only():
    plan = compile_plan(load_spec(RING))
    points = sweep(plan, TrafficConfig(), [0.05, 0.1], warmup=100, cycles=600)
    assert [p["rate"] for p in points] == [0.05, 0.1]
    assert knee(points) == 0.1


def test_a_sweep_stops_on_a_deadlock():
    spec = {
        "topology": {"kind": "ndt", "k": [3, 3, 3], "ports": ["d0+", "d1+", "d2+"]},
        "routing": {"name": "dort", "rings": "shared"},
        "router": {"injection_vcs": 1},  # as tests/sim/test_model.py's PARTIAL
    }
    plan = compile_plan(load_spec(spec))
    points = sweep(plan, TrafficConfig(), [0.9, 1.0], warmup=200, cycles=2000)
    assert len(points) == 1 and points[0]["deadlock"]["partial"]


def test_bad_arguments():
    plan = compile_plan(load_spec(RING))
    with pytest.raises(ValueError, match="at least one rate"):
        sweep(plan, TrafficConfig(), [])
    with pytest.raises(ValueError, match="tolerance must be positive, got 0"):
        sweep(plan, TrafficConfig(), [0.1], tolerance=0)
