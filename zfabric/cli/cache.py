"""``zfabric cache info|clean``: where zfabric keeps its caches, how big they are, and removing
them.

The caches live under the platform's user cache folder (platformdirs: ``~/.cache/zfabric`` on
Linux, honouring ``XDG_CACHE_HOME``): ``cosim/`` holds the co-simulation's Verilog and
simulator builds (``$ZFABRIC_COSIM_DIR`` overrides it), ``setup/`` each plan's routing verdict,
pattern limits and the fast engine's routing tables (``$ZFABRIC_SETUP_DIR`` overrides it;
:mod:`zfabric.setup_cache`). ``clean`` removes only what zfabric made there: the co-simulation
runner's build folders (``NAME[-VARIANT]-KEY``, KEY 16 hex digits, holding the runner's
``.lock``) and the set-up entries (``KIND-KEY.json`` or ``.npz``), then each cache folder
itself if that leaves it empty; anything else in them (either variable may name a folder of the
user's) is left and counted.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import re
import shutil
from pathlib import Path

from zfabric.setup_cache import CACHE_ENTRY, CACHE_TEMPORARY, setup_cache

from .common import add_command, cosim_cache, plural

__all__ = ["register", "run_info", "run_clean", "zfabric_builds"]


#: a build folder of the co-simulation runner: ``{plan}[-{variant}]-{build_key}``
BUILD_FOLDER = re.compile(r".+-[0-9a-f]{16}")


def zfabric_builds(path: Path) -> list[Path]:
    """The runner's build folders in ``path``: the name it gives them and the ``.lock`` it
    writes in each (a folder of the user's of a similar name is not one)."""
    if not path.is_dir():
        return []
    return sorted(
        entry
        for entry in path.iterdir()
        if entry.is_dir()
        and not entry.is_symlink()
        and BUILD_FOLDER.fullmatch(entry.name)
        and (entry / ".lock").is_file()
    )


def caches() -> dict[str, Path]:
    """Every cache folder zfabric uses, by name."""
    return {"cosim": cosim_cache(), "setup": setup_cache()}


def register(commands) -> None:
    parser = add_command(commands, "cache", "show or remove zfabric's caches")
    actions = parser.add_subparsers(dest="cache_command", required=True, metavar="ACTION")
    info = add_command(actions, "info", "the cache folders and their sizes")
    info.add_argument("--json", action="store_true", help="print one JSON object")
    info.set_defaults(run=run_info)
    clean = add_command(actions, "clean", "remove zfabric's cache folders (only those)")
    clean.set_defaults(run=run_clean)


def _size(path: Path) -> tuple[int, int]:
    """Bytes and files under ``path`` (0, 0 when it does not exist)."""
    total = files = 0
    for root, _dirs, names in os.walk(path):
        for name in names:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                continue
            files += 1
    return total, files


def _human(size: int) -> str:
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def run_info(args: argparse.Namespace) -> int:
    rows = {}
    for name, path in caches().items():
        size, files = _size(path)
        rows[name] = {"path": str(path), "exists": path.is_dir(), "bytes": size, "files": files}
    if args.json:
        print(json.dumps(rows, indent=1))
    else:
        for name, row in rows.items():
            shown = (
                f"{_human(row['bytes'])} in {plural(row['files'], 'file')}"
                if row["exists"]
                else "empty"
            )
            print(f"{name:6} {row['path']}  {shown}")
    return 0


def _remove_unless_in_use(build: Path) -> bool:
    """Remove a build folder unless a co-simulation uses it (holds its ``.in-use`` lock, or
    the ``.lock`` it emits under): True if removed."""
    from zfabric.sim.tb.runner import IN_USE

    with open(build / IN_USE, "a") as in_use, open(build / ".lock", "a") as lock:
        try:
            fcntl.flock(in_use, fcntl.LOCK_EX | fcntl.LOCK_NB)
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        shutil.rmtree(build)  # a build folder the runner made, held against a new run
    return True


def _clean_setup(path: Path) -> None:
    """Remove the set-up entries (and the temporary files of writes cut short)."""
    entries = [
        entry
        for entry in (sorted(path.iterdir()) if path.is_dir() else [])
        if entry.is_file()
        and not entry.is_symlink()
        and (CACHE_ENTRY.fullmatch(entry.name) or CACHE_TEMPORARY.fullmatch(entry.name))
    ]
    size = sum(entry.stat().st_size for entry in entries)
    for entry in entries:
        entry.unlink()
    left = len(list(path.iterdir())) if path.is_dir() else 0
    if path.is_dir() and not left:
        path.rmdir()
    kept = f"; left {plural(left, 'item')} zfabric did not make" if left else ""
    if entries:
        print(f"removed setup cache {path}: {plural(len(entries), 'file')} ({_human(size)}){kept}")
    else:
        print(f"setup cache {path}: nothing to remove{kept}")


def run_clean(args: argparse.Namespace) -> int:
    for name, path in caches().items():
        if name == "setup":
            _clean_setup(path)
            continue
        builds = zfabric_builds(path)
        sizes = {build: _size(build)[0] for build in builds}
        removed = [build for build in builds if _remove_unless_in_use(build)]
        in_use = len(builds) - len(removed)
        left = len(list(path.iterdir())) - in_use if path.is_dir() else 0
        if path.is_dir() and not left and not in_use:
            path.rmdir()
        notes = [f"{plural(in_use, 'build')} in use left alone"] if in_use else []
        notes += [f"left {plural(left, 'item')} zfabric did not make"] if left else []
        kept = f"; {'; '.join(notes)}" if notes else ""
        if removed:
            size = _human(sum(sizes[build] for build in removed))
            print(f"removed {name} cache {path}: {plural(len(removed), 'build')} ({size}){kept}")
        else:
            print(f"{name} cache {path}: nothing to remove{kept}")
    return 0
