"""The self-checking board design: a fabric with a traffic generator and checker per endpoint.

:class:`BoardCore` is platform-free (so it simulates as it builds): the network, one
:class:`~zfabric.boards.traffic.Generator` per endpoint, one
:class:`~zfabric.boards.traffic.Checker` per
endpoint attachment, global counters, the report line on a UART and the LED signals.
:class:`BoardTop` puts a core on a board: it is the only place that calls ``platform.request``.

The report (``boards/uart.py`` describes the line format; all values hex):

=========  ==========================================================================
``cyc``    cycles since reset
``sent``   packets whose tail entered the fabric
``recv``   packets delivered to a checker
``err``    bad packets (and stray beats) the checkers found
``lat_sum``  sum of the delivered packets' latencies (creation to tail delivery, cycles)
``lat_max``  the largest latency seen
``ek``     OR of the error kinds (1 dest, 2 data, 4 seq, 8 frame; ``ErrorKind``)
``gen``    1 while the generators create packets (``run_cycles``); once it is 0 and the
           fabric has drained, ``sent == recv`` says nothing was lost
=========  ==========================================================================

Mean latency is ``lat_sum / recv``; accepted throughput is ``recv * packet_length / cyc /
n_endpoints`` flits per cycle per endpoint.
"""

from __future__ import annotations

import math

from amaranth.hdl import Cat, Elaboratable, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import Out

from zfabric.plan import FabricPlan

from .traffic import (
    ORDERED_ROUTINGS,
    Checker,
    FaultInjector,
    Generator,
    IdealNetwork,
    PacketFormat,
    TrafficSettings,
)
from .uart import ReportFormatter, UARTTransmitter, baud_divisor

__all__ = [
    "BoardCore",
    "BoardTop",
    "NETWORKS",
    "report_fields",
]

#: what a core can put between its generators and checkers
NETWORKS = ("fabric", "ideal")


def report_fields(timestamp_bits: int = 16) -> tuple[tuple[str, int], ...]:
    """The report's fields and widths, in print order."""
    return (
        ("cyc", 48),
        ("sent", 40),
        ("recv", 40),
        ("err", 32),
        ("lat_sum", 48),
        ("lat_max", timestamp_bits),
        ("ek", 4),
        ("gen", 1),
    )


def _tree(values: list, combine):
    """Balanced reduction (a shallow adder / comparator tree)."""
    values = list(values)
    while len(values) > 1:
        values = [
            combine(values[i], values[i + 1]) if i + 1 < len(values) else values[i]
            for i in range(0, len(values), 2)
        ]
    return values[0]


def _max(a, b):
    return Mux(a > b, a, b)


def is_ordered(plan: FabricPlan) -> bool:
    """Whether every flow arrives in order: a deterministic routing, one attachment each."""
    return plan.routing.name in ORDERED_ROUTINGS and all(
        len(e.attachments) == 1 for e in plan.endpoints
    )


