"""The Transit fat tree's analytic latency: circuit set-up through RN1 chips in an empty network.

A. DeHon, "Fat-Tree Routing for Transit", MIT AI Lab, 1990, §3.6 and §4.1-4.4. Every RN1
stage takes one clock tc (10 ns); a wire between two *stack stages* (a leaf cluster and a unit
tree, two unit-tree layers, two bidelta stacks) adds n(m) cycles, m the lower stack stage; a
swallow (the input drops the spent routing byte) one more. ``connect`` is the latency of an
open circuit, ``open`` the latency of opening it (the swallows added). Level k is the fat-tree
level where the route crosses over (1-3 in the first unit-tree stage, 4-6 in the second, ...;
0 inside a hybrid's leaf cluster):

- full fat tree (Eq 4.18-4.19): ceil(k/3) up stages and k down levels, the wires of the
  ceil(k/3) - 1 stack boundaries crossed each way; ceil(k/3) - 1 + ceil(k/12) swallows.
- hybrid (Eq 4.30-4.32): inside a leaf j stages and no swallow; through the tree 1 + j + k +
  ceil(k/3) stages (the leaf's first stage out, the up chips, the down levels, the j leaf
  stages in), the wires of ceil(k/3) boundaries each way, ceil(k/3) + ceil((k + 3)/12)
  swallows.
- bidelta (Eq 4.41-4.42): all h stages, one wire between consecutive stacks, a loop-back
  cycle to the processors, a swallow entering every stack after the first.

The seed's brackets are lost in the text; read as ceilings they give its tables (the digest's
A5). Worst-case wire delays (§4.1, §4.2): the longest wire of a hollow cube is its diagonal,
sqrt(3) times its side, the side l_s(m) = l_s1 * 4^(m - 1) at stack boundary m (l_s1 =
8 s_chip sqrt(N_leaf / 3) for a hybrid, Eq 3.14; four UT64x2 stacks of 8 s_chip for a full
tree; s_chip = 1.4 inch), and n(m) = ceil(sqrt(3) l_s(m) / (c tc)), at least 1. A large
bidelta network lies in a plane (§4.2.2-4.2.4): the boundary after stack m spans the
min(4^(j_1 + ... + j_m), S) stack sites it routes among (S = 2 N_p / 512 sites of one B64x8
stack of 20 inch sides, Fig 4.7), a square of N_s = sqrt(sites) stack sides whose longest wire
is ceil(sqrt(2) N_s) sides (Eq 4.12). The best case is n = 1 on every wire.

Readings (the thesis is not explicit): a single-stack bidelta network has no loop-back cycle
(Table 4.9 prints 30 and 40 ns for 64 and 256 processors, where Eq 4.41 gives 40 and 50); the
bidelta stack side of 20 inches is Fig 4.7's caption (§4.2.4 says two feet, which reproduces
fewer rows of Table 4.9). No reading of the plane's longest wire gives Table 4.9's worst case for
a million processors with its other rows: the model's is one cycle under it (300 ns against
310; docs/research/transit.md lists the readings tried). A capped root is not in the model.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from zfabric.topologies.transit import TransitParams, leaf_processors, transit_counts

__all__ = [
    "TC_NS",
    "Terms",
    "Latency",
    "terms",
    "levels",
    "worst_wire_delays",
    "best_wire_delays",
    "level_latency",
    "extremes",
    "transit_report",
]

#: RN1's clock period (100 MHz, §1.3)
TC_NS = 10
#: the side of an RN1 package (s_chip, §3.4.4), inches
CHIP_SIDE_INCHES = 1.4
#: the side of a B64x8 (or B256x2) stack in a bidelta plane, inches (Fig 4.7's 20 x 20 stacks)
BIDELTA_STACK_INCHES = 20.0
#: channels of a B64x8 stack, the plane's unit of area (Eq 4.10: n l <= 512)
STACK_CHANNELS = 512
_METRES_PER_INCH = 0.0254
_LIGHT = 3e8  # m/s: free-space (optical) propagation, Eq 4.7


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


@dataclass(frozen=True)
class Terms:
    """What a route crossing over at level ``k`` is charged: RN1 ``stages``, ``swallows``, the
    stack boundaries it crosses each way (``boundaries``: the wires n(1), ..., n(b) on the way
    up and again on the way down; a bidelta crosses each once) and the ``loop_back`` cycle."""

    stages: int
    swallows: int
    boundaries: int
    both_ways: bool
    loop_back: int = 0


@dataclass(frozen=True)
class Latency:
    """Cycles of an open circuit (``connect``) and of opening it (``open``)."""

    connect: int
    open: int

    def ns(self, tc: float = TC_NS) -> tuple[float, float]:
        """(connect, open) in ns at a clock of ``tc`` ns."""
        return self.connect * tc, self.open * tc


def _check(params: TransitParams) -> None:
    if params.cap:
        raise ValueError(
            "the thesis's latency model (§4.3) covers full, hybrid and bidelta networks, not a"
            " capped root"
        )


def levels(params: TransitParams) -> range:
    """The crossover levels of a network: 1..3L in a full tree of L unit-tree stages, 0..3L in
    a hybrid (0: inside the leaf), the one class 0 in a bidelta network."""
    _check(params)
    if params.form == "bidelta":
        return range(1)
    return range(0 if params.form == "hybrid" else 1, 3 * params.ut_layers + 1)


def terms(params: TransitParams, k: int) -> Terms:
    """The terms of Eq 4.18-4.19 (full), 4.30-4.32 (hybrid) or 4.41-4.42 (bidelta) at level
    ``k`` (the module doc)."""
    if k not in levels(params):
        raise ValueError(f"level {k} is not a level of {params.notation()}")
    if params.form == "bidelta":
        stacks = len(params.stacks)
        return Terms(sum(params.stacks), stacks - 1, stacks - 1, False, int(stacks > 1))
    up = _ceil(k, 3)
    if params.form == "full":
        return Terms(up + k, up - 1 + _ceil(k, 12), up - 1, True)
    j = params.leaf_stages
    if k == 0:
        return Terms(j, 0, 0, True)
    return Terms(1 + j + k + up, up + _ceil(k + 3, 12), up, True)


def _boundaries(params: TransitParams) -> int:
    """Stack boundaries of the network: between its stack stages."""
    if params.form == "bidelta":
        return len(params.stacks) - 1
    return params.ut_layers - (params.form == "full")


def _cycles(length_inches: float, tc_ns: float) -> int:
    """Clock cycles a signal takes over a wire of ``length_inches``, at least one (Eq 4.6-4.7)."""
    seconds = length_inches * _METRES_PER_INCH / _LIGHT
    return max(1, math.ceil(seconds / (tc_ns * 1e-9) - 1e-9))


def worst_wire_delays(params: TransitParams, tc_ns: float = TC_NS) -> list[int]:
    """n(m) for every stack boundary m = 1, 2, ...: the longest wire's cycles (the module doc)."""
    _check(params)
    count = _boundaries(params)
    if params.form == "bidelta":
        processors = 4 ** sum(params.stacks)
        sites = 2 * processors // STACK_CHANNELS
        delays, spanned = [], 1
        for stages in params.stacks[:-1]:
            spanned *= 4**stages
            side = math.sqrt(min(spanned, sites))  # N_s
            delays.append(_cycles(math.ceil(math.sqrt(2) * side) * BIDELTA_STACK_INCHES, tc_ns))
        return delays
    if params.form == "hybrid":
        first = 8 * CHIP_SIDE_INCHES * math.sqrt(leaf_processors(params.leaf_stages) / 3)
    else:
        first = 4 * 8 * CHIP_SIDE_INCHES  # four UT64x2 stacks of 8 s_chip
    return [_cycles(math.sqrt(3) * first * 4 ** (m - 1), tc_ns) for m in range(1, count + 1)]


