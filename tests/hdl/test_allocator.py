# amaranth: UnusedElaboratable=no
"""The allocator's arbiters by exhaustive enumeration against their definitions.

``round_robin`` picks the first requester at or after the pointer, cyclically, with the pointer
given as a thermometer mask (the bits at and above it set; zero means pointer 0): every request
vector and every pointer of widths 1 to 5 is checked against that definition.
"""

from __future__ import annotations

import pytest
from amaranth.hdl import Module, Signal
from amaranth.sim import Simulator
from zfabric.hdl.router.allocator import lowest_one, round_robin


def _cyclic_first(request: int, pointer: int, width: int) -> int:
    for step in range(width):
        bit = (pointer + step) % width
        if request >> bit & 1:
            return 1 << bit
    return 0


@pytest.mark.parametrize("width", [1, 2, 3, 4, 5])
def test_round_robin_and_lowest_one_exhaustive(width):
    m = Module()
    request, mask = Signal(width), Signal(width)
    rr = round_robin(m, request, mask)
    low = lowest_one(m, request)
    # every thermometer mask: pointer p sets bits p..width-1; the zero mask is pointer 0 too
    masks = [(((1 << width) - 1) >> p) << p for p in range(width)] + [0]
    mismatches = []

    async def bench(ctx):
        for pointer_mask in masks:
            pointer = (pointer_mask & -pointer_mask).bit_length() - 1 if pointer_mask else 0
            for value in range(1 << width):
                ctx.set(request, value)
                ctx.set(mask, pointer_mask)
                expected = _cyclic_first(value, pointer, width)
                if ctx.get(rr) != expected or ctx.get(low) != _cyclic_first(value, 0, width):
                    mismatches.append((value, pointer_mask, ctx.get(rr), expected))

    sim = Simulator(m)
    sim.add_testbench(bench)
    sim.run()
    assert not mismatches, mismatches[:5]
