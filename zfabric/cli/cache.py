"""``zfabric cache info|clean``: where zfabric keeps its caches, how big they are, and removing
them.

The caches live under the platform's user cache folder (platformdirs: ``~/.cache/zfabric`` on
Linux, honouring ``XDG_CACHE_HOME``): ``cosim/`` holds the co-simulation's Verilog and
simulator builds (``$ZFABRIC_COSIM_DIR`` overrides it). ``clean`` removes only these folders.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
from pathlib import Path

from .common import add_command

__all__ = ["register", "run_info", "run_clean", "cache_root", "cosim_cache"]


def cache_root() -> Path:
    """zfabric's folder under the user cache folder."""
    import platformdirs

    return Path(platformdirs.user_cache_dir("zfabric", appauthor=False))


def cosim_cache() -> Path:
    """The co-simulation build cache: ``$ZFABRIC_COSIM_DIR``, else ``cosim/`` under
    :func:`cache_root`."""
    env = os.environ.get("ZFABRIC_COSIM_DIR")
    return Path(env) if env else cache_root() / "cosim"


def caches() -> dict[str, Path]:
    """Every cache folder zfabric uses, by name."""
    return {"cosim": cosim_cache()}


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
            shown = f"{_human(row['bytes'])} in {row['files']} files" if row["exists"] else "empty"
            print(f"{name:6} {row['path']}  {shown}")
    return 0


def run_clean(args: argparse.Namespace) -> int:
    for name, path in caches().items():
        size, _files = _size(path)
        if path.is_dir():
            shutil.rmtree(path)  # zfabric's own cache folder, made by zfabric
            print(f"removed {name} cache {path} ({_human(size)})")
        else:
            print(f"{name} cache {path}: nothing to remove")
    return 0
