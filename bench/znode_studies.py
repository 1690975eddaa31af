"""The Znode thesis's studies (A. Peratikou, 2014, §5.2) on the cycle model, with plots.

Each study is a ``zfabric study`` grid built here from the optimiser's picks (so the fabrics are
the ones ``zfabric optimise`` names, never copied by hand), written as ``DIR/NAME/study.yaml``
and run by the same engine and output rules as ``zfabric study -o DIR/NAME`` (its per-point
cache makes a rerun resume). The script then prints one row per curve (zero-load latency, the
mean latency at the study's reference load, the knee and the peak accepted throughput) and
says which of the thesis's stated outcomes the run reproduces. The thesis's plotted values are
lost; its outcomes are qualitative and measured on bit-serial 1 Gbit/s links with VCT
switching, where ours are flit-level wormhole switches (4-flit packets, 4-flit buffers), so a
claim that rests on header bits on the wire shows only where heads span several flits
(``router.head_bits``: E5, the thesis's fabric Z3 given by hand as the thesis names it).

- ``e1``: 512 processors, the least-cost pick per level count 2-6 (forward, theta 64, psi 1),
  the thesis's oZ2 z = (8,64), R = (1,8), and the 8-ary 3-tree of its Fig. 5.4; uniform
  traffic. Claims: level 2 has the lowest delay and the highest throughput; the optimum beats
  the 8-ary 3-tree at every load.
- ``e2``: 1024 processors, the least-cost pick per level count 2-6 (forward, theta 64, psi 1);
  uniform traffic. Claims: levels 3 to 5 have a lower delay and a higher throughput than
  levels 2 and 6, level 3 slightly the best.
- ``e5``: the four addressing schemes (flat, source-destination, destination = ``updown``,
  sliced) on the thesis's Z3 = (1,8,64)/(8,8,16), 1024 processors, under uniform, hotspot
  and neighbour traffic, with heads longer than a flit (``router.head_bits: 8``: a 32-bit
  message of 4 payload flits, as the thesis's, and heads of 10 to 20 bits over 2 or 3 head
  flits; 6-flit buffers so that 3 head flits still stream), at loads 0.1, 0.25 and 0.4
  (``e5h``: hotspot at 0.001 to 0.004, below the hotspot's ejection limit of about 0.0049).
  Source-destination runs under neighbour and uniform traffic (``e5sd``) and hotspot
  (``e5sdh``), with sliced beside it (see :data:`ALL_PAIRS_SCHEMES`). Claim: sliced has the
  lowest latency at every load below its saturation, on every pattern.
- ``e6``: forward, backward and full connectivity for 512 processors in 3 levels (the
  optimiser's pick of each); transpose traffic (the thesis's E6 pattern; its 1024-processor
  backward Znode has 17,440 switches, beyond the model's speed). Claim: backward (the thesis's
  "negative") has lower delay than forward.
- ``e7``: super node scaling, the 64-processor level-2 optimum replicated m = 1, 2, 4, 8 times
  (64 to 512 processors; the thesis replicates its 512-processor optimum to 4096). Claims:
  against m = 1 the delay rises only slightly; it peaks at m = 2, then falls and settles at
  m = 4 and 8 (more side links); the throughput grows steadily with m (read here as the
  whole fabric's: peak x processors).
- ``e9``: layers l = 1, 2, 4 of the 4-level optimum for 256 processors (the thesis stacks
  z = (4,4,4,32), R = (1,4,16,64) at 2048 processors). Claim: more layers give lower delay
  and higher throughput.

    .venv/bin/python bench/znode_studies.py [e1 e2 e5 e5h e5sd e5sdh e6 e7 e9]
        [-o build/znode-studies] [--workers 2] [--cycles 2000] [--warmup 500] [--seeds 1]
        [--rates 0.1 0.2 ...]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import yaml
from zfabric.sim.sweep import knee

from zfabric.cli import main as zfabric_main
from zfabric.cli.common import OutputFolder
from zfabric.optimise import optimise_level, spec_for

RATES = [round(0.1 * i, 1) for i in range(1, 10)]
#: the load (flits/cycle/endpoint) each study's delay claims are read at
REFERENCE_LOAD = 0.3


def _pick(processors: int, levels: int, connectivity: str = "forward") -> dict[str, Any]:
    result = optimise_level(processors, levels, connectivity=connectivity)
    if result is None:
        raise SystemExit(f"no {connectivity} Znode of {levels} levels for {processors} processors")
    return spec_for(result.pick, 64, connectivity)


def _named(spec: dict[str, Any], name: str) -> dict[str, Any]:
    return {"spec": {**spec, "name": name, "buffer_depth": 4}}


def e1() -> dict[str, Any]:
    specs = [_named(_pick(512, n), f"oZ{n}") for n in range(2, 7)]
    specs.append(
        _named({"topology": {"kind": "znode", "z": [8, 64], "R": [1, 8]}}, "oZ2-thesis-8x64")
    )
    specs.append(_named({"topology": {"kind": "kary_ntree", "k": 8, "n": 3}}, "8-ary-3-tree"))
    return {"name": "e1-optimum-level", "specs": specs, "traffic": {"patterns": ["uniform"]}}


def e2() -> dict[str, Any]:
    specs = [_named(_pick(1024, n), f"oZ{n}") for n in range(2, 7)]
    return {"name": "e2-optimum-level-1024", "specs": specs, "traffic": {"patterns": ["uniform"]}}


#: E5's addressing schemes, as the thesis names them -> our routing
SCHEMES = {
    "flat": "flat",
    "source-destination": "source_destination",
    "destination": "updown",
    "sliced": "sliced",
}
#: E5's flit: the routing-head bits one flit carries (a 32-bit message is 4 payload flits)
E5_HEAD_BITS = 8
#: cycles a saturated E5 point drains before it stops (the verdict is saturated either way):
#: a jammed 1024-endpoint fabric costs the model most per cycle
E5_DRAIN = 300


#: E5's schemes in ``e5`` and ``e5h``: source-destination heads carry the source, so the
#: analysis's route graph (zfabric.sim.analytic, the bound and zero-load latency of every
#: point) shares no state between sources under an all-pairs pattern: 640 CPU s of set-up a
#: point under uniform at 1024 endpoints (120 MiB). It runs in ``e5sd``, under neighbour and
#: uniform traffic
ALL_PAIRS_SCHEMES = ("flat", "destination", "sliced")


def _e5_specs(schemes: Sequence[str]) -> list[dict[str, Any]]:
    z3 = {"kind": "znode", "z": [8, 8, 16], "R": [1, 8, 64]}
    return [
        {
            "spec": {
                "name": scheme,
                "topology": z3,
                "routing": SCHEMES[scheme],
                "router": {"head_bits": E5_HEAD_BITS},
                "buffer_depth": 6,
            }
        }
        for scheme in schemes
    ]


def e5() -> dict[str, Any]:
    return {
        "name": "e5-addressing",
        "specs": _e5_specs(ALL_PAIRS_SCHEMES),
        "traffic": {
            "patterns": ["uniform", "neighbour"],
            "rates": [0.1, 0.25, 0.4],
            "drain_limit": E5_DRAIN,
        },
    }


def e5h() -> dict[str, Any]:
    """E5 under hotspot traffic: a fifth of all packets to endpoint 0, whose ejection link
    saturates near 1 / (0.2 x 1024) = 0.0049 flits/cycle/endpoint, hence loads of its own."""
    return {
        "name": "e5-addressing-hotspot",
        "specs": _e5_specs(ALL_PAIRS_SCHEMES),
        "traffic": {
            "patterns": ["hotspot"],
            "rates": [0.001, 0.002, 0.003, 0.004],
            "drain_limit": E5_DRAIN,
        },
    }


def e6() -> dict[str, Any]:
    specs = [_named(_pick(512, 3, c), c) for c in ("forward", "backward", "full")]
    return {"name": "e6-connectivity", "specs": specs, "traffic": {"patterns": ["transpose"]}}


def e7() -> dict[str, Any]:
    base = _pick(64, 2)["topology"]
    specs = [_named({"topology": {**base, "znodes": m}}, f"m{m}") for m in (1, 2, 4, 8)]
    return {"name": "e7-super-node", "specs": specs, "traffic": {"patterns": ["uniform"]}}


def e9() -> dict[str, Any]:
    base = _pick(256, 4)["topology"]
    specs = [_named({"topology": {**base, "layers": n}}, f"l{n}") for n in (1, 2, 4)]
    return {"name": "e9-layers", "specs": specs, "traffic": {"patterns": ["uniform"]}}


def _summary(
    records: Sequence[dict[str, Any]], *, by_pattern: bool = False
) -> dict[str, dict[str, Any]]:
    """Per spec (per spec and pattern, ``spec/pattern``, with ``by_pattern``): zero-load
    latency, mean latency at :data:`REFERENCE_LOAD`, the curve, knee, peak, and the pattern's
    channel-load bound with the channel that sets it."""
    by_spec: dict[str, list[dict[str, Any]]] = {}
    for row in records:
        if row["status"] == "ok":
            key = f"{row['spec']}/{row['pattern']}" if by_pattern else row["spec"]
            by_spec.setdefault(key, []).append(row)
    summary = {}
    for spec, rows in by_spec.items():
        rows.sort(key=lambda r: r["rate"])
        at = [r["latency_mean"] for r in rows if abs(r["rate"] - REFERENCE_LOAD) < 1e-9]
        summary[spec] = {
            "zero_load": rows[0]["limits_zero_load_latency"],
            "latency": statistics.median(at) if at else None,
            "knee": knee(rows),
            "peak": max(r["accepted"] for r in rows),
            "bound": rows[0]["limits_bound"],
            # rate -> (mean latency, saturated), for claims read at every load
            "curve": {r["rate"]: (r["latency_mean"], bool(r["saturated"])) for r in rows},
            "limited_by": rows[0]["limits_limited_by"],
        }
    return summary


def _print_curves(summary: dict[str, dict[str, Any]], rates: Sequence[float]) -> None:
    """One row per curve: zero-load latency, the mean latency at each load (``*``: the model
    judged that point saturated), peak accepted throughput and the channel-load bound."""
    print(
        f"{'spec/pattern':<28} {'zero-load':>9} "
        + " ".join(f"{f'lat@{r}':>10}" for r in rates)
        + f" {'peak':>7} {'bound':>6}"
    )
    for key, row in summary.items():
        cells = []
        for rate in rates:
            point = row["curve"].get(rate)
            cells.append(f"{'-' if point is None else f'{point[0]:.2f}' + '*' * point[1]:>10}")
        print(
            f"{key:<28} {row['zero_load']:>9.2f} {' '.join(cells)} {row['peak']:>7.4f}"
            f" {row['bound']:>6.3f}"
        )


def _verdict(ok: bool) -> str:
    return "reproduced" if ok else "NOT reproduced"


def claims_e1(s: dict[str, dict[str, Any]]) -> list[str]:
    levels = [f"oZ{n}" for n in range(2, 7)]
    best = min(levels, key=lambda name: s[name]["latency"])
    top = max(levels, key=lambda name: s[name]["knee"] or 0)
    return [
        f"level 2 lowest delay at {REFERENCE_LOAD} (lowest: {best}): {_verdict(best == 'oZ2')}",
        f"level 2 highest throughput (highest knee: {top}): "
        + _verdict(s["oZ2"]["knee"] == s[top]["knee"]),
        "the optimum (oZ2) beats the 8-ary 3-tree in delay: "
        + _verdict(s["oZ2"]["latency"] < s["8-ary-3-tree"]["latency"]),
    ]


def claims_e2(s: dict[str, dict[str, Any]]) -> list[str]:
    middle, ends = ["oZ3", "oZ4", "oZ5"], ["oZ2", "oZ6"]
    worst_middle = max(s[name]["latency"] for name in middle)
    best_end = min(s[name]["latency"] for name in ends)
    knees = {name: s[name]["knee"] or 0 for name in middle + ends}
    best = min(middle + ends, key=lambda name: (s[name]["latency"], -knees[name]))
    shown = ", ".join(f"{name} {s[name]['latency']:.2f}" for name in sorted(knees))
    return [
        f"levels 3-5 lower delay at {REFERENCE_LOAD} than levels 2 and 6 ({shown}): "
        + _verdict(worst_middle < best_end),
        "levels 3-5 higher throughput than levels 2 and 6 (knees "
        + ", ".join(f"{name} {knees[name]:.2f}" for name in sorted(knees))
        + "): "
        + _verdict(min(knees[name] for name in middle) > max(knees[name] for name in ends)),
        f"level 3 the best (lowest delay at {REFERENCE_LOAD}, then highest knee: {best}): "
        + _verdict(best == "oZ3"),
    ]


def e5sd() -> dict[str, Any]:
    """E5's source-destination scheme, and sliced beside it, under neighbour and uniform
    traffic (uniform: minutes of set-up a point, see ``ALL_PAIRS_SCHEMES``)."""
    return {
        "name": "e5-addressing-sd",
        "specs": _e5_specs(("source-destination", "sliced")),
        "traffic": {
            "patterns": ["neighbour", "uniform"],
            "rates": [0.1, 0.25, 0.4],
            "drain_limit": E5_DRAIN,
        },
    }


def e5sdh() -> dict[str, Any]:
    """E5's source-destination scheme, and sliced beside it, under hotspot traffic at
    ``e5h``'s loads."""
    return {
        **e5h(),
        "name": "e5-addressing-sd-hotspot",
        "specs": _e5_specs(("source-destination", "sliced")),
    }


