"""The spec's optional ``traffic:`` section: the experiment's defaults for simulate/sweep/run/cosim.

The pattern names are listed here, below the simulator, which generates each of them
(``zfabric.sim.traffic.PATTERNS`` is this tuple).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .errors import SpecError
from .fields import (
    MAX_LIST_LENGTH,
    Reader,
    checked_entries,
    choice,
    describe,
    integer,
    number,
    short,
)

__all__ = [
    "TrafficSpec",
    "LOCALITY_PRESETS",
    "LOCALITY_TOLERANCE",
    "locality",
    "locality_probabilities",
    "parse_traffic",
    "TRAFFIC_PATTERNS",
    "PROCESSES",
    "MAX_CYCLES",
    "MAX_PACKET_LENGTH",
]

TRAFFIC_PATTERNS = (
    "uniform",
    "transpose",
    "bit-reversal",
    "bit-complement",
    "shuffle",
    "tornado",
    "neighbour",
    "hotspot",
    "zipf",
    "weighted",
    "locality",
)
PROCESSES = ("bernoulli", "poisson")
#: Longest measurement window (and warm-up) a spec may ask for.
MAX_CYCLES = 10**8
MAX_PACKET_LENGTH = 4096


#: how far the probabilities of ``locality`` may sum from 1 (the thesis prints three digits)
LOCALITY_TOLERANCE = 0.005


def _upper_scaled(printed: tuple[float, ...], kept: int) -> tuple[float, ...]:
    """A table that does not sum to 1, its first ``kept`` levels as printed and the levels
    above scaled (in their printed ratios) to the remainder."""
    scale = (1 - sum(printed[:kept])) / sum(printed[kept:])
    return printed[:kept] + tuple(p * scale for p in printed[kept:])


_TABLE_4_12 = (0.274,) * 3 + (0.0317,) * 3 + (0.0106,) * 3
_TABLE_4_14 = (0.75,) + (0.0695,) * 6

#: P_any per level, level 1 first, of A. DeHon's "Fat-Tree Routing for Transit" (1990), §4.5:
#: name -> (probabilities, what they are). A hybrid's level 1 is its leaf cluster (the
#: thesis's n = 0). Tables 4.12 and 4.14 do not sum to 1 (0.949 and 1.167): each is kept in
#: two readings, as printed and scaled as a whole, and with the first unit-tree stage as
#: printed and the levels above it scaled to the remainder (Table 4.14: 0.0138 for levels 4-6).
LOCALITY_PRESETS: dict[str, tuple[tuple[float, ...], str]] = {
    "transit-full-64": ((0.333,) * 3, "Table 4.10: full fat tree of 64 processors"),
    "transit-full-4096": (
        (0.278,) * 3 + (0.0553,) * 3,
        "Table 4.11: full fat tree of 4096 processors",
    ),
    "transit-full-262144": (_TABLE_4_12, "Table 4.12 as printed (sum 0.949), scaled to 1"),
    "transit-full-262144-upper": (
        _upper_scaled(_TABLE_4_12, 3),
        "Table 4.12, levels 1-3 as printed, levels 4-9 scaled to the remainder",
    ),
    "transit-hybrid-1": (
        (0.75,) + (0.0833,) * 3,
        "Table 4.13: hybrid fat tree, one unit-tree stage",
    ),
    "transit-hybrid-2": (_TABLE_4_14, "Table 4.14 as printed (sum 1.167), scaled to 1"),
    "transit-hybrid-2-upper": (
        _upper_scaled(_TABLE_4_14, 4),
        "Table 4.14, the leaf and levels 1-3 as printed, levels 4-6 scaled to the remainder",
    ),
}


def locality(value: Any, path: str) -> str | tuple[float, ...]:
    """A preset's name, or P_any per level (level 1 first), each in [0, 1], summing to 1
    within :data:`LOCALITY_TOLERANCE`."""
    if isinstance(value, str):
        if value not in LOCALITY_PRESETS:
            raise SpecError(
                path, f"must be one of {', '.join(LOCALITY_PRESETS)} or a list, got {short(value)}"
            )
        return value
    if not isinstance(value, list) or not value:
        raise SpecError(
            path, f"must be a preset name or a list of probabilities, got {describe(value)}"
        )
    if len(value) > MAX_LIST_LENGTH:
        raise SpecError(
            path, f"must have at most {MAX_LIST_LENGTH} entries, got {len(value)}: {short(value)}"
        )
    probabilities = checked_entries(value, path, number(0, 1))
    total = sum(probabilities)
    if abs(total - 1) > LOCALITY_TOLERANCE:
        raise SpecError(
            path,
            f"the probabilities must sum to 1 (within {LOCALITY_TOLERANCE}), got {total:.6g}:"
            f" {short(value)}",
        )
    return probabilities


def locality_probabilities(value: str | tuple[float, ...]) -> tuple[float, ...]:
    """The probabilities a :func:`locality` value gives, scaled to sum exactly to 1."""
    given = LOCALITY_PRESETS[value][0] if isinstance(value, str) else tuple(value)
    total = sum(given)
    return tuple(p / total for p in given)


@dataclass(frozen=True)
class TrafficSpec:
    """What the spec says about traffic; ``None`` is "not given" (the command's own default).

    Commands take a value from their flag first, then from here, then their default.
    ``packet_length`` is ``traffic.packet_length`` or the top-level ``packet_length``.
    """

    pattern: str | None = None
    rate: float | None = None  # offered flits/cycle/endpoint of one run
    rates: tuple[float, ...] | None = None  # the sweep's rates, as written
    packet_length: int | tuple[int, int] | None = None  # N, or (MIN, MAX) uniformly distributed
    process: str | None = None
    seed: int | None = None
    warmup: int | None = None
    cycles: int | None = None  # measurement window
    hotspot_fraction: float | None = None
    level_weights: tuple[float, ...] | None = None  # weighted: each level's weight, level 1 first
    locality: str | tuple[float, ...] | None = None  # locality: a preset, or P_any per level


def _packet_length(value: Any, path: str) -> int | tuple[int, int]:

    each = integer(1, MAX_PACKET_LENGTH)
    if isinstance(value, list):
        if len(value) != 2:
            raise SpecError(path, f"must be N or [MIN, MAX], got a list {short(value)}")
        low, high = (each(item, f"{path}[{i}]") for i, item in enumerate(value))
        if low > high:
            raise SpecError(path, f"must be [MIN, MAX] with MIN <= MAX, got {short(value)}")
        return low, high
    return each(value, path)


def _rates(value: Any, path: str) -> tuple[float, ...]:

    if not isinstance(value, list) or not value:
        raise SpecError(path, f"must be a non-empty list of rates, got {describe(value)}")
    if len(value) > MAX_LIST_LENGTH:
        raise SpecError(
            path, f"must have at most {MAX_LIST_LENGTH} entries, got {len(value)}: {short(value)}"
        )
    return checked_entries(value, path, number(0, 1, low_open=True))


def _level_weights(value: Any, path: str) -> tuple[float, ...]:
    if not isinstance(value, list) or not value:
        raise SpecError(path, f"must be a non-empty list of weights, got {describe(value)}")
    if len(value) > MAX_LIST_LENGTH:
        raise SpecError(
            path, f"must have at most {MAX_LIST_LENGTH} entries, got {len(value)}: {short(value)}"
        )
    weights = checked_entries(value, path, number(0, 1e6))
    if not sum(weights) > 0:
        raise SpecError(path, f"must have a positive sum, got {short(value)}")
    return weights


def parse_traffic(reader: Reader, top_packet_length: int | None = None) -> TrafficSpec:
    """Read the ``traffic:`` section (``reader`` is empty when it is absent).

    ``top_packet_length`` is the top-level ``packet_length`` if given: giving both is an error.
    """

    rate = reader.get("rate", number(0, 1, low_open=True), None)
    rates = reader.get("rates", _rates, None)
    if reader.has("rate") and reader.has("rates"):
        reader.report(
            SpecError(reader.key("rates"), f"give {reader.key('rate')} or rates, not both")
        )
    packet_length = reader.get("packet_length", _packet_length, None)
    if reader.has("packet_length") and top_packet_length is not None:
        reader.report(
            SpecError(
                reader.key("packet_length"), "also given as the top-level packet_length; keep one"
            )
        )
    traffic = TrafficSpec(
        pattern=reader.get("pattern", choice(TRAFFIC_PATTERNS), None),
        rate=rate,
        rates=rates,
        packet_length=packet_length if packet_length is not None else top_packet_length,
        process=reader.get("process", choice(PROCESSES), None),
        seed=reader.get("seed", integer(0, 2**63 - 1), None),
        warmup=reader.get("warmup", integer(0, MAX_CYCLES), None),
        cycles=reader.get("cycles", integer(1, MAX_CYCLES), None),
        hotspot_fraction=reader.get("hotspot_fraction", number(0, 1), None),
        level_weights=reader.get("level_weights", _level_weights, None),
        locality=reader.get("locality", locality, None),
    )
    reader.finish()
    return traffic
