"""Chapter 6 of Alzeidi's thesis with its own models: each stated conclusion reproduced or not.

The chapter compares, with the chapter 4 and 5 models and Chien's router delays
(:mod:`zfabric.sim.wormhole_cost`), unidirectional 2-D and 3-D tori and the hypercube of 64, 256
and 1024 nodes under constant bisection width and constant pin-out (§6.4), deep against
parallel buffers at a fixed buffer per channel (§6.5), and adaptive against dimension-order
routing (§6.6). Its figures are lost; what is checked are the sentences that state a result
(N. Alzeidi, 2007, §6.4-§6.6). Everything is model output
(no simulation), so the figures are exact for the stated conditions.

Conditions: chapter 5 (Duato) model for "adaptive", chapter 4 for DOR, new VC method, the
thesis's equations as printed (P_d factor 2, chapter 5's d̄ with the source); unidirectional
cubes (the 3-D tori of 256 and 1024 nodes are 6x6x6 and 10x10x10, Table 6.1's approximations);
timing: a flit ``t_c`` a channel, a header ``t_r + t_s + t_c`` a hop; ``--hold channel``
(default) lets each effective channel hold a channel ``t_c`` more (the delays move latency,
not saturation), ``--hold header`` the header's whole delay (the thesis's routing cycle, L1543).
Saturation: the highest ``λ_g`` at which the model converges, bisected to 0.5 %. "Light
load": 10 % of the lowest saturation rate of the networks compared. A conclusion is
*reproduced* when every case it names comes out as stated.

    .venv/bin/python bench/wormhole_ch6.py [--hold channel|header]
        [--sections cost topology buffers arrangement routing]
"""

from __future__ import annotations

import argparse
import functools
import math
import time

from zfabric.sim.wormhole_cost import (
    CONSTRAINTS,
    adaptive_delays,
    channel_cycle,
    dor_delays,
    equal_buffer_vcs,
    network_timing,
    routing_delay,
    switching_delay,
)
from zfabric.sim.wormhole_dor import dor_latency, dor_saturation_rate
from zfabric.sim.wormhole_duato import duato_latency, duato_saturation_rate
from zfabric.sim.wormhole_finite import Cube

PRECISION = 0.005
LIGHT = 0.1
SIZES = (64, 256, 1024)
# Table 6.2 (L1867-1875): topology -> N -> (V, t_r, t_c bisection, t_c pin-out)
TABLE_6_2 = {
    "2D torus": {64: (6, 1.8, 1, 1), 256: (8, 1.9, 1, 1), 1024: (10, 2, 1, 1)},
    "3D torus": {64: (4, 1.7, 4, 3), 256: (5, 1.8, 6.3, 3.8), 1024: (7, 2, 10.1, 4.8)},
    "hypercube": {64: (2, 1.6, 8, 6), 256: (2, 1.7, 32, 16), 1024: (2, 1.8, 128, 40)},
}
verdicts: list[tuple[str, bool]] = []
HOLD = {"header": False}


def verdict(claim: str, reproduced: bool, detail: str) -> None:
    verdicts.append((claim, reproduced))
    print(f"  [{'reproduced' if reproduced else 'NOT reproduced'}] {claim}\n      {detail}")


def cube(topology: str, nodes: int) -> Cube:
    n = round(math.log2(nodes))
    if topology == "hypercube":
        return Cube((2,) * n, "unidirectional")
    dims = 2 if topology == "2D torus" else 3
    return Cube((round(nodes ** (1 / dims)),) * dims, "unidirectional")


@functools.cache
def network(topology, nodes, constraint, vcs, depth, length, routing="adaptive", cascaded=True):
    """(saturation λ_g, latency function) of one configuration (cached: reused by sections);
    ``constraint`` "none" is a channel of one cycle a flit (§6.5, §6.6)."""
    shape = cube(topology, nodes)
    if routing == "adaptive":
        t_r, t_s = adaptive_delays(topology, len(shape.radices), vcs)
    else:
        t_r, t_s = dor_delays(vcs)
        if not cascaded:  # a full crossbar, as the adaptive router's (L2002)
            t_s = adaptive_delays(topology, len(shape.radices), vcs)[1]
    channel = 1.0 if constraint == "none" else channel_cycle(topology, nodes, constraint)
    timing = network_timing(channel, t_r, t_s, header_holds=HOLD["header"])
    solve, saturate = (
        (duato_latency, duato_saturation_rate)
        if routing == "adaptive"
        else (dor_latency, dor_saturation_rate)
    )
    saturation = saturate(shape, vcs, length, depth, relative_precision=PRECISION, timing=timing)

    def latency(rate: float) -> float | None:
        prediction = solve(shape, vcs, length, depth, rate, timing=timing)
        return None if prediction is None else prediction.latency

    return saturation, latency


