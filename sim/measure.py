"""Measurement runs on the reference model: warm-up, window, drain, statistics, verdict.

Packets created during the measurement window are the measured ones. Traffic keeps flowing
while they drain, so they see the same load to the end.

Memory stays bounded however long the run: the model hands each delivered packet to a
:class:`_Meter` and forgets it; the meter keeps running statistics only (:class:`LatencyStats`)
and passes per-packet records to the caller's ``records`` sink, if any, as packets complete.

**Saturation verdict.** A point is *saturated* (not stable) when any of these holds, and
``saturation_reason`` says which (all that hold, joined by "; "):

- the injection rate is above the channel-load bound of the traffic pattern
  (:func:`zfabric.sim.analytic.pattern_limits`): provably unsustainable, whatever the window
  measured (where the routing spreads a flow over several links, the equal split is no bound
  and only the endpoints' limits count: ``ChannelLoad.proven``);
- measured packets were still undelivered ``drain_limit`` cycles after the window;
- the accepted throughput is below 95% of the offered throughput, by more than counting noise
  (3 sqrt(n) packets, n the packets offered in the window);
- the mean packet latency is above ``LATENCY_FACTOR`` (3) times the pattern's zero-load
  latency;
- the latency has not converged: the mean over the second half of the window (by creation
  cycle) is above ``RISE_FACTOR`` (1.25) times the mean over the first half.
"""

from __future__ import annotations

import contextlib
import csv
import gc
import json
import math
import statistics
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass
from typing import Any, TextIO

from zfabric.plan import FabricPlan

from . import ENGINES
from .analytic import PatternLimits, cached_pattern_limits
from .fast import FastModel, fast_refusal
from .model import DeadlockWatch, FabricModel, ModelDeadlock, Packet
from .traffic import TraceEntry, Traffic

__all__ = [
    "LATENCY_FACTOR",
    "RISE_FACTOR",
    "LatencyStats",
    "SimulationResult",
    "simulate",
    "batch_means_ci95",
    "replay",
    "make_model",
    "RECORD_FIELDS",
    "RecordWriter",
]

#: a stable point's mean latency stays within this multiple of the zero-load latency
LATENCY_FACTOR = 3.0
#: a stable point's latency over the window's second half stays within this multiple of the first
RISE_FACTOR = 1.25
#: accepted throughput below this fraction of the offered one means saturation
ACCEPT_FRACTION = 0.95

#: two-sided 95% Student t quantiles by degrees of freedom (batch means use 9 or fewer)
_T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262}

Record = dict[str, Any]


def batch_means_ci95(means: Sequence[float]) -> float | None:
    """Half-width of the 95% confidence interval of the mean from ``means``, one per batch."""
    if not 2 <= len(means) <= len(_T95) + 1:
        return None
    return _T95[len(means) - 1] * statistics.stdev(means) / math.sqrt(len(means))


class LatencyStats:
    """Running statistics of integer latencies in memory independent of the packet count.

    Mean, p50, p99 and max are exact: a histogram keeps one counter per distinct latency value.
    The confidence interval is by batch means over ``batches`` equal slices of the window by
    creation cycle (``None`` while a batch has fewer than 2 packets).
    """

    def __init__(self, window: tuple[int, int], batches: int = 10):
        self.window = window
        self.histogram: Counter[int] = Counter()
        self.count = 0
        self.total = 0
        self._sums = [0] * batches
        self._counts = [0] * batches

    def add(self, latency: int, created: int) -> None:
        start, end = self.window
        batch = (created - start) * len(self._sums) // max(1, end - start)
        batch = min(len(self._sums) - 1, max(0, batch))
        self.histogram[latency] += 1
        self.count += 1
        self.total += latency
        self._sums[batch] += latency
        self._counts[batch] += 1

    def percentile(self, fraction: float) -> float | None:
        """The smallest value with at least ``fraction`` of the samples at or below it."""
        if not self.count:
            return None
        rank = max(1, math.ceil(fraction * self.count))
        seen = 0
        for value in sorted(self.histogram):
            seen += self.histogram[value]
            if seen >= rank:
                return float(value)
        raise AssertionError("unreachable: the histogram holds count samples")

    def half_means(self) -> tuple[float, float] | None:
        """Mean latency of the packets created in the window's first and second halves."""
        half = len(self._sums) // 2
        first, second = (slice(0, half), slice(half, None))
        counts = [sum(self._counts[part]) for part in (first, second)]
        if not all(counts):
            return None
        return (sum(self._sums[first]) / counts[0], sum(self._sums[second]) / counts[1])

    def summary(self) -> dict[str, float | None]:
        """mean, p50, p99, max and ci95 (the half-width of the mean's 95% interval)."""
        ci = None
        if min(self._counts) >= 2:
            ci = batch_means_ci95([s / c for s, c in zip(self._sums, self._counts, strict=True)])
        return {
            "mean": self.total / self.count if self.count else None,
            "p50": self.percentile(0.5),
            "p99": self.percentile(0.99),
            "max": float(max(self.histogram)) if self.histogram else None,
            "ci95": ci,
        }