def claims_e5(s: dict[str, dict[str, Any]]) -> list[str]:
    """Per pattern: at every load sliced is not saturated at, its mean latency is below every
    other scheme's run (a scheme saturated there counts as higher)."""
    lines = []
    for pattern in sorted({key.split("/")[1] for key in s}):
        ran = [scheme for scheme in SCHEMES if f"{scheme}/{pattern}" in s]
        curves = {scheme: s[f"{scheme}/{pattern}"]["curve"] for scheme in ran}
        beaten = []
        loads = [rate for rate, (_, saturated) in curves["sliced"].items() if not saturated]
        for rate in loads:
            mine = curves["sliced"][rate][0]
            for scheme, curve in curves.items():
                other = curve.get(rate)
                if scheme != "sliced" and other and not other[1] and other[0] <= mine:
                    beaten.append(f"{scheme} at {rate}")
        order = sorted(ran, key=lambda name: s[f"{name}/{pattern}"]["zero_load"])
        lines.append(
            f"{pattern}: sliced lowest latency at every load below saturation"
            f" ({', '.join(map(str, loads))}; zero-load order {' < '.join(order)}): "
            + _verdict(bool(loads) and not beaten)
            + (f" (beaten by {', '.join(beaten)})" if beaten else "")
        )
    return lines


