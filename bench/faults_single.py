"""Time of ``zfabric faults --single KIND`` (every single failure in turn, each a whole proof of
the degraded fabric) and what it finds, per fabric.

For each fabric and kind: the failures, the CPU seconds in all and per failure, how many leave
every pair connected, how many are proven deadlock-free and under which routing; with the
machine's name and Python version, as the figures depend on them. ``FABRIC:KIND:EVERY`` fails
every EVERY-th candidate only (a sample of a fabric too large to fail whole).

    .venv/bin/python bench/faults_single.py [FABRIC:KIND[:EVERY] ...]
"""

from __future__ import annotations

import argparse
import platform
import time

from zfabric import compile_plan, load_spec
from zfabric.faults import failure_candidates, single_failures

FABRICS = {
    "torus-4x4": {"topology": {"kind": "torus", "k": [4, 4]}},
    "torus-16x16": {"topology": {"kind": "torus", "k": [16, 16]}},
    "znode-16-layers": {"topology": {"kind": "znode", "z": [4, 4], "R": [1, 4], "layers": 2}},
    "transit-full-64": {"topology": {"kind": "transit", "form": "full"}},
    "transit-hybrid-768": {"topology": {"kind": "transit", "form": "hybrid", "leaf_stages": 2}},
}
DEFAULT = ["torus-4x4:links", "znode-16-layers:links", "transit-full-64:chips",
           "transit-full-64:links", "torus-16x16:links:16"]  # fmt: skip


def measure(name: str, kind: str, every: int) -> str:
    plan = compile_plan(load_spec({"name": name, **FABRICS[name]}))
    candidates = failure_candidates(plan, kind)
    start = time.process_time()
    results = single_failures(plan, kind, candidates=candidates[::every])
    spent = time.process_time() - start
    routings: dict[str, int] = {}
    for result in results:
        key = result.routing or "none proven"
        routings[key] = routings.get(key, 0) + 1
    n = len(results)
    sample = f" (1 in {every} of {len(candidates)})" if every > 1 else ""
    return (
        f"{name} --single {kind}: {n} failures{sample} in {spent:.1f} CPU s ({spent / n:.2f} per"
        f" failure); every pair connected after {sum(r.disconnected == 0 for r in results)},"
        f" proven deadlock-free after {sum(bool(r.deadlock_free) for r in results)}"
        f" ({', '.join(f'{k} {v}' for k, v in routings.items())})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="*", metavar="FABRIC:KIND[:EVERY]", default=DEFAULT)
    args = parser.parse_args()
    print(f"{platform.node()}, Python {platform.python_version()}, {platform.processor() or ''}")
    for run in args.runs:
        name, kind, every = (run.split(":") + ["1"])[:3]
        if name not in FABRICS or kind not in ("links", "switches", "chips") or not every.isdigit():
            parser.error(f"{run!r}: FABRIC:KIND[:EVERY] with FABRIC of {', '.join(FABRICS)}")
        print(measure(name, kind, max(1, int(every))), flush=True)


if __name__ == "__main__":
    main()
