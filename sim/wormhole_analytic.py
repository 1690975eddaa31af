"""Analytical wormhole / virtual-channel latency model for k-ary n-cubes (pure Python, stdlib).

Implements the Ould-Khaoua adaptive-routing model summarised in App. A1 of Alzeidi's thesis, with
the thesis's *new* (M/G/1) method for virtual-channel occupancy, following the digest
``shared/reference/wormhole-models.md`` (cited below as "digest §x"). Section numbers in
parentheses (A1.3, 3.9, ...) are the thesis's equation numbers.

Building blocks, usable on their own (digest §2.0):

* :func:`dally_vc_probabilities` -- Dally's Markov-chain occupancy, closed form (3.6), (B3).
* :func:`new_vc_probabilities` -- the new method (3.7)-(3.9): busy VCs = number in an M/G/1
  queue, tail lumped into ``v = V``; the M/G/1 distribution comes from the App. A2 embedded-chain
  recursion on a two-moment (Tijms) fit of the service time, (B3).
* :func:`vc_probabilities` -- either method, with the Draper-Ghosh variance ``(S - M)^2``.
* :func:`multiplexing_factor` -- Dally's average degree of VC multiplexing (A1.12), (B5).
* :func:`all_busy` -- the probability that every VC a header may take is busy, the counting
  argument behind (4.29), (5.21), (5.22) and (A1.5), (A1.6).
* :func:`finite_queue_distribution`, :func:`buffer_blocking` -- the M/G/1/(F+1) flit queue of
  a finite VC buffer and its blocking probability Υ (4.30)-(4.32), (B4); chapters 4 and 5.
* :func:`mg1_number_in_system`, :func:`arrivals_per_service`, :func:`draper_ghosh_scv`.

The network model (digest §2.1) is :func:`ould_khaoua_latency`. It is the **unidirectional**
formulation (digest §1.1): ``k̄ = (k-1)/2``, ``d̄ = n k̄``, ``λ_c = λ_g d̄ / n``; at zero load the
latency is ``M + d̄`` (23 cycles for M=16 in an 8-ary 2-cube, Table 3.1's 23.35 at λ=0.0001).

Errata applied (digest §6):

* §6.1 -- the printed Coxian-2 / mixed-Erlang parameter fits (3.16, 3.17) are garbled; Tijms'
  fits are used instead (:func:`arrivals_per_service`).
* §6.2 -- the App. A2 recursion (A2.8) divides by ``α_0`` (A2.7), not by the printed ``1/(1-ρ)``.
* §6.8 -- ``P_d`` is reproduced as printed in A1.6 (``P_V + 2 P_{V-1}/V``) although only one
  escape VC is usable; ``pd_escape_factor=1`` gives the physically correct ``P_V + P_{V-1}/V``.
* §6.21 -- fractional ``k̄`` (even k, e.g. 3.5 for k=8): the hop at step ``i`` lies in the
  dimension range ``j = ⌈i/k̄⌉ - 1`` of (A1.4), and the span ``q`` of the A1.8 counts
  ``N_0^{q-1}`` is rounded half up, ``q = ⌊k̄ + 1/2⌋ = ⌊k/2⌋``; the count's first argument keeps
  the printed real ``i - 1 - l k̄`` (see :func:`_bounded_compositions`). This reproduces the
  digest's prototype table (§4.1) to its printed digits (46.21 new / 66.98 Dally at λ=0.006).
  ``round_span=False`` keeps ``q = k̄`` (a real-valued continuation of the count).
* §6.22 -- the fixed point is iterated with a relative tolerance and an iteration cap; saturation
  (``λ_c S >= 1``, ``(λ_g/V) S >= 1`` or no convergence) is reported, never looped on.

Interpretations (not errata in the digest, decided here):

* A1.7's denominator for ``P_i^j`` sums ``l = 0..j`` (the ``j`` of the term itself) and
  ``P_i^0`` takes the remainder; for ``n >= 3`` that need not be a distribution. Here every
  ``P_i^l``, ``l = 0..j(i)``, is normalised by the same sum over ``l = 0..j(i)``. For ``n = 2``
  (Table 3.1) the two readings coincide.
* A1.3 sums ``P_{b,i}`` over ``i = 1..d̄``; if ``d̄`` is fractional (even k with odd n) the last
  hop enters with weight ``d̄ - ⌊d̄⌋``, consistent with the ``M + d̄`` term.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = [
    "LatencyPrediction",
    "all_busy",
    "arrivals_per_service",
    "buffer_blocking",
    "dally_vc_probabilities",
    "draper_ghosh_scv",
    "finite_queue_distribution",
    "mg1_number_in_system",
    "multiplexing_factor",
    "new_vc_probabilities",
    "ould_khaoua_latency",
    "saturation_rate",
    "vc_probabilities",
]

#: below this squared coefficient of variation the service time is taken as deterministic
#: (digest §6.1 recommends 1e-3; the mixed-Erlang terms come by their ratio from a first term
#: that cannot underflow, so a large Erlang order is not a numerical problem)
DETERMINISTIC_SCV = 1e-3
#: the tail sums ``a_i = P(L > i)`` of the App. A2 recursion are summed from terms (``1 -
#: cumulative`` cancels at light load): terms are added until the last one is below this
_TAIL_TERM = 1e-25
_MAX_TERMS = 1 << 20


# --------------------------------------------------------------------------------------------
# VC occupancy (digest §2.0 B3) and multiplexing (B5)
# --------------------------------------------------------------------------------------------


def dally_vc_probabilities(rate: float, service: float, vcs: int) -> list[float]:
    """Dally's probabilities ``P_v`` of ``v = 0..V`` busy VCs on a physical channel.

    Closed form (3.6) of the Markov chain (3.1)-(3.2), digest §2.0 (B3): with
    ``ρ = λ_c S̄``, ``P_v = (1-ρ) ρ^v`` for ``v < V`` and ``P_V = ρ^V`` -- the M/M/1 queue length
    with the whole tail lumped into ``v = V``. Requires ``ρ < 1``.
    """
    rho = _utilisation(rate, service, vcs)
    return [(1.0 - rho) * rho**v for v in range(vcs)] + [rho**vcs]


def new_vc_probabilities(
    rate: float, service: float, vcs: int, scv: float, *, exponential: bool = False
) -> list[float]:
    """The thesis's new method: ``P_v`` for ``v = 0..V`` from an M/G/1 queue (3.7)-(3.9).

    Digest §2.0 (B3): each busy VC is a customer of an M/G/1 queue with arrival rate ``λ_c`` and
    mean service ``S̄``; ``P_v = π_v`` for ``v < V`` and ``P_V = 1 - Σ_{v<V} π_v`` (3.9).
    ``scv`` is the service time's squared coefficient of variation ``C²``; the distribution is
    the two-moment fit of :func:`arrivals_per_service` (``exponential=True`` uses the exact
    exponential, which reproduces Dally's method, (3.10)-(3.15)). Requires ``ρ = λ_c S̄ < 1``.
    """
    _utilisation(rate, service, vcs)
    pi = mg1_number_in_system(rate, service, scv, vcs, exponential=exponential)
    return pi + [max(0.0, 1.0 - math.fsum(pi))]


def draper_ghosh_scv(mean: float, minimum: float) -> float:
    """Draper-Ghosh ``C² = (S̄ - M)² / S̄²``: the variance is ``(S̄ - M)²`` because the service
    time is never below the message length ``M`` (§3.5, L943; digest §2.0 B1/B3)."""
    if mean <= 0:
        raise ValueError(f"mean service time must be positive, got {mean}")
    return ((mean - minimum) / mean) ** 2


def vc_probabilities(
    rate: float, service: float, vcs: int, message_length: float, method: str = "new"
) -> list[float]:
    """``P_v``, ``v = 0..V``, by ``method`` "new" (M/G/1 with the Draper-Ghosh ``C²``, as in
    §3.5) or "dally" (3.6). Only this choice differs between the two model variants (L953)."""
    if method == "dally":
        return dally_vc_probabilities(rate, service, vcs)
    if method == "new":
        return new_vc_probabilities(rate, service, vcs, draper_ghosh_scv(service, message_length))
    raise ValueError(f"method must be 'new' or 'dally', got {method!r}")


def multiplexing_factor(probabilities: list[float]) -> float:
    """Dally's average degree of VC multiplexing ``V̄ = Σ v² P_v / Σ v P_v`` (A1.12, 4.36, 5.26;
    digest §2.0 B5). ``probabilities[v]`` is ``P_v``; the ``v = 0`` term contributes nothing.
    Returns 1 when no VC is ever busy (the zero-load limit of the ratio)."""
    first = math.fsum(v * p for v, p in enumerate(probabilities))
    if first <= 0.0:
        return 1.0
    return math.fsum(v * v * p for v, p in enumerate(probabilities)) / first


def all_busy(probabilities: list[float], usable: int) -> float:
    """Probability that all ``usable`` of the ``V`` VCs a header may take are busy, the ``v``
    busy VCs of a channel (``probabilities[v]`` is ``P_v``) being any ``v`` of the ``V`` alike::

        Σ_{v=u}^{V} P_v C(V-u, v-u) / C(V, v)

    the count behind the thesis's contention probabilities: ``u = V-1`` is (4.29)
    ``P_V + P_{V-1}/V`` (VC_1 and the one escape VC of DOR) and (A1.6)/(5.22) with the escape
    factor 1 (erratum §6.8); ``u = V-2`` is (A1.5)/(5.21) ``P_V + 2P_{V-1}/V + P_{V-2}/C(V,2)``
    (every adaptive VC); ``u = V`` is ``P_V`` (4.47), (5.33). Other ``u`` are zfabric's VC
    classes (docs/analytic.md)."""
    vcs = len(probabilities) - 1
    if not 0 <= usable <= vcs:
        raise ValueError(f"usable VCs must be in 0..{vcs}, got {usable}")
    return math.fsum(
        probabilities[v] * math.comb(vcs - usable, v - usable) / math.comb(vcs, v)
        for v in range(usable, vcs + 1)
    )


def _utilisation(rate: float, service: float, vcs: int) -> float:
    if vcs < 1:
        raise ValueError(f"need at least one virtual channel, got {vcs}")
    if rate < 0 or service <= 0:
        raise ValueError(f"need rate >= 0 and service > 0, got {rate}, {service}")
    rho = rate * service
    if rho >= 1.0:
        raise ValueError(f"utilisation λS = {rho} >= 1: the channel queue is unstable")
    return rho


# --------------------------------------------------------------------------------------------
# M/G/1 number in system by the embedded departure-epoch chain (App. A2; digest §2.0 B3)
# --------------------------------------------------------------------------------------------


def arrivals_per_service(
    rate: float, mean: float, scv: float, count: int, *, exponential: bool = False
) -> list[float]:
    """``α_j``, ``j = 0..count-1``: probability of ``j`` Poisson(``rate``) arrivals during one
    service (A2.2), for a service time fitted to (``mean``, ``scv``) -- digest §2.0 (B3):

    * ``scv < DETERMINISTIC_SCV``: deterministic, ``α`` is Poisson(``rate * mean``);
    * ``scv >= 0.5``: Coxian-2 (Tijms, erratum §6.1): ``μ1 = 2/S̄``, go on to phase 2 with
      ``p = 1/(2C²)``, ``μ2 = μ1 p``; ``α`` is ``(1-p) Geom(μ1) + p Geom(μ1) * Geom(μ2)``;
    * otherwise mixed Erlang (Tijms, erratum §6.1): ``k = ⌈1/C²⌉``, Erlang(k-1) with probability
      ``p = (kC² - sqrt(k(1+C²) - k²C²)) / (1+C²)`` else Erlang(k), rate ``μ = (k-p)/S̄``; ``α``
      mixes two negative binomials;
    * ``exponential=True``: exact exponential service, ``α`` geometric (ignores ``scv``).

    With ``q = λ/(λ+μ)``, Geom(μ) is ``(1-q) q^j`` and Erlang(r, μ) gives
    ``C(j+r-1, j) q^j (1-q)^r``, each term from the one before.
    """
    if count < 1:
        return []
    if rate == 0.0:
        return [1.0] + [0.0] * (count - 1)

    def geometric(mu: float) -> list[float]:
        q = rate / (rate + mu)
        return [(1.0 - q) * q**j for j in range(count)]

    if exponential:
        return geometric(1.0 / mean)
    if scv < DETERMINISTIC_SCV:
        x = rate * mean
        return [math.exp(-x + j * math.log(x) - math.lgamma(j + 1)) for j in range(count)]
    if scv >= 0.5:
        mu1 = 2.0 / mean
        p = 1.0 / (2.0 * scv)
        g1 = geometric(mu1)
        q2 = rate / (rate + mu1 * p)  # Geom(μ2) is (1 - q2) q2^j
        conv = [g1[0] * (1.0 - q2)]  # (g1 * g2)_j = q2 (g1 * g2)_{j-1} + (1 - q2) g1_j
        for j in range(1, count):
            conv.append(q2 * conv[-1] + (1.0 - q2) * g1[j])
        return [(1.0 - p) * g1[j] + p * conv[j] for j in range(count)]
    k = math.ceil(1.0 / scv)
    p = (k * scv - math.sqrt(k * (1.0 + scv) - k * k * scv)) / (1.0 + scv)
    mu = (k - p) / mean
    q = rate / (rate + mu)

    def negative_binomial(r: int) -> list[float]:
        # C(j+r-1, j) q^j (1-q)^r term by term, the ratio of two being (j+r-1) q / j. The first,
        # (1-q)^r, is above e^{-3/2}: r q <= k ρ / (k-1) with k >= 3 and ρ < 1, so nothing
        # underflows before the terms decay, however large the Erlang order
        terms = [math.exp(r * math.log1p(-q))]
        for j in range(1, count):
            terms.append(terms[-1] * (j + r - 1) * q / j)
        return terms

    shorter, longer = negative_binomial(k - 1), negative_binomial(k)
    return [p * a + (1 - p) * b for a, b in zip(shorter, longer, strict=True)]


def mg1_number_in_system(
    rate: float, mean: float, scv: float, count: int, *, exponential: bool = False
) -> list[float]:
    """``π_i``, ``i = 0..count-1``: M/G/1 number in system (time average = departure epochs),
    by the App. A2 recursion, digest §2.0 (B3)::

        π_0 = 1 - ρ,   π_i = (a_{i-1} π_0 + Σ_{j=1}^{i-1} a_{i-j} π_j) / α_0

    with ``a_i = P(L > i) = Σ_{j>i} α_j`` (A2.6). Erratum §6.2: the divisor is ``α_0 = 1 - a_0``
    (A2.7), not the ``1/(1-ρ)`` printed in (A2.8). Service fit as in
    :func:`arrivals_per_service`. Requires ``ρ = rate * mean < 1``.
    """
    rho = rate * mean
    if not 0.0 <= rho < 1.0:
        raise ValueError(f"utilisation {rho} outside [0, 1)")
    if count < 1:
        return []
    terms = count + 64
    while True:
        alpha = arrivals_per_service(rate, mean, scv, terms, exponential=exponential)
        if alpha[-1] < _TAIL_TERM or terms >= _MAX_TERMS:
            break
        terms *= 2
    tails = [0.0] * count  # a_i = Σ_{j>i} α_j, from the terms (the rest is below _TAIL_TERM)
    tail = math.fsum(alpha[count:])
    for i in range(count - 1, -1, -1):
        tails[i] = tail
        tail += alpha[i]
    pi = [1.0 - rho]
    for i in range(1, count):
        s = tails[i - 1] * pi[0] + math.fsum(tails[i - j] * pi[j] for j in range(1, i))
        pi.append(s / alpha[0])
    return pi


def finite_queue_distribution(
    rate: float, mean: float, scv: float, capacity: int, *, exponential: bool = False
) -> list[float]:
    """``p_j``, ``j = 0..K``: time-average number in an M/G/1/K queue of ``capacity`` K, any
    utilisation (``ρ >= 1`` too), digest §2.0 (B4). The embedded departure-epoch chain has
    states ``0..K-1`` and the balance equations of the infinite queue for ``j <= K-2``::

        q_0 = 1,   q_{j+1} = (q_j - q_0 α_j - Σ_{i=1}^{j} q_i α_{j-i+1}) / α_0

    normalised to ``π^d``; then ``p_j = π^d_j / (π^d_0 + ρ)`` for ``j < K`` and
    ``p_K = 1 - 1 / (π^d_0 + ρ)`` (Kleinrock/Takagi, whom the thesis cites at L1251 without an
    algorithm). ``α_j`` and the service fit are :func:`arrivals_per_service`'s."""
    if capacity < 1:
        raise ValueError(f"capacity must be at least 1, got {capacity}")
    if rate < 0 or mean <= 0:
        raise ValueError(f"need rate >= 0 and mean > 0, got {rate}, {mean}")
    alpha = arrivals_per_service(rate, mean, scv, capacity + 1, exponential=exponential)
    q = [1.0]
    for j in range(capacity - 1):
        s = q[0] * alpha[j] + math.fsum(q[i] * alpha[j - i + 1] for i in range(1, j + 1))
        q.append((q[j] - s) / alpha[0])
    total = math.fsum(q)
    departures = [x / total for x in q]
    scale = departures[0] + rate * mean
    return [x / scale for x in departures] + [max(0.0, 1.0 - 1.0 / scale)]


