"""Measurement runs, analytic predictions and the simulate / sweep commands."""

from __future__ import annotations

import csv
import gc
import io
import json
import math
import statistics
import weakref

import pytest
from zfabric.sim.analytic import uniform_channel_load, zero_load_latency
from zfabric.sim.measure import RecordWriter, batch_means_ci95, make_model, replay, simulate
from zfabric.sim.model import FabricModel
from zfabric.sim.traffic import TraceEntry, Traffic, TrafficConfig, write_trace

from zfabric import analyse_routing, compile_plan, load_spec
from zfabric.cli import main


def plan(example, name):
    return compile_plan(load_spec(example(name)))


@pytest.mark.parametrize("tie, max_load", [("plus", 12 / 15), ("alternate", 8 / 15)])
def test_channel_load_of_the_4x4_torus_by_hand(tie, max_load):
    # an x+ link of a row, per source of the row, over its 15 destinations (4 per column):
    # ties toward +: dx = +1 or +2 from its tail, dx = +2 from one node behind: 12/15 = 0.8;
    # alternate ties: dx = +1 from its tail, and dx = +2 (a tie) from whichever of its tail
    # and the node behind it is even: 8/15, as on every link of both directions
    spec = {"topology": {"kind": "torus", "k": [4, 4]}, "routing": {"name": "dor", "tie": tie}}
    load = uniform_channel_load(compile_plan(load_spec(spec)))
    assert load.max_load == pytest.approx(max_load)
    assert load.bound == 1.0  # endpoint links bind first


def test_channel_load_of_a_ring_by_hand():
    # 5-ring, DOR: each + link carries (i->i+1), (i->i+2), (i-1->i+1): 3 of 4 destinations
    ring = compile_plan(load_spec({"topology": {"kind": "torus", "k": [5]}}))
    assert uniform_channel_load(ring).max_load == pytest.approx(3 / 4)


def test_low_load_run_accepts_what_is_offered_near_zero_load_latency(example):
    fabric = plan(example, "torus-4x4")
    traffic = Traffic(TrafficConfig(rate=0.02), len(fabric.endpoints), seed=3)
    result = simulate(fabric, traffic, warmup=200, cycles=4000)
    assert not result.saturated and result.deadlock is None
    assert result.accepted == pytest.approx(result.offered, rel=0.05)
    zero = zero_load_latency(analyse_routing(fabric).average_hops, 4)
    assert zero <= result.latency["mean"] <= zero * 1.15
    assert result.latency["p50"] <= result.latency["p99"] <= result.latency["max"]
    assert 0 < result.latency["ci95"] < 1


def test_overload_is_reported_as_saturation():
    fabric = compile_plan(load_spec({"topology": {"kind": "torus", "k": [5]}}))
    bound = uniform_channel_load(fabric).bound  # 1 / 0.75: endpoint-bound at 1.0
    traffic = Traffic(TrafficConfig(rate=1.0), 5, seed=1)
    result = simulate(fabric, traffic, warmup=200, cycles=1000, drain_limit=500)
    assert result.saturated
    assert result.accepted < bound


def test_batch_means_interval():
    assert batch_means_ci95([1.0] * 10) == 0.0
    assert batch_means_ci95([1.0]) is None  # one batch: no spread to estimate
    # means 0, 1, 0, 1, ...: sample sd sqrt(2.5 / 9); t(9) = 2.262; half-width t sd / sqrt(10)
    assert batch_means_ci95([0.0, 1.0] * 5) == pytest.approx(2.262 * math.sqrt(2.5 / 9 / 10))


def test_records_stream_to_the_sink_and_agree_with_the_summary(example):
    fabric = plan(example, "torus-4x4")
    records = []
    traffic = Traffic(TrafficConfig(rate=0.3), len(fabric.endpoints), seed=2)
    result = simulate(fabric, traffic, warmup=300, cycles=2000, records=records.append)
    assert len(records) == result.packets and all(r["delivered"] for r in records)
    assert all(300 <= r["created"] < 2300 for r in records)
    # the summary's histogram against a plain sort of the streamed records
    for key, start in (("latency", "created"), ("network_latency", "injected")):
        values = sorted(r["delivered"] - r[start] for r in records)
        summary = result.to_dict()[key]
        assert summary["mean"] == pytest.approx(statistics.fmean(values))
        assert summary["p50"] == values[math.ceil(0.5 * len(values)) - 1]
        assert summary["p99"] == values[math.ceil(0.99 * len(values)) - 1]
        assert summary["max"] == values[-1]
    assert result.network_latency["mean"] <= result.latency["mean"]  # source queueing excluded
    assert result.average_hops == pytest.approx(statistics.fmean(r["hops"] for r in records))


