"""Chapter 5 of Alzeidi's thesis: Duato's adaptive routing in k-ary n-cubes with finite buffers.

Digest ``shared/reference/wormhole-models.md`` §2.3; the thesis's equation numbers are given in
parentheses. As chapter 4 (:mod:`zfabric.sim.wormhole_dor`) but the ``V`` VCs of a channel are
``V-2`` adaptive ones (VC_1), usable in every productive direction, and two escape ones (VC_2),
one of which a header may take, in one fixed dimension (one escape VC of ``V`` on a hypercube,
(5.32)-(5.33), and on a mesh). The source is fixed at ``s = 0`` and the latency averaged over
the ``N - 1`` destinations ``d``, a destination being its hops per dimension
``𝔖 = {h_0..h_{n-1}}`` (5.3)-(5.4). Each path is solved by
:func:`zfabric.sim.wormhole_finite.solve_path` with Duato's contention (5.20)::

    θ_i = Σ_z Pass_{i,z} P_a^{n-z-1} P_d
    P_a = P_V + 2P_{V-1}/V + P_{V-2}/C(V,2)     (all adaptive VCs busy)                  (5.21)
    P_d = P_V + 2P_{V-1}/V                       (those and the escape VC; printed)      (5.22)

``P_v`` by chapter 3's new method at mean service ``T_i``. Then::

    S^<s,d>   = M + |𝔖| + B^<s,d>                                    (5.25)
    W_s^<s,d> from (B2) with λ_g/V and T_0                          (5.24)
    V^<s,d>   = Σ v² P_v / Σ v P_v at S^<s,d>                         (5.26)
    S̄ = M + R + B, W̄_s, V̄ the means over d                         (5.2), (5.5)-(5.7), (5.27)
    Latency = (S̄ + W̄_s) V̄                                            (5.1)
    λ_c = λ_g d̄ / (2n),  d̄ = n k̄  (k̄ = k/4 even k, (k - 1/k)/4 odd)  (5.8)-(5.10)

Errata and choices (digest §6): Pass counts the ``i - 1`` hops already made, not ``i`` (§6.7),
in the enumeration form ``θ_i = mean over x [P_a^{r(x)-1} P_d]``, ``x`` the ways of spreading
``i - 1`` hops with ``0 <= x_j <= h_j`` and ``r(x)`` the dimensions still unfinished -- the
per-``x`` weighting of (5.16)-(5.17); odd-k hops are ``min(d, k-d)`` (§6.10); ``P_d`` is as
printed with ``pd_escape_factor=2`` (§6.8; 1 counts the one usable escape VC once, which is
:func:`~zfabric.sim.wormhole_analytic.all_busy`); ``d̄`` of (5.8)-(5.10) includes the source
as printed (``mean_hops="thesis"``) or not (``"exact"``), while ``R`` (5.7) is always the mean
over the ``N - 1`` destinations; ``V^<s,d>`` takes ``P_v`` at the part of ``S^<s,d>`` that holds
VCs (:meth:`~zfabric.sim.wormhole_finite.Timing.occupancy`: all of it in the thesis's timing).
Destinations that are permutations of one another's hops give the same latency (L1656) and are
solved once. Saturation: some ``λ_c T >= 1``, ``λ_s T_0 >= 1`` or ``λ_c S^<s,d> >= 1`` (the
``P_v`` of (5.26)).
"""

from __future__ import annotations

import functools
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from .wormhole_analytic import all_busy, multiplexing_factor, vc_probabilities
from .wormhole_finite import (
    THESIS_TIMING,
    Cube,
    Timing,
    highest_stable_rate,
    solve_path,
    waiting_time,
)

__all__ = ["DuatoPrediction", "duato_latency", "duato_saturation_rate", "remaining_dimensions"]

MEAN_HOPS = ("thesis", "exact")


@dataclass(frozen=True)
class DuatoPrediction:
    """One solved point of :func:`duato_latency` (cycles)."""

    latency: float  # (S̄ + W̄_s) V̄  (5.1)
    network_latency: float  # S̄ = M + R + B  (5.2)
    source_wait: float  # W̄_s  (5.5)
    multiplexing: float  # V̄  (5.27)
    channel_rate: float  # λ_c  (5.10)
    mean_hops: float  # R  (5.7)
    iterations: int  # the most fixed-point iterations a destination needed


def remaining_dimensions(hops: Sequence[int], step: int) -> dict[int, float]:
    """``r -> probability`` that ``r`` dimensions are unfinished when a message ``hops``
    (``𝔖``) away makes hop ``step``: its ``step - 1`` hops made so far spread in every way
    ``x`` with ``0 <= x_j <= h_j`` and ``Σ x_j = step - 1``, each way alike (the counts
    ``Ω(0, 𝔖, i)`` of (5.16) and ``Pass_{i,z}`` of (5.17)-(5.19) with ``i - 1``, erratum §6.7;
    ``r = n - z`` of the dimensions a message needs)."""
    made = step - 1
    # ways[s][r]: partial spreads over the dimensions seen so far of s hops, r unfinished
    ways: dict[tuple[int, int], int] = {(0, 0): 1}
    for h in hops:
        grown: Counter[tuple[int, int]] = Counter()
        for (total, unfinished), count in ways.items():
            for x in range(h + 1):
                if total + x <= made:
                    grown[(total + x, unfinished + (x < h))] += count
        ways = grown
    counts = {r: c for (total, r), c in ways.items() if total == made}
    whole = sum(counts.values())
    if whole == 0:
        raise ValueError(f"step {step} is not on a path of {sum(hops)} hops ({list(hops)})")
    return {r: c / whole for r, c in counts.items()}


