"""Measurement runs on the reference model: warm-up, window, drain, statistics.

Packets created during the measurement window are the measured ones. Traffic keeps flowing
while they drain, so they see the same load to the end. A run whose measured packets are not
all delivered within ``drain_limit`` cycles after the window, or whose accepted throughput
falls clearly short of the offered load, is reported as saturated instead of waited out.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from zfabric.plan import FabricPlan

from .model import FabricModel, Packet
from .traffic import TraceEntry, Traffic

__all__ = ["SimulationResult", "simulate", "batch_means_ci95", "replay"]

#: two-sided 95% Student t quantiles by degrees of freedom (batch means use 9 or fewer)
_T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262}


def batch_means_ci95(values: list[float], batches: int = 10) -> float | None:
    """Half-width of the 95% confidence interval of the mean, by batch means (values in order)."""
    size = len(values) // batches
    if size < 2:
        return None
    means = [statistics.fmean(values[i * size : (i + 1) * size]) for i in range(batches)]
    return _T95[batches - 1] * statistics.stdev(means) / math.sqrt(batches)


def _percentile(sorted_values: list[int], fraction: float) -> float:
    index = min(len(sorted_values) - 1, max(0, math.ceil(fraction * len(sorted_values)) - 1))
    return float(sorted_values[index])


@dataclass
class SimulationResult:
    offered: float  # flits/cycle/endpoint created in the window
    accepted: float  # flits/cycle/endpoint delivered in the window
    packets: int  # measured packets delivered
    latency: dict[str, float | None]  # mean, p50, p99, max, ci95 (cycles, creation -> tail)
    average_hops: float | None
    saturated: bool
    deadlock: dict[str, Any] | None  # {"cycle": n, "channels": [...]} when one was detected
    cycles: int  # cycles simulated in all
    records: list[dict[str, Any]] | None = field(default=None)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        if self.records is None:
            data.pop("records")
        return data


def _summarise(
    model: FabricModel,
    measured: list[Packet],
    window: tuple[int, int],
    offered_flits: int,
    saturated: bool,
    deadlock: dict[str, Any] | None,
    records: bool,
) -> SimulationResult:
    start, end = window
    endpoints = len(model.plan.endpoints)
    span = max(1, end - start) * endpoints
    delivered = [p for p in measured if p.delivered is not None]
    accepted_flits = sum(
        p.length for p in model.delivered if p.delivered is not None and start <= p.delivered < end
    )
    latencies = sorted(p.latency for p in delivered)
    in_order = [p.latency for p in sorted(delivered, key=lambda p: p.created)]
    latency: dict[str, float | None] = {"mean": None, "p50": None, "p99": None, "max": None}
    if latencies:
        latency = {
            "mean": statistics.fmean(latencies),
            "p50": _percentile(latencies, 0.5),
            "p99": _percentile(latencies, 0.99),
            "max": float(latencies[-1]),
        }
    latency["ci95"] = batch_means_ci95(in_order)
    return SimulationResult(
        offered=offered_flits / span,
        accepted=accepted_flits / span,
        packets=len(delivered),
        latency=latency,
        average_hops=statistics.fmean(p.hops for p in delivered) if delivered else None,
        saturated=saturated,
        deadlock=deadlock,
        cycles=model.cycle,
        records=[_record(p) for p in measured] if records else None,
    )


def _record(packet: Packet) -> dict[str, Any]:
    return {
        "id": packet.id,
        "src": packet.src,
        "dst": packet.dst,
        "length": packet.length,
        "created": packet.created,
        "injected": packet.injected,
        "delivered": packet.delivered,
        "hops": packet.hops,
    }


def _step_checked(model: FabricModel) -> dict[str, Any] | None:
    """Step once; return the deadlock report if the fabric froze."""
    model.step()
    if model.stuck:
        return {"cycle": model.cycle, "channels": model.waiting_cycle()}
    return None


def simulate(
    plan: FabricPlan,
    traffic: Traffic,
    *,
    warmup: int = 1000,
    cycles: int = 10000,
    drain_limit: int | None = None,
    records: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> SimulationResult:
    """Run synthetic traffic: warm up, measure for ``cycles``, drain the measured packets."""
    model = FabricModel(plan)
    drain_limit = drain_limit if drain_limit is not None else max(1000, cycles)
    window = (warmup, warmup + cycles)
    measured: list[Packet] = []
    outstanding = 0  # measured packets not yet delivered
    seen = 0  # how much of model.delivered has been looked at
    offered_flits = 0
    deadlock = None
    total = warmup + cycles
    cycle = 0
    while deadlock is None:
        in_window = window[0] <= cycle < window[1]
        for src, dst, length in traffic.packets_at(cycle):
            packet = model.offer(src, dst, length)
            if in_window:
                measured.append(packet)
                outstanding += 1
                offered_flits += length
        deadlock = _step_checked(model)
        for packet in model.delivered[seen:]:
            outstanding -= window[0] <= packet.created < window[1]
        seen = len(model.delivered)
        cycle += 1
        if progress and cycle <= total and cycle % 500 == 0:
            progress(cycle, total)
        if cycle >= window[1] and (not outstanding or cycle >= window[1] + drain_limit):
            break
    model.check_credits()
    undelivered = any(p.delivered is None for p in measured)
    result = _summarise(model, measured, window, offered_flits, undelivered, deadlock, records)
    # accepted more than 5% below offered in the window also means saturation
    result.saturated = result.saturated or result.accepted < 0.95 * result.offered
    return result


def replay(
    plan: FabricPlan,
    trace: Iterable[TraceEntry],
    *,
    drain_limit: int = 100_000,
) -> SimulationResult:
    """Replay a trace (every packet measured) until all are delivered or the limit is hit."""
    model = FabricModel(plan)
    entries = sorted(trace, key=lambda e: e.cycle)
    measured = []
    offered_flits = 0
    index = 0
    deadlock = None
    last = entries[-1].cycle if entries else 0
    while deadlock is None:
        while index < len(entries) and entries[index].cycle == model.cycle:
            entry = entries[index]
            measured.append(model.offer(entry.src, entry.dst, entry.length))
            offered_flits += entry.length
            index += 1
        deadlock = _step_checked(model)
        done = index == len(entries) and all(p.delivered is not None for p in measured)
        if done or model.cycle > last + drain_limit:
            break
    undelivered = any(p.delivered is None for p in measured)
    window = (0, max(1, last + 1))
    return _summarise(model, measured, window, offered_flits, undelivered, deadlock, True)
