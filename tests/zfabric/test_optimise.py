"""The Znode cost optimiser (reference/znode.md §4).

Expected values come from the digest's §4.4 table (its own enumeration of the thesis's model,
which reproduces the thesis's quoted −9.61 dB, −12.04 dB and 36-processor optimum) and from a
brute-force enumeration written here from the digest's formulas (§1.4, §4.2) without pruning.
"""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path

import pytest
import yaml

from zfabric.cli import main
from zfabric.optimise import cost, factorisations, optimise, optimise_level
from zfabric.topologies.znode import ZnodeParams


def configs(result):
    return {(c.z, c.R) for c in result.ties}


def db(result):
    return round(result.pick.relative_power_db, 2)


# ---- the must-show values (digest §4.4; psi = 1, forward, theta = 64) -----------------


def test_512_processors():
    optimum = optimise(512)
    assert [r.levels for r in optimum.best] == [4, 5, 6, 7]  # the thesis names 4 and 6
    assert {db(r) for r in optimum.best} == {-9.61}
    level2 = optimum.levels[[r.levels for r in optimum.levels].index(2)]
    assert db(level2) == -7.27
    assert configs(level2) == {((8, 64), (1, 8)), ((16, 32), (1, 16))}
    # digest: level 3 at -9.03 dB with three ties, level 8 -9.31, level 9 -8.90
    level3 = optimise_level(512, 3)
    assert db(level3) == -9.03
    assert configs(level3) == {
        ((4, 4, 32), (1, 4, 16)),
        ((4, 8, 16), (1, 4, 32)),
        ((8, 4, 16), (1, 8, 32)),
    }
    assert db(optimise_level(512, 8)) == -9.31
    assert db(optimise_level(512, 9)) == -8.90
    # digest §4.1: z = (4,4,4,8), R = (1,4,16,64) costs 28,672
    assert ((4, 4, 4, 8), (1, 4, 16, 64)) in configs(optimise_level(512, 4))
    assert optimise_level(512, 4).cost == 28672


def test_1024_processors():
    level6 = optimise_level(1024, 6)
    assert db(level6) == -12.04
    assert level6.cost == 1024**2 // 16  # digest §4.1: oZ6 costs 65,536
    assert ((4, 2, 2, 4, 2, 8), (1, 4, 8, 16, 64, 128)) in configs(level6)  # the thesis's oZ6
    assert len(level6.ties) == 15  # digest: "one of 15 level-6 ties"
    optimum = optimise(1024)
    assert [r.levels for r in optimum.best] == [4, 5, 6, 7, 8]  # digest: L4-L8 -12.04 dB
    assert db(optimise_level(1024, 2)) == -9.03
    assert configs(optimise_level(1024, 2)) == {((16, 64), (1, 16))}
    level3 = optimise_level(1024, 3)
    assert db(level3) == -11.07 and len(level3.ties) == 3
    assert ((8, 8, 16), (1, 8, 64)) in configs(level3)  # the §5.4 addressing-study Znode


def test_36_processors_unique_minimum():
    optimum = optimise(36)
    assert len(optimum.best) == 1 and len(optimum.best[0].ties) == 1
    assert (optimum.best[0].pick.z, optimum.best[0].pick.R) == ((3, 12), (1, 3))
    assert db(optimum.best[0]) == -1.76


def test_60_processors():
    level3 = optimise_level(60, 3)
    assert db(level3) == -3.01
    assert configs(level3) == {((2, 3, 10), (1, 2, 6)), ((3, 2, 10), (1, 3, 6))}
    level2 = optimise_level(60, 2)
    assert db(level2) == -2.87 and configs(level2) == {((4, 15), (1, 4))}


def test_2048_processors():
    level4 = optimise_level(2048, 4)  # digest: -14.08 dB, e.g. the §5.7 capacity Znode
    assert db(level4) == -14.08
    assert ((4, 4, 4, 32), (1, 4, 16, 64)) in configs(level4)
    assert {db(optimise_level(2048, n)) for n in range(5, 10)} == {-14.54}


# ---- against an unpruned brute force ----------------------------------------------------------