def buffer_blocking(
    rate: float, holding: float, minimum: float, message_length: float, depth: int
) -> float:
    """Υ, the probability that a header cannot reach the head of an ``F = depth`` flit buffer
    because flits of an earlier message are still in it (4.30)-(4.32), digest §2.0 (B4)::

        Υ = Σ_{κ=2}^{F+1} π_κ^{M/G/1/F+1} = 1 - p_0 - p_1

    in flit units: arrivals ``λ̂ = λ_c M`` (4.31), mean service ``T̂ = T/M`` (4.32), where
    ``holding`` T is the holding time of the *next* channel (the buffer sits in the next
    router, L1249). The thesis leaves the service shape open (erratum §6.3); this is the
    digest's default, the Draper-Ghosh fit at the flit level: ``C² = (T̂ - T̂_min)² / T̂²``
    with ``T̂_min = minimum / M`` (``minimum`` the unblocked holding time, ``M`` in the
    thesis's timing, so ``T̂_min = 1``)."""
    if depth < 1 or message_length <= 0:
        raise ValueError(f"need depth >= 1 and message length > 0, got {depth}, {message_length}")
    if rate == 0.0:
        return 0.0
    flit_rate = rate * message_length  # (4.31)
    flit_service = holding / message_length  # (4.32)
    scv = draper_ghosh_scv(holding, minimum)  # scale-free: (T̂ - T̂_min)² / T̂²
    p = finite_queue_distribution(flit_rate, flit_service, scv, depth + 1)
    return max(0.0, 1.0 - p[0] - p[1])


