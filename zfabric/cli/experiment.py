"""The traffic options of ``simulate``, ``sweep``, ``cosim`` and ``run``, resolved against the
spec, and trace files; and the swept curve that ``sweep`` and ``run`` both draw with them.

Precedence, per option: the command-line flag, else the spec (its ``traffic:`` section, read as
:class:`~zfabric.traffic_spec.TrafficSpec`, whose packet length also covers the top-level
``packet_length``), else the built-in default. The
options default to None in argparse so that a given flag can be told from a default one; their
help text states the built-in default.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from zfabric.bubble import asks_bubble
from zfabric.errors import SpecError
from zfabric.fields import short

from .common import (
    MAX_CYCLES,
    MAX_PACKET_LENGTH,
    fraction,
    integer,
    locality,
    packet_length,
    progress,
    rate,
    rate_text,
    rates,
    status,
    weights,
)

__all__ = [
    "Experiment",
    "add_traffic_arguments",
    "add_engine_argument",
    "resolve",
    "read_checked_trace",
    "sweep_curve",
    "point_status",
]

#: field -> (flag, built-in default)
OPTIONS: dict[str, tuple[str, Any]] = {
    "pattern": ("--traffic", "uniform"),
    "rate": ("--rate", 0.1),
    "rates": ("--rates", (0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6)),
    "packet_length": ("--packet-length", None),  # the spec always has one
    "process": ("--process", "bernoulli"),
    "hotspot_fraction": ("--hotspot-fraction", 0.2),
    "level_weights": ("--level-weights", None),  # None: every level alike
    "locality": ("--locality", None),  # required under --traffic locality
    "seed": ("--seed", 1),
    "warmup": ("--warmup", 1000),
    "cycles": ("--cycles", 10000),
}


def _default(field_name: str, builtin: Any) -> str:
    shown = ",".join(map(str, builtin)) if isinstance(builtin, tuple) else builtin
    return f"(default: the spec's traffic.{field_name}, else {shown})"


def add_traffic_arguments(
    parser: argparse.ArgumentParser,
    *,
    single_rate: bool = False,
    sweep: bool = False,
    windows: bool = True,
    defaults: Mapping[str, Any] | None = None,
    rate_help: str | None = None,
) -> None:
    """The traffic options; ``defaults`` overrides built-in defaults for this command,
    ``rate_help`` the help of ``--rate`` (a command that runs the model only when it is given)."""
    from zfabric.sim.traffic import PATTERNS

    builtin = {name: default for name, (_flag, default) in OPTIONS.items()}
    builtin.update(defaults or {})
    parser.set_defaults(builtin_defaults=builtin)
    parser.add_argument(
        "--traffic",
        dest="pattern",
        choices=PATTERNS,
        metavar="PATTERN",
        help=f"traffic pattern: {', '.join(PATTERNS)} " + _default("pattern", builtin["pattern"]),
    )
    if single_rate:
        parser.add_argument(
            "--rate",
            type=rate,
            metavar="R",
            help=rate_help
            or "offered load in flits/cycle/endpoint, in (0, 1] "
            + _default("rate", builtin["rate"]),
        )
    if sweep:
        parser.add_argument(
            "--rates",
            type=rates,
            metavar="R,R,...",
            help="comma-separated offered loads, each in (0, 1] "
            + _default("rates", builtin["rates"]),
        )
    parser.add_argument(
        "--packet-length",
        type=packet_length,
        metavar="L",
        help="flits per packet: N, or MIN-MAX for uniformly distributed lengths, up to 4096"
        " (default: the spec's traffic.packet_length, else its packet_length, else 4)",
    )
    parser.add_argument(
        "--process",
        choices=["bernoulli", "poisson"],
        help="injection process " + _default("process", builtin["process"]),
    )
    parser.add_argument(
        "--hotspot-fraction",
        type=fraction,
        metavar="F",
        help="share of packets sent to the hotspot under --traffic hotspot, in [0, 1] "
        + _default("hotspot_fraction", builtin["hotspot_fraction"]),
    )
    parser.add_argument(
        "--level-weights",
        type=weights,
        metavar="W,W,...",
        help="under --traffic weighted, each level's weight (level 1 first, normalised to"
        " probabilities), the level a packet must reach (default: the spec's"
        " traffic.level_weights, else every level alike)",
    )
    parser.add_argument(
        "--locality",
        type=locality,
        metavar="PRESET|P,P,...",
        help="under --traffic locality, the probability of each level a packet must reach"
        " (level 1 first, summing to 1), or a preset of the Transit thesis's Tables"
        " 4.10-4.14 (docs/specs.md) (default: the spec's traffic.locality; required)",
    )
    parser.add_argument(
        "--seed",
        type=integer(0, 2**63 - 1),
        metavar="N",
        help="random seed " + _default("seed", builtin["seed"]),
    )
    if windows:
        parser.add_argument(
            "--warmup",
            type=integer(0, MAX_CYCLES),
            metavar="N",
            help="cycles simulated before measuring " + _default("warmup", builtin["warmup"]),
        )
    parser.add_argument(
        "--cycles",
        type=integer(1, MAX_CYCLES),
        metavar="N",
        help="measurement window in cycles " + _default("cycles", builtin["cycles"])
        if windows
        else f"cycles of injection (default: {builtin['cycles']}; the spec's traffic.cycles is a"
        " measurement window for the model and does not apply)",
    )
    if not windows:
        parser.set_defaults(spec_ignores=("cycles",))
    parser.add_argument(
        "--allow-deadlock",
        action="store_true",
        help="simulate a fabric whose channel dependency graph is cyclic; report a run-time"
        " deadlock",
    )


def add_engine_argument(parser: argparse.ArgumentParser) -> None:
    """``--engine``: the cycle engine of the model runs (``zfabric.sim.ENGINES``)."""
    from zfabric.sim import ENGINES  # the names only: the engines load when a run needs them

    parser.add_argument(
        "--engine",
        choices=ENGINES,
        default=ENGINES[0],
        help="cycle engine: fast (compiled) or reference (the readable"
        " model it is checked against, cycle for cycle); the JSON names the one that ran",
    )


@dataclass(frozen=True)
class Experiment:
    """The resolved traffic options (None: the command has no such option); ``sources`` says
    where each came from (the flag, the spec, or ``default``)."""

    pattern: str
    packet_length: int | tuple[int, int]
    process: str
    hotspot_fraction: float
    seed: int
    rate: float | None = None
    rates: tuple[float, ...] | None = None
    warmup: int | None = None
    cycles: int | None = None
    level_weights: tuple[float, ...] | None = None  # weighted traffic only
    locality: str | tuple[float, ...] | None = None  # locality traffic only
    zones: tuple[int, ...] = ()  # weighted, locality: the fabric's levels (not an option)
    sources: Mapping[str, str] = field(default_factory=dict)

    def config(self, offered: float | None = None):
        """The :class:`~zfabric.sim.traffic.TrafficConfig` at ``offered`` (default: the rate)."""
        from zfabric.sim.traffic import TrafficConfig

        try:
            return TrafficConfig(
                pattern=self.pattern,
                rate=offered if offered is not None else self.rate,
                packet_length=self.packet_length,
                process=self.process,
                hotspot_fraction=self.hotspot_fraction,
                level_weights=self._level_weights(),
                zones=self.zones,
            )
        except ValueError as error:
            raise SpecError("traffic", str(error)) from None

    def _level_weights(self) -> tuple[float, ...]:
        """What the pattern reads per level: locality's probabilities, weighted's weights."""
        from zfabric.traffic_spec import locality_probabilities

        if self.pattern == "locality":
            return locality_probabilities(self.locality)
        return self.level_weights or ()

    def lengths(self) -> str:
        """``4 flits (spec)``: the packet length and where it came from."""
        return f"{_shown(self.packet_length)} flits ({self.sources['packet_length']})"

    def inputs(self, spec_name: str) -> dict[str, Any]:
        """What a JSON output records about how it was made."""
        data: dict[str, Any] = {"spec": spec_name}
        for name in self.sources:
            value = getattr(self, name)
            data[name] = list(value) if isinstance(value, tuple) else value
        data["sources"] = dict(self.sources)
        return data


def resolve(args: argparse.Namespace, spec, plan) -> Experiment:
    """The options ``args`` has, each from the flag, the spec or the built-in default; a
    pattern that sends nothing on ``plan``'s endpoints is an error naming where it came from."""
    from zfabric.sim.traffic import silent_pattern

    traffic = getattr(spec, "traffic", None)
    builtin = getattr(args, "builtin_defaults", {})
    ignores = getattr(args, "spec_ignores", ())
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for name, (flag, _default) in OPTIONS.items():
        if not hasattr(args, name):
            continue
        given = getattr(args, name)
        from_spec = getattr(traffic, name, None) if name not in ignores else None
        if given is not None:
            values[name], sources[name] = given, flag
        elif from_spec is not None:
            values[name], sources[name] = from_spec, "spec"
        elif name == "packet_length":  # a spec without traffic: predates TrafficSpec
            values[name] = spec.packet_length
            sources[name] = "default" if traffic is not None else "spec"
        else:
            values[name], sources[name] = builtin[name], "default"
        if isinstance(values[name], list):
            values[name] = tuple(values[name])
    if "rates" in values:
        values["rates"] = tuple(sorted(values["rates"]))

    def where(name: str) -> str:
        return f"traffic.{name}" if sources[name] == "spec" else OPTIONS[name][0]

    longest, length = plan.router.longest_packet, values.get("packet_length")
    if longest is not None and length is not None and _longest(length) > longest:
        raise SpecError(
            where("packet_length"),
            f"{_shown(length)}: packets longer than the {longest} flits router.switching"
            f" {plan.router.switching} was built for (the spec's longest packet)",
        )
    if asks_bubble(plan) and length is not None and length != longest:
        raise SpecError(
            where("packet_length"),
            f"{_shown(length)}: packets of another length than the {longest} flits bubble flow"
            " control was built for (the bubble argument counts packets of one length)",
        )
    why = silent_pattern(values["pattern"], len(plan.endpoints), plan.name)
    if why:
        raise SpecError(where("pattern"), why)
    zones: tuple[int, ...] = ()
    pattern = values["pattern"]
    if pattern == "locality" and values.get("locality") is None:
        raise SpecError(
            where("pattern"),
            "'locality' needs the probability of each level: traffic.locality or --locality"
            " (a list, or a preset)",
        )
    if pattern in ("weighted", "locality"):
        key = "level_weights" if pattern == "weighted" else "locality"
        weights = values.get(key)
        if pattern == "locality":
            from zfabric.traffic_spec import locality_probabilities

            weights = locality_probabilities(weights)
        zones = fabric_levels_for(plan, pattern, weights, where, key)
    for name, used_by in (("level_weights", "weighted"), ("locality", "locality")):
        if pattern != used_by:  # they mean nothing to other patterns
            values.pop(name, None)
            sources.pop(name, None)
    return Experiment(**values, zones=zones, sources=sources)


