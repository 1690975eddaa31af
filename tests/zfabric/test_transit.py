"""The Transit fat tree: chip counts, addresses, routes and the proof against the research.

A. DeHon, "Fat-Tree Routing for Transit", MIT AI Lab, 1990. Expected chip counts are the
seed's tables (Tables 3.1, 3.4, 4.4, 4.6, 4.8) and closed formulas (Eq 3.3, 3.9, 4.26, 4.29,
4.40); the route is the worked example of §3.8.5; hop counts per pair class follow from the
structure (a leaf's j stages, an up chip, one crossover, the down levels).
"""

from __future__ import annotations

from collections import Counter
from functools import cache

import pytest

from zfabric import compile_plan
from zfabric.deadlock import analyse_routing
from zfabric.errors import SpecError
from zfabric.metrics import physical_links
from zfabric.plan import PlanView
from zfabric.routing.transit import pair_classes, transit_route
from zfabric.spec import spec_from_dict
from zfabric.topologies.transit import (
    TransitParams,
    _Leaf,
    _Netlist,
    _up_rule,
    address,
    leaf_chips,
    leaf_processors,
    transit_counts,
    transit_summary,
)


def topology(form: str, **keys) -> dict:
    return {"kind": "transit", "form": form, **keys}


@cache
def plan(form: str, **keys):
    """A built plan (tuple values stand for the spec's lists, so that plans are cached)."""
    keys = {key: list(value) if isinstance(value, tuple) else value for key, value in keys.items()}
    return compile_plan(spec_from_dict({"name": "t", "topology": topology(form, **keys)}))


def chips(built) -> int:
    return len({switch.position["chip"] for switch in built.switches})


# ---- chip counts ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "form, keys, processors, expected",
    [
        ("full", {}, 64, 52),  # Table 4.4: 1 UT64x2
        ("full", {"ut_layers": 2}, 4096, 4160),  # Table 4.4: 64 UT64x2 + 4 UT64x8
        ("hybrid", {"leaf_stages": 2}, 768, 656),  # Table 4.6: 64 B12 + 1 UT64x8
        ("hybrid", {"leaf_stages": 3}, 3072, 3392),  # Table 4.6: 64 B48 + 4 UT64x8
        ("bidelta", {"stacks": [3]}, 64, 48),  # Table 4.8
        ("bidelta", {"stacks": [2, 2]}, 256, 256),
        ("bidelta", {"stacks": [3, 2]}, 1024, 1280),
        ("bidelta", {"stacks": [2, 2, 2]}, 4096, 6144),
    ],
)
def test_chips_counted_in_built_plans_are_the_tables(form, keys, processors, expected):
    built = plan(form, **{k: tuple(v) if isinstance(v, list) else v for k, v in keys.items()})
    assert len(built.endpoints) == processors
    assert chips(built) == expected
    summary = transit_summary(built)
    assert summary["chips"] == summary["chips_by_formula"] == expected


def test_unit_trees_and_leaves_counted_in_built_plans():
    # Table 3.1: UT64x8 has 64 + 64 + 48 + 32 = 208 chips; Table 3.4: UT64x2 16/16/12/8 = 52
    hybrid = plan("hybrid", leaf_stages=2)
    unit = [s for s in hybrid.switches if s.position.get("block") == "UT64x8"]
    assert len({s.position["chip"] for s in unit}) == 208
    per_kind = Counter(
        (s.position["kind"], s.position.get("level")) for s in unit if "half" not in s.position
    )
    assert per_kind == {("up", None): 64, ("down", 1): 64, ("down", 2): 48, ("down", 3): 32}
    full = plan("full")
    assert chips(full) == 52
    halves = Counter(s.position["kind"] for s in full.switches if "half" in s.position)
    assert halves == {"up": 32, "down": 32}  # 16 alternate-mode chips each
    assert transit_summary(hybrid)["unit_trees"] == {"UT64x8": 1}
    assert transit_summary(hybrid)["leaves"] == {"B12": 64}
    assert transit_summary(plan("full", ut_layers=2))["unit_trees"] == {"UT64x2": 64, "UT64x8": 4}


@pytest.mark.parametrize(
    "built, j, expected",
    [(("hybrid", 2), 2, 7), (("hybrid", 3), 3, 40)],  # Eq 4.26: (3j + 1) 4^(j-2)
)
def test_leaf_clusters_in_built_plans(built, j, expected):
    form, stages = built
    leaf = [s for s in plan(form, leaf_stages=stages).switches if s.position["kind"] == "leaf"]
    assert len({s.position["chip"] for s in leaf if s.position["unit"] == 5}) == expected
    assert leaf_chips(j) == expected


