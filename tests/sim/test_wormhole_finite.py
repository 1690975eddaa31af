"""The thesis's finite-buffer models, chapter 4 (DOR) and chapter 5 (Duato), and their building
blocks (reference/wormhole-models.md §2.0 B4, §2.2, §2.3, §7): values derived by hand in the
comments, closed forms, and the digest's own figures."""

from __future__ import annotations

import math

import pytest
from zfabric.sim.wormhole_analytic import (
    all_busy,
    buffer_blocking,
    finite_queue_distribution,
    mg1_number_in_system,
)
from zfabric.sim.wormhole_dor import dor_latency, dor_saturation_rate
from zfabric.sim.wormhole_duato import duato_latency, duato_saturation_rate, remaining_dimensions
from zfabric.sim.wormhole_finite import Cube, Timing, solve_path, waiting_time

# ---- building blocks -----------------------------------------------------------------------


def test_all_busy_is_the_thesis_counting():
    # P = (P_0..P_3), V = 3. u = 2 (DOR: VC_1 and one escape VC, 4.29):
    #   P_2 C(1,0)/C(3,2) + P_3 C(1,1)/C(3,3) = 0.2/3 + 0.1 = P_V + P_{V-1}/V
    # u = 1 (Duato's one adaptive VC, 5.21): P_1/3 + P_2 2/3 + P_3 = 0.1 + 0.4/3 + 0.1
    # u = 3 (hypercube, 4.47): P_3
    p = [0.4, 0.3, 0.2, 0.1]
    assert all_busy(p, 2) == pytest.approx(0.1 + 0.2 / 3)
    assert all_busy(p, 1) == pytest.approx(0.1 + 2 * 0.2 / 3 + 0.3 / 3)
    assert all_busy(p, 3) == pytest.approx(0.1)
    with pytest.raises(ValueError):
        all_busy(p, 4)


@pytest.mark.parametrize("rho", [0.3, 0.8, 0.95, 1.2])
def test_finite_queue_with_exponential_service_is_mm1k(rho):
    # digest §7 check 3: M/M/1/K closed form p_j = ρ^j (1-ρ) / (1 - ρ^{K+1}), ρ > 1 too
    capacity = 5
    p = finite_queue_distribution(rho / 10.0, 10.0, 1.0, capacity, exponential=True)
    expected = [rho**j * (1 - rho) / (1 - rho ** (capacity + 1)) for j in range(capacity + 1)]
    assert p == pytest.approx(expected, abs=1e-12)


def test_finite_queue_tends_to_the_infinite_one():
    rate, mean, scv = 0.03, 20.0, 0.4
    finite = finite_queue_distribution(rate, mean, scv, 200)
    infinite = mg1_number_in_system(rate, mean, scv, 10)
    assert finite[:10] == pytest.approx(infinite, abs=1e-9)


def test_buffer_blocking_by_hand():
    # M/D/1/3 (F = 2 flits and the one in service): λ̂ = λ_c M = 0.1 x 2 = 0.2 flits/cycle,
    # T̂ = T/M = 2/2 = 1 = T̂_min, so the service is deterministic, α_j = e^-0.2 0.2^j / j!:
    #   α_0 = 0.818731, α_1 = 0.163746
    #   q_0 = 1, q_1 = (1 - α_0)/α_0 = 0.221403, q_2 = (q_1 - α_1 - q_1 α_1)/α_0 = 0.026141
    #   π^d = q / 1.247544 = (0.801575, 0.177471, 0.020954); π^d_0 + ρ = 1.001575
    #   p_0 = 0.800314, p_1 = 0.177192  ->  Υ = 1 - p_0 - p_1 = 0.022494
    assert buffer_blocking(0.1, 2.0, 2.0, 2, 2) == pytest.approx(0.022494, abs=2e-6)
    assert buffer_blocking(0.0, 5.0, 2.0, 2, 2) == 0.0


# ---- the cube --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "cube, mean",
    [
        (Cube((8, 8)), 4.0635),  # digest §7 check 4, exact means over N - 1 destinations
        (Cube((16, 16)), 8.0314),
        (Cube((8, 8, 8)), 6.0117),
        (Cube((8, 8), "unidirectional"), 7.1111),
        (Cube((2,) * 8, "unidirectional"), 4.0157),  # the 8-D hypercube, nN/(2N-2) (5.31)
    ],
    ids=["8x8", "16x16", "8x8x8", "8x8-uni", "hypercube-8"],
)
def test_mean_hops(cube, mean):
    assert cube.mean_hops() == pytest.approx(mean, abs=1e-4)
    assert sum(cube.hop_vectors().values()) == pytest.approx(1.0)


