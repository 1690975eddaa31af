"""The Znode cost optimiser: the cheapest Znode (or super node) for a processor count.

After the optimiser of A. Peratikou, *An optimised and generalised node for fat tree classes*
(PhD thesis, University of Portsmouth, 2014), ch. 4 and App. B. The thesis gives the objective
and the constraints but not the search; this module searches exhaustively, so every
configuration of least cost is found, per level.

Objective (eq. 4.10): Cost = m · Σ_i R_iᵀ · L_i², with R_iᵀ = R_i · z_{i+1} ⋯ z_n the level-i
switches of one Znode and L_i the links of one level-i switch (down + up + side ports). The
relative power is 10·log10(Cost / P²) dB: the Znode against one P-port crossbar.

Constraints (§4.2):

- ∏ z = P / m, every z_i ≥ 2 (a level joining a single zone adds switches and no reach);
- L_i ≤ θ, side ports h_i·(m − 1) included with h_i = 1 (the spec's default);
- the R ratio of the chosen connectivity: *forward* R_{i+1} = G_i·R_i with ψ_{i+1} ≤ R_i,
  *backward* R_i = G_i·R_{i+1} with ψ_{i+1} ≤ R_{i+1}, *full* any R (every switch of a zone
  joins every switch of its parent zone; ψ is implied);
- the full-bisection traffic constraint (App. B, with λq/μ = 1): the up links leaving a level-i
  zone carry all its processors' traffic, R_i · up_i ≥ z_1 ⋯ z_i for 1 ≤ i < n. App. B's down
  constraint at level i is the same inequality at level i − 1 (a zone's down links are its
  children's up links) and holds trivially at level 1, so it adds nothing.

The thesis's "P ≤ m² × n" super-node constraint is left out: its left-hand side is lost and,
read literally, it refuses the thesis's own 512 × 8 run (digest §7.8).

Search. Per level count n and ordered factorisation z, forward and backward links depend only
on the ratios G_i (and ψ), so the R vector is a ratio vector times a scale (R_1 forward, R_n
backward). Cost is the scale times a per-unit cost, and every constraint on the scale is a lower
bound, so each ratio vector has exactly one candidate: its least feasible scale (any larger
scale costs strictly more and cannot tie). Ratio vectors are enumerated depth first; L_i ≤ θ
bounds every G_i. Full connectivity has no ratios, and θ bounds every R_i directly. A branch is
cut only when a lower bound on its cost is *strictly* above the best cost found at that level,
so no tie is lost (``bench/optimise_speed.py`` measures the search).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from .topologies.znode import ZnodeParams

__all__ = [
    "CONNECTIVITIES",
    "DEFAULT_THETA",
    "DEFAULT_MAX_LEVELS",
    "Candidate",
    "LevelResult",
    "Optimum",
    "cost",
    "relative_power_db",
    "factorisations",
    "psi_vector",
    "optimise",
    "optimise_level",
    "spec_for",
]

CONNECTIVITIES = ("forward", "backward", "full")
#: the thesis's technology limit on links per switch in every reported run
DEFAULT_THETA = 64
#: levels searched when none are given: an interactive search up to 8192 processors
DEFAULT_MAX_LEVELS = 9


def relative_power_db(cost: int, processors: int) -> float:
    """10·log10(Cost / P²): the fabric's cost against a single P-port crossbar (digest §4.1)."""
    return 10 * math.log10(cost / processors**2)


def cost(params: ZnodeParams) -> int:
    """Cost = m · Σ_i R_iᵀ · L_i² of a built configuration, link counts from :class:`ZnodeParams`
    (the topology builder's own counts, so the optimiser's figures are those of the fabric)."""
    per_znode = sum(
        params.R[level - 1] * params.zones(level) * params.radix(level) ** 2
        for level in range(1, params.n + 1)
    )
    return params.znodes * params.layers * per_znode


