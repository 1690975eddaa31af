# amaranth: UnusedElaboratable=no
"""FrontFIFO against lib.fifo.SyncFIFO, the FIFO it replaced: driven with the same random writes
and reads, every output equal in every cycle (the switch's cycle behaviour rests on it)."""

from __future__ import annotations

import random
from collections import deque

import pytest
from amaranth.hdl import Module
from amaranth.lib import fifo
from amaranth.sim import Simulator
from zfabric.hdl.router.input_unit import FrontFIFO


@pytest.mark.parametrize("depth", [1, 2, 3, 4, 5])
def test_front_fifo_matches_sync_fifo_cycle_for_cycle(depth):
    m = Module()
    m.submodules.dut = dut = FrontFIFO(width=10, ctrl_width=4, depth=depth)
    m.submodules.ref = ref = fifo.SyncFIFO(width=10, depth=depth)
    rng = random.Random(depth)
    mismatches = []
    seen = {"full": 0, "pops": 0}

    async def testbench(ctx):
        for cycle in range(600):
            # phases of mostly writing and mostly reading, so the FIFO goes empty and full
            p_write = 0.8 if cycle // 50 % 2 == 0 else 0.3
            w_en, r_en = rng.random() < p_write, rng.random() < 1 - p_write
            w_data = rng.getrandbits(10)
            for fifo_ in (dut, ref):
                ctx.set(fifo_.w_en, w_en)
                ctx.set(fifo_.w_data, w_data)
                ctx.set(fifo_.r_en, r_en)
            got = [ctx.get(dut.w_rdy), ctx.get(dut.r_rdy), ctx.get(dut.level)]
            want = [ctx.get(ref.w_rdy), ctx.get(ref.r_rdy), ctx.get(ref.level)]
            if want[1]:
                got.append(ctx.get(dut.r_data))
                want.append(ctx.get(ref.r_data))
                seen["pops"] += r_en
            seen["full"] += not want[0]
            if got != want:
                mismatches.append((cycle, got, want))
            await ctx.tick()

    sim = Simulator(m)
    sim.add_clock(1e-8)
    sim.add_testbench(testbench)
    sim.run()
    assert not mismatches, mismatches[:5]
    assert seen["full"] and seen["pops"] > 100  # the run reached full and popped often


@pytest.mark.parametrize("depth, max_skip", [(2, 1), (3, 2), (4, 2), (4, 3), (5, 4)])
def test_front_fifo_pops_surplus_entries_with_the_front(depth, max_skip):
    """A pop with ``skip`` takes the front and the ``skip`` entries behind it in one cycle (a
    head and its surplus head flits, docs/microarchitecture.md, *Heads longer than a flit*):
    against a deque, every cycle, ``last`` the ctrl bits of the last entry a pop takes."""
    m = Module()
    m.submodules.dut = dut = FrontFIFO(width=10, ctrl_width=4, depth=depth, max_skip=max_skip)
    rng = random.Random(depth * 10 + max_skip)
    queue = deque()
    mismatches = []
    seen = {"full": 0, "skips": 0}

    async def testbench(ctx):
        for cycle in range(800):
            p_write = 0.8 if cycle // 50 % 2 == 0 else 0.4
            w_en = rng.random() < p_write and len(queue) < depth
            w_data = rng.getrandbits(10)
            r_en = bool(queue) and rng.random() < 0.6
            skip = rng.randrange(min(max_skip, len(queue) - 1) + 1) if queue else 0
            ctx.set(dut.w_en, w_en)
            ctx.set(dut.w_data, w_data)
            ctx.set(dut.r_en, r_en)
            ctx.set(dut.skip, skip)
            got = [ctx.get(dut.level), ctx.get(dut.r_rdy), ctx.get(dut.w_rdy)]
            want = [len(queue), bool(queue), len(queue) < depth]
            if queue:
                got += [ctx.get(dut.r_data), ctx.get(dut.last)]
                want += [queue[0], queue[skip] & 0xF]
            if got != want:
                mismatches.append((cycle, got, want))
            seen["full"] += len(queue) == depth
            if r_en:
                seen["skips"] += skip > 0
                for _ in range(1 + skip):
                    queue.popleft()
            if w_en:
                queue.append(w_data)
            await ctx.tick()

    sim = Simulator(m)
    sim.add_clock(1e-8)
    sim.add_testbench(testbench)
    sim.run()
    assert not mismatches, mismatches[:5]
    assert seen["full"] and seen["skips"] > 20  # it filled up and popped surplus entries often
