"""How long Verilog emission takes (hdl.verilog.emit: one module per kind plus a top that
instantiates them) and how big the Verilog is, for torus and nDT fabrics of 64, 256 and 1024
switches (the target: linear in switches, and under 2 minutes at 1024).

Prints, per fabric: the kinds; the seconds spent building the Fabric, turning the kinds and the
top into RTLIL, and Yosys writing the Verilog; the total; the Verilog's lines and bytes per
switch; and the seconds to write the files beside it (README, template, testbench: the rest of
``write``). Per family: the growth exponent e of time ~ switches^e, the least-squares slope of
log(total) against log(switches) over its fabrics. Last line: the machine's load.

    .venv/bin/python bench/verilog_emission.py [--family ndt|torus|znode ...] [--upto N]
        [--flat-upto N]

``--upto N`` skips fabrics of more than N switches. ``--flat-upto N`` also times
one-module-per-instance emission (``share=False``) for fabrics of at most N switches.
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import time

from zfabric.hdl.fabric_docs import instantiation_template, readme
from zfabric.hdl.testbench import testbench
from zfabric.hdl.verilog import emit

from zfabric import compile_plan, load_spec

FAMILIES = {
    "torus": [
        {"kind": "torus", "k": [8, 8]},  # 64 switches
        {"kind": "torus", "k": [16, 16]},  # 256
        {"kind": "torus", "k": [32, 32]},  # 1024
    ],
    "ndt": [
        {"kind": "ndt", "k": [4, 4, 2]},  # 64 switches (32 twin nodes)
        {"kind": "ndt", "k": [8, 4, 4]},  # 256
        {"kind": "ndt", "k": [8, 8, 8]},  # 1024
    ],
    "znode": [
        {"kind": "znode", "z": [4, 4], "R": [1, 4]},  # 8 switches
        {"kind": "kary_ntree", "k": 4, "n": 3},  # 48
        {"kind": "znode", "znodes": 2, "z": [4, 4, 4], "R": [1, 4, 8]},  # 224
    ],
}
ROUTING = {"ndt": "dort", "torus": "dor", "znode": "sliced"}


def slope(points: list[tuple[int, float]]) -> float:
    """Least-squares slope of log(seconds) against log(switches)."""
    xs = [math.log(n) for n, _ in points]
    ys = [math.log(t) for _, t in points]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum(
        (x - mx) ** 2 for x in xs
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--family", choices=sorted(FAMILIES), action="append")
    parser.add_argument("--upto", type=int, default=1024)
    parser.add_argument("--flat-upto", type=int, default=0)
    args = parser.parse_args()
    families = args.family or ["torus", "ndt"]
    print(f"python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} cores")
    for family in families:
        points = []
        for topology in FAMILIES[family]:
            spec = {"name": f"{family}", "topology": topology, "routing": ROUTING[family]}
            plan = compile_plan(load_spec(spec))
            n = len(plan.switches)
            if n > args.upto:
                continue
            start = time.perf_counter()
            emission = emit(plan)
            total = time.perf_counter() - start
            yosys = emission.yosys_seconds
            build = total - emission.kind_seconds - emission.top_seconds - yosys
            start = time.perf_counter()
            readme(plan, emission.top, emission.text, emission.ports)
            instantiation_template(emission.top, emission.ports)
            testbench(plan, emission.top, emission.ports)
            beside = time.perf_counter() - start
            lines = emission.text.count("\n")
            print(
                f"{family:6} {n:5} switches {len(emission.kinds):3} kinds: "
                f"build {build:6.1f} s, kinds {emission.kind_seconds:5.1f} s, "
                f"top {emission.top_seconds:6.1f} s, yosys {yosys:6.1f} s, "
                f"total {total:6.1f} s; {lines} lines ({lines / n:.0f} per switch), "
                f"{len(emission.text) / n / 1024:.1f} KiB per switch; "
                f"README, template and testbench {beside:.2f} s"
            )
            if n <= args.flat_upto:
                start = time.perf_counter()
                emit(plan, share=False)
                print(
                    f"{'':6} {n:5} switches, one module per instance: "
                    f"{time.perf_counter() - start:6.1f} s"
                )
            points.append((n, total))
        if len(points) > 1:
            exponent = slope(points)
            sizes = ", ".join(str(n) for n, _ in points)
            print(f"{family}: time ~ switches^{exponent:.2f} (least squares over {sizes})")
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"load average {load} (1, 5, 15 minutes)")


if __name__ == "__main__":
    main()
