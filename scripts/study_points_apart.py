"""Run each point of a study file in a process of its own, each from empty routing tables, then
the whole file into the same folder, which finds every point cached and writes the table and
the plot.

For studies of fabrics so large that the fast engine's routing tables, which keep an entry
per raw state (input VC and head) a run meets, would fill the memory of one process running
every point: each point here starts from an empty set-up
folder, removed when it ends. Points already in the output folder's cache are skipped by
``zfabric study`` itself. Usage::

    .venv/bin/python scripts/study_points_apart.py examples/studies/ndt-7dt-8192.yaml \\
        -o out/ndt-7dt-8192
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml
from zfabric.sim.study import load_study

from zfabric.errors import SpecError


def _one_point_files(study: Path, folder: Path) -> list[Path]:
    """A copy of the study per (spec, rate), its spec paths made absolute."""
    data = yaml.safe_load(study.read_text(encoding="utf-8"))
    copies = []
    for index, entry in enumerate(data["specs"]):
        if isinstance(entry.get("spec"), str):
            entry = {**entry, "spec": str((study.parent / entry["spec"]).resolve())}
        for rate in data["traffic"]["rates"]:
            one = {**data, "specs": [entry], "traffic": {**data["traffic"], "rates": [rate]}}
            one.pop("plot", None)
            copy = folder / f"point-{index}-{rate}.yaml"
            copy.write_text(yaml.safe_dump(one, sort_keys=False), encoding="utf-8")
            copies.append(copy)
    return copies


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("study", type=Path)
    parser.add_argument("-o", "--output", required=True, help="the study's output folder")
    args = parser.parse_args()
    try:  # a bad file is refused before any point runs, as zfabric study refuses it
        load_study(args.study)
    except SpecError as error:
        print(f"study_points_apart: error: {error}", file=sys.stderr)
        return 2
    zfabric = [sys.executable, "-m", "zfabric.cli", "study", "-q", "--workers", "0"]
    with tempfile.TemporaryDirectory() as scratch:
        copies = _one_point_files(args.study, Path(scratch))
        for number, copy in enumerate(copies, 1):
            print(f"point {number} of {len(copies)}: {copy.stem}", flush=True)
            with tempfile.TemporaryDirectory() as tables:
                env = {**os.environ, "ZFABRIC_SETUP_DIR": tables}
                done = subprocess.run([*zfabric, str(copy), "-o", args.output], env=env)
            if done.returncode:
                return done.returncode
    return subprocess.run([*zfabric, str(args.study), "-o", args.output]).returncode


if __name__ == "__main__":
    sys.exit(main())
