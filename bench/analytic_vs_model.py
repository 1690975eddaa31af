"""The thesis's chapter 4 and 5 models against zfabric's cycle model on tori (docs/analytic.md).

For each torus (8x8, 16x16), routing (``dor`` with 1 or 2 VCs per dateline class, ``duato`` with
1 or 2 adaptive VCs), packet length and buffer depth: a sweep of the cycle model
(:func:`zfabric.sim.sweep.sweep`: rates from ``--step`` up in steps of ``--step``, halved on
16x16, until the first saturated one, then the knee bisected to ``--tolerance``; uniform
Poisson traffic, the models' assumption), and at each rate the prediction of the model under
two mappings of the switch contract (:mod:`zfabric.sim.wormhole_fabric`):

- ``zfabric``: the mapping ``zfabric analytic`` uses (docs/analytic.md);
- ``literal``: as ``zfabric`` but with the thesis's holding times and source: a header's
  ``stages + 1`` cycles a hop held on every effective channel and in the multiplexing service
  (the thesis's routing cycle, (4.28), (4.36)), the source queue split over the V injection
  VCs (4.33).

Each point: the rate as a fraction of the cycle model's knee, the cycle model's mean latency
and 95% CI (batch means), each model's latency and error ``(model - cycle model) / cycle
model``. Then per configuration the largest |error| at or below 70 % of the knee, the error
at each point above it, and both saturation rates. Last line: the largest |error| of the
``zfabric`` mapping at or below 70 % of the knee over every configuration.

    .venv/bin/python bench/analytic_vs_model.py [--tori 8 16] [--lengths 4 16 32]
        [--step 0.06] [--warmup 1000] [--cycles 2000] [--workers 2]
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from concurrent.futures import ProcessPoolExecutor, as_completed

from zfabric.sim.sweep import knee, sweep
from zfabric.sim.traffic import TrafficConfig
from zfabric.sim.wormhole_fabric import fabric_model
from zfabric.sim.wormhole_finite import Timing

from zfabric import compile_plan, load_spec

#: routing, spec keys -> a configuration's label
ROUTINGS = {
    "dor V=2": ("dor", {}),
    "dor V=4": ("dor", {"vcs": 2}),
    "duato V=3": ({"name": "duato", "adaptive_vcs": 1}, {}),
    "duato V=4": ({"name": "duato", "adaptive_vcs": 2}, {}),
}
#: the fraction of the cycle model's knee up to which errors are "below saturation"
BELOW = 0.7


def literal(model):
    """The thesis's equations with only the zero-load cycles mapped (see the module doc)."""
    timing = Timing(flit=model.timing.flit, hop=model.timing.hop, extra=model.timing.extra)
    options = {k: v for k, v in model.options.items() if k != "injection_servers"}
    return dataclasses.replace(model, timing=timing, options=options)


def run_config(task: tuple) -> dict:
    """One configuration's sweep and predictions (a worker process runs it)."""
    k, label, length, depth, step, tolerance, warmup, cycles = task
    routing, topology = ROUTINGS[label]
    spec = {
        "name": f"torus-{k}x{k}",
        "topology": {"kind": "torus", "k": [k, k], **topology},
        "routing": routing,
        "buffer_depth": depth,
        "packet_length": length,
    }
    plan = compile_plan(load_spec(spec))
    models = {"zfabric": fabric_model(plan, "torus")}
    models["literal"] = literal(models["zfabric"])
    config = TrafficConfig(pattern="uniform", packet_length=length, process="poisson")
    rates = [round(step * i, 6) for i in range(1, int(1 / step + 1e-9) + 1)]
    start = time.perf_counter()
    points = sweep(plan, config, rates, warmup=warmup, cycles=cycles, tolerance=tolerance)
    seconds = time.perf_counter() - start
    rows = []
    for point in points:
        row = {"rate": point["rate"], "sim": point["latency"]["mean"],
               "ci": point["latency"]["ci95"], "saturated": point["saturated"]}  # fmt: skip
        for name, model in models.items():
            prediction = model.latency(point["rate"])
            row[name] = None if prediction is None else prediction.latency
        rows.append(row)
    return {
        "k": k,
        "label": label,
        "length": length,
        "depth": depth,
        "vcs": models["zfabric"].vcs,
        "knee": knee(points),
        "any_saturated": any(p["saturated"] for p in points),
        "saturation": {name: model.saturation() for name, model in models.items()},
        "zero_load": points[0]["limits"]["zero_load_latency"],
        "rows": rows,
        "seconds": seconds,
    }


def error(row: dict, name: str) -> float | None:
    if row[name] is None or row["sim"] is None or row["saturated"]:
        return None
    return (row[name] - row["sim"]) / row["sim"]


