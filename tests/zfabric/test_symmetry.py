"""The set-up through the fabric's symmetries (zfabric/symmetry.py): one destination per orbit
walked and mapped must give the full walk's results, a routing that breaks a declared symmetry
must be caught, and a declared map that is no automorphism refused."""

from __future__ import annotations

import dataclasses
import itertools
import math
import random

import numpy as np
import pytest
from zfabric.sim.analytic import pattern_limits
from zfabric.sim.traffic import TrafficConfig

from zfabric import analyse_routing, compile_plan, load_spec
from zfabric.deadlock import _map_footprint, _walk_footprints, symmetry_group_of
from zfabric.errors import PlanError
from zfabric.routing import ROUTINGS, Decision, Hop
from zfabric.routing.dor import DOR
from zfabric.symmetry import SymmetryGroup, distinct, symmetry_group
from zfabric.topologies.torus import translation
from zfabric.topologies.transit import digit_permutation


def _plan(topology: dict, routing: str | dict = "dor", **more):
    return compile_plan(load_spec({"name": "s", "topology": topology, "routing": routing, **more}))


def _torus(*k: int, **routing):
    return _plan({"kind": "torus", "k": list(k)}, {"name": "dor", **routing})


def _transit(**topology):
    return _plan({"kind": "transit", **topology}, "transit")


def _example(name: str):
    return compile_plan(load_spec(f"examples/{name}.yaml"))


def assert_same_setup(plan, config: TrafficConfig | None = None) -> None:
    """The symmetric proof and uniform limits equal the full walk's: the CDG's nodes and edges,
    the hop histograms and every pair's hops exactly, the limits' floats within rounding (the
    sums run in another order), the rest exactly."""
    full = analyse_routing(plan, keep_pairs=True, workers=1, symmetry=False)
    mapped = analyse_routing(plan, keep_pairs=True, workers=1)
    assert set(mapped.cdg.edges) == set(full.cdg.edges)
    assert set(mapped.cdg.nodes) == set(full.cdg.nodes)
    assert (mapped.min_hops, mapped.max_hops) == (full.min_hops, full.max_hops)
    assert mapped.pair_hops == full.pair_hops
    assert mapped.cycle == full.cycle
    assert mapped.pairs == full.pairs
    config = config or TrafficConfig()
    walked = pattern_limits(plan, config, symmetry=False).to_dict()
    through = pattern_limits(plan, config).to_dict()
    for key, value in walked.items():
        if isinstance(value, float):
            assert math.isclose(through[key], value, rel_tol=1e-12), key
        else:
            assert through[key] == value, key