def _longest(length: int | tuple[int, int]) -> int:
    return max(length) if isinstance(length, tuple) else length


def _shown(length: int | tuple[int, int]) -> str:
    return f"{length[0]}-{length[1]}" if isinstance(length, tuple) else str(length)


def fabric_levels_for(plan, pattern: str, weights, where, key: str) -> tuple[int, ...]:
    """The fabric's zones per level for a pattern that draws the level first, or a SpecError
    at the pattern's source (a fabric without levels) or the weights' (``where(key)``)."""
    from zfabric.sim.traffic import TrafficConfig, fabric_levels, level_probabilities

    zones = fabric_levels(plan)
    if zones is None:
        raise SpecError(
            where("pattern"),
            f"{pattern!r} draws destinations by level, and {plan.name} ({plan.topology}) has no"
            " levels: it needs a fabric of Znodes (znode, kary_ntree, xgft, hyperz, hyperx) or"
            " a Transit network",
        )
    if pattern == "locality" and len(weights) != len(zones):
        given = f"{len(weights)} level{'s' * (len(weights) != 1)}"
        raise SpecError(
            where(key),
            f"gives {given}, and {plan.name} has {len(zones)} (level 1 first: "
            + ("the leaf cluster, then " if plan.topology_params.get("form") == "hybrid" else "")
            + f"zones {list(zones)})",
        )
    try:
        config = TrafficConfig(pattern=pattern, zones=zones, level_weights=weights or ())
        level_probabilities(config, len(plan.endpoints))
    except ValueError as error:
        raise SpecError(where(key), f"{error} ({plan.name})") from None
    return zones