def test_the_model_keeps_no_delivered_packet_given_a_callback(example):
    fabric = plan(example, "torus-4x4")
    refs = []
    model = FabricModel(fabric, on_deliver=lambda p: refs.append(weakref.ref(p)))
    traffic = Traffic(TrafficConfig(rate=0.3), len(fabric.endpoints), seed=1)
    for cycle in range(2000):
        for src, dst, length in traffic.packets_at(cycle):
            model.offer(src, dst, length)
        model.step()
    gc.collect()
    assert model.delivered == [] and model.delivered_count == len(refs) > 1000
    # the last flit written into each of the 16 x 5 buffers may still be remembered
    assert sum(ref() is not None for ref in refs) <= 16 * 5 * 2


def test_replay_matches_direct_offers(example, tmp_path):
    fabric = plan(example, "ndt-2x2x2")
    trace = [TraceEntry(c, (3 * c) % 16, (5 * c + 1) % 16, 1 + c % 5) for c in range(60)]
    trace = [e for e in trace if e.src != e.dst]
    records = []
    result = replay(fabric, trace, records=records.append)
    model = FabricModel(fabric)
    packets = []
    for cycle in range(400):
        packets += [model.offer(e.src, e.dst, e.length) for e in trace if e.cycle == cycle]
        model.step()
    assert result.packets == len(trace) and not result.saturated
    by_id = sorted(records, key=lambda r: r["id"])
    assert [r["delivered"] for r in by_id] == [p.delivered for p in packets]
    path = tmp_path / "t.trace"
    write_trace(path, trace)
    assert main(["simulate", str(example("ndt-2x2x2")), "--trace", str(path), "--json"]) == 0


def test_ndt_beats_the_equivalent_torus_at_low_load(example, tmp_path):
    # reference/ndt.md §1.5/§6: 4x4x4 3DT vs the 16x8 2-D torus, same cards and endpoints
    torus = tmp_path / "torus-16x8.yaml"
    torus.write_text("topology: {kind: torus, k: [16, 8]}\n")
    means = {}
    for name, path in (("ndt", example("ndt-4x4x4")), ("torus", torus)):
        fabric = compile_plan(load_spec(path))
        traffic = Traffic(TrafficConfig(rate=0.05), len(fabric.endpoints), seed=1)
        means[name] = simulate(fabric, traffic, warmup=200, cycles=1500).latency["mean"]
    assert means["ndt"] < means["torus"]


def test_simulate_command_json(example, capsys):
    assert (
        main(
            [
                "simulate",
                str(example("torus-4x4")),
                "--rate",
                "0.1",
                "--cycles",
                "1500",
                "--warmup",
                "200",
                "--json",
            ]
        )
        == 0
    )
    report = json.loads(capsys.readouterr().out)
    for key in (
        "offered",
        "accepted",
        "latency",
        "packets",
        "average_hops",
        "saturated",
        "deadlock",
    ):
        assert key in report
    assert set(report["latency"]) == {"mean", "p50", "p99", "max", "ci95"}
    assert set(report["network_latency"]) == set(report["latency"])


def test_simulate_refuses_a_cyclic_plan_unless_allowed(tmp_path, capsys):
    spec = tmp_path / "ring.yaml"
    spec.write_text(
        "topology: {kind: torus, k: [6]}\nrouting: {name: dor, datelines: false}\nbuffer_depth: 2\n"
    )
    assert main(["simulate", str(spec), "--cycles", "500"]) == 1
    assert "not deadlock-free" in capsys.readouterr().err
    code = main(
        [
            "simulate",
            str(spec),
            "--rate",
            "0.9",
            "--packet-length",
            "8",
            "--cycles",
            "3000",
            "--allow-deadlock",
        ]
    )
    assert code == 1
    assert "deadlock at cycle" in capsys.readouterr().err


def test_sweep_writes_a_plot(example, tmp_path, capsys):
    png = tmp_path / "curve.png"
    assert (
        main(
            [
                "sweep",
                str(example("torus-4x4")),
                str(example("ndt-2x2x2")),
                "--rates",
                "0.05,0.3",
                "--cycles",
                "600",
                "--warmup",
                "100",
                "--plot",
                str(png),
                "--json",
            ]
        )
        == 0
    )
    curves = json.loads(capsys.readouterr().out)
    assert set(curves) == {"torus-4x4", "ndt-2x2x2"}
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_run_writes_the_report_folder(example, tmp_path, capsys):
    out = tmp_path / "report"
    args = ["run", str(example("torus-4x4")), "-o", str(out), "--cycles", "400", "--warmup", "100"]
    args += ["--cosim-cycles", "0"]  # tests/rtl/test_cli_cosim.py runs it
    assert main(args) == 0
    assert sorted(p.name for p in out.iterdir()) == [
        ".zfabric-manifest",
        "check.json",
        "curve.png",
        "plan.json",
        "report.md",
        "sweep.json",
        "verilog",
    ]
    report = (out / "report.md").read_text()
    assert "Skipped (`--cosim-cycles 0`)." in report
    assert "![latency-throughput curve](curve.png)" in report
    assert "(analytic, uniform flows, 2·(hops + 1) + L): 10.27 cycles" in report  # 2·47/15+4
    assert json.loads((out / "check.json").read_text())["deadlock_free"] is True
    assert main(args) == 0  # a second run replaces the folder
    assert len(list(tmp_path.iterdir())) == 1  # no staging folder left behind


