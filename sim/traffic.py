"""Synthetic traffic and trace replay: what packets each endpoint creates in each cycle.

Permutation patterns (transpose, bit-reversal, bit-complement, shuffle) are defined on the
b = ceil(log2 N)-bit endpoint id. When N is not a power of two a destination >= N is folded
back (mod N); a source that maps onto itself sends nothing under a permutation pattern.
Tornado and neighbour are defined on the ring of endpoint ids: src + ceil(N/2) - 1 and src + 1.
Zipf follows the nDT evaluations (F. J. Andújar et al., *N-Dimensional Twin Torus Networks*,
IEEE Transactions on Computers, 2015): each source ranks the other endpoints in its own seeded
random order and picks rank r with probability proportional to 1 / r**s (s = 1 by default).

Weighted-random follows the Znode thesis (A. Peratikou, *An optimised and generalised node for
fat tree classes*, 2014, §5.2.1): each packet first draws the level it must reach, with the
probability given for that level, then a destination uniformly among those whose nearest common
ancestor with the source is at that level. On fabrics of Znodes (Znodes, super nodes, k-ary
n-trees, XGFTs, HyperZ's Z-nodes) endpoint ``e`` is processor ``e mod P_z`` of Znode
``e div P_z`` with the port labels of its zones; the level of a pair is the thesis's common
level of their labels (its peer level when they sit in different Znodes): the highest level
whose label differs, or 1 when only the Znodes do.

Locality follows the Transit thesis (A. DeHon, *Fat-Tree Routing for Transit*, 1990, §4.5):
the probability P_any of each level is given (it must sum to 1) and a destination is drawn as
under weighted-random, uniformly within its level, so that each destination at level n has
P_particular(n) = P_any(n) / (destinations at level n). A Transit fabric has levels too: a full
tree of L unit-tree stages is a Znode of zones (4,) * 3L (level n: 3 * 4^(n-1) processors), a
hybrid one of zones (N_leaf, 4, ..., 4) whose level 1 is the leaf cluster (the thesis's n = 0)
and a capped one a fourth copy level on top; a bidelta network has the one level.

Injection is Bernoulli (one packet with probability rate/length per cycle per endpoint) or
Poisson (a Poisson number of packets with that mean), with ``rate`` in flits/cycle/endpoint.
"""

from __future__ import annotations

import bisect
import functools
import itertools
import math
import random
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from zfabric.traffic_spec import LOCALITY_TOLERANCE
from zfabric.traffic_spec import TRAFFIC_PATTERNS as PATTERNS

__all__ = [
    "PATTERNS",
    "PERMUTATIONS",
    "BY_LEVEL",
    "TrafficConfig",
    "TraceEntry",
    "Traffic",
    "read_trace",
    "write_trace",
    "destination_function",
    "silent_pattern",
    "fabric_levels",
    "uniform_sources",
    "level_counts",
    "level_probabilities",
    "pair_level",
    "pattern_flows",
    "flows_by_destination",
    "by_destination",
]


@dataclass(frozen=True)
class TrafficConfig:
    pattern: str = "uniform"
    rate: float = 0.1  # offered flits per cycle per endpoint
    packet_length: int | tuple[int, int] = 4  # fixed, or (min, max) uniformly distributed
    process: str = "bernoulli"  # or "poisson"
    hotspots: tuple[int, ...] = (0,)
    hotspot_fraction: float = 0.2
    zipf_exponent: float = 1.0
    #: weighted: the probability of each level (level 1 first), normalised; empty: all equal;
    #: locality: P_any of each level, summing to 1
    level_weights: tuple[float, ...] = ()
    #: weighted, locality: the fabric's zones under each level (its z), :func:`fabric_levels`
    zones: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if self.pattern not in PATTERNS:
            raise ValueError(f"unknown traffic pattern {self.pattern!r}; one of {PATTERNS}")
        if self.pattern in BY_LEVEL:
            if not self.zones:
                raise ValueError(f"{self.pattern} traffic needs a fabric with levels (zones)")
            if self.pattern == "locality" and (
                not self.level_weights or abs(sum(self.level_weights) - 1) > LOCALITY_TOLERANCE
            ):
                raise ValueError(
                    "locality traffic needs the probability of each level, summing to 1, got"
                    f" {self.level_weights}"
                )
            weights = self.level_weights
            if weights and len(weights) != len(self.zones):
                raise ValueError(
                    f"level weights must have {len(self.zones)} entries, one per level,"
                    f" got {len(weights)}"
                )
            if weights and (min(weights) < 0 or sum(weights) <= 0):
                raise ValueError(f"level weights must be >= 0 with a positive sum, got {weights}")
        if not 0 < self.rate <= 1:
            raise ValueError(f"rate must be in (0, 1] flits/cycle/endpoint, got {self.rate!r}")
        if self.process not in ("bernoulli", "poisson"):
            raise ValueError(f"process must be bernoulli or poisson, got {self.process!r}")
        length = self.packet_length
        shortest = length if isinstance(length, int) else length[0]
        if shortest < 1 or (not isinstance(length, int) and length[1] < length[0]):
            raise ValueError(
                f"packet_length must be a length of at least 1 flit or a range (min, max) with"
                f" 1 <= min <= max, got {length!r}"
            )

    @property
    def mean_length(self) -> float:
        if isinstance(self.packet_length, int):
            return float(self.packet_length)
        return sum(self.packet_length) / 2