def section_cost() -> None:
    print("\n== cost model (§6.3, §6.4.1, §6.4.2; Table 6.2) ==")
    worst = 0.0
    for topology, sizes in TABLE_6_2.items():
        for nodes, (vcs, t_r, bisection, pinout) in sizes.items():
            ours_v = equal_buffer_vcs(topology, nodes)
            ours_r = adaptive_delays(topology, len(cube(topology, nodes).radices), ours_v)[0]
            ours_b = channel_cycle(topology, nodes, "bisection")
            ours_p = channel_cycle(topology, nodes, "pin-out")
            print(
                f"  {topology:<9} N={nodes:<5} V {ours_v} ({vcs})  t_r {ours_r:.3f} ({t_r})"
                f"  t_c bisection {ours_b:.2f} ({bisection})  pin-out {ours_p:.2f} ({pinout})"
            )
            worst = max(worst, abs(ours_v - vcs), abs(ours_r - t_r) / 0.05)
            worst = max(worst, abs(ours_b - bisection) / 0.05, abs(ours_p - pinout) / 0.05)
    verdict(
        "Table 6.2: V, t_r and t_c of every topology and size (to the table's rounding)",
        worst <= 1.0,
        "values above (the table's in parentheses); pin-out t_c from 1.5 N^(1/6) and"
        " n N^(1/2)/8, as printed (6.6)-(6.7) gives 3 N^(1/3) = 12 and n N^(1/2) = 48 at N=64",
    )
    hyper = switching_delay(8 * 7 + 1) / switching_delay(7 + 1) - 1
    torus = switching_delay(2 * 7 + 1) / switching_delay(7 + 1) - 1
    verdict(
        "switching delay with 7 VCs: adaptive 33 % above DOR in the hypercube, 10 % in the"
        " 2D torus (L2004)",
        round(100 * hyper) == 33 and round(100 * torus) == 10,
        f"{100 * hyper:.1f} % (57 ports against 8) and {100 * torus:.1f} % (15 against 8)",
    )
    hops = {f"{k}x{k}": Cube((k, k), "unidirectional").mean_hops_with_self() for k in (8, 16, 32)}
    hyper_hops = {n: Cube((2,) * n, "unidirectional").mean_hops_with_self() for n in (6, 10)}
    verdict(
        "mean hops 7 (8x8), 15 (16x16), 31 (32x32), hypercube 3 (N=64) and 5 (N=1024)"
        " (L1884, L1886, L1983)",
        [round(h) for h in (*hops.values(), *hyper_hops.values())] == [7, 15, 31, 3, 5],
        ", ".join(f"{k} {h:g}" for k, h in hops.items())
        + f", hypercube {hyper_hops[6]:g} and {hyper_hops[10]:g}",
    )
    print(
        f"  (router delays in cycles: t_r of R=10 alternatives {routing_delay(10):.3f},"
        f" t_s of 13 ports {switching_delay(13):.3f})"
    )