def claims_e6(s: dict[str, dict[str, Any]]) -> list[str]:
    return [
        "backward has lower delay than forward at "
        f"{REFERENCE_LOAD}: {_verdict(s['backward']['latency'] < s['forward']['latency'])}"
    ]


def claims_e7(s: dict[str, dict[str, Any]]) -> list[str]:
    names = ["m1", "m2", "m4", "m8"]
    delays = [s[n]["latency"] for n in names]
    totals = [s[n]["peak"] * 64 * m for n, m in zip(names, (1, 2, 4, 8), strict=True)]
    shown = ", ".join(f"{d:.2f}" for d in delays)
    return [
        f"delay at {REFERENCE_LOAD} rises only slightly over m = 1 ({shown}; at most"
        f" {max(delays) / delays[0]:.2f}x): {_verdict(max(delays) < 1.25 * delays[0])}",
        "delay peaks at m = 2, then falls: "
        + _verdict(delays[1] == max(delays[1:]) and delays[2] < delays[1]),
        "the whole fabric's throughput grows with m (peak x processors "
        + ", ".join(f"{t:.0f}" for t in totals)
        + f" flits/cycle): {_verdict(totals == sorted(totals) and totals[-1] > totals[0])}",
    ]


def claims_e9(s: dict[str, dict[str, Any]]) -> list[str]:
    names = ["l1", "l2", "l4"]
    latencies = [s[n]["latency"] for n in names]
    knees = [s[n]["knee"] or 0 for n in names]
    return [
        f"delay falls with layers ({', '.join(f'{v:.2f}' for v in latencies)}): "
        + _verdict(latencies == sorted(latencies, reverse=True) and latencies[-1] < latencies[0]),
        f"throughput rises with layers (knees {', '.join(f'{v:.2f}' for v in knees)}): "
        + _verdict(knees == sorted(knees) and knees[-1] > knees[0]),
    ]