# every declared family and each routing option that changes its routes, small sizes
DEFAULT_CASES = {
    "torus-4x4": lambda: _torus(4, 4),
    "torus-5x5-odd": lambda: _torus(5, 5),
    "torus-4x4-tie-plus": lambda: _torus(4, 4, tie="plus"),
    "torus-5x5-tie-plus": lambda: _torus(5, 5, tie="plus"),
    "torus-4x4-fixed-classes": lambda: _torus(4, 4, vc_classes="fixed"),
    "torus-6x4-no-datelines": lambda: _torus(6, 4, datelines=False),
    "torus-5x3-no-datelines-plus": lambda: _torus(5, 3, datelines=False, tie="plus"),
    "torus-3x3x3": lambda: _torus(3, 3, 3),
    "torus-4x4-2-vcs": lambda: _plan({"kind": "torus", "k": [4, 4], "vcs": 2}),
    "torus-4x4-duato": lambda: _plan({"kind": "torus", "k": [4, 4]}, "duato"),
    "mesh-4x3": lambda: _plan({"kind": "mesh", "k": [4, 3]}),
    "torus-4x4-router": lambda: _plan(
        {"kind": "torus", "k": [4, 4]},
        router={"injection_vcs": 2, "ejection_vcs": 2, "head_bits": 3},
    ),
    "hyperz-h2-cliod": lambda: _example("hyperz-h2"),
    "hyperz-d3-aliod": lambda: _example("hyperz-d3"),
    "hyperx-4x4-aliod": lambda: _example("hyperz-hyperx-4x4"),
    "hyperz-odim": lambda: _plan({"kind": "hyperz", "s": [3, 2], "z": [2, 2], "R": [1, 2]}, "odim"),
    "hyperz-deter": lambda: _plan(
        {"kind": "hyperz", "s": [3, 2], "z": [2, 2], "R": [2, 2]}, "deter"
    ),
    "hyperz-aliod-2-vcs": lambda: _plan(
        {"kind": "hyperz", "s": [3, 2], "z": [2, 2], "R": [1, 2], "vcs": 2, "q": [2, 1]},
        {"name": "aliod", "adaptive_vcs": 2},
    ),
    "hyperz-aliod-no-adaptive": lambda: _plan(
        {"kind": "hyperz", "s": [3], "z": [2, 2], "R": [1, 2]}, {"name": "aliod", "adaptive_vcs": 0}
    ),
    "ndt-4x4x4": lambda: _example("ndt-4x4x4"),
    "ndt-3x3x3-odd": lambda: _plan({"kind": "ndt", "k": [3, 3, 3]}, "dort"),
    "ndt-4x4x4-tie-plus": lambda: _plan(
        {"kind": "ndt", "k": [4, 4, 4]}, {"name": "dort", "tie": "plus"}
    ),
    "ndt-4x4x4-config-a": lambda: _plan(
        {"kind": "ndt", "k": [4, 4, 4], "ports": ["d0+", "d1+", "d2+"]}, "dort"
    ),
    "ndt-4x4x4-bubble": lambda: _plan(
        {"kind": "ndt", "k": [4, 4, 4]},
        {"name": "dort", "flow_control": "bubble"},
        router={"switching": "cut_through"},
        buffer_depth=8,
    ),
    "ndt-4x2x4-adaptive": lambda: _plan({"kind": "ndt", "k": [4, 2, 4]}, "dort_adaptive"),
    "ndt-2x2x2x2x2-5dt": lambda: _plan({"kind": "ndt", "k": [2, 2, 2, 2, 2]}, "dort"),
    "transit-full-64": lambda: _transit(form="full"),
    "transit-bidelta-64": lambda: _transit(form="bidelta", stacks=[3]),
    "transit-bidelta-256-two-stacks": lambda: _transit(form="bidelta", stacks=[2, 2]),
}


@pytest.mark.parametrize("case", DEFAULT_CASES)
def test_the_symmetric_setup_is_the_full_walk(case):
    plan = DEFAULT_CASES[case]()
    assert symmetry_group_of(plan) is not None or symmetry_group_of(plan, ports=True) is not None
    assert_same_setup(plan)


MATRIX_CASES = {
    "torus-8x8": lambda: _torus(8, 8),
    "torus-8x8-duato": lambda: _example("torus-8x8-duato"),
    "torus-7x7": lambda: _torus(7, 7),
    "torus-4x4x4": lambda: _torus(4, 4, 4),
    "torus-8x8-no-datelines": lambda: _torus(8, 8, datelines=False),
    "hyperz-4x4-cliod": lambda: _plan(
        {"kind": "hyperz", "s": [4, 4], "z": [4, 2], "R": [1, 2], "psi": [1, 2]}, "cliod"
    ),
    "hyperz-4x2-aliod-3-levels": lambda: _plan(
        {"kind": "hyperz", "s": [4, 2], "z": [2, 2, 2], "R": [1, 2, 2]}, "aliod"
    ),
    "transit-hybrid-768": lambda: _transit(form="hybrid", leaf_stages=2),
    "ndt-4x4x2x2x2": lambda: _plan({"kind": "ndt", "k": [4, 4, 2, 2, 2]}, "dort"),
}


@pytest.mark.matrix
@pytest.mark.parametrize("case", MATRIX_CASES)
def test_the_symmetric_setup_is_the_full_walk_at_medium_sizes(case):
    assert_same_setup(MATRIX_CASES[case]())


