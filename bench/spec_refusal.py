"""How long the spec loader takes to refuse hostile spec files (the target: under 1 s, before any
work). Writes each file to a temporary folder, times ``load_spec`` on it (median of several runs,
file read and YAML parse included, interpreter start-up and imports excluded) and prints the
error's first line. Last line: the slowest refusal.

    .venv/bin/python bench/spec_refusal.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import platform
import statistics
import tempfile
import time
from pathlib import Path

import yaml

from zfabric import SpecError, load_spec


def _list(count: int, item: str) -> str:
    return "[" + ",".join([item] * count) + "]"


def _bomb() -> str:
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    lines += [f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 9)]
    return "\n".join(lines) + "\nname: *a8\ntopology: {kind: torus, k: *a8}\n"


FILES: dict[str, str | bytes] = {
    "znode, 14,000 levels": "topology:\n  kind: znode\n  z: "
    + _list(14000, "2")
    + "\n  R: "
    + _list(14000, "1")
    + "\n",
    "torus, 15,000-entry k": "topology: {kind: torus, k: " + _list(15000, "2") + "}\n",
    "alias bomb (9^9 strings)": _bomb(),
    "binary junk (64 KiB)": bytes(range(256)) * 256,
    "64 KiB + 1 of text": "description: " + "x" * (64 * 1024) + "\n",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    print(
        f"python {platform.python_version()} on {platform.machine()}, "
        f"libyaml {'yes' if yaml.__with_libyaml__ else 'no'}, median of {args.repeats} runs"
    )
    worst = ("", 0.0)
    with tempfile.TemporaryDirectory() as folder:
        for name, content in FILES.items():
            path = Path(folder) / "spec.yaml"
            data = content.encode() if isinstance(content, str) else content
            path.write_bytes(data)
            times = []
            for _ in range(args.repeats):
                start = time.perf_counter()
                try:
                    load_spec(path)
                except SpecError as error:
                    message = str(error).splitlines()[0]
                else:
                    raise SystemExit(f"{name}: accepted")
                times.append(time.perf_counter() - start)
            seconds = statistics.median(times)
            worst = max(worst, (name, seconds), key=lambda pair: pair[1])
            print(f"{name:28s} {len(data):7d} bytes  {seconds * 1000:7.1f} ms  {message[:70]}")
    print(f"slowest refusal: {worst[0]}, {worst[1] * 1000:.1f} ms")


if __name__ == "__main__":
    main()
