"""Reference-model speed: simulated router-cycles per second (switches x cycles / wall time)
and peak memory, on torus-4x4, ndt-4x4x4 and an 8x8x8 nDT at low and high uniform load.
Each configuration runs in a fresh process (so peak RSS is its own); median of --repeats.

Then bounded memory: ``simulate()`` (warm-up 1000, drain) on torus-4x4, uniform at 0.3, for
10k, 30k and 100k measured cycles, each in a fresh process: peak RSS of the process (median of
--repeats), and the peak Python heap during the run (tracemalloc, started after the imports and
the compile; one run, it slows the model about 10x). Both must stay flat (within 10%) from 10k
to 100k cycles.

    .venv/bin/python bench/model_speed.py [--cycles 2000] [--repeats 3] [--memory-only]
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
    model = FabricModel(plan, on_deliver=lambda packet: None)  # keep none, as simulate() does
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


MEMORY_CYCLES = (10_000, 30_000, 100_000)


def memory(cycles: int, heap: bool) -> dict:
    import tracemalloc

    from zfabric.sim.measure import simulate
    from zfabric.sim.traffic import Traffic, TrafficConfig

    from zfabric import compile_plan, load_spec

    plan = compile_plan(load_spec({"name": "bench", "topology": {"kind": "torus", "k": [4, 4]}}))
    traffic = Traffic(TrafficConfig(rate=0.3), len(plan.endpoints), seed=1)
    if heap:
        tracemalloc.start()
    start = time.perf_counter()
    result = simulate(plan, traffic, warmup=1000, cycles=cycles)
    elapsed = time.perf_counter() - start
    return {
        "heap_mb": tracemalloc.get_traced_memory()[1] / 2**20 if heap else None,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "packets": result.packets,
        "seconds": elapsed,
    }


def _fresh(args: list[str]) -> dict:
    """Run this script with ``args`` in a new interpreter and return its JSON line."""
    out = subprocess.run(
        [sys.executable, __file__, *args], capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout)


def memory_table(repeats: int) -> None:
    print(
        f"\n# bounded memory: simulate() on torus-4x4, uniform 0.3, 4-flit packets, warm-up"
        f" 1000, seed 1; RSS and run time: median of {repeats} fresh processes; heap: one run"
        " under tracemalloc"
    )
    print("measured cycles  packets  peak heap (MB)  peak RSS (MB)  run time (s)")
    rows = []
    for cycles in MEMORY_CYCLES:
        runs = [_fresh(["--memory", str(cycles)]) for _ in range(repeats)]
        row = {key: statistics.median(r[key] for r in runs) for key in ("peak_rss_mb", "seconds")}
        row["packets"] = runs[0]["packets"]
        row["heap_mb"] = _fresh(["--memory", str(cycles), "--heap"])["heap_mb"]
        rows.append(row)
        print(
            f"{cycles:15,d}  {row['packets']:7,.0f}  {row['heap_mb']:14.2f}  "
            f"{row['peak_rss_mb']:13.1f}  {row['seconds']:12.1f}"
        )
    for key, label in (("heap_mb", "heap"), ("peak_rss_mb", "RSS")):
        growth = rows[-1][key] / rows[0][key] - 1
        print(
            f"{label} from {MEMORY_CYCLES[0]:,} to {MEMORY_CYCLES[-1]:,} cycles: {growth:+.1%}"
            f" ({'flat' if abs(growth) <= 0.10 else 'NOT flat'}: the bound is 10%)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cycles", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--memory-only", action="store_true", help="only the memory table")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    parser.add_argument("--memory", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--heap", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        topology, rate = json.loads(args.one)
        print(json.dumps(one(topology, rate, args.cycles)))
        return
    if args.memory:
        print(json.dumps(memory(args.memory, args.heap)))
        return
    if args.memory_only:
        memory_table(args.repeats)
        return
    print(f"# python {platform.python_version()}, {args.cycles} timed cycles after a warm-up")
    print(f"# uniform traffic, 4-flit packets, median of {args.repeats} runs, fresh process each")
    print("fabric      switches  rate  router-cycles/s  peak RSS (MB)")
    target = None
    for name, topology in CONFIGS:
        for rate in RATES:
            one_args = ["--cycles", str(args.cycles), "--one", json.dumps([topology, rate])]
            runs = [_fresh(one_args) for _ in range(args.repeats)]
            speed = statistics.median(r["router_cycles_per_s"] for r in runs)
            rss = max(r["peak_rss_mb"] for r in runs)
            print(f"{name:11s} {runs[0]['switches']:8d}  {rate:4.2f}  {speed:15,.0f}  {rss:13.0f}")
            if name == "ndt-4x4x4" and rate == 0.05:
                target = speed
    print(f"ndt-4x4x4 at 0.05: {target:,.0f} router-cycles/s (target >= 20,000)")
    memory_table(args.repeats)


if __name__ == "__main__":
    main()