def section_topology() -> None:
    print("\n== topologies under constant bisection width and pin-out (§6.4.3, M=48) ==")
    length = 48
    saturation = {}
    light = {}
    for nodes in SIZES:
        for constraint in CONSTRAINTS:
            for depth in (2, 4, 10):
                rates = {}
                for topology in TABLE_6_2:
                    vcs = equal_buffer_vcs(topology, nodes)
                    sat, _ = network(topology, nodes, constraint, vcs, depth, length)
                    rates[topology] = sat
                    saturation[nodes, constraint, depth, topology] = sat
                rate = LIGHT * min(rates.values())
                for topology in TABLE_6_2:
                    vcs = equal_buffer_vcs(topology, nodes)
                    light[nodes, constraint, depth, topology] = network(
                        topology, nodes, constraint, vcs, depth, length
                    )[1](rate)
                print(
                    f"  N={nodes:<5} {constraint:<9} F={depth:<3} saturation λ_g "
                    + "  ".join(f"{t} {rates[t]:.6f}" for t in TABLE_6_2)
                    + f"  | latency at λ_g={rate:.6f}: "
                    + "  ".join(f"{t} {light[nodes, constraint, depth, t]:.1f}" for t in TABLE_6_2)
                )

    def best(nodes, constraint, depth) -> str:
        return max(TABLE_6_2, key=lambda t: saturation[nodes, constraint, depth, t])

    cases = [(n, c, f) for n in SIZES for c in CONSTRAINTS for f in (2, 4, 10)]
    lowest = [min(TABLE_6_2, key=lambda t: light[case + (t,)]) for case in cases]
    verdict(
        "light load: the 2D torus has the lowest latency, every size, buffer and constraint"
        " (L1882, L2014)",
        all(t == "2D torus" for t in lowest),
        f"lowest at light load: {sum(t == '2D torus' for t in lowest)} of {len(cases)} cases"
        " the 2D torus",
    )
    small = [best(64, "bisection", f) for f in (2, 4, 10)]
    verdict(
        "constant bisection, N=64: the hypercube is best as the network nears saturation (L1882)",
        all(t == "hypercube" for t in small),
        f"highest saturation rate at F=2, 4, 10: {', '.join(small)}",
    )
    order = ["2D torus", "3D torus", "hypercube"]
    larger = [
        sorted(TABLE_6_2, key=lambda t: -saturation[n, "bisection", f, t])
        for n in (256, 1024)
        for f in (2, 4, 10)
    ]
    verdict(
        "constant bisection, N=256 and 1024: lower-dimensional networks are better (L1884)",
        all(o == order for o in larger),
        "saturation order (best first) at F=2, 4, 10: "
        + "; ".join("> ".join(t.split()[0] for t in o) for o in larger),
    )
    pinout = [best(n, "pin-out", f) for n in SIZES for f in (2, 4, 10)]
    verdict(
        "constant pin-out: the hypercube is best at every size (L1900, L2016)",
        all(t == "hypercube" for t in pinout),
        f"highest saturation rate, N=64/256/1024 x F=2/4/10: {', '.join(pinout)}",
    )

    def gain(nodes, constraint, topology) -> float:
        low = saturation[nodes, constraint, 4, topology]
        return 100 * (saturation[nodes, constraint, 10, topology] / low - 1)

    g64 = {t: gain(64, "bisection", t) for t in TABLE_6_2}
    verdict(
        "constant bisection, N=64, F 4 -> 10: maximum throughput +3.5 % in the 2D torus,"
        " under +0.25 % in the hypercube (L1886)",
        abs(g64["2D torus"] - 3.5) <= 1.0 and g64["hypercube"] < 0.25,
        f"2D torus {g64['2D torus']:+.2f} %, hypercube {g64['hypercube']:+.2f} %"
        f" (3D torus {g64['3D torus']:+.2f} %)",
    )
    g256 = {t: gain(256, "pin-out", t) for t in TABLE_6_2}
    thesis = {"2D torus": 9.62, "3D torus": 1.69, "hypercube": 0.41}
    verdict(
        "constant pin-out, N=256, F 4 -> 10: +9.62 % (2D), +1.69 % (3D), +0.41 % (hypercube)"
        " (L1909), each within a third",
        all(abs(g256[t] - v) <= v / 3 for t, v in thesis.items()),
        ", ".join(f"{t} {g256[t]:+.2f} %" for t in TABLE_6_2),
    )
    verdict(
        "lower-dimensional tori gain more from deeper buffers: 2D > 3D > hypercube (L1886, L1909)",
        all(
            gain(n, c, "2D torus") > gain(n, c, "3D torus") > gain(n, c, "hypercube")
            for n in SIZES
            for c in CONSTRAINTS
        ),
        "; ".join(
            f"N={n} {c}: " + " ".join(f"{gain(n, c, t):+.2f}%" for t in TABLE_6_2)
            for n in SIZES
            for c in CONSTRAINTS
        ),
    )


