"""Pattern-aware analytic limits and the saturation verdict, against bounds derived by hand.

Rings under DOR with ties toward + (`tie: plus`, docs/specs.md), one endpoint per switch,
endpoint i on switch i. A flow from s with ring offset d (1 <= d < k) goes + when d <= k/2,
else - .
"""

from __future__ import annotations

import collections
import dataclasses
import math

import pytest
from zfabric.sim.analytic import channel_load, pattern_limits, uniform_channel_load
from zfabric.sim.measure import LATENCY_FACTOR, simulate
from zfabric.sim.traffic import Traffic, TrafficConfig, pattern_flows

from zfabric import compile_plan, load_spec


def ring(k: int, tie: str = "plus", **router):
    spec = {"topology": {"kind": "torus", "k": [k]}, "routing": {"name": "dor", "tie": tie}}
    return compile_plan(load_spec({**spec, "router": router} if router else spec))


def limits(fabric, pattern: str, **options):
    return pattern_limits(fabric, TrafficConfig(pattern=pattern, **options))


@pytest.mark.parametrize("k", [4, 6, 8])
def test_uniform_bound_on_an_even_ring(k):
    # a + link is crossed by the d flows of offset d, d = 1 .. k/2 (ties +): k/2 (k/2 + 1) / 2
    # flows of share 1 / (k - 1) each (k = 8: 10 flows, reference/wormhole-models.md §6.11)
    load = (k // 2) * (k // 2 + 1) / 2 / (k - 1)
    assert uniform_channel_load(ring(k)).max_load == pytest.approx(load)
    assert uniform_channel_load(ring(k)).bound == pytest.approx(min(1.0, 1 / load))


@pytest.mark.parametrize("k", [4, 6, 8])
def test_uniform_bound_on_an_even_ring_with_alternate_ties(k):
    # offsets d < k/2 as above: (k/2 - 1) k/2 / 2 flows; the k/2 sources whose tied flow
    # (offset k/2) crosses a + link are consecutive, and only the even ones go +: at most
    # ceil(k/4) of them
    load = ((k // 2 - 1) * (k // 2) / 2 + math.ceil(k / 4)) / (k - 1)
    assert uniform_channel_load(ring(k, tie="alternate")).max_load == pytest.approx(load)


def test_bit_complement_bound_is_the_bisection_bound():
    # 8 endpoints, 3 bits: every flow crosses the cut between {0..3} and {4..7}, which has 2
    # links each way: 8 r <= 4, r <= 1/2. On the 8x8 torus each dimension is such a ring.
    for fabric in (ring(8), compile_plan(load_spec({"topology": {"kind": "torus", "k": [8, 8]}}))):
        assert limits(fabric, "bit-complement").channel_load.bound == pytest.approx(0.5)


def test_tornado_and_neighbour_bounds():
    # tornado on 8: offset ceil(8/2) - 1 = 3, all +: each + link carries 3 flows -> 1/3
    assert limits(ring(8), "tornado").channel_load.bound == pytest.approx(1 / 3)
    # neighbour: one flow per + link -> only injection binds
    assert limits(ring(8), "neighbour").channel_load.bound == 1.0


def test_hotspot_bound_is_set_by_the_hot_endpoint():
    # endpoint 0 receives 0.2 + 0.8/7 of each of the 7 others' packets: 1.4 + 0.8 = 2.2
    bound = limits(ring(8), "hotspot", hotspot_fraction=0.2).channel_load
    assert bound.ejection_load == pytest.approx(2.2)
    assert bound.bound == pytest.approx(1 / 2.2)
    assert "ejection" in bound.limited_by


def test_zero_load_latency_uses_the_patterns_own_hops():
    fabric = ring(8)
    # 2 H + L + 2 with L = 4. uniform: offsets 1..7 take 1,2,3,4,3,2,1 hops: H = 16/7.
    assert limits(fabric, "uniform").zero_load_latency == pytest.approx(2 * 16 / 7 + 6)
    # bit-complement: src -> 7 - src, offsets 7,5,3,1,7,5,3,1: hops 1,3,3,1,1,3,3,1: H = 2
    assert limits(fabric, "bit-complement").zero_load_latency == pytest.approx(10)
    assert limits(fabric, "tornado").zero_load_latency == pytest.approx(2 * 3 + 6)
    assert limits(fabric, "neighbour").zero_load_latency == pytest.approx(2 * 1 + 6)
    # a distribution of lengths uses its mean: neighbour with 2..8 flits -> 2 + 5 + 2
    config = TrafficConfig(pattern="neighbour", packet_length=(2, 8))
    assert pattern_limits(fabric, config).zero_load_latency == pytest.approx(9)


def test_zero_load_latency_follows_the_pipeline_depth():
    # stages: 2 routes a head in a cycle of its own at each of the H + 1 switches:
    # 3 H + L + 3 (docs/microarchitecture.md); uniform on an 8-ring has H = 16/7
    fabric = ring(8, stages=2)
    assert limits(fabric, "uniform").zero_load_latency == pytest.approx(3 * 16 / 7 + 7)
    assert limits(fabric, "neighbour").zero_load_latency == pytest.approx(3 * 1 + 7)


@pytest.mark.parametrize("pattern", ["zipf", "hotspot", "uniform", "transpose"])
def test_pattern_flows_are_what_the_generator_draws(pattern):
    n, draws = 8, 40_000
    config = TrafficConfig(pattern=pattern, rate=1.0, packet_length=1)
    flows = pattern_flows(config, n, seed=5)
    traffic = Traffic(config, n, seed=5)
    counts = collections.Counter()
    sent = collections.Counter()
    for cycle in range(draws // n):
        for src, dst, _ in traffic.packets_at(cycle):
            counts[(src, dst)] += 1
            sent[src] += 1
    for (src, dst), share in flows.items():
        assert counts[(src, dst)] / sent[src] == pytest.approx(share, abs=0.03), (src, dst)
    assert set(counts) <= set(flows)


def test_channel_load_of_explicit_flows():
    # one flow 0 -> 2 on the 8-ring: two + links at load 1, bound 1 (injection)
    load = channel_load(ring(8), {(0, 2): 1.0})
    assert load.max_load == pytest.approx(1.0) and load.bound == 1.0


def test_a_rate_over_the_bound_is_never_stable():
    # bit-complement on the 8-ring at 0.52 (over the 0.5 bisection bound): however the short
    # window looks, the verdict is saturated and names the bound
    fabric = ring(8)
    traffic = Traffic(TrafficConfig(pattern="bit-complement", rate=0.52), 8, seed=1)
    result = simulate(fabric, traffic, warmup=200, cycles=1000)
    assert result.saturated and "channel-load bound 0.500" in result.saturation_reason
    below = Traffic(TrafficConfig(pattern="bit-complement", rate=0.2), 8, seed=1)
    result = simulate(fabric, below, warmup=200, cycles=2000)
    assert not result.saturated and result.saturation_reason is None
    assert result.limits["bound"] == pytest.approx(0.5)


def test_an_adaptive_split_is_no_bound():
    # duato on the 4x4 mesh offers both productive directions, and the analysis splits flows
    # equally over them: one way to route, not a bound. Proven: the endpoints' limits alone;
    # bit-complement is a permutation (each endpoint receives one source's packets): 1.0
    mesh = compile_plan(
        load_spec({"topology": {"kind": "mesh", "k": [4, 4]}, "routing": {"name": "duato"}})
    )
    split = limits(mesh, "bit-complement").channel_load
    assert split.spread and split.bound < 1.0 and split.proven == 1.0
    # the hot endpoint of 16 receives 0.2 + 0.8/15 of each of the 15 others' packets: 3.8
    hot = limits(mesh, "hotspot", hotspot_fraction=0.2).channel_load
    assert hot.spread and hot.proven == pytest.approx(1 / 3.8)
    # DOR gives every flow one path: its figure is the bound (0.5, as above)
    dor = limits(ring(8), "bit-complement").channel_load
    assert not dor.spread and dor.proven == dor.bound == pytest.approx(0.5)


@pytest.mark.parametrize("spread", [False, True])
def test_the_verdict_reads_the_proven_bound(spread):
    # uniform at 0.1 on the 8-ring, judged against a made-up figure of 0.05: a bound when
    # every flow has one path (saturated, named), no bound when flows are spread (stable)
    fabric = ring(8)
    config = TrafficConfig(rate=0.1)
    real = pattern_limits(fabric, config)
    made = dataclasses.replace(
        real, channel_load=dataclasses.replace(real.channel_load, bound=0.05, spread=spread)
    )
    result = simulate(fabric, Traffic(config, 8, seed=1), warmup=200, cycles=1000, limits=made)
    assert result.saturated is not spread
    if not spread:
        assert result.saturation_reason.startswith("offered rate 0.1 is above the channel-load")


def test_latency_criterion_marks_a_congested_point():
    # torus-4x4 uniform at 0.9: under the 1.0 bound, but latency explodes past 3x zero-load
    fabric = compile_plan(load_spec({"topology": {"kind": "torus", "k": [4, 4]}}))
    traffic = Traffic(TrafficConfig(rate=0.9), 16, seed=1)
    result = simulate(fabric, traffic, warmup=300, cycles=1500, drain_limit=200)
    assert result.saturated and result.deadlock is None
    assert result.latency["mean"] > LATENCY_FACTOR * result.limits["zero_load_latency"]
    assert f"over {LATENCY_FACTOR:g} x zero-load" in result.saturation_reason