def test_b192_leaf_cluster_has_208_chips():
    # past the endpoint limit as a whole fabric (12 288 processors): one cluster built alone
    net = _Netlist()
    _Leaf(net, 0, 4)
    assert net.chips == leaf_chips(4) == 208


@pytest.mark.parametrize(
    "params, expected",
    [
        # Table 4.4 (full): processors, UT64x2, UT64x8, chips
        (TransitParams("full", ut_layers=1), (64, 1, 0, 52)),
        (TransitParams("full", ut_layers=2), (4096, 64, 4, 4160)),
        (TransitParams("full", ut_layers=3), (262144, 4096, 320, 279552)),
    ],
)
def test_full_tree_formula_is_table_4_4(params, expected):
    counts = transit_counts(params)
    assert (counts["processors"], counts["UT64x2"], counts["UT64x8"], counts["chips"]) == expected


@pytest.mark.parametrize(
    "j, layers, expected",
    [  # Table 4.6 (hybrid): processors, leaves, UT64x8, chips
        (2, 1, (768, 64, 1, 656)),
        (3, 1, (3072, 64, 4, 3392)),
        (4, 1, (12288, 64, 16, 16640)),
        (2, 2, (49152, 4096, 80, 45312)),
        (3, 2, (196608, 4096, 320, 230400)),
        (4, 2, (786432, 4096, 1280, 1118208)),
    ],
)
def test_hybrid_formula_is_table_4_6(j, layers, expected):
    counts = transit_counts(TransitParams("hybrid", leaf_stages=j, ut_layers=layers))
    assert (counts["processors"], counts["leaves"], counts["UT64x8"], counts["chips"]) == expected


@pytest.mark.parametrize(
    "stacks, expected",
    [  # Table 4.8: N_c = N h / 4 for h = 3..10
        ((3,), 48),
        ((2, 2), 256),
        ((3, 2), 1280),
        ((2, 4), 6144),
        ((3, 4), 28672),
        ((1, 3, 4), 131072),
        ((2, 3, 4), 589824),
        ((3, 3, 4), 2621440),
    ],
)
def test_bidelta_formula_is_table_4_8(stacks, expected):
    assert transit_counts(TransitParams("bidelta", stacks=stacks))["chips"] == expected


def test_past_the_size_limit_the_spec_is_refused_with_the_count():
    with pytest.raises(SpecError, match=r"^topology: gives 12288 endpoints, over the limit"):
        spec_from_dict({"topology": topology("hybrid", leaf_stages=4)})


# ---- wiring ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "form, keys",
    [("full", {}), ("hybrid", {"leaf_stages": 2}), ("bidelta", {"stacks": (1, 2)})],
)
def test_one_way_channels_and_dual_homed_processors(form, keys):
    built = plan(form, **keys)
    view = PlanView(built)
    # no channel has its reverse: every link is one-way
    ends = {(link.src, link.dst) for link in built.links}
    assert not any((dst, src) in ends for src, dst in ends)
    assert physical_links(built) == len(built.links)
    for endpoint in built.endpoints:
        inputs = [a for i, a in enumerate(endpoint.attachments) if endpoint.mode(i) == "in"]
        outputs = [a for i, a in enumerate(endpoint.attachments) if endpoint.mode(i) == "out"]
        assert len(inputs) == len(outputs) == 2
        for side in (inputs, outputs):  # two chips, never the same one
            assert len({built.switches[a.switch].position["chip"] for a in side}) == 2
        # an injection input has no link into it; an ejection output no link out of it
        assert all(view.in_link[a.switch][a.port] is None for a in inputs)
        assert all(view.out_link[a.switch][a.port] is None for a in outputs)
        assert {a.switch for a in inputs}.isdisjoint(a.switch for a in outputs)


def test_a_chips_two_wires_of_a_direction_reach_two_chips():
    # full dispersion (§2.3.2) on every standard-mode chip whose outputs lead to chips
    for built in (plan("full"), plan("hybrid", leaf_stages=2), plan("bidelta", stacks=(2, 2))):
        view = PlanView(built)
        for switch in built.switches:
            if switch.radix != 8:
                continue
            for d in range(4):
                links = [view.out_link[switch.id][2 * d + w] for w in (0, 1)]
                if all(links):
                    targets = {built.switches[link.dst.switch].position["chip"] for link in links}
                    assert len(targets) == 2, (switch.name, d)