def section_buffers() -> None:
    print("\n== saturation against F and M, 256 nodes (Figs 6.5-6.7) ==")
    depths = (2, 3, 4, 6, 8, 10, 12, 16, 24, 48)
    spread = {}
    highest = {}
    for constraint in CONSTRAINTS:
        rates = {
            t: [network(t, 256, constraint, equal_buffer_vcs(t, 256), f, 48)[0] for f in depths]
            for t in TABLE_6_2
        }
        for t, row in rates.items():
            print(f"  {constraint:<9} {t:<9} F={depths}: " + " ".join(f"{r:.6f}" for r in row))
        spread[constraint] = 100 * (max(rates["hypercube"]) / min(rates["hypercube"]) - 1)
        highest[constraint] = {
            max(TABLE_6_2, key=lambda t, i=i: rates[t][i]) for i in range(len(depths))
        }
    verdict(
        "the hypercube's saturation rate is almost unchanged by F (Fig 6.5, L1911): within 2 %"
        " from F=2 to 48",
        all(s <= 2.0 for s in spread.values()),
        ", ".join(f"{c}: {s:.2f} % spread" for c, s in spread.items()),
    )
    verdict(
        "Fig 6.5: highest saturation rate at every F, the 2D torus under bisection, the"
        " hypercube under pin-out (L1913)",
        highest["bisection"] == {"2D torus"} and highest["pin-out"] == {"hypercube"},
        f"best: bisection {sorted(highest['bisection'])}, pin-out {sorted(highest['pin-out'])}",
    )
    lengths = (10, 16, 24, 32, 48, 64, 96, 128)
    near = {}
    for t in TABLE_6_2:
        vcs = equal_buffer_vcs(t, 256)
        row = []
        for m in lengths:
            sat, latency = network(t, 256, "bisection", vcs, 4, m)
            row.append(latency(0.95 * sat))
        near[t] = row
        print(
            f"  bisection {t:<9} F=4 latency at 95 % of saturation, M={lengths}: "
            + " ".join(f"{x:.0f}" for x in row)
        )
    ratio = {t: near[t][-1] / near[t][0] for t in TABLE_6_2}
    verdict(
        "constant bisection, 256 nodes, F=4, M 10 -> 128: saturation latency x4 in the 2D"
        " torus, x14 in the hypercube (L1927), each within a third",
        abs(ratio["2D torus"] - 4) <= 4 / 3 and abs(ratio["hypercube"] - 14) <= 14 / 3,
        ", ".join(f"{t} x{r:.1f}" for t, r in ratio.items()) + " (latency at 95 % of saturation)",
    )
    xs, ys = lengths, near["hypercube"]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True))
    sxx = sum((x - mx) ** 2 for x in xs)
    syy = sum((y - my) ** 2 for y in ys)
    r2 = sxy * sxy / (sxx * syy)
    verdict(
        "the hypercube's saturation latency grows near linearly with M, and is the highest of"
        " the three at every M (L1925)",
        r2 >= 0.99
        and all(
            near["hypercube"][i] > max(near["2D torus"][i], near["3D torus"][i])
            for i in range(len(lengths))
        ),  # fmt: skip
        f"linear fit R² {r2:.4f}",
    )


