"""A latency-throughput curve's knee, and the words every text gives it and its rates: the
``sweep`` and ``run`` commands, their reports and a notebook print the same. Light on purpose:
no engine is imported to name a knee."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

__all__ = ["knee", "knee_fields", "describe_knee", "rate_text"]

#: a measured point: ``rate``, ``saturated``, ``deadlock`` (None or the knot) and the figures
Point = dict[str, Any]


def rate_text(rate: float) -> str:
    """A swept rate or knee as every text shows it (tables, knee lines, status): the rate run,
    to twelve decimals with trailing zeros dropped, so a bisected 0.64375 reads 0.64375
    everywhere and never as a rounding that was not measured (the JSON keeps the float)."""
    return f"{rate:.12f}".rstrip("0").rstrip(".")


def knee(points: Sequence[Point]) -> float | None:
    """The highest stable rate below the first saturated one (None if no point is stable)."""
    first = min((p["rate"] for p in points if p["saturated"]), default=math.inf)
    return max(
        (p["rate"] for p in points if not p["saturated"] and p["rate"] < first), default=None
    )


def knee_fields(points: Sequence[Point]) -> dict[str, Any]:
    """The JSON's ``knee`` (None unless some swept rate saturated above a stable one, and None
    when the model deadlocked at any rate: the knee was not bisected), ``highest_stable``
    (:func:`knee`: the highest stable rate below the first saturated or
    deadlocked one, or of all when none saturated) and ``deadlocked`` (the rates at which the
    model deadlocked)."""
    stable = knee(points)
    deadlocked = [point["rate"] for point in points if point["deadlock"]]
    found = stable is not None and any(point["saturated"] for point in points)
    return {
        "knee": stable if found and not deadlocked else None,
        "highest_stable": stable,
        "deadlocked": deadlocked,
    }


def describe_knee(points: Sequence[Point]) -> str:
    """The curve's knee (:func:`knee`) in words, with the case it cannot
    name: no stable rate, or none saturated (then the knee lies above the highest rate)."""
    fields = knee_fields(points)
    if fields["deadlocked"]:
        return f"not bisected: the model deadlocked at rate {rate_text(fields['deadlocked'][0])}"
    if fields["highest_stable"] is None:
        return "none (no swept rate was stable)"
    if fields["knee"] is None:
        above = rate_text(fields["highest_stable"])
        return f"above {above} flits/cycle/endpoint (no swept rate saturated)"
    return (
        f"{rate_text(fields['knee'])} flits/cycle/endpoint (the highest stable rate below the first"
        " saturated)"
    )
