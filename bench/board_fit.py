"""The largest fabric of a family that fits a board at its default clock, found by building.

For one target and one family, builds the self-checking board design (boards/top.py: fabric +
generators + checkers + UART report) for growing fabrics, smallest first, and stops at the
first that does not fit the device or misses the board clock. Prints one line per build
(utilisation, Fmax, build time); the last line names the largest that fitted.

    .venv/bin/python bench/board_fit.py icebreaker torus [--flit-width 16] [--buffer-depth 2]
                                        [--start I] [--count N]

Families and their sizes, in order: torus (rings of 2..4, then k x k' tori), ndt (2-D then
3-D twin tori), znode (k-ary n-trees). Large ECP5 builds take tens of minutes each.
"""

from __future__ import annotations

import argparse
import tempfile
import time

from zfabric.boards.build import BuildError, board_build

FAMILIES = {
    "torus": [
        ("torus", {"k": k}, "dor")
        for k in ([2], [3], [4], [2, 2], [2, 3], [3, 3], [3, 4], [4, 4], [4, 5], [5, 5], [6, 6])
    ],
    "ndt": [("ndt", {"k": k}, "dort") for k in ([2, 2], [2, 3], [3, 3], [2, 2, 2], [3, 3, 2])],
    "znode": [
        ("kary_ntree", {"k": k, "n": n}, "sliced")
        for k, n in ((2, 2), (2, 3), (4, 2), (2, 4), (2, 5), (4, 3))
    ],
}


def spec_for(kind, params, routing, flit_width, buffer_depth):
    size = "x".join(map(str, params["k"])) if "n" not in params else f"{params['k']}-{params['n']}"
    return {
        "name": f"{kind}-{size}",
        "topology": {"kind": kind, **params},
        "routing": routing,
        "flit_width": flit_width,
        "buffer_depth": buffer_depth,
        "packet_length": 4,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("target")
    parser.add_argument("family", choices=sorted(FAMILIES))
    parser.add_argument("--flit-width", type=int, default=16)
    parser.add_argument("--buffer-depth", type=int, default=4)
    parser.add_argument("--start", type=int, default=0, help="skip the first sizes")
    parser.add_argument("--count", type=int, help="build at most this many sizes")
    args = parser.parse_args()

    import yaml

    print(
        f"target {args.target}, family {args.family}, {args.flit_width}-bit flits, "
        f"buffers of {args.buffer_depth}, 4-flit packets; default clock"
    )
    largest = None
    stop = None if args.count is None else args.start + args.count
    for kind, params, routing in FAMILIES[args.family][args.start : stop]:
        spec = spec_for(kind, params, routing, args.flit_width, args.buffer_depth)
        with tempfile.TemporaryDirectory() as tmp:
            path = f"{tmp}/{spec['name']}.yaml"
            with open(path, "w") as f:
                yaml.safe_dump(spec, f)
            start = time.monotonic()
            try:
                report = board_build(args.target, path, f"{tmp}/build", progress=None)
            except BuildError as error:
                print(f"{spec['name']:12} does not build: {error}", flush=True)
                if error.log is not None and error.log.exists():  # the folder goes away
                    tail = error.log.read_text(errors="replace").splitlines()[-8:]
                    print("\n".join(f"    | {line}" for line in tail), flush=True)
                break
            seconds = time.monotonic() - start
        util = report["utilisation"]
        (timing,) = report["fmax"].values()
        print(
            f"{spec['name']:12} {report['endpoints']:3} endpoints {report['switches']:3} switches"
            f"  LUT {util['luts']['percent']:5.1f}%  FF {util['ffs']['percent']:5.1f}%"
            f"  Fmax {timing['fmax_mhz']:6.2f} MHz ({'PASS' if timing['pass'] else 'FAIL'} at "
            f"{timing['target_mhz']:g})  {seconds:6.0f} s",
            flush=True,
        )
        if not report["timing_pass"]:
            break
        largest = spec["name"]
    print(f"largest {args.family} that fits {args.target}: {largest or 'none'}")


if __name__ == "__main__":
    main()
