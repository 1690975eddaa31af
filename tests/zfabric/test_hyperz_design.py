"""HyperZ's design space (Eq. 3 and 4) against the paper's statements (reference/hyperz-transit.md
§1 and §10), exhaustive enumeration of the two inequalities, and the built fabrics' counts."""

from __future__ import annotations

import json

import pytest

from zfabric import compile_plan, load_spec
from zfabric.cli import main
from zfabric.hyperz_design import Design, explore, spec_for, z_bounds


def test_the_paper_fig_3_design():
    # §3 / Fig 3: at least 131072 processors with h = 3 and d = 3 needs 8 S-nodes: 8^6 = 262144
    # processors, and the switches then have 2·8 + 3·1·7 = 37 ports (the paper's "about 32" is
    # loose, §10): with 37 ports it is the only z, with 32 there is none
    assert z_bounds(131072, 37, 3, 3, 1) == (8, 8)
    (design,) = [d for d in explore(131072, 37).designs if (d.d, d.h) == (3, 3)]
    assert (design.z, design.processors, design.ports, design.diameter) == (8, 262144, 37, 9)
    assert not [d for d in explore(131072, 32).designs if (d.d, d.h) == (3, 3)]


def test_the_bounds_are_the_two_inequalities():
    # every z in range, counted by brute force: 2z + dq(z-1) <= L and z^(h+d) >= P, z >= 2
    for processors in (2, 64, 1000, 4096, 131072, 10**6):
        for ports in (4, 8, 16, 37, 64):
            space = explore(processors, ports, max_dims=5, max_height=4, lanes=(1, 2, 3))
            found = {(x.d, x.h, x.q, x.z) for x in space.designs}
            expected = {
                (d, h, q, z)
                for d in range(1, 6)
                for h in range(1, 5)
                for q in (1, 2, 3)
                for z in range(2, ports + 1)
                if 2 * z + d * q * (z - 1) <= ports and z ** (h + d) >= processors
            }
            assert found == expected, (processors, ports)


def test_hyperx_needs_more_dimensions():
    # Fig 3's remark: at a fixed port budget the lower HyperX (h = 1) needs more dimensions.
    # For 131072 processors and 37 ports, by hand: h = 1 first fits at d = 8 (z >= 4 from
    # 4^9 = 262144, z <= 45/10), h = 3 at d = 3 (z = 8)
    designs = explore(131072, 37).designs
    assert min(x.d for x in designs if x.h == 1) == 8
    assert min(x.d for x in designs if x.h == 3) == 3


@pytest.mark.parametrize("d, h, q, z", [(1, 2, 1, 3), (2, 3, 2, 2), (2, 2, 1, 3), (3, 1, 1, 2)])
def test_counts_match_the_built_fabric(d, h, q, z):
    # the design's spec compiles with l_max = its ports: processors, switches, links and, at
    # h >= 2, the busiest switch's radix are the formulas' (at h = 1 there are no up ports)
    design = Design(d, h, q, z)
    plan = compile_plan(load_spec(spec_for(design, design.ports)))
    assert len(plan.endpoints) == design.processors
    assert len(plan.switches) == design.switches
    endpoint_links = sum(len(e.attachments) for e in plan.endpoints)
    assert len(plan.links) // 2 + endpoint_links == design.side_links + design.tree_links
    radix = max(switch.radix for switch in plan.switches)
    assert radix == (design.ports if h > 1 else design.ports - z)


def test_the_command(capsys):
    # d <= 3, h <= 3, 131072 processors, 37 ports, by hand: z >= 131072^(1/(h+d)) and
    # z <= (d + 37)/(d + 2) meet only at d = h = 3 (z = 8); e.g. d = 3, h = 2 needs z >= 11 > 8
    argv = ["hyperz-design", "-P", "131072", "-L", "37", "--max-dims", "3", "--max-height", "3"]
    assert main([*argv, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert len(report["ranges"]) == 9
    (design,) = report["designs"]
    assert design["notation"] == "H_{3,3}(8,8,8; 1,1,1)(Z_3(8,8,8; 1,8,64; 1,1,1))"
    assert (design["processors"], design["ports"], design["diameter"]) == (262144, 37, 9)
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "1 design," in text and "H_{3,3}(8,8,8; 1,1,1)" in text


@pytest.mark.parametrize(
    "argv, where",
    [
        (["-P", "1", "-L", "37"], "--processors"),
        (["-P", "512", "-L", "3"], "--ports"),
        (["-P", "512", "-L", "37", "--lanes", "0,1"], "--lanes"),
        (["-P", "512", "-L", "37", "--max-dims", "0"], "--max-dims"),
    ],
)
def test_bad_arguments(argv, where, capsys):
    with pytest.raises(SystemExit) as stop:
        main(["hyperz-design", *argv])
    assert stop.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and where in err[0]
