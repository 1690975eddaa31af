"""What chapters 4 and 5 of Alzeidi's thesis share: the network, the timing and one path.

The finite-buffer models of the thesis (digest ``shared/reference/wormhole-models.md`` §2.2,
§2.3; equation numbers in parentheses) differ in how a header is blocked at a hop (contention
θ: DOR's VC sets in :mod:`zfabric.sim.wormhole_dor`, Duato's in
:mod:`zfabric.sim.wormhole_duato`) and in how paths are averaged. Everything else is here:

* :class:`Cube` -- the k-ary n-cube: bidirectional torus (chapters 4, 5), unidirectional torus
  (§4.6.1, §5.5.1; every ``k = 2`` is the hypercube, §4.6.2, §5.5.2) or mesh (not in the thesis:
  its equations with the mesh's hop distribution and mean channel rate). Hop distributions are
  enumerated, not taken from (4.6)/(4.8), which are wrong as printed (erratum §6.9), and the
  radices may differ per dimension.
* :class:`Timing` -- what the thesis's unit cycle costs: a flit per channel, a header per hop,
  a channel's holding time per effective channel, and cycles outside the hops. The thesis is
  ``Timing()``; chapter 6 (t_c, t_r, t_s) and zfabric's switch (docs/analytic.md) map onto it.
* :func:`solve_path` -- one message's path of ``h`` hops: effective channels (4.2)/(5.14),
  waiting (4.19)/(5.13), buffer blocking (4.30)-(4.32)/(5.23), blocking delay (4.15)/(5.11),
  holding times (4.24)-(4.28)/(5.15), iterated Gauss-Jacobi as Steps 4.1-4.4 / 3.2-3.5 say.

Errata applied (digest §6): §6.5, the injection channel's holding time ``T_0`` sums the
blocking of steps ``1..A_0-1`` (``B_0 = 0``); §6.6, ``T_i`` includes ``B_i`` as printed;
§6.22, relative tolerance and an iteration cap, saturation reported, never looped on.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from .wormhole_analytic import buffer_blocking

__all__ = [
    "Cube",
    "Timing",
    "THESIS_TIMING",
    "PathSolution",
    "highest_stable_rate",
    "solve_path",
    "waiting_time",
]

KINDS = ("torus", "unidirectional", "mesh")


@dataclass(frozen=True)
class Cube:
    """A k-ary n-cube as the models see it: ``radices`` (k per dimension, in the order DOR
    corrects them) and ``kind``: ``torus`` (bidirectional, 2n output channels per router),
    ``unidirectional`` (n), or ``mesh`` (no wrap-around; the thesis has no mesh model)."""

    radices: tuple[int, ...]
    kind: str = "torus"

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {self.kind!r}")
        if not self.radices or any(k < 2 for k in self.radices):
            raise ValueError(f"need one or more radices >= 2, got {self.radices!r}")

    @property
    def nodes(self) -> int:
        """``N = Π k_j`` (``k^n``)."""
        return math.prod(self.radices)

    @property
    def rings(self) -> bool:
        """Whether some dimension closes a ring of three or more channels, which DOR and
        Duato's escape VCs break with two VC classes (§1.5, §1.6); a mesh and the hypercube
        have none, so every VC is usable there (4.47), (5.32)-(5.33)."""
        return self.kind != "mesh" and any(k > 2 for k in self.radices)

    def _hops(self, k: int, offset: int) -> int:
        if self.kind == "torus":
            return min(offset, k - offset)  # (5.4), min form for odd k (erratum §6.10)
        return offset  # unidirectional (5.28); a mesh's |a - b|

    def _dimension(self, k: int) -> Counter[int]:
        """Hops in one dimension -> ordered coordinate pairs (a, b), a == b included."""
        if self.kind == "mesh":
            return Counter(abs(a - b) for a in range(k) for b in range(k))
        return Counter(self._hops(k, (b - a) % k) for a in range(k) for b in range(k))

    def hop_vectors(self) -> dict[tuple[int, ...], float]:
        """Per-dimension hop vector -> probability over ordered pairs of distinct nodes
        (uniform destinations over the other ``N - 1`` nodes, (4.5), (5.5)); on a torus every
        source sees the same (the thesis fixes ``s = 0``, L1489), on a mesh this averages over
        sources."""
        per_dimension = [self._dimension(k) for k in self.radices]
        counts: Counter[tuple[int, ...]] = Counter()
        for combo in itertools.product(*(d.items() for d in per_dimension)):
            vector = tuple(hops for hops, _ in combo)
            counts[vector] += math.prod(count for _, count in combo)
        del counts[(0,) * len(self.radices)]  # a node does not send to itself
        total = sum(counts.values())
        return {vector: count / total for vector, count in counts.items()}

    def mean_hops(self) -> float:
        """``d̄ = Σ_h h P_h`` over the ``N - 1`` destinations (4.17), (5.7)."""
        return math.fsum(sum(v) * p for v, p in self.hop_vectors().items())

    def mean_hops_with_self(self) -> float:
        """The chapter 5 average ``d̄ = n k̄`` (5.8)-(5.9), (5.29), taken over all ``N``
        destinations, the source included: ``k/4`` per even-k ring, ``(k - 1/k)/4`` per odd-k
        ring, ``(k-1)/2`` unidirectional; a mesh's is ``(k² - 1)/(3k)``. It understates
        :meth:`mean_hops` by ``(N-1)/N`` (digest §2.0 B6)."""
        return math.fsum(
            math.fsum(h * c for h, c in self._dimension(k).items()) / (k * k) for k in self.radices
        )

    def dimension_hops(self) -> list[float]:
        """Mean hops in each dimension over the ``N - 1`` destinations."""
        vectors = self.hop_vectors()
        return [math.fsum(v[j] * p for v, p in vectors.items()) for j in range(len(self.radices))]

    def channels(self, dimension: int) -> float:
        """Directed channels of ``dimension`` in the whole network: ``2N`` on a torus (two
        output channels per router), ``N`` unidirectional, ``2N(k-1)/k`` on a mesh."""
        k = self.radices[dimension]
        if self.kind == "torus":
            return 2.0 * self.nodes
        if self.kind == "unidirectional":
            return float(self.nodes)
        return 2.0 * self.nodes * (k - 1) / k

    def channel_rates(self, rate: float) -> list[float]:
        """``λ_c`` of each dimension's channels at ``λ_g = rate`` under dimension-order
        routing: the traffic ``N λ_g`` times its mean hops in the dimension, spread over the
        dimension's channels -- (4.17) ``λ_g/(2n) Σ h P_h`` when every radix is equal, (4.41)
        unidirectional; on a mesh the mean over its unequally loaded channels."""
        return [
            rate * self.nodes * hops / self.channels(j)
            for j, hops in enumerate(self.dimension_hops())
        ]

    def mean_channel_rate(self, rate: float, mean_hops: float | None = None) -> float:
        """``λ_c = N λ_g d̄ / (channels)`` over every channel: (5.10) ``λ_g d̄ / (2n)``,
        (5.30) ``λ_g d̄ / n``; ``mean_hops`` defaults to :meth:`mean_hops`."""
        hops = self.mean_hops() if mean_hops is None else mean_hops
        total = math.fsum(self.channels(j) for j in range(len(self.radices)))
        return rate * self.nodes * hops / total


@dataclass(frozen=True)
class Timing:
    """Cycles of the thesis's unit steps in some router (digest §6.19, §6.20). The thesis
    (``Timing()``) moves a flit over a channel in one cycle and routes a header in one cycle
    per router, so a lone ``h``-hop message takes ``M + h`` (4.11), (5.25), a channel is held
    ``M + A`` cycles, ``A`` its effective channels (4.28), (5.15), and a message keeps its VCs
    busy ``M + h`` cycles, the service of the multiplexing degree (4.36), (5.26).

    * ``flit``: cycles per flit on a channel (``t_c``, §6.4.1): a message's transmission is
      ``M · flit``, its least holding time too;
    * ``hop``: a header's cycles per hop at zero load (the thesis's routing cycle; chapter 6
      here ``t_r + t_s + t_c``; zfabric ``stages + 1``);
    * ``hold``: the cycles each hop holds a message's channels beyond its flits: each effective
      channel adds it to a holding time, each hop to the multiplexing service. The thesis's
      routing cycle (L1543, L1614): ``hop``, the default. zfabric's switch streams a worm one
      flit per cycle behind its head, so its channels are held ``M`` cycles: 0;
    * ``extra``: cycles of a lone message outside its hops (0 in the thesis; zfabric's
      injection, last switch and ejection link), holding no channel of the path.
    """

    flit: float = 1.0
    hop: float = 1.0
    hold: float | None = None
    extra: float = 0.0

    def __post_init__(self) -> None:
        if self.flit <= 0 or self.hop < 0 or self.extra < 0 or (self.hold or 0) < 0:
            raise ValueError(f"timing needs flit > 0 and the rest >= 0, got {self}")

    @property
    def holding_per_channel(self) -> float:
        return self.hop if self.hold is None else self.hold

    def transmission(self, message_length: float) -> float:
        """``M · flit``: a lone message's transmission, a channel's least holding time."""
        return message_length * self.flit

    def zero_load(self, message_length: float, hops: float) -> float:
        """A lone message's network latency: ``M + h`` in the thesis (4.11), (5.25)."""
        return self.transmission(message_length) + hops * self.hop + self.extra

    def occupancy(self, message_length: float, hops: float) -> float:
        """A lone message's time on its VCs, the multiplexing service without blocking:
        ``M + h`` in the thesis (``S_h`` of (4.36), ``S^<s,d>`` of (5.26))."""
        return self.transmission(message_length) + hops * self.holding_per_channel


