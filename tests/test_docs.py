"""The documentation stays true: every console example runs and prints what the page shows,
and the README's links lead somewhere.

A console example is a fenced ``console`` block in README.md, CHANGELOG.md or a page under
docs/: lines starting with ``$ `` are commands, the lines after each its output (stdout and
stderr together, as a terminal shows them; no progress bars, which only a terminal gets). Each
block runs in a new empty folder holding ``examples/``, ``bench/`` and ``.venv/`` (links to this
checkout's and to the running interpreter's), so the commands read as a user types them, with a
co-simulation cache of its own. Durations
(``12.3 s``, ``131.6 cycles/s``) are compared as placeholders. An HTML comment on the line
before the block marks it (``<!-- console: slow fpga -->``): the marks apply to its test;
``matrix`` leaves it to ``-m matrix`` with the other ECP5 bitstream builds.

The site's own links (pages, anchors) are checked by ``sphinx-build -W`` in .ci/run.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").rglob("*.md"))]
MARK = re.compile(r"<!--\s*console:\s*([\w\s]+?)\s*-->")
VOLATILE = [
    (re.compile(r"\b\d+(\.\d+)?(?= ?(s|ms|min)\b)"), "<n>"),  # a duration
    (re.compile(r"\b[\d,]+(\.\d+)?(?= cycles/s\b)"), "<n>"),  # a simulation speed
]


@dataclass
class ConsoleBlock:
    page: Path
    line: int
    commands: list[tuple[str, str]]  # (command, the output shown)
    marks: list[str]

    @property
    def name(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def console_blocks(page: Path) -> list[ConsoleBlock]:
    lines = page.read_text().splitlines()
    blocks = []
    index = 0
    while index < len(lines):
        if lines[index].strip() != "```console":
            index += 1
            continue
        start = index
        before = lines[start - 1] if start else ""
        marks = MARK.match(before.strip())
        index += 1
        commands: list[tuple[str, list[str]]] = []
        while lines[index].strip() != "```":
            if lines[index].startswith("$ "):
                commands.append((lines[index][2:], []))
            elif commands:
                commands[-1][1].append(lines[index])
            else:
                raise ValueError(f"{page}:{index + 1}: output before the first command")
            index += 1
        blocks.append(
            ConsoleBlock(
                page,
                start + 1,
                [(command, "\n".join(shown)) for command, shown in commands],
                marks.group(1).split() if marks else [],
            )
        )
        index += 1
    return blocks


BLOCKS = [block for page in PAGES if page.exists() for block in console_blocks(page)]


def normalised(text: str) -> str:
    for pattern, placeholder in VOLATILE:
        text = pattern.sub(placeholder, text)
    return "\n".join(line.rstrip() for line in text.strip("\n").splitlines())


@pytest.mark.parametrize(
    "block",
    [pytest.param(b, marks=[getattr(pytest.mark, m) for m in b.marks]) for b in BLOCKS],
    ids=[block.name for block in BLOCKS],
)
def test_console_example_prints_what_the_page_shows(block, tmp_path):
    for folder in ("examples", "bench"):
        (tmp_path / folder).symlink_to(ROOT / folder)
    (tmp_path / ".venv").symlink_to(Path(sys.prefix))
    env = dict(os.environ, PYTHONUNBUFFERED="1")  # stdout and stderr in the order printed
    env["LC_COLLATE"] = "C"  # `ls` sorts as the pages show
    env["ZFABRIC_COSIM_DIR"] = str(tmp_path / ".cosim-cache")  # every block builds afresh
    for command, shown in block.commands:
        run = subprocess.run(
            ["bash", "-c", command],
            cwd=tmp_path,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=1800,
        )
        printed = run.stdout.replace(f"{tmp_path}/", "")  # paths as the user's, relative
        assert normalised(printed) == normalised(shown), f"{block.name}: $ {command}"


def test_every_console_example_has_a_command():
    assert BLOCKS, "no console examples found"
    for block in BLOCKS:
        assert block.commands, f"{block.name}: a console block without a command"


LINK = re.compile(r"\]\(([^)\s]+)\)")


def test_the_readmes_links_lead_to_files_and_headings():
    """GitHub renders the README outside the site: its relative links are checked here."""
    text = (ROOT / "README.md").read_text()
    for target in LINK.findall(text):
        if re.match(r"[a-z]+://", target):
            continue
        path, _, anchor = target.partition("#")
        where = ROOT / path if path else ROOT / "README.md"
        assert where.exists(), f"README links to a missing file: {target}"
        if anchor and where.suffix == ".md":
            headings = {
                re.sub(r"[^\w\- ]", "", line.lstrip("#").strip().lower()).replace(" ", "-")
                for line in where.read_text().splitlines()
                if line.startswith("#")
            }
            assert anchor in headings, f"README links to a missing heading: {target}"


def test_the_api_pages_example_runs(monkeypatch, capsys):
    """docs/api.md's first Python example, run from the repository's root as a user would."""
    text = (ROOT / "docs" / "api.md").read_text()
    example = text.split("```python\n", 1)[1].split("```", 1)[0]
    monkeypatch.chdir(ROOT)
    exec(compile(example, "docs/api.md", "exec"), {})
    accepted, latency = capsys.readouterr().out.split()
    assert 0.28 < float(accepted) < 0.32  # offered 0.3, far below torus 4x4's knee
    assert float(latency) > 10.27  # above the zero-load latency under load


def test_the_api_pages_script_prints_what_the_commands_print(monkeypatch, capsys):
    """docs/api.md's second example, the check and the sweep from a script, against
    ``zfabric check`` and the knee line of ``zfabric -q sweep`` on the same spec and rates."""
    text = (ROOT / "docs" / "api.md").read_text()
    example = text.split("```python\n")[2].split("```", 1)[0]
    monkeypatch.chdir(ROOT)
    exec(compile(example, "docs/api.md", "exec"), {})
    printed = capsys.readouterr().out
    command = [sys.executable, "-m", "zfabric.cli", "-q"]
    spec = "examples/torus-2x2.yaml"
    checked = subprocess.run([*command, "check", spec], capture_output=True, text=True, cwd=ROOT)
    swept = subprocess.run(
        [*command, "sweep", spec, "--rates", "0.2,0.5,0.8"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    knee_line = next(line for line in swept.stdout.splitlines() if "knee:" in line)
    assert printed == checked.stdout + knee_line.strip() + "\n"