def test_the_roots_unused_sides_are_declared():
    built = plan("full")
    view = PlanView(built)
    ups = [s for s in built.switches if s.position["kind"] == "up"]
    # every up half's direction-11 output faces nothing: 32 wires toward a root that is not built
    assert all(view.out_link[s.id][3] is None for s in ups)
    assert all((s.id, 3) not in view.ejection_at for s in ups)
    level3 = [s for s in built.switches if s.position.get("level") == 3]
    free = sum(view.in_link[s.id][p] is None for s in level3 for p in range(8))
    assert free == 32  # Table 3.5: 32 down from the root


# ---- routes ---------------------------------------------------------------------------------


def test_the_worked_route_of_section_3_8_5():
    # 786 432 processors (4096 B192 + 1280 UT64x8): L1 = 0xCC0234, L2 = 0xD84267
    route = transit_route((0xCC, 0x02), (0xD8, 0x42), 0x67)
    assert route == (0xF4, 0xD8, 0x42, 0x67)


def test_the_worked_routes_slices_read_chip_by_chip():
    """The digest's trace of §3.8.5 from the per-chip rules: the leaf reads slice 0, up layer
    u reads slice u mod 4; a lateral and an entry from above swallow; down levels 3 / 2 / 1
    read slices 0 / 1 / 2; the leaf's stages read slices 0..3 after the last swallow."""
    head = list(transit_route((0xCC, 0x02), (0xD8, 0x42), 0x67))

    def read(slice_: int) -> int:
        return (head[0] >> (6 - 2 * slice_)) & 3

    reads = [read(0)]  # leaf stage 1
    for layer in (1, 2):
        slice_, swallow = _up_rule("hybrid", layer)
        assert not swallow
        reads.append(read(slice_))
    assert reads == [0b11, 0b11, 0b01]  # up twice, cross over into level 2 of layer 2
    head.pop(0)  # the lateral swallows
    assert [read(1), read(2)] == [0b01, 0b10]  # level 2, level 1 of layer 2
    head.pop(0)  # entry into layer 1 from above
    assert [read(0), read(1), read(2)] == [0b01, 0b00, 0b00]
    head.pop(0)  # the leaf's fat-tree input
    assert [read(t) for t in range(4)] == [0b01, 0b10, 0b01, 0b11]


def test_addresses():
    hybrid = TransitParams("hybrid", leaf_stages=4, ut_layers=2)
    # leaf (0xCC >> 2) * 64 + (0x02 >> 2) = 51 * 64 + 0; place 0x34 = slices 0, 3, 1, 0
    assert address(hybrid, (51 * 64 + 0) * 192 + 0 * 64 + 3 * 16 + 1 * 4 + 0) == (
        (0xCC, 0x00),
        0x34,
    )
    full = TransitParams("full", ut_layers=1)
    assert address(full, 0b10_01_11) == ((0b10_01_11_00,), None)
    bidelta = TransitParams("bidelta", stacks=(1, 2))
    assert address(bidelta, 0b11_01_10) == ((0b11_000000, 0b01_10_0000), None)


def test_full_tree_route_forms():
    # a full tree climbs one layer less: RU = (11)^(j-1).O.pad
    assert transit_route((0b00_00_01_00,), (0b00_00_10_00,), None, full=True) == (0, 0b1000)
    assert transit_route((0x40, 0x00), (0x80, 0x04), None, full=True) == (0b11_10_00_00, 0x80, 0x04)
    assert transit_route((0x40, 0x00), (0x40, 0x04), None, full=True) == (0x00, 0x04)
    assert transit_route((0x40,), (0x40,), 0x12) == (0x12,)  # same leaf: R = RC


def test_dilation_offers_both_outputs_of_a_direction():
    from zfabric.routing import make_routing

    built = plan("bidelta", stacks=(3,))
    rf = make_routing(PlanView(built))
    first = next(s for s in built.switches if s.position.get("stage") == 1)
    decision = rf.route(first.id, 0, 0, (0b10_00_00_00,))
    assert [hop.port for hop in decision.hops] == [4, 5]


# ---- every route delivers, one VC, no cycle ---------------------------------------------------


def hop_classes(form: str, **keys) -> Counter:
    """Expected switch-to-switch hops per ordered pair, from the structure (N processors)."""
    if form == "full":  # up half, then 1, 2 or 3 down levels
        return Counter({1: 64 * 3, 2: 64 * 12, 3: 64 * 48})
    if form == "bidelta":  # every route crosses every stage
        n = 4 ** sum(keys["stacks"])
        return Counter({sum(keys["stacks"]) - 1: n * (n - 1)})
    # hybrid B12 leaves under one UT64x8: inside the leaf 1 hop (stage 1 to 2); else leaf
    # stage 1, the up chip, the crossover level's chips down to level 1, then stages 1 and 2
    n = 768
    return Counter({1: n * 11, 4: n * 12 * 3, 5: n * 12 * 12, 6: n * 12 * 48})


