"""The Transit thesis's locality traffic (A. DeHon, "Fat-Tree Routing for Transit", 1990, §4.5).

Expected values: the thesis's Tables 4.10-4.14 (P_any per level and the P_particular it prints
beside it), the number of processors at each distance (N_leaf - 1 inside a leaf, 3 * 4^(n-1)
(* N_leaf in a hybrid) at level n), and the two readings of the tables that do not sum to 1,
derived by hand. The generator is checked by a chi-square test with a fixed seed.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from functools import cache

import pytest
from zfabric.sim.traffic import (
    TrafficConfig,
    destination_function,
    fabric_levels,
    level_counts,
    pair_level,
    pattern_flows,
)

from zfabric import compile_plan
from zfabric.errors import SpecError
from zfabric.spec import spec_from_dict
from zfabric.traffic_spec import LOCALITY_PRESETS, locality, locality_probabilities


@cache
def transit(form: str, **keys):
    """A built plan (a tuple stands for the spec's list, so that plans are cached)."""
    keys = {key: list(value) if isinstance(value, tuple) else value for key, value in keys.items()}
    return compile_plan(
        spec_from_dict({"name": "t", "topology": {"kind": "transit", "form": form, **keys}})
    )


def test_transit_levels_are_the_theses_distances():
    """Destinations per level: 3 * 4^(n-1) in a full tree; N_leaf - 1 in the leaf (the
    thesis's n = 0), then 3 * 4^(n-1) * N_leaf; a capped copy level of 3 x 768; a bidelta one."""
    assert level_counts(fabric_levels(transit("full")), 64) == [3, 12, 48]
    assert level_counts(fabric_levels(transit("full", ut_layers=2)), 4096) == [
        3 * 4**n for n in range(6)
    ]
    assert level_counts(fabric_levels(transit("hybrid", leaf_stages=2)), 768) == [
        11, 36, 144, 576
    ]  # fmt: skip
    capped = transit("hybrid", leaf_stages=2, cap=True)
    assert level_counts(fabric_levels(capped), 3072)[-1] == 3 * 768
    assert fabric_levels(transit("bidelta", stacks=(3,))) == (64,)


@pytest.mark.parametrize("form, keys", [("full", {}), ("hybrid", {"leaf_stages": 2})])
def test_a_pairs_level_is_where_its_route_crosses_over(form, keys):
    """The traffic's level of a pair is the routing's crossover level (+ 1 in a hybrid,
    whose leaf is level 1)."""
    from zfabric.plan import PlanView
    from zfabric.routing import make_routing
    from zfabric.routing.transit import crossover_level

    plan = transit(form, **keys)
    rf = make_routing(PlanView(plan))
    zones = fabric_levels(plan)
    for src in range(0, len(plan.endpoints), 5):
        for dst in range(len(plan.endpoints)):
            if src != dst:
                k = crossover_level(rf.addresses[src][0], rf.addresses[dst][0])
                assert pair_level(src, dst, zones) == k + (form == "hybrid")


# ---- the thesis's tables ------------------------------------------------------------------------

#: preset -> the zones of its network, and the P_particular column the thesis prints
PRINTED = {
    "transit-full-64": ((4,) * 3, [0.111, 2.78e-2, 6.94e-3]),
    "transit-full-4096": ((4,) * 6, [9.27e-2, 2.32e-2, 5.79e-3, 2.88e-4, 7.20e-5, 1.80e-5]),
    "transit-full-262144": (
        (4,) * 9,
        [9.13e-2, 2.28e-2, 5.71e-3, 1.65e-4, 4.13e-5, 1.03e-5, 8.62e-7, 2.16e-7, 5.39e-8],
    ),
    # Table 4.13 and 4.14's B12 column
    "transit-hybrid-1": ((12,) + (4,) * 3, [6.82e-2, 2.31e-3, 5.78e-4, 1.45e-4]),
    "transit-hybrid-2": (
        (12,) + (4,) * 6,
        [6.82e-2, 1.93e-3, 4.83e-4, 1.21e-4, 3.02e-5, 7.54e-6, 1.89e-6],
    ),
}


@pytest.mark.parametrize("name", PRINTED)
def test_presets_give_the_printed_p_particular(name):
    """P_particular(n) = P_any(n) / (processors at distance n), each to the printed three
    digits, from the preset's printed P_any."""
    zones, printed = PRINTED[name]
    printed_any = LOCALITY_PRESETS[name][0]
    counts = level_counts(zones, math.prod(zones))
    for p_any, count, expected in zip(printed_any, counts, printed, strict=True):
        assert p_any / count == pytest.approx(expected, rel=6e-3)


def test_the_tables_that_do_not_sum_to_one_are_kept_in_two_readings():
    """Table 4.12 sums to 0.949, Table 4.14 to 1.167. As printed, scaled as a whole; and with
    the first unit-tree stage kept: Table 4.14's levels 4-6 (1 - 0.75 - 3 x 0.0695) / 3 =
    0.013833, Table 4.12's levels 4-9 the remainder 1 - 3 x 0.274 = 0.178 in the ratio
    0.0317 : 0.0106."""
    assert sum(LOCALITY_PRESETS["transit-full-262144"][0]) == pytest.approx(0.9489)
    assert sum(LOCALITY_PRESETS["transit-hybrid-2"][0]) == pytest.approx(1.167)
    scaled = locality_probabilities("transit-hybrid-2")
    assert scaled[0] == pytest.approx(0.75 / 1.167) and sum(scaled) == pytest.approx(1)
    upper = locality_probabilities("transit-hybrid-2-upper")
    assert upper[:4] == pytest.approx((0.75,) + (0.0695,) * 3)
    assert upper[4:] == pytest.approx((0.013833,) * 3, abs=1e-6)
    upper = locality_probabilities("transit-full-262144-upper")
    assert upper[:3] == pytest.approx((0.274,) * 3)
    assert upper[3] == pytest.approx(0.178 / 3 * 0.0317 / (0.0317 + 0.0106))
    assert upper[6] == pytest.approx(0.178 / 3 * 0.0106 / (0.0317 + 0.0106))
    for name in LOCALITY_PRESETS:
        assert sum(locality_probabilities(name)) == pytest.approx(1)


@pytest.mark.parametrize(
    "value, message",
    [
        ([0.5, 0.4], "must sum to 1 (within 0.005), got 0.9"),
        ([0.5, 0.6], "must sum to 1"),
        ([1.5], "must be"),
        ("transit-full-65", "must be one of transit-full-64"),
        ([], "must be a preset name or a list"),
    ],
)
def test_bad_locality_is_refused_naming_the_key(value, message):
    with pytest.raises(SpecError) as caught:
        locality(value, "traffic.locality")
    assert caught.value.path.startswith("traffic.locality")
    assert message in caught.value.message


def test_a_sum_within_the_tolerance_is_taken_and_scaled():
    assert locality([0.333, 0.333, 0.333], "p") == (0.333, 0.333, 0.333)
    assert locality_probabilities((0.333, 0.333, 0.333)) == pytest.approx((1 / 3,) * 3)


# ---- the generator --------------------------------------------------------------------------


def chi_square_limit(freedom: int, z: float = 3.09) -> float:
    """The chi-square distribution's upper 0.1 % point (z = 3.09), by Wilson and Hilferty's
    approximation (1931), within a few per cent for 10 or more degrees of freedom."""
    return freedom * (1 - 2 / (9 * freedom) + z * math.sqrt(2 / (9 * freedom))) ** 3


@pytest.mark.parametrize(
    "form, keys, preset, source",
    [
        ("full", {}, "transit-full-64", 37),
        ("hybrid", {"leaf_stages": 2}, "transit-hybrid-1", 500),
    ],
)
def test_drawn_destinations_follow_p_particular(form, keys, preset, source):
    """100 000 destinations from one source (seed 11): each level's share within 4 binomial
    standard deviations of P_any, and the destinations' counts against P_particular under the
    chi-square test's 0.1 % point (a correct generator fails it once in a thousand seeds)."""
    plan = transit(form, **keys)
    n, zones = len(plan.endpoints), fabric_levels(plan)
    probabilities = locality_probabilities(preset)
    config = TrafficConfig(pattern="locality", zones=zones, level_weights=probabilities)
    draw = destination_function(config, n, random.Random(11))
    draws = 100_000
    drawn = Counter(draw(source) for _ in range(draws))
    assert source not in drawn
    counts = level_counts(zones, n)
    by_level = Counter()
    for dst, seen in drawn.items():
        by_level[pair_level(source, dst, zones)] += seen
    for level, p in enumerate(probabilities, 1):
        sd = math.sqrt(draws * p * (1 - p))
        assert abs(by_level[level] - draws * p) < 4 * sd, (level, by_level)
    statistic = 0.0
    for dst in range(n):
        if dst != source:
            level = pair_level(source, dst, zones)
            expected = draws * probabilities[level - 1] / counts[level - 1]
            statistic += (drawn[dst] - expected) ** 2 / expected
    assert statistic < chi_square_limit(n - 2), statistic


def test_flows_are_p_particular():
    """The flows the analysis reads: P_any(n) / (processors at distance n) for every pair."""
    plan = transit("full")
    zones = fabric_levels(plan)
    config = TrafficConfig(
        pattern="locality", zones=zones, level_weights=locality_probabilities("transit-full-64")
    )
    flows = pattern_flows(config, 64)
    assert len(flows) == 64 * 63
    by_level = {1: 1 / 3 / 3, 2: 1 / 3 / 12, 3: 1 / 3 / 48}
    for (src, dst), share in flows.items():
        assert share == pytest.approx(by_level[pair_level(src, dst, zones)])


def test_the_config_refuses_probabilities_that_do_not_sum_to_one():
    with pytest.raises(ValueError, match="summing to 1"):
        TrafficConfig(pattern="locality", zones=(4, 4), level_weights=(0.5, 0.4))
    with pytest.raises(ValueError, match="needs a fabric with levels"):
        TrafficConfig(pattern="locality", level_weights=(1.0,))


# ---- both engines, and the command line ---------------------------------------------------------


@pytest.mark.parametrize("rate", [0.1, 0.45, 0.9])
def test_both_engines_run_locality_in_lockstep(rate):
    """The fast engine is offered the same packets as the reference model, cycle for cycle."""
    from lockstep import lockstep, spec

    traffic = {
        "pattern": "locality",
        "zones": (4, 4, 4),
        "level_weights": locality_probabilities("transit-full-64"),
    }
    router = {"stages": 1, "selection": "round-robin"}
    shown = lockstep(spec("transit-full", router), rate, traffic=traffic)
    assert shown["delivered"] > 10


def write(tmp_path, topology: dict, traffic: dict) -> str:
    path = tmp_path / "spec.yaml"
    path.write_text(str({"name": "loc", "topology": topology, "traffic": traffic}))
    return str(path)


FULL_64 = {"kind": "transit", "form": "full"}


def test_locality_from_the_spec_reaches_the_run(tmp_path, capsys):
    """The mean hop count under Table 4.10: a third of the packets each 1, 2 and 3 hops."""
    import json

    from zfabric.cli import main

    path = write(tmp_path, FULL_64, {"pattern": "locality", "locality": "transit-full-64"})
    args = ["simulate", path, "--rate", "0.1", "--cycles", "2000", "--warmup", "0", "--json"]
    assert main(args) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["inputs"]["pattern"], report["inputs"]["locality"]) == (
        "locality",
        "transit-full-64",
    )
    assert report["average_hops"] == pytest.approx(2, abs=0.1)