@dataclass
class SimulationResult:
    offered: float  # flits/cycle/endpoint created in the window
    accepted: float  # flits/cycle/endpoint delivered in the window
    packets: int  # measured packets delivered
    latency: dict[str, float | None]  # mean, p50, p99, max, ci95 (cycles, creation -> tail)
    network_latency: dict[str, float | None]  # the same from head injection -> tail
    average_hops: float | None
    saturated: bool
    saturation_reason: str | None  # why it is saturated (see the module doc), None if stable
    deadlock: dict[str, Any] | None  # ModelDeadlock.report(): cycle, channels, partial
    cycles: int  # cycles simulated in all
    limits: dict[str, Any] | None = None  # PatternLimits.to_dict() of synthetic traffic
    engine: str = "reference"  # the cycle engine that ran (ENGINES)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class _Meter:
    """The model's delivery callback: counts the window's throughput, measures its packets."""

    def __init__(self, window: tuple[int, int], records: Callable[[Record], None] | None):
        self.window = window
        self.packet = LatencyStats(window)
        self.network = LatencyStats(window)
        self.records = records
        self.pending: dict[int, Packet] = {}  # measured packets not delivered yet
        self.offered_flits = 0
        self.offered_packets = 0
        self.accepted_flits = 0
        self.hops = 0

    def offered(self, packet: Packet) -> None:
        if self.window[0] <= packet.created < self.window[1]:
            self.pending[packet.id] = packet
            self.offered_flits += packet.length
            self.offered_packets += 1

    def __call__(self, packet: Packet) -> None:
        if self.window[0] <= packet.delivered < self.window[1]:
            self.accepted_flits += packet.length
        if self.pending.pop(packet.id, None) is None:
            return
        self.packet.add(packet.delivered - packet.created, packet.created)
        self.network.add(packet.delivered - packet.injected, packet.created)
        self.hops += packet.hops
        if self.records:
            self.records(_record(packet))

    def result(
        self, model: FabricModel | FastModel, reasons: list[str], engine: str
    ) -> SimulationResult:
        """The summary with the verdict ``reasons`` (none: stable) of a run on ``engine``;
        records of measured packets never delivered go to the sink last."""
        if self.records:
            for packet in sorted(self.pending.values(), key=lambda p: p.id):
                self.records(_record(packet))
        start, end = self.window
        span = max(1, end - start) * len(model.plan.endpoints)
        return SimulationResult(
            offered=self.offered_flits / span,
            accepted=self.accepted_flits / span,
            packets=self.packet.count,
            latency=self.packet.summary(),
            network_latency=self.network.summary(),
            average_hops=self.hops / self.packet.count if self.packet.count else None,
            saturated=bool(reasons),
            saturation_reason="; ".join(reasons) or None,
            deadlock=None,
            cycles=model.cycle,
            engine=engine,
        )


#: the keys of a per-packet record, in order (the CSV header)
RECORD_FIELDS = ("id", "src", "dst", "length", "created", "injected", "delivered", "hops")


class RecordWriter:
    """A ``records`` sink that streams each record to ``stream`` as it comes.

    ``fmt`` ``"json"`` writes one JSON array (one record per line), ``"csv"`` a header line
    then one row per record (an undelivered packet's ``delivered`` is empty). Call
    :meth:`close` once the run is over to finish the JSON array; it does not close ``stream``.
    """

    def __init__(self, stream: TextIO, fmt: str = "json"):
        if fmt not in ("json", "csv"):
            raise ValueError(f"records format must be json or csv, got {fmt!r}")
        self.stream = stream
        self.fmt = fmt
        self.count = 0
        if fmt == "csv":
            self._csv = csv.DictWriter(stream, RECORD_FIELDS, lineterminator="\n")
            self._csv.writeheader()
        else:
            stream.write("[")

    def __call__(self, record: Record) -> None:
        if self.fmt == "csv":
            self._csv.writerow(record)
        else:
            self.stream.write(("," if self.count else "") + "\n" + json.dumps(record))
        self.count += 1

    def close(self) -> None:
        if self.fmt == "json":
            self.stream.write("\n]\n")


