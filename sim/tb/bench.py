"""The generic lock-step bench: any fabric, any trace, configured from the environment.

Run by :func:`zfabric.sim.tb.runner.cosim` through ``cocotb_tools.runner`` on the ``cosim_top``
wrapper it emits around a fabric; it drives and reads the fabric's AXI4-Stream ports
(docs/rtl.md) with full-width pseudo-random data (:func:`zfabric.sim.tb.packing.data_word`).
The environment names the inputs and the output:

``NOC_PLAN``
    the plan, as JSON (``FabricPlan.to_json``)
``NOC_TRACE``
    the injection trace (``cycle src dst length`` lines, sim/traffic.py)
``NOC_EXPECT``
    the model's expectations (:func:`zfabric.sim.tb.scoreboard.save_expectations`); computed here
    from
    the plan and trace when absent
``NOC_RESULT``
    where to write the run's result (JSON)
``NOC_DRAIN``
    cycles to keep watching after the model's last delivery (default 16)
``NOC_WINDOW``
    cycles to keep running after the first mismatch (default 32), so that a late packet's RTL
    cycle is known and the VCD shows what followed
``NOC_EJECT_STALL`` / ``NOC_EJECT_SEED``
    ejection stalls: each output stream's ``tready`` is low with this probability in each cycle
    (:class:`zfabric.sim.model.EjectStalls`, default 0: always high), from this seed (default 1)
``NOC_VCD_FROM`` / ``NOC_STOP_AT``
    start dumping (``cosim_dump`` high) at this cycle / stop the run at this cycle

The test passes whatever the scoreboard finds: mismatches are results, read back by the runner.
It fails only when the bench itself breaks.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import cocotb
from cocotb.clock import Clock
from cocotb.simtime import get_sim_time
from zfabric.hdl.naming import output_attachments
from zfabric.sim.model import EjectStalls
from zfabric.sim.traffic import read_trace

from zfabric.plan import plan_from_json

from .endpoint import CycleLoop, EjectionBus, EndpointBus, EndpointMonitor, EndpointSource, TbPacket
from .packing import PacketCodec
from .scoreboard import LockstepScoreboard, load_expectations, model_expectations

#: clock period of the bench (the fabric has no timing of its own)
PERIOD_NS = 10


def _int_env(name: str, default: int | None) -> int | None:
    value = os.environ.get(name)
    return default if value in (None, "") else int(value)


@cocotb.test()
async def lockstep(dut):
    """Inject the trace, check every delivery against the model, write the result."""
    plan = plan_from_json(Path(os.environ["NOC_PLAN"]).read_text())
    trace = read_trace(os.environ["NOC_TRACE"])
    stall = float(os.environ.get("NOC_EJECT_STALL") or 0)
    stalls = EjectStalls(stall, _int_env("NOC_EJECT_SEED", 1)) if stall else None
    if os.environ.get("NOC_EXPECT"):
        expected = load_expectations(os.environ["NOC_EXPECT"])
    else:
        expected, _ = model_expectations(plan, trace, eject_ready=stalls)
    drain = _int_env("NOC_DRAIN", 16)
    window = _int_env("NOC_WINDOW", 32)
    vcd_from = _int_env("NOC_VCD_FROM", None)
    stop_at = _int_env("NOC_STOP_AT", None)

    codec = PacketCodec(plan)
    scoreboard = LockstepScoreboard(expected, codec)
    loop = CycleLoop(dut.clk, dut.rst)
    sources = [
        EndpointSource(EndpointBus.from_dut(dut, e), loop, on_head=scoreboard.injected)
        for e in range(len(plan.endpoints))
    ]
    attachments = len(plan.endpoints[0].attachments)
    monitors = [
        EndpointMonitor(
            EjectionBus.from_dut(dut, e, a, attachments),
            loop,
            endpoint=e,
            attachment=a,
            callback=scoreboard.delivered,
            ready=stalls,
        )
        for e in range(len(plan.endpoints))
        for a in output_attachments(plan)
    ]
    for e in expected:  # in trace order, so in creation order per source
        words = tuple(codec.word(e.src, e.sequence, i) for i in range(e.length))
        sources[e.src].send_nowait(TbPacket(e.src, e.sequence, e.dst, e.created, words))

    dut.cosim_dump.value = 0
    if vcd_from is not None:

        def dump(cycle: int) -> None:
            if cycle == vcd_from:
                dut.cosim_dump.value = 1

        loop.add(drive=dump)
    loop.add(sample=scoreboard.end_of_cycle)

    last = max((e.delivered for e in expected), default=0)
    end = last + drain

    def done(cycle: int) -> bool:
        if stop_at is not None and cycle >= stop_at:
            return True
        first = scoreboard.first_mismatch
        if first is not None and cycle >= first.cycle + window:
            return True
        return cycle >= end

    Clock(dut.clk, PERIOD_NS, unit="ns").start()
    await loop.reset()
    t0_ns = get_sim_time("ns")
    start = time.perf_counter()
    cycles = await loop.run(done) + 1
    seconds = time.perf_counter() - start

    quiet_from = max((m.last_valid for m in monitors if m.last_valid is not None), default=-1)
    result = {
        "cycles": cycles,
        "seconds": seconds,
        "t0_ns": t0_ns,
        "period_ns": PERIOD_NS,
        "model_last": last,
        "rtl_delivered": [[*key, cycle] for key, cycle in scoreboard.rtl_delivered.items()],
        "rtl_injected": [[*key, cycle] for key, cycle in scoreboard.rtl_injected.items()],
        "mismatches": [vars(m) for m in sorted(scoreboard.mismatches, key=lambda m: m.cycle)],
        "sources_idle": all(source.idle() for source in sources),
        "last_flit": quiet_from,
    }
    Path(os.environ.get("NOC_RESULT", "cosim_result.json")).write_text(json.dumps(result))
