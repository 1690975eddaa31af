"""UART transmitter and the report line a board prints over it.

The board report is one line of ASCII per report period, ``name=value`` fields separated by
single spaces and ended by ``\\r\\n``. Every value is **lower-case hexadecimal**, zero-padded to
the field's width (``ceil(width / 4)`` digits), so the line has a fixed length and a fixed
layout. For example (the fields :class:`zfabric.boards.top.BoardCore` reports)::

    cyc=0001e240 sent=00000a1c recv=00000a1a err=00000000 lat_sum=00000110e4 lat_max=0031 ek=0 gen=1

:func:`parse_report_line` turns such a line back into ``{"cyc": 123456, "sent": 2588, ...}``
and :func:`decode_uart` turns the per-cycle samples of a transmit line back into bytes (the
receiver model the tests use).

The line is 8N1: a start bit (0), eight data bits LSB first, a stop bit (1); the line idles at 1.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from amaranth.hdl import Cat, Const, Module, Mux, Signal, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

__all__ = [
    "UARTTransmitter",
    "ReportFormatter",
    "baud_divisor",
    "decode_uart",
    "parse_report_line",
]

#: the largest baud-rate error a divisor may give; UART receivers tolerate about 2-3 %
MAX_BAUD_ERROR = 0.02


def baud_divisor(clk_hz: float, baud: int = 115200) -> int:
    """Clock cycles per bit for ``baud`` from a ``clk_hz`` clock, refused past a 2 % error."""
    if not isinstance(baud, int) or baud < 1:
        raise TypeError(f"baud must be a positive integer, not {baud!r}")
    divisor = round(clk_hz / baud)
    if divisor < 1:
        raise ValueError(f"a {clk_hz / 1e6:g} MHz clock cannot send {baud} baud")
    error = abs(clk_hz / divisor - baud) / baud
    if error > MAX_BAUD_ERROR:
        raise ValueError(
            f"a {clk_hz / 1e6:g} MHz clock gives {baud} baud only within {error:.1%} "
            f"(divisor {divisor}); at most {MAX_BAUD_ERROR:.0%} is allowed"
        )
    return divisor


class UARTTransmitter(wiring.Component):
    """8N1 UART transmitter.

    A byte accepted on ``i`` goes out as a start bit, eight data bits (LSB first) and a stop
    bit, each ``divisor`` cycles long; ``i.ready`` is high while the line is idle, so bytes
    offered back to back go out with one extra idle cycle between them.

    Parameters
    ----------
    divisor : int
        Clock cycles per bit (:func:`baud_divisor`).

    Members
    -------
    i : ``In(stream.Signature(8))``
    tx : ``Out(1, init=1)``
        The serial line (registered; idles high).
    """

    def __init__(self, *, divisor: int):
        if not isinstance(divisor, int) or divisor < 1:
            raise TypeError(f"divisor must be a positive integer, not {divisor!r}")
        self._divisor = divisor
        super().__init__({"i": In(stream.Signature(8)), "tx": Out(1, init=1)})

    @property
    def divisor(self) -> int:
        return self._divisor

    def elaborate(self, platform):
        m = Module()
        shreg = Signal(9, init=0x1FF)  # the bits still to send after the one on the line
        bits_left = Signal(range(11))  # bits still to finish, the one on the line included
        timer = Signal(range(self._divisor))

        m.d.comb += self.i.ready.eq(bits_left == 0)
        with m.If(self.i.valid & self.i.ready):
            m.d.sync += [
                self.tx.eq(0),
                shreg.eq(Cat(self.i.payload, 1)),
                bits_left.eq(10),
                timer.eq(self._divisor - 1),
            ]
        with m.Elif(bits_left != 0):
            with m.If(timer == 0):
                m.d.sync += [
                    self.tx.eq(shreg[0]),
                    shreg.eq(Cat(shreg[1:], 1)),  # ones: the stop bit, then idle
                    bits_left.eq(bits_left - 1),
                    timer.eq(self._divisor - 1),
                ]
            with m.Else():
                m.d.sync += timer.eq(timer - 1)
        return m


class ReportFormatter(wiring.Component):
    """Prints a snapshot of ``values`` as one ``name=hex name=hex ...\\r\\n`` line.

    A ``trigger`` while idle takes the snapshot and starts the line; a trigger while a line is
    still going out is ignored (the next one takes a fresh snapshot). The characters come from
    a small ROM: each entry is a literal byte or "the next hex digit of the snapshot".

    Every path is short, so the formatter never limits a board's clock: the snapshot is a shift
    register in print order (the next digit is always its top nibble, no wide multiplexer), the
    ROM is read one cycle ahead into a register, and the character is registered before it
    reaches the transmitter. The next character is ready two cycles after one is taken, so a
    line goes out back to back on a UART (one character per ``10 * divisor + 1`` cycles); the
    first character leaves three cycles after the trigger.

    Parameters
    ----------
    fields : sequence of (str, int)
        Field names and widths, in the order they are printed.

    Members
    -------
    values : ``In(data.StructLayout(dict(fields)))``
    trigger : ``In(1)``
    busy : ``Out(1)``
        A line is being sent (high from the cycle after the trigger until the last character
        is taken).
    o : ``Out(stream.Signature(8))``
        The characters, for :class:`UARTTransmitter` (``valid`` and ``payload`` registered).
    """

    def __init__(self, fields: Sequence[tuple[str, int]]):
        fields = tuple(fields)
        if not fields:
            raise ValueError("a report needs at least one field")
        for name, width in fields:
            if not isinstance(name, str) or not re.fullmatch(r"[a-z_][a-z0-9_]*", name):
                raise TypeError(f"field name must be a lower-case identifier, not {name!r}")
            if not isinstance(width, int) or width < 1:
                raise TypeError(
                    f"width of field {name!r} must be a positive integer, not {width!r}"
                )
        if len({name for name, _ in fields}) != len(fields):
            raise ValueError(f"field names must be distinct: {[n for n, _ in fields]!r}")
        self._fields = fields
        super().__init__(
            {
                "values": In(data.StructLayout(dict(fields))),
                "trigger": In(1),
                "busy": Out(1),
                "o": Out(stream.Signature(8)),
            }
        )

    @property
    def fields(self) -> tuple[tuple[str, int], ...]:
        return self._fields

    def line_length(self) -> int:
        """Characters per line, ``\\r\\n`` included."""
        return len(self._rom())

    def _rom(self) -> list[int | None]:
        """The line's characters: a byte for a literal, ``None`` for the next hex digit."""
        entries: list[int | None] = []
        for index, (name, width) in enumerate(self._fields):
            prefix = ("" if index == 0 else " ") + name + "="
            entries += [ord(c) for c in prefix]
            entries += [None] * math.ceil(width / 4)
        return entries + [ord("\r"), ord("\n")]

    def elaborate(self, platform):
        m = Module()
        entries = self._rom()
        entry_layout = data.StructLayout({"hex": 1, "literal": unsigned(8)})
        m.submodules.rom = rom = Memory(
            shape=entry_layout,
            depth=len(entries),
            init=[{"hex": c is None, "literal": c or 0} for c in entries],
        )
        read = rom.read_port()  # synchronous: the entry at ``index``, one cycle later

        # every field padded to whole hex digits; the first field's top digit on top
        padded = Cat(
            *(
                Cat(getattr(self.values, name), Const(0, 4 * math.ceil(width / 4) - width))
                for name, width in reversed(self._fields)
            )
        )
        snapshot = Signal(len(padded))
        nibble = snapshot[-4:]
        hex_char = Mux(nibble < 10, ord("0") + nibble, ord("a") - 10 + nibble)
        index = Signal(range(len(entries)))
        fetched = Signal()  # ``read.data`` holds the entry at ``index``
        ending = Signal()  # the last character is loaded
        m.d.comb += read.addr.eq(index)

        with m.If(self.o.valid & self.o.ready):
            m.d.sync += self.o.valid.eq(0)
        with m.If(~self.busy):
            with m.If(self.trigger):
                m.d.sync += [
                    snapshot.eq(padded),
                    index.eq(0),
                    fetched.eq(0),
                    ending.eq(0),
                    self.busy.eq(1),
                ]
        with m.Elif(ending):
            with m.If(~self.o.valid | self.o.ready):
                m.d.sync += self.busy.eq(0)
        with m.Elif(~fetched):
            m.d.sync += fetched.eq(1)
        with m.Elif(~self.o.valid):
            m.d.sync += [
                self.o.valid.eq(1),
                self.o.payload.eq(Mux(read.data.hex, hex_char, read.data.literal)),
                fetched.eq(0),
            ]
            with m.If(read.data.hex):
                m.d.sync += snapshot.eq(Cat(Const(0, 4), snapshot[:-4]))
            with m.If(index == len(entries) - 1):
                m.d.sync += ending.eq(1)
            with m.Else():
                m.d.sync += index.eq(index + 1)
        return m


