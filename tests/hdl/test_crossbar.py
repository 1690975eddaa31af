# amaranth: UnusedElaboratable=no
"""Crossbar: every one-hot (or zero) grant of every output, on outputs that 1, 2 and 3 inputs
reach; an output's flit is the granted input's (its VC the output's) whenever it is valid,
whether its multiplexer is gated or, with one input, a wire."""

from __future__ import annotations

from amaranth.sim import Simulator
from zfabric.hdl.flit import FlitLayout
from zfabric.hdl.router.crossbar import Crossbar

LAYOUT = FlitLayout(payload_width=8, vc_width=1, head_width=2, src_width=2)
# output 0: input 1 alone; output 1: inputs 0 and 2; output 2: all three
TURNS = {(1, 0), (0, 1), (2, 1), (0, 2), (1, 2), (2, 2)}


def flit(i: int) -> dict:
    return {"kind": i, "vc": 0, "head": 3 - i, "src": i, "payload": 0x5A ^ (i * 0x11)}


def test_each_output_takes_the_granted_inputs_flit():
    dut = Crossbar(flit_layout=LAYOUT, n_in=3, n_out=3, turns=TURNS)
    mismatches, checked = [], [0]

    async def testbench(ctx):
        for i in range(3):
            ctx.set(dut.i[i], flit(i))
        for out in range(3):
            ctx.set(dut.vc[out], out & 1)
        for out in range(3):
            reach = sorted(i for i, o in TURNS if o == out)
            for granted in [None, *reach]:
                ctx.set(dut.grant[out], 0 if granted is None else 1 << granted)
                await ctx.delay(1e-9)
                valid = ctx.get(dut.o[out].valid)
                if valid != (granted is not None):
                    mismatches.append((out, granted, "valid", valid))
                if granted is not None:
                    got = ctx.get(dut.o[out].payload.as_value())
                    want = LAYOUT.const({**flit(granted), "vc": out & 1}).as_bits()
                    if got != want:
                        mismatches.append((out, granted, got, want))
                    checked[0] += 1

    sim = Simulator(dut)
    sim.add_testbench(testbench)
    sim.run()
    assert not mismatches, mismatches
    assert checked[0] == len(TURNS)