@pytest.mark.parametrize(
    "form, keys",
    [
        ("full", {}),
        ("bidelta", {"stacks": (3,)}),
        ("bidelta", {"stacks": (2, 2)}),
        pytest.param("hybrid", {"leaf_stages": 2}, marks=pytest.mark.slow),
    ],
)
def test_every_route_delivers_deadlock_free_with_one_vc(form, keys):
    built = plan(form, **keys)
    assert {link.vcs for link in built.links} == {1}
    analysis = analyse_routing(built)  # walks every pair's every choice; raises if one strays
    assert analysis.cycle is None
    assert analysis.max_hops == analysis.min_hops == hop_classes(form, **keys)


# ---- the link-rotation form against the slice-index form --------------------------------------


def link_rotation(built, link) -> int:
    """The rotation (bits, mod 8) of a link in the seed's link-rotation form (the digest §8):
    every up-chip output and every stage-to-stage link rotates by 2, a lateral into level l
    of unit-tree layer u by 2 more plus (4 - 2l - 2u') (u' = u in a hybrid, u - 1 in a full
    tree), a down link by 2 after levels 3 and 2 and by 4 after level 1, and a bidelta link
    into a new stack by what brings the stack back to 0 (its j stages rotated 2 (j - 1))."""
    src = built.switches[link.src.switch].position
    dst = built.switches[link.dst.switch].position
    if src["kind"] == "up" and dst["kind"] == "down" and dst["layer"] == src["layer"]:
        layer = src["layer"] - (built.topology_params["form"] == "full")
        return (2 + 4 - 2 * dst["level"] - 2 * layer) % 8
    if src["kind"] == "down":
        return 4 if src["level"] == 1 else 2
    if src["kind"] == "bidelta" and dst["stage"] in stack_starts(built):
        stages = dst["stage"] - previous_start(built, dst["stage"])
        return (8 - 2 * (stages - 1)) % 8
    return 2


def stack_starts(built) -> set[int]:
    stacks = built.topology_params["stacks"]
    return {1 + sum(stacks[:m]) for m in range(1, len(stacks))}


def previous_start(built, stage: int) -> int:
    return max(s for s in {1} | stack_starts(built) if s < stage)


@pytest.mark.parametrize(
    "form, keys",
    [
        ("full", {}),
        ("full", {"ut_layers": 2}),
        ("hybrid", {"leaf_stages": 2}),
        ("hybrid", {"leaf_stages": 3}),
        ("bidelta", {"stacks": (1, 2)}),
        ("bidelta", {"stacks": (3, 2)}),
    ],
)
def test_link_rotations_give_each_chip_its_slice(form, keys):
    """A chip reads bits 7:6 of the stream as the links from the source rotated it: every
    injection reaches a chip reading slice 0, and every link's rotation is what separates
    the slices its two ends read, so the two forms read the same bits everywhere."""
    built = plan(form, **keys)
    for endpoint in built.endpoints:
        for i, attachment in enumerate(endpoint.attachments):
            if endpoint.injects(i):
                assert built.switches[attachment.switch].position["slice"] == 0
    for link in built.links:
        src, dst = (built.switches[ref.switch].position for ref in (link.src, link.dst))
        assert (2 * src["slice"] + link_rotation(built, link)) % 8 == 2 * dst["slice"], (
            built.switches[link.src.switch].name,
            built.switches[link.dst.switch].name,
        )


# ---- stages and swallows per pair class: the terms of the latency model ------------------------