def test_chapter_5_and_6_means_include_the_source():
    # (5.8)-(5.9): k/4 a dimension for even k; (5.29) (k-1)/2 unidirectional; the thesis's
    # 7 (8x8), 15 (16x16), 31 (32x32) and hypercube 3 (N=64) hops (L1884, L1886, L1983)
    assert Cube((8, 8)).mean_hops_with_self() == pytest.approx(4.0)
    assert Cube((3,)).mean_hops_with_self() == pytest.approx((3 - 1 / 3) / 4)
    for k, hops in ((8, 7), (16, 15), (32, 31)):
        assert Cube((k, k), "unidirectional").mean_hops_with_self() == pytest.approx(hops)
    assert Cube((2,) * 6, "unidirectional").mean_hops_with_self() == pytest.approx(3)


def test_channel_rates():
    # (4.17): λ_g/(2n) Σ h P_h on an 8-ary 2-cube; (4.41) λ_g/n Σ h P_h unidirectional
    assert Cube((8, 8)).channel_rates(1.0) == pytest.approx([256 / 63 / 4] * 2)
    assert Cube((8, 8), "unidirectional").mean_channel_rate(1.0) == pytest.approx(448 / 63 / 2)
    # a line of 3 (mesh): pairs at 1 hop 4, at 2 hops 2, mean 4/3; the 3 nodes send
    # 3 x 4/3 = 4 messages' hops a cycle per unit rate over 4 directed channels: λ_c = λ_g
    line = Cube((3,), "mesh")
    assert line.mean_hops() == pytest.approx(4 / 3)
    assert line.channel_rates(0.5) == pytest.approx([0.5])
    assert not line.rings and Cube((2, 2)).rings is False and Cube((3,)).rings


# ---- one path ----------------------------------------------------------------------------------


def test_path_holding_times_follow_the_effective_channels():
    # a 2-hop path, M = 4, F = 2: ⌈M/F⌉ = 2, so A_0 = min(2, 3) = 2, A_1 = min(2, 2) = 2,
    # A_2 = min(2, 1) = 1 (4.2), and at the fixed point (4.24), (4.28), erratum §6.5:
    #   T_3 = 4,  T_2 = 4 + 1 + B_2,  T_1 = 4 + 2 + B_1 + B_2,  T_0 = 4 + 2 + B_1
    # with B_i = θ Υ(λ, T_{i+1}) W(λ, T_i) (4.15), θ = 0.5 here
    rate = 0.05
    path = solve_path([rate, rate], lambda i, t: 0.5, 4, 2, tolerance=1e-13)
    t0, t1, t2, t3 = path.holding
    b1, b2 = path.blocking
    assert t3 == 4
    assert t2 == pytest.approx(5 + b2, rel=1e-12)
    assert t1 == pytest.approx(6 + b1 + b2, rel=1e-12)
    assert t0 == pytest.approx(6 + b1, rel=1e-12)
    for b, t, following in ((b1, t1, t2), (b2, t2, t3)):
        block = buffer_blocking(rate, following, 4, 4, 2) * waiting_time(rate, t, 4)
        assert b == pytest.approx(0.5 * block, rel=1e-9)
    assert b1 > 0 and b2 > 0


def test_path_saturates_when_a_channel_is_full():
    # λ T >= 1 at the initial T_1 = M + A_1 = 6: saturation (L1330), reported, not looped on
    assert solve_path([1 / 6, 1 / 6], lambda i, t: 1.0, 4, 2) is None
    assert solve_path([0.1, 0.1], lambda i, t: 1.0, 4, 2, max_iterations=1) is None


# ---- chapter 4 ----------------------------------------------------------------------------------


