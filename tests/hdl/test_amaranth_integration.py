# amaranth: UnusedElaboratable=no
"""A fabric inside a user's own Amaranth design (docs/amaranth.md shows this file).

The user's design holds a 2x2 torus fabric, a packet sender at one endpoint and a receiver at
another; the fabric is a ``wiring.Component`` whose endpoints are ``stream`` ports, so
``wiring.connect`` joins them. Amaranth's simulator runs the design and the test checks the
packet that crossed the fabric: its words, its source and the cycle it arrived, against the
switch's zero-load formula and the reference model.
"""

from __future__ import annotations

from pathlib import Path

from amaranth.hdl import Array, Elaboratable, Module, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out
from amaranth.sim import Simulator
from zfabric.hdl.endpoint import PacketInLayout, PacketOutLayout
from zfabric.hdl.fabric import Fabric
from zfabric.hdl.flit import dst_width
from zfabric.sim.model import FabricModel

from zfabric import analyse_routing, compile_plan, load_spec

SPEC = Path(__file__).resolve().parents[2] / "examples" / "torus-2x2.yaml"


class PacketSender(wiring.Component):
    """Sends ``words`` as one packet to endpoint ``dst`` after ``start`` is pulsed."""

    def __init__(self, layout: PacketInLayout, words: list[int], dst: int):
        self._words = words
        self._dst = dst
        super().__init__({"start": In(1), "o": Out(stream.Signature(layout))})

    def elaborate(self, platform):
        m = Module()
        n = len(self._words)
        beat = Signal(range(n + 1), init=n)  # n: idle
        words = Array(self._words)
        with m.If(self.start):
            m.d.sync += beat.eq(0)
        m.d.comb += [
            self.o.valid.eq(beat < n),
            self.o.payload.data.eq(words[beat]),
            self.o.payload.dst.eq(self._dst),
            self.o.payload.first.eq(beat == 0),
            self.o.payload.last.eq(beat == n - 1),
        ]
        with m.If(self.o.valid & self.o.ready):
            m.d.sync += beat.eq(beat + 1)
        return m


class PacketReceiver(wiring.Component):
    """Takes every beat it is offered and keeps the first ``n`` data words, the source of the
    last beat and whether a beat with ``last`` arrived."""

    def __init__(self, layout: PacketOutLayout, n: int):
        self._n = n
        super().__init__(
            {
                "i": In(stream.Signature(layout)),
                "words": Out(layout["data"].shape).array(n),
                "count": Out(range(n + 1)),
                "src": Out(layout["src"].shape),
                "done": Out(1),
            }
        )

    def elaborate(self, platform):
        m = Module()
        m.d.comb += self.i.ready.eq(1)
        with m.If(self.i.valid):
            for index in range(self._n):
                with m.If(self.count == index):
                    m.d.sync += self.words[index].eq(self.i.payload.data)
            m.d.sync += [self.count.eq(self.count + 1), self.src.eq(self.i.payload.src)]
            with m.If(self.i.payload.last):
                m.d.sync += self.done.eq(1)
        return m


class MyDesign(Elaboratable):
    """The user's design: a sender at endpoint ``src``, a receiver at endpoint ``dst``."""

    def __init__(self, plan, words: list[int], src: int, dst: int):
        self.fabric = Fabric(plan)
        layout = self.fabric.flit_layout
        self.sender = PacketSender(PacketInLayout(layout, dst_width(plan)), words, dst)
        self.receiver = PacketReceiver(PacketOutLayout(layout), len(words))
        self._src, self._dst = src, dst

    def elaborate(self, platform):
        m = Module()
        m.submodules.fabric = self.fabric
        m.submodules.sender = self.sender
        m.submodules.receiver = self.receiver
        wiring.connect(m, self.sender.o, self.fabric.i[self._src])
        wiring.connect(m, self.fabric.o[self._dst][0], self.receiver.i)  # attachment 0
        return m


def test_a_packet_crosses_the_fabric_inside_a_users_design():
    plan = compile_plan(load_spec(SPEC))
    src, dst = 0, 3  # (0, 0) to (1, 1): one hop in each dimension
    words = [0xC0DE, 0x1234, 0xABCD, 0xFFFF]  # 16-bit flits
    design = MyDesign(plan, words, src, dst)
    cycles = {}

    async def testbench(ctx):
        ctx.set(design.sender.start, 1)
        await ctx.tick()
        ctx.set(design.sender.start, 0)
        for cycle in range(100):
            if ctx.get(design.sender.o.valid) and "created" not in cycles:
                cycles["created"] = cycle  # the head is offered to the fabric
            out = design.fabric.o[dst][0]
            if ctx.get(out.valid) and ctx.get(out.payload.last):
                cycles["delivered"] = cycle  # the tail leaves the fabric
            if ctx.get(design.receiver.done):
                break
            await ctx.tick()
        cycles["words"] = [ctx.get(word) for word in design.receiver.words]
        cycles["count"] = ctx.get(design.receiver.count)
        cycles["src"] = ctx.get(design.receiver.src)

    sim = Simulator(design)
    sim.add_clock(1e-8)
    sim.add_testbench(testbench)
    sim.run()

    assert cycles["words"] == words and cycles["count"] == len(words)
    assert cycles["src"] == src
    latency = cycles["delivered"] - cycles["created"]
    hops = analyse_routing(plan, keep_pairs=True).pair_hops[src, dst][0]
    assert hops == 2
    assert latency == 2 * hops + len(words) + 2  # docs/microarchitecture.md, Consequences
    model = FabricModel(plan)
    model.offer(src, dst, len(words), created=0)
    while not model.delivered:
        model.step()
    assert model.delivered[0].delivered == latency
