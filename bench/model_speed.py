"""Cycle-engine speed: router-cycles per CPU second (switches x cycles / CPU time) of the fast
engine and the reference model in the same run, on the same fabric, traffic and cycles; the
set-up (plan, routing verdict, pattern limits) cold and warm; peak memory.

Each (case, engine) runs in a fresh process, ``--repeats`` times; the table shows medians. A
run compiles the plan, does the set-up in the fast engine's runs (it is the same for both: cold
in the first run, from an empty set-up cache; warm in the repeats, read back by a fresh process
as every later run of the plan reads it), builds the model, runs ``--warmup`` cycles
of uniform traffic untimed, then times ``--cycles`` more (CPU time of the process, traffic
generation included; numba's compile excluded: it is cached on disk after the first run).

The fast engine first runs once with an empty set-up cache: its routing tables are filled as
the source-destination pairs come (``cold tables``: the share of the timed window the fills
take), and saved. The timed repeats then start from the saved tables, as every later run of
that plan does (``fast rc/s``), their set-up read back (``warm``).

Then bounded memory: ``simulate()`` (warm-up 1000, drain) on torus-4x4, uniform at 0.3, for
10k, 30k and 100k measured cycles on each engine, each in a fresh process: peak RSS (median
of --repeats). It must stay flat (within 10%) from 10k to 100k cycles.

``--against DIR``: instead, the fast engine of this checkout against that of the checkout DIR
(with its own ``.venv``), e.g. before a change: per case, one run of each to fill its routing
tables, then ``--repeats`` runs of each, alternating, from the user's set-up cache; medians of
router-cycles/s and their ratio, and of the set-up read back (warm).

    .venv/bin/python bench/model_speed.py [--cases torus-8x8@0.1,...] [--all] [--repeats 3]
        [--warmup 500] [--cycles 2000] [--memory-only] [--no-memory] [--against DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time

from setup_speed import cpu_and_children  # the set-up's walks run in processes of their own

#: BookSim2 (its 1-cycle-link router) on this machine class, router-cycles/s, the same cases
TABLE = {
    "torus-8x8@0.1": 929_000,
    "torus-8x8@0.5": 220_000,
    "torus-16x16@0.1": 327_000,
    "torus-32x32@0.1": 89_000,
}
#: more fabrics (``--all``): the smallest torus and the other families' test fabrics
MORE = ("torus-4x4@0.1", "ndt-4x4x4@0.1", "znode-512@0.1", "hyperz-1024@0.1")
ENGINES = ("reference", "fast")


def _spec(name: str) -> dict:
    """A case's spec: ``torus-KxK`` built here, other names from examples/."""
    if name.startswith("torus-"):
        k = [int(side) for side in name.removeprefix("torus-").split("x")]
        return {"name": name, "topology": {"kind": "torus", "k": k}}
    folder = os.path.dirname(os.path.realpath(__file__))
    return {"path": os.path.join(folder, "..", "examples", f"{name}.yaml")}


def _case_problem(case: str) -> str | None:
    """What is wrong with a ``--cases`` entry, or None: NAME@RATE, NAME ``torus-KxK...`` or an
    example's, RATE in (0, 1]."""
    name, _, rate = case.partition("@")
    try:
        rate_ok = 0 < float(rate) <= 1
    except ValueError:  # no rate, or not a number
        rate_ok = False
    if not rate_ok:
        return "must be NAME@RATE with a rate in (0, 1]"
    if name.startswith("torus-"):
        sides = name.removeprefix("torus-").split("x")
        if not all(side.isdigit() and int(side) >= 2 for side in sides):
            return "a torus is torus-KxK... with each K at least 2"
    elif not os.path.exists(_spec(name)["path"]):
        return f"no torus-KxK... and no examples/{name}.yaml"
    return None


