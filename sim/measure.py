"""Measurement runs on the reference model: warm-up, window, drain, statistics, verdict.

Packets created during the measurement window are the measured ones. Traffic keeps flowing
while they drain, so they see the same load to the end.

Memory stays bounded however long the run: the model hands the delivered packets to a
:class:`_Meter` as rows of :data:`RECORD_FIELDS` (the fast engine straight from its packet
table, no object per packet) and forgets them; the meter keeps running statistics only
(:class:`LatencyStats`) and passes per-packet records to the caller's ``records`` sink, if any,
as packets complete.

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

import numpy as np

from zfabric.plan import FabricPlan

from . import ENGINES
from .analytic import PatternLimits, cached_pattern_limits
from .fast import FastModel, fast_refusal
from .fast.engine import RECORD_FIELDS
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

    def add(self, latencies: np.ndarray, created: np.ndarray) -> None:
        """Packets' latencies, with the cycles they were created (two integer arrays)."""
        start, end = self.window
        batches = len(self._sums)
        batch = np.clip((created - start) * batches // max(1, end - start), 0, batches - 1)
        values, counts = np.unique(latencies, return_counts=True)
        self.histogram.update(dict(zip(values.tolist(), counts.tolist(), strict=True)))
        self.count += len(latencies)
        self.total += int(latencies.sum())
        sums, numbers = np.zeros(batches, np.int64), np.zeros(batches, np.int64)
        np.add.at(sums, batch, latencies)
        np.add.at(numbers, batch, 1)
        self._sums = [a + b for a, b in zip(self._sums, sums.tolist(), strict=True)]
        self._counts = [a + b for a, b in zip(self._counts, numbers.tolist(), strict=True)]

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


#: the columns of a row of :data:`RECORD_FIELDS` the meter reads
_LENGTH, _CREATED, _INJECTED, _DELIVERED, _HOPS = (
    RECORD_FIELDS.index(name) for name in ("length", "created", "injected", "delivered", "hops")
)


class _Meter:
    """Counts the window's throughput and measures its packets, from rows of the packets offered
    (their creation cycles and lengths) and delivered (:data:`RECORD_FIELDS`)."""

    def __init__(self, window: tuple[int, int], records: Callable[[Record], None] | None):
        self.window = window
        self.packet = LatencyStats(window)
        self.network = LatencyStats(window)
        self.records = records
        self.pending = 0  # measured packets not delivered yet
        self.offered_flits = 0
        self.offered_packets = 0
        self.accepted_flits = 0
        self.hops = 0

    def _in_window(self, cycles: np.ndarray) -> np.ndarray:
        """Which of ``cycles`` fall in the window (of creation cycles: the measured packets)."""
        return (self.window[0] <= cycles) & (cycles < self.window[1])

    def offered(self, created: np.ndarray, lengths: np.ndarray) -> None:
        measured = self._in_window(created)
        count = int(np.count_nonzero(measured))
        self.pending += count
        self.offered_packets += count
        self.offered_flits += int(lengths[measured].sum())

    def delivered(self, rows: np.ndarray) -> None:
        """Delivered packets, rows of :data:`RECORD_FIELDS` in the order of delivery."""
        delivered, length = rows[:, _DELIVERED], rows[:, _LENGTH]
        self.accepted_flits += int(length[self._in_window(delivered)].sum())
        rows = rows[self._in_window(rows[:, _CREATED])]
        if not len(rows):
            return
        self.pending -= len(rows)
        created, injected, delivered = rows[:, _CREATED], rows[:, _INJECTED], rows[:, _DELIVERED]
        self.packet.add(delivered - created, created)
        self.network.add(delivered - injected, created)
        self.hops += int(rows[:, _HOPS].sum())
        if self.records:
            for row in rows.tolist():
                self.records(dict(zip(RECORD_FIELDS, row, strict=True)))

    def result(
        self,
        model: FabricModel | FastModel,
        reasons: list[str],
        engine: str,
        undelivered: np.ndarray,
    ) -> SimulationResult:
        """The summary with the verdict ``reasons`` (none: stable) of a run on ``engine``;
        records of measured packets never delivered (``undelivered``: the rows of the packets
        still in the model, by id) go to the sink last."""
        if self.records:
            for row in undelivered[self._in_window(undelivered[:, 4])].tolist():
                record = dict(zip(RECORD_FIELDS, row, strict=True))
                record["delivered"] = None
                if record["injected"] < 0:
                    record["injected"] = None
                self.records(record)
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


class _ReferenceRows:
    """The reference engine's packets as the meter's rows: its ``on_deliver``, gathering the
    delivered ones until :meth:`take`, and the ones offered and not delivered yet."""

    def __init__(self) -> None:
        self.live: dict[int, Packet] = {}
        self.arrived: list[Packet] = []

    def __call__(self, packet: Packet) -> None:
        self.arrived.append(packet)

    def offered(self, packets: list[Packet]) -> None:
        for packet in packets:
            self.live[packet.id] = packet

    def take(self) -> np.ndarray:
        """The rows of the packets delivered since the last call."""
        for packet in self.arrived:
            del self.live[packet.id]
        rows, self.arrived = _rows(self.arrived), []
        return rows

    def undelivered_rows(self) -> np.ndarray:
        return _rows(sorted(self.live.values(), key=lambda p: p.id))


def _rows(packets: list[Packet]) -> np.ndarray:
    """Packets as rows of :data:`RECORD_FIELDS` (-1 for a cycle not reached)."""
    rows = [
        (p.id, p.src, p.dst, p.length, p.created, _cycle(p.injected), _cycle(p.delivered), p.hops)
        for p in packets
    ]
    return np.array(rows, np.int64).reshape(-1, len(RECORD_FIELDS))


def _cycle(cycle: int | None) -> int:
    return -1 if cycle is None else cycle


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
    on_deliver_rows: Callable[[np.ndarray], None] | None = None,
    **options: Any,
) -> tuple[FabricModel | FastModel, str]:
    """The model of ``engine`` for ``plan`` (``options`` as :class:`FabricModel` takes them;
    ``watched`` and ``on_deliver_rows`` as :class:`FastModel` does: given, the fast engine's
    deliveries go there as rows, ``on_deliver`` only the reference's), and the engine that
    runs: the reference when the fast engine refuses this configuration
    (:func:`zfabric.sim.fast.fast_refusal`)."""
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {', '.join(ENGINES)}, not {engine!r}")
    if on_deliver_rows is not None and options.get("on_deliver") is None:
        # the reference, run where the fast engine refuses, delivers to on_deliver only
        raise ValueError("on_deliver_rows needs on_deliver too, for the reference engine")
    if engine == "fast" and fast_refusal(plan, options.get("eject_ready")) is None:
        if on_deliver_rows is not None:
            options.pop("on_deliver", None)
        model = FastModel(
            plan, paths=False, watched=watched, on_deliver_rows=on_deliver_rows, **options
        )
        return model, "fast"
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