def _record(packet: Packet) -> Record:
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


def _beyond_noise(meter: _Meter) -> bool:
    """Whether the window's accepted shortfall exceeds counting noise: 3 sqrt(n) packets of the
    mean length, n the packets offered in the window (in a short window the packets in flight
    at its two ends alone can differ by several percent)."""
    if not meter.offered_packets:
        return False
    mean_length = meter.offered_flits / meter.offered_packets
    noise = 3 * math.sqrt(meter.offered_packets) * mean_length
    return meter.offered_flits - meter.accepted_flits > noise


def _verdict(
    meter: _Meter, result: SimulationResult, rate: float, limits: PatternLimits
) -> list[str]:
    """The saturation criteria of the module doc that a synthetic-traffic point meets."""
    reasons = []
    load = limits.channel_load
    if rate > load.proven:
        reasons.append(
            f"offered rate {rate:g} is above the channel-load bound {load.bound:.3f}"
            f" (set by {load.limited_by})"
            if not load.spread
            else f"offered rate {rate:g} is above the endpoints' bound {load.proven:.3f}"
        )
    if result.accepted < ACCEPT_FRACTION * result.offered and _beyond_noise(meter):
        reasons.append(
            f"accepted {result.accepted:.4f} is below {ACCEPT_FRACTION:.0%} of offered"
            f" {result.offered:.4f}"
        )
    mean = result.latency["mean"]
    if mean is not None and mean > LATENCY_FACTOR * limits.zero_load_latency:
        reasons.append(
            f"mean latency {mean:.1f} is over {LATENCY_FACTOR:g} x zero-load"
            f" {limits.zero_load_latency:.2f}"
        )
    halves = meter.packet.half_means()
    if halves and halves[1] > RISE_FACTOR * halves[0]:
        reasons.append(
            f"latency still rising: {halves[1]:.1f} over the window's second half against"
            f" {halves[0]:.1f} over its first"
        )
    return reasons


def make_model(
    plan: FabricPlan,
    engine: str = ENGINES[0],
    *,
    watched: tuple[int, int] | None = None,
    **options: Any,
) -> tuple[FabricModel | FastModel, str]:
    """The model of ``engine`` for ``plan`` (``options`` as :class:`FabricModel` takes them;
    ``watched`` as :class:`FastModel` does), and the engine that runs: the reference when the
    fast engine refuses this configuration (:func:`zfabric.sim.fast.fast_refusal`)."""
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {', '.join(ENGINES)}, not {engine!r}")
    if engine == "fast" and fast_refusal(plan, options.get("eject_ready")) is None:
        return FastModel(plan, paths=False, watched=watched, **options), "fast"
    return FabricModel(plan, **options), "reference"


