"""Chapter 4 of Alzeidi's thesis: dimension-order routing in k-ary n-cubes with finite buffers.

Digest ``shared/reference/wormhole-models.md`` §2.2; the thesis's equation numbers are given in
parentheses. Wormhole switching, ``V`` VCs per physical channel of ``F`` flits each, Poisson
sources of ``λ_g`` messages of ``M`` flits per node and cycle, uniform destinations, DOR. A
message ``h`` hops away, whose hops split over the dimensions as ``C_c^h = (d^0..d^{n-1})``,
crosses steps ``i = 1..h`` in dimension order (step 0 is the injection channel, ``h+1`` the
ejection channel); each step is solved by :func:`zfabric.sim.wormhole_finite.solve_path` with
the contention of a DOR header (4.29)::

    θ_{h,i} = P_V + P_{V-1}/V          (every VC of VC_1 and the escape VC busy)

``P_v`` from the new (M/G/1) method of chapter 3 at mean service ``T_{h,i}``
(:func:`zfabric.sim.wormhole_analytic.all_busy` with ``u = V-1`` usable VCs; ``u = V`` on a
hypercube or mesh, where no VC is set aside, (4.47)). Then::

    S_h   = M + h + (1/Ω) Σ_c Σ_i B_{h,i}                    (4.11)-(4.13)
    W_s^h = λ_s T_0² (1 + (T_0-M)²/T_0²) / (2(1 - λ_s T_0)),  λ_s = λ_g/V      (4.33), (4.34)
    V_h   = Σ v² P_v^{S_h} / Σ v P_v^{S_h}                   (4.36)
    S̄, W̄_s, V̄ = Σ_h P_h (S_h, W_s^h, V_h),  P_h = n_h/(N-1)  (4.4), (4.5), (4.35), (4.37)
    Latency = (S̄ + W̄_s) V̄                                    (4.1)

Channels of one dimension share one rate (4.17): ``λ_c = λ_g/(2n) Σ h P_h`` when every radix is
equal, as the thesis has it; with unequal radices each dimension has its own
(:meth:`~zfabric.sim.wormhole_finite.Cube.channel_rates`). With one rate the combinations of an
``h`` all give the same ``S_h``: the thesis's average over them (4.13) matters only then.

Errata and choices (digest §6): the hop counts (4.6) and combination count (4.8) are wrong as
printed, so both are enumerated (§6.9); the combinations of an ``h`` weigh equally as in (4.13)
(``weighting="thesis"``) or by their destinations (``"destinations"``); the multiplexing
``V_h`` takes ``P_v`` at the mean channel rate (one rate in the thesis) and at the part of
``S_h`` that holds VCs (:meth:`~zfabric.sim.wormhole_finite.Timing.occupancy`: all of it in the
thesis's timing). Saturation: some ``λ_c T >= 1`` (L1330), ``λ_s T_0 >= 1`` or ``λ_c S_h >= 1``
(the ``P_v`` of (4.36)).
"""

from __future__ import annotations

import functools
import math
from collections import defaultdict
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

__all__ = ["DorPrediction", "dor_latency", "dor_saturation_rate"]

WEIGHTINGS = ("thesis", "destinations")


@dataclass(frozen=True)
class DorPrediction:
    """One solved point of :func:`dor_latency` (cycles)."""

    latency: float  # (S̄ + W̄_s) V̄  (4.1)
    network_latency: float  # S̄  (4.4)
    source_wait: float  # W̄_s  (4.35)
    multiplexing: float  # V̄  (4.37)
    channel_rate: float  # λ_c, the mean over channels  (4.17)
    mean_hops: float  # Σ h P_h
    iterations: int  # the most fixed-point iterations a path needed


