"""On-disk cache of a plan's set-up: the routing analysis's verdict and each traffic pattern's
limits. Both walk about N^2 routing states (minutes at thousands of endpoints) and give the
same answer for the same plan every time, so each is computed once and kept as a small JSON
file in the ``setup`` cache folder (``zfabric cache info|clean``).

An entry's name is its kind and a key: the SHA-256 of the plan's JSON digest (computed once per
plan), the entry's own inputs (a pattern, a seed) and the source files of the walk that
computed it, so a changed routing function or analysis never reads a stale entry.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import re
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, BinaryIO

from .plan import FabricPlan

__all__ = ["setup_cache", "cached", "entry", "store", "CACHE_ENTRY", "CACHE_TEMPORARY"]

#: the name of an entry this module writes: ``KIND-KEY.json`` (or ``.npz``), KEY 16 hex digits
CACHE_ENTRY = re.compile(r"[a-z]+-[0-9a-f]{16}\.(json|npz)")
#: a temporary file of an entry's write (:func:`store`), left behind if it was cut short
CACHE_TEMPORARY = re.compile(r"\.[0-9a-z_]+\.tmp")

_CORE = Path(__file__).resolve().parent


def setup_cache() -> Path:
    """``$ZFABRIC_SETUP_DIR``, else ``zfabric/setup`` under the platform's user cache folder
    (``~/.cache/zfabric/setup`` on Linux)."""
    import platformdirs

    env = os.environ.get("ZFABRIC_SETUP_DIR")
    return (
        Path(env)
        if env
        else Path(platformdirs.user_cache_dir("zfabric", appauthor=False)) / "setup"
    )


@functools.lru_cache(maxsize=8)
def _sources_digest(extra: tuple[Path, ...]) -> bytes:
    """SHA-256 of the compiler's sources (the routing functions, the plan, the analysis; the
    command line excluded) and of ``extra``."""
    files = sorted(p for p in _CORE.rglob("*.py") if "cli" not in p.relative_to(_CORE).parts)
    digest = hashlib.sha256()
    for file in [*files, *sorted(extra)]:
        digest.update(file.name.encode())
        digest.update(file.read_bytes())
    return digest.digest()


def entry(
    kind: str,
    plan: FabricPlan,
    *,
    inputs: dict[str, Any] | None = None,
    sources: Iterable[Path] = (),
    suffix: str = "json",
) -> Path:
    """Where the entry of ``kind`` for ``plan`` and ``inputs`` lives, computed by ``sources``
    (besides the compiler's)."""
    digest = hashlib.sha256(_sources_digest(tuple(Path(p).resolve() for p in sources)))
    digest.update(plan.json_digest)
    digest.update(json.dumps(inputs or {}, sort_keys=True).encode())
    return setup_cache() / f"{kind}-{digest.hexdigest()[:16]}.{suffix}"


def store(path: Path, write: Callable[[BinaryIO], None]) -> None:
    """Write an entry through a temporary file renamed into place (readers never see half of
    one); a cache folder that cannot be written is no error, the entry is just not kept."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".", suffix=".tmp")
    except OSError:
        return
    try:
        with os.fdopen(handle, "wb") as file:
            write(file)
        os.replace(temporary, path)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(temporary)


def cached(
    kind: str,
    plan: FabricPlan,
    compute: Callable[[], dict[str, Any]],
    *,
    inputs: dict[str, Any] | None = None,
    sources: Iterable[Path] = (),
) -> dict[str, Any]:
    """The JSON object ``compute()`` gives for ``plan`` and ``inputs``, read from the cache when
    an entry of the same key exists, else computed and stored (an unreadable entry is computed
    again)."""
    path = entry(kind, plan, inputs=inputs, sources=sources)
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        pass
    # the same JSON types whether computed now or read back later
    value = json.loads(json.dumps(compute()))
    store(path, lambda file: file.write(json.dumps(value).encode()))
    return value
