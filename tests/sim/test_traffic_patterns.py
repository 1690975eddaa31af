"""Traffic patterns: hand-derived destinations, rates, and the trace format."""

from __future__ import annotations

import math
import random
import re
from collections import Counter

import pytest
from zfabric.sim.traffic import (
    PATTERNS,
    TraceEntry,
    Traffic,
    TrafficConfig,
    destination_function,
    flows_by_destination,
    level_counts,
    pair_level,
    pattern_flows,
    read_trace,
    write_trace,
)


def dst_table(pattern, n, **options):
    fn = destination_function(TrafficConfig(pattern=pattern, **options), n, random.Random(1))
    return [fn(src) for src in range(n)]


def test_permutations_on_16_endpoints():
    # 4-bit ids: transpose swaps the 2-bit halves, reversal reverses, complement inverts
    assert dst_table("transpose", 16)[0b0001] == 0b0100
    assert dst_table("transpose", 16)[0b0110] == 0b1001
    assert dst_table("bit-reversal", 16)[0b0001] == 0b1000
    assert dst_table("bit-reversal", 16)[0b0110] is None  # a palindrome maps onto itself
    assert dst_table("bit-complement", 16) == [15 - i for i in range(16)]
    assert dst_table("shuffle", 16)[0b1001] == 0b0011
    assert dst_table("tornado", 16)[3] == 3 + 8 - 1
    assert dst_table("neighbour", 16)[15] == 0


def test_non_power_of_two_folds_and_skips_fixed_points():
    table = dst_table("bit-complement", 12)  # 4-bit ids; ~x lands in 0..15, folded mod 12
    assert table[0] == 15 % 12 and table[5] == 10
    for pattern in ("transpose", "bit-reversal", "bit-complement", "shuffle"):
        for src, dst in enumerate(dst_table(pattern, 12)):
            assert dst is None or (0 <= dst < 12 and dst != src)


#: weighted-random's levels on the endpoint counts below (Znodes of these zones)
ZONES = {24: (2, 2, 3), 7: (7,), 16: (2, 2, 2)}


def fabric(pattern: str, n: int) -> dict:
    """What a pattern needs of the fabric: weighted, its levels; locality, its levels and
    their probabilities (every level alike)."""
    if pattern == "weighted":
        return {"zones": ZONES[n]}
    if pattern == "locality":
        levels = len(ZONES[n])
        return {"zones": ZONES[n], "level_weights": (1 / levels,) * levels}
    return {}


@pytest.mark.parametrize("pattern", PATTERNS)
def test_every_pattern_gives_valid_destinations(pattern):
    config = TrafficConfig(pattern=pattern, rate=1.0, packet_length=1, **fabric(pattern, 24))
    traffic = Traffic(config, 24, seed=3)
    for cycle in range(50):
        for src, dst, length in traffic.packets_at(cycle):
            assert 0 <= dst < 24 and dst != src and length == 1


@pytest.mark.parametrize("n", [7, 16])
@pytest.mark.parametrize("pattern", PATTERNS)
def test_flows_by_destination_group_the_pattern_flows(pattern, n):
    config = TrafficConfig(pattern=pattern, **fabric(pattern, n))
    groups = list(flows_by_destination(config, n, seed=3))
    assert len({dst for dst, _ in groups}) == len(groups)  # each destination once
    regrouped = {(src, dst): share for dst, sources in groups for src, share in sources.items()}
    assert regrouped == {k: v for k, v in pattern_flows(config, n, seed=3).items() if v > 0}
    if pattern == "uniform":  # every other endpoint, 1 / (n - 1) each
        assert regrouped == {(s, d): 1 / (n - 1) for s in range(n) for d in range(n) if s != d}


@pytest.mark.parametrize("process", ["bernoulli", "poisson"])
def test_offered_rate_matches(process):
    config = TrafficConfig(rate=0.2, packet_length=4, process=process)
    traffic = Traffic(config, 10, seed=5)
    flits = sum(n for c in range(20000) for _, _, n in traffic.packets_at(c))
    assert flits / (20000 * 10) == pytest.approx(0.2, rel=0.05)


def test_hotspot_fraction():
    config = TrafficConfig(pattern="hotspot", rate=1.0, packet_length=1, hotspot_fraction=0.5)
    traffic = Traffic(config, 32, seed=2)
    dsts = [d for c in range(2000) for s, d, _ in traffic.packets_at(c) if s != 0]
    # half to the hotspot, plus the uniform half's 1/30 share of it
    assert dsts.count(0) / len(dsts) == pytest.approx(0.5 + 0.5 / 30, abs=0.02)


def test_zipf_prefers_each_sources_first_rank():
    traffic = Traffic(TrafficConfig(pattern="zipf", rate=1.0, packet_length=1), 8, seed=4)
    counts: dict[int, int] = {}
    for cycle in range(6000):
        for src, dst, _ in traffic.packets_at(cycle):
            if src == 0:
                counts[dst] = counts.get(dst, 0) + 1
    ranked = sorted(counts.values(), reverse=True)
    harmonic = sum(1 / r for r in range(1, 8))
    assert ranked[0] / sum(ranked) == pytest.approx(1 / harmonic, abs=0.03)  # s = 1


