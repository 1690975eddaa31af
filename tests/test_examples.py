"""Every example through `zfabric check --json`, against figures derived by hand or from the
research digests (never from this code's output)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from zfabric.sim.study import load_study

from zfabric import compile_plan
from zfabric.cli import main
from zfabric.spec import spec_from_dict

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
STUDIES = EXAMPLES / "studies"

# name: expected report fields
EXPECTED = {
    # 4x4 torus: 2 links per node; DOR mean = sum(k/4) * N/(N-1) = 2 * 16/15
    "torus-4x4": dict(
        endpoints=16,
        switches=16,
        links=32,
        max_radix=5,
        diameter=4,
        average_hops=2 * 16 / 15,
        vcs={"external": 2},
        bisection=8,
    ),
    # the 4x4 torus without the link sw0_0-sw1_0: 31 links; only its two ends lose their
    # shortest path (1 hop -> 3, around through the next row), so the DOR sum 16 * 32 over
    # the 240 pairs grows by 2 + 2, and the diameter stays 4 (every other pair keeps a
    # shortest path: pairs 2 apart in dimension 0 go the other way round the ring); the
    # bisection between rows 0-1 and 2-3 (ids by rows) keeps its 8 links, none of them dead;
    # the dead link leaves dimension order no route, so the up*/down* tables route it
    "torus-4x4-dead-link": dict(
        endpoints=16,
        switches=16,
        links=31,
        max_radix=5,
        diameter=4,
        average_hops=(16 * 32 + 4) / 240,
        vcs={"external": 2},
        bisection=8,
        routing="updown_table",
    ),
    # 4x4 mesh: 3 links per row and column -> 2·3·4; per dimension the mean |i - j| over the
    # 16 ordered pairs of a 4-line is 20/16, so 2·20/16 over all pairs, ·16/15 without self;
    # the middle cut crosses 4 links; 2 VCs (the spec's vcs)
    "mesh-4x4": dict(
        endpoints=16,
        switches=16,
        links=24,
        max_radix=5,
        diameter=6,
        average_hops=2 * 20 / 16 * 16 / 15,
        vcs={"external": 2},
        bisection=4,
    ),
    # board fabrics (boards/targets.py). Ring of 2: the two links join the same pair, one hop;
    # bisection is max-flow from endpoints [0, N/2): capped by their N/2 endpoint links
    "ring-2": dict(
        endpoints=2,
        switches=2,
        links=2,
        max_radix=3,
        diameter=1,
        average_hops=1,
        vcs={"external": 2},
        bisection=1,
    ),
    # 2x2 torus: 4 ports per switch, all used -> 4*4/2 links; from each node 2 peers at 1 hop,
    # 1 at 2 -> 4/3; bisection capped by the 2 endpoint links of the first half
    "torus-2x2": dict(
        endpoints=4,
        switches=4,
        links=8,
        max_radix=5,
        diameter=2,
        average_hops=4 / 3,
        vcs={"external": 2},
        bisection=2,
    ),
    # nDT 2x2: 2·4 cards of radix n+2 = 4; 4 internal + n·4 external links
    "ndt-2x2": dict(endpoints=8, switches=8, links=4 + 8, max_radix=4),
    # nDT: 2·∏k switches of radix n+2; ∏k internal + n·∏k external links; 4 internal VCs (n odd)
    "ndt-2x2x2": dict(
        endpoints=16, switches=16, links=8 + 24, max_radix=5, vcs={"external": 2, "internal": 4}
    ),
    # reference/ndt.md §1.5 (DORT 4x4x4: max 9, avg 4.795) and §1.4 Table 1.1 (49 of 129)
    "ndt-4x4x4": dict(
        endpoints=128,
        switches=128,
        links=64 + 192,
        max_radix=5,
        diameter=9,
        average_hops=4.795,
        vcs={"external": 2, "internal": 4},
        internal_transit={"transit": 129, "crossing": 49},
    ),
    # 8x8 torus under duato: every route minimal, so hops as DOR's: sum(k/4) = 4 over all pairs,
    # ·64/63 without self; 2 escape + 2 adaptive VCs; the middle cut crosses 2·8 links
    "torus-8x8-duato": dict(
        endpoints=64,
        switches=64,
        links=128,
        max_radix=5,
        diameter=8,
        average_hops=4 * 64 / 63,
        vcs={"external": 4},
        bisection=16,
        proof="duato",
    ),
    # ndt.md §3.5 Table 3: 4 VCs per external link, 8 internal; counts as ndt-4x4x4
    "ndt-4x4x4-adaptive": dict(
        endpoints=128,
        switches=128,
        links=64 + 192,
        max_radix=5,
        vcs={"external": 4, "internal": 8},
        proof="duato",
    ),
    # ndt.md §3.4: 4 VCs per link, internal and external (2 traffic classes x upper/lower)
    "ndt-4x4x4-tsdor": dict(
        endpoints=128,
        switches=128,
        links=64 + 192,
        max_radix=5,
        vcs={"external": 4, "internal": 4},
        proof="cdg",
    ),
    # reference/znode.md §1.8/§1.9: 4-ary 3-tree, 48 switches; hops 2c-2 switch links:
    # per source 3 peers at c=1 (0 hops), 12 at c=2 (2), 48 at c=3 (4) -> 216/63
    "znode-64": dict(
        endpoints=64,
        switches=48,
        links=128,
        endpoint_links=64,
        max_radix=8,
        diameter=4,
        average_hops=216 / 63,
        bisection=32,
    ),
    # znode-64's tree of T-switches (reference/ndt.md §2): below the top each of the 32
    # switches is two 5-port internal switches and one internal link, the 16 top switches are
    # Type B single 4-port switches; links: the tree's 128 + 32 internal. Routes: the tree's
    # 216/63 links on average plus the internal links, 1/2 k^(n+1) = 128 crossings per switch
    # below the top (Prop 20) over the 64 * 63 pairs; the longest crosses at stages 0 and 1
    # on the way up (backward connections never cross, Prop 19)
    # one UT64x2 (the Transit digest §5, Tables 3.4-3.5): 16 + 16 alternate-mode chips (two
    # switches each) + 12 + 8 = 84 switches, 52 chips; one-way channels: 32 up halves x 3
    # laterals + 8 level-3 chips x 8 + 12 level-2 chips x 8 = 256; each processor 2 in and 2
    # out; a route climbs one up half and descends 1, 2 or 3 levels: 3 peers at 1 hop, 12 at
    # 2, 48 at 3; bisection: the first half's 16 up halves have one wire each toward level 3
    "transit-full-64": dict(
        endpoints=64,
        switches=84,
        links=256,
        endpoint_links=256,
        max_radix=8,
        diameter=3,
        average_hops=(3 * 1 + 12 * 2 + 48 * 3) / 63,
        vcs={"down": 1, "side": 1},
        bisection=16,
        transit={"form": "full", "chips": 52, "chips_by_formula": 52, "unit_trees": {"UT64x2": 1}},
    ),
    "tswitch-4ary3": dict(
        endpoints=64,
        switches=80,
        links=160,
        endpoint_links=64,
        max_radix=5,
        diameter=4 + 2,
        average_hops=(216 + 32 * 128 / 64) / 63,
        vcs={"down": 1, "internal": 1, "up": 1},
        bisection=32,
    ),
    # reference/znode.md §1.9 table, Ch.6 buffer study row: 160 switches, 512 switch links,
    # 256 processor links, diameter 7 processor-to-processor = 5 switch links, bisection 128;
    # radix 4 down + 4 up + 3 side = 11. The table's 512 links are the tree's; side links
    # add l·Σ h_i·C(m,2)·R_i^T = (16 + 16 + 8)·6 = 240 (§1.4 totals)
    "snode-128": dict(
        endpoints=128,
        switches=160,
        links=512 + 240,
        endpoint_links=256,
        max_radix=11,
        diameter=5,
        bisection=128,
    ),
    # reference/znode.md §1.9, "512 optimum level 2": 72 switches, 512 + 512 links, diameter 4
    # processor-to-processor = 2 switch links, bisection 256; top switches have 64 down ports
    "znode-512": dict(
        endpoints=512,
        switches=72,
        links=512,
        endpoint_links=512,
        max_radix=64,
        diameter=2,
        bisection=256,
    ),
    # reference/hyperz-transit.md §1: HyperX 4x4 with 2 processors per switch; side links
    # 16·(3 + 3)/2; radix 2 + 6; diameter d = 2 (2h + d = 4 links minus the 2 processor links);
    # per source 1 peer at 0 hops, 6·2 at 1, 9·2 at 2 -> 48/31; the dimension-2 cut
    # (s_1)(s_2/2)^2 q = 4·4 = 16; 1 escape + 1 adaptive VC (aliod)
    "hyperz-hyperx-4x4": dict(
        endpoints=32,
        switches=16,
        links=48,
        endpoint_links=32,
        max_radix=8,
        diameter=2,
        average_hops=48 / 31,
        vcs={"side": 2},
        bisection=16,
        proof="duato",
    ),
    # H_{2,2}(4,2;1,1)(Z(4,2;1,2;1,1)): 8 Z-nodes of 2 + 2 switches; tree links 8·2·2, side links
    # per (level, X) 8·(3 + 1)/2 over 4 (level, X) -> 64; radix 4 + 2 + 4 and 2 + 4; diameter
    # 2(h-1) + d = 4; per source 3 at 0, 4 at 2 in its Z-node, per Z-node at |O| 4 at |O| and 4 at
    # 2 + |O| (4 Z-nodes at |O| = 1, 3 at 2) -> 144/63; dimension-2 cut 4·1·(2 + 2) = 16
    "hyperz-h2": dict(
        endpoints=64,
        switches=32,
        links=32 + 64,
        endpoint_links=64,
        max_radix=10,
        diameter=4,
        average_hops=144 / 63,
        vcs={"down": 2, "side": 2, "up": 2},
        bisection=16,
        proof="duato",
    ),
    # H_{3,2}(2,2,2;1,1,1)(Z(2,2;1,2;1,1)): tree links 8·4, side links 8·3/2 per (level, X) over 4;
    # radix 2 + 2 + 3; diameter 2 + 3; per source 0 + 2·2 in its Z-node, per Z-node 4|O| + 4
    # (3 at |O| = 1, 3 at 2, 1 at 3) -> 80/31; dimension-3 cut 4·1·(2 + 2) = 16
    "hyperz-d3": dict(
        endpoints=32,
        switches=32,
        links=32 + 48,
        endpoint_links=32,
        max_radix=7,
        diameter=5,
        average_hops=80 / 31,
        vcs={"down": 2, "side": 2, "up": 2},
        bisection=16,
        proof="duato",
    ),
    # H_{2,2}(3,2;2,2)(Z(2,2;1,2;1,1)): tree links 6·2·2, side links per (level, X) (2·3 + 3)·2
    # lanes over 4 -> 24 + 72, 3 dead; radix 2 + 2 + (2·2 + 2) on level 1; intact per source
    # 2·2 in its Z-node and 4|O| + 4 per other (3 at |O| = 1, 2 at 2) -> 52; the dead lanes cost
    # the 2·2 pairs each way between h0.0s1_0 and h0.1s1_0 2 hops each (up, side, down): +16;
    # 2 escape VCs (the recoil on the second) + 1 adaptive
    "hyperz-recoil": dict(
        endpoints=24,
        switches=24,
        links=96 - 3,
        endpoint_links=24,
        max_radix=10,
        average_hops=(24 * 52 + 16) / (24 * 23),
        vcs={"down": 3, "side": 3, "up": 3},
        routing="aliod",
        proof="duato",
    ),
}
SLOW = {
    # reference/hyperz-transit.md §1, §3 (§5.3's first point): Eq. 2 switches 4·(32 + 32 + 8);
    # tree links 4·(32·8 + 32·4), side links 4·2/2 per (level, X) over 72; radix 16 + 2 = 18 (the
    # paper's); diameter 2(h-1) + d = 6; per source 7·0 + 24·2 + 224·4 = 944 in its Z-node and
    # 256|O| + 944 per other (2 at |O| = 1, 1 at 2) -> 4800/1023; dimension-2 cut 2·1·72 = 144
    "hyperz-1024": dict(
        endpoints=1024,
        switches=288,
        links=1536 + 288,
        endpoint_links=1024,
        max_radix=18,
        diameter=6,
        average_hops=4800 / 1023,
        vcs={"down": 2, "side": 2, "up": 2},
        bisection=144,
        proof="duato",
    ),
    # reference/ndt.md §1.5: 5DT 4x4x2x4x4 DORT max 11, avg 5.944
    "ndt-4x4x2x4x4": dict(
        endpoints=1024,
        switches=1024,
        links=512 + 5 * 512,
        max_radix=7,
        diameter=11,
        average_hops=5.944,
        vcs={"external": 2, "internal": 4},
    ),
}


def test_every_example_is_covered():
    assert {p.stem for p in EXAMPLES.glob("*.yaml")} == set(EXPECTED) | set(SLOW)


def check_json(name, capsys):
    assert main(["check", str(EXAMPLES / f"{name}.yaml"), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def compare(report, expected, name):
    assert report["name"] == name
    assert report["deadlock_free"] is True and report["cycle"] is None
    for key, value in expected.items():
        if key == "average_hops":
            assert report[key] == pytest.approx(value, abs=5e-4), key
        else:
            assert report[key] == value, key


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_check_json(name, capsys):
    compare(check_json(name, capsys), EXPECTED[name], name)


@pytest.mark.matrix  # 1.5-2 minutes each
@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SLOW))
def test_check_json_slow(name, capsys):
    compare(check_json(name, capsys), SLOW[name], name)


# the Transit studies compare fabrics of one size: bidelta 4^5 and 4^6 processors, the 4-ary
# 5-tree 4^5, the Znodes 4 * 4 * 4 * 16 and 4 * 4 * 4 * 4 * 12, the full tree 64^2, the hybrid
# 64 B48 leaves of 48
@pytest.mark.parametrize(
    ("name", "endpoints"), [("transit-1024", 1024), ("transit-3072", 3072), ("transit-4096", 4096)]
)
def test_transit_study_fabrics_have_its_processors(name, endpoints):
    study = load_study(STUDIES / f"{name}.yaml")
    specs = {point.spec_json for point in study.points}
    assert len(specs) == len(study.specs)
    for spec in specs:
        assert len(compile_plan(spec_from_dict(json.loads(spec))).endpoints) == endpoints