class BoardCore(wiring.Component):
    """Network + generators + checkers + counters + report UART + LED signals.

    Parameters
    ----------
    plan : FabricPlan
    clk_hz : float
        The clock frequency: sets the baud divisor, the report period and the heartbeat.
    network : str
        ``"fabric"`` builds ``zfabric.hdl.fabric.Fabric(plan)``; ``"ideal"`` a crossbar stand-in
        (:class:`~zfabric.boards.traffic.IdealNetwork`) with the same endpoint interface.
    settings : TrafficSettings
    baud : int
    report_period : int or None
        Cycles between report lines; default one second.
    run_cycles : int or None
        Generators create packets only during the first ``run_cycles`` cycles (then the fabric
        drains and the reports show the final counts); ``None`` runs them forever.
    fault : tuple of (int, int) or None
        ``(endpoint, after)``: flip data bit 0 of the ``after``-th beat delivered to that
        endpoint (a self-test: the report must show ``err=1``).

    Members
    -------
    tx : ``Out(1, init=1)``
        UART transmit line.
    heartbeat : ``Out(1)``
        Toggles about once a second.
    error : ``Out(1)``
        Some checker found an error.
    active : ``Out(1)``
        The generators are creating packets.
    """

    def __init__(
        self,
        plan: FabricPlan,
        *,
        clk_hz: float,
        network: str = "fabric",
        settings: TrafficSettings | None = None,
        baud: int = 115200,
        report_period: int | None = None,
        run_cycles: int | None = None,
        fault: tuple[int, int] | None = None,
    ):
        if not isinstance(plan, FabricPlan):
            raise TypeError(f"plan must be a FabricPlan, not {plan!r}")
        if network not in NETWORKS:
            raise ValueError(f"network must be one of {NETWORKS}, not {network!r}")
        if report_period is not None and (not isinstance(report_period, int) or report_period < 1):
            raise TypeError(f"report_period must be a positive integer, not {report_period!r}")
        if run_cycles is not None and (not isinstance(run_cycles, int) or run_cycles < 0):
            raise TypeError(f"run_cycles must be a non-negative integer, not {run_cycles!r}")
        settings = settings or TrafficSettings()
        self._plan = plan
        self._clk_hz = clk_hz
        self._network = network
        self._settings = settings
        self._divisor = baud_divisor(clk_hz, baud)
        self._report_period = report_period or round(clk_hz)
        self._run_cycles = run_cycles
        self._fault = fault
        self.fmt = PacketFormat.from_plan(
            plan, seq_bits=settings.seq_bits, timestamp_bits=settings.timestamp_bits
        )
        if fault is not None:
            endpoint, after = fault
            if not 0 <= endpoint < len(plan.endpoints):
                raise ValueError(f"fault endpoint {endpoint} is not an endpoint of {plan.name}")
        self.formatter = ReportFormatter(report_fields(settings.timestamp_bits))
        #: filled by ``elaborate``: the network (``zfabric.hdl.fabric.Fabric`` or
        #: :class:`~zfabric.boards.traffic.IdealNetwork`), the generators (per endpoint) and the
        #: checkers (per endpoint, per attachment)
        self.network = None
        self.generators: list[Generator] = []
        self.checkers: list[list[Checker]] = []
        super().__init__(
            {"tx": Out(1, init=1), "heartbeat": Out(1), "error": Out(1), "active": Out(1)}
        )

    @property
    def plan(self) -> FabricPlan:
        return self._plan

    @property
    def network_kind(self) -> str:
        return self._network

    @property
    def uart_divisor(self) -> int:
        return self._divisor

    @property
    def ordered(self) -> bool:
        return is_ordered(self._plan)

    def _make_network(self):
        if self._network == "ideal":
            return IdealNetwork(self.fmt)
        from zfabric.hdl.fabric import Fabric

        return Fabric(self._plan)

    def elaborate(self, platform):
        m = Module()
        fmt = self.fmt

        cyc = Signal(48)
        m.d.sync += cyc.eq(cyc + 1)
        now = cyc[: fmt.timestamp_bits]
        if self._run_cycles is None:
            m.d.comb += self.active.eq(1)
        else:
            # registered, as ``cyc < run_cycles`` (a 48-bit comparator) would be combinationally
            active = Signal(init=self._run_cycles > 0)
            with m.If(cyc == self._run_cycles - 1):
                m.d.sync += active.eq(0)
            m.d.comb += self.active.eq(active)

        plan = self._plan
        self.network = network = self._make_network()
        self.generators = [
            Generator(src=e, fmt=fmt, settings=self._settings) for e in range(len(plan.endpoints))
        ]
        self.checkers = [
            [
                Checker(endpoint=e, fmt=fmt, ordered=self.ordered)
                for _ in range(len(plan.endpoints[e].attachments))
            ]
            for e in range(len(plan.endpoints))
        ]
        m.submodules.network = network
        sent, received, errors, latencies, checkers = [], [], [], [], []
        for e, gen in enumerate(self.generators):
            m.submodules[f"gen{e}"] = gen
            m.d.comb += [gen.en.eq(self.active), gen.now.eq(now)]
            wiring.connect(m, generator=gen.o, network=network.i[e])
            sent.append(gen.sent)
            for a, check in enumerate(self.checkers[e]):
                suffix = f"{e}" if len(self.checkers[e]) == 1 else f"{e}_{a}"
                m.submodules[f"check{suffix}"] = check
                m.d.comb += check.now.eq(now)
                source = network.o[e][a]
                if self._fault is not None and self._fault[0] == e and a == 0:
                    m.submodules.fault = fault = FaultInjector(
                        flit_width=fmt.flit_width, src_width=fmt.dst_width, after=self._fault[1]
                    )
                    wiring.connect(m, network=source, fault=fault.i)
                    source = fault.o
                wiring.connect(m, network=source, checker=check.i)
                received.append(check.received)
                errors.append(check.error)
                latencies.append(Mux(check.received, check.latency, 0))
                checkers.append(check)

        # counters: the pulses are registered first, then summed by balanced trees
        sent_r, recv_r, err_r = Signal(len(sent)), Signal(len(received)), Signal(len(errors))
        lat_r = [Signal(fmt.timestamp_bits, name=f"lat{i}") for i in range(len(latencies))]
        m.d.sync += [sent_r.eq(Cat(*sent)), recv_r.eq(Cat(*received)), err_r.eq(Cat(*errors))]
        m.d.sync += [r.eq(v) for r, v in zip(lat_r, latencies, strict=True)]

        fields = dict(self.formatter.fields)
        counts = {name: Signal(fields[name], name=f"count_{name}") for name in fields}
        # the trees' results are registered too, so no path has a tree and an accumulator
        # (or two comparators) in series; the counts lag the pulses by two cycles
        steps = {
            "sent": _tree(list(sent_r), lambda a, b: a + b),
            "recv": _tree(list(recv_r), lambda a, b: a + b),
            "err": _tree(list(err_r), lambda a, b: a + b),
            "lat_sum": _tree(lat_r, lambda a, b: a + b),
        }
        steps_r = {name: Signal.like(step, name=f"step_{name}") for name, step in steps.items()}
        lat_max_now = Signal(fmt.timestamp_bits)
        m.d.sync += [steps_r[name].eq(step) for name, step in steps.items()]
        m.d.sync += lat_max_now.eq(_tree(lat_r, _max))
        m.d.sync += [counts[name].eq(counts[name] + step) for name, step in steps_r.items()]
        m.d.sync += counts["lat_max"].eq(_max(counts["lat_max"], lat_max_now))
        ek = _tree([c.error_kinds for c in checkers], lambda a, b: a | b)
        m.d.comb += [counts["cyc"].eq(cyc), counts["ek"].eq(ek), counts["gen"].eq(self.active)]

        # report: a line every report_period cycles
        m.submodules.formatter = formatter = self.formatter
        m.submodules.uart = uart = UARTTransmitter(divisor=self._divisor)
        wiring.connect(m, formatter=formatter.o, uart=uart.i)
        last = self._report_period - 1
        period = Signal(range(self._report_period), init=last)
        # ``period == 0`` as a flip-flop set from the count a cycle ahead, so the formatter's
        # snapshot enable does not wait for a comparator on the counter
        trigger = Signal(init=last == 0)
        with m.If(period == 0):
            m.d.sync += period.eq(last)
        with m.Else():
            m.d.sync += period.eq(period - 1)
        m.d.sync += trigger.eq(period == 1 if last > 0 else 1)
        m.d.comb += [formatter.trigger.eq(trigger), self.tx.eq(uart.tx)]
        for name in fields:
            m.d.comb += getattr(formatter.values, name).eq(counts[name])

        beat = max(1, round(math.log2(max(2, self._clk_hz))) - 1)  # ~1 Hz blink
        m.d.comb += [
            self.heartbeat.eq(cyc[min(beat, 47)]),
            self.error.eq(counts["err"] != 0),
        ]
        return m