def one(case: str, engine: str, warmup: int, cycles: int) -> dict:
    """One run in this process (a fresh one): set-up, then timed cycles."""
    from zfabric.sim.analytic import cached_pattern_limits
    from zfabric.sim.fast.tables import FabricTables
    from zfabric.sim.measure import make_model
    from zfabric.sim.traffic import Traffic, TrafficConfig

    from zfabric import compile_plan, load_spec
    from zfabric.deadlock import routing_summary

    base_rss = _rss()
    name, rate = case.split("@")
    spec = _spec(name)
    config = TrafficConfig(rate=float(rate))
    start = time.process_time()
    plan = compile_plan(load_spec(spec.get("path", spec)))
    built = time.process_time()
    setup = 0.0
    if engine == "fast":  # engine-independent: measured once
        begin = cpu_and_children()
        routing_summary(plan)
        cached_pattern_limits(plan, config)
        setup = cpu_and_children() - begin
    fills = [0.0]
    fill = FabricTables.fill

    def timed_fill(self, misses):
        begin = time.process_time()
        fill(self, misses)
        fills[0] += time.process_time() - begin

    FabricTables.fill = timed_fill
    try:
        begin = time.process_time()
        model, ran = make_model(plan, engine, on_deliver=lambda packet: None)
        made = time.process_time() - begin
        assert ran == engine
        traffic = Traffic(config, len(plan.endpoints), seed=1)
        chunk = 256 if engine == "fast" else 1

        def advance(until: int) -> None:
            while model.cycle < until:
                end = min(until, model.cycle + chunk)
                for cycle in range(model.cycle, end):
                    for src, dst, length in traffic.packets_at(cycle):
                        model.offer(src, dst, length, created=cycle)
                model.run(end - model.cycle)

        advance(warmup)
        fills[0] = 0.0
        begin = time.process_time()
        advance(warmup + cycles)
        elapsed = time.process_time() - begin
        if engine == "fast":
            model.finish()  # keeps the routing tables for the next run
    finally:
        FabricTables.fill = fill
    return {
        "switches": len(plan.switches),
        "endpoints": len(plan.endpoints),
        "router_cycles_per_s": len(plan.switches) * cycles / elapsed,
        "fill_share": fills[0] / elapsed,
        "plan_s": built - start,
        "setup_s": setup,
        "model_s": made,
        "peak_rss_mb": _rss(),
        "base_rss_mb": base_rss,
    }


def _rss() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


MEMORY_CYCLES = (10_000, 30_000, 100_000)


def memory(cycles: int, engine: str) -> dict:
    from zfabric.sim.measure import simulate
    from zfabric.sim.traffic import Traffic, TrafficConfig

    from zfabric import compile_plan, load_spec

    plan = compile_plan(load_spec({"name": "bench", "topology": {"kind": "torus", "k": [4, 4]}}))
    traffic = Traffic(TrafficConfig(rate=0.3), len(plan.endpoints), seed=1)
    start = time.process_time()
    result = simulate(plan, traffic, warmup=1000, cycles=cycles, engine=engine)
    return {
        "peak_rss_mb": _rss(),
        "packets": result.packets,
        "seconds": time.process_time() - start,
    }


def _fresh(args: list[str], env: dict | None = None, checkout: str | None = None) -> dict:
    """Run this script (or that of ``checkout``, in its virtualenv) with ``args`` in a new
    interpreter and return its JSON line."""
    command = [sys.executable, __file__]
    if checkout:
        command = [os.path.join(checkout, ".venv/bin/python"), f"{checkout}/bench/model_speed.py"]
    out = subprocess.run(
        [*command, *args],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, **(env or {})},
    )
    return json.loads(out.stdout.splitlines()[-1])


