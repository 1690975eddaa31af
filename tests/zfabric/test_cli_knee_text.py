"""The knee and the swept rates read the same in every text (sweep's table and knee line,
run's report, its table and its summary on stdout) as in the JSON: the rate that was run,
never a rounding of it."""

from __future__ import annotations

import json
import re

from zfabric.cli import main

#: an 8-ring under bit-complement: the bisection between 0.4 and 0.6 runs rates of four and
#: five decimals (0.4625, 0.46875), which a three-decimal or four-digit rounding would alter
RING = "name: ring8\ntopology: {kind: torus, k: [8]}\n"
SWEEP = ["--traffic", "bit-complement", "--rates", "0.2,0.4,0.6,0.8"]
WINDOW = ["--warmup", "200", "--cycles", "1000", "--seed", "1"]
KNEE = re.compile(r"knee: ([0-9.]+) flits/cycle/endpoint \(the highest stable", re.IGNORECASE)


def test_sweep_text_shows_the_json_rates_and_knee(tmp_path, capsys):
    spec = tmp_path / "ring8.yaml"
    spec.write_text(RING)
    assert main(["-q", "sweep", str(spec), *SWEEP, *WINDOW, "--json"]) == 0
    curve = json.loads(capsys.readouterr().out)["ring8"]
    rates = [p["rate"] for p in curve["points"]]
    assert curve["knee"] in rates
    assert any(len(f"{rate}") > len("0.123") for rate in rates)  # a rate of 4+ decimals
    assert main(["-q", "sweep", str(spec), *SWEEP, *WINDOW]) == 0
    text = capsys.readouterr().out
    (knee,) = KNEE.findall(text)
    assert float(knee) == curve["knee"]
    rows = re.findall(r"^  ([0-9.]+): [0-9.]+ -> ", text, re.MULTILINE)
    assert [float(row) for row in rows] == rates
    assert knee in rows  # the knee is printed as its row's rate, character for character


def test_run_report_shows_the_json_rates_and_knee(tmp_path, capsys):
    spec = tmp_path / "ring8.yaml"
    spec.write_text(RING)
    out = tmp_path / "report"
    args = ["-q", "run", str(spec), "-o", str(out), "--cosim-cycles", "0", *SWEEP, *WINDOW]
    assert main(args) == 0
    printed = capsys.readouterr().out  # the summary on stdout names the knee too
    sweep = json.loads((out / "sweep.json").read_text())
    report = (out / "report.md").read_text()
    (knee,) = KNEE.findall(report)
    assert float(knee) == sweep["knee"]
    assert KNEE.findall(printed) == [knee]
    assert f"sweep: {len(sweep['points'])} rates, 0.2 to " in printed
    rows = re.findall(r"^\| ([0-9.]+) \| ", report, re.MULTILINE)
    assert [float(row) for row in rows] == [p["rate"] for p in sweep["points"]]
    assert knee in rows
