"""Reference-model speed: simulated router-cycles per second (switches x cycles / wall time)
and peak memory, on torus-4x4, ndt-4x4x4 and an 8x8x8 nDT at low and high uniform load.
Each configuration runs in a fresh process (so peak RSS is its own); median of --repeats.

    .venv/bin/python bench/model_speed.py [--cycles 2000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import statistics
import subprocess
import sys
import time

CONFIGS = [
    ("torus-4x4", {"kind": "torus", "k": [4, 4]}),
    ("ndt-4x4x4", {"kind": "ndt", "k": [4, 4, 4]}),
    ("ndt-8x8x8", {"kind": "ndt", "k": [8, 8, 8]}),
]
RATES = (0.05, 0.3)


def one(topology: dict, rate: float, cycles: int) -> dict:
    from zfabric.sim.model import FabricModel
    from zfabric.sim.traffic import Traffic, TrafficConfig

    from zfabric import compile_plan, load_spec

    plan = compile_plan(load_spec({"name": "bench", "topology": topology}))
    model = FabricModel(plan)
    traffic = Traffic(TrafficConfig(rate=rate), len(plan.endpoints), seed=1)
    warm = cycles // 4
    for cycle in range(warm):  # fill the fabric before timing
        for src, dst, length in traffic.packets_at(cycle):
            model.offer(src, dst, length)
        model.step()
    start = time.perf_counter()
    for cycle in range(warm, warm + cycles):
        for src, dst, length in traffic.packets_at(cycle):
            model.offer(src, dst, length)
        model.step()
    elapsed = time.perf_counter() - start
    return {
        "router_cycles_per_s": len(plan.switches) * cycles / elapsed,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "switches": len(plan.switches),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cycles", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        topology, rate = json.loads(args.one)
        print(json.dumps(one(topology, rate, args.cycles)))
        return
    print(f"# python {platform.python_version()}, {args.cycles} timed cycles after a warm-up")
    print(f"# uniform traffic, 4-flit packets, median of {args.repeats} runs, fresh process each")
    print("fabric      switches  rate  router-cycles/s  peak RSS (MB)")
    target = None
    for name, topology in CONFIGS:
        for rate in RATES:
            runs = []
            for _ in range(args.repeats):
                out = subprocess.run(
                    [
                        sys.executable,
                        __file__,
                        "--cycles",
                        str(args.cycles),
                        "--one",
                        json.dumps([topology, rate]),
                    ],
                    capture_output=True,
                    text=True,
                    check=True,
                )
                runs.append(json.loads(out.stdout))
            speed = statistics.median(r["router_cycles_per_s"] for r in runs)
            rss = max(r["peak_rss_mb"] for r in runs)
            print(f"{name:11s} {runs[0]['switches']:8d}  {rate:4.2f}  {speed:15,.0f}  {rss:13.0f}")
            if name == "ndt-4x4x4" and rate == 0.05:
                target = speed
    print(f"ndt-4x4x4 at 0.05: {target:,.0f} router-cycles/s (target >= 20,000)")


if __name__ == "__main__":
    main()
