"""T-switch fat trees against single-chip and low-radix trees in the model: the evaluation of
J. A. Villar et al., "Formalization and configuration methodology for high-radix combined
switches" (The Journal of Supercomputing, 2013, §6), on smaller trees.

The paper simulates 1024 endpoints (4-ary 5-tree, T-switches of two 5-port switches; low-radix
baseline 2-ary 10-tree) and 4096 (8-ary 4-tree, two 10-port switches; baseline 4-ary 6-tree)
and reports that 64 to 4096 endpoints behave alike. The Python model runs one point of a
1024-endpoint tree in minutes, so this study takes 64 endpoints by default: the 4-ary 3-tree
(baseline 2-ary 6-tree) and the 8-ary 2-tree (baseline 4-ary 3-tree); ``--n`` picks others.

Networks: U-BMIN, the k-ary n-tree of single-chip 2k-port switches (``updown``, which is
DESTRO); O-BMIN, the same tree of T-switches with the optimal pattern (``destro``); B-BMIN,
with the ``bad`` pattern (its internal classes share the optimal's VCs, which the proof
accepts, so the two differ in the pattern alone); L-BMIN, the tree of k-port switches (arity
k/2, as the paper's 2-ary 10-tree and 4-ary 6-tree) with the same endpoints. The paper's
switches are input-queued with virtual output queues of 8 packets; zfabric's are wormhole
switches with ``--vcs`` VCs of ``--buffer-depth`` flits per input port
(docs/microarchitecture.md).

- test 1: accepted traffic at 80 % offered load against the internal links r = 1..k, for O- and
  B-BMIN, U-BMIN the reference (the paper's Figs. 8a and 9a);
- test 2: latency and accepted traffic against offered load (r = 1 for k = 4, 2 for k = 8), the
  knee (:func:`zfabric.sim.sweep.knee`, bisected to ``--tolerance``) per network (Figs. 8b-c
  and 9b-c); a latency-throughput plot per arity in ``--plot-dir``.

Every claim of §6.3 is then printed as reproduced or not, with the figures it rests on.

    .venv/bin/python bench/tswitch_study.py [--k 4 8] [--n 3 2] [--cycles 2000] [--warmup 500]
        [--vcs 1] [--buffer-depth 4] [--tolerance 0.02]
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

from zfabric.sim.measure import simulate
from zfabric.sim.plot import plot_curves
from zfabric.sim.sweep import COARSE_RATES, knee, sweep
from zfabric.sim.traffic import Traffic, TrafficConfig

from zfabric import compile_plan, load_spec

#: the paper's test-1 load, and its choice of internal links per arity (§6.3)
LOAD = 0.8
PAPER_R = {4: 1, 8: 2}
PACKET = 4
#: "reaches U-BMIN": accepts at least U-BMIN's traffic less this fraction (the paper: the
#: internal links stop being a bottleneck)
SAME = 0.02


def spec(args, k: int, n: int, scp: str | None = None, r: int = 1) -> dict:
    topology = {"kind": "kary_ntree", "k": k, "n": n, "vcs": args.vcs}
    routing: object = "updown"
    if scp is not None:
        topology["tswitch"] = {"internal_ports": r, "scp": scp}
        shared = list(range(args.vcs))
        routing = {"name": "destro", "internal_vcs": {"up": shared, "down": shared}}
    prefix = {None: "U", "optimal": "O", "bad": "B"}[scp]
    name = f"{prefix}-{k}-ary-{n}-tree" + (f"-r{r}" if scp else "")
    return {
        "name": name,
        "topology": topology,
        "routing": routing,
        "buffer_depth": args.buffer_depth,
    }


def accepted_at(plan, rate: float, args) -> float:
    config = TrafficConfig(rate=rate, packet_length=PACKET)
    traffic = Traffic(config, len(plan.endpoints), 1)
    result = simulate(plan, traffic, warmup=args.warmup, cycles=args.cycles, drain_limit=0)
    assert result.deadlock is None, result.deadlock
    return result.accepted


def curve(plan, args) -> dict:
    points = sweep(
        plan,
        TrafficConfig(packet_length=PACKET),
        COARSE_RATES[: int(LOAD * 10)],
        warmup=args.warmup,
        cycles=args.cycles,
        drain_limit=args.cycles,
        tolerance=args.tolerance,
    )
    assert not any(p["deadlock"] for p in points), points
    return {"points": points, "knee": knee(points) or 0.0, "low": points[0]["latency"]["mean"]}


def verdict(ok: bool) -> str:
    return "REPRODUCED" if ok else "NOT REPRODUCED"


def study(args, k: int, n: int) -> None:
    low_k = k // 2
    low_n = round(n * math.log(k) / math.log(low_k))
    assert low_k**low_n == k**n, (k, n)
    paper_r = PAPER_R.get(k, 1)
    print(f"\n## {k}-ary {n}-tree ({k**n} endpoints); L-BMIN {low_k}-ary {low_n}-tree")

    start = time.perf_counter()
    plain = compile_plan(load_spec(spec(args, k, n)))
    u80 = accepted_at(plain, LOAD, args)
    print(f"test 1: accepted at offered {LOAD}: U-BMIN {u80:.3f}")
    test1: dict[str, list[float]] = {"optimal": [], "bad": []}
    for scp in test1:
        for r in range(1, k + 1):
            plan = compile_plan(load_spec(spec(args, k, n, scp, r)))
            test1[scp].append(accepted_at(plan, LOAD, args))
        shown = "  ".join(f"r={r}: {a:.3f}" for r, a in enumerate(test1[scp], 1))
        print(f"  {'O' if scp == 'optimal' else 'B'}-BMIN  {shown}")
    print(f"  ({time.perf_counter() - start:.0f} s)")

    start = time.perf_counter()
    networks = {
        "U-BMIN": spec(args, k, n),
        f"O-BMIN r={paper_r}": spec(args, k, n, "optimal", paper_r),
        f"B-BMIN r={paper_r}": spec(args, k, n, "bad", paper_r),
        "L-BMIN": {**spec(args, low_k, low_n), "name": f"L-{low_k}-ary-{low_n}-tree"},
    }
    results = {}
    for name, network in networks.items():
        results[name] = curve(compile_plan(load_spec(network)), args)
        result = results[name]
        latencies = "  ".join(
            f"{p['rate']:g}: {p['latency']['mean']:.1f}"
            for p in result["points"]
            if p["latency"]["mean"] is not None
        )
        print(f"test 2: {name:12s} knee {result['knee']:.3f}; mean latency by load: {latencies}")
    print(f"  ({time.perf_counter() - start:.0f} s)")
    path = args.plot_dir / f"tswitch-{k}-ary-{n}-tree.png"
    title = f"T-switch {k}-ary {n}-tree, uniform traffic"
    plot_curves({name: r["points"] for name, r in results.items()}, path, title=title)
    print(f"  plot: {path}")

    optimal, bad = test1["optimal"], test1["bad"]
    floor = (1 - SAME) * u80
    first_o = next((r for r, a in enumerate(optimal, 1) if a >= floor), None)
    print(
        f"claim: O-BMIN reaches U-BMIN at {LOAD:.0%} load with r = {paper_r}:"
        f" {verdict(optimal[paper_r - 1] >= floor)} (O {optimal[paper_r - 1]:.3f} vs U"
        f" {u80:.3f}; first r reaching {floor:.3f}: {first_o})"
    )
    first_b = next((r for r, a in enumerate(bad, 1) if a >= floor), None)
    print(
        f"claim: B-BMIN needs r = k = {k} to reach U-BMIN at {LOAD:.0%}:"
        f" {verdict(first_b == k)} (first r reaching {floor:.3f}: {first_b};"
        f" B at r = k - 1: {bad[k - 2]:.3f}, at r = k: {bad[k - 1]:.3f})"
    )
    b_knee = results[f"B-BMIN r={paper_r}"]["knee"]
    print(
        f"claim: B-BMIN saturates near 40 % (r = {paper_r}):"
        f" {verdict(abs(b_knee - 0.4) <= 0.05)} (knee {b_knee:.3f}; U-BMIN"
        f" {results['U-BMIN']['knee']:.3f}, O-BMIN {results[f'O-BMIN r={paper_r}']['knee']:.3f})"
    )
    u_low, l_low = results["U-BMIN"]["low"], results["L-BMIN"]["low"]
    print(
        f"claim: L-BMIN has higher latency than U-BMIN: {verdict(l_low > u_low)}"
        f" (at {COARSE_RATES[0]}: L {l_low:.2f} vs U {u_low:.2f} cycles)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--k", type=int, nargs="+", default=[4, 8], help="arities")
    parser.add_argument("--n", type=int, nargs="+", default=[3, 2], help="levels, one per k")
    parser.add_argument("--cycles", type=int, default=2000)
    parser.add_argument("--warmup", type=int, default=500)
    parser.add_argument("--vcs", type=int, default=1, help="VCs per link")
    parser.add_argument("--buffer-depth", type=int, default=4, help="flits per input VC")
    parser.add_argument("--tolerance", type=float, default=0.02, help="of the knee's bisection")
    parser.add_argument("--plot-dir", type=Path, default=Path(__file__).parent / "out")
    args = parser.parse_args()
    if len(args.k) != len(args.n):
        parser.error("--k and --n need one entry each per tree")
    print(
        f"# model, uniform Bernoulli traffic, {PACKET}-flit packets, {args.vcs} VC(s) per link of"
        f" {args.buffer_depth} flits, 1-stage switches (round-robin), warm-up {args.warmup},"
        f" window {args.cycles} cycles, seed 1; test 1 at offered {LOAD} (no drain); test 2"
        f" knees by bisection to {args.tolerance}, drain limit {args.cycles}; 'reaches U-BMIN'"
        f" = accepts at least {1 - SAME:.0%} of U-BMIN's traffic"
    )
    args.plot_dir.mkdir(parents=True, exist_ok=True)
    for k, n in zip(args.k, args.n, strict=True):
        study(args, k, n)


if __name__ == "__main__":
    main()
