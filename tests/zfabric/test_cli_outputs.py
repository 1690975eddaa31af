"""The command line's output rules, one test each: output folders never lose a user's
file, the spec's packet length and traffic are honoured, files get the user's umask, trace
replays say what they are, and the everyday conventions (--version, -q, --json, CSV records,
caches, board help)."""

from __future__ import annotations

import csv
import json
import os
import stat
import sys
from importlib.metadata import version
from pathlib import Path
from types import SimpleNamespace

import pytest

from zfabric.cli import build_parser, main
from zfabric.cli.experiment import resolve
from zfabric.plan import RoutingSpec
from zfabric.router_settings import RouterSettings

#: cheap runs: no co-simulation, short windows, one or two rates
QUICK = ["--cosim-cycles", "0", "--warmup", "50", "--cycles", "200", "--rates", "0.1"]
#: torus-4x4 under DOR: 32/15 switch-to-switch hops on average (tests/test_examples.py)
TORUS_HOPS = 32 / 15


def _snapshot(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


# ---- defect 1: run -o DIR never deletes or overwrites a file zfabric did not write ------------


def test_run_refuses_a_folder_of_foreign_files_and_leaves_them_intact(example, tmp_path, capsys):
    out = tmp_path / "mine"
    (out / "sub").mkdir(parents=True)
    (out / "thesis.tex").write_bytes(b"\\documentclass{article}\n\x00\xff binary tail")
    (out / "report.md").write_text("my own report\n")
    (out / "sub" / "data.csv").write_text("1,2,3\n")
    before = _snapshot(out)
    assert main(["run", str(example("ring-2")), "-o", str(out), *QUICK]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--output" in err and "not written by zfabric" in err
    assert _snapshot(out) == before
    assert sorted(p.name for p in out.iterdir()) == ["report.md", "sub", "thesis.tex"]


def test_run_into_its_own_folder_replaces_only_its_files(example, tmp_path, capsys):
    out = tmp_path / "report"
    args = ["run", str(example("ring-2")), "-o", str(out), *QUICK]
    assert main(args) == 0
    written = (out / ".zfabric-manifest").read_text().split()
    assert "report.md" in written and "verilog/ring_2.v" in written
    (out / "notes.txt").write_text("added by the user\n")
    (out / "verilog" / "tweak.v").write_text("// the user's module\n")
    assert main(args) == 0  # the second run replaces zfabric's own files
    assert (out / "notes.txt").read_text() == "added by the user\n"
    assert (out / "verilog" / "tweak.v").read_text() == "// the user's module\n"
    assert (out / ".zfabric-manifest").read_text().split() == written
    assert not [p for p in out.iterdir() if p.name.startswith(".zfabric-staging")]


def test_run_refuses_a_listed_folder_holding_an_unlisted_file_of_its_name(
    example, tmp_path, capsys
):
    out = tmp_path / "report"
    out.mkdir()
    (out / ".zfabric-manifest").write_text("report.md\n")
    (out / "plan.json").write_text('{"the user": "plan"}\n')
    assert main(["run", str(example("ring-2")), "-o", str(out), *QUICK]) == 2
    assert "plan.json" in capsys.readouterr().err
    assert (out / "plan.json").read_text() == '{"the user": "plan"}\n'


def test_run_dot_refuses_a_non_empty_working_folder_and_fills_an_empty_one(
    example, tmp_path, monkeypatch, capsys
):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "keep.txt").write_text("keep me\n")
    assert main(["run", str(example("ring-2")), "-o", ".", *QUICK]) == 2
    assert os.listdir(tmp_path) == ["keep.txt"]
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.chdir(empty)
    assert main(["run", str(example("ring-2")), "-o", ".", *QUICK]) == 0
    assert (empty / "report.md").is_file() and (tmp_path / "keep.txt").read_text() == "keep me\n"


def test_verilog_never_overwrites_a_file_it_did_not_write(tmp_path, capsys):
    spec = tmp_path / "ring.yaml"
    spec.write_text("name: ring-3\ntopology: {kind: torus, k: [3]}\n")
    out = tmp_path / "rtl"
    out.mkdir()
    (out / "ring_3.v").write_text("// hand-written\n")
    (out / "other.v").write_text("// unrelated\n")
    assert main(["verilog", str(spec), "-o", str(out)]) == 2
    assert "ring_3.v" in capsys.readouterr().err
    assert (out / "ring_3.v").read_text() == "// hand-written\n"
    (out / "ring_3.v").unlink()
    assert main(["verilog", str(spec), "-o", str(out)]) == 0
    assert main(["verilog", str(spec), "-o", str(out)]) == 0  # its own files: replaced
    assert (out / "other.v").read_text() == "// unrelated\n"


SINGLE_FILE_OUTPUTS = [
    ("check", "--plan-out", "plan.json", []),
    ("simulate", "--records", "records.json", ["--cycles", "100"]),
    ("sweep", "--plot", "curve.png", ["--rates", "0.1", "--cycles", "100"]),
]


@pytest.mark.parametrize(("command", "option", "name", "extra"), SINGLE_FILE_OUTPUTS)
def test_a_single_output_file_never_replaces_a_file_zfabric_did_not_write(
    example, tmp_path, capsys, command, option, name, extra
):
    spec = tmp_path / "torus.yaml"
    spec.write_bytes(example("torus-4x4").read_bytes())
    mine = tmp_path / name
    mine.write_bytes(b"the user's own file\n")
    for target in (spec, mine):  # the spec being read, or any file of the user's
        before = _snapshot(tmp_path)
        assert main(["-q", command, str(spec), option, str(target), *extra]) == 2
        out, err = capsys.readouterr()
        assert out == "" and err.count("\n") == 1
        assert option in err and "not written by zfabric" in err
        assert _snapshot(tmp_path) == before
    mine.unlink()
    for _ in range(2):  # a new name, then the file zfabric wrote there: replaced on a rerun
        assert main(["-q", command, str(spec), option, str(mine), *extra]) == 0
        assert (tmp_path / ".zfabric-manifest").read_text() == f"{name}\n"
        assert mine.stat().st_size > 0


def test_verilog_without_split_drops_its_earlier_split_files_only(example, tmp_path, capsys):
    out = tmp_path / "rtl"
    ring = _ring(tmp_path, 3)
    assert main(["-q", "verilog", str(ring), "-o", str(out), "--split"]) == 0
    assert main(["-q", "verilog", str(example("torus-4x4")), "-o", str(out), "--split"]) == 0
    split = set(os.listdir(out))
    (out / "torus_4x4_notes.v").write_text("// the user's\n")
    assert main(["-q", "verilog", str(example("torus-4x4")), "-o", str(out)]) == 0
    names = set(os.listdir(out))
    assert {"torus_4x4.f", "torus_4x4_ep.v", "torus_4x4_sw_p5_v2.v"} <= split - names
    assert "torus_4x4.v" in names and "torus_4x4_notes.v" in names
    assert {n for n in split if n.startswith("ring_3")} <= names  # the other fabric's stay
    listed = set((out / ".zfabric-manifest").read_text().split())
    assert listed == names - {".zfabric-manifest", "torus_4x4_notes.v"}
    capsys.readouterr()


def test_outputs_get_the_users_umask(example, tmp_path, capsys):
    previous = os.umask(0o027)
    try:
        plan = tmp_path / "plan.json"
        assert main(["check", str(example("torus-4x4")), "--plan-out", str(plan)]) == 0
        records = tmp_path / "records.json"
        args = ["simulate", str(example("torus-4x4")), "--cycles", "100", "--warmup", "10"]
        assert main([*args, "--records", str(records)]) == 0
        out = tmp_path / "report"
        assert main(["run", str(example("ring-2")), "-o", str(out), *QUICK]) == 0
    finally:
        os.umask(previous)
    for path in (plan, records, out / "report.md", out / "curve.png", out / "verilog" / "ring_2.v"):
        assert stat.S_IMODE(path.stat().st_mode) == 0o640, path
    for path in (out, out / "verilog"):
        assert stat.S_IMODE(path.stat().st_mode) == 0o750, path


# ---- defect 2: the spec's packet length (and traffic section) are the defaults -----------------


def _spec(tmp_path: Path, extra: str = "") -> Path:
    path = tmp_path / "t8.yaml"
    path.write_text(f"name: t8\ntopology: {{kind: torus, k: [4, 4]}}\npacket_length: 8\n{extra}")
    return path


def test_simulate_uses_the_specs_packet_length_unless_the_flag_overrides(tmp_path, capsys):
    args = ["simulate", str(_spec(tmp_path)), "--cycles", "300", "--warmup", "50"]
    assert main([*args, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["inputs"]["packet_length"] == 8
    assert report["inputs"]["sources"]["packet_length"] == "spec"
    # zero-load latency 2·hops + L + 2 (docs, sim/analytic.py) with L = 8
    assert report["zero_load_latency"] == pytest.approx(2 * TORUS_HOPS + 8 + 2)
    assert main([*args, "--packet-length", "2"]) == 0
    out = capsys.readouterr().out
    assert "packets of 2 flits (--packet-length)" in out
    assert f"zero-load {2 * TORUS_HOPS + 2 + 2:.2f}" in out
    assert main(args) == 0
    assert "packets of 8 flits (spec)" in capsys.readouterr().out
    bare = tmp_path / "bare.yaml"  # no packet_length anywhere: the built-in 4
    bare.write_text("topology: {kind: torus, k: [4, 4]}\n")
    assert main(["simulate", str(bare), "--cycles", "200", "--warmup", "20"]) == 0
    assert "packets of 4 flits (default)" in capsys.readouterr().out


def test_run_report_says_which_packet_length_it_used(tmp_path, capsys):
    out = tmp_path / "report"
    assert main(["run", str(_spec(tmp_path)), "-o", str(out), *QUICK]) == 0
    report = (out / "report.md").read_text()
    assert "8 flits (spec)" in report
    assert f"2·(hops + 1) + L): {2 * (TORUS_HOPS + 1) + 8:.2f} cycles" in report
    sweep = json.loads((out / "sweep.json").read_text())
    assert sweep["inputs"]["packet_length"] == 8


def test_precedence_flag_then_spec_traffic_then_spec_then_default():
    """``spec.traffic`` (the spec helper's TrafficSpec) is read defensively: None = not given."""
    traffic = SimpleNamespace(rate=0.3, packet_length=6, seed=None, pattern="transpose")
    spec = SimpleNamespace(packet_length=8, traffic=traffic)
    args = build_parser().parse_args(["simulate", "x.yaml", "--seed", "7"])
    plan = SimpleNamespace(
        name="x", endpoints=range(16), router=RouterSettings(), routing=RoutingSpec("dor", {})
    )
    experiment = resolve(args, spec, plan)
    assert (experiment.rate, experiment.sources["rate"]) == (0.3, "spec")
    assert experiment.packet_length == 6 and experiment.pattern == "transpose"
    assert (experiment.seed, experiment.sources["seed"]) == (7, "--seed")
    assert (experiment.cycles, experiment.sources["cycles"]) == (10000, "default")
    bare = resolve(args, SimpleNamespace(packet_length=8), plan)  # a spec without traffic:
    assert (bare.packet_length, bare.rate) == (8, 0.1)
    cosim_args = build_parser().parse_args(["cosim", "x.yaml"])
    long = SimpleNamespace(packet_length=8, traffic=SimpleNamespace(cycles=50_000))
    assert (
        resolve(cosim_args, long, plan).cycles == 1000
    )  # a model window, not RTL injection cycles
    run_args = build_parser().parse_args(["run", "x.yaml"])
    assert (resolve(run_args, spec, plan).warmup, resolve(run_args, spec, plan).cycles) == (
        500,
        2000,
    )


# ---- defect 4: output paths checked before the work -------------------------------------------


def test_an_unwritable_output_is_refused_before_the_work(example, tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    args = ["sweep", str(example("torus-4x4")), "--rates", "0.1", "--plot", f"{blocker}/c.png"]
    assert main(args) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and "--plot" in err
    assert "rate" not in err  # refused before simulating anything


# ---- defect 7: trace replays ------------------------------------------------------------------


def test_trace_replay_reports_the_trace_not_a_rate(example, tmp_path, capsys):
    trace = tmp_path / "t.trace"
    trace.write_text("# cycle src dst length\n0 0 5 4\n3 1 9 2\n")
    assert main(["simulate", str(example("torus-4x4")), "--trace", str(trace)]) == 0
    out = capsys.readouterr().out
    assert f"trace {trace} (2 packets)" in out
    assert "offered" not in out and "uniform" not in out
    assert main(["simulate", str(example("torus-4x4")), "--trace", str(trace), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["inputs"] == {
        "spec": "torus-4x4",
        "trace": str(trace),
        "packets": 2,
    }


def test_a_bad_trace_endpoint_names_the_file_line_and_value(example, tmp_path, capsys):
    trace = tmp_path / "t.trace"
    trace.write_text("5 0 5 4\n\n0 16 3 4\n")  # sorted by cycle, the bad entry comes first
    assert main(["simulate", str(example("torus-4x4")), "--trace", str(trace)]) == 2
    err = capsys.readouterr().err
    assert f"{trace}:3: src 16 is not an endpoint of torus-4x4 (0..15)" in err


# ---- defect 6 (the command-line part): a model deadlock in cosim is reported, not a traceback --


def test_cosim_reports_a_model_deadlock(tmp_path, capsys):
    from zfabric.sim.tb.runner import simulator_available

    if not simulator_available("icarus"):
        pytest.skip("needs Icarus Verilog")
    spec = tmp_path / "ring.yaml"  # no datelines: the ring's CDG is one cycle of six channels
    spec.write_text(
        "name: ring6\ntopology: {kind: torus, k: [6]}\n"
        "routing: {name: dor, datelines: false, tie: plus}\n"
    )
    args = ["cosim", str(spec), "-q", "--allow-deadlock", "--rate", "0.9", "--cycles", "200"]
    assert main([*args, "--packet-length", "8", "--build-dir", str(tmp_path / "cache")]) == 1
    err = capsys.readouterr().err
    assert "zfabric: the model deadlocked" in err and "Traceback" not in err
    assert err.count("\n") == 1


# ---- defect 8 and the conventions -------------------------------------------------------------


def test_board_build_help_lists_the_real_targets(capsys):
    from zfabric.boards.targets import TARGETS

    with pytest.raises(SystemExit):
        main(["board", "build", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert all(name in text for name in TARGETS)
    assert "orangecrab," not in text  # the old help's name, which the command refused


def test_version(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out.strip() == f"zfabric {version('zfabric')}"


def test_every_option_has_help_and_shows_its_default():
    parser = build_parser()
    pending = [parser]
    while pending:
        current = pending.pop()
        for action in current._actions:
            if action.choices and isinstance(action.choices, dict):  # subcommands
                pending.extend(action.choices.values())
            elif action.option_strings:
                assert action.help, (current.prog, action.option_strings)
        text = current.format_help()
        assert "(default: None)" not in text, current.prog
    assert "(default: icarus)" in " ".join(
        parser._subparsers._group_actions[0].choices["cosim"].format_help().split()
    )


def test_quiet_silences_status_and_progress(example, capsys, monkeypatch):
    args = ["sweep", str(example("torus-4x4")), "--rates", "0.05", "--cycles", "200"]
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)  # progress bars when a terminal
    assert main([*args, "--warmup", "50"]) == 0
    err = capsys.readouterr().err
    assert "[1/1] torus-4x4 rate 0.05" in err and "rates" in err
    assert main([*args, "--warmup", "50", "-q"]) == 0
    assert capsys.readouterr().err == ""


def test_run_json_is_one_object_with_its_inputs(example, tmp_path, capsys):
    out = tmp_path / "report"
    assert main(["run", str(example("ring-2")), "-o", str(out), *QUICK, "--json"]) == 0
    captured = capsys.readouterr()
    report = json.loads(captured.out)  # the whole of stdout is one JSON object
    assert report["inputs"]["spec"] == "ring-2" and report["inputs"]["cycles"] == 200
    assert report["check"]["deadlock_free"] and report["output"] == str(out)
    assert "deadlock-free: yes" in captured.err  # the summary went to stderr


def test_records_as_csv(example, tmp_path, capsys):
    records = tmp_path / "records.csv"
    args = ["simulate", str(example("torus-4x4")), "--cycles", "200", "--warmup", "20"]
    assert main([*args, "--records", str(records), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    with records.open() as handle:
        rows = list(csv.DictReader(handle))
    assert {"id", "src", "dst", "length", "created", "delivered"} <= set(rows[0])
    assert sum(row["delivered"] != "" for row in rows) == report["packets"]


def _build_folder(cache: Path, name: str, size: int) -> Path:
    """A folder as the co-simulation runner makes one: NAME-KEY with its .lock."""
    build = cache / name
    build.mkdir(parents=True)
    (build / ".lock").write_text("")
    (build / "sim.vvp").write_bytes(b"x" * size)
    return build


def test_cache_info_and_clean_touch_only_zfabrics_folders(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("ZFABRIC_COSIM_DIR", raising=False)
    cosim = tmp_path / "zfabric" / "cosim"
    _build_folder(cosim, "ring-2-0123456789abcdef", 1000)
    (tmp_path / "other-app").mkdir()
    (tmp_path / "other-app" / "keep").write_text("keep")
    assert main(["cache", "info", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["cosim"] == {"path": str(cosim), "exists": True, "bytes": 1000, "files": 2}
    assert main(["cache", "clean"]) == 0
    assert f"removed cosim cache {cosim}: 1 build (1000 B)" in capsys.readouterr().out
    assert not cosim.exists() and (tmp_path / "other-app" / "keep").read_text() == "keep"
    monkeypatch.setenv("ZFABRIC_COSIM_DIR", str(tmp_path / "elsewhere"))
    assert main(["cache", "info", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["cosim"]["path"] == str(tmp_path / "elsewhere")


def test_cache_clean_leaves_the_users_files_in_zfabric_cosim_dir(tmp_path, monkeypatch, capsys):
    from zfabric.sim.tb.runner import default_cache

    mine = tmp_path / "mine"
    monkeypatch.setenv("ZFABRIC_COSIM_DIR", str(mine))
    assert default_cache() == mine  # the runner and the command agree on the folder
    first = _build_folder(mine, "ring-2-0123456789abcdef", 10)
    second = _build_folder(mine, "torus-4x4-flat-fedcba9876543210", 10)
    (mine / "thesis.tex").write_text("my thesis\n")
    (mine / "photos-0123456789abcdef").mkdir()  # a build folder's name, but no runner lock
    (mine / "photos-0123456789abcdef" / "a.jpg").write_bytes(b"jpeg")
    assert main(["cache", "clean"]) == 0
    out = capsys.readouterr().out
    assert "2 builds" in out and "left 2 items zfabric did not make" in out
    assert not first.exists() and not second.exists()
    assert (mine / "thesis.tex").read_text() == "my thesis\n"
    assert (mine / "photos-0123456789abcdef" / "a.jpg").read_bytes() == b"jpeg"
    assert main(["cache", "clean"]) == 0
    out = capsys.readouterr().out
    assert "nothing to remove; left 2 items zfabric did not make" in out and mine.is_dir()


def test_cache_clean_leaves_a_build_a_cosimulation_holds(tmp_path, monkeypatch, capsys):
    import fcntl

    monkeypatch.setenv("ZFABRIC_COSIM_DIR", str(tmp_path / "cosim"))
    busy = _build_folder(tmp_path / "cosim", "ring-2-0123456789abcdef", 10)
    idle = _build_folder(tmp_path / "cosim", "ring-3-fedcba9876543210", 10)
    with open(busy / ".in-use", "w") as lock:  # as a co-simulation holds it while it runs
        fcntl.flock(lock, fcntl.LOCK_SH)
        assert main(["cache", "clean"]) == 0
    out = capsys.readouterr().out
    assert ": 1 build (10 B); 1 build in use left alone" in out
    assert (busy / "sim.vvp").is_file() and not idle.exists()


@pytest.mark.parametrize(
    "argv, quiet",
    [
        (["-q", "check", "x.yaml"], True),
        (["check", "x.yaml", "-q"], True),
        (["board", "-q", "build", "icebreaker"], True),
        (["check", "x.yaml"], False),
    ],
)
def test_quiet_before_or_after_the_command(argv, quiet):
    assert build_parser().parse_args(argv).quiet is quiet


# ---- review 2: shared output folders, crafted manifests, caches, traces, records ------------


def _ring(tmp_path: Path, k: int) -> Path:
    spec = tmp_path / f"ring{k}.yaml"
    spec.write_text(f"name: ring-{k}\ntopology: {{kind: torus, k: [{k}]}}\n")
    return spec


def test_verilog_of_two_fabrics_into_one_folder_keeps_both(tmp_path, capsys):
    out = tmp_path / "build"
    assert main(["verilog", str(_ring(tmp_path, 3)), "-o", str(out)]) == 0
    first = _snapshot(out)
    assert main(["verilog", str(_ring(tmp_path, 4)), "-o", str(out)]) == 0
    after = _snapshot(out)
    from zfabric.hdl.verilog import SUFFIXES as suffixes

    for suffix in suffixes:
        assert after["ring_3" + suffix] == first["ring_3" + suffix]
    names = {f"ring_{k}{suffix}" for k in (3, 4) for suffix in suffixes}
    assert names == set((out / ".zfabric-manifest").read_text().split())


@pytest.mark.parametrize(
    "entry", ["../victim.txt", "/VICTIM", "sub/../../victim.txt", "./../victim.txt", "link/x"]
)
def test_a_manifest_naming_a_file_outside_the_folder_is_refused(tmp_path, capsys, entry):
    victim = tmp_path / "victim.txt"
    victim.write_text("the user's\n")
    out = tmp_path / "build"
    out.mkdir()
    (out / "link").symlink_to(tmp_path)
    (out / "link" / "x").write_text("outside\n")
    entry = entry.replace("/VICTIM", str(victim))
    (out / ".zfabric-manifest").write_text(f"{entry}\n")
    for argv in (["verilog", str(_ring(tmp_path, 3))], ["run", str(_ring(tmp_path, 3)), *QUICK]):
        assert main([*argv, "-o", str(out)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "--output" in err and "not a file inside" in err
        assert victim.read_text() == "the user's\n" and (tmp_path / "x").read_text() == "outside\n"
    assert not (out / "ring_3.v").exists()


def test_simulate_records_stream_to_disk_and_vanish_on_failure(example, tmp_path, monkeypatch):
    from zfabric.sim.measure import RecordWriter

    records = tmp_path / "out" / "records.csv"
    records.parent.mkdir()
    seen = []
    original = RecordWriter.__call__

    def call(self, record):
        original(self, record)
        self.stream.flush()
        # each record is in a temporary file in the destination folder, not in memory
        (tmp,) = [p for p in records.parent.iterdir() if p.name.startswith(".records.csv.")]
        seen.append(tmp.stat().st_size)
        if len(seen) == 50:
            raise KeyboardInterrupt

    monkeypatch.setattr(RecordWriter, "__call__", call)
    args = ["simulate", str(example("torus-4x4")), "--cycles", "300", "--warmup", "10"]
    assert main([*args, "--records", str(records)]) == 130
    assert seen == sorted(seen) and seen[0] < seen[-1]
    assert list(records.parent.iterdir()) == []  # neither records.csv nor the temporary file


def test_run_report_knee_is_sweep_knee_not_a_stable_point_past_saturation(
    example, tmp_path, monkeypatch, capsys
):
    import zfabric.cli.run as run_command

    original = run_command.sweep_curve

    def curve(*args, **kwargs):
        points = original(*args, **kwargs)
        # a stable point above a saturated one (noise in a short window) is not the knee
        for point, saturated in zip(points, (False, True, False), strict=True):
            point["saturated"] = saturated
        return points

    monkeypatch.setattr(run_command, "sweep_curve", curve)
    out = tmp_path / "report"
    quick = ["--cosim-cycles", "0", "--warmup", "50", "--cycles", "200", "--rates", "0.1,0.2,0.3"]
    assert main(["run", str(example("ring-2")), "-o", str(out), *quick]) == 0
    report = (out / "report.md").read_text()
    assert "Knee: 0.1 flits/cycle/endpoint (the highest stable rate below the first" in report
    assert json.loads((out / "sweep.json").read_text())["knee"] == 0.1
    assert "| 0.1 | " in report and "| 0.3 | " in report  # each row names its rate


def test_run_without_a_saturated_rate_reports_no_knee(example, tmp_path, capsys):
    out = tmp_path / "report"
    quick = ["--cosim-cycles", "0", "--warmup", "50", "--cycles", "200", "--rates", "0.1,0.2"]
    assert main(["-q", "run", str(example("ring-2")), "-o", str(out), *quick]) == 0
    sweep = json.loads((out / "sweep.json").read_text())
    assert (sweep["knee"], sweep["highest_stable"]) == (None, 0.2)
    report = (out / "report.md").read_text()
    assert "Knee: above 0.2 flits/cycle/endpoint (no swept rate saturated)" in report
    assert "cosim.json" not in report and not (out / "cosim.json").exists()
    # ring-2's 2-flit buffers under the credit period: the formula shown has their term
    assert "2·(hops + 1) + L + ⌊(L − 1)/2⌋·2 (buffers under 4 flits)" in report
    assert "router: 1 pipeline stage, separable allocator, round-robin output selection" in report


def test_check_shows_the_router_settings(tmp_path, capsys):
    spec = tmp_path / "ring.yaml"
    spec.write_text(
        "name: ring-3\ntopology: {kind: torus, k: [3]}\n"
        "router: {stages: 2, allocator: separable-2, selection: round-robin}\n"
    )
    assert main(["check", str(spec)]) == 0
    text = capsys.readouterr().out
    assert "router: 2 pipeline stages, separable-2 allocator, round-robin output selection" in text
    assert main(["check", str(spec), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["router"] == {
        "stages": 2,
        "allocator": "separable-2",
        "selection": "round-robin",
        "injection_vcs": 2,
        "ejection_vcs": 2,  # auto: the ring's links have 2 VCs (dateline classes)
        "head_bits": None,  # every head in one flit
        "buffers": "distributed",  # the default: asynchronous-read memories
        "switching": "wormhole",  # the default, which holds no packet whole
        "longest_packet": None,
        "bypass": "none",  # the default: every flit through its input buffer
    }
    spec.write_text("name: ring-3\ntopology: {kind: torus, k: [3]}\nrouter: {injection_vcs: 1}\n")
    assert main(["check", str(spec)]) == 0
    text = capsys.readouterr().out
    assert "round-robin output selection, 1 injection VC, 2 ejection VCs" in text


def test_simulate_text_gives_average_hops_to_three_decimals(example, capsys):
    args = ["simulate", str(example("torus-4x4")), "--cycles", "300", "--warmup", "50"]
    assert main(args) == 0
    text = capsys.readouterr().out
    assert main([*args, "--json"]) == 0
    hops = json.loads(capsys.readouterr().out)["average_hops"]
    assert f"average hops {hops:.3f}\n" in text


@pytest.mark.parametrize(
    "spec, traffic",
    [
        ("transit-full-64", ["--traffic", "locality", "--locality", "transit-full-64"]),
        ("znode-64", ["--traffic", "weighted", "--level-weights", "4,2,1"]),
    ],
)
def test_sweep_draws_by_level_as_simulate_does(example, spec, traffic, capsys):
    """A sweep's point under a pattern that draws the level first is the model run `simulate`
    makes with the same traffic, seed and cycles (both read the fabric's levels), and not
    the uniform pattern's."""
    window = ["--warmup", "50", "--cycles", "200", "--json", "-q"]
    results = {}
    for pattern in (traffic, []):
        assert main(["sweep", str(example(spec)), "--rates", "0.2", *pattern, *window]) == 0
        (curve,) = json.loads(capsys.readouterr().out).values()
        assert main(["simulate", str(example(spec)), "--rate", "0.2", *pattern, *window]) == 0
        single = json.loads(capsys.readouterr().out)
        (point,) = curve["points"]
        assert (point["packets"], point["latency"]) == (single["packets"], single["latency"])
        results[bool(pattern)] = point["latency"]["mean"]
    assert results[True] != results[False]
