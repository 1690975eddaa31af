"""Endpoint driver and monitor for a fabric's AXI4-Stream ports, in the shape of cocotbext-axi.

``EndpointSource`` injects packets into one endpoint's input stream (``s<e>_axis_*``) and
``EndpointMonitor`` records the packets delivered on one output stream (``m<e>_axis_*``), with
their cycles (port names and packet format: docs/rtl.md). Both follow the
cycle conventions of docs/microarchitecture.md and tests/hdl/hdl_bench.py:

- a source presents a packet's head from the cycle the packet is created, or from the cycle
  after the previous packet's tail was taken (the model's unbounded source queue), and a beat
  is taken in a cycle where ``valid`` and ``ready`` are both high;
- a packet is delivered in the cycle its tail is taken from the output stream (``tvalid`` and
  ``tready`` both high).

A monitor drives its stream's ``tready`` from ``ready(endpoint, attachment, cycle)`` (for
instance :class:`zfabric.sim.model.EjectStalls`, the pause generator of cocotbext-axi in the
model's terms), the same function the model is given, or holds it high.

Every component hooks into one :class:`CycleLoop`, which runs the whole bench in a single
coroutine: drive right after the rising edge, sample once values settle (``ReadOnly``). A
coroutine per component would cost more scheduler time per cycle than the simulator spends on a
small fabric.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from cocotb.triggers import ReadOnly, RisingEdge

__all__ = [
    "CycleLoop",
    "EndpointBus",
    "EjectionBus",
    "TbPacket",
    "Delivery",
    "EndpointSource",
    "EndpointMonitor",
]


def _unsigned(value) -> int:
    """A port's value as an unsigned integer: a one-bit port (``tid`` of a two-endpoint fabric)
    reads as a cocotb ``Logic``, which has no ``to_unsigned``, wider ones as a ``LogicArray``."""
    return value.to_unsigned() if hasattr(value, "to_unsigned") else int(value)


class CycleLoop:
    """Steps a bench one clock cycle at a time.

    Cycle 0 is the first cycle after reset: ``rst`` is released right after the rising edge
    that starts it, so the fabric is in its reset state during cycle 0, as the reference model
    is at its cycle 0. In each cycle the loop calls every ``drive(cycle)`` hook right after the
    rising edge (writes take effect for the next edge), waits for ``ReadOnly`` and calls every
    ``sample(cycle)`` hook on the settled values.
    """

    def __init__(self, clk, rst=None):
        self.clk = clk
        self.rst = rst
        self.cycle = -1
        self._drive: list[Callable[[int], None]] = []
        self._sample: list[Callable[[int], None]] = []

    def add(self, *, drive=None, sample=None) -> None:
        if drive is not None:
            self._drive.append(drive)
        if sample is not None:
            self._sample.append(sample)

    async def reset(self, cycles: int = 4) -> None:
        """Hold ``rst`` for ``cycles`` rising edges; it is released as cycle 0 starts."""
        if self.rst is not None:
            self.rst.value = 1
        for _ in range(cycles):
            await RisingEdge(self.clk)

    async def run(self, until: Callable[[int], bool]) -> int:
        """Run cycles until ``until(cycle)``, checked after sampling, is true; return the cycle."""
        edge, settled = RisingEdge(self.clk), ReadOnly()
        drive, sample = self._drive, self._sample
        while True:
            await edge
            self.cycle += 1
            if self.cycle == 0 and self.rst is not None:
                self.rst.value = 0
            for hook in drive:
                hook(self.cycle)
            await settled
            for hook in sample:
                hook(self.cycle)
            if until(self.cycle):
                return self.cycle


@dataclass
class EndpointBus:
    """The AXI4-Stream input of one endpoint: ``s<e>_axis_tvalid``, ``tready``, ``tdata``,
    ``tlast``, ``tdest`` (docs/rtl.md)."""

    tvalid: object
    tready: object
    tdata: object
    tlast: object
    tdest: object

    @classmethod
    def from_dut(cls, dut, endpoint: int) -> EndpointBus:
        from zfabric.hdl.naming import AXIS_IN, axis_name

        return cls(*(getattr(dut, axis_name(endpoint, signal)) for signal in AXIS_IN))


@dataclass
class EjectionBus:
    """One AXI4-Stream output of one endpoint: ``m<e>_axis_tvalid``, ``tready``, ``tdata``,
    ``tlast``, ``tid`` (``m<e>_<a>_axis_*`` with several attachments)."""

    tvalid: object
    tready: object
    tdata: object
    tlast: object
    tid: object

    @classmethod
    def from_dut(cls, dut, endpoint: int, attachment: int, attachments: int) -> EjectionBus:
        from zfabric.hdl.naming import AXIS_OUT, axis_name

        return cls(
            *(
                getattr(dut, axis_name(endpoint, signal, attachment, attachments=attachments))
                for signal in AXIS_OUT
            )
        )


@dataclass(eq=False)
class TbPacket:
    """A packet to inject: identity (src, sequence), destination and its data words."""

    src: int
    sequence: int
    dst: int
    created: int
    words: tuple[int, ...]
    injected: int | None = None  # cycle the head was taken
    sent: int | None = None  # cycle the tail was taken

    @property
    def key(self) -> tuple[int, int]:
        return (self.src, self.sequence)

    @property
    def length(self) -> int:
        return len(self.words)


@dataclass
class Delivery:
    """A packet seen whole on an output stream."""

    endpoint: int
    attachment: int
    words: tuple[int, ...]
    first: int  # cycle of the head
    cycle: int  # cycle of the tail: the delivery cycle
    tid: int  # the source endpoint, as the first beat's tid gives it
    faults: list[str] = field(default_factory=list)  # tid changing within the packet


class EndpointSource:
    """Injects :class:`TbPacket` s into one endpoint's AXI4-Stream input at their creation
    cycles: ``tdata`` a word per beat, ``tlast`` on the last, ``tdest`` the destination on
    every beat (AXI: constant within a packet).

    ``send_nowait`` queues a packet (packets of one source must come in creation order).
    ``on_head(packet, cycle)`` and ``on_tail(packet, cycle)`` are called as the head and the
    tail are taken.
    """

    def __init__(
        self,
        bus: EndpointBus,
        loop: CycleLoop,
        *,
        on_head: Callable[[TbPacket, int], None] | None = None,
        on_tail: Callable[[TbPacket, int], None] | None = None,
    ):
        self.bus = bus
        self.queue: deque[TbPacket] = deque()
        self.on_head = on_head
        self.on_tail = on_tail
        self.sent = 0
        self._current: TbPacket | None = None
        self._index = 0
        self._shown: tuple | None = None  # (packet, beat) on the bus, None when tvalid is low
        bus.tvalid.value = 0
        loop.add(drive=self._drive, sample=self._sample)

    def send_nowait(self, packet: TbPacket) -> None:
        if self.queue and packet.created < self.queue[-1].created:
            raise ValueError(f"packet {packet.key} created before the one queued ahead of it")
        self.queue.append(packet)

    async def send(self, packet: TbPacket) -> None:
        self.send_nowait(packet)  # the source queue is unbounded: never waits

    def idle(self) -> bool:
        return self._current is None and not self.queue

    def _drive(self, cycle: int) -> None:
        if self._current is None and self.queue and self.queue[0].created <= cycle:
            self._current = self.queue.popleft()
            self._index = 0
        packet = self._current
        if packet is None:
            if self._shown is not None:
                self.bus.tvalid.value = 0
                self._shown = None
            return
        shown = (packet.key, self._index)
        if shown != self._shown:
            if self._shown is None:
                self.bus.tvalid.value = 1
            self.bus.tdata.value = packet.words[self._index]
            self.bus.tlast.value = int(self._index == packet.length - 1)
            self.bus.tdest.value = packet.dst
            self._shown = shown

    def _sample(self, cycle: int) -> None:
        packet = self._current
        if packet is None or not self.bus.tready.value:
            return
        if self._index == 0:
            packet.injected = cycle
            if self.on_head:
                self.on_head(packet, cycle)
        self._index += 1
        if self._index == packet.length:
            packet.sent = cycle
            self._current = None
            self.sent += 1
            if self.on_tail:
                self.on_tail(packet, cycle)


class EndpointMonitor:
    """Records the packets delivered on one AXI4-Stream output of one endpoint.

    Each whole packet (beats up to one with ``tlast``) becomes a :class:`Delivery` in ``queue``
    (or goes to ``callback``), with the cycles of its head and tail and its ``tid``; a ``tid``
    that changes within the packet is noted in the delivery's ``faults``.
    ``ready(endpoint, attachment, cycle)`` gives the stream's ``tready`` in each cycle (None:
    always high).
    """

    def __init__(
        self,
        bus: EjectionBus,
        loop: CycleLoop,
        *,
        endpoint: int,
        attachment: int = 0,
        callback: Callable[[Delivery], None] | None = None,
        ready: Callable[[int, int, int], bool] | None = None,
    ):
        self.bus = bus
        self.endpoint = endpoint
        self.ready = ready
        self._ready_shown = True
        bus.tready.value = 1
        self.attachment = attachment
        self.callback = callback
        self.queue: deque[Delivery] = deque()
        self.count = 0
        self.last_valid: int | None = None  # last cycle a flit came out
        self._words: list[int] = []
        self._first = 0
        self._tid = 0
        self._faults: list[str] = []
        loop.add(drive=self._drive if ready is not None else None, sample=self._sample)

    def recv_nowait(self) -> Delivery:
        return self.queue.popleft()

    def empty(self) -> bool:
        return not self.queue

    def _drive(self, cycle: int) -> None:
        ready = bool(self.ready(self.endpoint, self.attachment, cycle))
        if ready != self._ready_shown:
            self.bus.tready.value = int(ready)
            self._ready_shown = ready

    def _sample(self, cycle: int) -> None:
        if not (self._ready_shown and self.bus.tvalid.value):
            return
        self.last_valid = cycle
        tid = _unsigned(self.bus.tid.value)
        if not self._words:
            self._first, self._tid = cycle, tid
        elif tid != self._tid:
            self._faults.append(
                f"cycle {cycle}: tid {tid} on beat {len(self._words)}, {self._tid} on the first"
            )
        self._words.append(_unsigned(self.bus.tdata.value))
        if self.bus.tlast.value:
            delivery = Delivery(
                self.endpoint,
                self.attachment,
                tuple(self._words),
                self._first,
                cycle,
                self._tid,
                self._faults,
            )
            self._words, self._faults = [], []
            self.count += 1
            if self.callback:
                self.callback(delivery)
            else:
                self.queue.append(delivery)
