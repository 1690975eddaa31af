"""The thesis's addressing latency model (reference/znode.md §2.9) and its flit-time mapping.

Expected bit-times are the digest's worked example and sums worked by hand below; the flit-time
mapping is checked against the hop counts the plans' own routing functions give.
"""

from __future__ import annotations

import itertools
import math

import pytest
from zfabric.sim.analytic import flow_zero_load_latency, zero_load_latency
from zfabric.sim.model import FabricModel
from zfabric.sim.znode_analytic import (
    SCHEMES,
    flit_latency,
    head_lengths,
    level_latency,
    thesis_latency,
)

from zfabric import analyse_routing, build_fabric, load_spec
from zfabric.router_settings import RouterSettings


def test_digest_example_512():
    # §2.9 [D]: P = 512, z = (8,8,8), Δ = 1, D = 0
    z = (8, 8, 8)
    assert thesis_latency("flat", z) == 15
    assert thesis_latency("sliced", z) == 12
    assert thesis_latency("destination", z) == 27
    assert thesis_latency("source_destination", z) == 45


def test_hand_worked_two_levels_two_znodes():
    # z = (4,4): n = 2, b = (2,2), log2 P = 4; Δ = 2, D = 32; m = 2: log2 m = 1
    # flat: 2n Δ + log2 P + D = 8 + 4 + 32 = 44; eq. 4.8: + Δ/2 + log2 m = 46
    # sliced: Δ(n+1) + (n+1)/2 + D + (2·2 + 1·2)/2 = 6 + 1.5 + 32 + 3 = 42.5; + 1 + 1 = 44.5
    # destination: 6 + 3·4/2 + (2·2)/2 + 32 = 46; + 1 + 4/4 + 3·1 = 51
    # source-destination: 6 + 3·4 + 2 + 32 = 52; + 1 + 1 + 3 = 57
    z, kw = (4, 4), {"delta": 2, "payload": 32}
    assert thesis_latency("flat", z, **kw) == 44
    assert thesis_latency("sliced", z, **kw) == 42.5
    assert thesis_latency("destination", z, **kw) == 46
    assert thesis_latency("source_destination", z, **kw) == 52
    assert thesis_latency("flat", z, znodes=2, **kw) == 46
    assert thesis_latency("sliced", z, znodes=2, **kw) == 44.5
    assert thesis_latency("destination", z, znodes=2, **kw) == 51
    assert thesis_latency("source_destination", z, znodes=2, **kw) == 57


@pytest.mark.parametrize("z", [(8, 8, 8), (2, 4), (4, 2, 8, 2), (16,), (3, 2, 5)])
def test_corrected_eq_4_2_averages_to_eq_4_7(z):
    """With 2iΔ and (n-j+1), the mean of eq. 4.2 over the levels (W_i = 1/n) is eq. 4.7 for
    sliced (ρ = 1, a = d = 0), and eq. 4.2 at level n with ρ = 0 is flat's eq. 4.3."""
    n = len(z)
    for delta, payload in ((1, 0), (3, 32)):
        levels = [level_latency(i, z, delta=delta, payload=payload) for i in range(1, n + 1)]
        sliced = thesis_latency("sliced", z, delta=delta, payload=payload)
        assert math.isclose(sum(levels) / n, sliced)
        top = level_latency(n, z, delta=delta, rho=0, payload=payload)
        assert top == thesis_latency("flat", z, delta=delta, payload=payload)


def power_of_two_znodes(processors: int, levels: int):
    exponent = processors.bit_length() - 1
    for parts in itertools.product(range(1, exponent + 1), repeat=levels):
        if sum(parts) == exponent:
            yield tuple(2**p for p in parts)


@pytest.mark.parametrize("znodes", [1, 2])
def test_fig_4_10_ordering(znodes):
    """§2.9, Fig. 4.10's stated trend (P = 16..512, levels 2..5, no payload): source-destination
    above destination, both above flat and sliced, sliced never above flat (the chapter's
    conclusion; they tie at z = (256, 2)), and destination growing with the level."""
    for processors in (16, 32, 64, 128, 256, 512):
        for levels in range(2, 6):
            for z in power_of_two_znodes(processors, levels):
                t = {s: thesis_latency(s, z, znodes=znodes) for s in SCHEMES}
                assert t["source_destination"] > t["destination"] > t["flat"] >= t["sliced"], z
        by_level = [
            min(thesis_latency("destination", z) for z in power_of_two_znodes(processors, n))
            for n in range(2, 6)
            if any(power_of_two_znodes(processors, n))
        ]
        assert by_level == sorted(by_level)