PERMUTATIONS = ("transpose", "bit-reversal", "bit-complement", "shuffle")
#: patterns whose destination function draws nothing: one destination (or none) per source
FIXED_PATTERNS = (*PERMUTATIONS, "tornado", "neighbour")
#: a batch of fewer (cycle, source) draws than this is drawn by the Python loop: handing it to
#: compiled code (the state copied out and back) costs more than it saves
COMPILED_DRAWS_FROM = 2048
#: the patterns that draw the level first, then a destination within it
BY_LEVEL = ("weighted", "locality")


def _permutation(pattern: str, bits: int) -> Callable[[int], int]:
    mask = (1 << bits) - 1
    half = bits // 2
    if pattern == "transpose":
        return lambda x: ((x << half) | (x >> (bits - half))) & mask
    if pattern == "bit-reversal":
        return lambda x: int(format(x, f"0{bits}b")[::-1], 2) if bits else 0
    if pattern == "bit-complement":
        return lambda x: ~x & mask
    if pattern == "shuffle":
        return lambda x: ((x << 1) | (x >> (bits - 1))) & mask if bits else 0
    raise ValueError(pattern)


def _permutation_table(pattern: str, n: int) -> list[int]:
    """Each source's destination under a permutation pattern on ``n`` endpoints (folded mod n;
    a source mapped onto itself sends nothing)."""
    permute = _permutation(pattern, max(1, math.ceil(math.log2(n))))
    return [permute(src) % n for src in range(n)]


def fabric_levels(plan) -> tuple[int, ...] | None:
    """The zones under each level (z) of a fabric of Znodes, whose endpoints are numbered Znode
    by Znode (znode and its presets, hyperz and hyperx), or of a Transit network (the module
    doc); None for a fabric without levels."""
    if plan.topology in ("znode", "hyperz"):
        return tuple(plan.topology_params["z"])
    if plan.topology == "transit":
        params = plan.topology_params
        if params["form"] == "bidelta":
            return (len(plan.endpoints),)
        tree = (4,) * (3 * params["ut_layers"]) + (4,) * params["cap"]
        if params["form"] == "full":
            return tree
        return (3 * 4 ** (params["leaf_stages"] - 1), *tree)
    return None


def level_counts(zones: tuple[int, ...], endpoints: int) -> list[int]:
    """Per level (1 first): how many destinations a source has at that level. Level 1: the
    other processors of its level-1 zone in every Znode (m·z_1 - 1); level c >= 2: a different
    level-(c-1) zone of its level-c zone, in every Znode (m·(z_c - 1)·z_1···z_(c-1))."""
    znodes = endpoints // math.prod(zones)
    counts = [znodes * zones[0] - 1]
    for level in range(1, len(zones)):
        counts.append(znodes * (zones[level] - 1) * math.prod(zones[:level]))
    return counts


def level_probabilities(config: TrafficConfig, endpoints: int) -> list[float]:
    """Weighted-random's probability of each level (normalised weights, equal by default);
    raises ValueError for a fabric it does not fit or a weight on a level with no
    destination."""
    zones = config.zones
    if endpoints % math.prod(zones):
        raise ValueError(f"{endpoints} endpoints are not whole Znodes of {math.prod(zones)}")
    weights = config.level_weights or (1.0,) * len(zones)
    counts = level_counts(zones, endpoints)
    if not config.level_weights:  # equal over the levels that have destinations
        weights = tuple(1.0 if count else 0.0 for count in counts)
    for level, (weight, count) in enumerate(zip(weights, counts, strict=True), 1):
        if weight and not count:
            raise ValueError(f"level {level} has no destination on this fabric (weight {weight})")
    total = sum(weights)
    return [weight / total for weight in weights]