def _measure(
    plan: FabricPlan,
    engine: str,
    window: tuple[int, int],
    packets_between: Callable[[int, int], np.ndarray],
    meter: _Meter,
    *,
    settle_after: int,
    end: int,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[FabricModel | FastModel, str, ModelDeadlock | None, np.ndarray]:
    """A measured run on ``engine``'s model of ``plan`` (the packets created in ``window``
    measured): offer the rows (cycle, src, dst, length) of ``packets_between(start, end)``
    (cycles ``start`` to ``end - 1``) and run until a deadlock, or a cycle from ``settle_after``
    on with every measured packet delivered, or cycle ``end``. The reference steps one cycle at
    a time; the fast engine runs to the next cycle the :class:`DeadlockWatch` looks at,
    stopping early where the reference would stop. Returns the model, the engine that ran, the
    deadlock (None) and the rows of the packets left undelivered."""
    reference = _ReferenceRows()
    model, ran = make_model(
        plan, engine, watched=window, on_deliver=reference, on_deliver_rows=meter.delivered
    )
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
                model.offer_rows(rows)
                meter.offered(rows[:, 0], rows[:, 3])
                model.run_until(until, settle_after)
            else:
                if len(rows):
                    packets = [model.offer(s, d, n, created=at) for at, s, d, n in rows.tolist()]
                    reference.offered(packets)
                    meter.offered(rows[:, 0], np.array([p.length for p in packets]))
                model.step()
                # the meter takes them in batches, then cycle by cycle once it may settle
                if len(reference.arrived) >= 256 or model.cycle >= settle_after:
                    meter.delivered(reference.take())
            deadlock = watch()
            cycle = model.cycle
            if progress and cycle <= settle_after and (fast or cycle % 500 == 0):
                progress(cycle, settle_after)
            if deadlock or (cycle >= settle_after and (not meter.pending or cycle >= end)):
                if fast:
                    model.finish()
                    return model, ran, deadlock, model.undelivered_rows()
                meter.delivered(reference.take())
                return model, ran, deadlock, reference.undelivered_rows()


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
    drain_limit = drain_limit if drain_limit is not None else max(1000, cycles)
    model, ran, deadlock, undelivered = _measure(
        plan,
        engine,
        window,
        traffic.packets_between,
        meter,
        settle_after=window[1],
        end=window[1] + drain_limit,
        progress=progress,
    )
    if deadlock is None:
        model.check_credits()
    reasons = [_deadlock_reason(deadlock)] if deadlock else []
    if meter.pending and not deadlock:
        reasons.append(f"measured packets undelivered {drain_limit} cycles after the window")
    result = meter.result(model, reasons, ran, undelivered)
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
    entries = sorted(trace, key=lambda e: e.cycle)
    rows = np.array(
        [(e.cycle, e.src, e.dst, e.length or plan.packet_length) for e in entries], np.int64
    ).reshape(-1, 4)
    last = int(rows[-1, 0]) if len(rows) else 0
    window = (0, max(1, last + 1))
    meter = _Meter(window, records)

    def between(start: int, end: int) -> np.ndarray:
        first, stop = np.searchsorted(rows[:, 0], (start, end))
        return rows[first:stop]

    model, ran, deadlock, undelivered = _measure(
        plan, engine, window, between, meter, settle_after=last + 1, end=last + drain_limit + 1
    )
    reasons = []
    if deadlock:
        reasons.append(_deadlock_reason(deadlock))
    elif meter.pending:
        reasons.append(f"packets undelivered {drain_limit} cycles after the last entry")
    result = meter.result(model, reasons, ran, undelivered)
    result.deadlock = deadlock.report() if deadlock else None
    return result