def dor_latency(
    cube: Cube,
    vcs: int,
    message_length: int,
    buffer_depth: int,
    rate: float,
    method: str = "new",
    *,
    usable: int | None = None,
    timing: Timing = THESIS_TIMING,
    injection_servers: int | None = None,
    weighting: str = "thesis",
    tolerance: float = 1e-9,
    max_iterations: int = 10_000,
) -> DorPrediction | None:
    """Mean message latency of the chapter 4 model at ``rate`` = ``λ_g`` messages per node and
    cycle, or None past saturation.

    ``usable``: the VCs a header may take at a hop, default ``V-1`` where rings need the escape
    split (4.29) and ``V`` on a mesh or hypercube (4.47). ``injection_servers``: the source
    queue's servers, each taking ``λ_g`` over their number: ``V`` in the thesis (4.33, the
    default). ``method`` is chapter 3's VC occupancy method, "new" or "dally".
    """
    _check(cube, vcs, message_length, buffer_depth, rate, weighting)
    usable = _usable(cube, vcs, usable)
    rates = cube.channel_rates(rate)
    mean_rate = cube.mean_channel_rate(rate)
    source_rate = rate / (vcs if injection_servers is None else injection_servers)
    minimum = timing.transmission(message_length)
    vectors = cube.hop_vectors()

    @functools.cache  # paths share holding times, the first iteration's all of them
    def blocked(rate: float, holding: float) -> float:  # (4.29) / (4.47)
        return all_busy(vc_probabilities(rate, holding, vcs, minimum, method), usable)

    def contention(step_rates: tuple[float, ...]):
        return lambda i, holding: blocked(step_rates[i - 1], holding)

    # per h: Σ weight, Σ weight·S, Σ weight·W_s over its combinations, and P_h (4.5)
    sums: dict[int, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0, 0.0])
    solved: dict[tuple[float, ...], tuple[float, float, int]] = {}
    iterations = 0
    for vector, probability in vectors.items():
        h = sum(vector)
        step_rates = tuple(rates[j] for j, hops in enumerate(vector) for _ in range(hops))
        if step_rates not in solved:
            path = solve_path(
                step_rates,
                contention(step_rates),
                message_length,
                buffer_depth,
                timing,
                tolerance=tolerance,
                max_iterations=max_iterations,
            )
            if path is None or source_rate * path.holding[0] >= 1.0:
                return None
            network = timing.zero_load(message_length, h) + path.total_blocking  # (4.13)
            source = waiting_time(source_rate, path.holding[0], minimum)  # (4.34)
            solved[step_rates] = (network, source, path.iterations)
        network, source, used = solved[step_rates]
        iterations = max(iterations, used)
        weight = 1.0 if weighting == "thesis" else probability
        entry = sums[h]
        entry[0] += weight
        entry[1] += weight * network
        entry[2] += weight * source
        entry[3] += probability
    network_latency = source_wait = multiplexing = 0.0
    for h, entry in sums.items():
        weight, s_h, w_h, p_h = entry[0], entry[1] / entry[0], entry[2] / entry[0], entry[3]
        # the multiplexing service: S_h in the thesis, the VCs' part of it in general
        busy = s_h - timing.zero_load(message_length, h) + timing.occupancy(message_length, h)
        if mean_rate * busy >= 1.0:
            return None
        probabilities = vc_probabilities(mean_rate, busy, vcs, minimum, method)
        network_latency += p_h * s_h  # (4.4)
        source_wait += p_h * w_h  # (4.35)
        multiplexing += p_h * multiplexing_factor(probabilities)  # (4.36), (4.37)
    return DorPrediction(
        latency=(network_latency + source_wait) * multiplexing,  # (4.1)
        network_latency=network_latency,
        source_wait=source_wait,
        multiplexing=multiplexing,
        channel_rate=mean_rate,
        mean_hops=cube.mean_hops(),
        iterations=iterations,
    )


def dor_saturation_rate(
    cube: Cube,
    vcs: int,
    message_length: int,
    buffer_depth: int,
    method: str = "new",
    *,
    relative_precision: float = 1e-3,
    **options,
) -> float:
    """Largest ``λ_g`` (to ``relative_precision``) at which :func:`dor_latency` converges:
    bisection below the busiest dimension's channel bound ``λ_c M · flit = 1``."""
    timing = options.get("timing", THESIS_TIMING)
    busiest = max(cube.channel_rates(1.0))
    high = 1.0 / (busiest * timing.transmission(message_length))
    return highest_stable_rate(
        lambda r: dor_latency(cube, vcs, message_length, buffer_depth, r, method, **options),
        high,
        relative_precision,
    )


def _usable(cube: Cube, vcs: int, usable: int | None) -> int:
    default = vcs - 1 if cube.rings else vcs
    usable = default if usable is None else usable
    if not 1 <= usable <= vcs:
        raise ValueError(f"usable VCs must be in 1..{vcs}, got {usable}")
    return usable


def _check(cube: Cube, vcs: int, message_length: int, depth: int, rate: float, weighting: str):
    if vcs < 1:
        raise ValueError(f"need at least one virtual channel, got {vcs}")
    if cube.rings and vcs < 2:
        raise ValueError(f"DOR on rings needs V >= 2 virtual channels (escape split), got {vcs}")
    if message_length < 1 or depth < 1 or rate < 0:
        raise ValueError(
            f"need M >= 1, F >= 1 and rate >= 0, got {message_length}, {depth}, {rate}"
        )
    if weighting not in WEIGHTINGS:
        raise ValueError(f"weighting must be one of {WEIGHTINGS}, got {weighting!r}")
    if not math.isfinite(rate):
        raise ValueError(f"rate must be finite, got {rate}")