def best_wire_delays(params: TransitParams) -> list[int]:
    """One cycle on every stack boundary (the best case of Tables 4.5, 4.7 and 4.9)."""
    _check(params)
    return [1] * _boundaries(params)


def level_latency(params: TransitParams, k: int, wires: Sequence[int]) -> Latency:
    """Connect and open cycles of a route crossing over at level ``k`` with wire delays
    ``wires`` (n(1), n(2), ... per stack boundary)."""
    t = terms(params, k)
    if len(wires) < t.boundaries:
        raise ValueError(f"{len(wires)} wire delays for {t.boundaries} stack boundaries")
    wire = sum(wires[: t.boundaries]) * (2 if t.both_ways else 1)
    connect = t.stages + wire + t.loop_back
    return Latency(connect, connect + t.swallows)


def extremes(params: TransitParams, tc_ns: float = TC_NS) -> dict[str, Latency]:
    """The rows of Tables 4.5, 4.7 and 4.9: ``worst`` through the root with the longest wires,
    ``best`` the nearest destination (level 1 of a full tree, inside a hybrid's leaf) with one
    cycle a wire."""
    span = levels(params)
    return {
        "worst": level_latency(params, span[-1], worst_wire_delays(params, tc_ns)),
        "best": level_latency(params, span[0], best_wire_delays(params)),
    }


def transit_report(params: TransitParams) -> dict[str, Any]:
    """What ``zfabric analytic`` prints of a Transit network: per level its terms and its
    latency in cycles with the worst-case and with one-cycle wires, and the table row."""
    worst, best = worst_wire_delays(params), best_wire_delays(params)
    rows = []
    for k in levels(params):
        t = terms(params, k)
        rows.append({
            "level": k,
            "stages": t.stages,
            "swallows": t.swallows,
            "wires": t.boundaries * (2 if t.both_ways else 1),
            "loop_back": t.loop_back,
            "worst": dataclasses.asdict(level_latency(params, k, worst)),
            "best": dataclasses.asdict(level_latency(params, k, best)),
        })  # fmt: skip
    meaning = {
        "full": "where the route crosses over, 1-3 in the first unit-tree stage, 4-6 in the"
        " second, ...",
        "hybrid": "0 inside the leaf cluster, else where the route crosses over, 1-3 in the"
        " first unit-tree stage, 4-6 in the second, ...",
        "bidelta": "every route crosses all stages (0)",
    }[params.form]
    return {
        "model": "transit",
        "network": params.notation(),
        "processors": transit_counts(params)["processors"],
        "tc_ns": TC_NS,
        "wire_delays": {"worst": worst, "best": best},
        "levels": rows,
        "level_meaning": meaning,
        "extremes": {case: dataclasses.asdict(row) for case, row in extremes(params).items()},
    }