# --------------------------------------------------------------------------------------------
# App. A1: Ould-Khaoua's model for Duato's adaptive routing (digest §2.1)
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LatencyPrediction:
    """One solved point of :func:`ould_khaoua_latency` (all times in cycles)."""

    latency: float  # (S + W_s) V̄, (A1.13)
    network_latency: float  # S, (A1.3)
    source_wait: float  # W_s, (A1.11)
    multiplexing: float  # V̄, (A1.12)
    blocking_wait: float  # W_b, (A1.9)
    channel_rate: float  # λ_c messages per channel per cycle, (A1.10)
    mean_hops: float  # d̄ = n k̄, (A1.1)-(A1.2)
    vc_probabilities: tuple[float, ...]  # P_v, v = 0..V, at (λ_c, S)
    p_adaptive: float  # P_a, (A1.5)
    p_escape: float  # P_d, (A1.6)
    iterations: int  # fixed-point iterations used


def ould_khaoua_latency(
    k: int,
    n: int,
    vcs: int,
    message_length: int,
    rate: float,
    method: str = "new",
    *,
    pd_escape_factor: int = 2,
    round_span: bool = True,
    tolerance: float = 1e-10,
    max_iterations: int = 10_000,
) -> LatencyPrediction | None:
    """Mean message latency of App. A1 (Ould-Khaoua [111]) with the chosen VC method.

    Unidirectional k-ary n-cube, Duato adaptive routing with ``V >= 3`` VCs per channel
    (``V-2`` adaptive, 2 escape), single-flit buffers, Poisson ``rate`` = ``λ_g`` messages per
    node per cycle, ``message_length`` = ``M`` flits, uniform destinations (digest §2.1)::

        k̄ = (k-1)/2,  d̄ = n k̄,  λ_c = λ_g d̄ / n                           (A1.1, A1.2, A1.10)
        S = M + d̄ + Σ_{i=1}^{d̄} P_{b,i} W_b                                     (A1.3)
        W_b = λ_c S² (1 + (S-M)²/S²) / (2 (1 - λ_c S))                           (A1.9)
        P_{b,i} = Σ_{l=0}^{j} P_i^l P_d P_a^{n-1-l},  j = ⌈i/k̄⌉ - 1             (A1.4, §6.21)
        P_a = P_V + 2P_{V-1}/V + P_{V-2}/C(V,2),  P_d = P_V + f P_{V-1}/V        (A1.5, A1.6)
        W_s = (λ_g/V) S² (1 + (S-M)²/S²) / (2 (1 - (λ_g/V) S))                  (A1.11)
        Latency = (S + W_s) V̄                                                    (A1.13)

    ``P_v`` are evaluated at ``(λ_c, S)`` by ``method`` ("new": M/G/1, the thesis's
    improvement; "dally": Dally's chain), see :func:`vc_probabilities`. ``f`` is
    ``pd_escape_factor``: 2 as printed (default), 1 physically correct (erratum §6.8).
    ``round_span`` rounds the per-dimension span of the A1.8 counts to ``⌊k/2⌋`` (erratum §6.21,
    default) instead of using the fractional ``k̄``.

    ``S`` is the fixed point of (A1.3), iterated from ``M + d̄`` until the relative change is
    below ``tolerance``. The map is increasing in ``S``, so the iterates rise monotonically to
    the smallest fixed point. Returns ``None`` (saturation) as soon as ``λ_c S >= 1`` or
    ``(λ_g/V) S >= 1``, or if ``max_iterations`` pass without convergence (digest §6.22).
    """
    if k < 3 or n < 1:  # k=2 is the hypercube, whose VC split differs (digest §2.3, 5.31-5.33)
        raise ValueError(f"need k >= 3 and n >= 1, got k={k}, n={n}")
    if vcs < 3:
        raise ValueError(f"Duato's routing needs V >= 3 virtual channels, got {vcs}")
    if message_length < 1 or rate < 0:
        raise ValueError(f"need M >= 1 and rate >= 0, got M={message_length}, rate={rate}")
    if pd_escape_factor not in (1, 2):
        raise ValueError(f"pd_escape_factor must be 1 or 2, got {pd_escape_factor}")
    m = float(message_length)
    k_bar = (k - 1) / 2.0
    d_bar = n * k_bar
    lam_c = rate * d_bar / n
    lam_s = rate / vcs
    weights = _hop_weights(d_bar)
    span = math.floor(k_bar + 0.5) if round_span else k_bar
    crossed = [_crossed_dimensions(i, k_bar, n, span) for i in range(1, len(weights) + 1)]

    def waiting(lam: float, s: float) -> float:  # (A1.9), (A1.11): M/G/1, Draper-Ghosh variance
        return lam * s * s * (1.0 + (s - m) ** 2 / (s * s)) / (2.0 * (1.0 - lam * s))

    def stable(s: float) -> bool:
        return lam_c * s < 1.0 and lam_s * s < 1.0

    def blocking(s: float) -> tuple[list[float], float, float]:
        probs = vc_probabilities(lam_c, s, vcs, m, method)
        p_v, p_v1, p_v2 = probs[vcs], probs[vcs - 1], probs[vcs - 2]
        p_a = p_v + 2.0 * p_v1 / vcs + p_v2 / math.comb(vcs, 2)
        p_d = p_v + pd_escape_factor * p_v1 / vcs
        return probs, p_a, p_d

    def step(s: float) -> float:
        _, p_a, p_d = blocking(s)
        p_block = math.fsum(
            w * math.fsum(p * p_d * p_a ** (n - 1 - ell) for ell, p in enumerate(dist))
            for w, dist in zip(weights, crossed, strict=True)
        )
        return m + d_bar + p_block * waiting(lam_c, s)

    s = m + d_bar
    iterations = 0
    while True:
        if not stable(s):
            return None
        if iterations >= max_iterations:
            return None
        s_new = step(s)
        iterations += 1
        if not math.isfinite(s_new):
            return None
        converged = abs(s_new - s) <= tolerance * s_new
        s = s_new
        if converged:
            break
    if not stable(s):
        return None
    probs, p_a, p_d = blocking(s)
    w_s = waiting(lam_s, s)
    v_bar = multiplexing_factor(probs)
    return LatencyPrediction(
        latency=(s + w_s) * v_bar,
        network_latency=s,
        source_wait=w_s,
        multiplexing=v_bar,
        blocking_wait=waiting(lam_c, s),
        channel_rate=lam_c,
        mean_hops=d_bar,
        vc_probabilities=tuple(probs),
        p_adaptive=p_a,
        p_escape=p_d,
        iterations=iterations,
    )


