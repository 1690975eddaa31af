"""Output rules a new user meets: a command replaces only files of its own result (never a
file its folder's manifest lists for another reason), and a single output file never makes
the folders it would go into."""

from __future__ import annotations

import pytest

from zfabric.cli import main

#: cheap runs: no co-simulation, short windows, one rate
QUICK = ["--cosim-cycles", "0", "--warmup", "50", "--cycles", "200", "--rates", "0.1"]


def test_run_keeps_a_listed_file_it_never_writes(example, tmp_path, capsys):
    out = tmp_path / "report"
    out.mkdir()
    (out / ".zfabric-manifest").write_text("mine.txt\nreport.md\n")
    (out / "mine.txt").write_text("written by another zfabric command, or listed by hand\n")
    (out / "report.md").write_text("an earlier report\n")
    assert main(["-q", "run", str(example("ring-2")), "-o", str(out), *QUICK]) == 0
    assert (out / "mine.txt").read_text().startswith("written by another")
    assert "mine.txt" in (out / ".zfabric-manifest").read_text().split()
    assert (out / "report.md").read_text().startswith("# ring-2")


def test_run_drops_its_own_earlier_files_it_does_not_write_again(example, tmp_path, capsys):
    """A co-simulation report and another fabric's Verilog from an earlier run would
    contradict the new report: they are the run's own result, superseded."""
    out = tmp_path / "report"
    out.mkdir()
    earlier = ["cosim.json", "verilog/other_fabric.v", "report.md"]
    (out / ".zfabric-manifest").write_text("".join(f"{name}\n" for name in earlier))
    (out / "verilog").mkdir()
    for name in earlier:
        (out / name).write_text("from an earlier run\n")
    assert main(["-q", "run", str(example("ring-2")), "-o", str(out), *QUICK]) == 0
    listed = (out / ".zfabric-manifest").read_text().split()
    assert not (out / "cosim.json").exists() and "cosim.json" not in listed
    assert not (out / "verilog" / "other_fabric.v").exists()
    assert (out / "verilog" / "ring_2.v").is_file() and "verilog/ring_2.v" in listed


@pytest.mark.parametrize(
    ("command", "option", "extra"),
    [
        ("check", "--plan-out", []),
        ("simulate", "--records", ["--cycles", "100"]),
        ("sweep", "--plot", ["--rates", "0.1", "--cycles", "100"]),
        ("sweep", "--cache", ["--rates", "0.1", "--cycles", "100"]),
        ("cosim", "--vcd", ["--cycles", "20"]),
    ],
)
def test_a_single_output_file_never_makes_its_folder(
    example, tmp_path, capsys, command, option, extra
):
    target = tmp_path / "missing" / "deeper" / "out.png"
    args = [command, str(example("ring-2")), option, str(target), *extra]
    assert main(args) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1
    assert err == (
        f"zfabric: error: {option}: cannot write {str(target)!r}: the folder"
        f" {str(target.parent)!r} does not exist\n"
    )
    assert list(tmp_path.iterdir()) == []
