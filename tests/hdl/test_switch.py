# amaranth: UnusedElaboratable=no
"""One switch between test senders and receivers: credits, buffers, wormhole, round-robin.

The bench plays the upstream senders (one credit counter per input VC, initialised to the
buffer depth, refilled by the switch's credit pulses) and the downstream buffers (depth from
the plan, drained at random, one credit pulse per drained flit). Expected outputs come from
the plan's routing function.
"""

from __future__ import annotations

import random
from collections import deque

import pytest
from amaranth.sim import Simulator
from hdl_bench import small_plan
from zfabric.hdl.flit import FlitKind, FlitLayout
from zfabric.hdl.router.route import SwitchPorts
from zfabric.hdl.switch import Switch, input_vcs

from zfabric.plan import PlanView
from zfabric.routing import make_routing


class SwitchBench:
    def __init__(self, plan, switch_id, packets, *, drain=0.5, hold=0, seed=0):
        """``packets``: {(in port, in vc): [(dst, length), ...]}."""
        self.plan = plan
        self.view = PlanView(plan)
        self.routing = make_routing(self.view)
        self.switch_id = switch_id
        self.dut = Switch.from_plan(plan, switch_id)
        self.ports = self.dut.ports
        self.in_vcs = input_vcs(self.ports, plan.router)  # local inputs: injection VCs
        self.rng = random.Random(seed)
        self.drain = drain
        self.hold = hold  # receivers drain nothing before this cycle
        self.depth = plan.buffer_depth
        self.sent = {}  # packet id -> (in port, in vc, dst, flits)
        self.queues = {key: deque() for key in packets}
        for key, items in packets.items():
            for dst, length in items:
                pid = len(self.sent)
                flits = []
                for index in range(length):
                    kind = FlitKind((index == 0) | (index == length - 1) << 1)
                    flits.append((kind, pid << 8 | index))
                self.sent[pid] = (*key, dst, flits)
                # the routing head on the head flit only; the packet's number as its source
                heads = [dst] + [0] * (length - 1)
                self.queues[key].extend(zip([pid] * length, flits, heads, strict=True))
        self.src_values = 1 << FlitLayout.from_plan(plan).src_width
        self.received = {}  # (out port, out vc) -> [(cycle, kind, head, src, payload), ...]
        self.grants = []  # (cycle, out port, packet id) per flit out
        self.errors = []

    def run(self, cycles):
        dut, ports, depth, in_vcs = self.dut, self.ports, self.depth, self.in_vcs
        credit = {(p, v): depth for p in range(ports.n_ports) for v in range(in_vcs[p])}
        occupancy = {(o, w): 0 for o in range(ports.n_ports) for w in range(ports.vcs[o])}

        async def testbench(ctx):
            for cycle in range(cycles):
                # senders: one flit per input link per cycle, only with a credit
                for port in range(ports.n_ports):
                    ready = [
                        v
                        for v in range(in_vcs[port])
                        if self.queues.get((port, v)) and credit[port, v] > 0
                    ]
                    link = dut.i(port).flit
                    if not ready:
                        ctx.set(link.valid, 0)
                        continue
                    vc = self.rng.choice(ready)
                    pid, (kind, payload), head = self.queues[port, vc].popleft()
                    credit[port, vc] -= 1
                    ctx.set(link.valid, 1)
                    flit = {"kind": kind, "vc": vc, "head": head, "payload": payload}
                    ctx.set(link.payload, flit | {"src": pid % self.src_values})
                # receivers: drain at random and return credits in this cycle
                for o in range(ports.n_ports):
                    pulses = 0
                    for w in range(ports.vcs[o]):
                        drain = cycle >= self.hold and self.rng.random() < self.drain
                        if occupancy[o, w] and drain:
                            occupancy[o, w] -= 1
                            pulses |= 1 << w
                    ctx.set(dut.o(o).credit, pulses)
                for o in range(ports.n_ports):
                    link = dut.o(o).flit
                    if ctx.get(link.valid):
                        flit = ctx.get(link.payload)
                        w = int(flit.vc)
                        self.received.setdefault((o, w), []).append(
                            (cycle, flit.kind, int(flit.head), int(flit.src), int(flit.payload))
                        )
                        # local outputs too: an endpoint's receive buffer holds B flits
                        occupancy[o, w] += 1
                        if occupancy[o, w] > depth:
                            self.errors.append(f"cycle {cycle}: {o}/{w} over depth")
                for port in range(ports.n_ports):
                    pulses = ctx.get(dut.i(port).credit)
                    for v in range(in_vcs[port]):
                        credit[port, v] += pulses >> v & 1
                        if credit[port, v] > depth:
                            self.errors.append(f"cycle {cycle}: credit over depth at {port}/{v}")
                    for v in range(in_vcs[port]):
                        if ctx.get(dut.input_units[port].level[v]) > depth:
                            self.errors.append(f"cycle {cycle}: buffer {port}/{v} over depth")
                await ctx.tick()
            if ctx.get(dut.overflow):
                self.errors.append("an input buffer overflowed")

        sim = Simulator(dut)
        sim.add_clock(1e-8)
        sim.add_testbench(testbench)
        sim.run()

    def packets_out(self):
        """Reassemble packets per output VC, checking that packets never interleave on a VC."""
        out = {}
        for (o, w), flits in self.received.items():
            current = None
            for cycle, kind, head, src, payload in flits:
                if kind in (FlitKind.HEAD, FlitKind.SINGLE):
                    if current is not None:
                        self.errors.append(f"{o}/{w}: head inside packet {current}")
                    current = payload >> 8
                    out[current] = {"port": o, "vc": w, "flits": [], "head": head}
                if current is not None and src != current % self.src_values:
                    self.errors.append(f"{o}/{w}: packet {current} arrives with src {src}")
                elif current is None:
                    self.errors.append(f"{o}/{w}: body outside a packet at cycle {cycle}")
                    continue
                out[current]["flits"].append((kind, payload))
                self.grants.append((cycle, o, current))
                if kind in (FlitKind.TAIL, FlitKind.SINGLE):
                    current = None
        return out