def read_checked_trace(path: str, plan) -> list:
    """The trace file's entries, each checked against the plan's endpoints: a bad line is a
    user error naming ``--trace``, the file, the line and the value."""
    from zfabric.sim.traffic import read_trace

    try:
        trace = read_trace(path)
    except OSError as error:
        raise SpecError("--trace", f"{path}: cannot read: {error.strerror}") from None
    except UnicodeDecodeError as error:
        raise SpecError(
            "--trace",
            f"{path}: not UTF-8 text (byte {error.object[error.start]:#04x} at offset"
            f" {error.start})",
        ) from None
    except ValueError as error:
        text = str(error)
        raise SpecError("--trace", text if len(text) <= 200 else text[:197] + "...") from None
    if not trace:
        raise SpecError("--trace", f"{path}: no packets to simulate")
    n = len(plan.endpoints)
    longest = plan.router.longest_packet
    for entry in trace:
        # beyond the spec's own limits a replay would run for hours
        for role, value, limit in (
            ("cycle", entry.cycle, MAX_CYCLES),
            ("length", entry.length, MAX_PACKET_LENGTH),
        ):
            if value > limit:
                raise SpecError(
                    "--trace",
                    f"{path}:{_line_of(Path(path), entry)}: {role} {short(value)} is above"
                    f" {limit} (the spec's limit)",
                )
        if asks_bubble(plan) and entry.length != longest:
            raise SpecError(
                "--trace",
                f"{path}:{_line_of(Path(path), entry)}: length {entry.length}, not the"
                f" {longest} flits bubble flow control was built for",
            )
        if longest is not None and entry.length > longest:
            raise SpecError(
                "--trace",
                f"{path}:{_line_of(Path(path), entry)}: length {entry.length} is above the"
                f" {longest} flits router.switching {plan.router.switching} was built for",
            )
        for role in ("src", "dst"):
            value = getattr(entry, role)
            if not 0 <= value < n:
                line = _line_of(Path(path), entry)
                raise SpecError(
                    "--trace",
                    f"{path}:{line}: {role} {short(value)} is not an endpoint of {plan.name}"
                    f" (0..{n - 1})",
                )
    return trace