def test_chapter_4_by_hand():
    # A bidirectional ring of 3 (n = 1), V = 3, M = 2, F = 2, Dally's P_v (3.6), λ_g = 0.2.
    # Both destinations are 1 hop away: P_1 = 1 (4.5), λ_c = λ_g/(2n) = 0.1 (4.17).
    # ⌈M/F⌉ = 1: A_0 = A_1 = 1 (4.2); T_2 = M = 2 (4.24); T_0 = M + A_0 = 3 (no B terms);
    # T_1 = 3 + B_1 (4.28), B_1 = θ Υ W (4.15):
    #   θ(T) = P_3 + P_2/3 = ρ³ + (1-ρ)ρ²/3 with ρ = λ_c T (4.29)
    #   Υ = 0.022494 (test_buffer_blocking_by_hand: the buffer's service is T_2 = M)
    #   W(T) = 0.1 (T² + (T-2)²) / (2 (1 - 0.1 T)) (4.19)
    # T_1 = 3: θ = 0.027 + 0.7 x 0.09/3 = 0.048, W = 1/1.4 = 0.714286, B_1 = 0.000771212;
    # T_1 = 3.000771: θ = 0.048029, W = 0.714805, B_1 = 0.000772245; then 0.000772246.
    # S_1 = M + h + B_1 = 3.000772 (4.13);
    # W_s = (λ_g/V) T_0² (1 + (T_0-M)²/T_0²) / (2 (1 - λ_g/V T_0)) = (0.2/3)(10)/1.6 = 0.416667
    # V_1 at ρ = 0.1 S_1 = 0.3000772: P = (0.699923, 0.210040, 0.063028, 0.027021),
    #   Σ v P = 0.417159, Σ v² P = 0.705340, V̄ = 1.690831 (4.36)
    # latency = (3.000772 + 0.416667) x 1.690831 = 5.77831 (4.1)
    p = dor_latency(Cube((3,)), 3, 2, 2, 0.2, "dally")
    assert p.channel_rate == pytest.approx(0.1)
    assert p.network_latency == pytest.approx(3.000772, abs=2e-6)
    assert p.source_wait == pytest.approx(0.416667, abs=1e-6)
    assert p.multiplexing == pytest.approx(1.690831, abs=2e-6)
    assert p.latency == pytest.approx(5.77831, abs=2e-5)


def test_chapter_4_zero_load_is_message_plus_hops():
    # §7 check 6: M + Σ h P_h, 16 + 256/63 on an 8-ary 2-cube
    p = dor_latency(Cube((8, 8)), 3, 16, 4, 0.0)
    assert p.latency == pytest.approx(16 + 256 / 63)
    assert dor_latency(Cube((8, 8)), 3, 16, 4, 1e-7).latency == pytest.approx(16 + 256 / 63, 1e-4)


def test_chapter_4_combination_weighting_matters_only_with_unequal_rates():
    # one channel rate: every combination of an h has the same S_h, so (4.13)'s equal weights
    # and weights by destinations agree; with radices 8 and 4 the dimensions' rates differ
    for cube, same in ((Cube((8, 8)), True), (Cube((8, 4)), False)):
        thesis = dor_latency(cube, 3, 16, 4, 0.02).latency
        destinations = dor_latency(cube, 3, 16, 4, 0.02, weighting="destinations").latency
        assert (thesis == pytest.approx(destinations, rel=1e-12)) is same


def test_chapter_4_grows_with_load_and_saturates_earlier_for_longer_messages():
    cube = Cube((4, 4))
    curve = [dor_latency(cube, 3, 16, 4, 0.004 * i).latency for i in range(10)]
    assert all(b > a for a, b in zip(curve, curve[1:], strict=False))
    longer = dor_saturation_rate(cube, 3, 32, 4, relative_precision=0.01)
    knee = dor_saturation_rate(cube, 3, 16, 4, relative_precision=0.001)
    assert longer < knee
    assert dor_latency(cube, 3, 16, 4, 0.99 * knee) is not None
    assert dor_latency(cube, 3, 16, 4, 1.01 * knee) is None


def test_chapter_4_hypercube_and_mesh_set_no_vc_aside():
    # (4.47): θ = P_V where DOR needs no escape split; on a torus one VC of V is unusable
    hypercube = Cube((2,) * 6, "unidirectional")
    assert dor_latency(hypercube, 1, 16, 4, 0.005) is not None  # V = 1 is enough there
    with pytest.raises(ValueError):
        dor_latency(Cube((8, 8)), 1, 16, 4, 0.005)
    split = dor_latency(hypercube, 3, 16, 4, 0.02, usable=2).latency
    assert dor_latency(hypercube, 3, 16, 4, 0.02).latency < split


# ---- chapter 5 ----------------------------------------------------------------------------------


def test_remaining_dimensions_by_hand():
    # 𝔖 = {2, 1}: hop 1 has made 0 hops, x = (0,0), both dimensions unfinished;
    # hop 2: x = (1,0) (r = 2) or (0,1) (r = 1); hop 3: x = (2,0) or (1,1), r = 1 each
    assert remaining_dimensions((2, 1), 1) == {2: 1.0}
    assert remaining_dimensions((2, 1), 2) == {1: 0.5, 2: 0.5}
    assert remaining_dimensions((2, 1), 3) == {1: 1.0}
    # a hypercube destination 3 dimensions away: hop i leaves h - i + 1 unfinished, so
    # θ_i = P_a^{h-i} P_d (5.32)
    assert [remaining_dimensions((1, 1, 1), i) for i in (1, 2, 3)] == [{3: 1}, {2: 1}, {1: 1}]
    # dimensions with no hops are finished from the start
    assert remaining_dimensions((0, 2, 0), 1) == {1: 1.0}