# too big for the full walk (hundreds of CPU seconds): each generator held to its images
GENERATOR_CASES = {
    "transit-hybrid-3072-capped": lambda: _transit(form="hybrid", leaf_stages=2, cap=True),
    "transit-full-4096": lambda: _transit(form="full", ut_layers=2),
}


@pytest.mark.matrix
@pytest.mark.parametrize("case", GENERATOR_CASES)
def test_each_generator_maps_walks_onto_walks(case):
    """For every declared generator g and three destinations d (seeded): the walk toward g(d)
    is g's image of the walk toward d (its CDG edges, and the hops from every source)."""
    plan = GENERATOR_CASES[case]()
    group = symmetry_group_of(plan)
    assert group is not None
    destinations = random.Random(3).sample(range(len(plan.endpoints)), 3)
    for generator in group.generators:
        images = [int(generator.endpoint[d]) for d in destinations]
        walked = dict(_walk_footprints(plan, [*destinations, *images]))
        for d, image in zip(destinations, images, strict=True):
            mapped = _map_footprint(group, generator, walked[d])
            assert np.array_equal(distinct(mapped.edges), distinct(walked[image].edges))
            assert np.array_equal(mapped.low, walked[image].low), generator.name
            assert np.array_equal(mapped.high, walked[image].high), generator.name


def test_transpose_limits_walk_every_destination():
    """A permutation pattern is not invariant under the group: it is walked in full (the same
    figures with and without symmetry, to the bit)."""
    plan = _torus(4, 4)
    config = TrafficConfig(pattern="transpose")
    assert pattern_limits(plan, config) == pattern_limits(plan, config, symmetry=False)


def test_orbits_are_the_hand_counted_ones():
    """Torus 4x4 with dateline classes: the reflections only, (x, y) ~ (3-x, y) ~ (x, 3-y),
    4 orbits of 4; its link loads also take the translations by two (ties by parity), so one
    orbit. HyperZ 2x2 of Z(8,4,8): 4 Z-nodes and 8 processors per level-1 switch alike, 32."""
    torus = _torus(4, 4)
    assert sorted(map(sorted, symmetry_group_of(torus).orbits)) == [
        [0, 3, 12, 15],
        [1, 2, 13, 14],
        [4, 7, 8, 11],
        [5, 6, 9, 10],
    ]
    assert len(symmetry_group_of(torus, ports=True).orbits) == 1
    hyperz = _example("hyperz-1024")
    assert len(symmetry_group_of(hyperz).orbits) == 1024 // (4 * 8)
    deter = _plan({"kind": "hyperz", "s": [3, 2], "z": [2, 2], "R": [2, 2]}, "deter")
    assert len(symmetry_group_of(deter).orbits) == 4  # D-mod-K: the Z-nodes only, 24 / 6


def test_ndt_orbits_are_the_hand_counted_ones():
    """DORT on the nDT: its channels take no symmetry (the upper and lower classes read the
    coordinates), its link loads the translations, which carry every node to every other and
    each card to its own side: two orbits, the PEs of Card0 and those of Card1. Not where a
    split ring's upper and lower classes take unequal internal VC counts."""
    plan = _example("ndt-4x4x4")
    assert symmetry_group_of(plan) is None
    orbits = symmetry_group_of(plan, ports=True).orbits
    cards = [{plan.switches[e].position["card"] for e in orbit} for orbit in orbits]
    assert sorted(map(len, orbits)) == [64, 64] and sorted(map(sorted, cards)) == [[0], [1]]
    uneven = _plan(
        {"kind": "ndt", "k": [4, 4, 4]},
        {"name": "dort", "internal_vcs": {"ch": 0, "ring_upper": [1, 2], "ring_lower": 3, "pe": 4}},
    )
    assert symmetry_group_of(uneven, ports=True) is None