def _line_of(path: Path, entry) -> int | str:
    """The line of ``path`` that holds ``entry`` (read_trace sorts its entries by cycle)."""
    wanted = [entry.cycle, entry.src, entry.dst, entry.length]
    for number, line in enumerate(path.read_text().splitlines(), 1):
        fields = line.split("#", 1)[0].replace(",", " ").split()
        try:
            if [int(f) for f in fields] == wanted:
                return number
        except ValueError:
            continue
    return "?"


def sweep_curve(
    name: str,
    plan,
    args: argparse.Namespace,
    experiment: Experiment,
    rates: tuple[float, ...] | list[float],
) -> list[dict[str, Any]]:
    """The rates in turn up to the first saturated one, then the knee bisected to 0.01
    (:func:`zfabric.sim.sweep.sweep`); stops on a deadlock (reported by the caller)."""
    from zfabric.sim.sweep import sweep

    with progress(args, f"{name} rates", "runs") as update:
        points = sweep(
            plan,
            experiment.config(rates[0]),
            rates,
            seed=experiment.seed,
            warmup=experiment.warmup,
            cycles=experiment.cycles,
            progress=update,
            engine=args.engine,
        )
    point_status(args, name, points)
    return points


def point_status(args: argparse.Namespace, name: str, points: list[dict[str, Any]]) -> None:
    """One status line per point of a curve: rate, accepted, mean latency, why saturated."""
    for index, point in enumerate(points):
        mean = point["latency"]["mean"]
        status(
            args,
            f"[{index + 1}/{len(points)}] {name} rate {rate_text(point['rate'])}: accepted"
            f" {point['accepted']:.4f}, mean latency {'n/a' if mean is None else f'{mean:.2f}'}"
            + (f" (saturated: {point['saturation_reason']})" if point["saturated"] else ""),
        )