STUDIES: dict[str, tuple[Callable[[], dict], Callable[[dict], list[str]]]] = {
    "e1": (e1, claims_e1),
    "e2": (e2, claims_e2),
    "e5": (e5, claims_e5),
    "e5h": (e5h, claims_e5),
    "e5sd": (e5sd, claims_e5),
    "e5sdh": (e5sdh, claims_e5),
    "e6": (e6, claims_e6),
    "e7": (e7, claims_e7),
    "e9": (e9, claims_e9),
}


def run(name: str, args: argparse.Namespace) -> None:
    build, claims = STUDIES[name]
    study = build()
    traffic = study["traffic"]
    own_rates = "rates" in traffic  # e5: a few loads, unrefined, each read in the claims
    if not own_rates:
        traffic |= {"rates": args.rates, "refine": 0.02}
    traffic |= {"seeds": args.seeds, "warmup": args.warmup, "cycles": args.cycles}
    study["plot"] = f"{study['name']}.png"
    folder = OutputFolder(Path(args.output) / study["name"], "-o", exclusive=False)
    folder.check(["study.yaml"])
    with folder.staging() as staging:
        plain = json.loads(json.dumps(study))  # no YAML anchors for the lists specs share
        (staging / "study.yaml").write_text(yaml.safe_dump(plain, sort_keys=False, width=100))
        folder.commit(staging)
    status = zfabric_main(
        ["study", str(folder.path / "study.yaml"), "-o", str(folder.path), "--workers",
         str(args.workers)]
    )  # fmt: skip
    if status:
        raise SystemExit(status)
    rows = [json.loads(line) for line in (folder.path / "table.jsonl").read_text().splitlines()]
    summary = _summary(rows, by_pattern=own_rates)
    depths = sorted({entry["spec"]["buffer_depth"] for entry in study["specs"]})
    heads = sorted(
        {str(e["spec"].get("router", {}).get("head_bits", "whole")) for e in study["specs"]}
    )
    print(f"\n# {study['name']}: {', '.join(study['traffic']['patterns'])} traffic, 4-flit"
          f" packets, {'/'.join(map(str, depths))}-flit buffers, head bits per flit"
          f" {'/'.join(heads)}, warm-up {args.warmup}, window {args.cycles} cycles,"
          f" seeds {args.seeds}; knee: the model's verdict"
          f"{'' if own_rates else ', bisected to 0.02'};"
          f" plot {folder.path / study['plot']}")  # fmt: skip
    if own_rates:
        _print_curves(summary, traffic["rates"])
        for line in claims(summary):
            print(f"claim: {line}")
        return
    print(
        f"{'spec':<18} {'zero-load':>9} {f'lat@{REFERENCE_LOAD}':>9} {'knee':>6} {'peak':>6}"
        f" {'bound':>6}  limited by"
    )
    for spec, row in summary.items():
        latency = "-" if row["latency"] is None else f"{row['latency']:.2f}"
        knee = "-" if row["knee"] is None else f"{row['knee']:.2f}"
        print(
            f"{spec:<18} {row['zero_load']:>9.2f} {latency:>9} {knee:>6} {row['peak']:>6.3f}"
            f" {row['bound']:>6.3f}  {row['limited_by']}"
        )
    missing = [spec for spec, row in summary.items() if row["latency"] is None]
    if missing or len(summary) < len(study["specs"]):
        print(f"claims not judged: no point at {REFERENCE_LOAD} for {', '.join(missing) or 'some'}")
        return
    for line in claims(summary):
        print(f"claim: {line}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("studies", nargs="*", metavar="STUDY", help=f"any of {', '.join(STUDIES)}")
    parser.add_argument("-o", "--output", default="build/znode-studies")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--cycles", type=int, default=2000)
    parser.add_argument("--warmup", type=int, default=500)
    parser.add_argument("--seeds", type=int, nargs="+", default=[1])
    parser.add_argument(
        "--rates",
        type=float,
        nargs="+",
        default=RATES,
        help="the grid of the studies without loads of their own (e5 has its own), before the "
        "knee's bisection; a saturated point costs the model most, so stop the grid near it",
    )
    args = parser.parse_args()
    unknown = [name for name in args.studies if name not in STUDIES]
    if unknown:
        parser.error(f"unknown study {unknown[0]!r}: choose from {', '.join(STUDIES)}")
    for name in args.studies or STUDIES:
        run(name, args)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
