"""What ``zfabric check`` and the model cost on the HyperZ scalability series, and what the model
measures there (M. Adda, HyperZ: Hyper Z-Tree Topology, 2023, §5.3): the
256-processor Z-node Z(8,4,8; 1,4,8; 1,2,2) replicated as H_{2,2}(2,2), (4,2), (4,4), (8,4),
1024 to 8192 processors, at 30/40/50 % uniform load (the paper: normalised delay between 1.5
and 3 packet times at every size).

Each point runs in a child process (so each peak resident size is its own) and prints, in CPU
seconds (the point's process and the proof's worker processes: meaningful on a shared
machine), with the point's own peak resident size (``ru_maxrss``) after each: the plan's
build, the deadlock proof (``--proof``: ``analyse_routing``, the walk over every destination
and the cycle search, what ``zfabric check`` spends nearly all its time on), the uniform
pattern's limits (``pattern_limits``: the channel-load bound and zero-load latency every
simulation's set-up computes, once per point here) and, per rate, the model (``simulate``:
warm-up plus window, Bernoulli, seed 1, 4-flit packets, the default engine) with its accepted
load, normalised delay (mean latency / 4-cycle packet time) and
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
from concurrent.futures import ProcessPoolExecutor

from zfabric.sim.analytic import pattern_limits
from zfabric.sim.measure import simulate
from zfabric.sim.traffic import Traffic, TrafficConfig

from zfabric import load_spec
from zfabric.deadlock import analyse_routing
from zfabric.router_settings import SELECTIONS
from zfabric.topologies import build_fabric

SERIES = ((2, 2), (4, 2), (4, 4), (8, 4))
ZNODE = {"z": [8, 4, 8], "R": [1, 4, 8], "psi": [1, 2, 2], "l_max": 32}
PACKET_LENGTH = 4


def peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def cpu_seconds() -> float:
    """CPU of this process and of the children it has waited for (the proof's workers)."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def point(s: tuple[int, int], args: argparse.Namespace) -> None:
    """Print each phase of point ``s`` as it ends (a long point shows how far it got)."""

    def say(text: str) -> None:
        print(f"H(2,2)({s[0]},{s[1]}): {text}", flush=True)

    spec = load_spec(
        {
            "name": "s",
            "topology": {"kind": "hyperz", "s": list(s), **ZNODE},
            "routing": args.routing,
            "router": {"selection": args.router_selection},
            "packet_length": PACKET_LENGTH,
        }
    )
    start = cpu_seconds()
    plan, _ = build_fabric(spec)
    n = len(plan.endpoints)
    say(
        f"{n} processors, {len(plan.switches)} switches; build {cpu_seconds() - start:.1f}"
        f" s, {peak_mib():.0f} MiB"
    )
    if args.proof:
        start = cpu_seconds()
        free = analyse_routing(plan).deadlock_free
        say(f"proof {cpu_seconds() - start:.0f} s, {peak_mib():.0f} MiB, deadlock-free {free}")
    config = TrafficConfig(packet_length=PACKET_LENGTH)
    start = cpu_seconds()
    limits = pattern_limits(plan, config)  # the verdict's bound: ChannelLoad.proven
    say(
        f"limits {cpu_seconds() - start:.1f} s, {peak_mib():.0f} MiB (equal-split load"
        f" bound {limits.channel_load.bound:.3f})"
    )
    for rate in args.rates:
        traffic = Traffic(dataclasses.replace(config, rate=rate), n, 1)
        start = cpu_seconds()
        result = simulate(plan, traffic, warmup=args.warmup, cycles=args.cycles, limits=limits)
        say(
            f"load {rate}: accepted {result.accepted:.3f}, normalised delay"
            f" {result.latency['mean'] / PACKET_LENGTH:.2f}"
            f"{' (saturated)' if result.saturated else ''}; model"
            f" {cpu_seconds() - start:.0f} s, {peak_mib():.0f} MiB"
        )


def run(args: argparse.Namespace) -> None:
    print(
        f"HyperZ scalability series, {args.routing}, Z(8,4,8; 1,4,8; 1,2,2): CPU seconds and"
        f" peak RSS per phase; uniform, Bernoulli, seed 1, {PACKET_LENGTH}-flit packets and"
        f" buffers, {args.router_selection} selection, warm-up {args.warmup}, window"
        f" {args.cycles} cycles",
        flush=True,
    )
    # a process per point, not a pool's daemon worker: the proof forks workers of its own
    context = multiprocessing.get_context("spawn")
    for s in args.s:
        with ProcessPoolExecutor(1, mp_context=context) as pool:
            pool.submit(point, s, args).result()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--s",
        action="append",
        type=lambda v: tuple(int(x) for x in v.split(",")),
        help="s1,s2 (repeatable; default the whole series)",
    )
    parser.add_argument("--routing", default="aliod", choices=("deter", "odim", "cliod", "aliod"))
    parser.add_argument("--router-selection", choices=SELECTIONS, default="round-robin")
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
