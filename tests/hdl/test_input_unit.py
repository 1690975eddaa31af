# amaranth: UnusedElaboratable=no
"""FrontFIFO against lib.fifo.SyncFIFO, the FIFO it replaced: driven with the same random writes
and reads, every output equal in every cycle (the switch's cycle behaviour rests on it). The
FrontFIFO's register holds 4 of the 10 bits; the other 6 sit in its own RAM or in one beside
it at its ``w_addr`` and ``r_addr``, the two ways the input unit keeps a flit's data. Then the
InputUnit, with its data in one shared RAM, in each VC's FIFO or in a block RAM behind front
registers (RamQueues, also tested alone), against a deque per VC."""

from __future__ import annotations

import random
import shutil
import subprocess
from collections import deque

import pytest
from amaranth.hdl import Cat, Const, Module, Signal
from amaranth.lib import fifo
from amaranth.lib.memory import Memory
from amaranth.sim import Simulator
from zfabric.hdl.flit import FlitLayout
from zfabric.hdl.router.input_unit import FrontFIFO, InputUnit, RamQueues


def front_fifo(m: Module, depth: int, own: bool, max_skip: int = 0):
    """A FrontFIFO of 10-bit entries whose register holds the low 4 bits, its 10-bit input and
    front entry: the other 6 in the FIFO's own RAM (``own``) or in a RAM beside it, written at
    ``w_addr`` when the FIFO takes an entry and read at ``r_addr``."""
    if own:
        m.submodules.dut = dut = FrontFIFO(width=10, ctrl_width=4, depth=depth, max_skip=max_skip)
        return dut, dut.w_data, dut.r_data
    m.submodules.dut = dut = FrontFIFO(width=4, depth=depth, max_skip=max_skip)
    m.submodules.rest = rest = Memory(shape=6, depth=depth, init=[])
    write, read = rest.write_port(), rest.read_port(domain="comb")
    data, entry = Signal(10), Signal(10)
    m.d.comb += [
        dut.w_data.eq(data[:4]),
        write.en.eq(dut.w_en & dut.w_rdy),
        write.addr.eq(dut.w_addr),
        write.data.eq(data[4:]),
        read.addr.eq(dut.r_addr),
        entry.eq(Cat(dut.r_data, read.data)),
    ]
    return dut, data, entry


@pytest.mark.parametrize("own", [True, False])
@pytest.mark.parametrize("depth", [1, 2, 3, 4, 5])
def test_front_fifo_matches_sync_fifo_cycle_for_cycle(depth, own):
    m = Module()
    dut, data, entry = front_fifo(m, depth, own)
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
            ctx.set(data, w_data)
            ctx.set(ref.w_data, w_data)
            for fifo_ in (dut, ref):
                ctx.set(fifo_.w_en, w_en)
                ctx.set(fifo_.r_en, r_en)
            got = [ctx.get(dut.w_rdy), ctx.get(dut.r_rdy), ctx.get(dut.level)]
            want = [ctx.get(ref.w_rdy), ctx.get(ref.r_rdy), ctx.get(ref.level)]
            if want[1]:
                got.append(ctx.get(entry))
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


@pytest.mark.parametrize("own", [True, False])
@pytest.mark.parametrize("depth, max_skip", [(2, 1), (3, 2), (4, 2), (4, 3), (5, 4)])
def test_front_fifo_pops_surplus_entries_with_the_front(depth, max_skip, own):
    """A pop with ``skip`` takes the front and the ``skip`` entries behind it in one cycle (a
    head and its surplus head flits, docs/microarchitecture.md, *Heads longer than a flit*):
    against a deque, every cycle, ``last`` the ctrl bits of the last entry a pop takes."""
    m = Module()
    dut, data, entry = front_fifo(m, depth, own, max_skip)
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
            ctx.set(data, w_data)
            ctx.set(dut.r_en, r_en)
            ctx.set(dut.skip, skip)
            got = [ctx.get(dut.level), ctx.get(dut.r_rdy), ctx.get(dut.w_rdy)]
            want = [len(queue), bool(queue), len(queue) < depth]
            if queue:
                got += [ctx.get(entry), ctx.get(dut.last)]
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


#: (shared_data, block_ram): the three ways an input unit keeps its flits
BUFFERINGS = [(True, False), (False, False), (True, True)]