@dataclass(frozen=True)
class Candidate:
    """One configuration: z, R and ψ as a ``kind: znode`` spec writes them, its links per switch
    (side ports included) and its cost."""

    z: tuple[int, ...]
    R: tuple[int, ...]
    psi: tuple[int, ...]
    links: tuple[int, ...]
    cost: int
    znodes: int = 1

    @property
    def processors(self) -> int:
        return self.znodes * math.prod(self.z)

    @property
    def relative_power_db(self) -> float:
        return relative_power_db(self.cost, self.processors)

    def params(self, theta: int = DEFAULT_THETA) -> ZnodeParams:
        """The topology builder's parameters for this configuration."""
        return ZnodeParams(z=self.z, R=self.R, psi=self.psi, znodes=self.znodes, theta=theta)

    def pick_key(self) -> tuple:
        """The default pick among ties (the thesis states no rule): the fewest links on the
        busiest switch (the smallest crossbar to build), then the fewest switches, then the
        lexicographically smallest z and R."""
        return (max(self.links), self.switches, self.z, self.R)

    @property
    def switches(self) -> int:
        """Routing switches of the whole fabric: m · Σ R_i · N_i."""
        return self.znodes * sum(r * math.prod(self.z[i + 1 :]) for i, r in enumerate(self.R))


@dataclass(frozen=True)
class LevelResult:
    """Every least-cost configuration with ``levels`` levels, the default pick first."""

    levels: int
    ties: tuple[Candidate, ...]

    @property
    def pick(self) -> Candidate:
        return self.ties[0]

    @property
    def cost(self) -> int:
        return self.ties[0].cost


@dataclass(frozen=True)
class Optimum:
    """The search's answer: the best configurations of each feasible level count."""

    processors: int
    znodes: int
    theta: int
    connectivity: str
    levels: tuple[LevelResult, ...]

    @property
    def best(self) -> tuple[LevelResult, ...]:
        """The level counts reaching the least cost overall (ties across levels kept)."""
        if not self.levels:
            return ()
        least = min(result.cost for result in self.levels)
        return tuple(result for result in self.levels if result.cost == least)