def test_distributed_packet_lengths_from_the_command_line(example, capsys):
    args = ["simulate", str(example("torus-4x4")), "--packet-length", "2-8", "--json"]
    assert main([*args, "--cycles", "800", "--warmup", "100"]) == 0
    report = json.loads(capsys.readouterr().out)
    mean_hops = 32 / 15  # torus-4x4 DOR average (tests/test_examples.py)
    assert report["zero_load_latency"] == pytest.approx(zero_load_latency(mean_hops, 5))
    with pytest.raises(SystemExit) as exit_:
        main([*args[:3], "8-2"])
    assert exit_.value.code == 2


def test_simulate_stops_on_a_partial_deadlock():
    spec = {
        "topology": {"kind": "ndt", "k": [3, 3, 3], "ports": ["d0+", "d1+", "d2+"]},
        "routing": {"name": "dort", "rings": "shared"},
        "router": {"injection_vcs": 1},  # as tests/sim/test_model.py's PARTIAL
    }
    fabric = compile_plan(load_spec(spec))
    traffic = Traffic(TrafficConfig(rate=0.9), len(fabric.endpoints), seed=1)
    result = simulate(fabric, traffic, warmup=500, cycles=3000)
    assert result.deadlock["partial"] and result.deadlock["channels"]
    assert result.saturated and result.saturation_reason.startswith("partial deadlock at cycle")
    assert result.cycles < 3500  # stopped, not waited out


@pytest.mark.parametrize("fmt", ["json", "csv"])
def test_record_writer_streams_what_simulate_hands_it(example, fmt):
    fabric = plan(example, "torus-4x4")
    records, stream = [], io.StringIO()
    writer = RecordWriter(stream, fmt)

    def both(record):
        records.append(record)
        writer(record)

    traffic = Traffic(TrafficConfig(rate=0.2), len(fabric.endpoints), seed=4)
    simulate(fabric, traffic, warmup=100, cycles=500, records=both)
    writer.close()
    if fmt == "json":
        assert json.loads(stream.getvalue()) == records
    else:
        rows = list(csv.DictReader(io.StringIO(stream.getvalue())))
        assert [{k: int(v) for k, v in row.items()} for row in rows] == records
    assert writer.count == len(records) > 50
    with pytest.raises(ValueError, match="json or csv, got 'xml'"):
        RecordWriter(stream, "xml")


def test_counting_noise_of_a_short_window_is_not_saturation(example):
    # 200 cycles at 0.05: ~36 packets offered, 3 fewer accepted in the window (8%) only because
    # of the packets in flight at its ends; 3 sqrt(36) = 18 packets is the noise allowance
    fabric = plan(example, "torus-4x4")
    traffic = Traffic(TrafficConfig(rate=0.05), len(fabric.endpoints), seed=1)
    result = simulate(fabric, traffic, warmup=50, cycles=200)
    assert result.accepted < 0.95 * result.offered
    assert not result.saturated


def test_a_run_leaves_the_objects_before_it_out_of_the_collectors_passes(example, monkeypatch):
    """Frozen while the run goes (the packets it makes are collected as ever), thawed after;
    a caller's own freeze is left as it is."""
    fabric = plan(example, "torus-4x4")
    seen = []
    step = FabricModel.step

    def stepping(model):
        seen.append(gc.get_freeze_count())
        step(model)

    monkeypatch.setattr(FabricModel, "step", stepping)
    traffic = Traffic(TrafficConfig(rate=0.1), len(fabric.endpoints), seed=1)
    assert gc.get_freeze_count() == 0
    simulate(fabric, traffic, warmup=10, cycles=20, engine="reference")
    assert gc.get_freeze_count() == 0
    assert min(seen) > 0
    # the caller's freeze: the run neither freezes nor thaws (the count itself may fall, as
    # frozen objects are freed, as those a first compilation leaves are)
    freeze, unfreeze = gc.freeze, gc.unfreeze
    calls = []
    freeze()
    try:
        seen.clear()
        monkeypatch.setattr(gc, "freeze", lambda: calls.append("freeze"))
        monkeypatch.setattr(gc, "unfreeze", lambda: calls.append("unfreeze"))
        simulate(fabric, traffic, warmup=10, cycles=20, engine="reference")
        assert calls == [] and min(seen) > 0
    finally:
        unfreeze()


def test_a_model_delivering_rows_needs_a_callback_for_the_reference_too(example):
    """Where the fast engine refuses a plan the reference runs and delivers packets only to
    ``on_deliver``: rows alone would be lost there, so they are refused on either engine."""
    fabric = plan(example, "torus-4x4")
    for engine in ("fast", "reference"):
        with pytest.raises(ValueError, match="on_deliver_rows needs on_deliver too"):
            make_model(fabric, engine, on_deliver_rows=lambda rows: None)
    model, engine = make_model(
        fabric, "fast", on_deliver=lambda packet: None, on_deliver_rows=lambda rows: None
    )
    assert engine == "fast"
