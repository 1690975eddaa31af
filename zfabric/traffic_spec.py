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
)
PROCESSES = ("bernoulli", "poisson")
#: Longest measurement window (and warm-up) a spec may ask for.
MAX_CYCLES = 10**8
MAX_PACKET_LENGTH = 4096


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
    )
    reader.finish()
    return traffic