def reachable_heads(plan, switch):
    """In port -> destinations packets can bring there (on some VC), walking every route."""
    view = PlanView(plan)
    routing = make_routing(view)
    n = len(plan.endpoints)
    heads, seen = {}, set()
    stack = [
        (i.switch, i.port, 0, i.head)
        for src in range(n)
        for dst in range(n)
        if src != dst
        for i in routing.injections(src, dst)
    ]
    while stack:
        state = stack.pop()
        if state in seen:
            continue
        seen.add(state)
        s, p, v, head = state
        if s == switch:
            heads.setdefault(p, set()).add(head)
        decision = routing.route(s, p, v, head)
        for hop in decision.hops:
            link = view.out_link[s][hop.port]
            if link is not None:
                for w in hop.vcs:
                    stack.append((link.dst.switch, link.dst.port, w, decision.head))
    return {key: sorted(values) for key, values in heads.items()}


def random_packets(plan, switch, rng, per_vc):
    """Packets on every input VC with heads that can arrive on its port (a switch builds no
    logic for turns no packet takes; which VC a head arrives on does not matter to it)."""
    in_vcs = input_vcs(SwitchPorts.from_plan(PlanView(plan), switch), plan.router)
    heads = reachable_heads(plan, switch)
    return {
        (p, v): [(rng.choice(heads[p]), rng.randint(1, 5)) for _ in range(per_vc)]
        for p in range(len(in_vcs))
        if p in heads  # (with k = 2, DORT never uses one of a dimension's two links)
        for v in range(in_vcs[p])
    }


@pytest.mark.parametrize(
    "name, switch, drain", [("torus-4x4", 5, 0.3), ("ndt-2x2x2", 3, 0.5), ("torus-4x4", 0, 0.9)]
)
def test_random_traffic_under_random_credit_return(example, name, switch, drain):
    """Buffers never exceed their depth, VCs never interleave, every packet goes where the
    routing function sends it, intact and in order."""
    plan = small_plan(example, name)
    view = PlanView(plan)
    packets = random_packets(plan, switch, random.Random(switch), per_vc=6)
    bench = SwitchBench(plan, switch, packets, drain=drain, seed=switch)
    bench.run(400)
    out = bench.packets_out()
    assert bench.errors == []
    assert sorted(out) == sorted(bench.sent)  # all delivered, none twice
    routing = make_routing(view)
    for pid, (port, vc, dst, flits) in bench.sent.items():
        decision = routing.route(switch, port, vc, dst)
        (hop,) = decision.hops
        assert (out[pid]["port"], out[pid]["vc"]) in [(hop.port, w) for w in hop.vcs]
        assert out[pid]["head"] == decision.head
        kinds = [kind for kind, _ in flits]
        assert [kind for kind, _ in out[pid]["flits"]] == kinds
        assert [p for _, p in out[pid]["flits"]] == [p for _, p in flits]


def destination_via(plan, switch, in_port, out_port):
    """A destination the routing function sends from ``in_port`` to ``out_port``."""
    routing = make_routing(PlanView(plan))
    for dst in range(len(plan.endpoints)):
        if routing.route(switch, in_port, 0, dst).hops[0].port == out_port:
            return dst
    raise LookupError


