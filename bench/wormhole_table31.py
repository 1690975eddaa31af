"""App. A1 latency model (Ould-Khaoua, new VC method) next to the thesis's Table 3.1.

Table 3.1 (N. Alzeidi, 2007) is simulation data for an 8-ary 2-cube
(unidirectional formulation), V=5 virtual channels, M=16-flit messages, Duato adaptive routing.
Columns: config, rate, table value, model value, error %. Last line: the worst error.

    .venv/bin/python bench/wormhole_table31.py [--method new|dally] [--pd-escape-factor 2|1]
"""

from __future__ import annotations

import argparse

from zfabric.sim.wormhole_analytic import ould_khaoua_latency, saturation_rate

K, N, V, M = 8, 2, 5, 16

# N. Alzeidi, 2007, Table 3.1: λ_g, simulated mean latency
TABLE_3_1 = [
    (0.0001, 23.348),
    (0.0005, 24.37),
    (0.001, 25.819),
    (0.002, 29.332),
    (0.0025, 31.268),
    (0.004, 37.365),
    (0.005, 41.57),
    (0.006, 44.32),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--method", choices=["new", "dally"], default="new")
    parser.add_argument("--pd-escape-factor", type=int, choices=[1, 2], default=2)
    args = parser.parse_args()
    config = f"{K}-ary {N}-cube uni V={V} M={M} {args.method}"
    knee = saturation_rate(K, N, V, M, args.method, pd_escape_factor=args.pd_escape_factor)
    print(f"# App. A1 model, P_d escape factor {args.pd_escape_factor}, saturation at λ={knee:.5f}")
    print(f"{'config':<32} {'rate':>7} {'table':>8} {'model':>8} {'error %':>8}")
    worst = None
    for rate, table in TABLE_3_1:
        prediction = ould_khaoua_latency(
            K, N, V, M, rate, args.method, pd_escape_factor=args.pd_escape_factor
        )
        if prediction is None:
            print(f"{config:<32} {rate:>7} {table:>8.3f} {'sat':>8} {'-':>8}")
            worst = (float("inf"), rate)
            continue
        error = 100.0 * (prediction.latency - table) / table
        print(f"{config:<32} {rate:>7} {table:>8.3f} {prediction.latency:>8.2f} {error:>+8.2f}")
        if worst is None or abs(error) > abs(worst[0]):
            worst = (error, rate)
    print(f"worst error {worst[0]:+.2f}% at λ={worst[1]} ({config})")


if __name__ == "__main__":
    main()