class BoardTop(Elaboratable):
    """A :class:`BoardCore` on a board: the UART and the LEDs are the target's.

    Parameters
    ----------
    target : boards.targets.Target
    plan : FabricPlan
    **options
        Passed to :class:`BoardCore` (``network``, ``settings``, ``run_cycles``, ...); the clock
        is the platform's default clock.
    """

    def __init__(self, target, plan: FabricPlan, **options):
        self._target = target
        self._plan = plan
        self._options = options
        self.core: BoardCore | None = None

    def elaborate(self, platform):
        if platform is None:
            raise TypeError("BoardTop needs a platform; simulate a BoardCore instead")
        m = Module()
        self.core = core = BoardCore(
            self._plan, clk_hz=platform.default_clk_frequency, **self._options
        )
        m.submodules.core = core
        uart = platform.request(*self._target.uart)
        m.d.comb += uart.tx.o.eq(core.tx)
        requested = {}  # an RGB LED is one resource with three subsignals
        for role, signal in (
            ("heartbeat", core.heartbeat),
            ("error", core.error),
            ("active", core.active),
        ):
            where = self._target.leds.get(role)
            if where is None:
                continue
            name, number, *sub = where
            if (name, number) not in requested:
                requested[name, number] = platform.request(name, number)
            pin = requested[name, number]
            if sub:
                pin = getattr(pin, sub[0])
            m.d.comb += pin.o.eq(signal)
        return m
