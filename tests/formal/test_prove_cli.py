"""``zfabric prove``: the unit proofs per switch kind, a planted bug reported as FAILED with its
trace, and bad arguments refused before any work."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from test_formal_allocator import SecondWithoutCredit
from test_formal_input_unit import CreditTwice
from zfabric.hdl.formal import kinds
from zfabric.hdl.formal.allocator import AllocatorHarness
from zfabric.hdl.formal.input_unit import InputUnitHarness

from zfabric.cli import main


@pytest.fixture
def tools(sby):
    """The proofs' tools are installed (the ``sby`` fixture skips or fails otherwise)."""


def _with_stages(spec: Path, stages: int, folder: Path) -> Path:
    """A copy of ``spec`` in ``folder`` with ``router.stages`` set."""
    data = yaml.safe_load(spec.read_text())
    data["router"] = {**data.get("router", {}), "stages": stages}
    path = folder / f"{spec.stem}-s{stages}.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.mark.formal
@pytest.mark.parametrize("stages", [1, 4])
def test_torus_every_property_holds(tools, example, tmp_path, capsys, stages):
    out = tmp_path / "proofs"
    path = _with_stages(example("torus-4x4"), stages, tmp_path)
    assert main(["prove", str(path), "--json", "-q", "-o", str(out)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["holds"] and report["depth"] == 2 * (4 + 3) + 4
    # every torus switch has 5 ports, 2 VCs, the same turns; then the endpoints
    switch, endpoint = report["kinds"]
    assert len(switch["instances"]) == 16 and len(endpoint["instances"]) == 16
    names = {p["property"] for p in switch["properties"]}
    assert names == {"counts", "order", "credits and owners", "grants", "ownership", "route"}
    endpoint_names = {p["property"] for p in endpoint["properties"]}
    assert endpoint_names == {"buffers", "presentation", "injection"}
    for kind in report["kinds"]:
        assert all(p["result"] in ("proven", "bmc") for p in kind["properties"])
    assert json.loads((out / "prove.json").read_text()) == report


@pytest.mark.formal
@pytest.mark.parametrize(
    ("name", "switch_kinds", "switches"),
    # ndt-2x2x2: twin nodes of 2 cards (the cards of a node differ in their turns: 2 kinds, 8
    # nodes x 2 cards); znode-64 (4-ary 3-tree): 16 level-1 switches with 4 down and 4 up
    # ports, 16 of level 2 alike, 16 top switches with 4 down ports only: 2 kinds
    [("ndt-2x2x2", 2, 16), ("znode-64", 2, 48)],
)
def test_twin_node_and_tree_every_property_holds(
    tools, example, tmp_path, capsys, name, switch_kinds, switches
):
    out = tmp_path / "proofs"
    assert main(["prove", str(example(name)), "--json", "-q", "-o", str(out)]) == 0
    report = json.loads(capsys.readouterr().out)
    *kinds, endpoint = report["kinds"]
    assert report["holds"] and len(kinds) == switch_kinds
    assert sum(len(kind["instances"]) for kind in kinds) == switches
    for kind in report["kinds"]:
        assert all(p["result"] in ("proven", "bmc") for p in kind["properties"])


def test_planted_bug_fails_with_a_trace(tools, example, tmp_path, monkeypatch, capsys):
    # every input unit of ring-2 returns its credits twice: the counts proof must fail
    class Broken(InputUnitHarness):
        def __init__(self, **kwargs):
            super().__init__(**kwargs, unit_class=CreditTwice)

    monkeypatch.setattr(kinds, "InputUnitHarness", Broken)
    out = tmp_path / "proofs"
    assert main(["prove", str(example("ring-2")), "--json", "-q", "-o", str(out)]) == 1
    report = json.loads(capsys.readouterr().out)
    failed = [p for k in report["kinds"] for p in k["properties"] if p["result"] == "failed"]
    assert {p["property"] for p in failed} >= {"counts"}
    for p in failed:
        assert p["vcd"].endswith(".vcd") and (out / p["vcd"].rsplit("/", 1)[1]).is_file()
    # ring-2 has input units of 1 and 2 VCs: each failed proof keeps a trace of its own
    own = [p["vcd"] for p in failed if "same_as_kind" not in p]
    assert len(own) >= 2 and len(set(own)) == len(own)
    assert not report["holds"]


def test_a_solver_run_without_verdict_is_an_error_not_a_bound(example, tmp_path, monkeypatch):
    """A SymbiYosys run that ends without PASS, FAIL or TIMEOUT (a crash, a broken install) must
    not be reported as a bounded check that holds."""
    from zfabric.hdl.formal.sby import FormalResult

    def crashed(harness, directory, *, mode, depth, timeout):
        directory.mkdir(parents=True, exist_ok=True)  # as run_sby does
        return FormalResult(mode, False, "ERROR", "ERROR: yosys crashed\n", [])

    monkeypatch.setattr(kinds, "run_sby", crashed)
    monkeypatch.setattr("zfabric.hdl.formal.sby.tools_missing", lambda: [])
    out = tmp_path / "proofs"
    assert main(["prove", str(example("ring-2")), "--json", "-q", "-o", str(out)]) == 1
    report = json.loads((out / "prove.json").read_text())
    results = {p["result"] for k in report["kinds"] for p in k["properties"]}
    assert results == {"error"} and not report["holds"]
    assert all("yosys crashed" in p["text"] for k in report["kinds"] for p in k["properties"])


@pytest.mark.parametrize(
    ("args", "named", "value"),
    [
        (["--depth", "1"], "--depth", "'1'"),
        (["--depth", "many"], "--depth", "'many'"),
        (["--timeout", "0"], "--timeout", "'0'"),
    ],
)
def test_bad_argument_exits_2(example, tmp_path, capsys, args, named, value):
    with pytest.raises(SystemExit) as exit:
        main(["prove", str(example("ring-2")), "-o", str(tmp_path / "p"), *args])
    assert exit.value.code == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and named in err and value in err
    assert not (tmp_path / "p").exists()


def test_bad_spec_and_foreign_folder_exit_2(example, tmp_path, capsys):
    assert main(["prove", str(tmp_path / "missing.yaml"), "-o", str(tmp_path / "p")]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "missing.yaml" in err
    # a folder of the user's: refused before any proof, the user's file untouched
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep")
    assert main(["prove", str(example("ring-2")), "-o", str(mine)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "--output" in err and str(mine) in err
    assert [p.name for p in mine.iterdir()] == ["notes.txt"]
    assert (mine / "notes.txt").read_text() == "keep"


def test_stages_4_planted_bug_fails(tools, example, tmp_path, monkeypatch, capsys):
    """``stages: 4`` is proven on the allocator's two-cycle switch allocation: with its input
    VCs believing in a second credit they may lack, the ownership proof fails."""

    class Broken(AllocatorHarness):
        def __init__(self, **kwargs):
            super().__init__(**kwargs, unit_class=SecondWithoutCredit)

    monkeypatch.setattr(kinds, "AllocatorHarness", Broken)
    out = tmp_path / "proofs"
    path = _with_stages(example("ring-2"), 4, tmp_path)
    assert main(["prove", str(path), "--json", "-q", "-o", str(out)]) == 1
    report = json.loads(capsys.readouterr().out)
    switch, _endpoint = report["kinds"]
    assert "switch allocation in two cycles" in switch["units"]
    failed = {p["property"] for p in switch["properties"] if p["result"] == "failed"}
    assert failed == {"ownership"}
