"""The lock-step scoreboard: what the reference model delivers, packet by packet, cycle by cycle.

:func:`model_expectations` replays an injection trace on :class:`zfabric.sim.model.FabricModel` and
keeps, per packet (src, sequence), the model's injection and delivery cycles, the attachment it
leaves by and its path. :class:`LockstepScoreboard` takes the RTL's side from the endpoint
sources and monitors and records a :class:`Mismatch` for every packet the RTL delivers in
another cycle, by another attachment, with other data or another ``tid``, more than once or
not at all.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from zfabric.sim.model import DeadlockWatch, FabricModel
from zfabric.sim.traffic import TraceEntry

from zfabric.plan import FabricPlan, PlanView, PortRef

from .packing import PacketCodec

__all__ = [
    "Expected",
    "Mismatch",
    "LockstepScoreboard",
    "model_expectations",
    "save_expectations",
    "load_expectations",
]


@dataclass
class Expected:
    """One packet of the trace as the model handled it."""

    src: int
    sequence: int
    dst: int
    length: int
    created: int
    injected: int  # cycle the head left the source
    delivered: int  # cycle the tail was delivered
    attachment: int  # which of the destination's attachments it left by
    path: list[str]  # the head's (switch, output port) hops, named

    @property
    def key(self) -> tuple[int, int]:
        return (self.src, self.sequence)


def path_names(plan: FabricPlan, path) -> list[str]:
    names = []
    for s, port in path:
        switch = plan.switches[s]
        names.append(f"{switch.name}.p{port}({switch.ports[port].label})")
    return names


def model_expectations(
    plan: FabricPlan,
    trace: list[TraceEntry],
    *,
    limit: int = 1_000_000,
    eject_ready: Callable[[int, int, int], bool] | None = None,
) -> tuple[list[Expected], int]:
    """Replay ``trace`` on the reference model until every packet is delivered.

    Returns the packets in trace order and the number of cycles the model ran. Packets of one
    source get sequence numbers in trace order (the trace is sorted by cycle, stably). Raises
    :class:`zfabric.sim.model.ModelDeadlock` if the model deadlocks, wholly or partly.
    ``eject_ready`` is the ejection ``ready`` pattern (:class:`FabricModel`).
    """
    model = FabricModel(plan, eject_ready=eject_ready)
    watch = DeadlockWatch(model)
    view = PlanView(plan)
    entries = sorted(trace, key=lambda e: e.cycle)
    packets = []
    index = 0
    while index < len(entries) or len(model.delivered) < len(entries):
        while index < len(entries) and entries[index].cycle <= model.cycle:
            entry = entries[index]
            packets.append(model.offer(entry.src, entry.dst, entry.length, created=entry.cycle))
            index += 1
        model.step()
        deadlock = watch()
        if deadlock:
            raise deadlock
        if model.cycle > limit:
            raise RuntimeError(f"the model did not deliver the trace within {limit} cycles")
    expected = []
    for packet in packets:
        switch, port = packet.path[-1]
        attachment = plan.endpoints[packet.dst].attachments.index(PortRef(switch, port))
        assert view.endpoint_at[(switch, port)] == packet.dst
        expected.append(
            Expected(
                src=packet.src,
                sequence=packet.payload[1],
                dst=packet.dst,
                length=packet.length,
                created=packet.created,
                injected=packet.injected,
                delivered=packet.delivered,
                attachment=attachment,
                path=path_names(plan, packet.path),
            )
        )
    return expected, model.cycle


def save_expectations(path: str | Path, expected: list[Expected]) -> None:
    Path(path).write_text(json.dumps([list(asdict(e).values()) for e in expected]))


def load_expectations(path: str | Path) -> list[Expected]:
    return [Expected(*row) for row in json.loads(Path(path).read_text())]


@dataclass
class Mismatch:
    """One packet on which the RTL and the model disagree.

    ``kind``: ``late`` (the RTL delivered after the model, or ``rtl_cycle`` is None: not by the
    end of the run), ``early``, ``corrupt`` (data differs), ``attachment`` (left by another
    attachment), ``tid`` (another source endpoint named), ``unknown`` (no packet in flight to
    that endpoint carries that head: a duplicate or a corrupted head), ``framing`` (``tid``
    changing within a packet).
    """

    kind: str
    cycle: int  # cycle the scoreboard saw it
    src: int | None = None
    sequence: int | None = None
    dst: int | None = None
    length: int | None = None
    created: int | None = None
    model_cycle: int | None = None
    rtl_cycle: int | None = None
    model_injected: int | None = None
    rtl_injected: int | None = None
    path: list[str] = field(default_factory=list)
    detail: str = ""

    def describe(self) -> str:
        if self.src is None:
            return f"cycle {self.cycle}: {self.kind}: {self.detail}"
        rtl = "never" if self.rtl_cycle is None else f"cycle {self.rtl_cycle}"
        text = (
            f"packet (src {self.src}, seq {self.sequence}) -> {self.dst}, {self.length} flits, "
            f"created {self.created}: {self.kind}: model delivers in cycle {self.model_cycle}, "
            f"RTL {rtl} (injected: model {self.model_injected}, RTL {self.rtl_injected})"
        )
        if self.detail:
            text += f"; {self.detail}"
        if self.path:
            text += "; path " + " -> ".join(self.path)
        return text


class LockstepScoreboard:
    """Compares the RTL's deliveries with the model's, cycle by cycle.

    Feed it ``injected(packet, cycle)`` from the sources, ``delivered(delivery)`` from the
    monitors and ``end_of_cycle(cycle)`` once per cycle after both (it flags the packets the
    model delivered in that cycle and the RTL did not).
    """

    def __init__(self, expected: list[Expected], codec: PacketCodec):
        self.codec = codec
        self.expected = {e.key: e for e in expected}
        self._due: dict[int, list[tuple[int, int]]] = defaultdict(list)
        for e in expected:
            self._due[e.delivered].append(e.key)
        # (destination, head data as delivered) -> keys in flight, oldest first
        self._in_flight: dict[tuple[int, int], list[tuple[int, int]]] = defaultdict(list)
        self.rtl_injected: dict[tuple[int, int], int] = {}
        self.rtl_delivered: dict[tuple[int, int], int] = {}
        self.mismatches: list[Mismatch] = []
        self._late: dict[tuple[int, int], Mismatch] = {}

    @property
    def first_mismatch(self) -> Mismatch | None:
        return min(self.mismatches, key=lambda m: m.cycle, default=None)

    def _mismatch(self, kind: str, cycle: int, key=None, **fields) -> Mismatch:
        if key is not None:
            e = self.expected[key]
            fields = {
                "src": e.src,
                "sequence": e.sequence,
                "dst": e.dst,
                "length": e.length,
                "created": e.created,
                "model_cycle": e.delivered,
                "model_injected": e.injected,
                "rtl_injected": self.rtl_injected.get(key),
                "path": e.path,
                **fields,
            }
        mismatch = Mismatch(kind, cycle, **fields)
        self.mismatches.append(mismatch)
        return mismatch

    def injected(self, packet, cycle: int) -> None:
        self.rtl_injected[packet.key] = cycle
        head = self.codec.word(packet.src, packet.sequence, 0)
        self._in_flight[(packet.dst, head)].append(packet.key)

    def delivered(self, delivery) -> None:
        cycle = delivery.cycle
        if delivery.faults:
            self._mismatch("framing", cycle, detail="; ".join(delivery.faults))
        keys = self._in_flight.get((delivery.endpoint, delivery.words[0] if delivery.words else -1))
        if not keys:
            words = " ".join(f"{w:#x}" for w in delivery.words)
            self._mismatch(
                "unknown",
                cycle,
                dst=delivery.endpoint,
                rtl_cycle=cycle,
                detail=f"no packet in flight to endpoint {delivery.endpoint} (attachment "
                f"{delivery.attachment}) has this head; flits {words}",
            )
            return
        key = self._pick(keys, delivery)
        keys.remove(key)
        e = self.expected[key]
        self.rtl_delivered[key] = cycle
        want = tuple(self.codec.word(e.src, e.sequence, i) for i in range(e.length))
        if delivery.words != want:
            if len(delivery.words) != len(want):
                detail = f"{len(delivery.words)} flits instead of {len(want)}"
            else:
                i = next(
                    i for i, (a, b) in enumerate(zip(delivery.words, want, strict=True)) if a != b
                )
                detail = f"flit {i} is {delivery.words[i]:#x}, sent {want[i]:#x}"
            self._mismatch("corrupt", cycle, key, rtl_cycle=cycle, detail=detail)
        if delivery.tid != e.src:
            self._mismatch(
                "tid", cycle, key, rtl_cycle=cycle, detail=f"tid {delivery.tid}, sent by {e.src}"
            )
        if delivery.attachment != e.attachment:
            self._mismatch(
                "attachment",
                cycle,
                key,
                rtl_cycle=cycle,
                detail=f"left by attachment {delivery.attachment}, the model's by {e.attachment}",
            )
        if key in self._late:
            self._late.pop(key).rtl_cycle = cycle
        elif cycle < e.delivered:
            self._mismatch("early", cycle, key, rtl_cycle=cycle)

    def _pick(self, keys: list[tuple[int, int]], delivery) -> tuple[int, int]:
        """The in-flight packet a delivered head belongs to.

        Heads of a destination may look alike when the flit is narrow (8 random bits); then
        the packet the model delivers right here and now, with these flits, is the one (adaptive
        routing may reorder a flow), else the oldest.
        """
        if len(keys) > 1:
            for key in keys:
                e = self.expected[key]
                if e.delivered == delivery.cycle and e.attachment == delivery.attachment:
                    words = (self.codec.word(e.src, e.sequence, i) for i in range(e.length))
                    if tuple(words) == delivery.words:
                        return key
        return keys[0]

    def end_of_cycle(self, cycle: int) -> None:
        for key in self._due.pop(cycle, ()):
            if key not in self.rtl_delivered:
                self._late[key] = self._mismatch("late", cycle, key)

    @property
    def outstanding(self) -> int:
        """Packets the model delivered and the RTL has not (yet)."""
        return len(self._late)
