"""RN1 circuit mode on built Transit plans (A. DeHon, "Fat-Tree Routing for Transit", 1990,
§1.3): a lone circuit takes its route's chips (the latency model's stages) and always gets
through; contention drops set-ups only where every output of a direction is taken; a
processor's two outputs bound the circuits reaching it at once; runs are reproducible."""

from __future__ import annotations

from functools import cache

import pytest
from zfabric.sim.rn1_circuit import CircuitNetwork
from zfabric.sim.traffic import TrafficConfig, destination_function, fabric_levels, pair_level
from zfabric.sim.transit_analytic import terms

from zfabric import compile_plan
from zfabric.routing.transit import params_of
from zfabric.spec import spec_from_dict
from zfabric.traffic_spec import locality_probabilities


@cache
def transit(form: str, **keys):
    keys = {key: list(value) if isinstance(value, tuple) else value for key, value in keys.items()}
    return compile_plan(
        spec_from_dict({"name": "t", "topology": {"kind": "transit", "form": form, **keys}})
    )


class Counting(CircuitNetwork):
    """Records every output taken, to check that no two circuits share one."""

    def __init__(self, plan, **kwargs):
        super().__init__(plan, **kwargs)
        self.outputs_taken: list[tuple[int, int]] = []

    def _advance(self, state, held):
        verdict, output, after = super()._advance(state, held)
        if output is not None:
            assert output not in held, output
            self.outputs_taken.append(output)
        return verdict, output, after


@pytest.mark.parametrize(
    "form, keys", [("full", {}), ("bidelta", {"stacks": (2, 2)}), ("hybrid", {"leaf_stages": 2})]
)
def test_a_lone_circuit_takes_its_routes_chips_and_gets_through(form, keys):
    """Every pair alone in the network (the hybrid: a sample of sources): reached, through
    the chips the latency model counts at the pair's level (a hybrid's level 1 is the
    model's 0)."""
    plan = transit(form, **keys)
    params = params_of(plan)
    zones = fabric_levels(plan)
    n = len(plan.endpoints)
    hybrid = form == "hybrid"
    network = Counting(plan)
    for src in range(0, n, 37 if hybrid else 1):
        for dst in range(0, n, 5 if hybrid else 1):
            if dst == src:
                continue
            network.outputs_taken.clear()
            result = network.one_round(
                1.0, lambda s, src=src, dst=dst: dst if s == src else None, lambda s, d: 0
            )
            assert result.reached == {0: 1}, (src, dst)
            level = 0 if form == "bidelta" else pair_level(src, dst, zones) - hybrid
            assert len(network.outputs_taken) == terms(params, level).stages, (src, dst)


def test_a_processors_two_outputs_bound_the_circuits_reaching_it():
    """Every other processor opens a circuit to processor 0 at once: each output is taken
    once at most, and at most two circuits (its two outputs) reach it; at least one does."""
    plan = transit("full")
    for seed in range(5):
        network = Counting(plan, seed=seed)
        result = network.one_round(1.0, lambda s: None if s == 0 else 0, lambda s, d: 0)
        assert result.tried == {0: 63}
        assert 1 <= result.reached[0] <= 2
        assert len(set(network.outputs_taken)) == len(network.outputs_taken)


def test_a_set_up_is_dropped_only_when_its_directions_outputs_are_all_taken():
    """Under full uniform load, at every drop every candidate output of the chip was held."""
    plan = transit("full")

    class Checked(CircuitNetwork):
        drops = 0

        def _advance(self, state, held):
            verdict, output, after = super()._advance(state, held)
            if verdict == "dropped":
                candidates, _ = self._step(*state)
                assert candidates and all((c[0], c[1]) in held for c in candidates)
                Checked.drops += 1
            return verdict, output, after

    network = Checked(plan, seed=3)
    uniform = destination_function(TrafficConfig(), 64, network.rng)
    result = network.one_round(1.0, uniform, lambda s, d: 0)
    assert Checked.drops == result.tried[0] - result.reached[0] > 0


