"""``zfabric analytic``: the thesis's chapter 4 and 5 models for a torus or mesh, refusals of
other families (exit 2, one line), the JSON's shape, the cycle model beside it."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from zfabric.cli import main


def test_refuses_other_families_naming_them(example, tmp_path):
    for name, family in (("znode-64", "kary_ntree"), ("ndt-2x2", "ndt"), ("hyperz-h2", "hyperz")):
        result = subprocess.run(
            [sys.executable, "-m", "zfabric.cli", "analytic", str(example(name)), "--plot",
             str(tmp_path / "a.png")],
            capture_output=True, text=True, cwd=tmp_path,
        )  # fmt: skip
        assert result.returncode == 2, result.stderr
        assert result.stdout == ""
        lines = result.stderr.strip().splitlines()
        assert lines == [
            "zfabric: error: topology.kind: the analytic models cover k-ary n-cubes (kind torus"
            f" or mesh), not {family}"
        ]
        assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "args, key",
    [
        (["--packet-length", "4-8"], "--packet-length"),
        (["--model", "duato"], "--model"),
        (["--plot", "curve.xyz"], "--plot"),
    ],
)
def test_bad_arguments_exit_2(example, capsys, args, key):
    assert main(["analytic", str(example("torus-4x4")), *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"zfabric: error: {key}")


def test_refuses_rings_without_escape_classes(tmp_path, capsys):
    spec = tmp_path / "ring.yaml"
    spec.write_text(
        "name: ring\ntopology: {kind: torus, k: [5]}\nrouting: {name: dor, datelines: false}\n"
    )
    assert main(["analytic", str(spec)]) == 2
    assert "routing.datelines" in capsys.readouterr().err


def test_refuses_links_longer_than_a_cycle(tmp_path, capsys):
    """The thesis's models take one cycle a link: a spec's ``link_latency`` would make them
    describe another fabric than the one the cycle model runs."""
    spec = tmp_path / "long.yaml"
    spec.write_text("name: long\ntopology: {kind: torus, k: [4, 4]}\nlink_latency: 3\n")
    assert main(["analytic", str(spec)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["zfabric: error: link_latency: the models take links of one cycle, got 3"]


def test_json_shape(example, capsys):
    assert main(["analytic", str(example("torus-4x4")), "--rates", "0.1,0.3", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert set(report) == {
        "name", "inputs", "model", "zero_load_latency", "saturation", "points"
    }  # fmt: skip
    assert report["name"] == "torus-4x4"
    assert report["inputs"]["rates"] == [0.1, 0.3]
    assert report["inputs"]["pattern"] == "uniform"
    model = report["model"]
    assert (model["model"], model["chapter"], model["timing"]) == ("dor", 4, "zfabric")
    assert (model["vcs"], model["usable_vcs"], model["k"]) == (2, 1, [4, 4])
    assert set(model["cycles"]) == {"flit", "hop", "hold", "extra"}
    assert set(report["saturation"]) == {"model"}
    assert 0.3 < report["saturation"]["model"] < 1
    assert [p["rate"] for p in report["points"]] == [0.1, 0.3]
    for point in report["points"]:
        assert set(point) == {"rate", "model"}
        assert set(point["model"]) == {
            "latency", "network_latency", "source_wait", "multiplexing", "channel_rate"
        }  # fmt: skip
    low, high = (p["model"]["latency"] for p in report["points"])
    assert report["zero_load_latency"]["model"] < low < high


def test_saturated_points_are_null_and_default_rates_follow_the_model(example, capsys):
    assert main(["analytic", str(example("torus-4x4")), "--json", "--rates", "1"]) == 0
    assert json.loads(capsys.readouterr().out)["points"][0]["model"] is None
    assert main(["analytic", str(example("torus-4x4")), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    saturation = report["saturation"]["model"]
    rates = [p["rate"] for p in report["points"]]
    assert rates == [float(f"{f * saturation:.4g}") for f in (0.1, 0.3, 0.5, 0.7, 0.9)]
    assert report["inputs"]["sources"]["rates"] == "fractions of the model's saturation"


def test_compare_runs_the_cycle_model_and_plots_both(example, tmp_path, capsys):
    plot = tmp_path / "both.png"
    args = ["analytic", str(example("torus-4x4")), "--rates", "0.05", "--compare",
            "--cycles", "300", "--warmup", "100", "--json", "--plot", str(plot), "-q"]  # fmt: skip
    assert main(args) == 0
    report = json.loads(capsys.readouterr().out)
    assert set(report["saturation"]) == {"model", "cycle_model", "cycle_model_highest_stable"}
    assert report["saturation"]["cycle_model"] is None  # 0.05 does not saturate
    (point,) = report["points"]
    measured = point["cycle_model"]
    assert measured["saturated"] is False and measured["latency"] > 0
    assert point["error"] == pytest.approx(
        (point["model"]["latency"] - measured["latency"]) / measured["latency"]
    )
    # the contract's zero load is the cycle model's own (sim/analytic.py)
    zero = report["zero_load_latency"]
    assert zero["model"] == pytest.approx(zero["cycle_model"])
    assert plot.stat().st_size > 1000


def test_text_output(example, capsys):
    assert main(["analytic", str(example("torus-8x8-duato")), "--rates", "0.1"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("torus-8x8-duato: chapter 5 (Duato's adaptive routing")
    assert "V=4 (2 adaptive, 2 escape of which 1 usable a hop)" in out[0]
    assert out[1].startswith("  zero-load latency: model ")
    assert out[2].startswith("  saturation: model ")
    assert out[-1].startswith("  0.1: ")


# ---- Transit: DeHon's empty-network latency ---------------------------------------------------


def transit_spec(tmp_path, **topology) -> str:
    spec = tmp_path / "transit.yaml"
    keys = ", ".join(f"{key}: {value}" for key, value in topology.items())
    spec.write_text(f"name: transit\ntopology: {{kind: transit, {keys}}}\n")
    return str(spec)


def test_transit_past_the_size_limit_gives_table_4_7s_row(tmp_path, capsys):
    """786 432 processors (4096 B192 under two UT64x8 stages): 290 / 40 ns connect, 320 / 40
    open (Table 4.7); the per-level rows are Eq 4.31-4.32 with n = 2, 6 (worst) and 1, 1."""
    spec = transit_spec(tmp_path, form="hybrid", leaf_stages=4, ut_layers=2)
    assert main(["analytic", spec, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["processors"] == 786432
    assert report["wire_delays"] == {"worst": [2, 6], "best": [1, 1]}
    assert report["extremes"] == {
        "worst": {"connect": 29, "open": 32},
        "best": {"connect": 4, "open": 4},
    }
    by_level = {row["level"]: row for row in report["levels"]}
    assert sorted(by_level) == list(range(7))
    assert by_level[4]["best"] == {"connect": 15, "open": 18}  # the digest §9, j = 4, k = 4
    assert main(["analytic", spec]) == 0
    text = capsys.readouterr().out
    assert "connect worst 290 ns, best 40 ns; open worst 320 ns, best 40 ns" in text


@pytest.mark.parametrize(
    "args, key",
    [
        (["--compare"], "--compare"),
        (["--rates", "0.1"], "--rates"),
        (["--timing", "thesis"], "--timing"),
    ],
)
def test_transit_refuses_the_queueing_options(tmp_path, capsys, args, key):
    spec = transit_spec(tmp_path, form="full")
    assert main(["analytic", spec, *args]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    err = captured.err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"zfabric: error: {key}")


def test_transit_capped_root_is_refused(tmp_path, capsys):
    spec = transit_spec(tmp_path, form="hybrid", leaf_stages=2, cap="true")
    assert main(["analytic", spec]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("zfabric: error: topology.cap")


def test_the_size_limit_still_holds_for_the_queueing_models(tmp_path, capsys):
    spec = tmp_path / "big.yaml"
    spec.write_text("name: big\ntopology: {kind: torus, k: [200, 200]}\n")
    assert main(["analytic", str(spec)]) == 2
    assert "over the limit" in capsys.readouterr().err
