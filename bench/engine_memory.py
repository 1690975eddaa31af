"""The fast engine's memory against the fabric's size: resident memory (RSS, ``ru_maxrss``) of a
fresh process after the imports and the compiled kernel are loaded, after the plan is built,
after the engine's arrays are made (:class:`~zfabric.sim.fast.FastModel`, its routing tables
empty or read from the set-up cache) and after ``--cycles`` cycles of uniform traffic at
``--rate`` (Bernoulli, 4-flit packets, seed 1; the routing tables fill as pairs come), each
minus the one before, and the engine's part (arrays and run) per switch. Then the routing
tables: the raw states and decisions they hold, their arrays' bytes, and the run's growth of
RSS per packet offered over the run's second half (what a longer window costs while new
source-destination pairs come).
No verdict set-up (routing proof, pattern limits): the engine's own memory only. Each case
starts from an empty set-up cache, so its routing tables hold only the states its own run
decided. The raw states are those the table holds at the end (past its budget it keeps only
the states a look-up found since it last pruned, ``sim/fast/tables.py``); the tables' MiB are
the arrays the compiled cycle reads.

Cases: ``torus-KxK``, ``hyperz-AxB`` (the HyperZ scalability series' Z-node Z(8,4,8; 1,4,8;
1,2,2) replicated as an A x B HyperZ, M. Adda, HyperZ: Hyper Z-Tree Topology, 2023, §5.3:
``hyperz-2x2`` is 1024 processors, ``hyperz-8x4`` 8192) or ``e6`` (the Znode thesis's E6
backward Znode, A. Peratikou, 2014: 1024 processors, 17,440 switches). Each case runs in a
process of its own.

    .venv/bin/python bench/engine_memory.py [--cases torus-32x32,hyperz-8x4] [--cycles 500]
        [--rate 0.1]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

from hyperz_scale import ZNODE
from znode_e6_check import E6


def _spec(case: str) -> dict:
    if case == "e6":
        return E6
    kind, size = case.split("-")
    sides = [int(side) for side in size.split("x")]
    if kind == "torus":
        return {"name": case, "topology": {"kind": "torus", "k": sides}}
    if kind == "hyperz":
        topology = {"kind": "hyperz", "s": sides, **ZNODE}
        return {"name": case, "topology": topology, "routing": "aliod", "buffer_depth": 4}
    raise SystemExit(f"--cases: unknown case {case!r} (torus-KxK, hyperz-AxB or e6)")


def _mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def one(case: str, cycles: int, rate: float) -> dict:
    from zfabric.sim.fast import FastModel
    from zfabric.sim.traffic import Traffic, TrafficConfig

    from zfabric import compile_plan, load_spec

    marks = {"imports": _mib()}
    start = time.process_time()
    plan = compile_plan(load_spec(_spec(case)))
    marks["plan"] = _mib()
    model = FastModel(plan, paths=False, on_deliver=lambda packet: None)
    marks["arrays"] = _mib()
    traffic = Traffic(TrafficConfig(rate=rate), len(plan.endpoints), seed=1)
    packets = {}
    offered = drawn = 0  # packets offered, cycles drawn (run_until may stop early)
    for name, until in (("half", cycles // 2), ("run", cycles)):
        while model.cycle < until:
            end = min(until, model.cycle + 256)
            for cycle in range(drawn, end):
                for src, dst, length in traffic.packets_at(cycle):
                    model.offer(src, dst, length, created=cycle)
                    offered += 1
            drawn = max(drawn, end)
            model.run_until(end)
        marks[name], packets[name] = _mib(), offered
    tables = model._tables
    return {
        "switches": len(plan.switches),
        "endpoints": len(plan.endpoints),
        "packets": packets["run"],
        "packets_half": packets["half"],
        "states": tables._counts["hash"],
        "decisions": tables._counts["dec"],
        "table_mib": sum(a.nbytes for a in tables.routing_arrays().values()) / 2**20,
        "cpu_s": time.process_time() - start,
        **marks,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default="torus-32x32,hyperz-2x2,hyperz-8x4")
    parser.add_argument("--cycles", type=int, default=500)
    parser.add_argument("--rate", type=float, default=0.1)
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one(args.one, args.cycles, args.rate)))
        return
    print(
        f"# fast engine, uniform {args.rate}, {args.cycles} cycles, 4-flit packets, seed 1;"
        " peak RSS in MiB after each step (its growth), one fresh process per case"
    )
    print(
        "case            switches  endpoints  imports  +plan  +arrays  +run  engine KiB/switch"
        "  packets  raw states  decisions  tables MiB  2nd half B/packet  CPU s"
    )
    for case in args.cases.split(","):
        argv = [__file__, "--one", case, "--cycles", str(args.cycles), "--rate", str(args.rate)]
        with tempfile.TemporaryDirectory() as setup_dir:
            env = {**os.environ, "ZFABRIC_SETUP_DIR": setup_dir}
            out = subprocess.run(
                [sys.executable, *argv], capture_output=True, text=True, check=True, env=env
            )
        row = json.loads(out.stdout.splitlines()[-1])
        engine = row["run"] - row["plan"]
        run = row["run"] - row["arrays"]
        late, late_packets = row["run"] - row["half"], row["packets"] - row["packets_half"]
        print(
            f"{case:15s} {row['switches']:8,d}  {row['endpoints']:9,d}  {row['imports']:7.0f}"
            f"  {row['plan'] - row['imports']:5.0f}  {row['arrays'] - row['plan']:7.0f}"
            f"  {run:4.0f}  {engine * 1024 / row['switches']:17.1f}  {row['packets']:7,d}"
            f"  {row['states']:10,d}  {row['decisions']:9,d}  {row['table_mib']:10.1f}"
            f"  {late * 2**20 / max(1, late_packets):17,.0f}  {row['cpu_s']:5.0f}"
        )


if __name__ == "__main__":
    main()
