"""Studies: expansion, caching and resumption, Dask against the serial run, faults."""

from __future__ import annotations

import csv
import json
import os
import signal
import sys
import time
from pathlib import Path

import pytest
from zfabric.sim.study import (
    DaskExecutor,
    PointCache,
    SerialExecutor,
    load_study,
    run_point,
    run_study,
    start_local_cluster,
    study_from_dict,
    table_rows,
)
from zfabric.sim.sweep import sweep
from zfabric.sim.traffic import TrafficConfig

from zfabric import compile_plan, load_spec
from zfabric.cli import main

RING = {"name": "ring-8", "topology": {"kind": "torus", "k": [8]}}
WINDOW = {"warmup": 100, "cycles": 400}
QUICK = ["--warmup", "100", "--cycles", "400"]


def tiny(**traffic) -> dict:
    """Two small fabrics, three rates, two seeds: 12 points of a few milliseconds."""
    return {
        "name": "tiny",
        "specs": [
            {"spec": {"name": "ring", "topology": {"kind": "torus", "k": [2]}}},
            {"spec": {"name": "torus", "topology": {"kind": "torus", "k": [2, 2]}}},
        ],
        "traffic": {"rates": [0.1, 0.3, 0.5], "seeds": [1, 2], **WINDOW, **traffic},
    }


def test_templates_set_and_vary_key_paths_and_name_the_variants(tmp_path):
    (tmp_path / "base.yaml").write_text("name: base\ntopology: {kind: torus, k: [4, 4]}\n")
    study = study_from_dict(
        {
            "specs": [
                "base.yaml",
                {
                    "spec": "base.yaml",
                    "name": "t{k}-v{vcs}",
                    "set": {"buffer_depth": 8},
                    "vary": {"topology.k": [[2, 2], [3, 3]], "topology.vcs": [1, 2]},
                },
            ],
            "traffic": {"rates": [0.2, 0.1, 0.2], "patterns": ["uniform", "tornado"]},
        },
        base=tmp_path,
    )
    assert study.specs == ("base", "t2x2-v1", "t2x2-v2", "t3x3-v1", "t3x3-v2")
    # 5 specs x 2 patterns x 2 distinct rates
    assert len(study.points) == 20 and len(set(study.points)) == 20
    point = next(p for p in study.points if p.spec_name == "t3x3-v2")
    spec = json.loads(point.spec_json)
    assert spec["topology"] == {"kind": "torus", "k": [3, 3], "vcs": 2}
    assert spec["buffer_depth"] == 8 and spec["name"] == "t3x3-v2"
    assert point.inputs()["topology.k"] == [3, 3] and point.inputs()["topology.vcs"] == 2
    assert compile_plan(load_spec(spec)).buffer_depth == 8


@pytest.mark.parametrize(
    "change, where, what",
    [
        ({"traffic": {"rates": [0.1, 1.5]}}, "traffic.rates[1]", "1.5"),
        ({"traffic": {"rates": []}}, "traffic.rates", "non-empty"),
        ({"traffic": {"rates": [0.1], "patterns": ["uniform", "swirl"]}}, "patterns[1]", "swirl"),
        ({"traffic": {"rates": [0.1], "patterns": ["weighted"]}}, "patterns[0]", "'weighted'"),
        ({"traffic": {"rates": [0.1], "cycles": 0}}, "traffic.cycles", "0"),
        ({"traffic": {"rates": [0.1], "refine": 0}}, "traffic.refine", "0"),
        ({"traffic": {"rates": [0.1], "rate": 0.1}}, "traffic.rate", "unknown key"),
        ({"retries": -1}, "retries", "-1"),
        ({"specs": [{"spec": {"topology": {"kind": "torus", "k": [1]}}}]}, "specs[0]", "k[0]"),
        ({"specs": [{"spec": RING}, {"spec": RING}]}, "specs[1]", "used twice"),
        (
            {
                "specs": [
                    {"spec": RING, "vary": {"routing.tie": ["plus"]}, "set": {"routing": "dor"}}
                ]
            },
            "specs[0].vary.routing.tie",
            "not a mapping",
        ),  # fmt: skip
        (
            {"specs": [{"spec": RING, "name": "r{x}", "vary": {"topology.k": [[4]]}}]},
            "specs[0].name",
            "'x'",
        ),  # fmt: skip
        ({"plot": "out/curve.png"}, "plot", "no folder"),
        ({"plots": {"c.png": {"specs": ["ring-9"]}}}, "plots.c.png.specs[0]", "'ring-9'"),
        ({"plots": {"c.png": {"rates": [0.1]}}}, "plots.c.png.rates", "unknown key"),
        ({"plots": ["c.png"]}, "plots", "mapping"),
    ],
)
def test_a_bad_study_names_the_key_and_the_value(change, where, what):
    data = {"specs": [{"spec": RING}], "traffic": {"rates": [0.1]}, **change}
    with pytest.raises(ValueError) as error:
        study_from_dict(data)
    assert where in str(error.value) and what in str(error.value)