@pytest.mark.parametrize(("shared_data", "block_ram"), BUFFERINGS)
@pytest.mark.parametrize(("n_vcs", "depth"), [(1, 4), (2, 4), (2, 3), (3, 5)])
def test_input_unit_shows_each_vcs_front_and_the_picked_data(n_vcs, depth, shared_data, block_ram):
    """A credit-obeying sender on random VCs, random pops (one VC at most with ``block_ram``,
    as a switch pops) and a random one-hot (or no) pick: every cycle each VC's front (kind,
    head) and level match its deque, ``picked`` is the picked VC's front ``src`` and
    ``payload``, and credits come back one cycle after a pop."""
    layout = FlitLayout(
        payload_width=8, vc_width=(n_vcs - 1).bit_length(), head_width=3, src_width=2
    )
    dut = InputUnit(
        flit_layout=layout,
        n_vcs=n_vcs,
        buffer_depth=depth,
        shared_data=shared_data,
        block_ram=block_ram,
    )
    rng = random.Random(n_vcs * 100 + depth * 10 + shared_data)
    queues = [deque() for _ in range(n_vcs)]
    mismatches = []
    seen = {"picked": 0, "full": 0}

    async def testbench(ctx):
        credits = [depth] * n_vcs
        popped = [False] * n_vcs
        flit = dut.link.flit
        for cycle in range(1500):
            # credits popped last cycle are on the wire now
            for vc in range(n_vcs):
                got = ctx.get(dut.link.credit[vc])
                if got != popped[vc]:
                    mismatches.append((cycle, "credit", vc, got))
                credits[vc] += got
            p_send = 0.9 if cycle // 100 % 2 == 0 else 0.3
            ready = [vc for vc in range(n_vcs) if credits[vc]]
            send = bool(ready) and rng.random() < p_send
            vc_in = rng.choice(ready) if send else 0
            word = {
                "kind": rng.getrandbits(2),
                "head": rng.getrandbits(3),
                "src": rng.getrandbits(2),
                "payload": rng.getrandbits(8),
            }
            ctx.set(flit.valid, send)
            ctx.set(flit.payload, {**word, "vc": vc_in} if n_vcs > 1 else word)
            pops = [bool(queues[vc]) and rng.random() < 1 - p_send for vc in range(n_vcs)]
            if block_ram and any(pops):
                chosen = rng.choice([vc for vc in range(n_vcs) if pops[vc]])
                pops = [vc == chosen for vc in range(n_vcs)]
            pick = rng.randrange(n_vcs + 1)  # n_vcs: none
            ctx.set(dut.pick, 1 << pick if pick < n_vcs else 0)
            for vc in range(n_vcs):
                ctx.set(dut.o[vc].ready, pops[vc])
                front = queues[vc][0] if queues[vc] else None
                got = [ctx.get(dut.o[vc].valid), ctx.get(dut.level[vc])]
                want = [front is not None, len(queues[vc])]
                if front is not None:
                    got += [
                        ctx.get(dut.o[vc].payload.kind.as_value()),
                        ctx.get(dut.o[vc].payload.head),
                    ]
                    want += [front["kind"], front["head"]]
                    if pick == vc:
                        got += [ctx.get(dut.picked.src), ctx.get(dut.picked.payload)]
                        want += [front["src"], front["payload"]]
                        seen["picked"] += 1
                if got != want:
                    mismatches.append((cycle, vc, got, want))
                seen["full"] += len(queues[vc]) == depth
            popped = pops
            for vc in range(n_vcs):
                if pops[vc]:
                    queues[vc].popleft()
            if send:
                credits[vc_in] -= 1
                queues[vc_in].append(word)
            await ctx.tick()
        if ctx.get(dut.overflow):
            mismatches.append("overflow")

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(testbench)
    sim.run()
    assert not mismatches, mismatches[:5]
    assert seen["picked"] > 300 and seen["full"] > 20