def decode_uart(samples: Sequence[int], divisor: int) -> bytes:
    """Bytes on a transmit line sampled once per clock cycle (a receiver model).

    Each frame starts at a falling edge; bits are sampled in the middle of their period and a
    frame whose stop bit is 0 raises ``ValueError`` (a framing error).
    """
    out = bytearray()
    position = 1
    while position < len(samples):
        if not (samples[position - 1] == 1 and samples[position] == 0):
            position += 1
            continue
        start = position
        middle = start + divisor // 2
        if middle + 9 * divisor >= len(samples):
            break  # a frame cut off at the end of the samples
        if samples[middle] != 0:
            position += 1  # a glitch, not a start bit
            continue
        bits = [samples[middle + (1 + b) * divisor] for b in range(8)]
        if samples[middle + 9 * divisor] != 1:
            raise ValueError(f"framing error in the frame starting at sample {start}")
        out.append(sum(bit << b for b, bit in enumerate(bits)))
        position = middle + 9 * divisor
    return bytes(out)


_FIELD = re.compile(r"([a-z_][a-z0-9_]*)=([0-9a-fA-F]+)")


def parse_report_line(line: str | bytes) -> dict[str, int]:
    """``"cyc=0001e240 sent=0a1c ..."`` -> ``{"cyc": 123456, "sent": 2588, ...}``.

    Raises ``ValueError`` naming the first token that is not ``name=hex``.
    """
    if isinstance(line, (bytes, bytearray)):
        line = bytes(line).decode("ascii")
    tokens = line.strip().split(" ")
    values = {}
    for token in tokens:
        match = _FIELD.fullmatch(token)
        if match is None:
            raise ValueError(f"not a report field: {token!r} in {line!r}")
        values[match[1]] = int(match[2], 16)
    return values
