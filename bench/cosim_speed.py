"""Lock-step co-simulation speed: simulated cycles per second of the RTL, Icarus vs Verilator.

For fabrics of 16 and 64 switches, one uniform trace (packets of 1 to 6 flits, rate 0.3
flits/cycle/endpoint, below every knee) runs on the emitted Verilog under each simulator and on
the reference model. Figures:

- RTL cycles/s: cycles the bench's cycle loop ran, over its wall time (clock, drivers,
  monitors, scoreboard and simulator together; start-up and build excluded);
- run s: the whole ``cocotb_tools.runner`` test call, simulator start-up included;
- build s: Verilog emission and simulator build when not cached (0 when reused);
- model cycles/s: ``zfabric.sim.model.FabricModel`` replaying the same trace (pure Python).

Every run must also pass the lock-step check. Last line: the headline figures.

    .venv/bin/python bench/cosim_speed.py [--cycles 2000] [--sim icarus --sim verilator]
"""

from __future__ import annotations

import argparse
import time

from zfabric.sim.tb.runner import cosim, simulator_available, traffic_trace
from zfabric.sim.traffic import TrafficConfig

from zfabric import compile_plan, load_spec

FABRICS = {
    # name: spec (examples/ file or inline); 16 and 64 switches
    "torus-4x4": "examples/torus-4x4.yaml",
    "ndt-2x2x2": "examples/ndt-2x2x2.yaml",
    "torus-8x8": {"name": "torus-8x8", "topology": {"kind": "torus", "k": [8, 8]}},
}


def measure(fabrics, sims, *, cycles, rate, build_dir=None, **cosim_options) -> None:
    """Print one line per (fabric, simulator) and the headline last."""
    print(f"uniform traffic, rate {rate}, packets of 1-6 flits, {cycles} cycles of injection")
    print(
        f"{'fabric':<11} {'switches':>8} {'sim':<9} {'RTL c/s':>8} {'run s':>7} "
        f"{'build s':>8} {'model c/s':>9}  lock-step"
    )
    headline = {}
    for name in fabrics:
        plan = compile_plan(load_spec(FABRICS.get(name, name)))
        config = TrafficConfig(rate=rate, packet_length=(1, 6))
        trace = traffic_trace(plan, config, cycles, seed=7)
        size = len(plan.switches)
        for sim in sims:
            start = time.perf_counter()
            report = cosim(plan, trace, sim=sim, build_dir=build_dir, **cosim_options)
            seconds = report["seconds"]
            model_speed = report["model_cycles"] / max(seconds["model"], 1e-9)
            verdict = "pass" if report["passed"] else f"FAIL: {report['first_mismatch_text']}"
            print(
                f"{name:<11} {size:>8} {sim:<9} {report['cycles_per_second']:>8.0f} "
                f"{seconds['sim']:>7.1f} {seconds['emit'] + seconds['build']:>8.1f} "
                f"{model_speed:>9.0f}  {verdict} ({time.perf_counter() - start:.0f} s)",
                flush=True,
            )
            for who, speed in ((sim, report["cycles_per_second"]), ("model", model_speed)):
                headline[(size, who)] = min(headline.get((size, who), float("inf")), speed)
    parts = [
        f"{who} {size} switches {speed:.0f}" for (size, who), speed in sorted(headline.items())
    ]
    print("cosim cycles/s (slowest fabric of each size): " + ", ".join(parts))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("fabrics", nargs="*", default=list(FABRICS))
    parser.add_argument("--sim", action="append", choices=["icarus", "verilator"])
    parser.add_argument("--cycles", type=int, default=2000, help="cycles of injection")
    parser.add_argument("--rate", type=float, default=0.3)
    parser.add_argument("--build-dir", help="cache root (default: the runner's)")
    args = parser.parse_args()
    sims = [s for s in (args.sim or ["icarus", "verilator"]) if simulator_available(s)]
    measure(args.fabrics, sims, cycles=args.cycles, rate=args.rate, build_dir=args.build_dir)


if __name__ == "__main__":
    main()