def brute_force(P, n, theta, kind, m=1, psi=None, cap=None):
    """Every (z, R) minimising m·Σ R_i N_i L_i² by the digest's formulas, R_i <= cap."""
    Pz = P // m
    psi = psi or (1,) * n
    cap = cap or theta
    side = m - 1
    best, found = math.inf, set()
    shapes = [z for z in itertools.product(range(2, Pz + 1), repeat=n) if math.prod(z) == Pz]
    for z in shapes:
        for R in itertools.product(range(1, cap + 1), repeat=n):
            links, ok = [], True
            for i in range(n):  # 0-based level i is the thesis's level i+1
                lower = R[i - 1] if i else None
                if kind == "forward":
                    if i + 1 < n and (R[i + 1] % R[i] or psi[i + 1] > R[i]):
                        ok = False
                    down = z[i] * psi[i]
                    up = R[i + 1] // R[i] * psi[i + 1] if i + 1 < n else 0
                elif kind == "backward":
                    if i + 1 < n and (R[i] % R[i + 1] or psi[i + 1] > R[i + 1]):
                        ok = False
                    down = (lower // R[i] if i else 1) * z[i] * psi[i]
                    up = psi[i + 1] if i + 1 < n else 0
                else:
                    down = (lower if i else 1) * z[i]
                    up = R[i + 1] if i + 1 < n else 0
                if i + 1 < n and R[i] * up < math.prod(z[: i + 1]):  # full bisection
                    ok = False
                links.append(down + up + side)
            if not ok or max(links) > theta:
                continue
            total = m * sum(R[i] * math.prod(z[i + 1 :]) * links[i] ** 2 for i in range(n))
            if total < best:
                best, found = total, {(z, R)}
            elif total == best:
                found.add((z, R))
    return best, found


BRUTE = [
    # (P, levels, theta, connectivity, znodes, psi, R cap)
    (24, 2, 64, "forward", 1, None, 48),
    (36, 2, 64, "forward", 1, None, 72),
    (24, 3, 16, "forward", 1, None, 32),
    (48, 3, 16, "forward", 1, None, 32),  # three ties
    (64, 3, 16, "forward", 1, None, 32),  # three ties
    (16, 3, 12, "forward", 1, (1, 2, 2), 32),
    (24, 3, 16, "backward", 1, None, 32),
    (36, 2, 64, "backward", 1, None, 72),
    (16, 3, 16, "backward", 1, (1, 2, 2), 32),
    (24, 2, 16, "full", 1, None, 16),
    (24, 3, 16, "full", 1, None, 16),
    (36, 3, 24, "full", 1, None, 24),
    (48, 3, 20, "full", 1, None, 20),  # two ties
    (32, 3, 16, "forward", 2, None, 32),
    (32, 3, 16, "backward", 2, None, 32),
    (32, 3, 16, "full", 2, None, 16),
]


@pytest.mark.parametrize(("P", "n", "theta", "kind", "m", "psi", "cap"), BRUTE)
def test_every_tie_matches_brute_force(P, n, theta, kind, m, psi, cap):
    expected_cost, expected = brute_force(P, n, theta, kind, m, psi, cap)
    result = optimise_level(P, n, theta=theta, connectivity=kind, znodes=m, psi=psi)
    assert result is not None and expected
    assert result.cost == expected_cost
    assert configs(result) == expected


def test_infeasible_level_is_none():
    # 8192 processors cannot be fully connected under theta 64: R_{n-1}·z_n <= 63 needs R_n > 64
    assert optimise(8192, connectivity="full").levels == ()
    assert brute_force(64, 2, 8, "forward", cap=16)[1] == set()
    assert optimise_level(64, 2, theta=8) is None


def test_costs_are_the_builders_link_counts():
    """Every tie's cost and links are those of the fabric the topology builder makes of it."""
    for kwargs in (
        {},
        {"connectivity": "backward"},
        {"connectivity": "full"},
        {"znodes": 4},
        {"psi": 2},
    ):
        for result in optimise(256, range(2, 5), **kwargs).levels:
            for candidate in result.ties:
                params = candidate.params()
                assert cost(params) == candidate.cost
                assert tuple(params.radix(i) for i in range(1, params.n + 1)) == candidate.links


def test_super_node_counts_side_ports():
    # digest §7.7: the 512 oZ2 replicated twice, side ports counted, is -10.01 dB (it breaks
    # theta = 64 at level 2: 64 + 1 links), so only the cost function is checked here
    twice = ZnodeParams(z=(8, 64), R=(1, 8), psi=(1, 1), znodes=2, theta=65)
    assert round(10 * math.log10(cost(twice) / 1024**2), 2) == -10.01
    for candidate in optimise_level(1024, 3, znodes=2).ties:
        assert all(links <= 64 for links in candidate.links)


def test_factorisations():
    assert sorted(factorisations(12, 2)) == [(2, 6), (3, 4), (4, 3), (6, 2)]
    assert list(factorisations(8, 3)) == [(2, 2, 2)]
    assert list(factorisations(7, 2)) == []
    # compositions of 13 into 9 parts >= 1: C(12, 8)
    assert sum(1 for _ in factorisations(8192, 9)) == math.comb(12, 8)


def test_library_refuses_bad_values():
    with pytest.raises(ValueError, match=r"multiple of znodes \(3\), not 512"):
        optimise(512, znodes=3)
    with pytest.raises(ValueError, match="connectivity must be one of"):
        optimise(512, connectivity="sideways")
    with pytest.raises(ValueError, match=r"psi must have 2 entries"):
        optimise_level(512, 2, psi=(1, 2, 2))
    with pytest.raises(ValueError, match="psi is implied by full connectivity"):
        optimise_level(512, 2, connectivity="full", psi=2)


# ---- the command ------------------------------------------------------------------------------


def test_cli_prints_every_tie(capsys):
    assert main(["optimise", "-P", "60", "--levels", "3"]) == 0
    out = capsys.readouterr().out
    assert "-3.01" in out
    assert "z=(2,3,10) R=(1,2,6)" in out and "z=(3,2,10) R=(1,3,6)" in out


def test_cli_json(capsys):
    assert main(["optimise", "-P", "512", "--max-levels", "7", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["best_levels"] == [4, 5, 6, 7]
    assert [level["levels"] for level in report["levels"]] == [2, 3, 4, 5, 6, 7]  # 512 > theta
    level2 = report["levels"][0]
    assert round(level2["relative_power_db"], 2) == -7.27
    assert {(tuple(t["z"]), tuple(t["R"])) for t in level2["ties"]} == {
        ((8, 64), (1, 8)),
        ((16, 32), (1, 16)),
    }


def test_written_specs_pass_check(tmp_path, capsys):
    out = tmp_path / "specs"
    assert main(["optimise", "-P", "36", "--write-specs", str(out)]) == 0
    written = sorted(out.glob("*.yaml"))
    assert [p.name for p in written] == [f"znode-36-n{n}.yaml" for n in (1, 2, 3, 4)]
    spec = yaml.safe_load((out / "znode-36-n2.yaml").read_text())
    assert spec["topology"] == {"kind": "znode", "z": [3, 12], "R": [1, 3]}
    for path in written:
        assert main(["check", str(path)]) == 0
    # full connectivity and a super node: the specs carry psi and znodes
    assert main(["optimise", "-P", "64", "--levels", "3", "-m", "2", "--connectivity", "full",
                 "--write-specs", str(out)]) == 0  # fmt: skip
    spec = yaml.safe_load((out / "znode-64-m2-n3.yaml").read_text())
    assert spec["topology"]["znodes"] == 2
    assert main(["check", str(out / "znode-64-m2-n3.yaml")]) == 0
    capsys.readouterr()
    # again into the same folder: zfabric's own files are replaced
    assert main(["optimise", "-P", "36", "--write-specs", str(out)]) == 0


def test_write_specs_never_overwrites_a_users_file(tmp_path, capsys):
    user = tmp_path / "znode-36-n2.yaml"
    user.write_text("my own spec\n")
    assert main(["optimise", "-P", "36", "--write-specs", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "--write-specs" in err and "refusing to overwrite" in err
    assert user.read_text() == "my own spec\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["znode-36-n2.yaml"]


def test_write_specs_skips_picks_over_the_spec_limits(tmp_path, capsys, monkeypatch):
    # every 1024-processor pick fits today's limit (32768 switches); at 4096 the level-9 pick's
    # 4352 switches do not
    monkeypatch.setattr("zfabric.spec.MAX_SWITCHES", 4096)
    assert main(["optimise", "-P", "1024", "--write-specs", str(tmp_path), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (
        "9" in report["specs_refused"] and "over the limit of 4096" in report["specs_refused"]["9"]
    )
    assert not (tmp_path / "znode-1024-n9.yaml").exists()
    assert [Path(p).name for p in report["specs"]][0] == "znode-1024-n2.yaml"
