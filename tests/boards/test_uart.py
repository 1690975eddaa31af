# amaranth: UnusedElaboratable=no
"""UART transmitter, report line formatter, the receiver model and the line parser."""

from __future__ import annotations

import pytest
from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.sim import Simulator
from zfabric.boards.uart import (
    ReportFormatter,
    UARTTransmitter,
    baud_divisor,
    decode_uart,
    parse_report_line,
)


def run(dut, testbench, cycles_hint=None):
    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(testbench)
    sim.run()


@pytest.mark.parametrize("divisor", [1, 3, 8])
def test_transmitter_sends_8n1_frames(divisor):
    dut = UARTTransmitter(divisor=divisor)
    message = b"\x00\xffzF\n\x55"
    samples = []

    async def tb(ctx):
        for byte in message:
            ctx.set(dut.i.valid, 1)
            ctx.set(dut.i.payload, byte)
            while True:
                _, _, ready, tx = await ctx.tick().sample(dut.i.ready, dut.tx)
                samples.append(tx)
                if ready:
                    break
            ctx.set(dut.i.valid, 0)
        for _ in range(12 * divisor):
            _, _, tx = await ctx.tick().sample(dut.tx)
            samples.append(tx)

    run(dut, tb)
    assert samples[0] == 1  # idles high
    assert decode_uart(samples, divisor) == message
    # a frame is 10 bit periods: start, 8 data, stop
    first_low = samples.index(0)
    assert samples[first_low : first_low + divisor] == [0] * divisor


def test_decoder_reports_framing_errors():
    divisor = 4
    frame = [1] * 3 + [0] * divisor + [1] * (8 * divisor) + [0] * divisor + [1] * 8
    with pytest.raises(ValueError, match=r"^framing error in the frame starting at sample 3$"):
        decode_uart(frame, divisor)


def test_baud_divisors_of_the_boards():
    assert baud_divisor(12e6) == 104  # iCEBreaker
    assert baud_divisor(25e6) == 217  # ULX3S
    assert baud_divisor(48e6) == 417  # OrangeCrab
    # 300 kHz / 115200 = 2.6: divisor 3 gives 100 kbaud
    with pytest.raises(
        ValueError,
        match=r"^a 0\.3 MHz clock gives 115200 baud only within 13\.2% \(divisor 3\); "
        r"at most 2% is allowed$",
    ):
        baud_divisor(300e3)
    with pytest.raises(TypeError, match=r"^baud must be a positive integer, not 0$"):
        baud_divisor(12e6, 0)


def test_formatter_prints_a_parseable_line():
    fields = (("cyc", 20), ("sent", 8), ("ok", 1))
    dut = ReportFormatter(fields)
    assert dut.line_length() == len("cyc=00000 sent=00 ok=0\r\n")
    text = bytearray()

    async def tb(ctx):
        ctx.set(dut.values, {"cyc": 0xABCDE, "sent": 0x5, "ok": 1})
        ctx.set(dut.o.ready, 1)
        ctx.set(dut.trigger, 1)
        await ctx.tick()
        ctx.set(dut.trigger, 0)
        ctx.set(dut.values, {"cyc": 0, "sent": 0, "ok": 0})  # the snapshot was taken
        while ctx.get(dut.busy):
            _, _, valid, char = await ctx.tick().sample(dut.o.valid, dut.o.payload)
            if valid:
                text.append(char)

    run(dut, tb)
    assert text == b"cyc=abcde sent=05 ok=1\r\n"
    assert parse_report_line(text) == {"cyc": 0xABCDE, "sent": 5, "ok": 1}


def test_formatter_rejects_bad_fields():
    with pytest.raises(TypeError, match=r"^field name must be a lower-case identifier, not 'A b'$"):
        ReportFormatter([("A b", 4)])
    with pytest.raises(ValueError, match=r"^field names must be distinct"):
        ReportFormatter([("a", 4), ("a", 8)])


def test_parser_names_the_bad_token():
    with pytest.raises(ValueError, match=r"^not a report field: 'sent=zz'"):
        parse_report_line("cyc=0001 sent=zz")


def test_formatter_keeps_the_transmitter_busy():
    """Through a UART the characters go out back to back: a start bit every 10 * divisor + 1
    cycles (the transmitter's one idle cycle between frames), the first soon after the trigger.
    """
    divisor = 3
    fields = (("a", 8), ("bc", 5))
    formatter = ReportFormatter(fields)
    uart = UARTTransmitter(divisor=divisor)
    m = Module()
    m.submodules.formatter, m.submodules.uart = formatter, uart
    wiring.connect(m, formatter=formatter.o, uart=uart.i)
    samples = []

    async def tb(ctx):
        ctx.set(formatter.values, {"a": 0x3C, "bc": 0x1F})
        ctx.set(formatter.trigger, 1)
        await ctx.tick()
        ctx.set(formatter.trigger, 0)
        for _ in range(formatter.line_length() * (10 * divisor + 1) + 20):
            _, _, tx = await ctx.tick().sample(uart.tx)
            samples.append(tx)

    run(m, tb)
    assert decode_uart([1, *samples], divisor) == b"a=3c bc=1f\r\n"
    starts, t = [], 1  # the frames' start bits: a falling edge, then a whole frame
    while t < len(samples):
        if samples[t - 1] == 1 and samples[t] == 0:
            starts.append(t)
            t += 10 * divisor
        else:
            t += 1
    assert len(starts) == formatter.line_length()
    assert {b - a for a, b in zip(starts[:-1], starts[1:], strict=True)} == {10 * divisor + 1}
    assert starts[0] <= 4
