"""Shared Amaranth-simulation benches for the RTL tests: a fabric driven by an injection trace."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from amaranth.sim import Simulator
from zfabric.hdl.fabric import Fabric
from zfabric.sim.model import FabricModel


@dataclass
class TracePacket:
    created: int
    src: int
    dst: int
    length: int
    sequence: int = -1
    flits: list = field(default_factory=list)  # data words, as sent


def random_trace(plan, rng, *, packets: int, horizon: int, lengths=(1, 2, 3, 4, 5)):
    """Random (created, src, dst, length) packets, ``created`` in [0, horizon)."""
    n = len(plan.endpoints)
    trace = []
    for _ in range(packets):
        src = rng.randrange(n)
        dst = rng.randrange(n - 1)
        dst += dst >= src
        trace.append(TracePacket(rng.randrange(horizon), src, dst, rng.choice(lengths)))
    trace.sort(key=lambda p: p.created)
    return trace


def model_deliveries(plan, trace, *, limit: int = 100_000) -> dict:
    """(src, sequence) -> delivery cycle, from the reference model."""
    model = FabricModel(plan)
    for packet in trace:
        model.offer(packet.src, packet.dst, packet.length, created=packet.created)
    while len(model.delivered) < len(trace):
        model.step()
        if model.cycle > limit:
            raise AssertionError("the model did not deliver the whole trace")
    return {p.payload: p.delivered for p in model.delivered}


def data_word(width: int, packet: int, index: int) -> int:
    """The data a trace packet's flit carries: its number in the trace and the flit's position,
    with the upper half of the bits inverted so that every word sets high bits too (unique for
    up to 2**(width - 4) packets)."""
    mask = (1 << width) - 1
    return ((packet << 4 | index & 15) ^ (mask >> width // 2 << width // 2)) & mask


class FabricBench:
    """Drives a :class:`Fabric` with a trace, flit by flit, and records what comes out.

    Each source presents its packets in creation order, the head from the cycle the packet is
    created (or the cycle after the previous packet's tail was taken): the model's unbounded
    source queue. ``delivered`` maps (src, sequence) -> cycle of the tail on the ``o`` stream.
    """

    def __init__(self, plan, trace, *, check_links: bool = False, monitors=(), **fabric_options):
        self.plan = plan
        self.fabric = Fabric(plan, **fabric_options)
        self.trace = trace
        self.check_links = check_links
        self.delivered: dict[tuple[int, int], int] = {}
        self.first_flit: dict[tuple[int, int], int] = {}
        self.received: dict[tuple[int, int], list[int]] = {}
        self.errors: list[str] = []
        self.monitors = list(monitors)  # async callables(ctx, cycle) run every cycle
        sequence: dict[int, int] = {}
        self.queues = [deque() for _ in plan.endpoints]
        layout = self.fabric.flit_layout
        for number, packet in enumerate(trace):
            packet.sequence = sequence.get(packet.src, 0)
            sequence[packet.src] = packet.sequence + 1
            packet.flits = [
                data_word(layout.payload_width, number, i) for i in range(packet.length)
            ]
            self.queues[packet.src].append(packet)
        self.by_id = {(p.src, p.sequence): p for p in trace}

    def run(self, cycles: int, *, vcd: str | None = None):
        fabric = self.fabric
        n = len(self.plan.endpoints)
        n_att = len(self.plan.endpoints[0].attachments)
        current = [None] * n  # (packet, next flit index)
        arriving = {}  # (endpoint, attachment) -> (packet id, flits so far)
        open_packets = set()  # (switch, port, vc) whose last flit was not a tail

        presented = [None] * n  # what each source's i stream shows: ctx.set only on change

        def present(ctx, src, beat):
            if beat == presented[src]:
                return
            presented[src] = beat
            ctx.set(fabric.i[src].valid, beat is not None)
            if beat is not None:
                ctx.set(fabric.i[src].payload, beat)

        async def testbench(ctx):
            for dst in range(n):  # the user always takes: the model's default
                for a in range(n_att):
                    ctx.set(fabric.o[dst][a].ready, 1)
            for cycle in range(cycles):
                for src in range(n):
                    if current[src] is None and self.queues[src]:
                        if self.queues[src][0].created <= cycle:
                            current[src] = (self.queues[src].popleft(), 0)
                    if current[src] is None:
                        present(ctx, src, None)
                        continue
                    packet, index = current[src]
                    present(
                        ctx,
                        src,
                        {
                            "data": packet.flits[index],
                            "dst": packet.dst,
                            "first": index == 0,
                            "last": index == packet.length - 1,
                        },
                    )
                for src in range(n):
                    if current[src] is not None and ctx.get(fabric.i[src].ready):
                        packet, index = current[src]
                        current[src] = None if index + 1 == packet.length else (packet, index + 1)
                for dst in range(n):
                    for a in range(n_att):
                        out = fabric.o[dst][a]
                        if not ctx.get(out.valid):
                            continue
                        self._arrive(ctx.get(out.payload), dst, a, cycle, arriving)
                if self.check_links:
                    self._check_links(ctx, cycle, open_packets)
                for monitor in self.monitors:
                    await monitor(ctx, cycle)
                await ctx.tick()
            for s, switch in enumerate(fabric.switches):
                if ctx.get(switch.overflow):
                    self.errors.append(f"switch {s}: a buffer overflowed")

        sim = Simulator(fabric)
        sim.add_clock(1e-8)
        sim.add_testbench(testbench)
        if vcd:
            with sim.write_vcd(vcd):
                sim.run()
        else:
            sim.run()

    def _check_links(self, ctx, cycle, open_packets):
        """Wormhole: on every switch output VC, packets follow one another whole."""
        for s, switch in enumerate(self.fabric.switches):
            for port in range(switch.ports.n_ports):
                flit = switch.o(port).flit
                if not ctx.get(flit.valid):
                    continue
                payload = ctx.get(flit.payload)
                key = (s, port, int(payload.vc))
                kind = payload.kind.value
                if bool(kind & 1) == (key in open_packets):
                    self.errors.append(f"cycle {cycle}: switch {s} port {port} interleaves a VC")
                if kind & 2:
                    open_packets.discard(key)
                else:
                    open_packets.add(key)

    def _arrive(self, beat, dst, a, cycle, arriving):
        if beat.first:
            if (dst, a) in arriving:
                self.errors.append(f"cycle {cycle}: head at {dst}/{a} inside a packet")
            word = int(beat.data)
            candidates = [
                key
                for key, p in self.by_id.items()
                if p.dst == dst and key not in self.delivered and p.flits[0] == word
            ]
            if len(candidates) != 1:
                self.errors.append(f"cycle {cycle}: unknown head {word:#x} at {dst}")
                return
            if int(beat.src) != candidates[0][0]:
                self.errors.append(f"cycle {cycle}: head at {dst} says source {int(beat.src)}")
            arriving[(dst, a)] = (candidates[0], 1)
            self.first_flit[candidates[0]] = cycle
        else:
            if (dst, a) not in arriving:
                self.errors.append(f"cycle {cycle}: body at {dst}/{a} outside a packet")
                return
            key, count = arriving[(dst, a)]
            expected = self.by_id[key].flits[count]
            if int(beat.data) != expected or int(beat.src) != key[0]:
                self.errors.append(f"cycle {cycle}: packet {key} flit {count} corrupt")
            arriving[(dst, a)] = (key, count + 1)
        key, count = arriving[(dst, a)]
        if beat.last:
            if count != self.by_id[key].length:
                self.errors.append(f"cycle {cycle}: packet {key} ended after {count} flits")
            self.delivered[key] = cycle
            del arriving[(dst, a)]


#: small fabrics for RTL tests that the examples do not cover (a Znode of 16 processors, a
#: 2-Znode super node with side links and multi-homed processors, a layered Znode)
SMALL_SPECS = {
    "znode-16": {
        "name": "znode-16",
        "topology": {"kind": "znode", "z": [4, 4], "R": [1, 4]},
        "routing": "sliced",
    },
    "snode-16": {
        "name": "snode-16",
        "topology": {"kind": "znode", "znodes": 2, "z": [2, 4], "R": [2, 2]},
        "routing": "sliced",
    },
    "znode-8-layers": {
        "name": "znode-8-layers",
        "topology": {"kind": "znode", "znodes": 2, "z": [2, 2], "R": [1, 2], "layers": 2},
        "routing": "sliced",
    },
    # tori and meshes with odd and non-power-of-two sizes, ties toward + on a torus and an nDT
    "mesh-3x4": {"name": "mesh-3x4", "topology": {"kind": "torus", "k": [3, 4], "wrap": False}},
    "torus-3x5": {"name": "torus-3x5", "topology": {"kind": "torus", "k": [3, 5]}},
    "ndt-3x2x3": {"name": "ndt-3x2x3", "topology": {"kind": "ndt", "k": [3, 2, 3]}},
    # the endpoint before ejection VCs: one VC into every endpoint
    "torus-4x4-e1": {
        "name": "torus-4x4-e1",
        "topology": {"kind": "torus", "k": [4, 4]},
        "router": {"ejection_vcs": 1},
    },
    # fixed dateline classes (the default before balanced ones), with ties toward +
    "torus-4x6-plus": {
        "name": "torus-4x6-plus",
        "topology": {"kind": "torus", "k": [4, 6]},
        "routing": {"name": "dor", "tie": "plus", "vc_classes": "fixed"},
    },
    # balanced dateline classes (the default, named): a head entering a ring may take either
    # class (odd and even rings, one and two VCs per class)
    "torus-5x4-balanced": {
        "name": "torus-5x4-balanced",
        "topology": {"kind": "torus", "k": [5, 4]},
        "routing": {"name": "dor", "vc_classes": "balanced"},
    },
    "torus-2x3x4-plus-balanced": {
        "name": "torus-2x3x4-plus-balanced",
        "topology": {"kind": "torus", "k": [2, 3, 4]},
        "routing": {"name": "dor", "tie": "plus", "vc_classes": "balanced"},
    },
    "torus-3x4-vcs2-balanced": {
        "name": "torus-3x4-vcs2-balanced",
        "topology": {"kind": "torus", "k": [3, 4], "vcs": 2},
        "routing": {"name": "dor", "vc_classes": "balanced"},
    },
    "ndt-2x4x2-plus": {
        "name": "ndt-2x4x2-plus",
        "topology": {"kind": "ndt", "k": [2, 4, 2]},
        "routing": {"name": "dort", "tie": "plus"},
    },
    # buffers shallower than the credit loop (B/4 flits per cycle), narrow flits, a mesh,
    # one external VC on an nDT, two VCs per Znode link (the first free VC of a candidate)
    "torus-4x4-b2": {
        "name": "torus-4x4-b2",
        "topology": {"kind": "torus", "k": [4, 4]},
        "buffer_depth": 2,
    },
    "torus-3x4-b3-f16": {
        "name": "torus-3x4-b3-f16",
        "topology": {"kind": "torus", "k": [3, 4]},
        "buffer_depth": 3,
        "flit_width": 16,
    },
    "ndt-2x2x2-ext1": {
        "name": "ndt-2x2x2-ext1",
        "topology": {"kind": "ndt", "k": [2, 2, 2]},
        "routing": {"name": "dort", "external_vcs": 1},
    },
    "snode-16-vcs2": {
        "name": "snode-16-vcs2",
        "topology": {"kind": "znode", "znodes": 2, "z": [2, 4], "R": [2, 2], "vcs": 2},
        "routing": "sliced",
    },
    # several VCs per class (the head takes the first free VC of its class): a 2-VC mesh, 2 VCs
    # per fixed dateline class on a torus, an nDT with 4 external VCs and 2 per internal class, a
    # deterministic up/down tree with 2 VCs per link
    "mesh-3x4-vcs2": {
        "name": "mesh-3x4-vcs2",
        "topology": {"kind": "torus", "k": [3, 4], "wrap": False, "vcs": 2},
    },
    "torus-3x4-vcs2": {
        "name": "torus-3x4-vcs2",
        "topology": {"kind": "torus", "k": [3, 4], "vcs": 2},
        "routing": {"name": "dor", "vc_classes": "fixed"},
    },
    "ndt-3x2x3-vcs2": {
        "name": "ndt-3x2x3-vcs2",
        "topology": {"kind": "ndt", "k": [3, 2, 3]},
        "routing": {
            "name": "dort",
            "external_vcs": 4,
            "internal_vcs": {
                "ch": [0, 1],
                "ring_upper": [2, 3],
                "ring_lower": [4, 5],
                "pe": [6, 7],
            },
        },
    },
    "snode-16-updown-vcs2": {
        "name": "snode-16-updown-vcs2",
        "topology": {"kind": "znode", "znodes": 2, "z": [2, 4], "R": [2, 2], "vcs": 2},
        "routing": "updown",
    },
    "snode-16-updown": {
        "name": "snode-16-updown",
        "topology": {"kind": "znode", "znodes": 2, "z": [2, 4], "R": [2, 2]},
        "routing": "updown",
    },
}


def small_plan(example, name):
    """The plan of an example (examples/<name>.yaml) or of one of :data:`SMALL_SPECS`."""
    from zfabric import compile_plan, load_spec

    return compile_plan(load_spec(SMALL_SPECS.get(name) or example(name)))