def test_refined_points_are_those_of_the_sequential_sweep():
    """The engine's rounds (every coarse rate, then one bisection point per curve) run the
    points the sequential sweep runs, with the same figures."""
    rates = [0.2, 0.4, 0.6, 0.8]
    data = {"specs": [{"spec": RING}], "traffic": {"rates": rates, "refine": 0.01, **WINDOW}}
    data["traffic"]["patterns"] = ["bit-complement"]
    records = run_study(study_from_dict(data), SerialExecutor(), PointCache(None))
    expected = sweep(
        compile_plan(load_spec(RING)), TrafficConfig(pattern="bit-complement"), rates, **WINDOW
    )
    ours = {r["inputs"]["rate"]: r["result"] for r in records}
    assert [p["rate"] for p in expected] == [r for r in sorted(ours) if r <= expected[-1]["rate"]]
    for point in expected:
        assert json.loads(json.dumps(point)) == ours[point["rate"]]
    # the engine also ran the coarse rates past the first saturated one, in parallel
    assert 0.8 in ours and ours[0.8]["saturated"]


def test_a_rerun_computes_only_missing_points_and_a_new_model_everything(tmp_path):
    study = study_from_dict(tiny())
    path = tmp_path / "points.jsonl"
    computed = []

    def interrupt(done: int, total: int) -> None:
        if done == 5:
            raise KeyboardInterrupt

    cache = PointCache(path)
    with pytest.raises(KeyboardInterrupt):
        run_study(study, SerialExecutor(), cache, version="m1", progress=interrupt)
    cache.close()
    with path.open("a") as file:
        file.write('{"key": "torn by a kill mid-wri')  # a torn last line is ignored
    assert len(PointCache(path).records) == 5

    cache = PointCache(path)
    records = run_study(study, SerialExecutor(), cache, version="m1", computed=computed.append)
    cache.close()
    assert len(computed) == 12 - 5 and len(records) == 12
    assert records == run_study(study, SerialExecutor(), PointCache(None), version="m1")

    computed.clear()
    with PointCache(path) as cache:
        run_study(study, SerialExecutor(), cache, version="m1", computed=computed.append)
    assert computed == []
    with PointCache(path) as cache:
        run_study(study, SerialExecutor(), cache, version="m2", computed=computed.append)
    assert len(computed) == 12  # another model: every key differs