def saturation_rate(
    k: int,
    n: int,
    vcs: int,
    message_length: int,
    method: str = "new",
    *,
    relative_precision: float = 1e-4,
    **options,
) -> float:
    """Largest ``λ_g`` (to ``relative_precision``) at which :func:`ould_khaoua_latency` still
    converges: bisection between 0 and the channel bound ``λ_c M = 1``, i.e.
    ``λ_g = n / (d̄ M)`` (digest §4.1). ``options`` go to :func:`ould_khaoua_latency`."""
    d_bar = n * (k - 1) / 2.0
    lo, hi = 0.0, n / (d_bar * message_length)
    while hi - lo > relative_precision * hi:
        mid = 0.5 * (lo + hi)
        if ould_khaoua_latency(k, n, vcs, message_length, mid, method, **options) is None:
            hi = mid
        else:
            lo = mid
    return lo


def _hop_weights(d_bar: float) -> list[float]:
    """Weights of hops ``i = 1..⌈d̄⌉`` in the A1.3 sum: 1, with the last one ``d̄ - ⌊d̄⌋`` when
    ``d̄`` is fractional."""
    whole = math.floor(d_bar)
    weights = [1.0] * whole
    if d_bar - whole > 1e-12:
        weights.append(d_bar - whole)
    return weights


