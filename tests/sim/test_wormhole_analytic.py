"""App. A1 (Ould-Khaoua) latency model with the thesis's new VC method against Table 3.1, and its
building blocks against closed forms (reference/wormhole-models.md §2.0, §2.1, §4.1, §7)."""

from __future__ import annotations

import math
import random

import pytest
from zfabric.sim.wormhole_analytic import (
    dally_vc_probabilities,
    draper_ghosh_scv,
    mg1_number_in_system,
    multiplexing_factor,
    new_vc_probabilities,
    ould_khaoua_latency,
    saturation_rate,
)

# Table 3.1 configuration (§4.1): 8-ary 2-cube, unidirectional formulation, V=5, M=16
K, N, V, M = 8, 2, 5, 16

# reference/wormhole-models.md §4.1, Table 3.1 (thesis L959-969): λ_g -> simulated mean latency
TABLE_3_1 = [
    (0.0001, 23.348),
    (0.0005, 24.37),
    (0.001, 25.819),
    (0.002, 29.332),
    (0.0025, 31.268),
    (0.004, 37.365),
    (0.005, 41.57),
    (0.006, 44.32),
]


def latency(rate, method="new", **options):
    prediction = ould_khaoua_latency(K, N, V, M, rate, method, **options)
    assert prediction is not None, f"model saturated at λ={rate}"
    return prediction.latency


@pytest.mark.parametrize(
    "rate, simulated", TABLE_3_1, ids=[f"lambda={rate}" for rate, _ in TABLE_3_1]
)
def test_new_method_reproduces_table_3_1_within_10_percent(rate, simulated):
    assert latency(rate) == pytest.approx(simulated, rel=0.10)


@pytest.mark.parametrize("rate, excess", [(0.005, 0.20), (0.006, 0.40)], ids=["0.005", "0.006"])
def test_dally_method_overshoots_table_3_1(rate, excess):
    # §7 check 7: only the VC probabilities differ, and Dally's drift away at heavy load
    simulated = dict(TABLE_3_1)[rate]
    assert latency(rate, "dally") > (1 + excess) * simulated
    assert latency(rate, "dally") > latency(rate, "new")


def test_zero_load_limit_is_message_length_plus_mean_hops():
    # §1.1 / §7 check 6: unidirectional k̄ = (k-1)/2, so M + d̄ = 16 + 7
    assert latency(0.0) == 23.0
    assert latency(1e-7) == pytest.approx(M + N * (K - 1) / 2, abs=1e-3)
    prediction = ould_khaoua_latency(K, N, V, M, 1e-7)
    assert prediction.multiplexing == pytest.approx(1.0, abs=1e-5)


def test_latency_grows_monotonically_with_load():
    rates = [i * 0.0002 for i in range(36)]  # 0 .. 0.007, the knee is near 0.00714
    curves = {method: [latency(r, method) for r in rates[:31]] for method in ("new", "dally")}
    curves["new"] += [latency(r) for r in rates[31:]]
    for curve in curves.values():
        assert all(b > a for a, b in zip(curve, curve[1:], strict=False))


def test_saturation_is_reported_past_the_knee():
    knee = saturation_rate(K, N, V, M)
    assert 0.006 < knee < 0.0176  # above Table 3.1's last point, below λ_c M = 1 (§4.1)
    assert ould_khaoua_latency(K, N, V, M, 0.99 * knee) is not None
    for rate in (1.01 * knee, 0.01, 0.02, 0.5):
        assert ould_khaoua_latency(K, N, V, M, rate) is None
    # a lower iteration cap must report saturation rather than loop: near the fold the
    # fixed point converges slowly
    assert ould_khaoua_latency(K, N, V, M, 0.9999 * knee, max_iterations=5) is None


def test_saturation_moves_with_message_length_and_vcs():
    # §7 check 8, in a small network so that bisection stays fast
    assert saturation_rate(5, 2, 3, 32) < saturation_rate(5, 2, 3, 16)
    assert saturation_rate(5, 2, 3, 16) < saturation_rate(5, 2, 5, 16)


def test_escape_factor_of_one_is_slightly_lower():
    # §6 erratum 8: 2 P_{V-1}/V as printed (default) vs the physically correct 1 P_{V-1}/V
    printed, corrected = latency(0.006), latency(0.006, pd_escape_factor=1)
    assert corrected < printed < 1.01 * corrected


def test_rejects_configurations_outside_the_model():
    with pytest.raises(ValueError):
        ould_khaoua_latency(8, 2, 2, 16, 0.001)  # Duato needs V >= 3
    with pytest.raises(ValueError):
        ould_khaoua_latency(8, 2, 5, 16, 0.001, "markov")


# ---- building blocks (§2.0 B3, B5; §7 checks 1, 2) --------------------------------------------


def test_new_method_with_exponential_service_is_dally():
    rng = random.Random(3)
    for _ in range(50):
        vcs, rho, service = rng.randint(1, 10), rng.uniform(0.01, 0.95), rng.uniform(1, 100)
        rate = rho / service
        new = new_vc_probabilities(rate, service, vcs, 1.0, exponential=True)
        dally = dally_vc_probabilities(rate, service, vcs)
        assert new == pytest.approx(dally, abs=1e-12)
        assert math.fsum(dally) == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize("scv", [0.0, 0.05, 0.3, 0.5, 0.8, 1.0, 2.5], ids=lambda c: f"C2={c}")
def test_mg1_distribution_has_the_pollaczek_khinchine_mean(scv):
    rate, mean = 0.03, 20.0
    rho = rate * mean
    pi = mg1_number_in_system(rate, mean, scv, 400)
    assert pi[0] == pytest.approx(1 - rho)
    assert math.fsum(pi) == pytest.approx(1.0, abs=1e-9)
    second_moment = mean * mean * (1 + scv)
    expected = rho + rate * rate * second_moment / (2 * (1 - rho))
    assert math.fsum(i * p for i, p in enumerate(pi)) == pytest.approx(expected, rel=1e-7)


def test_multiplexing_factor():
    assert multiplexing_factor([1.0, 0.0, 0.0]) == 1.0  # no busy VC: limit 1
    assert multiplexing_factor([0.0, 0.0, 1.0]) == 2.0  # always two busy VCs share the channel
    assert multiplexing_factor([0.5, 0.25, 0.25]) == pytest.approx((0.25 + 1.0) / (0.25 + 0.5))


def test_draper_ghosh_scv():
    assert draper_ghosh_scv(23.0, 16) == pytest.approx((7 / 23) ** 2)
    assert draper_ghosh_scv(16.0, 16) == 0.0