@contextlib.contextmanager
def _old_objects_frozen() -> Iterator[None]:
    """The objects already made (the plan, the routing tables: a million on the E6 Znode) left
    out of the garbage collector's passes while a run makes and drops its packets: the run's
    full passes walked them all, a fifth of its CPU time. Thawed after; left as they are when
    the caller froze some itself."""
    if gc.get_freeze_count():
        yield
        return
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def _drive(
    model: FabricModel | FastModel,
    packets_between: Callable[[int, int], Iterable[tuple[int, int, int, int]]],
    meter: _Meter,
    *,
    settle_after: int,
    end: int,
    progress: Callable[[int, int], None] | None = None,
    total: int = 0,
) -> ModelDeadlock | None:
    """Offer the (cycle, src, dst, length) of ``packets_between(start, end)`` (cycles
    ``start`` to ``end - 1``) and run until a deadlock (returned), or a cycle from
    ``settle_after`` on with every measured packet delivered, or cycle ``end``. The reference
    steps one cycle at a time; the fast engine runs to the next cycle the
    :class:`DeadlockWatch` looks at, stopping early where the reference would stop."""
    watch = DeadlockWatch(model)
    fast = isinstance(model, FastModel)
    drawn = 0  # packets are drawn for cycles before this one
    with _old_objects_frozen():
        while True:
            cycle = model.cycle
            until = min(end, (cycle // watch.every + 1) * watch.every if fast else cycle + 1)
            rows = packets_between(max(cycle, drawn), until)
            drawn = max(drawn, until)
            if fast:
                offered = model.offer_many(rows)
            else:
                offered = [
                    model.offer(src, dst, length, created=at) for at, src, dst, length in rows
                ]
            for packet in offered:
                meter.offered(packet)
            if fast:
                model.run_until(until, settle_after)
            else:
                model.step()
            deadlock = watch()
            cycle = model.cycle
            if progress and cycle <= total and (fast or cycle % 500 == 0):
                progress(cycle, total)
            if deadlock or (cycle >= settle_after and (not meter.pending or cycle >= end)):
                if fast:
                    model.finish()
                return deadlock


def simulate(
    plan: FabricPlan,
    traffic: Traffic,
    *,
    warmup: int = 1000,
    cycles: int = 10000,
    drain_limit: int | None = None,
    records: Callable[[Record], None] | None = None,
    progress: Callable[[int, int], None] | None = None,
    limits: PatternLimits | None = None,
    engine: str = ENGINES[0],
) -> SimulationResult:
    """Run synthetic traffic: warm up, measure for ``cycles``, drain the measured packets.

    ``records`` receives one dict per measured packet (id, src, dst, length, created,
    injected, delivered, hops) as it is delivered, then those never delivered (delivered
    None). ``limits`` (from :func:`zfabric.sim.analytic.pattern_limits`, from the set-up cache
    when not given) sets the verdict's bound and zero-load latency. A deadlock, whole or
    partial, stops the run and is reported in ``deadlock``. ``engine``: one of
    :data:`ENGINES` (the result names the one that ran).
    """
    if warmup < 0 or cycles < 1:
        raise ValueError(f"need warmup >= 0 and cycles >= 1, got {warmup!r} and {cycles!r}")
    if limits is None:
        limits = cached_pattern_limits(plan, traffic.config, traffic.seed)
    window = (warmup, warmup + cycles)
    meter = _Meter(window, records)
    model, ran = make_model(plan, engine, on_deliver=meter, watched=window)
    drain_limit = drain_limit if drain_limit is not None else max(1000, cycles)
    deadlock = _drive(
        model,
        traffic.packets_between,
        meter,
        settle_after=window[1],
        end=window[1] + drain_limit,
        progress=progress,
        total=window[1],
    )
    if deadlock is None:
        model.check_credits()
    reasons = [_deadlock_reason(deadlock)] if deadlock else []
    if meter.pending and not deadlock:
        reasons.append(f"measured packets undelivered {drain_limit} cycles after the window")
    result = meter.result(model, reasons, ran)
    reasons += _verdict(meter, result, traffic.config.rate, limits)
    result.saturated = bool(reasons)
    result.saturation_reason = "; ".join(reasons) or None
    result.deadlock = deadlock.report() if deadlock else None
    result.limits = limits.to_dict()
    return result


def _deadlock_reason(deadlock: ModelDeadlock) -> str:
    return f"{'partial ' if deadlock.partial else ''}deadlock at cycle {deadlock.at}"


def replay(
    plan: FabricPlan,
    trace: Iterable[TraceEntry],
    *,
    drain_limit: int = 100_000,
    records: Callable[[Record], None] | None = None,
    engine: str = ENGINES[0],
) -> SimulationResult:
    """Replay a trace (every packet measured) until all are delivered or the limit is hit.

    A trace has no offered rate or pattern: the only saturation verdict is packets left
    undelivered ``drain_limit`` cycles after the last entry. ``records`` and ``engine`` as for
    :func:`simulate`.
    """
    by_cycle: dict[int, list[tuple[int, int, int]]] = {}
    for entry in sorted(trace, key=lambda e: e.cycle):
        by_cycle.setdefault(entry.cycle, []).append((entry.src, entry.dst, entry.length))
    last = max(by_cycle, default=0)
    window = (0, max(1, last + 1))
    meter = _Meter(window, records)
    model, ran = make_model(plan, engine, on_deliver=meter, watched=window)
    deadlock = _drive(
        model,
        lambda start, end: [
            (cycle, *packet) for cycle in range(start, end) for packet in by_cycle.get(cycle, ())
        ],
        meter,
        settle_after=last + 1,
        end=last + drain_limit + 1,
    )
    reasons = []
    if deadlock:
        reasons.append(_deadlock_reason(deadlock))
    elif meter.pending:
        reasons.append(f"packets undelivered {drain_limit} cycles after the last entry")
    result = meter.result(model, reasons, ran)
    result.deadlock = deadlock.report() if deadlock else None
    return result