def locality_run(seed: int, load: float, timed: bool):
    plan = transit("full")
    zones = fabric_levels(plan)
    config = TrafficConfig(
        pattern="locality", zones=zones, level_weights=locality_probabilities("transit-full-64")
    )
    network = CircuitNetwork(plan, seed=seed)
    destination = destination_function(config, 64, network.rng)

    def level(src, dst):
        return 0

    if timed:
        return network.run(load, destination, level, warmup=100, cycles=400)
    return network.one_round(load, destination, level)


def test_runs_are_reproducible_and_contention_grows_with_load():
    assert locality_run(5, 1.0, True) == locality_run(5, 1.0, True)

    def pooled(load: float) -> float:
        rounds = [locality_run(seed, load, False) for seed in range(40)]
        return sum(r.reached[0] for r in rounds if r.tried) / sum(
            r.tried[0] for r in rounds if r.tried
        )

    assert pooled(0.05) > 0.95 > pooled(1.0)
    timed = locality_run(1, 1.0, True)
    assert timed.delivered > 0 and timed.tries_per_message > 1


def test_bad_arguments_are_refused():
    plan = transit("full")
    with pytest.raises(ValueError, match="load must be in"):
        CircuitNetwork(plan).one_round(0, lambda s: 1, lambda s, d: 0)
    with pytest.raises(ValueError, match="wire_delay"):
        CircuitNetwork(plan, wire_delay=-1)
    torus = compile_plan(spec_from_dict({"name": "t", "topology": {"kind": "torus", "k": [4]}}))
    with pytest.raises(ValueError, match="Transit plan"):
        CircuitNetwork(torus)


def expected_first_stage_drops(top_digits: list[int], processors: int) -> float:
    """Set-ups dropped at a dilated first-stage chip, expected, by enumeration: each input's
    processor sends on it with probability 1/2 (it has two inputs), to a destination uniform
    over the others, whose top base-4 digit is the direction (16 of the 63 others in each
    group but its own, which holds 15); a direction takes two, the rest are dropped."""
    per_group = processors // 4
    counts: dict[tuple[int, ...], float] = {(0, 0, 0, 0): 1.0}
    for own in top_digits:
        ways = [(None, 0.5)] + [
            (d, 0.5 * (per_group - (d == own)) / (processors - 1)) for d in range(4)
        ]
        grown: dict[tuple[int, ...], float] = {}
        for state, p in counts.items():
            for d, q in ways:
                after = state if d is None else tuple(x + (i == d) for i, x in enumerate(state))
                grown[after] = grown.get(after, 0.0) + p * q
        counts = grown
    return sum(p * sum(max(0, x - 2) for x in state) for state, p in counts.items())


def test_first_stage_drops_of_a_bidelta_match_enumeration():
    """Bidelta 64 fully loaded under uniform traffic: the share of set-ups dropped at the first
    stage is what enumerating one chip's inputs gives, within 4 standard errors over rounds."""
    plan = transit("bidelta", stacks=(3,))
    first: dict[int, list[int]] = {}
    for endpoint in plan.endpoints:
        for i, attachment in enumerate(endpoint.attachments):
            if endpoint.injects(i):
                first.setdefault(attachment.switch, []).append(endpoint.id // 16)
    expected = sum(expected_first_stage_drops(d, 64) for d in first.values()) / 64

    class Stage1(CircuitNetwork):
        drops = 0

        def _advance(self, state, held):
            verdict, output, after = super()._advance(state, held)
            Stage1.drops += verdict == "dropped" and state[0] in first
            return verdict, output, after

    network = Stage1(plan, seed=9)
    uniform = destination_function(TrafficConfig(), 64, network.rng)
    shares = []
    for _ in range(400):
        Stage1.drops = 0
        result = network.one_round(1.0, uniform, lambda s, d: 0)
        shares.append(Stage1.drops / result.tried[0])
    mean = sum(shares) / len(shares)
    error = (sum((s - mean) ** 2 for s in shares) / (len(shares) - 1) / len(shares)) ** 0.5
    assert abs(mean - expected) < 4 * error, (mean, expected, error)
