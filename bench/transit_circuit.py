"""The probability that an RN1 circuit set-up gets through, against load and locality.

A. DeHon, "Fat-Tree Routing for Transit" (1990), §5.2.4: "the probability of obtaining a
successful route in a fully loaded network is in the 70 % to 80 % range even for networks with
three-quarters of a million processors", with the locality of its Tables 4.10-4.14 (§4.5,
Knight's unqueued model). ``sim/rn1_circuit.py`` sets circuits up through the chips of built
plans. For each network and traffic, two measures:

- one round (the thesis's unqueued measure): every processor opens a connection at once with
  probability ``load`` (1: fully loaded), nothing released; the fraction reaching its
  destination, pooled over rounds of at least ``--tries`` set-ups in all, with the standard
  error over rounds; at load 1 also per level;
- timed, with retries, at load 1: messages of ``--message-cycles`` cycles, a dropped set-up
  retried when its status is back; the fraction of set-ups that get through and the tries a
  delivered message took.
"""

from __future__ import annotations

import argparse
import math
import platform
import time

from zfabric.sim.rn1_circuit import CircuitNetwork, RoundResult
from zfabric.sim.traffic import TrafficConfig, destination_function, fabric_levels, pair_level

from zfabric import compile_plan, load_spec
from zfabric.traffic_spec import locality_probabilities

#: name -> (topology, the locality preset of its table; None: uniform only)
NETWORKS = {
    "full-64": ({"form": "full"}, "transit-full-64"),
    "full-4096": ({"form": "full", "ut_layers": 2}, "transit-full-4096"),
    "hybrid-768": ({"form": "hybrid", "leaf_stages": 2}, "transit-hybrid-1"),
    "hybrid-3072": ({"form": "hybrid", "leaf_stages": 3}, "transit-hybrid-1"),
    "bidelta-64": ({"form": "bidelta", "stacks": [3]}, None),
    "bidelta-256": ({"form": "bidelta", "stacks": [4]}, None),
}
LOADS = (0.25, 0.5, 0.75, 1.0)


def traffic(plan, preset: str | None) -> TrafficConfig:
    if preset is None:
        return TrafficConfig()
    zones = fabric_levels(plan)
    return TrafficConfig(
        pattern="locality", zones=zones, level_weights=locality_probabilities(preset)
    )


def pooled(network, config, load: float, tries: int, level) -> tuple[float, float, RoundResult]:
    """Rounds until ``tries`` set-ups: the pooled probability, its standard error over rounds
    (a round's set-ups are not independent), and the per-level counts."""
    n = len(network.plan.endpoints)
    destination = destination_function(config, n, network.rng)
    total, shares = RoundResult(), []
    while sum(total.tried.values()) < tries:
        result = network.one_round(load, destination, level)
        for k, count in result.tried.items():
            total.tried[k] = total.tried.get(k, 0) + count
            total.reached[k] = total.reached.get(k, 0) + result.reached[k]
        if result.tried:
            shares.append(result.probability)
    mean = sum(shares) / len(shares)
    spread = math.sqrt(sum((s - mean) ** 2 for s in shares) / (len(shares) - 1) / len(shares))
    return total.probability, spread, total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--networks", nargs="*", default=list(NETWORKS), choices=list(NETWORKS))
    parser.add_argument("--tries", type=int, default=20000)
    parser.add_argument("--message-cycles", type=int, default=16)
    parser.add_argument("--cycles", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    print(
        f"# {platform.python_implementation()} {platform.python_version()}; seed {args.seed};"
        f" one round: >= {args.tries} set-ups a point; timed: messages of"
        f" {args.message_cycles} cycles, wire delay 0, warm-up 200 + {args.cycles} cycles"
    )
    print("network | traffic | one round, load " + " / ".join(map(str, LOADS)) + " |"
          " load 1 per level | timed load 1: per try, tries a message | CPU s")  # fmt: skip
    for name in args.networks:
        topology, preset = NETWORKS[name]
        plan = compile_plan(load_spec({"name": name, "topology": {"kind": "transit", **topology}}))
        zones = fabric_levels(plan)

        def level(src, dst, zones=zones):
            return pair_level(src, dst, zones)

        for chosen in [preset, None] if preset else [None]:
            start = time.process_time()
            config = traffic(plan, chosen)
            cells, per_level = [], ""
            for load in LOADS:
                network = CircuitNetwork(plan, seed=args.seed)
                p, se, total = pooled(network, config, load, args.tries, level)
                cells.append(f"{p:.3f}±{se:.3f}")
                if load == 1.0:
                    per_level = ", ".join(f"{k}: {v:.2f}" for k, v in total.by_level().items())
            network = CircuitNetwork(plan, seed=args.seed)
            destination = destination_function(config, len(plan.endpoints), network.rng)
            timed = network.run(
                1.0,
                destination,
                level,
                message_cycles=args.message_cycles,
                warmup=200,
                cycles=args.cycles,
            )
            print(
                f"{name} | {chosen or 'uniform'} | {' / '.join(cells)} | {per_level} |"
                f" {timed.attempts.probability:.3f}, {timed.tries_per_message:.2f} |"
                f" {time.process_time() - start:.0f}"
            )


if __name__ == "__main__":
    main()