def speed_table(cases: list[str], repeats: int, warmup: int, cycles: int) -> dict[str, tuple]:
    """Prints the table; returns each case's (reference, fast) router-cycles/s."""
    import numba

    print(
        f"# python {platform.python_version()}, numba {numba.__version__}; uniform traffic,"
        " 4-flit packets, Bernoulli, seed 1"
    )
    print(
        f"# {warmup} cycles untimed, then {cycles} timed (32x32: half of each); CPU time of the"
        f" timed window; median of {repeats} fresh processes per engine (cold tables: one run)"
    )
    print(
        "case              switches  reference rc/s   fast rc/s  fast/ref  BookSim2  fast/BS"
        "   cold tables (fills)  set-up cold/warm s  RSS ref/fast MB"
    )
    speeds_of = {}
    for case in cases:
        scale = 2 if "32x32" in case else 1
        argv = ["--one", case, "--warmup", str(warmup // scale), "--cycles", str(cycles // scale)]
        with tempfile.TemporaryDirectory() as setup_dir:
            env = {"ZFABRIC_SETUP_DIR": setup_dir}
            cold = _fresh([*argv, "--engine", "fast"], env)
            rows = {
                engine: _median([_fresh([*argv, "--engine", engine], env) for _ in range(repeats)])
                for engine in ENGINES
            }
        ref, fast = rows["reference"], rows["fast"]
        speeds = speeds_of[case] = ref["router_cycles_per_s"], fast["router_cycles_per_s"]
        booksim = TABLE.get(case)
        shown_bs = f"{booksim / 1000:6.0f} k" if booksim else "       -"
        ratio_bs = f"{speeds[1] / booksim:7.2f}" if booksim else "      -"
        print(
            f"{case:17s} {fast['switches']:8.0f}  {speeds[0]:14,.0f}"
            f"  {speeds[1]:10,.0f}  {speeds[1] / speeds[0]:8.1f}  {shown_bs}  {ratio_bs}"
            f"  {cold['router_cycles_per_s']:11,.0f} ({cold['fill_share']:4.0%})"
            f"  {cold['setup_s']:8.2f} / {fast['setup_s']:5.2f}"
            f"  {ref['peak_rss_mb']:6.0f} / {fast['peak_rss_mb']:4.0f}"
        )
    return speeds_of


def against_table(cases: list[str], repeats: int, warmup: int, cycles: int, other: str) -> None:
    """The fast engine here and in checkout ``other``, alternating, in router-cycles/s."""
    print(
        f"# fast engine: this checkout against {other}; uniform traffic, 4-flit packets,"
        f" Bernoulli, seed 1; {warmup} cycles untimed, then {cycles} timed (32x32: half of"
        f" each); CPU time of the timed window; median of {repeats} fresh processes each,"
        " alternating, after one run each that fills the routing tables"
    )
    print(
        "case              switches   this rc/s  that rc/s  this/that  RSS this/that MB"
        "  warm set-up this/that s"
    )
    for case in cases:
        scale = 2 if "32x32" in case else 1
        argv = ["--one", case, "--warmup", str(warmup // scale), "--cycles", str(cycles // scale)]
        argv += ["--engine", "fast"]
        for checkout in (None, other):
            _fresh(argv, checkout=checkout)
        runs: dict[str | None, list[dict]] = {None: [], other: []}
        for _ in range(repeats):
            for checkout in runs:
                runs[checkout].append(_fresh(argv, checkout=checkout))
        this, that = _median(runs[None]), _median(runs[other])
        speeds = this["router_cycles_per_s"], that["router_cycles_per_s"]
        print(
            f"{case:17s} {this['switches']:8.0f}  {speeds[0]:10,.0f} {speeds[1]:10,.0f}"
            f"  {speeds[0] / speeds[1]:9.2f}"
            f"  {this['peak_rss_mb']:6.0f} / {that['peak_rss_mb']:4.0f}"
            f"  {_setup(this):10.3f} / {_setup(that):5.3f}"
        )


def _setup(run: dict) -> float:
    """The set-up time of a run (a checkout from before ``setup_s`` names its first one
    ``setup_cold_s``: cold only in a run from an empty set-up cache)."""
    return run["setup_s"] if "setup_s" in run else run["setup_cold_s"]


def _median(runs: list[dict]) -> dict:
    return {key: statistics.median(run[key] for run in runs) for key in runs[0]}


def memory_table(repeats: int) -> None:
    print(
        f"\n# bounded memory: simulate() on torus-4x4, uniform 0.3, 4-flit packets, warm-up"
        f" 1000, seed 1; peak RSS and CPU time: median of {repeats} fresh processes"
    )
    print("engine     measured cycles  packets  peak RSS (MB)  CPU time (s)")
    for engine in ENGINES:
        rows = []
        for cycles in MEMORY_CYCLES:
            runs = [_fresh(["--memory", str(cycles), "--engine", engine]) for _ in range(repeats)]
            row = {
                key: statistics.median(r[key] for r in runs) for key in ("peak_rss_mb", "seconds")
            }
            row["packets"] = runs[0]["packets"]
            rows.append(row)
            print(
                f"{engine:9s}  {cycles:15,d}  {row['packets']:7,.0f}  {row['peak_rss_mb']:13.1f}"
                f"  {row['seconds']:12.1f}"
            )
        growth = rows[-1]["peak_rss_mb"] / rows[0]["peak_rss_mb"] - 1
        print(
            f"{engine}: RSS from {MEMORY_CYCLES[0]:,} to {MEMORY_CYCLES[-1]:,} cycles:"
            f" {growth:+.1%} ({'flat' if abs(growth) <= 0.10 else 'NOT flat'}: the bound is 10%)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--cases", help="comma-separated NAME@RATE (default: the cases measured against BookSim2)"
    )
    parser.add_argument("--all", action="store_true", help="also " + ", ".join(MORE))
    parser.add_argument("--warmup", type=int, default=500)
    parser.add_argument("--cycles", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--memory-only", action="store_true", help="only the memory table")
    parser.add_argument("--no-memory", action="store_true", help="no memory table")
    parser.add_argument("--against", metavar="DIR", help="another checkout's fast engine")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    parser.add_argument("--engine", choices=ENGINES, help=argparse.SUPPRESS)
    parser.add_argument("--memory", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one(args.one, args.engine, args.warmup, args.cycles)))
        return
    if args.memory:
        print(json.dumps(memory(args.memory, args.engine)))
        return
    speeds = {}
    cases = args.cases.split(",") if args.cases else [*TABLE, *(MORE if args.all else ())]
    for case in cases:
        problem = _case_problem(case)
        if problem:
            parser.exit(2, f"model_speed.py: --cases: {case!r}: {problem}\n")
    if args.against:
        against_table(cases, args.repeats, args.warmup, args.cycles, args.against)
        return
    if not args.memory_only:
        speeds = speed_table(cases, args.repeats, args.warmup, args.cycles)
    if not args.no_memory:
        memory_table(args.repeats)
    if speeds:  # the headline: the first case
        case, (reference, fast) = next(iter(speeds.items()))
        print(
            f"{case}: fast engine {fast:,.0f} router-cycles/s, {fast / reference:.1f}x the"
            " reference engine in the same run"
        )


if __name__ == "__main__":
    main()