@pytest.mark.parametrize(("shared_data", "block_ram"), BUFFERINGS)
def test_a_flit_for_a_full_vc_is_dropped_and_flagged(shared_data, block_ram):
    """A sender that breaks the credit protocol: the fifth flit for a full 4-flit VC is dropped
    (docs/microarchitecture.md: ``overflow``), so the VC's front, which that write's address
    wraps onto, still shows the first flit's data, and the other VC's data is untouched."""
    layout = FlitLayout(payload_width=8, vc_width=1, head_width=3, src_width=2)
    dut = InputUnit(
        flit_layout=layout, n_vcs=2, buffer_depth=4, shared_data=shared_data, block_ram=block_ram
    )
    sent = [(1, 1, 0x10 + i) for i in range(4)] + [(0, 2, 0x77), (1, 3, 0xEE)]  # vc, src, payload
    drained = {0: [], 1: []}
    flags = []

    async def testbench(ctx):
        for vc, src, payload in sent:
            ctx.set(dut.link.flit.valid, 1)
            ctx.set(
                dut.link.flit.payload,
                {"kind": 0, "head": 0, "src": src, "payload": payload, "vc": vc},
            )
            await ctx.tick()
        ctx.set(dut.link.flit.valid, 0)
        await ctx.tick()
        flags.append(ctx.get(dut.overflow))
        for vc in (1, 0):
            ctx.set(dut.pick, 1 << vc)
            while ctx.get(dut.o[vc].valid):
                drained[vc].append((ctx.get(dut.picked.src), ctx.get(dut.picked.payload)))
                ctx.set(dut.o[vc].ready, 1)
                await ctx.tick()
            ctx.set(dut.o[vc].ready, 0)

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(testbench)
    sim.run()
    assert flags == [1]
    assert drained[1] == [(1, 0x10 + i) for i in range(4)]
    assert drained[0] == [(2, 0x77)]


@pytest.mark.parametrize(
    ("n_vcs", "depth"), [(1, 1), (1, 4), (2, 1), (2, 2), (2, 4), (3, 3), (2, 5)]
)
def test_ram_queues_show_each_front_every_cycle(n_vcs, depth):
    """RamQueues against a deque per queue: random writes on random queues (also into full
    ones, which drop them) and at most one pop per cycle, in phases that fill and drain the
    queues; every cycle each queue's ``r_rdy``, ``level``, ``w_rdy`` and, when it holds one,
    its front entry equal the deque's, including the cycle after a pop, when the front comes
    from the RAM's registered read; ``picked`` is the front of a randomly picked queue."""
    dut = RamQueues(width=12, depth=depth, n_vcs=n_vcs)
    rng = random.Random(n_vcs * 10 + depth)
    queues = [deque() for _ in range(n_vcs)]
    mismatches = []
    seen = {"full": 0, "refills": 0, "dropped": 0}

    async def testbench(ctx):
        refilled = None  # the queue popped last cycle with an entry behind its front
        for cycle in range(2000):
            pick = rng.randrange(n_vcs)
            ctx.set(dut.pick, 1 << pick)
            if queues[pick] and ctx.get(dut.picked) != queues[pick][0]:
                mismatches.append((cycle, "picked", pick, ctx.get(dut.picked)))
            for vc in range(n_vcs):
                got = [
                    ctx.get(dut.r_rdy[vc]),
                    ctx.get(dut.level[vc]),
                    ctx.get(dut.w_rdy[vc]),
                ]
                want = [int(bool(queues[vc])), len(queues[vc]), int(len(queues[vc]) < depth)]
                if queues[vc]:
                    got.append(ctx.get(dut.front[vc]))
                    want.append(queues[vc][0])
                    seen["refills"] += refilled == vc
                if got != want:
                    mismatches.append((cycle, vc, got, want))
                seen["full"] += len(queues[vc]) == depth
            p_write = 0.8 if cycle // 40 % 2 == 0 else 0.3
            write = rng.random() < p_write
            w_vc, word = rng.randrange(n_vcs), rng.getrandbits(12)
            ctx.set(dut.w_en, write)
            ctx.set(dut.w_vc, w_vc)
            ctx.set(dut.w_data, word)
            holding = [vc for vc in range(n_vcs) if queues[vc]]
            empty = [vc for vc in range(n_vcs) if not queues[vc]]
            pop = rng.choice(holding) if holding and rng.random() < 1 - p_write else None
            r_en = 1 << pop if pop is not None else 0
            if pop is None and empty and rng.random() < 0.1:
                r_en = 1 << rng.choice(empty)  # a pop of an empty queue does nothing
            ctx.set(dut.r_en, r_en)
            refilled = pop if pop is not None and len(queues[pop]) >= 2 else None
            room = len(queues[w_vc]) < depth  # before the pop: a full queue drops the write
            if pop is not None:
                queues[pop].popleft()
            if write:
                if room:
                    queues[w_vc].append(word)
                else:
                    seen["dropped"] += 1
            await ctx.tick()

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(testbench)
    sim.run()
    assert not mismatches, mismatches[:5]
    assert seen["full"] > 20 and seen["dropped"] > 5
    if depth >= 2:
        assert seen["refills"] > 50  # fronts seen straight from the RAM's read