def _crossed_dimensions(i: int, k_bar: float, n: int, span: float) -> list[float]:
    """``P_i^l``, ``l = 0..j``: probability that ``l`` dimensions are already crossed at hop
    ``i`` (A1.7), ``j = min(n-1, ⌈i/k̄⌉ - 1)`` the hop range of (A1.4) (erratum §6.21).

    ``P_i^l ∝ C(n, l) N_0^{q-1}(i-1-l k̄, n-l)`` with ``q = span``, normalised over
    ``l = 0..j`` (see the module docstring for why not A1.7's per-term denominator). If every
    count is zero (possible only through the fractional ``k̄``), all the mass goes to ``l = j``.
    """
    j = min(n - 1, max(0, math.ceil(i / k_bar - 1e-12) - 1))
    counts = [
        math.comb(n, ell) * _bounded_compositions(i - 1 - ell * k_bar, n - ell, span)
        for ell in range(j + 1)
    ]
    total = math.fsum(counts)
    if total <= 0.0:
        return [0.0] * j + [1.0]
    return [c / total for c in counts]


def _bounded_compositions(r: float, m: int, q: float) -> float:
    """``N_0^{q-1}(r, m) = Σ_l (-1)^l C(m, l) C(r - l q + m - 1, m - 1)`` (A1.8 with ``p = 0``):
    ways to put ``r`` hops into ``m`` dimensions with at most ``q - 1`` hops each.

    For integer ``r, q`` this is the exact count. For real ``r`` or ``q`` (fractional ``k̄``,
    erratum §6.21) the binomial ``C(x, m-1)`` is the polynomial ``x(x-1)...(x-m+2)/(m-1)!`` for
    ``x > m - 2`` and 0 otherwise (``C(x, 0)`` is 1 for ``x >= 0``) -- the convention that makes
    the integer case a count, continued to real arguments. Clamped at 0.
    """

    def binom(x: float, b: int) -> float:
        if b == 0:
            return 1.0 if x >= -1e-12 else 0.0
        if x <= b - 1 + 1e-12:
            return 0.0
        return math.prod(x - t for t in range(b)) / math.factorial(b)

    if m == 0:
        return 1.0 if abs(r) < 1e-12 else 0.0
    total = math.fsum(
        (-1) ** ell * math.comb(m, ell) * binom(r - ell * q + m - 1, m - 1) for ell in range(m + 1)
    )
    return max(0.0, total)
