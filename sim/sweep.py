"""Latency-throughput sweeps with the knee refined by bisection.

Fixed rate steps waste runs far below saturation and say little about where it starts. A sweep
runs the coarse rates in increasing order until the first saturated point (the verdict of
:mod:`zfabric.sim.measure`), then bisects between the last stable rate (0 if none) and that
first saturated one until they are ``tolerance`` apart. It stops at once on a deadlock.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from typing import Any

from zfabric.plan import FabricPlan

from . import ENGINES
from .analytic import cached_pattern_limits
from .curve import knee
from .measure import simulate
from .traffic import Traffic, TrafficConfig

__all__ = ["sweep", "knee", "saturation", "COARSE_RATES"]

#: the rates a saturation search starts from, before bisection
COARSE_RATES = tuple(round(0.1 * i, 1) for i in range(1, 11))

Point = dict[str, Any]


def sweep(
    plan: FabricPlan,
    config: TrafficConfig,
    rates: Sequence[float],
    *,
    seed: int = 1,
    warmup: int = 1000,
    cycles: int = 10000,
    drain_limit: int | None = None,
    tolerance: float = 0.01,
    progress: Callable[[int, int], None] | None = None,
    engine: str = ENGINES[0],
) -> list[Point]:
    """Simulate ``config`` at ``rates`` (its own rate is ignored) and refine the knee.

    Returns one point per simulated rate, sorted by rate: ``{"rate": r, **result.to_dict()}``
    (:class:`zfabric.sim.measure.SimulationResult`). ``progress(done, total)`` is called after
    each run; ``total`` counts the coarse rates until the first saturated point, then the runs
    done plus the bisection steps still to come. ``engine``: the cycle engine (:data:`ENGINES`).
    """
    rates = sorted(set(rates))
    if not rates:
        raise ValueError("a sweep needs at least one rate")
    if not tolerance > 0:
        raise ValueError(f"tolerance must be positive, got {tolerance!r}")
    limits = cached_pattern_limits(plan, config, seed)
    points: list[Point] = []

    def run(rate: float) -> Point:
        traffic = Traffic(dataclasses.replace(config, rate=rate), len(plan.endpoints), seed)
        result = simulate(
            plan,
            traffic,
            warmup=warmup,
            cycles=cycles,
            drain_limit=drain_limit,
            limits=limits,
            engine=engine,
        )
        points.append({"rate": rate, **result.to_dict()})
        return points[-1]

    stable, saturated = 0.0, None
    for rate in rates:
        point = run(rate)
        if point["saturated"] and not point["deadlock"]:
            saturated = rate
        total = len(rates) if saturated is None else len(points) + _steps(stable, rate, tolerance)
        if progress:
            progress(len(points), len(points) if point["deadlock"] else total)
        if point["deadlock"] or saturated is not None:
            break
        stable = rate
    if saturated is not None:
        done, steps = len(points), _steps(stable, saturated, tolerance)
        for step in range(steps):
            rate = round((stable + saturated) / 2, 6)
            point = run(rate)
            if progress:
                progress(done + step + 1, done + (step + 1 if point["deadlock"] else steps))
            if point["deadlock"]:
                break
            if point["saturated"]:
                saturated = rate
            else:
                stable = rate
    return sorted(points, key=lambda p: p["rate"])


def _steps(stable: float, saturated: float, tolerance: float) -> int:
    """Bisection steps that bring the bracket [stable, saturated] within ``tolerance``."""
    return max(0, math.ceil(math.log2((saturated - stable) / tolerance)))


def saturation(
    plan: FabricPlan,
    config: TrafficConfig,
    *,
    seed: int = 1,
    warmup: int = 1000,
    cycles: int = 2000,
    tolerance: float = 0.01,
) -> float:
    """The saturation throughput the benches quote: the knee of a sweep over
    :data:`COARSE_RATES` refined to ``tolerance``, each rate judged by the model's verdict
    (0.0 when even the lowest rate saturates)."""
    points = sweep(
        plan,
        config,
        COARSE_RATES,
        seed=seed,
        warmup=warmup,
        cycles=cycles,
        drain_limit=cycles,
        tolerance=tolerance,
    )
    return knee(points) or 0.0
