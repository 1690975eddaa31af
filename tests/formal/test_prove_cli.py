"""``zfabric prove``: the unit proofs per switch kind, a planted bug reported as FAILED with its
trace, and bad arguments refused before any work."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from bubble_specs import BUBBLE_TORUS
from test_formal_allocator import SecondWithoutCredit
from test_formal_input_unit import CreditTwice
from zfabric.hdl.formal import kinds
from zfabric.hdl.formal.allocator import AllocatorHarness
from zfabric.hdl.formal.input_unit import InputUnitHarness
from zfabric.hdl.formal.output_unit import OutputUnitHarness

from zfabric.cli import main
from zfabric.spec import load_spec
from zfabric.topologies import compile_plan


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


@pytest.mark.formal  # the unit's own catch runs by default (test_second_without_credit_caught)
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


#: the 16-processor super node of tests/hdl's snode-16
SNODE_16 = {
    "name": "snode-16",
    "topology": {"kind": "znode", "znodes": 2, "z": [2, 4], "R": [2, 2]},
}


def _head_flit_spec(example, name: str | None, routing: str, head_bits: int) -> dict:
    """examples/``name`` (None: :data:`SNODE_16`) with ``routing`` and ``router.head_bits``."""
    data = yaml.safe_load(example(name).read_text()) if name else dict(SNODE_16)
    return data | {"routing": routing, "router": {"head_bits": head_bits}}


def _head_flit_plan(example, name: str | None, routing: str, head_bits: int):
    return compile_plan(load_spec(_head_flit_spec(example, name, routing, head_bits)))


def test_head_flit_kinds(example):
    """The proof kinds carry the head flits the RTL builds: flat on znode-64 (6-bit addresses)
    at 3 bits a flit, 2 head flits sent and stripped by every endpoint, nothing dropped on the
    way; sliced on snode-16 (headers of up to 1 + 1 + 1 + 2 + 1 = 6 bits: turn bits, the Znode
    id, the labels of levels 2 and 1) at 2 bits a flit, 1 to 3 head flits sent, up to 2
    dropped with a head, so 2-bit credit counts into every switch input."""
    *switches, endpoint = kinds.proof_kinds(_head_flit_plan(example, "znode-64", "flat", 3))
    assert (endpoint.head_flits, endpoint.varying, endpoint.credit_width) == (2, 0, 1)
    assert all(k.max_skip == 0 and set(k.out_credit) == {1} for k in switches)
    props = {p.name: p.make() for p in kinds.properties(endpoint)}
    assert props["presentation"]._head_flits == 2 and props["injection"]._head_flits == 2
    *switches, endpoint = kinds.proof_kinds(_head_flit_plan(example, None, "sliced", 2))
    assert (endpoint.head_flits, endpoint.varying, endpoint.credit_width) == (1, 3, 2)
    for kind in switches:
        assert kind.max_skip == 2
        # a count toward switches, a pulse toward the endpoints (level-1 down ports)
        assert set(kind.out_credit) <= {1, 2} and 2 in kind.out_credit
        made = {(p.unit, p.name): p.make() for p in kinds.properties(kind)}
        assert {h._max_skip for h in made.values() if isinstance(h, InputUnitHarness)} == {2}
        widths = {h._credit_width for h in made.values() if isinstance(h, OutputUnitHarness)}
        assert widths == set(kind.out_credit)
    injection = next(p for p in kinds.properties(endpoint) if p.name == "injection").make()
    assert (injection._head_flits, injection._varying, injection._credit_width) == (3, True, 2)


@pytest.mark.parametrize(
    ("name", "routing", "head_bits"),
    # fixed heads of 2 flits on a torus (4 destinations, 1 bit a flit; 17 s) and, with the
    # long proofs, on znode-64 (flat, 6-bit addresses at 3 bits: 21 s); sliced heads of 1 to 3
    # flits on the super node (47 s)
    [
        ("torus-2x2", "dor", 1),
        pytest.param("znode-64", "flat", 3, marks=pytest.mark.formal),
        pytest.param(None, "sliced", 2, marks=pytest.mark.formal),
    ],
)
def test_head_flit_plans_hold(tools, example, tmp_path, capsys, name, routing, head_bits):
    data = _head_flit_spec(example, name, routing, head_bits)
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(data))
    assert main(["prove", str(path), "--json", "-q", "-o", str(tmp_path / "proofs")]) == 0
    report = json.loads(capsys.readouterr().out)
    plan = compile_plan(load_spec(data))
    assert report["holds"] and len(report["kinds"]) == len(kinds.proof_kinds(plan))
    # every property unbounded, head flits included
    assert {p["result"] for k in report["kinds"] for p in k["properties"]} == {"proven"}
    assert "head flits" in report["kinds"][-1]["units"]


@pytest.mark.parametrize("stages, shared", [(1, True), (3, True), (4, False), (5, False)])
def test_input_unit_proofs_follow_the_switchs_data_form(example, tmp_path, stages, shared):
    """`prove` proves the input unit the switch builds: one RAM for every VC's data at
    `stages` 1-3, the data in each VC's FIFO at 4 and 5 (InputUnit's ``shared_data``)."""
    spec = load_spec(_with_stages(example("torus-4x4"), stages, tmp_path))
    (kind,) = kinds.proof_kinds(compile_plan(spec))[:-1]
    assert kind.shared_data is shared
    made = [p.make() for p in kinds.properties(kind)]
    units = [h for h in made if isinstance(h, InputUnitHarness)]
    assert units and {h._shared_data for h in units} == {shared}


BUBBLE = {**BUBBLE_TORUS, "name": "bubble"}


def test_bubble_kinds_carry_the_ring_rule():
    """Every switch of a bubble torus: the ring outputs need 2L = 8 credits to be entered, the
    local input enters all four rings, and a ring's input enters every ring but its own."""
    plan = compile_plan(load_spec(BUBBLE))
    switch_kind = kinds.proof_kinds(plan)[0]
    assert len(switch_kind.switches) == 16
    ports = plan.switches[0].ports
    local = next(p for p, port in enumerate(ports) if port.role != "external")
    rings = {p: (port.dim, port.sign) for p, port in enumerate(ports) if port.role == "external"}
    assert switch_kind.out_entering == tuple(0 if p == local else 8 for p in range(5))
    for p, mask in enumerate(switch_kind.entering):
        entered = {o for o in rings if mask >> o & 1}  # one VC a port: output VC o is port o
        if p == local:
            assert entered == set(rings)
        else:  # arriving on the port facing (d, -s) the packet travels (d, s)
            dim, sign = rings[p]
            continuing = next(o for o, ring in rings.items() if ring == (dim, -sign))
            assert continuing not in entered and set(rings) - entered <= {continuing, p}


@pytest.mark.formal
def test_bubble_torus_every_property_holds(tools, tmp_path, capsys):
    path = tmp_path / "bubble.yaml"
    path.write_text(yaml.safe_dump(BUBBLE))
    assert main(["prove", str(path), "--json", "-q", "-o", str(tmp_path / "proofs")]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["holds"]
    properties = report["kinds"][0]["properties"]
    rule = [
        p
        for p in properties
        if "free2 only with 8 credits" in p["statement"]
        or "enters a ring only with room for two packets" in p["statement"]
    ]
    assert len(rule) == 2 and all(p["result"] == "proven" for p in rule)