def test_trace_round_trip_and_errors(tmp_path):
    entries = [TraceEntry(0, 1, 2, 4), TraceEntry(5, 2, 1, 1)]
    path = tmp_path / "t.trace"
    write_trace(path, entries)
    assert read_trace(path) == entries
    path.write_text("0, 1, 2, 4  # comment\n\n3 1 1 4\n")
    with pytest.raises(ValueError, match=r"t\.trace:3: src equals dst \(1\) in '3 1 1 4'"):
        read_trace(path)
    for line, reason in (("-1 0 1 4", "negative cycle -1"), ("0 0 1 0", "length 0")):
        path.write_text(f"{line}\n")
        with pytest.raises(ValueError, match=rf"t\.trace:1: {reason}"):
            read_trace(path)


def test_bad_config_is_refused():
    with pytest.raises(ValueError, match="unknown traffic pattern"):
        TrafficConfig(pattern="uniformm")
    with pytest.raises(ValueError, match=r"rate must be in \(0, 1\]"):
        TrafficConfig(rate=1.5)
    for length in (0, (5, 3), (0, 2)):
        with pytest.raises(ValueError, match=rf"packet_length .* got {re.escape(str(length))}$"):
            TrafficConfig(packet_length=length)


# ---- weighted-random (the Znode thesis, §5.2.1) -----------------------------------------------


def hoeffding_bound(draws: int, events: int, miss: float = 1e-6) -> float:
    """t with P(some of ``events`` frequencies is off by >= t) <= ``miss`` over ``draws``
    independent draws: Hoeffding gives 2·exp(-2·draws·t²) per event, times ``events``."""
    return math.sqrt(math.log(2 * events / miss) / (2 * draws))


def test_pair_level_reads_the_thesis_examples():
    # 16 processors per Znode, 2 Znodes, labels (p3 p2 p1): z = (4, 2, 2). Processor 2 is
    # (0;002), 3 is (0;003): common level 1; processor 16 is (1;000), peer level 1 with 2
    zones = (4, 2, 2)
    assert pair_level(2, 3, zones) == 1
    assert pair_level(2, 16, zones) == 1
    assert pair_level(2, 6, zones) == 2  # (0;012)
    assert pair_level(2, 10, zones) == 3  # (0;102)
    assert pair_level(2, 26, zones) == 3  # (1;102)


def test_weighted_destinations_follow_the_level_probabilities():
    # a super node of 2 Znodes, z = (2, 2, 3): from any source 3 destinations at level 1
    # (2·2 - 1), 4 at level 2 (2·1·2) and 16 at level 3 (2·2·4); weights normalised
    zones, n, draws = (2, 2, 3), 24, 30000
    config = TrafficConfig(pattern="weighted", zones=zones, level_weights=(2, 3, 5))
    assert level_counts(zones, n) == [3, 4, 16]
    probabilities = [0.2, 0.3, 0.5]
    destination = destination_function(config, n, random.Random(7))
    for src in (0, 13):
        drawn = [destination(src) for _ in range(draws)]
        assert all(0 <= dst < n and dst != src for dst in drawn)
        by_level = Counter(pair_level(src, dst, zones) for dst in drawn)
        bound = hoeffding_bound(draws, 3)
        for level, p in enumerate(probabilities, 1):
            assert abs(by_level[level] / draws - p) < bound, (src, level, by_level)
        # and uniform within a level: each destination at level c with p_c / count_c
        by_destination = Counter(drawn)
        bound = hoeffding_bound(draws, n - 1)
        for dst in range(n):
            if dst != src:
                level = pair_level(src, dst, zones)
                expected = probabilities[level - 1] / level_counts(zones, n)[level - 1]
                assert abs(by_destination[dst] / draws - expected) < bound, (src, dst)


def test_weighted_flows_are_exact():
    # z = (2, 3), 2 Znodes: from 0, level 1 holds 1, 6, 7 (3); level 2 the other 8
    config = TrafficConfig(pattern="weighted", zones=(2, 3), level_weights=(0.25, 0.75))
    flows = pattern_flows(config, 12)
    for dst in (1, 6, 7):
        assert flows[(0, dst)] == pytest.approx(0.25 / 3)
    for dst in (2, 3, 4, 5, 8, 9, 10, 11):
        assert flows[(0, dst)] == pytest.approx(0.75 / 8)
    assert sum(share for (src, _), share in flows.items() if src == 5) == pytest.approx(1)


def test_weighted_default_is_every_level_alike_and_skips_empty_levels():
    # z_1 = 1 on one Znode: level 1 has no destination, so levels 2 and 3 get half each
    config = TrafficConfig(pattern="weighted", zones=(1, 2, 2))
    assert level_counts((1, 2, 2), 4) == [0, 1, 2]
    flows = pattern_flows(config, 4)
    assert flows[(0, 1)] == pytest.approx(0.5)
    assert flows[(0, 2)] == flows[(0, 3)] == pytest.approx(0.25)
    with pytest.raises(ValueError, match="level 1 has no destination"):
        destination_function(
            TrafficConfig(pattern="weighted", zones=(1, 2, 2), level_weights=(1, 1, 1)),
            4,
            random.Random(1),
        )


def test_weighted_needs_levels():
    with pytest.raises(ValueError, match="needs a fabric with levels"):
        TrafficConfig(pattern="weighted")
    with pytest.raises(ValueError, match="must have 2 entries"):
        TrafficConfig(pattern="weighted", zones=(2, 3), level_weights=(1, 2, 3))
