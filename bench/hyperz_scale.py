"""What ``zfabric check`` and the model cost on the HyperZ scalability series, and what the model
measures there (issue 17; digest reference/hyperz-transit.md §3, seed 001 §5.3): the
256-processor Z-node Z(8,4,8; 1,4,8; 1,2,2) replicated as H_{2,2}(2,2), (4,2), (4,4), (8,4),
1024 to 8192 processors, at 30/40/50 % uniform load (the paper: normalised delay between 1.5
and 3 packet times at every size).

Each point runs in a child process (so each peak resident size is its own) and prints, in CPU
seconds (``time.process_time``, meaningful on a shared machine), with the peak resident size
(``ru_maxrss``) after each: the plan's build, the deadlock proof (``--proof``:
``analyse_routing``, the walk over every destination and the cycle search, what ``zfabric
check`` spends nearly all its time on), the uniform pattern's limits (``pattern_limits``: the
channel-load bound and zero-load latency every simulation's set-up computes, once per point
here) and, per rate, the model (``simulate``: warm-up plus window, Bernoulli, seed 1, 4-flit
packets) with its accepted load, normalised delay (mean latency / 4-cycle packet time) and
saturation verdict (on what the model measured: bench/hyperz.py's ``curve`` says why).

    .venv/bin/python bench/hyperz_scale.py [--s 4,4 --s 8,4] [--routing aliod] [--proof]
        [--rates 0.3,0.4,0.5] [--warmup 200] [--cycles 600]
"""

from __future__ import annotations

import argparse
import dataclasses
import multiprocessing
import resource
import time

from hyperz import measured_verdict  # bench/, the script's own folder
from zfabric.sim.analytic import pattern_limits
from zfabric.sim.measure import simulate
from zfabric.sim.traffic import Traffic, TrafficConfig

from zfabric import load_spec
from zfabric.deadlock import analyse_routing
from zfabric.topologies import build_fabric

SERIES = ((2, 2), (4, 2), (4, 4), (8, 4))
ZNODE = {"z": [8, 4, 8], "R": [1, 4, 8], "psi": [1, 2, 2], "l_max": 32}
PACKET_LENGTH = 4


def peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def point(s: tuple[int, int], args: argparse.Namespace) -> dict:
    spec = load_spec(
        {
            "name": "s",
            "topology": {"kind": "hyperz", "s": list(s), **ZNODE},
            "routing": args.routing,
            "packet_length": PACKET_LENGTH,
        }
    )
    out: dict = {"s": s}
    start = time.process_time()
    plan, _ = build_fabric(spec)
    out["build"] = (time.process_time() - start, peak_mib())
    n = len(plan.endpoints)
    out["endpoints"], out["switches"] = n, len(plan.switches)
    if args.proof:
        start = time.process_time()
        analysis = analyse_routing(plan)
        out["proof"] = (time.process_time() - start, peak_mib(), analysis.deadlock_free)
    config = TrafficConfig(packet_length=PACKET_LENGTH)
    start = time.process_time()
    split = pattern_limits(plan, config)
    out["limits"] = (time.process_time() - start, peak_mib(), split.channel_load.bound)
    limits = measured_verdict(split)  # as bench/hyperz.py: no bound for adaptive routings
    out["rates"] = []
    for rate in args.rates:
        traffic = Traffic(dataclasses.replace(config, rate=rate), n, 1)
        start = time.process_time()
        result = simulate(plan, traffic, warmup=args.warmup, cycles=args.cycles, limits=limits)
        delay = result.latency["mean"] / PACKET_LENGTH
        cost = (time.process_time() - start, peak_mib())
        out["rates"].append((rate, result.accepted, delay, result.saturated, *cost))
    return out


def run(args: argparse.Namespace) -> None:
    print(
        f"HyperZ scalability series, {args.routing}, Z(8,4,8; 1,4,8; 1,2,2): CPU seconds and"
        f" peak RSS per phase; uniform, Bernoulli, seed 1, {PACKET_LENGTH}-flit packets and"
        f" buffers, warm-up {args.warmup}, window {args.cycles} cycles"
    )
    with multiprocessing.get_context("spawn").Pool(1, maxtasksperchild=1) as pool:
        for s in args.s:
            r = pool.apply(point, (s, args))
            line = (
                f"H(2,2)({s[0]},{s[1]}): {r['endpoints']} processors, {r['switches']} switches;"
                f" build {r['build'][0]:.1f} s, {r['build'][1]:.0f} MiB;"
            )
            if "proof" in r:
                proof, proof_mib, free = r["proof"]
                line += f" proof {proof:.0f} s, {proof_mib:.0f} MiB, deadlock-free {free};"
            limits, limits_mib, bound = r["limits"]
            print(
                f"{line} limits {limits:.1f} s, {limits_mib:.0f} MiB (equal-split load bound"
                f" {bound:.3f})",
                flush=True,
            )
            for rate, accepted, delay, saturated, cpu, mib in r["rates"]:
                print(
                    f"  load {rate}: accepted {accepted:.3f}, normalised delay {delay:.2f}"
                    f"{' (saturated)' if saturated else ''}; model {cpu:.0f} s, {mib:.0f} MiB",
                    flush=True,
                )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--s",
        action="append",
        type=lambda v: tuple(int(x) for x in v.split(",")),
        help="s1,s2 (repeatable; default the whole series)",
    )
    parser.add_argument("--routing", default="aliod", choices=("deter", "odim", "cliod", "aliod"))
    parser.add_argument("--proof", action="store_true", help="also time the deadlock proof")
    parser.add_argument(
        "--rates", type=lambda v: tuple(float(x) for x in v.split(",")), default=(0.3, 0.4, 0.5)
    )
    parser.add_argument("--warmup", type=int, default=200)
    parser.add_argument("--cycles", type=int, default=600)
    args = parser.parse_args()
    args.s = args.s or list(SERIES)
    run(args)


if __name__ == "__main__":
    main()