@pytest.mark.parametrize(
    "traffic, flags, line",
    [
        (
            {"pattern": "locality", "locality": [0.5, 0.4, 0.05]},
            [],
            "zfabric: error: traffic.locality: the probabilities must sum to 1 (within 0.005),"
            " got 0.95: [0.5, 0.4, 0.05]",
        ),
        (
            {"pattern": "locality", "locality": "transit-full-4096"},
            [],
            "zfabric: error: traffic.locality: gives 6 levels, and loc has 3 (level 1 first:"
            " zones [4, 4, 4])",
        ),
        (
            {"pattern": "locality"},
            [],
            "zfabric: error: traffic.pattern: 'locality' needs the probability of each level:"
            " traffic.locality or --locality (a list, or a preset)",
        ),
        (
            {},
            ["--traffic", "locality", "--locality", "0.2,0.2"],
            "zfabric simulate: error: argument --locality: the probabilities must sum to 1"
            " (within 0.005), got 0.4: [0.2, 0.2]",
        ),
    ],
)
def test_bad_locality_exits_2_with_one_line(tmp_path, capsys, traffic, flags, line):
    from zfabric.cli import main

    path = write(tmp_path, FULL_64, traffic)
    with pytest.raises(SystemExit) if flags else _no_exit() as exited:
        status = main(["simulate", path, *flags])
    if flags:
        status = exited.value.code
    captured = capsys.readouterr()
    assert status == 2 and captured.out == ""
    assert captured.err.strip().splitlines()[-1] == line


class _no_exit:
    """A context that expects nothing (argparse's errors exit, the spec's return 2)."""

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


def test_a_fabric_without_levels_is_refused(tmp_path, capsys):
    from zfabric.cli import main

    path = write(
        tmp_path, {"kind": "torus", "k": [4, 4]}, {"pattern": "locality", "locality": [1.0]}
    )
    assert main(["simulate", path]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("zfabric: error: traffic.pattern: 'locality'")