# ---- the flit-time mapping against the routing functions ----------------------------------------

ROUTING_OF = {
    "flat": "flat",
    "source_destination": "source_destination",
    "destination": "updown",
    "sliced": "sliced",
}


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize(
    "topology",
    [
        {"kind": "znode", "z": [4, 4, 4], "R": [1, 4, 16]},
        {"kind": "znode", "z": [2, 3], "R": [2, 2], "znodes": 2},
    ],
    ids=["znode-64", "snode-12"],
)
def test_flit_latency_follows_the_plans_hop_counts(scheme, topology):
    """flit_latency's hop counts per common level are the routes the plan really takes: the
    mean over levels (and, across Znodes, half the traffic external) of the zero-load
    latency of each level's pairs, with every pair of a level taking the same hops."""
    plan, _ = build_fabric(
        load_spec({"name": "t", "topology": topology, "routing": ROUTING_OF[scheme]})
    )
    z, m = topology["z"], topology.get("znodes", 1)
    size, n = math.prod(z), len(z)
    hops: dict[tuple[bool, int], set[int]] = {}
    for (src, dst), (lo, hi) in analyse_routing(plan, keep_pairs=True).pair_hops.items():
        assert lo == hi
        (ks, xs), (kd, xd) = divmod(src, size), divmod(dst, size)
        level = next(c for c in range(1, n + 1) if xs // math.prod(z[:c]) == xd // math.prod(z[:c]))
        hops.setdefault((ks != kd, level), set()).add(lo)
    assert all(len(h) == 1 for h in hops.values())
    sides = (False, True) if m > 1 else (False,)
    for router in (RouterSettings(), RouterSettings(stages=3)):
        for length in (1, 5):
            means = [
                sum(
                    zero_load_latency(min(hops[(side, c)]), length, router) for c in range(1, n + 1)
                )
                / n
                for side in sides
            ]
            expected = sum(means) / len(means)
            got = flit_latency(scheme, z, length, znodes=m, router=router)
            assert math.isclose(got, expected), (router, length)


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize(
    "topology, bits",
    [
        ({"kind": "znode", "z": [4, 4, 4], "R": [1, 4, 16]}, 2),
        ({"kind": "znode", "z": [4, 4, 4], "R": [1, 4, 16]}, 4),
        ({"kind": "znode", "z": [2, 3], "R": [2, 2], "znodes": 2}, 2),
    ],
    ids=["znode-64-2", "znode-64-4", "snode-12-2"],
)
def test_head_lengths_are_the_routings_heads(scheme, topology, bits):
    """Per common level (and across Znodes), the zero-load latency :func:`head_lengths` gives
    with head flits of ``bits`` bits is a lone packet's in the model, for one pair of each
    level; so flit_latency's mean over levels is the model's too."""
    spec = {"name": "t", "topology": topology, "routing": ROUTING_OF[scheme], "buffer_depth": 8}
    spec["router"] = {"head_bits": bits}
    plan, _ = build_fabric(load_spec(spec))
    z, m = topology["z"], topology.get("znodes", 1)
    size, n = math.prod(z), len(z)
    router = plan.router
    means = []
    for across in (False, True) if m > 1 else (False,):
        total = 0.0
        for c in range(1, n + 1):
            dst = math.prod(z[: c - 1]) + (size if across else 0)  # turns at level c from 0
            model = FabricModel(plan)
            packet = model.offer(0, dst, 3)
            model.run(200)
            turn = n if scheme == "flat" else c
            heads = [max(1, -(-h // bits)) for h in head_lengths(scheme, z, m, turn, across)]
            hops = 2 * turn - 2 + across
            expected = router.zero_load_latency(hops, 3, sum(h - 1 for h in heads))
            assert packet.latency == expected == flow_zero_load_latency(plan, {(0, dst): 1}, 3)
            total += expected
        means.append(total / n)
    assert math.isclose(
        flit_latency(scheme, z, 3, znodes=m, router=router), sum(means) / len(means)
    )


@pytest.mark.parametrize(
    "call, text",
    [
        (lambda: thesis_latency("tree", (2, 2)), "got 'tree'"),
        (lambda: thesis_latency("flat", ()), "got ()"),
        (lambda: thesis_latency("flat", (2, 0)), "got (2, 0)"),
        (lambda: flit_latency("sliced", (2, 2), 1, znodes=0), "got 0"),
        (lambda: level_latency(3, (2, 2)), "got 3"),
    ],
)
def test_bad_arguments(call, text):
    with pytest.raises(ValueError, match=text.replace("(", r"\(").replace(")", r"\)")):
        call()