def factorisations(value: int, parts: int, minimum: int = 2) -> Iterator[tuple[int, ...]]:
    """Every ordered factorisation of ``value`` into ``parts`` factors, each ≥ ``minimum``."""
    if parts == 1:
        if value >= minimum:
            yield (value,)
        return
    for first in range(minimum, value // minimum ** (parts - 1) + 1):
        if value % first == 0:
            for rest in factorisations(value // first, parts - 1, minimum):
                yield (first, *rest)


def psi_vector(psi: int | Sequence[int] | None, levels: int) -> tuple[int, ...]:
    """ψ per level. None is all 1; one integer k is ψ_1 = 1 and ψ_i = k above (a processor
    attaches to each level-1 switch of its zone by one link, digest §1.4); a sequence is taken
    as it is and must have ``levels`` entries, ψ_1 = 1."""
    if psi is None:
        return (1,) * levels
    if isinstance(psi, int):
        if psi < 1:
            raise ValueError(f"psi must be >= 1, not {psi!r}")
        return (1,) + (psi,) * (levels - 1)
    values = tuple(psi)
    if len(values) != levels:
        raise ValueError(f"psi must have {levels} entries (one per level), not {values!r}")
    if values[0] != 1 or min(values) < 1:
        raise ValueError(f"psi must start with 1 and be >= 1 everywhere, not {values!r}")
    return values


class _Best:
    """The least cost found at one level count and every candidate reaching it."""

    def __init__(self) -> None:
        self.cost: float = math.inf
        self.found: list[Candidate] = []

    def offer(self, candidate: Candidate) -> None:
        if candidate.cost < self.cost:
            self.cost, self.found = candidate.cost, [candidate]
        elif candidate.cost == self.cost:
            self.found.append(candidate)


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


def _search_ratios(
    z: tuple[int, ...], psi: tuple[int, ...], theta: int, m: int, backward: bool, best: _Best
) -> None:
    """Forward or backward connectivity: every ratio vector with its least feasible scale.

    Levels are visited so that each ratio fixes one level's links: forward bottom-up (G_i =
    R_{i+1}/R_i sets level i's up links G_i·ψ_{i+1}), backward top-down (G_i = R_i/R_{i+1} sets
    level i+1's down links G_i·z_{i+1}·ψ_{i+1}). ``mult[i]`` is R_i / scale, 0 while unknown.
    """
    n, side = len(z), m - 1
    under = [math.prod(z[:i]) for i in range(n + 1)]  # under[i] = z_1 ⋯ z_i
    zones = [math.prod(z[i:]) for i in range(n + 1)]  # zones[i] = N_i, level-i zones
    down = [0] + [z[i] * psi[i] for i in range(n)]  # down links at G = 1
    up = [0] + [psi[i + 1] for i in range(n - 1)] + [0]  # up links at G = 1
    least = [0] + [down[lv] + up[lv] + side for lv in range(1, n + 1)]  # links at G = 1
    # R_i from the traffic constraints alone: forward R_i ψ_i >= under(i-1), backward
    # R_i ψ_{i+1} >= under(i); R is monotone, so the nearest known R bounds it too
    floor = [1] * (n + 1)
    for lv in range(1, n + 1):
        if backward and lv < n:
            floor[lv] = _ceil(under[lv], psi[lv])
        elif not backward and lv > 1:
            floor[lv] = _ceil(under[lv - 1], psi[lv - 1])
    if max(least[1:]) > theta:
        return
    if m * sum(floor[lv] * zones[lv] * least[lv] ** 2 for lv in range(1, n + 1)) > best.cost:
        return
    order = list(range(n - 1, 0, -1)) if backward else list(range(1, n))
    mult = [0] * (n + 2)
    links = list(least)  # exact where fixed, least possible elsewhere
    mult[n if backward else 1] = 1  # the scale is R_n backward, R_1 forward

    def needed(level: int, scale: int) -> tuple[int, bool]:
        """The least scale meeting the constraints decided once G_level is known, and whether
        the traffic constraint no longer raises it (then a larger G cannot lower it)."""
        if backward:  # R_i ψ_{i+1} >= under(i), ψ_{i+1} <= R_{i+1}
            traffic, degree = _ceil(under[level], psi[level] * mult[level]), mult[level + 1]
        else:  # R_{i+1} ψ_{i+1} >= under(i), ψ_{i+1} <= R_i
            traffic, degree = _ceil(under[level], psi[level] * mult[level + 1]), mult[level]
        rest = max(scale, _ceil(psi[level], degree))
        return max(rest, traffic), traffic <= rest

    def bound(nearest: int, scale: int) -> int:
        """m·Cost of any completion is at least this (``nearest``: the outermost known level).

        Each level costs R_i·N_i·L_i² with R_i at least its known or monotone lower bound r.
        Forward, a level whose ratio is still open costs N_i·(a·R_i + ψ·R_{i+1})² / R_i with
        a = its down and side links: at least its minimum over real R_i >= r for R_{i+1} at
        its lower bound F, which is 4·a·ψ·F where ψ·F/a >= r (the AM-GM point).
        """
        total = 0
        reach = scale * mult[nearest]
        for lv in range(1, n + 1):
            r = scale * mult[lv] if mult[lv] else max(floor[lv], reach)
            if backward or lv == n or mult[lv + 1]:
                total += r * zones[lv] * links[lv] ** 2
                continue
            a, degree, F = down[lv] + side, psi[lv], max(floor[lv + 1], reach)
            if degree * F >= a * r:
                total += zones[lv] * 4 * a * degree * F
            else:
                total += zones[lv] * ((a * r + degree * F) ** 2 // r)
        return m * total

    def visit(depth: int, scale: int) -> None:
        if depth == len(order):
            R = tuple(scale * mult[lv] for lv in range(1, n + 1))
            total = m * sum(R[lv - 1] * zones[lv] * links[lv] ** 2 for lv in range(1, n + 1))
            best.offer(Candidate(z, R, psi, tuple(links[1:]), total, m))
            return
        level = order[depth]
        fixed = level + 1 if backward else level  # the level whose links G_level sets
        new = level if backward else level + 1  # the level whose R G_level sets
        step = down[fixed] if backward else up[fixed]
        base = least[fixed] - step
        for g in range(1, (theta - base) // step + 1):
            links[fixed] = base + g * step
            mult[new] = mult[fixed] * g
            after, settled = needed(level, scale)
            if bound(new, after) <= best.cost:
                visit(depth + 1, after)
            elif settled:
                # the scale stays put for every larger G, while links and every R lower
                # bound grow with G: the bound only rises, so no larger G can tie
                break
        links[fixed] = least[fixed]
        mult[new] = 0

    visit(0, 1)


def _full_psi(R: tuple[int, ...]) -> tuple[int, ...]:
    """ψ a spec needs so the builder wires full connectivity between every pair of levels: it
    calls an integer R ratio forward or backward, whose widest bundle (ψ = R_i forward,
    ψ = R_{i+1} backward) is exactly every switch to every switch."""
    psi = [1]
    for lower, upper in zip(R, R[1:], strict=False):
        psi.append(lower if upper % lower == 0 else upper if lower % upper == 0 else 1)
    return tuple(psi)


def _search_full(z: tuple[int, ...], theta: int, m: int, best: _Best) -> None:
    """Full connectivity: L_i = R_{i-1}·z_i + R_{i+1} + side (R_0 = 1, R_{n+1} = 0) and
    R_i·R_{i+1} >= u_i = z_1 ⋯ z_i; θ bounds every R_i, so R vectors are enumerated bottom-up.

    Bound on a level j above the chosen ones (j < n): R_j·(a + R_{j+1})² with a >= z_j + side
    and R_{j+1} >= u_j / R_j is at least (a·R_j + u_j)² / R_j >= 4·a·u_j (AM-GM); the top level
    costs R_n·(z_n·R_{n-1} + side)² >= z_n²·R_{n-1}·u_{n-1} >= z_n²·u_{n-1}.
    """
    n, side = len(z), m - 1
    under = [math.prod(z[:i]) for i in range(n + 1)]
    zones = [math.prod(z[i:]) for i in range(n + 1)]
    # R_j <= θ - side - z_{j-1} (level j-1's links) and <= (θ - side - 1) / z_{j+1} (level
    # j+1's down links R_j·z_{j+1}); the traffic constraints must fit under these caps
    cap = [0] + [theta - side - (z[lv - 2] if lv > 1 else 0) for lv in range(1, n + 1)]
    for lv in range(1, n):
        cap[lv] = min(cap[lv], (theta - side - (lv + 1 < n)) // z[lv])
    if min(cap[1 : n + 1]) < 1 or any(cap[lv] * cap[lv + 1] < under[lv] for lv in range(1, n)):
        return
    above = [0] * (n + 2)  # above[j]: the bound on levels j..n when nothing there is chosen
    above[n] = max(z[n - 1] ** 2 * under[n - 1], (z[n - 1] + side) ** 2)
    for lv in range(n - 1, 0, -1):
        above[lv] = above[lv + 1] + zones[lv] * 4 * (z[lv - 1] + side) * under[lv]
    R = [1] * (n + 2)  # R[0] = 1 (processors), R[n + 1] = 0 (no up links at the top)
    R[n + 1] = 0

    def beyond(level: int, below: int) -> int:
        """The bound on levels ``level``..n given R_{level-1} = ``below`` (so a is known)."""
        a = z[level - 1] * below + side
        if level == n:  # R_n >= u_{n-1} / R_{n-1}
            return _ceil(under[n - 1], below) * a**2
        return zones[level] * 4 * a * under[level] + above[level + 1]

    def visit(level: int, spent: int) -> None:
        """R_1..R_level chosen; ``spent`` is the cost of the levels below ``level``."""
        down = R[level - 1] * z[level - 1] + side
        if level == n:
            total = m * (spent + R[n] * down**2)
            if down <= theta and total <= best.cost:
                chosen = tuple(R[1 : n + 1])
                links = tuple(R[lv - 1] * z[lv - 1] + R[lv + 1] + side for lv in range(1, n + 1))
                best.offer(Candidate(z, chosen, _full_psi(chosen), links, total, m))
            return
        low = _ceil(under[level], R[level])
        if level + 1 < n:  # leave R_{level+2} <= its cap a way to carry level+1's traffic
            low = max(low, _ceil(under[level + 1], cap[level + 2]))
        for upper in range(max(1, low), min(theta - down, cap[level + 1]) + 1):
            here = spent + R[level] * zones[level] * (down + upper) ** 2
            a = R[level] * z[level] + side  # the next level's down and side links
            if level + 1 < n:
                nxt = upper * zones[level + 1] * (a + _ceil(under[level + 1], upper)) ** 2
                if m * (here + nxt + beyond(level + 2, upper)) > best.cost:
                    continue
            elif a > theta or m * (here + upper * a**2) > best.cost:
                continue
            R[level + 1] = upper
            visit(level + 1, here)
        R[level + 1] = 1

    for first in range(_ceil(under[1], cap[2]) if n > 1 else 1, cap[1] + 1):
        if m * (first * zones[1] * (z[0] + side) ** 2 + above[2]) > best.cost:
            break  # grows with R_1
        R[1] = first
        visit(1, 0)


def _greedy(z: tuple[int, ...], psi: tuple[int, ...], theta: int, m: int) -> float:
    """The cost of the digest's §4.3 forward configuration (R_1 = ψ_2, each R_{i+1} the least
    multiple of R_i meeting the traffic constraint), or infinity if it breaks θ: a feasible cost
    the exhaustive search starts from, so it prunes from its first branch."""
    n, side = len(z), m - 1
    R = [psi[1] if n > 1 else 1]
    for level in range(1, n):
        R.append(R[-1] * max(1, _ceil(_ceil(math.prod(z[:level]), psi[level]), R[-1])))
    total = 0
    for level in range(1, n + 1):
        up = R[level] // R[level - 1] * psi[level] if level < n else 0
        links = z[level - 1] * psi[level - 1] + up + side
        if links > theta or (level < n and psi[level] > R[level - 1]):
            return math.inf
        total += R[level - 1] * math.prod(z[level:]) * links**2
    return m * total


def _check(processors: int, theta: int, connectivity: str, znodes: int) -> None:
    for name, value in (("processors", processors), ("theta", theta), ("znodes", znodes)):
        if not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive integer, not {value!r}")
    if processors % znodes:
        raise ValueError(f"processors must be a multiple of znodes ({znodes}), not {processors!r}")
    if connectivity not in CONNECTIVITIES:
        raise ValueError(f"connectivity must be one of {CONNECTIVITIES}, not {connectivity!r}")


def optimise_level(
    processors: int,
    levels: int,
    *,
    theta: int = DEFAULT_THETA,
    connectivity: str = "forward",
    znodes: int = 1,
    psi: int | Sequence[int] | None = None,
) -> LevelResult | None:
    """Every least-cost configuration with exactly ``levels`` levels, the default pick first
    (:meth:`Candidate.pick_key`); None if no configuration meets the constraints."""
    _check(processors, theta, connectivity, znodes)
    if connectivity == "full" and psi is not None:
        raise ValueError(f"psi is implied by full connectivity, not {psi!r}")
    degrees = psi_vector(psi, levels)
    best = _Best()
    shapes = list(factorisations(processors // znodes, levels))
    if connectivity == "forward":  # a feasible cost to prune against from the start
        best.cost = min((_greedy(z, degrees, theta, znodes) for z in shapes), default=math.inf)
    for z in shapes:
        if connectivity == "full":
            _search_full(z, theta, znodes, best)
        else:
            _search_ratios(z, degrees, theta, znodes, connectivity == "backward", best)
    if not best.found:
        return None
    return LevelResult(levels, tuple(sorted(best.found, key=Candidate.pick_key)))


def optimise(
    processors: int,
    levels: Sequence[int] | None = None,
    *,
    theta: int = DEFAULT_THETA,
    connectivity: str = "forward",
    znodes: int = 1,
    psi: int | Sequence[int] | None = None,
) -> Optimum:
    """Search each level count in ``levels`` (default 1..:data:`DEFAULT_MAX_LEVELS`); level
    counts with no feasible configuration are left out of the answer."""
    _check(processors, theta, connectivity, znodes)
    counts = range(1, DEFAULT_MAX_LEVELS + 1) if levels is None else levels
    results = []
    for count in counts:
        result = optimise_level(
            processors, count, theta=theta, connectivity=connectivity, znodes=znodes, psi=psi
        )
        if result is not None:
            results.append(result)
    return Optimum(processors, znodes, theta, connectivity, tuple(results))


def spec_for(candidate: Candidate, theta: int, connectivity: str) -> dict[str, Any]:
    """A ``kind: znode`` spec for ``candidate`` (keys as docs/specs.md names them)."""
    P = candidate.processors
    where = f"{candidate.znodes} Znodes of " if candidate.znodes > 1 else ""
    topology: dict[str, Any] = {"kind": "znode", "z": list(candidate.z), "R": list(candidate.R)}
    if any(value != 1 for value in candidate.psi):
        topology["psi"] = list(candidate.psi)
    if candidate.znodes > 1:
        topology["znodes"] = candidate.znodes
    if theta != DEFAULT_THETA:
        topology["theta"] = theta
    suffix = f"-m{candidate.znodes}" if candidate.znodes > 1 else ""
    return {
        "name": f"znode-{P}{suffix}-n{len(candidate.z)}",
        "description": (
            f"zfabric optimise pick for {P} processors ({where}{len(candidate.z)} levels, "
            f"{connectivity}, theta {theta}): cost {candidate.cost}, "
            f"{candidate.relative_power_db:.2f} dB against one {P}-port crossbar."
        ),
        "topology": topology,
        "routing": "sliced",
    }
