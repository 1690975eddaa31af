"""How long Verilog emission takes (hdl.verilog.emit: one module per kind plus a top that
instantiates them) for fabrics of 16 to 1024 switches. Prints, per fabric, the kinds, the
seconds spent building the Fabric, turning the kinds and the top into RTLIL, and Yosys writing
the Verilog of all of them, and the growth exponent (time ~ switches^e between the smallest and
the largest). Last line: the largest fabric of the last family, and the machine's load.

    .venv/bin/python bench/verilog_emission.py [--family ndt|torus|znode] [--flat-upto N]
        [--largest]

``--flat-upto N`` also times one-module-per-instance emission (``share=False``) for fabrics
of at most N switches, for comparison. ``--largest``: only the largest fabric of each family.
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import time

from zfabric.hdl.verilog import emit

from zfabric import compile_plan, load_spec

FAMILIES = {
    "ndt": [
        {"kind": "ndt", "k": [2, 2, 2]},  # 16 switches
        {"kind": "ndt", "k": [4, 4, 2]},  # 64
        {"kind": "ndt", "k": [4, 4, 4]},  # 128
        {"kind": "ndt", "k": [8, 8, 8]},  # 1024
    ],
    "torus": [
        {"kind": "torus", "k": [4, 4]},
        {"kind": "torus", "k": [8, 8]},
        {"kind": "torus", "k": [16, 8]},
        {"kind": "torus", "k": [32, 32]},
    ],
    "znode": [
        {"kind": "znode", "z": [4, 4], "R": [1, 4]},  # 8 switches
        {"kind": "kary_ntree", "k": 4, "n": 3},  # 48
        {"kind": "znode", "znodes": 2, "z": [4, 4, 4], "R": [1, 4, 8]},  # 224
    ],
}
ROUTING = {"ndt": "dort", "torus": "dor", "znode": "sliced"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--family", choices=sorted(FAMILIES), action="append")
    parser.add_argument("--flat-upto", type=int, default=0)
    parser.add_argument("--largest", action="store_true")
    args = parser.parse_args()
    families = args.family or ["ndt"]
    print(f"python {platform.python_version()}, {platform.machine()}")
    last = None
    for family in families:
        points = []
        for topology in FAMILIES[family][-1:] if args.largest else FAMILIES[family]:
            spec = {"name": f"{family}", "topology": topology, "routing": ROUTING[family]}
            plan = compile_plan(load_spec(spec))
            n = len(plan.switches)
            start = time.perf_counter()
            emission = emit(plan)
            total = time.perf_counter() - start
            yosys = emission.yosys_seconds
            build = total - emission.kind_seconds - emission.top_seconds - yosys
            lines = emission.text.count("\n")
            print(
                f"{family:6} {n:5} switches {len(emission.kinds):3} kinds: "
                f"build {build:6.1f} s, kinds {emission.kind_seconds:6.1f} s, "
                f"top {emission.top_seconds:6.1f} s, yosys {yosys:6.1f} s, "
                f"total {total:6.1f} s, {lines} lines"
            )
            if n <= args.flat_upto:
                start = time.perf_counter()
                emit(plan, share=False)
                print(
                    f"{'':6} {n:5} switches, one module per instance: "
                    f"{time.perf_counter() - start:6.1f} s"
                )
            points.append((n, total))
        (n0, t0), (n1, t1) = points[0], points[-1]
        if n1 > n0:
            exponent = math.log(t1 / t0) / math.log(n1 / n0)
            print(f"{family}: time ~ switches^{exponent:.2f} from {n0} to {n1} switches")
        last = (family, n1, t1)
    family, n, seconds = last
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"{family} {n} switches: Verilog emitted in {seconds:.1f} s (load average {load})")


if __name__ == "__main__":
    main()