def section_arrangement() -> None:
    print("\n== deep against parallel buffers, fixed buffer per channel (§6.5, t_c = 1) ==")
    results = {}
    for topology in ("2D torus", "hypercube"):
        least = 3 if topology == "2D torus" else 2
        for total in (24, 48, 96):
            for length in (48, 96):
                rows = []
                for vcs in range(least, total // 2 + 1):
                    depth = total // vcs
                    if depth * vcs != total or depth > length:
                        continue
                    sat, latency = network(topology, 256, "none", vcs, depth, length)
                    rows.append((vcs, depth, sat, latency))
                rate = LIGHT * min(r[2] for r in rows)
                rows = [(v, f, s, lat(rate)) for v, f, s, lat in rows]
                results[topology, total, length] = rows
                print(
                    f"  {topology:<9} {total:>2} flits/channel M={length}: "
                    + "  ".join(f"V{v}xF{f} sat {s:.6f} lat {x:.1f}" for v, f, s, x in rows)
                )
    light_ok = all(
        all(b[3] >= a[3] for a, b in zip(rows, rows[1:], strict=False))
        for (t, _, _), rows in results.items()
        if t == "2D torus"
    )
    verdict(
        "2D torus: at light load deeper buffers (fewer VCs) give lower latency (L1941)",
        light_ok,
        "latency at light load non-decreasing in V for every total and M",
    )

    def peak(total):
        rows = results["2D torus", total, 48]
        return max(rows, key=lambda r: r[2])[0]

    peaks = {total: peak(total) for total in (24, 96)}
    verdict(
        "2D torus, M=48: saturation rises with V up to 8 VCs (24 flits a channel) and 6 VCs"
        " (96 flits), then falls (L1947)",
        peaks == {24: 8, 96: 6},
        f"saturation peaks at V={peaks[24]} (24 flits) and V={peaks[96]} (96 flits)",
    )
    rising = all(
        all(b[2] >= a[2] for a, b in zip(rows, rows[1:], strict=False))
        for (t, _, _), rows in results.items()
        if t == "hypercube"
    )
    verdict(
        "hypercube: more VCs beat deeper buffers at moderate and high load (L1949)",
        rising,
        "saturation non-decreasing in V for every total and M",
    )
    deep = next(r for r in results["hypercube", 48, 48] if r[1] == 24)
    shallow = next(r for r in results["hypercube", 48, 48] if r[1] == 4)
    gain = 100 * (1 - deep[3] / shallow[3])
    verdict(
        "8D hypercube, M=48: 24-flit buffers a VC lower latency than 4-flit ones by less than"
        " 20 % (L1953; 48 flits a channel)",
        0 < gain < 20,
        f"V2xF24 {deep[3]:.1f} against V12xF4 {shallow[3]:.1f} cycles at light load:"
        f" {gain:.1f} % lower",
    )


def section_routing() -> None:
    print("\n== adaptive against dimension-order routing (§6.6, 256 nodes, t_c = 1) ==")
    mean = Cube((16, 16), "unidirectional").mean_hops_with_self()
    crossover = []
    for length in (48, 96):
        for depth in (2, 4, 10):
            for vcs in (3, 7):
                adaptive = network("2D torus", 256, "none", vcs, depth, length)
                dor = network("2D torus", 256, "none", vcs, depth, length, "dor")
                rate = LIGHT * min(adaptive[0], dor[0])
                a_light, d_light = adaptive[1](rate), dor[1](rate)
                wins = "adaptive" if adaptive[0] > dor[0] else "DOR"
                expected = "adaptive" if length / depth > mean else "DOR"
                crossover.append((length, depth, vcs, wins, expected))
                print(
                    f"  2D torus M={length} F={depth:<2} V={vcs}: saturation adaptive"
                    f" {adaptive[0]:.6f} DOR {dor[0]:.6f} ({wins}); light load"
                    f" adaptive {a_light:.1f} DOR {d_light:.1f}"
                )
                if (length, depth, vcs) == (48, 4, 7):
                    gap = a_light - d_light
                    verdict(
                        "light load, M=48, F=4, V=7: DOR lower than adaptive by at most 35"
                        " cycles (10 %) (L1979)",
                        0 < gap <= 35 and gap <= 0.10 * a_light,
                        f"adaptive {a_light:.1f}, DOR {d_light:.1f}: {gap:.1f} cycles"
                        f" ({100 * gap / a_light:.1f} %)",
                    )
    hits = sum(w == e for *_, w, e in crossover)
    verdict(
        f"2D torus: adaptive saturates later when M/F > d̄ = {mean:g}, DOR when M/F < d̄ (L1983)",
        hits == len(crossover),
        f"{hits} of {len(crossover)} cases as the rule says: "
        + "; ".join(f"M/F={m / f:g} V={v} {w}" for m, f, v, w, _ in crossover),
    )
    hyper = []
    for length in (48, 96):
        for depth in (2, 4, 10):
            for vcs in (3, 7):
                adaptive = network("hypercube", 256, "none", vcs, depth, length)[0]
                dor = network("hypercube", 256, "none", vcs, depth, length, "dor", False)[0]
                hyper.append(adaptive > dor)
    verdict(
        "8D hypercube with full crossbars: adaptive always saturates later than DOR (L1991)",
        all(hyper),
        f"{sum(hyper)} of {len(hyper)} cases (M=48, 96 x F=2, 4, 10 x V=3, 7)",
    )


SECTIONS = {
    "cost": section_cost,
    "topology": section_topology,
    "buffers": section_buffers,
    "arrangement": section_arrangement,
    "routing": section_routing,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hold", choices=["channel", "header"], default="channel")
    parser.add_argument("--sections", nargs="+", choices=list(SECTIONS), default=list(SECTIONS))
    args = parser.parse_args()
    HOLD["header"] = args.hold == "header"
    print(
        f"# chapter 6 with the thesis's models: --hold {args.hold}, saturation bisected to"
        f" {PRECISION:.1%}, light load {LIGHT:.0%} of the lowest saturation compared"
    )
    start = time.perf_counter()
    for name in args.sections:
        SECTIONS[name]()
    done = sum(ok for _, ok in verdicts)
    print(f"\n# {time.perf_counter() - start:.0f} s")
    print(f"reproduced {done} of {len(verdicts)} conclusions (--hold {args.hold})")


if __name__ == "__main__":
    main()