def pair_level(src: int, dst: int, zones: tuple[int, ...]) -> int:
    """The level of the pair's nearest common ancestor: the highest level whose label differs,
    1 when only their Znodes do (the thesis's common or peer level)."""
    per_znode = math.prod(zones)
    x, y = src % per_znode, dst % per_znode
    level = len(zones)
    stride = per_znode // zones[-1]
    while level > 1 and (x // stride) % zones[level - 1] == (y // stride) % zones[level - 1]:
        level -= 1
        stride //= zones[level - 1]
    return level


def _weighted(config: TrafficConfig, n: int, rng: random.Random) -> Callable[[int], int]:
    zones = config.zones
    per_znode, znodes = math.prod(zones), n // math.prod(zones)
    cumulative = list(itertools.accumulate(level_probabilities(config, n)))
    under = [math.prod(zones[:level]) for level in range(len(zones))]  # z_1 ... z_(level-1)

    def weighted(src: int) -> int:
        level = min(bisect.bisect_right(cumulative, rng.random()), len(zones) - 1)
        znode, x = divmod(src, per_znode)
        if level == 0:  # another processor of the level-1 zone, in any Znode
            pick = rng.randrange(znodes * zones[0] - 1)
            pick += pick >= znode * zones[0] + x % zones[0]
            znode, label = divmod(pick, zones[0])
            return znode * per_znode + x - x % zones[0] + label
        block = under[level]  # processors under one level-``level`` zone
        label = rng.randrange(zones[level] - 1)
        label += label >= (x // block) % zones[level]
        above = x - x % (block * zones[level])
        return rng.randrange(znodes) * per_znode + above + label * block + rng.randrange(block)

    return weighted


def silent_pattern(pattern: str, endpoints: int, fabric: str) -> str | None:
    """Why ``pattern`` sends nothing on ``fabric``'s ``endpoints``, or None if some source
    sends: a permutation on few endpoints may map every one onto itself (transpose,
    bit-reversal and shuffle on 2)."""
    if pattern in PERMUTATIONS and all(
        dst == src for src, dst in enumerate(_permutation_table(pattern, endpoints))
    ):
        return (
            f"{pattern!r} sends nothing on the {endpoints} endpoints of {fabric}: each one is its"
            " own destination"
        )
    return None


def destination_function(
    config: TrafficConfig, endpoints: int, rng: random.Random
) -> Callable[[int], int | None]:
    """``dst(src)`` for the pattern: an endpoint id, or None when this source sends nothing."""
    n = endpoints
    pattern = config.pattern
    if pattern == "uniform":

        def uniform(src: int) -> int:
            dst = rng.randrange(n - 1)
            return dst + (dst >= src)

        return uniform
    if pattern in PERMUTATIONS:
        table = _permutation_table(pattern, n)
        return lambda src: None if table[src] == src else table[src]
    if pattern == "tornado":
        shift = math.ceil(n / 2) - 1 or 1
        return lambda src: (src + shift) % n
    if pattern == "neighbour":
        return lambda src: (src + 1) % n
    if pattern in BY_LEVEL:
        return _weighted(config, n, rng)
    if pattern == "hotspot":
        hot = [h for h in config.hotspots if 0 <= h < n]
        fallback = destination_function(TrafficConfig(rate=config.rate), n, rng)

        def hotspot(src: int) -> int:
            targets = [h for h in hot if h != src]
            if targets and rng.random() < config.hotspot_fraction:
                return rng.choice(targets)
            return fallback(src)

        return hotspot
    # zipf
    cumulative = list(itertools.accumulate(_zipf_weights(config, n)))
    orders = _zipf_orders(n, rng)

    def zipf(src: int) -> int:
        rank = bisect.bisect_left(cumulative, rng.random() * cumulative[-1])
        return orders[src][min(rank, n - 2)]

    return zipf


def _zipf_weights(config: TrafficConfig, n: int) -> list[float]:
    return [1 / (rank**config.zipf_exponent) for rank in range(1, n)]


def _zipf_orders(n: int, rng: random.Random) -> list[list[int]]:
    """Each source's seeded ranking of the other endpoints (drawn first from a fresh rng)."""
    orders = []
    for src in range(n):
        others = [d for d in range(n) if d != src]
        random.Random(rng.random()).shuffle(others)
        orders.append(others)
    return orders


def pattern_flows(
    config: TrafficConfig, endpoints: int, seed: int = 1
) -> dict[tuple[int, int], float]:
    """(src, dst) -> probability that a packet src creates goes to dst, for ``config``'s pattern.

    The exact distribution :class:`Traffic` with the same ``seed`` draws from (zipf's rankings
    depend on the seed). A source's probabilities sum to 1, or to 0 for a source that sends
    nothing under a permutation pattern.
    """
    n = endpoints
    pattern = config.pattern
    if pattern == "uniform":
        return {
            (src, dst): share
            for dst, sources in flows_by_destination(config, n, seed)
            for src, share in sources.items()
        }
    if pattern == "hotspot":
        flows = pattern_flows(TrafficConfig(rate=config.rate), n)
        for src in range(n):
            targets = [h for h in config.hotspots if 0 <= h < n and h != src]
            if not targets:
                continue
            for dst in range(n):
                if dst != src:
                    flows[(src, dst)] *= 1 - config.hotspot_fraction
            for hot in targets:
                flows[(src, hot)] += config.hotspot_fraction / len(targets)
        return flows
    if pattern in BY_LEVEL:
        probabilities = level_probabilities(config, n)
        counts = level_counts(config.zones, n)
        flows = {}
        for src in range(n):
            for dst in range(n):
                level = pair_level(src, dst, config.zones) - 1
                if dst != src and probabilities[level]:
                    flows[(src, dst)] = probabilities[level] / counts[level]
        return flows
    if pattern == "zipf":
        weights = _zipf_weights(config, n)
        total = sum(weights)
        orders = _zipf_orders(n, random.Random(seed))
        return {
            (src, dst): weight / total
            for src, order in enumerate(orders)
            for dst, weight in zip(order, weights, strict=True)
        }
    # deterministic patterns: the destination function draws nothing from its rng
    dst_of = destination_function(config, n, random.Random(seed))
    return {(src, dst_of(src)): 1.0 for src in range(n) if dst_of(src) is not None}


def flows_by_destination(
    config: TrafficConfig, endpoints: int, seed: int = 1
) -> Iterator[tuple[int, dict[int, float]]]:
    """:func:`pattern_flows` grouped by destination: (dst, {src: share > 0}), each destination
    once. Uniform's are made one destination at a time, never all N^2 pairs at once (some
    10 GB at 8192 endpoints), so the analysis walks a big fabric destination by destination."""
    if config.pattern == "uniform":
        for dst in range(endpoints):
            yield dst, uniform_sources(dst, endpoints)
        return
    yield from by_destination(pattern_flows(config, endpoints, seed))


def uniform_sources(dst: int, endpoints: int) -> dict[int, float]:
    """Uniform traffic's flows into ``dst``: {src: share}, every other endpoint alike (so the
    pattern is invariant under every permutation of the endpoints)."""
    share = 1 / (endpoints - 1)
    return {src: share for src in range(endpoints) if src != dst}


def by_destination(
    flows: Mapping[tuple[int, int], float],
) -> Iterator[tuple[int, dict[int, float]]]:
    """``flows`` ((src, dst) -> share) as (dst, {src: share > 0}), each destination once."""
    groups: dict[int, dict[int, float]] = {}
    for (src, dst), share in flows.items():
        if share > 0:
            groups.setdefault(dst, {})[src] = share
    return iter(groups.items())


@dataclass(frozen=True)
class TraceEntry:
    cycle: int
    src: int
    dst: int
    length: int


class Traffic:
    """Seeded generator: :meth:`packets_at` yields the (src, dst, length) created in a cycle."""

    def __init__(self, config: TrafficConfig, endpoints: int, seed: int = 1):
        if endpoints < 2:
            raise ValueError("traffic needs at least two endpoints")
        self.config = config
        self.endpoints = endpoints
        self.seed = seed
        self._rng = random.Random(seed)
        self._dst = destination_function(config, endpoints, self._rng)
        self._packet_rate = config.rate / config.mean_length

    def _count(self) -> int:
        if self.config.process == "bernoulli":
            return 1 if self._rng.random() < self._packet_rate else 0
        # Poisson by inversion (rates here are small)
        threshold, count, product = math.exp(-self._packet_rate), 0, self._rng.random()
        while product > threshold:
            count += 1
            product *= self._rng.random()
        return count

    def _length(self) -> int:
        length = self.config.packet_length
        return length if isinstance(length, int) else self._rng.randint(*length)

    def packets_between(self, start: int, end: int) -> np.ndarray:
        """The (cycle, src, dst, length) of :meth:`packets_at` for cycles ``start`` to
        ``end - 1`` in turn, as the rows of an integer array, the generator left where those
        calls leave it. A large batch of Bernoulli traffic whose destinations are uniform or
        fixed is drawn in compiled code (:mod:`zfabric.sim.draws`, the same draws bit for
        bit)."""
        if not self._compiled_draws or (end - start) * self.endpoints < COMPILED_DRAWS_FROM:
            rows = [
                (cycle, *packet) for cycle in range(start, end) for packet in self.packets_at(cycle)
            ]
            return np.array(rows, np.int64).reshape(-1, 4)
        from . import draws  # numba: loaded for large batches only

        length = self.config.packet_length
        if isinstance(length, int):
            shortest, lengths = length, 0
        else:  # randint(low, high) draws below high - low + 1, even when they are equal
            shortest, lengths = length[0], length[1] - length[0] + 1
        state = self._rng.getstate()
        mt = draws.state_array(state)
        rows = draws.bernoulli_packets(
            mt,
            start,
            end,
            self.endpoints,
            self._packet_rate,
            self._destination_table,
            shortest,
            lengths,
        )
        self._rng.setstate(draws.state_tuple(mt, state[2]))
        return rows

    @property
    def _compiled_draws(self) -> bool:
        """Whether :mod:`zfabric.sim.draws` can draw this traffic: Bernoulli, its destinations
        uniform or fixed (the other patterns draw in the Python loop)."""
        pattern = self.config.pattern
        return self.config.process == "bernoulli" and (
            pattern == "uniform" or pattern in FIXED_PATTERNS
        )

    @functools.cached_property
    def _destination_table(self) -> np.ndarray:
        """:func:`~zfabric.sim.draws.bernoulli_packets`'s destination table for this traffic
        (:data:`~zfabric.sim.draws.UNIFORM` for uniform)."""
        from . import draws

        if self.config.pattern == "uniform":
            return draws.UNIFORM
        fixed = map(self._dst, range(self.endpoints))  # these draw nothing
        return np.array([draws.NO_DESTINATION if dst is None else dst for dst in fixed], np.int64)

    def packets_at(self, cycle: int) -> Iterator[tuple[int, int, int]]:
        if self.config.process == "bernoulli":  # the common case, its draws in the same order
            draw, rate, destination = self._rng.random, self._packet_rate, self._dst
            for src in range(self.endpoints):
                if draw() < rate:
                    dst = destination(src)
                    if dst is not None:
                        yield src, dst, self._length()
            return
        for src in range(self.endpoints):
            for _ in range(self._count()):
                dst = self._dst(src)
                if dst is not None:
                    yield src, dst, self._length()


def read_trace(path: str | Path) -> list[TraceEntry]:
    """Read a trace: one ``cycle src dst length`` per line (spaces or commas), # comments."""
    entries = []
    for number, line in enumerate(Path(path).read_text().splitlines(), 1):
        text = line.split("#", 1)[0].replace(",", " ").split()
        if not text:
            continue
        try:
            cycle, src, dst, length = (int(field) for field in text)
        except ValueError:
            raise ValueError(
                f"{path}:{number}: expected 'cycle src dst length', got {line!r}"
            ) from None
        reason = (
            f"negative cycle {cycle}"
            if cycle < 0
            else f"length {length} (at least 1 flit)"
            if length < 1
            else f"src equals dst ({src})"
            if src == dst
            else None
        )
        if reason:
            raise ValueError(f"{path}:{number}: {reason} in {line!r}")
        entries.append(TraceEntry(cycle, src, dst, length))
    entries.sort(key=lambda e: e.cycle)
    return entries


def write_trace(path: str | Path, entries: list[TraceEntry]) -> None:
    lines = ["# cycle src dst length"] + [f"{e.cycle} {e.src} {e.dst} {e.length}" for e in entries]
    Path(path).write_text("\n".join(lines) + "\n")
