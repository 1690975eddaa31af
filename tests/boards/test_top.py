# amaranth: UnusedElaboratable=no
"""The board core in simulation: its UART report decoded by a receiver model, counts that
match the traffic, a corrupted flit reported as an error, and (with the RTL fabric) latencies
that match the reference model's for the same packets."""

from __future__ import annotations

import pytest
from amaranth.sim import Simulator
from board_helpers import have_fabric, torus_plan
from zfabric.boards.top import BoardCore, report_fields
from zfabric.boards.traffic import ErrorKind, TrafficSettings
from zfabric.boards.uart import decode_uart, parse_report_line

# divisor 4: 1 bit = 4 cycles, so a 108-character line takes ~4.4k cycles
CLK_HZ = 4 * 115200


def run_core(core, cycles, *, trace=False):
    """Simulate; returns (report lines, creations [(cycle, src, dst)], LED samples)."""
    sim = Simulator(core)  # elaborates the core: its generators exist from here
    sim.add_clock(1e-6)
    samples, created, leds = [], [], []
    gens = core.generators

    async def tb(ctx):
        for cycle in range(cycles):
            if trace:
                for src, gen in enumerate(gens):
                    if ctx.get(gen.created):
                        created.append((cycle, src, ctx.get(gen.created_dst)))
            samples.append(ctx.get(core.tx))
            leds.append((ctx.get(core.heartbeat), ctx.get(core.error), ctx.get(core.active)))
            await ctx.tick()

    sim.add_testbench(tb)
    sim.run()
    text = decode_uart(samples, core.uart_divisor).decode("ascii")
    lines = [parse_report_line(line) for line in text.split("\r\n")[:-1]]
    return lines, created, leds


def make_core(plan, **options):
    options.setdefault("settings", TrafficSettings(rate=0.4))
    return BoardCore(plan, clk_hz=CLK_HZ, **options)


def test_report_fields_and_line_length():
    assert [name for name, _ in report_fields()] == [
        "cyc",
        "sent",
        "recv",
        "err",
        "lat_sum",
        "lat_max",
        "ek",
        "gen",
    ]
    core = make_core(torus_plan([2, 2]), network="ideal")
    assert core.formatter.line_length() == 108
    assert core.uart_divisor == 4


def test_ideal_network_report_after_drain():
    core = make_core(torus_plan([2, 2]), network="ideal", report_period=1500, run_cycles=1000)
    lines, _, leds = run_core(core, 1500 + 4600)
    assert len(lines) == 1
    (report,) = lines
    assert report["cyc"] == 1499 and report["gen"] == 0
    assert report["sent"] > 50
    assert report["recv"] == report["sent"]
    assert report["err"] == 0 and report["ek"] == 0
    assert report["lat_max"] >= 4 and report["lat_sum"] >= 4 * report["recv"]
    assert not any(error for _, error, _ in leds)
    assert leds[999][2] == 1 and leds[1001][2] == 0  # generators stop after run_cycles


def test_corrupted_flit_is_reported():
    core = make_core(
        torus_plan([2, 2]), network="ideal", report_period=1000, run_cycles=600, fault=(1, 10)
    )
    lines, _, leds = run_core(core, 1000 + 4600)
    (report,) = lines
    assert report["err"] == 1
    assert report["ek"] == ErrorKind.DATA
    assert report["recv"] == report["sent"]
    assert leds[-1][1] == 1  # the error LED


def test_options_are_validated():
    plan = torus_plan([2, 2])
    with pytest.raises(
        ValueError, match=r"^network must be one of \('fabric', 'ideal'\), not 'x'$"
    ):
        BoardCore(plan, clk_hz=CLK_HZ, network="x")
    with pytest.raises(ValueError, match=r"^fault endpoint 9 is not an endpoint of torus-2x2$"):
        BoardCore(plan, clk_hz=CLK_HZ, fault=(9, 0))


fabric = pytest.mark.skipif(not have_fabric(), reason="zfabric.hdl.fabric is not there yet")


@fabric
@pytest.mark.parametrize(
    "k, router, rate",
    [
        pytest.param([2], None, 0.4, id="torus-2"),
        # 2-3 minutes each in Amaranth's simulator: the plain 2x2 and the one at 0.9 are left
        # to the matrix
        pytest.param([2, 2], None, 0.4, id="torus-2x2", marks=pytest.mark.matrix),
        pytest.param([2, 2], {"head_bits": 1}, 0.4, id="torus-2x2-head-flits"),
        pytest.param([2, 2], None, 0.9, id="torus-2x2-rate-0.9", marks=pytest.mark.matrix),
    ],
)
def test_fabric_report_matches_the_model(k, router, rate):
    """Latencies of the RTL fabric in the board equal the model's for the same creations. With
    heads of two flits (2-bit destinations at 1 bit a flit) the endpoints send and strip them,
    so the generators and checkers see the same packets, none lost or corrupted. At 0.9 heads
    wait behind their previous packet's beats in the generators' output stages (source queues
    of the model)."""
    plan = torus_plan(k, router=router)
    run, drain = 800, 400
    settings = TrafficSettings(rate=rate)
    core = make_core(plan, settings=settings, report_period=run + drain, run_cycles=run)
    lines, created, _ = run_core(core, run + drain + 4600, trace=True)
    (report,) = lines
    assert report["err"] == 0 and report["ek"] == 0
    assert report["recv"] == report["sent"] == len(created) > 30

    latencies = model_latencies(plan, created, run + drain)
    assert len(latencies) == len(created)
    assert report["lat_sum"] == sum(latencies)
    assert report["lat_max"] == max(latencies)


def model_latencies(plan, created, cycles, *, packets=None):
    """The reference model fed the same creations: each delivered packet's latency."""
    from zfabric.sim.model.fabric_model import FabricModel

    model = FabricModel(plan)
    by_cycle = {}
    for cycle, src, dst in created:
        by_cycle.setdefault(cycle, []).append((src, dst))
    for cycle in range(cycles):
        for src, dst in by_cycle.get(cycle, []):
            model.offer(src, dst, created=cycle)
        model.step()
    if packets is not None:
        packets.extend(model.delivered)
    return [p.latency for p in model.delivered]


@fabric
@pytest.mark.parametrize("head_flits", [1, pytest.param(2, marks=pytest.mark.matrix)])
def test_fabric_zero_load_latency(head_flits):
    """One packet at a time: 2H + L + 2 cycles (docs/microarchitecture.md). With H_f head
    flits (2-bit destinations at 1 bit a flit: 2) each of the H + 1 switches waits H_f - 1
    cycles more for them, and the tail is H_f - 1 flits further behind the head: (H_f - 1)
    (H + 2) more."""
    plan = torus_plan([2, 2], router={"head_bits": 1} if head_flits > 1 else None)
    settings = TrafficSettings(rate=0.01)
    core = make_core(plan, settings=settings, report_period=3000, run_cycles=2500)
    lines, created, _ = run_core(core, 3000 + 4600, trace=True)
    (report,) = lines
    assert report["recv"] == len(created) > 3
    packets = []
    latencies = model_latencies(plan, created, 3000, packets=packets)
    assert all(p.latency == 2 * p.hops + 4 + 2 + (head_flits - 1) * (p.hops + 2) for p in packets)
    assert report["lat_sum"] == sum(latencies)
    assert report["lat_max"] == max(latencies)