def test_chapter_5_by_hand():
    # The ring of test_chapter_4_by_hand under Duato: V = 3 (one adaptive VC), Dally's P_v.
    # k̄ = (k - 1/k)/4 = 2/3 (5.8), λ_c = λ_g n k̄/(2n) = 0.2/3 = 0.066667 (5.10).
    # Each destination is 𝔖 = {1}: θ_1 = P_a^0 P_d = P_d = ρ³ + 2(1-ρ)ρ²/3 (5.20), (5.22).
    # Υ: M/D/1/3 at λ̂ = 2 λ_c = 0.133333: α = (0.875173, 0.116690), q = (1, 0.142631,
    #   0.010624), π^d = (0.867111, 0.123677, 0.009212), π^d_0 + ρ = 1.000445,
    #   Υ = 1 - (0.867111 + 0.123677)/1.000445 = 0.009652
    # T_1 = 3: ρ = 0.2, P_d = 0.008 + 2 x 0.8 x 0.04/3 = 0.029333, W = λ_c 10 / (2 x 0.8)
    #   = 0.416667, B_1 = 0.029333 x 0.009652 x 0.416667 = 0.000117972; then 0.000117994.
    # S = M + R + B = 3.000118 (5.2); W_s = 0.416667 as in chapter 4 (5.24);
    # V̄ at ρ = λ_c S = 0.2000079: Σ v P = 0.248021, Σ v² P = 0.360034 -> 1.451632 (5.26)
    # latency = (3.000118 + 0.416667) x 1.451632 = 4.959913 (5.1)
    p = duato_latency(Cube((3,)), 3, 2, 2, 0.2, "dally")
    assert p.channel_rate == pytest.approx(0.2 / 3)
    assert p.network_latency == pytest.approx(3.000118, abs=1e-6)
    assert p.multiplexing == pytest.approx(1.451632, abs=2e-6)
    assert p.latency == pytest.approx(4.959913, abs=1e-5)


@pytest.mark.parametrize("depth, latency", [(2, 111.40), (6, 112.6), (48, 107.8)])
def test_chapter_5_matches_the_digests_prototype(depth, latency):
    # digest §6 item 3-4: 8-ary 2-cube, M = 48, V = 3, λ_g = 0.010, new method, as printed
    p = duato_latency(Cube((8, 8)), 3, 48, depth, 0.010)
    assert p.latency == pytest.approx(latency, abs=0.06)


def test_chapter_5_escape_factor_and_mean_hops_choices():
    cube = Cube((8, 8))
    printed = duato_latency(cube, 3, 48, 2, 0.010).latency
    once = duato_latency(cube, 3, 48, 2, 0.010, pd_escape_factor=1).latency
    assert once < printed  # (5.22) counts the V-1 case twice (erratum §6.8)
    exact = duato_latency(cube, 3, 48, 2, 0.010, mean_hops="exact")
    assert exact.channel_rate == pytest.approx(0.010 * (256 / 63) / 4)  # (N-1) destinations
    assert duato_latency(cube, 3, 48, 2, 0.0).latency == pytest.approx(48 + 256 / 63)


def test_chapter_5_saturates_earlier_for_longer_messages_and_fewer_vcs():
    cube = Cube((4, 4))
    knee = {
        (vcs, length): duato_saturation_rate(cube, vcs, length, 4, relative_precision=0.01)
        for vcs, length in ((3, 32), (3, 16), (5, 16))
    }
    assert knee[3, 32] < knee[3, 16] < knee[5, 16]
    with pytest.raises(ValueError):
        duato_latency(cube, 2, 16, 4, 0.01)  # rings: two escape VCs and an adaptive one


# ---- timing ------------------------------------------------------------------------------------


def test_timing_scales_the_unit_steps():
    # a header of 2 cycles a hop and 3 more a message: zero load M + 2h + 3; with a flit of
    # 2 cycles the transmission doubles too
    timing = Timing(flit=2.0, hop=2.0, hold=0.0, extra=3.0)
    assert timing.zero_load(16, 4) == 32 + 8 + 3
    assert timing.occupancy(16, 4) == 32
    assert Timing().occupancy(16, 4) == Timing().zero_load(16, 4) == 20
    p = dor_latency(Cube((8, 8)), 3, 16, 4, 0.0, timing=timing)
    assert p.latency == pytest.approx(timing.zero_load(16, 256 / 63))
    assert math.isfinite(dor_latency(Cube((8, 8)), 3, 16, 4, 0.01, timing=timing).latency)