def test_output_round_robin_gives_every_input_a_turn(example):
    """Four inputs stream single flits to the local output: it grants them 1, 2, 3, 4, 1, ..."""
    plan = small_plan(example, "torus-4x4")
    dst = destination_via(plan, 0, 1, 0)
    packets = {(p, 0): [(dst, 1)] * 30 for p in (1, 2, 3, 4)}
    bench = SwitchBench(plan, 0, packets, drain=1.0)
    bench.run(60)
    bench.packets_out()
    assert bench.errors == []
    sources = [bench.sent[pid][0] for _, o, pid in sorted(bench.grants) if o == 0]
    cycles = [cycle for cycle, o, _ in sorted(bench.grants) if o == 0]
    assert sources[:40] == [1, 2, 3, 4] * 10
    # one grant per cycle: an output VC released by a tail is taken again the next cycle
    assert cycles[:40] == list(range(cycles[0], cycles[0] + 40))


def test_output_round_robin_skips_idle_inputs(example):
    plan = small_plan(example, "torus-4x4")
    dst = destination_via(plan, 0, 1, 0)
    packets = {(p, 0): [(dst, 1)] * 20 for p in (2, 4)}
    bench = SwitchBench(plan, 0, packets, drain=1.0)
    bench.run(40)
    bench.packets_out()
    sources = [bench.sent[pid][0] for _, o, pid in sorted(bench.grants) if o == 0]
    assert sources[:20] == [2, 4] * 10


def test_input_round_robin_alternates_vcs(example):
    """Both VCs of one input hold single flits for different outputs: once both are backlogged
    the input sends VC 0, 1, 0, 1, ... (one flit per input port per cycle)."""
    plan = small_plan(example, "torus-4x4")
    a, b = destination_via(plan, 0, 1, 3), destination_via(plan, 0, 1, 4)
    packets = {(1, 0): [(a, 1)] * 24, (1, 1): [(b, 1)] * 24}
    # the receivers hold their buffers until cycle 20: both outputs run out of credit after 4
    # flits each and both input VCs fill up behind them
    bench = SwitchBench(plan, 0, packets, drain=1.0, hold=20)
    bench.run(80)
    bench.packets_out()
    assert bench.errors == []
    before = [pid for cycle, _, pid in bench.grants if cycle < 20]
    assert len(before) == 8
    after_hold = sorted((c, bench.sent[pid][1]) for c, _, pid in bench.grants if c >= 20)
    # credits come back one per output per cycle from cycle 20: one grant per cycle, VCs taking
    # turns, for as long as both stay backlogged
    order = [vc for _, vc in after_hold]
    assert order[:24] == [order[0], 1 - order[0]] * 12
    cycles = [c for c, _ in after_hold]
    assert cycles[:24] == list(range(cycles[0], cycles[0] + 24))


def test_wormhole_holds_the_output_vc_until_the_tail(example):
    """Two inputs send 4-flit packets to the same output VC (the one ejection VC): whole
    packets alternate."""
    plan = small_plan(example, "torus-4x4-e1")
    dst = destination_via(plan, 0, 1, 0)
    packets = {(1, 0): [(dst, 4)] * 4, (2, 0): [(dst, 4)] * 4}
    bench = SwitchBench(plan, 0, packets, drain=1.0)
    bench.run(80)
    bench.packets_out()
    assert bench.errors == []
    sources = [bench.sent[pid][0] for _, o, pid in sorted(bench.grants) if o == 0]
    assert sources == [1] * 4 + [2] * 4 + [1] * 4 + [2] * 4 + [1] * 4 + [2] * 4 + [1] * 4 + [2] * 4


def test_two_ejection_vcs_carry_two_packets_at_once(example):
    """With 2 ejection VCs two inputs' packets for the local output each hold one of its VCs:
    their flits interleave on the link, one per cycle in turn (output round-robin)."""
    plan = small_plan(example, "torus-4x4")
    assert plan.router.ejection_vcs == 2
    dst = destination_via(plan, 0, 1, 0)
    packets = {(1, 0): [(dst, 4)] * 2, (2, 0): [(dst, 4)] * 2}
    bench = SwitchBench(plan, 0, packets, drain=1.0)
    bench.run(40)
    out = bench.packets_out()
    assert bench.errors == []
    assert {packet["vc"] for packet in out.values()} == {0, 1}
    sources = [bench.sent[pid][0] for _, o, pid in sorted(bench.grants) if o == 0]
    assert sources[:8] == [sources[0], 3 - sources[0]] * 4
