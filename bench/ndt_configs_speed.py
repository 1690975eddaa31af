"""How long ``zfabric ndt-configs`` takes on a 7-D twin torus (its ½·C(14, 7) = 1716 port
configurations). Runs the command as a user does (a new process, imports and printing
included) on a spec written to a temporary folder, and prints wall and CPU seconds with the
machine's load, and the best configuration found, so a faster run that finds something else
shows.

    .venv/bin/python bench/ndt_configs_speed.py [--k 2x2x2x2x2x2x2] [--routing dort] [--proof]
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--k", default="2x2x2x2x2x2x2", help="ring sizes, e.g. 3x3x3x3x3x3x3")
    parser.add_argument("--routing", default="dort", choices=["dort", "tsdor"])
    parser.add_argument("--proof", action="store_true", help="also prove every configuration")
    args = parser.parse_args()
    k = [int(value) for value in args.k.split("x")]
    zfabric = shutil.which("zfabric", path=str(Path(sys.executable).parent)) or "zfabric"
    with tempfile.TemporaryDirectory() as folder:
        spec = Path(folder, "ndt.yaml")
        spec.write_text(
            yaml.safe_dump(
                {
                    "name": f"ndt-{args.k}",
                    "topology": {"kind": "ndt", "k": k},
                    "routing": args.routing,
                }
            )
        )
        command = [zfabric, "ndt-configs", str(spec), *(["--proof"] if args.proof else [])]
        load = ", ".join(f"{value:.1f}" for value in os.getloadavg())
        start = time.perf_counter()
        result = subprocess.run(command, capture_output=True, text=True, check=True)
        wall = time.perf_counter() - start
    cpu = resource.getrusage(resource.RUSAGE_CHILDREN)
    lines = result.stdout.splitlines()
    print(
        f"python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} cores,"
        f" load average {load} at start; one run"
    )
    print(f"zfabric ndt-configs, k={args.k} ({len(k)}-D), {args.routing}{', --proof' * args.proof}")
    print(f"  {lines[0]}")
    print(f"  best: {lines[1].strip()}")
    print(
        f"  {len(lines) - 1} configurations in {wall:.1f} s wall,"
        f" {cpu.ru_utime + cpu.ru_stime:.1f} s CPU"
    )


if __name__ == "__main__":
    main()