def test_ram_queues_refuse_a_bad_size():
    with pytest.raises(ValueError, match="depth must be a positive integer, not 0"):
        RamQueues(width=8, depth=0, n_vcs=2)


def test_input_unit_refuses_block_ram_with_surplus_head_flits():
    layout = FlitLayout(payload_width=8, vc_width=1, head_width=3, src_width=2)
    with pytest.raises(ValueError, match="max_skip must be 0"):
        InputUnit(flit_layout=layout, n_vcs=2, buffer_depth=4, max_skip=1, block_ram=True)


@pytest.mark.skipif(shutil.which("iverilog") is None, reason="iverilog is not installed")
@pytest.mark.parametrize(("shared_data", "block_ram"), BUFFERINGS)
@pytest.mark.parametrize("n_vcs", [2, 3])
def test_the_first_flit_is_picked_defined_in_icarus(tmp_path, n_vcs, shared_data, block_ram):
    """Amaranth's own Verilog (no time-0 event for an ``always @*``, as the board core's
    cocotb test emits it) in Icarus -g2012: the first flit into VC 0, picked the cycle after,
    reads back its ``src`` and ``payload``, not x. Reading VC 0 changes neither the picked
    index nor VC 0's read pointer, so a block computing the read address from them alone
    would never have run."""
    from amaranth.back import verilog
    from amaranth.lib import wiring
    from amaranth.lib.wiring import In, Out
    from zfabric.hdl.router.input_unit import PickedData

    layout = FlitLayout(
        payload_width=8, vc_width=(n_vcs - 1).bit_length(), head_width=3, src_width=2
    )

    class Unit(wiring.Component):
        """The input unit with only a flit in, the pick and the picked data as ports."""

        def __init__(self):
            super().__init__(
                {
                    "valid": In(1),
                    "flit": In(layout),
                    "pick": In(n_vcs),
                    "picked": Out(PickedData(layout)),
                }
            )

        def elaborate(self, platform):
            m = Module()
            m.submodules.dut = dut = InputUnit(
                flit_layout=layout,
                n_vcs=n_vcs,
                buffer_depth=4,
                shared_data=shared_data,
                block_ram=block_ram,
            )
            m.d.comb += [
                dut.link.flit.valid.eq(self.valid),
                dut.link.flit.payload.eq(self.flit),
                dut.pick.eq(self.pick),
                self.picked.eq(dut.picked),
            ]
            return m

    flit = {"kind": 1, "head": 5, "src": 2, "payload": 0xA5, "vc": 0}
    flit_bits = Const.cast(layout.const(flit)).value
    picked_bits = Const.cast(PickedData(layout).const({"src": 2, "payload": 0xA5})).value
    (tmp_path / "unit.v").write_text(verilog.convert(Unit(), name="unit"))
    # declaration initialisers: no event at time 0, as for the registers inside a switch
    (tmp_path / "tb.v").write_text(
        "module tb;\n"
        f"  reg clk = 0, rst = 0, valid = 0; reg [{layout.size - 1}:0] flit = 0;\n"
        f"  reg [{n_vcs - 1}:0] pick = 0; wire [{PickedData(layout).size - 1}:0] picked;\n"
        "  unit dut(.clk(clk), .rst(rst), .valid(valid), .flit(flit), .pick(pick),\n"
        "    .picked(picked));\n"
        "  always #5 clk = ~clk;\n"
        f"  initial begin #10 valid = 1; flit = {flit_bits};\n"
        '    #10 valid = 0; pick = 1; #1 $display("picked=%0d", picked); $finish; end\n'
        "endmodule\n"
    )
    build = ["iverilog", "-g2012", "-o", str(tmp_path / "a.out"), "-s", "tb"]
    subprocess.run([*build, "unit.v", "tb.v"], check=True, cwd=tmp_path)
    vvp = ["vvp", "-n", str(tmp_path / "a.out")]
    result = subprocess.run(vvp, capture_output=True, text=True, timeout=60)
    assert f"picked={picked_bits}\n" in result.stdout, result.stdout