def test_a_user_file_is_not_a_points_file(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("shopping list\nmilk\n")
    assert "line 1" in PointCache.check(path)


# ---- Dask -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def client():
    """A client of a local cluster of 2 single-threaded worker processes; a point caught in 2
    worker deaths fails."""
    import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # workers cannot import tests/
    cluster, client = start_local_cluster(2, retries=1)
    yield client
    client.close()
    cluster.close()


def test_two_workers_give_the_serial_table(client):
    study = study_from_dict(tiny(rates=[0.1, 0.5, 0.9], refine=0.1))
    serial = run_study(study, SerialExecutor(), PointCache(None))
    computed = []
    parallel = run_study(study, DaskExecutor(client), PointCache(None), computed=computed.append)
    assert len(computed) == len(serial) > len(study.points)  # refinement rounds ran too
    assert table_rows("tiny", parallel) == table_rows("tiny", serial)
    assert all(r["status"] == "ok" for r in serial)


def faulty(point):
    """The first point kills its worker every time (early, while Dask gives each worker one
    point at a time), the points at rate 0.5 and seed 2 raise, and every point is slow, so a
    worker killed from outside has a point in hand."""
    if point.rate == 0.1 and point.spec_name == "ring" and point.seed == 1:
        os._exit(1)
    if point.rate == 0.5 and point.seed == 2:
        raise RuntimeError("a bad point")
    time.sleep(0.2)
    return run_point(point)


def test_a_killed_worker_loses_no_point_and_a_rerun_completes_the_failed(client, tmp_path):
    study = study_from_dict(tiny(seeds=[1, 2, 3]))
    path = tmp_path / "points.jsonl"
    killed = []

    def kill_one_worker(record) -> None:
        if not killed:  # mid-study: after the first completed point
            # a worker the poison point just killed does not answer: skip it
            pids = list(client.run(os.getpid, on_error="ignore").values())
            if pids:
                killed.append(pids[0])
                os.kill(pids[0], signal.SIGKILL)

    cache = PointCache(path)
    records = run_study(
        study, DaskExecutor(client, retries=1), cache, runner=faulty, computed=kill_one_worker
    )
    cache.close()
    assert killed
    assert [r["inputs"] for r in records] == [p.inputs() for p in study.points]  # none dropped
    failed = {(r["inputs"]["spec"], r["inputs"]["rate"], r["inputs"]["seed"]): r["error"]
              for r in records if r["status"] == "failed"}  # fmt: skip
    assert {("ring", 0.1, 1), ("ring", 0.5, 2), ("torus", 0.5, 2)} <= set(failed)
    assert failed[("ring", 0.5, 2)] == "RuntimeError: a bad point"
    # the poison point, and any point queued on a worker it killed twice (the scheduler gives
    # a worker a second point once few remain), fail as killed workers, after the retries
    others = set(failed) - {("ring", 0.5, 2), ("torus", 0.5, 2)}
    assert all(failed[point].startswith("KilledWorker: ") for point in others)
    serial = run_study(study, SerialExecutor(), PointCache(None))
    assert [r for r in records if r["status"] == "ok"] == [
        r for r in serial if (r["inputs"]["spec"], r["inputs"]["rate"], r["inputs"]["seed"])
        not in failed
    ]  # fmt: skip

    computed = []
    cache = PointCache(path)
    rerun = run_study(study, DaskExecutor(client), cache, computed=computed.append)
    cache.close()
    assert sorted((r["inputs"]["spec"], r["inputs"]["rate"], r["inputs"]["seed"])
                  for r in computed) == sorted(failed)  # fmt: skip
    assert rerun == serial


def test_the_example_study_expands(example):
    study = load_study(example("studies/ndt-vs-torus"))
    assert study.specs == ("3dt-A", "3dt-B", "3dt-C", "torus-16x8")
    assert {p.spec_name for p in study.points} == set(study.specs)


# ---- the commands ---------------------------------------------------------------------------


def study_file(tmp_path, **changes) -> str:
    data = {**tiny(), "plot": "latency.png", **changes}
    path = tmp_path / "tiny.yaml"
    path.write_text(json.dumps(data))  # JSON is YAML
    return str(path)


def test_study_writes_the_table_and_a_rerun_computes_nothing(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["study", study_file(tmp_path), "-o", str(out), "--workers", "0"]) == 0
    assert "12 points (12 computed, 0 cached), 0 failed" in capsys.readouterr().out
    listed = (out / ".zfabric-manifest").read_text().split()
    assert listed == ["latency.png", "points.jsonl", "table.csv", "table.jsonl"]
    with (out / "table.csv").open() as file:
        rows = list(csv.DictReader(file))
    assert len(rows) == 12 and {r["status"] for r in rows} == {"ok"}
    assert rows[0]["spec"] == "ring" and rows[0]["rate"] == "0.1" and rows[0]["cycles"] == "400"
    assert float(rows[0]["accepted"]) > 0 and rows[0]["latency_mean"]
    lines = [json.loads(line) for line in (out / "table.jsonl").read_text().splitlines()]
    assert [str(line["accepted"]) for line in lines] == [r["accepted"] for r in rows]
    assert main(["study", study_file(tmp_path), "-o", str(out), "--workers", "0"]) == 0
    assert "12 points (0 computed, 12 cached), 0 failed" in capsys.readouterr().out


def test_points_run_apart_give_the_table_of_one_run(tmp_path, capsys):
    """scripts/study_points_apart.py: each (spec, rate) in a process of its own, from an empty
    set-up folder, then the whole file finds every point cached; the table is the one a
    single run writes."""
    import subprocess

    script = Path(__file__).parents[2] / "scripts" / "study_points_apart.py"
    apart, together = tmp_path / "apart", tmp_path / "together"
    ran = subprocess.run(
        [sys.executable, str(script), study_file(tmp_path), "-o", str(apart)],
        capture_output=True,
        text=True,
    )
    assert ran.returncode == 0, ran.stderr
    assert "point 1 of " in ran.stdout
    assert "12 points (0 computed, 12 cached), 0 failed" in ran.stdout
    assert main(["study", study_file(tmp_path), "-o", str(together), "--workers", "0"]) == 0
    capsys.readouterr()
    assert (apart / "table.csv").read_text() == (together / "table.csv").read_text()
    assert (apart / "latency.png").exists()
    missing = tmp_path / "missing.yaml"
    refused = subprocess.run(
        [sys.executable, str(script), str(missing), "-o", str(tmp_path / "none")],
        capture_output=True,
        text=True,
    )
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert refused.stderr.splitlines() == [
        f"study_points_apart: error: {missing}: cannot read: No such file or directory"
    ]
    assert not (tmp_path / "none").exists()


def test_plots_show_the_curves_they_select(tmp_path, capsys):
    from zfabric.sim.study import select

    plots = {"ring.png": {"specs": ["ring"], "seeds": [2]}, "all.svg": {}}
    out = tmp_path / "out"
    path = study_file(tmp_path, plots=plots)
    assert main(["study", path, "-o", str(out), "--workers", "0"]) == 0
    assert {"latency.png", "ring.png", "all.svg"} <= set(os.listdir(out))
    assert "<svg" in (out / "all.svg").read_text()
    records = run_study(load_study(path), SerialExecutor(), PointCache(None))
    chosen = load_study(path).plots["ring.png"]
    assert [(r["inputs"]["spec"], r["inputs"]["seed"]) for r in select(records, chosen)] == [
        ("ring", 2)
    ] * 3


def test_a_failed_point_is_in_the_table_and_the_exit_status(tmp_path, capsys, monkeypatch):
    import zfabric.sim.study as engine

    def failing(point):
        if point.rate == 0.3:
            raise ValueError("no good")
        return run_point(point)

    monkeypatch.setattr(engine, "run_point", failing)
    out = tmp_path / "out"
    assert main(["study", study_file(tmp_path), "-o", str(out), "--workers", "0"]) == 1
    captured = capsys.readouterr()
    assert "12 points (12 computed, 0 cached), 4 failed" in captured.out
    assert "zfabric: failed: ring uniform rate 0.3 seed 1: ValueError: no good" in captured.err
    with (out / "table.csv").open() as file:
        failed = [r for r in csv.DictReader(file) if r["status"] == "failed"]
    assert len(failed) == 4 and {r["error"] for r in failed} == {"ValueError: no good"}
    assert all(r["accepted"] == "" for r in failed)


@pytest.mark.parametrize(
    "changes, argument",
    [
        ({"traffic": {"rates": [0.1, 2]}}, "traffic.rates[1]"),
        ({"plot": "p.txt"}, "zfabric: error: plot: must be a file name ending in one of .eps"),
        ({"plots": {"p.txt": {}}}, "zfabric: error: plots.p.txt: must be"),
        ({"plot": "b.png", "plots": {"b.png": {}}}, "zfabric: error: plots.b.png: names the file"),
    ],
)
def test_a_bad_study_is_refused_before_any_output(tmp_path, capsys, changes, argument):
    out = tmp_path / "out"
    assert main(["study", study_file(tmp_path, **changes), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and argument in err and not out.exists()


@pytest.mark.parametrize("name", ["table.csv", "points.jsonl"])
def test_a_users_file_in_the_output_folder_is_never_overwritten(tmp_path, capsys, name):
    out = tmp_path / "out"
    out.mkdir()
    (out / name).write_text("mine\n")
    assert main(["study", study_file(tmp_path), "-o", str(out), "--workers", "0"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "-o" in err and name in err
    assert (out / name).read_text() == "mine\n" and sorted(os.listdir(out)) == [name]


def test_sweep_caches_its_points_and_refuses_a_users_file(example, tmp_path, capsys):
    cache = tmp_path / "points.jsonl"
    args = ["sweep", str(example("ring-2")), "--rates", "0.2,0.9", *QUICK, "--json"]
    assert main([*args, "--cache", str(cache)]) == 0
    first = json.loads(capsys.readouterr().out)
    lines = cache.read_text().count("\n")
    assert lines == len(first["ring-2"]["points"]) > 2  # the knee was refined
    # the knee reported: a stable rate with a saturated one less than 0.01 above it
    knee, points = first["ring-2"]["knee"], first["ring-2"]["points"]
    assert any(p["rate"] == knee and not p["saturated"] for p in points)
    assert any(p["saturated"] and knee < p["rate"] <= knee + 0.01 + 1e-9 for p in points)
    assert main([*args, "--cache", str(cache)]) == 0
    assert json.loads(capsys.readouterr().out) == first and cache.read_text().count("\n") == lines
    assert main(args) == 0  # and without the cache, the same curve
    assert json.loads(capsys.readouterr().out) == first
    notes = tmp_path / "notes.txt"
    notes.write_text("not points\n")
    assert main([*args, "--cache", str(notes)]) == 2
    assert "--cache" in capsys.readouterr().err and notes.read_text() == "not points\n"


def test_a_points_file_cut_by_a_kill_is_still_ours(tmp_path):
    path = tmp_path / "points.jsonl"
    cache = PointCache(path)
    run_study(study_from_dict(tiny()), SerialExecutor(), cache, version="m1")
    cache.close()
    with path.open("a") as file:
        file.write('{"key": "cut sh')
    assert PointCache.check(path) is None
    cache = PointCache(path)
    run_study(study_from_dict(tiny(seeds=[3])), SerialExecutor(), cache, version="m1")
    cache.close()
    assert PointCache.check(path) is None and len(PointCache(path).records) == 18


def test_a_scheduler_that_does_not_answer_is_refused_before_any_output(tmp_path, capsys):
    import dask
    import distributed  # noqa: F401  its defaults first: a dask.config.set of a key under a
    # section not yet loaded removes the whole section on exit, and every later cluster in
    # this process then misses distributed.comm

    out = tmp_path / "out"
    args = ["study", study_file(tmp_path), "-o", str(out), "--scheduler", "tcp://127.0.0.1:9"]
    with dask.config.set({"distributed.comm.timeouts.connect": "1s"}):  # Dask's default: 30 s
        assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("zfabric: error: --scheduler: cannot connect to 'tcp://127.0.0.1:9'")
    assert err.count("\n") == 1 and not out.exists()


def test_study_on_two_local_workers_writes_the_serial_table(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)  # the progress bar, as on a terminal
    path = study_file(tmp_path, traffic={**tiny()["traffic"], "refine": 0.1})
    assert main(["study", path, "-o", str(tmp_path / "serial"), "--workers", "0"]) == 0
    serial_err = capsys.readouterr().err
    assert "tiny points" in serial_err and "Dask" not in serial_err
    assert main(["study", path, "-o", str(tmp_path / "dask"), "--workers", "2"]) == 0
    err = capsys.readouterr().err
    assert "Dask dashboard: http://" in err and "tiny points" in err
    for name in ("table.csv", "table.jsonl"):
        assert (tmp_path / "dask" / name).read_text() == (tmp_path / "serial" / name).read_text()


def test_study_on_an_existing_scheduler(client, tmp_path, capsys):
    path = study_file(tmp_path)
    assert main(["study", path, "-o", str(tmp_path / "serial"), "--workers", "0"]) == 0
    address = client.scheduler_info()["address"]
    assert main(["study", path, "-o", str(tmp_path / "remote"), "--scheduler", address]) == 0
    assert "12 points (12 computed, 0 cached), 0 failed" in capsys.readouterr().out
    for name in ("table.csv", "table.jsonl"):
        assert (tmp_path / "remote" / name).read_text() == (tmp_path / "serial" / name).read_text()
    assert client.status == "running"  # the command closed its own client, not this one


# ---- the shipped study files --------------------------------------------------------------


SHIPPED = sorted((Path(__file__).resolve().parents[2] / "examples" / "studies").glob("*.yaml"))


@pytest.mark.parametrize("path", SHIPPED, ids=[path.stem for path in SHIPPED])
def test_a_shipped_study_loads_and_its_table_is_of_its_specs(path):
    """Every study file under examples/studies expands, each spec in it is a valid spec, and
    the table shipped beside it (the study's CSV) has a row for every spec and first-round
    rate of the file: the figures the docs quote are of the file as it stands."""
    study = load_study(path)
    assert study.name == path.stem and study.points
    for spec_json in {point.spec_json for point in study.points}:
        load_spec(json.loads(spec_json))
    table = path.with_suffix(".csv")
    if not table.exists():
        return
    with table.open(newline="") as stream:
        rows = list(csv.DictReader(stream))
    assert {row["spec"] for row in rows} == set(study.specs)
    measured = {(row["spec"], float(row["rate"])) for row in rows}
    assert {(point.spec_name, point.rate) for point in study.points} <= measured