def ceil(a: int, b: int) -> int:
    return -(-a // b)


@pytest.mark.parametrize(
    "keys, sources",
    [({}, None), ({"ut_layers": 2}, (0, 1000, 4095))],  # 4096: three sources' every pair
)
def test_full_tree_stages_and_swallows_are_eq_4_18_to_4_23(keys, sources):
    """Level k: L_connect counts ceil(k/3) up stages and k down levels, L_open adds
    ceil(k/3) - 1 + ceil(k/12) swallows (the digest §9, brackets read as ceilings)."""
    classes = pair_classes(plan("full", **keys), sources)
    levels = 3 * keys.get("ut_layers", 1)
    assert sorted(classes) == list(range(1, levels + 1))
    for k, found in classes.items():
        assert found["stages"] == [ceil(k, 3) + k], k
        assert found["swallows"] == [ceil(k, 3) - 1 + ceil(k, 12)], k


@pytest.mark.parametrize("j", [2, 3])
def test_hybrid_stages_and_swallows_are_eq_4_30_to_4_34(j):
    """Level k >= 1: L_connect = 1 + j + k + ceil(k/3) stages, L_open adds ceil(k/3) +
    ceil((k + 3)/12) swallows; inside a leaf its j stages and no swallow."""
    n = leaf_processors(j)
    classes = pair_classes(plan("hybrid", leaf_stages=j), range(0, 64 * n, 7 * n + 1))
    assert classes[0]["stages"] == [j] and classes[0]["swallows"] == [0]
    assert sorted(classes) == [0, 1, 2, 3]
    for k in (1, 2, 3):
        assert classes[k]["stages"] == [1 + j + k + ceil(k, 3)], k
        assert classes[k]["swallows"] == [ceil(k, 3) + ceil(k + 3, 12)], k


@pytest.mark.parametrize("stacks", [(3,), (1, 2), (2, 2)])
def test_bidelta_stages_and_swallows_are_eq_4_41_to_4_42(stacks):
    """h stages; L_open adds a swallow per stack after the first (i - 1)."""
    classes = pair_classes(plan("bidelta", stacks=stacks))
    n = 4 ** sum(stacks)
    assert classes == {
        0: {"pairs": n * (n - 1), "stages": [sum(stacks)], "swallows": [len(stacks) - 1]}
    }


# ---- the capped root ----------------------------------------------------------------------------


def test_capped_formula():
    # the digest §14: capped 49 152 = 4 x 64 B192 under 64 UT64x8c and no plain UT64x8 (Eq
    # 3.4-3.7), 67 584 chips: 256 x 208 + 64 x (208 + 16 cap chips)
    counts = transit_counts(TransitParams("hybrid", leaf_stages=4, ut_layers=1, cap=True))
    assert (counts["processors"], counts["leaves"], counts["UT64x8"], counts["UT64x8c"]) == (
        49152,
        256,
        0,
        64,
    )
    assert counts["chips"] == 67584
    # two layers: Eq 3.6 gives 4 x 64 plain unit trees (1 - 4^0 = 0 for one layer), Eq 3.7 the
    # 64 capped ones on top: N_total / (768 x 4)
    counts = transit_counts(TransitParams("hybrid", leaf_stages=2, ut_layers=2, cap=True))
    assert (counts["processors"], counts["UT64x8"], counts["UT64x8c"]) == (196608, 256, 64)


def test_capped_hybrid_built():
    """Four copies of hybrid 768 under 4 UT64x8c: 256 B12 (7 chips each) and 4 x (208 + 16)."""
    built = plan("hybrid", leaf_stages=2, cap=True)
    assert len(built.endpoints) == 3072
    assert chips(built) == 256 * 7 + 4 * (208 + 16) == 2688
    summary = transit_summary(built)
    assert summary["chips_by_formula"] == 2688
    assert summary["unit_trees"] == {"UT64x8c": 4}
    caps = [s for s in built.switches if s.position["kind"] == "cap"]
    assert len(caps) == 64
    view = PlanView(built)
    # every input of a cap chip is an up wire (a lateral: it swallows); every output reaches
    # level 3 of a unit tree, 32 wires into each copy from each unit tree's 16 cap chips
    assert all(all(s.position["swallow"]) for s in caps)
    into = Counter(
        built.switches[view.out_link[s.id][p].dst.switch].position["stack"]
        for s in caps
        if s.position["stack"] == 0
        for p in range(8)
    )
    assert into == {0: 32, 1: 32, 2: 32, 3: 32}


def test_capped_routes():
    # copies differ: climb to the top layer (j = 1), cross into the cap (11), then the
    # leading byte (the copy) and the rest of C2, then P2
    assert transit_route((0x00, 0x40), (0x80, 0x40), 0x12, capped=True) == (
        0b11_11_00_00,
        0x80,
        0x40,
        0x12,
    )
    # same copy: the leading byte is equal, the route is the uncapped one
    assert transit_route((0x40, 0x40), (0x40, 0x80), 0x12, capped=True) == transit_route(
        (0x40,), (0x80,), 0x12
    )
    classes = pair_classes(plan("hybrid", leaf_stages=2, cap=True), range(0, 3072, 97))
    # across copies: leaf stage 1, the up chip, a cap chip, levels 3, 2, 1, the leaf's 2
    # stages; swallows at the cap, the entry into level 3 and the leaf's fat-tree input
    assert classes[4] == {"pairs": 32 * 2304, "stages": [8], "swallows": [3]}
    for k in (1, 2, 3):  # inside a copy: the uncapped terms (Eq 4.30-4.34, j = 2)
        assert classes[k]["stages"] == [1 + 2 + k + ceil(k, 3)]
