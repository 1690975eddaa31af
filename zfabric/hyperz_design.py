"""HyperZ's design space (M. Adda, *HyperZ: Hyper Z-Tree Topology*, Preprints 2023, §3): the
fully regular HyperZs that hold a processor count within a port budget.

A fully regular HyperZ (Def. 3.2) has z zones at every level of its Z-nodes and s = z S-nodes in
each of its d dimensions, q side links per level between neighbouring Z-nodes. Its Z-node is the
regular z-ary tree of height h (z_i = z, r_i = z^(i-1) switches per zone, g_i = 1), whose switches
have 2z ports (z down, z up) and d·q·(z-1) side ports. Two bounds pin z down:

- Eq. 3, the radix: 2z + dq(z-1) <= L_max, so z <= (dq + L_max) / (dq + 2). (The paper prints
  the right side as (dk + L_min)/(dk + 2); solving the inequality it states gives this.)
- Eq. 4, the processors: z^h · s^d = z^(h+d) >= R_0min, so z >= R_0min^(1/(h+d)).

Every integer z >= 2 between them is one design. Counts (Eq. 2 with z_{h+1} = 1): processors
z^(h+d); switches h·z^(h-1) per Z-node, z^d Z-nodes; side links z^d·d·(z-1)·q·h·z^(h-1) / 2;
tree links h·z^h per Z-node (the processors' links included); diameter 2h + d links between
processors. The top level's switches have no up ports, so at h >= 2 the budget's 2z + dq(z-1)
is the radix of the levels below it (at h = 1, a HyperX, every switch has z + dq(z-1)).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["Design", "DesignRange", "DesignSpace", "z_bounds", "explore", "spec_for"]

DEFAULT_MAX_DIMS = 8
DEFAULT_MAX_HEIGHT = 4


@dataclass(frozen=True)
class Design:
    """One fully regular HyperZ: d dimensions of z S-nodes, Z-nodes z-ary trees of height h."""

    d: int
    h: int
    q: int
    z: int

    @property
    def processors(self) -> int:
        return self.z ** (self.h + self.d)

    @property
    def znodes(self) -> int:
        return self.z**self.d

    @property
    def switches(self) -> int:
        return self.znodes * self.h * self.z ** (self.h - 1)

    @property
    def ports(self) -> int:
        """The port budget's left side, 2z + dq(z-1) (Eq. 3)."""
        return 2 * self.z + self.d * self.q * (self.z - 1)

    @property
    def side_links(self) -> int:
        return self.znodes * self.d * (self.z - 1) * self.q * self.h * self.z ** (self.h - 1) // 2

    @property
    def tree_links(self) -> int:
        return self.znodes * self.h * self.z**self.h

    @property
    def diameter(self) -> int:
        return 2 * self.h + self.d

    @property
    def R(self) -> tuple[int, ...]:
        """Switches per zone at each level: 1, z, ..., z^(h-1)."""
        return tuple(self.z**level for level in range(self.h))

    def notation(self) -> str:
        """The paper's ``H_{d,h}(s_1..s_d; q_1..q_d)(Z_h(z; r; g))``."""

        def join(values) -> str:
            return ",".join(map(str, values))

        tree = f"Z_{self.h}({join([self.z] * self.h)}; {join(self.R)}; {join([1] * self.h)})"
        return (
            f"H_{{{self.d},{self.h}}}({join([self.z] * self.d)}; {join([self.q] * self.d)})({tree})"
        )


@dataclass(frozen=True)
class DesignRange:
    """The z the two bounds leave for one (d, h, q): ``low..high``, empty when low > high."""

    d: int
    h: int
    q: int
    low: int  # Eq. 4 (and z >= 2)
    high: int  # Eq. 3

    @property
    def designs(self) -> tuple[Design, ...]:
        return tuple(Design(self.d, self.h, self.q, z) for z in range(self.low, self.high + 1))


@dataclass(frozen=True)
class DesignSpace:
    processors: int  # R_0min
    ports: int  # L_max
    ranges: tuple[DesignRange, ...]  # every (d, h, q) searched, feasible or not

    @property
    def designs(self) -> tuple[Design, ...]:
        return tuple(design for found in self.ranges for design in found.designs)


def z_bounds(processors: int, ports: int, d: int, h: int, q: int) -> tuple[int, int]:
    """(least z with z^(h+d) >= processors and z >= 2, greatest z with 2z + dq(z-1) <= ports):
    Eq. 4 and Eq. 3 in integers."""
    low = max(2, round(processors ** (1 / (h + d))))
    while low > 2 and (low - 1) ** (h + d) >= processors:  # the float root may be one above
        low -= 1
    while low ** (h + d) < processors:  # or below
        low += 1
    return low, (d * q + ports) // (d * q + 2)


def explore(
    processors: int,
    ports: int,
    *,
    max_dims: int = DEFAULT_MAX_DIMS,
    max_height: int = DEFAULT_MAX_HEIGHT,
    lanes: tuple[int, ...] = (1,),
) -> DesignSpace:
    """Every fully regular HyperZ with at least ``processors`` processors and at most ``ports``
    ports per switch, for d in 1..max_dims, h in 1..max_height and q in ``lanes``."""
    ranges = []
    for d in range(1, max_dims + 1):
        for h in range(1, max_height + 1):
            for q in lanes:
                low, high = z_bounds(processors, ports, d, h, q)
                ranges.append(DesignRange(d, h, q, low, high))
    return DesignSpace(processors, ports, tuple(ranges))


def spec_for(design: Design, ports: int) -> dict[str, Any]:
    """A ``kind: hyperz`` spec of ``design`` with ``l_max`` = ``ports`` (``zfabric check``
    accepts it when it is within the spec's size limits)."""
    return {
        "name": f"hyperz-d{design.d}-h{design.h}-z{design.z}-q{design.q}",
        "topology": {
            "kind": "hyperz",
            "s": [design.z] * design.d,
            "z": [design.z] * design.h,
            "R": list(design.R),
            "q": [design.q] * design.d,
            "l_max": ports,
        },
    }