def duato_latency(
    cube: Cube,
    vcs: int,
    message_length: int,
    buffer_depth: int,
    rate: float,
    method: str = "new",
    *,
    adaptive: int | None = None,
    escape_usable: int = 1,
    pd_escape_factor: int = 2,
    mean_hops: str = "thesis",
    timing: Timing = THESIS_TIMING,
    injection_servers: int | None = None,
    tolerance: float = 1e-9,
    max_iterations: int = 10_000,
) -> DuatoPrediction | None:
    """Mean message latency of the chapter 5 model at ``rate`` = ``λ_g`` messages per node and
    cycle, or None past saturation.

    ``adaptive``: the adaptive VCs of a channel (VC_1), default ``V-2`` where rings need two
    escape VCs, ``V-1`` on a mesh or hypercube (L1719); ``escape_usable``: the escape VCs a
    header may take, 1 in the thesis. ``pd_escape_factor`` 2 is (5.22) as printed, 1 counts the
    escape VC once. ``injection_servers``: the source queue's servers, ``V`` in the thesis
    (5.24, the default).
    """
    if mean_hops not in MEAN_HOPS:
        raise ValueError(f"mean_hops must be one of {MEAN_HOPS}, got {mean_hops!r}")
    if pd_escape_factor not in (1, 2):
        raise ValueError(f"pd_escape_factor must be 1 or 2, got {pd_escape_factor}")
    if message_length < 1 or buffer_depth < 1 or rate < 0 or not math.isfinite(rate):
        raise ValueError(
            f"need M >= 1, F >= 1, rate >= 0: {message_length}, {buffer_depth}, {rate}"
        )
    adaptive = (vcs - 2 if cube.rings else vcs - 1) if adaptive is None else adaptive
    if adaptive < 1 or escape_usable < 1 or adaptive + escape_usable > vcs:
        raise ValueError(
            f"Duato needs an adaptive VC and an escape VC within V={vcs}: adaptive {adaptive},"
            f" usable escape {escape_usable}"
        )
    hops_for_rate = cube.mean_hops_with_self() if mean_hops == "thesis" else None
    lam_c = cube.mean_channel_rate(rate, hops_for_rate)  # (5.8)-(5.10), (5.30)
    source_rate = rate / (vcs if injection_servers is None else injection_servers)
    minimum = timing.transmission(message_length)
    escape = adaptive + escape_usable  # VCs busy for P_d: every adaptive one and the escape

    @functools.cache  # paths share holding times, the first iteration's all of them
    def busy(holding: float) -> tuple[float, float, list[float]]:
        probabilities = vc_probabilities(lam_c, holding, vcs, minimum, method)
        p_a = all_busy(probabilities, adaptive)  # (5.21), (5.32)
        p_d = all_busy(probabilities, escape)  # (5.22), (5.33) with the factor 1
        if pd_escape_factor == 2 and escape == vcs - 1:
            p_d += probabilities[vcs - 1] / vcs  # (5.22) as printed counts this case twice
        return p_a, p_d, probabilities

    # destinations by their hops' multiset (L1656), each with its share of the N - 1
    groups: Counter[tuple[int, ...]] = Counter()
    for vector, probability in cube.hop_vectors().items():
        groups[tuple(sorted(vector))] += probability
    network = source = multiplexing = route = 0.0
    iterations = 0
    for hops, share in groups.items():
        h = sum(hops)
        remaining = [remaining_dimensions(hops, i) for i in range(1, h + 1)]

        def theta(i: int, holding: float, remaining=remaining) -> float:  # (5.20)
            p_a, p_d, _ = busy(holding)
            return math.fsum(p * p_a ** (r - 1) * p_d for r, p in remaining[i - 1].items())

        path = solve_path(
            [lam_c] * h,
            theta,
            message_length,
            buffer_depth,
            timing,
            tolerance=tolerance,
            max_iterations=max_iterations,
        )
        if path is None or source_rate * path.holding[0] >= 1.0:
            return None
        s_sd = timing.zero_load(message_length, h) + path.total_blocking  # (5.25)
        occupied = timing.occupancy(message_length, h) + path.total_blocking  # S^<s,d>, VC part
        if lam_c * occupied >= 1.0:
            return None
        network += share * s_sd  # (5.2), (5.6), (5.7)
        route += share * h  # (5.7)
        source += share * waiting_time(source_rate, path.holding[0], minimum)  # (5.24), (5.5)
        mux = multiplexing_factor(vc_probabilities(lam_c, occupied, vcs, minimum, method))
        multiplexing += share * mux  # (5.26), (5.27)
        iterations = max(iterations, path.iterations)
    return DuatoPrediction(
        latency=(network + source) * multiplexing,  # (5.1)
        network_latency=network,
        source_wait=source,
        multiplexing=multiplexing,
        channel_rate=lam_c,
        mean_hops=route,
        iterations=iterations,
    )


def duato_saturation_rate(
    cube: Cube,
    vcs: int,
    message_length: int,
    buffer_depth: int,
    method: str = "new",
    *,
    relative_precision: float = 1e-3,
    **options,
) -> float:
    """Largest ``λ_g`` (to ``relative_precision``) at which :func:`duato_latency` converges:
    bisection below the channel bound ``λ_c M · flit = 1``."""
    timing = options.get("timing", THESIS_TIMING)
    hops = cube.mean_hops_with_self() if options.get("mean_hops", "thesis") == "thesis" else None
    high = 1.0 / (cube.mean_channel_rate(1.0, hops) * timing.transmission(message_length))
    return highest_stable_rate(
        lambda r: duato_latency(cube, vcs, message_length, buffer_depth, r, method, **options),
        high,
        relative_precision,
    )
