"""Bad command lines: each exits 2 with one stderr line naming the argument and the bad value,
no traceback, and no file created or changed in the working folder.

Most cases call ``main`` in-process (fast); a few go through a subprocess to show that nothing
but that one line reaches the terminal.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
import time
from pathlib import Path

import pytest

from zfabric.cli import main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
TORUS = str(EXAMPLES / "torus-4x4.yaml")
RING = str(EXAMPLES / "ring-2.yaml")
ZNODE = str(EXAMPLES / "znode-64.yaml")

#: generous: every case is refused before any simulation or emission starts
SECONDS = 20

# (command line, the argument the error must name, the bad value it must quote)
# {file}: an existing file in the working folder; {dir}: an existing folder holding a file
CASES = [
    (["simulate", TORUS, "--cycles", "0"], "--cycles", "'0'"),
    (["simulate", TORUS, "--cycles", "-5"], "--cycles", "'-5'"),
    (["simulate", TORUS, "--cycles", "999999999999"], "--cycles", "'999999999999'"),
    (["simulate", TORUS, "--cycles", "ten"], "--cycles", "'ten'"),
    (["simulate", TORUS, "--warmup", "-1"], "--warmup", "'-1'"),
    (["simulate", TORUS, "--rate", "0"], "--rate", "'0'"),
    (["simulate", TORUS, "--rate", "1.5"], "--rate", "'1.5'"),
    (["simulate", TORUS, "--rate", "nan"], "--rate", "'nan'"),
    (["simulate", TORUS, "--rate", "-0.1"], "--rate", "'-0.1'"),
    (["simulate", TORUS, "--hotspot-fraction", "2"], "--hotspot-fraction", "'2'"),
    (["simulate", TORUS, "--hotspot-fraction", "-0.5"], "--hotspot-fraction", "'-0.5'"),
    (["simulate", TORUS, "--packet-length", "100000"], "--packet-length", "'100000'"),
    (["simulate", TORUS, "--packet-length", "8-2"], "--packet-length", "'8-2'"),
    (["simulate", TORUS, "--packet-length", "0"], "--packet-length", "'0'"),
    (["simulate", TORUS, "--seed", "-1"], "--seed", "'-1'"),
    (["simulate", TORUS, "--seed", str(2**64)], "--seed", repr(str(2**64))),
    (["simulate", TORUS, "--traffic", "unifrom"], "--traffic", "'unifrom'"),
    (["sweep", TORUS, "--rates", "0.1,2"], "--rates", "'2'"),
    (["sweep", TORUS, "--rates", "0.1,,0.2"], "--rates", "'0.1,,0.2'"),
    (["cosim", TORUS, "--cycles", "0"], "--cycles", "'0'"),
    (["cosim", TORUS, "--sim", "modelsim"], "--sim", "'modelsim'"),
    (["run", TORUS, "--cosim-cycles", "-1"], "--cosim-cycles", "'-1'"),
    (["run", TORUS, "--cycles", "0"], "--cycles", "'0'"),
    (["run", TORUS, "--rates", "0"], "--rates", "'0'"),
    (["check", TORUS, "--plan-out", "{file}/plan.json"], "--plan-out", "{file}/plan.json"),
    (["check", TORUS, "--plan-out", "{dir}"], "--plan-out", "{dir}"),
    (["verilog", TORUS, "-o", "{file}"], "--output", "{file}"),
    (["verilog", TORUS, "-o", "{file}/rtl"], "--output", "{file}/rtl"),
    (["run", TORUS, "-o", "{file}"], "--output", "{file}"),
    (["run", TORUS, "-o", "{dir}"], "--output", "{dir}"),
    (["run", TORUS, "-o", "."], "--output", "'.'"),
    (["simulate", TORUS, "--records", "{dir}"], "--records", "{dir}"),
    (["sweep", TORUS, "--plot", "{file}/curve.png"], "--plot", "{file}/curve.png"),
    (["cosim", TORUS, "--build-dir", "{file}"], "--build-dir", "{file}"),
    (["cosim", TORUS, "--vcd", "{dir}"], "--vcd", "{dir}"),
    (["board", "build", "icebreaker", "-o", "{file}"], "--output", "{file}"),
    (["board", "build", "de10", "--plan-only"], "TARGET", "'de10'"),
    (["simulate", TORUS, "--trace", "missing.trace"], "--trace", "missing.trace"),
    (["simulate", TORUS, "--trace", "{bad_endpoint}"], "--trace", "{bad_endpoint}:2: dst 99"),
    (["simulate", TORUS, "--trace", "{bad_syntax}"], "--trace", "{bad_syntax}:1"),
    (["ndt-configs", TORUS], "topology.kind", "'torus'"),
    (["simulate", "{dir}"], "{dir}", "cannot read"),
    (["frobnicate"], "COMMAND", "'frobnicate'"),
    # traces the replay would run on for hours, and entries that say why they are bad
    (["simulate", TORUS, "--trace", "{far}"], "--trace", "{far}:2: cycle 99999999999 is above"),
    (["simulate", TORUS, "--trace", "{long}"], "--trace", "{long}:1: length 100000000 is above"),
    (["simulate", TORUS, "--trace", "{loop}"], "--trace", "{loop}:1: src equals dst (1)"),
    (["simulate", TORUS, "--trace", "{empty_flit}"], "--trace", "{empty_flit}:1: length 0"),
    (["simulate", TORUS, "--trace", "{past}"], "--trace", "{past}:1: negative cycle -3"),
    (["simulate", TORUS, "--trace", "{empty}"], "--trace", "{empty}: no packets"),
    # a plot format matplotlib cannot write, refused before the sweep
    (["sweep", TORUS, "--plot", "x.txt"], "--plot", "'x.txt' must end in one of .eps"),
    (["sweep", TORUS, "--plot", "curve"], "--plot", "'curve'"),
    # the Znode cost optimiser
    (["optimise", "-P", "0"], "--processors", "'0'"),
    (["optimise", "-P", "many"], "--processors", "'many'"),
    (["optimise", "-P", "512", "--levels", "0"], "--levels", "'0'"),
    (["optimise", "-P", "512", "--levels", "2", "--max-levels", "3"], "--max-levels", "--levels"),
    (["optimise", "-P", "512", "--theta", "0"], "--theta", "'0'"),
    (["optimise", "-P", "512", "--connectivity", "sideways"], "--connectivity", "'sideways'"),
    (["optimise", "-P", "512", "--znodes", "3"], "--znodes", "got 3"),
    (["optimise", "-P", "512", "--psi", "0"], "--psi", "'0'"),
    (["optimise", "-P", "512", "--psi", "2,2"], "--psi", "'2,2'"),
    (["optimise", "-P", "512", "--psi", "1,2"], "--psi", "(1, 2)"),
    (["optimise", "-P", "512", "--psi", "2", "--connectivity", "full"], "--psi", "got 2"),
    (["optimise", "-P", "8192", "--connectivity", "full"], "--processors", "8192"),
    (["optimise", "-P", "36", "--write-specs", "{file}"], "--write-specs", "{file}"),
    # a permutation that maps each of ring-2's two endpoints onto itself sends nothing
    (["simulate", RING, "--traffic", "transpose"], "--traffic", "'transpose' sends nothing"),
    (["sweep", RING, "--traffic", "bit-reversal", "--rates", "0.1"], "--traffic", "'bit-rev"),
    (["run", RING, "--traffic", "shuffle", "--cosim-cycles", "0"], "--traffic", "'shuffle'"),
    # weighted-random traffic needs a fabric with levels, and one weight per level
    (["simulate", TORUS, "--traffic", "weighted"], "--traffic", "'weighted' draws destinations"),
    (
        ["sweep", ZNODE, "--traffic", "weighted", "--level-weights", "1,2"],
        "--level-weights",
        "got 2",
    ),
    (["simulate", ZNODE, "--level-weights", "1,-2"], "--level-weights", "'-2'"),
    # single output files: a file zfabric did not write is never replaced
    (["simulate", TORUS, "--records", "{file}"], "--records", "{file}"),
    (["check", TORUS, "--plan-out", "{file}"], "--plan-out", "{file}"),
    (["cosim", TORUS, "--vcd", "{file}"], "--vcd", "{file}"),
    (["simulate", TORUS, "--records", "/proc/x.csv"], "--records", "/proc/x.csv"),
    (["simulate", TORUS, "--trace", "{dir}"], "--trace", "{dir}: cannot read: Is a directory"),
    (["simulate", TORUS, "--trace", "{binary}"], "--trace", "{binary}: not UTF-8 text (byte 0xff"),
    (["verilog", TORUS, "-o", "/proc/rtl"], "--output", "/proc/rtl"),
    (["sweep", TORUS, "{bad_spec}", "--rates", "0.1"], "{bad_spec}: topology.k[1]", "got 1"),
    # sweep's curves are keyed by the spec's name: two specs of one name would merge
    (["sweep", TORUS, TORUS, "--rates", "0.1"], "spec", "is named 'torus-4x4', as"),
]

#: more bad traces in the working folder, by name
TRACES = {
    "far": "0 0 1 4\n99999999999 0 1 4\n",
    "long": "0 0 1 100000000\n",
    "loop": "0 1 1 4\n",
    "empty_flit": "0 0 1 0\n",
    "past": "-3 0 1 4\n",
    "empty": "# cycle src dst length\n\n",
}

#: run through a subprocess as well: nothing but the one line may reach the terminal
SUBPROCESS = {0, 11, 26, 29, 36, 38}


def _tree(root: Path) -> dict[str, tuple[bytes, int]]:
    """Every path under ``root`` with its content digest (files) and mode."""
    tree = {}
    for path in sorted(root.rglob("*")):
        data = hashlib.sha256(path.read_bytes()).digest() if path.is_file() else b"dir"
        tree[path.relative_to(root).as_posix()] = (data, path.stat().st_mode)
    return tree


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    """A working folder holding a user's file, a user's folder and bad traces."""
    (tmp_path / "notes.txt").write_text("the user's notes: not a spec\n")
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "keep.csv").write_text("a,b\n1,2\n")
    (tmp_path / "endpoint.trace").write_text("0 0 5 4\n3 1 99 4\n")
    (tmp_path / "syntax.trace").write_text("0 zero 5 4\n")
    for name, text in TRACES.items():
        (tmp_path / f"{name}.trace").write_text(text)
    (tmp_path / "binary.trace").write_bytes(b"\xff\xfe 0 1 4\n")
    (tmp_path / "k1.yaml").write_text("name: k1\ntopology: {kind: torus, k: [4, 1]}\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _fill(argv, argument, value):
    names = {
        "file": "notes.txt",
        "dir": "results",
        "bad_endpoint": "endpoint.trace",
        "bad_syntax": "syntax.trace",
        "binary": "binary.trace",
        "bad_spec": "k1.yaml",
        **{name: f"{name}.trace" for name in TRACES},
    }
    argv = [arg.format(**names) for arg in argv]
    return argv, argument.format(**names), value.format(**names)


@pytest.mark.parametrize("index", range(len(CASES)))
def test_bad_command_line_in_process(workdir, capsys, index):
    argv, argument, value = _fill(*CASES[index])
    before = _tree(workdir)
    start = time.monotonic()
    try:
        code = main(argv)
    except SystemExit as exit_:  # argparse refuses before main's own handling
        code = exit_.code
    elapsed = time.monotonic() - start
    out, err = capsys.readouterr()
    assert code == 2, err
    assert out == ""
    assert err.count("\n") == 1 and err.endswith("\n"), err
    assert argument in err and value in err, err
    assert "Traceback" not in err
    assert _tree(workdir) == before
    assert elapsed < SECONDS


@pytest.mark.parametrize("index", sorted(SUBPROCESS))
def test_bad_command_line_in_a_subprocess(workdir, index):
    argv, argument, value = _fill(*CASES[index])
    before = _tree(workdir)
    result = subprocess.run(
        [sys.executable, "-m", "zfabric.cli", *argv],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=workdir,
    )
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1, result.stderr
    assert argument in result.stderr and value in result.stderr
    assert "Traceback" not in result.stderr
    assert _tree(workdir) == before


def test_a_silent_pattern_from_the_spec_or_a_study_names_its_key(workdir, capsys):
    ring = Path(RING).read_text()
    (workdir / "ring.yaml").write_text(ring + "traffic: {pattern: transpose}\n")
    (workdir / "study.yaml").write_text(
        f"specs: [{RING}]\ntraffic: {{patterns: [uniform, shuffle], rates: [0.1]}}\n"
    )
    before = _tree(workdir)
    for argv, key in (
        (["simulate", "ring.yaml"], "traffic.pattern: 'transpose'"),
        (["study", "study.yaml", "-o", "out"], "traffic.patterns[1]: 'shuffle'"),
    ):
        assert main(argv) == 2
        out, err = capsys.readouterr()
        assert out == "" and err.count("\n") == 1 and key in err, err
    assert _tree(workdir) == before