THESIS_TIMING = Timing()


def waiting_time(rate: float, holding: float, minimum: float) -> float:
    """M/G/1 waiting time with the Draper-Ghosh variance ``(T - M)²`` (4.16)-(4.19), (5.12)-
    (5.13), (4.34), (5.24)::

        W = λ [T² + (T - M)²] / (2 (1 - λ T))

    ``minimum`` is the least service time (``M`` in the thesis). Requires ``λ T < 1``."""
    return rate * (holding * holding + (holding - minimum) ** 2) / (2.0 * (1.0 - rate * holding))


@dataclass(frozen=True)
class PathSolution:
    """The solved fixed point of one path (cycles)."""

    blocking: tuple[float, ...]  # B_i, i = 1..h  (4.15), (5.11)
    holding: tuple[float, ...]  # T_i, i = 0..h+1  (4.24)-(4.28), (5.15); T_0 the injection
    iterations: int

    @property
    def total_blocking(self) -> float:
        return math.fsum(self.blocking)


def solve_path(
    rates: Sequence[float],
    contention: Callable[[int, float], float],
    message_length: int,
    buffer_depth: int,
    timing: Timing = THESIS_TIMING,
    *,
    tolerance: float = 1e-9,
    max_iterations: int = 10_000,
) -> PathSolution | None:
    """Blocking delays and holding times of a path whose step ``i = 1..h`` uses a channel of
    rate ``rates[i-1]``; ``contention(i, T_i)`` is θ_i, the probability that every VC the
    header may take at step ``i`` is busy when channels are held ``T_i`` (4.29), (5.20)::

        A_i = min(⌈M/F⌉, h - i + 1)                       i = 0..h       (4.2), (5.14)
        T_{h+1} = M                                                        (4.24)
        W_i = λ_i [T_i² + (T_i - M)²] / (2 (1 - λ_i T_i))                 (4.19), (5.13)
        Υ_i = Υ(λ_i M, T_{i+1}/M) of the F-flit buffer of step i          (4.30)-(4.32)
        B_i = θ_i Υ_i W_i                                                  (4.14), (4.15)
        T_i = M + A_i + Σ_{l=i}^{i+A_i-1} B_l                              (4.28), (5.15)
        T_0 = M + A_0 + Σ_{l=1}^{A_0-1} B_l                                (erratum §6.5)

    with ``M`` standing for ``timing.transmission(M)`` and each effective channel adding
    ``timing.holding_per_channel`` (1 in the thesis). Initialised to ``T_i = M + A_i`` (Step
    4.1), then all ``B`` from the old ``T`` and all ``T`` from the new ``B`` (Steps 4.2-4.3)
    until every ``T`` moves by less than ``tolerance`` relatively. The map is increasing in
    ``T``, so the iterates rise to the smallest fixed point. Returns None (saturation) once
    some ``λ_i T_i >= 1`` (L1330) or after ``max_iterations``.
    """
    if message_length < 1 or buffer_depth < 1:
        raise ValueError(f"need M >= 1 and F >= 1, got {message_length}, {buffer_depth}")
    h = len(rates)
    minimum = timing.transmission(message_length)
    per_channel = timing.holding_per_channel
    worm = math.ceil(message_length / buffer_depth)  # buffers a whole message fills
    effective = [min(worm, h - i + 1) for i in range(h + 1)]  # (4.2), (5.14)
    base = [minimum + a * per_channel for a in effective]
    holding = [*base, minimum]  # Step 4.1; T_{h+1} = M (4.24)
    for iteration in range(1, max_iterations + 1):
        if any(rates[i - 1] * holding[i] >= 1.0 for i in range(1, h + 1)):
            return None
        blocking = [
            contention(i, holding[i])
            * buffer_blocking(rates[i - 1], holding[i + 1], minimum, message_length, buffer_depth)
            * waiting_time(rates[i - 1], holding[i], minimum)
            for i in range(1, h + 1)
        ]  # B_1..B_h; blocking[i-1] is B_i

        # B_first..B_last, blocking[i-1] being B_i
        new = [base[0] + math.fsum(blocking[: effective[0] - 1])]
        new += [
            base[i] + math.fsum(blocking[i - 1 : i + effective[i] - 1]) for i in range(1, h + 1)
        ]
        new.append(minimum)
        if not all(math.isfinite(t) for t in new):
            return None
        converged = all(abs(a - b) <= tolerance * a for a, b in zip(new, holding, strict=True))
        holding = new
        if converged:
            if any(rates[i - 1] * holding[i] >= 1.0 for i in range(1, h + 1)):
                return None
            return PathSolution(tuple(blocking), tuple(holding), iteration)
    return None


def highest_stable_rate(
    solve: Callable[[float], object | None], high: float, relative_precision: float
) -> float:
    """The highest rate in ``(0, high)`` at which ``solve`` returns a prediction, to
    ``relative_precision`` of ``high``: the models saturate once and stay saturated above
    (their fixed points only grow with the rate), so bisection finds the edge."""
    low = 0.0
    while high - low > relative_precision * high:
        middle = 0.5 * (low + high)
        if solve(middle) is None:
            high = middle
        else:
            low = middle
    return low