def print_rows(r: dict) -> None:
    """One configuration's points, each model's latency and error."""
    found = r["knee"] or 0.0
    for row in r["rows"]:
        share = row["rate"] / found if found else float("inf")
        sim = "n/a" if row["sim"] is None else f"{row['sim']:.2f}"
        ci = "" if row["ci"] is None else f"±{row['ci']:.2f}"
        cells = []
        for name in ("zfabric", "literal"):
            value, err = row[name], error(row, name)
            cells.append("sat" if value is None else f"{value:.2f}")
            cells.append("-" if err is None else f"{100 * err:+.1f}")
        flag = "  saturated" if row["saturated"] else ""
        print(
            f"{r['k']}x{r['k']:<4} {r['label']:<10} {r['length']:>3} {r['depth']:>2}"
            f" {row['rate']:>6.3f} {share:>6.2f} {sim + ci:>14} {cells[0]:>8} {cells[1]:>7}"
            f" {cells[2]:>8} {cells[3]:>7}{flag}",
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tori", type=int, nargs="+", default=[8, 16])
    parser.add_argument("--lengths", type=int, nargs="+", default=[4, 16, 32])
    parser.add_argument("--depths", type=int, nargs="+", default=[4])
    parser.add_argument("--routings", nargs="+", choices=list(ROUTINGS), default=list(ROUTINGS))
    parser.add_argument("--warmup", type=int, default=1000)
    parser.add_argument("--cycles", type=int, default=2000)
    parser.add_argument("--tolerance", type=float, default=0.02, help="knee bisection bracket")
    parser.add_argument(
        "--step", type=float, default=0.06, help="rate step on 8x8 (halved on 16x16)"
    )
    parser.add_argument("--workers", type=int, default=1)
    args = parser.parse_args()
    print(
        "# uniform Poisson traffic; cycle model (fast engine) swept from STEP in steps of STEP"
        f" ({args.step:g} on 8x8, {args.step / 2:g} on 16x16) to the first saturated rate,"
        " knee bisected to"
        f" {args.tolerance}; warm-up {args.warmup}, window {args.cycles} cycles, seed 1;"
        " router: stages 1, separable allocator, round-robin selection, 2 injection and 2"
        " ejection VCs, balanced dateline classes, tie alternate; models: new VC method",
        flush=True,
    )
    tasks = [
        (k, label, length, depth, args.step * 8 / k, args.tolerance, args.warmup, args.cycles)
        for k in args.tori for label in args.routings for length in args.lengths
        for depth in args.depths
    ]  # fmt: skip
    results = []
    with ProcessPoolExecutor(max_workers=args.workers) as pool:
        for done in as_completed([pool.submit(run_config, task) for task in tasks]):
            r = done.result()
            results.append(r)
            print(
                f"# done {len(results)}/{len(tasks)} ({r['seconds']:.0f} s):\n"
                f"{'torus':<6} {'routing':<10} {'L':>3} {'B':>2} {'rate':>6} {'/knee':>6}"
                f" {'cycle model':>14} {'zfabric':>8} {'err %':>7} {'literal':>8} {'err %':>7}"
            )
            print_rows(r)
    order = {task[:4]: i for i, task in enumerate(tasks)}
    results.sort(key=lambda r: order[r["k"], r["label"], r["length"], r["depth"]])
    worst = (0.0, None)
    summary = []
    for r in results:
        found = r["knee"] or 0.0
        below = [
            (abs(e), row["rate"])
            for row in r["rows"]
            if (e := error(row, "zfabric")) is not None and found and row["rate"] <= BELOW * found
        ]
        above = [
            f"{row['rate'] / found:.2f}:{100 * e:+.0f}%"
            for row in r["rows"]
            if (e := error(row, "zfabric")) is not None and found and row["rate"] > BELOW * found
        ]
        largest = max(below, default=(None, None))
        if largest[0] is not None and largest[0] > worst[0]:
            worst = (largest[0], f"{r['k']}x{r['k']} {r['label']} L={r['length']} at {largest[1]}")
        summary.append((r, largest[0], above))
    print(
        f"\n{'torus':<6} {'routing':<10} {'L':>3} {'B':>2} {'zero-load':>9} {'knee':>6}"
        f" {'model sat':>9} {'literal sat':>11} {'max |err| <=0.7 knee':>21}  above 0.7 knee"
        "  (seconds)"
    )
    for r, largest, above in summary:
        shown = "-" if largest is None else f"{100 * largest:.1f}%"
        knee_shown = f"{r['knee']:.3f}" if r["any_saturated"] else f">{r['knee']}"
        print(
            f"{r['k']}x{r['k']:<4} {r['label']:<10} {r['length']:>3} {r['depth']:>2}"
            f" {r['zero_load']:>9.2f} {knee_shown:>6} {r['saturation']['zfabric']:>9.3f}"
            f" {r['saturation']['literal']:>11.3f} {shown:>21}  {' '.join(above) or '-'}"
            f"  ({r['seconds']:.0f})"
        )
    print(
        f"worst |error| of the zfabric mapping at or below {BELOW:.0%} of the cycle model's knee:"
        f" {100 * worst[0]:.1f}% ({worst[1]})"
    )


if __name__ == "__main__":
    main()
