"""How long ``zfabric optimise`` searches (the target: P up to 8192 with up to 9 levels in
under 10 s). Times the library search (:func:`zfabric.optimise.optimise`, levels 1..9 unless
stated; imports and printing excluded), median of several runs, and prints each case's least
cost so a faster search that finds something else shows.

    .venv/bin/python bench/optimise_speed.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time

from zfabric.optimise import optimise

#: (processors, keyword arguments): powers of two (the most factorisations per level count),
#: highly composite counts (the most distinct factors), and each connectivity and option
CASES: list[tuple[int, dict]] = [
    (512, {}),
    (1024, {}),
    (4096, {}),
    (8192, {}),
    (7560, {}),
    (6720, {}),
    (8192, {"psi": 2}),
    (8192, {"znodes": 8}),
    (8192, {"connectivity": "backward"}),
    (7560, {"connectivity": "backward"}),
    (1024, {"connectivity": "full"}),
    (2048, {"connectivity": "full"}),
    (8192, {"connectivity": "full"}),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    load = ", ".join(f"{value:.1f}" for value in os.getloadavg())
    print(
        f"python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} cores, "
        f"load average {load} at start; theta 64, levels 1..9, median of {args.repeats} runs"
    )
    print(f"{'P':>5}  {'options':<26} {'seconds':>8}  least cost (levels: dB, ties)")
    slowest = (0.0, "")
    for processors, options in CASES:
        times = []
        for _ in range(args.repeats):
            start = time.perf_counter()
            optimum = optimise(processors, **options)
            times.append(time.perf_counter() - start)
        seconds = statistics.median(times)
        best = optimum.best
        answer = (
            f"{','.join(str(r.levels) for r in best)}: "
            f"{best[0].pick.relative_power_db:.2f} dB, {sum(len(r.ties) for r in best)} ties"
            if best
            else "no feasible Znode"
        )
        label = " ".join(f"{key}={value}" for key, value in options.items()) or "forward"
        print(f"{processors:>5}  {label:<26} {seconds:>8.2f}  {answer}")
        slowest = max(slowest, (seconds, f"{processors} {label}"))
    print(f"slowest: {slowest[1]} in {slowest[0]:.2f} s")


if __name__ == "__main__":
    main()