def test_transit_orbits_are_the_hand_counted_ones():
    """Full 64, one UT64x2: the values of the level-3 and level-1 digits are alike, of the
    level-2 digit only 0 and 3. A level-2 node takes child i's two laterals as wires 2i and
    2i + 1 of a round robin over its 3 chips: children 0 and 3 land on chips 0 then 1,
    children 1 and 2 on chips 2, 0 and 1, 2. So 3 orbits, by the level-2 digit: {0, 3}, 1, 2;
    and every other permutation of that digit (keeping each output's wire) is refused."""
    plan = _transit(form="full")
    orbits = symmetry_group_of(plan).orbits
    level2 = [sorted({(e // 4) % 4 for e in orbit}) for orbit in orbits]
    assert sorted(level2) == [[0, 3], [1], [2]]
    assert sorted(map(len, orbits)) == [16, 16, 32]
    for values in itertools.permutations(range(4)):
        if values not in ((0, 1, 2, 3), (3, 1, 2, 0)):
            with pytest.raises(PlanError, match="is no automorphism"):
                digit_permutation(plan, 1, dict(enumerate(values)))


def test_an_input_map_that_misses_the_channels_is_refused():
    """Transit's inputs map apart from their outputs: two inputs of a level-3 chip exchanged
    leave the channels into them without an image."""
    plan = _transit(form="full")
    good = digit_permutation(plan, 0, {0: 1, 1: 2, 2: 3, 3: 0})
    assert symmetry_group(plan, [good]) is not None
    chip = next(sw.id for sw in plan.switches if sw.position.get("level") == 3)
    inputs = list(map(list, good.in_port))
    inputs[chip][0], inputs[chip][1] = inputs[chip][1], inputs[chip][0]
    bad = dataclasses.replace(good, in_port=tuple(map(tuple, inputs)))
    with pytest.raises(PlanError, match="is no automorphism: the link from .* has no image"):
        symmetry_group(plan, [bad])


def test_a_degraded_plan_walks_every_destination():
    assert symmetry_group_of(_example("torus-4x4-dead-link")) is None


def test_orbits_that_make_a_cycle_leave_the_verdict_to_the_closed_cdg(monkeypatch):
    """The channels' orbits making no cycle prove the CDG acyclic; where they make one (here a
    planted self-loop) the CDG may have none, and the proof closes it and peels it."""
    plan = _torus(4, 4)
    quotient, closure = SymmetryGroup.quotient, SymmetryGroup.closure
    closed = []

    def planted(self, codes):
        return distinct(np.append(quotient(self, codes), 0))  # channel 0 waits on itself

    def counted(self, codes):
        closed.append(len(codes))
        return closure(self, codes)

    monkeypatch.setattr(SymmetryGroup, "quotient", planted)
    monkeypatch.setattr(SymmetryGroup, "closure", counted)
    analysis = analyse_routing(plan, workers=1)
    assert closed and analysis.deadlock_free
    assert set(analysis.cdg.edges) == set(analyse_routing(plan, symmetry=False).cdg.edges)


class _Planted(DOR):
    """DOR with one switch that offers both dateline classes on every hop: it breaks the
    reflections there (and only there)."""

    def route(self, switch, in_port, in_vc, head):
        decision = super().route(switch, in_port, in_vc, head)
        if switch != 5 or self.view.out_link[switch][decision.hops[0].port] is None:
            return decision
        return Decision((Hop(decision.hops[0].port, (0, 1)),), head)


def test_a_routing_that_breaks_its_symmetry_is_caught(monkeypatch):
    monkeypatch.setitem(ROUTINGS, "dor", _Planted)
    plan = _torus(4, 4, vc_classes="fixed")
    with pytest.raises(PlanError, match="torus dor routing does not commute"):
        analyse_routing(plan, workers=1)
    analyse_routing(plan, workers=1, symmetry=False)  # the full walk itself is fine


def test_a_declared_map_that_is_no_automorphism_is_refused(monkeypatch):
    """A translation of a mesh: the boundary switches have fewer ports."""

    def translations(self):
        return (translation(self.view.plan, 0, 1),)

    monkeypatch.setattr(DOR, "symmetries", translations)
    plan = _plan({"kind": "mesh", "k": [4, 3]})
    with pytest.raises(PlanError, match="translation d0 \\+1' is no automorphism"):
        analyse_routing(plan, workers=1)
