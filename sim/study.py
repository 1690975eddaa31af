"""Studies: grids of specs x traffic x rates x seeds run as independent points on Dask.

A study file (YAML, docs/studies.md) names specs (files, inline mappings, or templates with key
paths to set and to vary), traffic patterns, packet lengths, rates (optionally with each curve's
knee refined by bisection), seeds and the measurement window. :func:`load_study` expands it into
:class:`Point` s; :func:`run_study` runs the points that its :class:`PointCache` lacks on an
executor and returns one record per point.

Every point is one model run (:func:`zfabric.sim.measure.simulate`), independent of the others,
so the executors are interchangeable: :class:`SerialExecutor` runs in this process, and
:class:`DaskExecutor` submits to a ``dask.distributed`` client (a local cluster of processes or
a scheduler anywhere) with Dask's own retries; a worker that dies is rescheduled by Dask up to
its ``allowed-failures``. A point that still fails becomes a record with ``status: failed`` and
its error: a study never drops a point.

A point's cache key is a digest of its inputs (the whole spec mapping, the traffic, the window)
and of :func:`model_version`, the digest of the source of everything a result depends on, so
changing the model (or the compiler) invalidates old results.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import itertools
import json
import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TextIO

import yaml

from zfabric.bubble import asks_bubble
from zfabric.errors import SpecError
from zfabric.fields import short
from zfabric.spec import load_spec
from zfabric.traffic_spec import MAX_CYCLES, MAX_PACKET_LENGTH

from . import ENGINES
from .sweep import knee
from .traffic import BY_LEVEL, PATTERNS, PERMUTATIONS, silent_pattern

__all__ = [
    "Point",
    "Study",
    "load_study",
    "spec_points",
    "study_from_dict",
    "model_version",
    "run_point",
    "PointCache",
    "SerialExecutor",
    "DaskExecutor",
    "start_local_cluster",
    "failure_summary",
    "run_study",
    "refine_rates",
    "table_rows",
    "write_csv",
    "write_jsonl",
    "curves",
    "select",
]

Record = dict[str, Any]

#: the traffic inputs of a point, in table order (after ``study`` and ``spec``)
TRAFFIC_KEYS = (
    "pattern",
    "rate",
    "packet_length",
    "process",
    "hotspot_fraction",
    "seed",
    "warmup",
    "cycles",
    "drain_limit",
)


@dataclass(frozen=True)
class Point:
    """One model run: a spec (as the mapping the compiler validates) and its traffic."""

    spec_name: str
    spec_json: str  # the spec mapping as canonical JSON (hashable, picklable, the key's input)
    pattern: str
    rate: float
    packet_length: int | tuple[int, int]
    process: str
    hotspot_fraction: float
    seed: int
    warmup: int
    cycles: int
    drain_limit: int | None = None
    varied: tuple[tuple[str, str], ...] = ()  # the template's varied key paths, values as JSON
    #: the cycle engine that runs it (``zfabric.sim.ENGINES``); not an input: both give the
    #: same result, so a point cached by one is the other's too
    engine: str = ENGINES[0]
    #: weighted traffic's weights, locality's probabilities, one per level of the fabric
    #: (``zfabric sweep`` only: study files do not offer these patterns)
    level_weights: tuple[float, ...] = ()

    def inputs(self) -> dict[str, Any]:
        """The table's input columns."""
        data: dict[str, Any] = {"spec": self.spec_name}
        for name in TRAFFIC_KEYS:
            value = getattr(self, name)
            data[name] = list(value) if isinstance(value, tuple) else value
        data.update((path, json.loads(value)) for path, value in self.varied)
        return data

    def key(self, version: str) -> str:
        """The cache key: a digest of every input and the model's version."""
        inputs = {name: getattr(self, name) for name in TRAFFIC_KEYS}
        if self.level_weights:  # absent otherwise: the keys of points cached before it stay
            inputs["level_weights"] = list(self.level_weights)
        text = json.dumps(
            {"spec": json.loads(self.spec_json), "traffic": inputs, "model": version},
            sort_keys=True,
        )
        return hashlib.sha256(text.encode()).hexdigest()[:32]

    def curve(self) -> tuple:
        """What identifies the point's curve: every input but the rate."""
        others = (getattr(self, n) for n in TRAFFIC_KEYS if n != "rate")
        return (self.spec_name, *others, self.level_weights)


@dataclass(frozen=True)
class Study:
    """An expanded study file: its first round of points and how to run them."""

    name: str
    points: tuple[Point, ...]  # the first round: every spec x pattern x length x seed x rate
    refine: float | None = None  # bisect each curve's knee to this tolerance
    retries: int = 2
    #: plot file name -> the curves it shows (input name -> the values kept; empty: every curve)
    plots: Mapping[str, Mapping[str, list]] = dataclasses.field(default_factory=dict)
    specs: tuple[str, ...] = ()  # the spec names, in study order


# ---- the model's version ------------------------------------------------------------------------


#: what a point's result depends on in ``zfabric.sim``, besides the compiler and run_point
_MODEL_SOURCES = ("model", "fast", "measure.py", "traffic.py", "analytic.py")


@functools.cache
def model_version() -> str:
    """A digest of the source of what computes a point's result: the compiler (``zfabric``
    less its command line), the model, traffic, analytic bounds and measurement of
    ``zfabric.sim``, and :func:`run_point`. Any edit there invalidates cached results, a comment
    too (cheap to rerun, never stale); the engine's tables and plots may change freely."""
    import inspect

    import zfabric

    compiler, here = Path(zfabric.__file__).parent, Path(__file__).parent
    # the subpackages sit beside the compiler in a checkout, inside it once installed
    files = [
        ("zfabric", p.relative_to(compiler))
        for p in compiler.rglob("*.py")
        if p.relative_to(compiler).parts[0] not in ("cli", "sim", "hdl", "boards")
    ]
    for name in _MODEL_SOURCES:
        found = sorted((here / name).rglob("*.py")) if (here / name).is_dir() else [here / name]
        files += [("sim", p.relative_to(here)) for p in found]
    digest = hashlib.sha256()
    for root, relative in sorted(files):
        path = (compiler if root == "zfabric" else here) / relative
        digest.update(f"{root}/{relative.as_posix()}".encode() + b"\0" + path.read_bytes())
    digest.update(inspect.getsource(run_point).encode())
    return digest.hexdigest()[:16]


# ---- the study file -----------------------------------------------------------------------------


def load_study(path: str | Path, *, plot_formats: Sequence[str] | None = None) -> Study:
    """Read and expand a study file; a spec path in it is relative to the file.
    ``plot_formats``: the plot file suffixes allowed (default: any)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        why = getattr(error, "strerror", None) or error
        raise SpecError("", f"{path}: cannot read: {why}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark else ""
        raise SpecError("", f"{path}: YAML error{where}") from None
    if not isinstance(data, Mapping):
        raise SpecError("", f"{path}: a study must be a mapping of keys, got {short(data)}")
    return study_from_dict(
        data, default_name=path.stem, base=path.parent, plot_formats=plot_formats
    )


def _require(ok: bool, path: str, want: str, value: Any) -> None:
    if not ok:
        raise SpecError(path, f"must be {want}, got {short(value)}")


def _int(value: Any, path: str, low: int, high: int) -> int:
    ok = isinstance(value, int) and not isinstance(value, bool) and low <= value <= high
    _require(ok, path, f"an integer in {low}..{high}", value)
    return value


def _list(value: Any, path: str) -> list:
    """A non-empty list (a single value is a list of one)."""
    value = value if isinstance(value, list) else [value]
    _require(bool(value), path, "a non-empty list", value)
    return value


def _rate(value: Any, path: str) -> float:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value <= 1
    _require(ok, path, "a rate in (0, 1] flits/cycle/endpoint", value)
    return float(value)


def _length(value: Any, path: str) -> int | tuple[int, int]:
    if isinstance(value, list) and len(value) == 2:
        low, high = (_int(v, f"{path}[{i}]", 1, MAX_PACKET_LENGTH) for i, v in enumerate(value))
        _require(low <= high, path, "[MIN, MAX] with MIN <= MAX", value)
        return (low, high)
    return _int(value, path, 1, MAX_PACKET_LENGTH)


def _check_keys(data: Mapping, path: str, allowed: Iterable[str]) -> None:
    allowed = tuple(allowed)
    for key in data:
        if key not in allowed:
            where = f"{path}.{key}" if path else str(key)
            raise SpecError(where, f"unknown key; expected one of {', '.join(allowed)}")


def _shown(value: Any) -> str:
    """A varied value in a spec name: ``4x4x4``, ``x+y+z+``."""
    if isinstance(value, list) and all(isinstance(v, int) for v in value):
        return "x".join(map(str, value))
    if isinstance(value, list):
        return "".join(map(str, value))
    return str(value)


def _set_path(spec: dict, key_path: str, value: Any, where: str) -> None:
    """Set ``a.b.c`` in a nested mapping, making the mappings on the way."""
    parts = key_path.split(".")
    _require(all(parts), where, "a key path like topology.k", key_path)
    node = spec
    for part in parts[:-1]:
        node = node.setdefault(part, {})
        if not isinstance(node, dict):
            raise SpecError(where, f"{key_path!r}: {part!r} is not a mapping in the spec")
    node[parts[-1]] = value


def _spec_variants(entry: Any, path: str, base: Path) -> Iterator[tuple[str, dict, tuple]]:
    """(name, spec mapping, varied) of one ``specs`` entry."""
    if isinstance(entry, str):
        entry = {"spec": entry}
    _require(isinstance(entry, Mapping), path, "a spec file or a mapping with spec", entry)
    _check_keys(entry, path, ("spec", "name", "set", "vary"))
    source = entry.get("spec")
    if isinstance(source, str):
        file = base / source
        try:
            source = yaml.safe_load(file.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, yaml.YAMLError) as error:
            text = getattr(error, "strerror", None) or type(error).__name__
            raise SpecError(f"{path}.spec", f"cannot read {str(file)!r}: {text}") from None
        source = dict(source) if isinstance(source, Mapping) else source
        if isinstance(source, dict):
            source.setdefault("name", Path(entry["spec"]).stem)
    _require(isinstance(source, Mapping), f"{path}.spec", "a spec file or mapping", source)
    settings = entry.get("set", {})
    _require(isinstance(settings, Mapping), f"{path}.set", "a mapping of key paths", settings)
    vary = entry.get("vary", {})
    _require(isinstance(vary, Mapping), f"{path}.vary", "a mapping of key paths", vary)
    axes = [(str(k), _list(v, f"{path}.vary.{k}")) for k, v in vary.items()]
    template = entry.get("name")
    _require(template is None or isinstance(template, str), f"{path}.name", "a string", template)
    for combination in itertools.product(*(values for _, values in axes)):
        spec = _plain(source)
        for key, value in settings.items():
            _set_path(spec, str(key), _plain(value), f"{path}.set.{key}")
        varied = tuple(
            (key, _plain(value)) for (key, _), value in zip(axes, combination, strict=True)
        )
        for key, value in varied:
            _set_path(spec, key, value, f"{path}.vary.{key}")
        fields = {key.split(".")[-1]: _shown(value) for key, value in varied}
        if template is not None:
            try:
                name = template.format(**fields)
            except (KeyError, IndexError, ValueError, AttributeError) as error:
                raise SpecError(
                    f"{path}.name", f"{template!r} names {error}; fields: {', '.join(fields)}"
                ) from None
        else:
            name = "-".join([str(spec.get("name", "spec")), *fields.values()])
        spec["name"] = name
        yield name, spec, varied


def _plain(value: Any) -> Any:
    """A deep copy as plain JSON values (a YAML date or the like becomes its text, which the
    spec's own checks then judge)."""
    return json.loads(json.dumps(value, default=str))


def study_from_dict(
    data: Mapping,
    *,
    default_name: str = "study",
    base: Path = Path(),
    plot_formats: Sequence[str] | None = None,
) -> Study:
    """Validate and expand a study mapping (``base``: the folder spec paths are relative to;
    ``plot_formats`` as for :func:`load_study`)."""
    _check_keys(data, "", ("name", "description", "specs", "traffic", "retries", "plot", "plots"))
    name = data.get("name", default_name)
    _require(isinstance(name, str) and bool(name), "name", "a non-empty string", name)
    specs: dict[str, tuple[str, tuple]] = {}
    for index, entry in enumerate(_list(data.get("specs", []), "specs")):
        for spec_name, spec, varied in _spec_variants(entry, f"specs[{index}]", base):
            if spec_name in specs:
                raise SpecError(f"specs[{index}]", f"the spec name {spec_name!r} is used twice")
            try:
                load_spec(spec)  # every error up front, before any work
            except SpecError as error:
                raise SpecError(f"specs[{index}]", f"{spec_name}: {error.lines[0]}") from None
            varied_json = tuple((key, json.dumps(value)) for key, value in varied)
            specs[spec_name] = (json.dumps(spec, sort_keys=True), varied_json)
    traffic = data.get("traffic", {})
    _require(isinstance(traffic, Mapping), "traffic", "a mapping", traffic)
    _check_keys(
        traffic,
        "traffic",
        (
            "patterns", "rates", "refine", "packet_lengths", "process", "hotspot_fraction",
            "seeds", "warmup", "cycles", "drain_limit",
        ),
    )  # fmt: skip
    patterns = _list(traffic.get("patterns", "uniform"), "traffic.patterns")
    for i, pattern in enumerate(patterns):
        _require(pattern in PATTERNS, f"traffic.patterns[{i}]", f"one of {PATTERNS}", pattern)
        if pattern in BY_LEVEL:  # its level weights belong to one fabric's levels
            flag = "--level-weights W,W,..." if pattern == "weighted" else "--locality P,P,..."
            raise SpecError(
                f"traffic.patterns[{i}]",
                f"{pattern!r} is not offered in study files; run it with simulate or sweep"
                f" (--traffic {pattern} {flag})",
            )
        for spec_name, (spec_json, _varied) in specs.items() if pattern in PERMUTATIONS else ():
            why = silent_pattern(pattern, len(_plan(spec_json).endpoints), spec_name)
            if why:
                raise SpecError(f"traffic.patterns[{i}]", why)
    rates = sorted(
        {
            _rate(r, f"traffic.rates[{i}]")
            for i, r in enumerate(_list(traffic.get("rates", []), "traffic.rates"))
        }
    )
    lengths = [
        _length(v, f"traffic.packet_lengths[{i}]")
        for i, v in enumerate(_list(traffic.get("packet_lengths", 4), "traffic.packet_lengths"))
    ]
    for spec_name, (spec_json, _varied) in specs.items():
        if (json.loads(spec_json).get("router") or {}).get("switching", "wormhole") == "wormhole":
            continue  # no plan to build: wormhole holds no packet whole
        plan = _plan(spec_json)
        longest = plan.router.longest_packet
        for i, length in enumerate(lengths):
            if (max(length) if isinstance(length, (tuple, list)) else length) > longest:
                raise SpecError(
                    f"traffic.packet_lengths[{i}]",
                    f"{short(length)}: longer than the {longest} flits {spec_name}'s"
                    " router.switching was built for (its spec's longest packet)",
                )
            if asks_bubble(plan) and length != longest:
                raise SpecError(
                    f"traffic.packet_lengths[{i}]",
                    f"{short(length)}: not the {longest} flits {spec_name}'s bubble flow"
                    " control was built for",
                )
    seeds = [
        _int(v, f"traffic.seeds[{i}]", 0, 2**63 - 1)
        for i, v in enumerate(_list(traffic.get("seeds", 1), "traffic.seeds"))
    ]
    process = traffic.get("process", "bernoulli")
    _require(
        process in ("bernoulli", "poisson"), "traffic.process", "bernoulli or poisson", process
    )
    hotspot = traffic.get("hotspot_fraction", 0.2)
    ok = isinstance(hotspot, (int, float)) and not isinstance(hotspot, bool) and 0 <= hotspot <= 1
    _require(ok, "traffic.hotspot_fraction", "a fraction in [0, 1]", hotspot)
    warmup = _int(traffic.get("warmup", 1000), "traffic.warmup", 0, MAX_CYCLES)
    cycles = _int(traffic.get("cycles", 10000), "traffic.cycles", 1, MAX_CYCLES)
    drain = traffic.get("drain_limit")
    drain = None if drain is None else _int(drain, "traffic.drain_limit", 1, MAX_CYCLES)
    refine = traffic.get("refine")
    if refine is not None:
        ok = isinstance(refine, (int, float)) and not isinstance(refine, bool)
        ok = ok and 0.0001 <= refine <= 0.5
        _require(ok, "traffic.refine", "a tolerance in [0.0001, 0.5]", refine)
    retries = _int(data.get("retries", 2), "retries", 0, 10)
    values = {"spec": list(specs), "pattern": patterns, "packet_length": lengths, "seed": seeds}
    plots = _plots(data, values, plot_formats)
    points = tuple(
        Point(
            spec_name,
            spec_json,
            pattern,
            rate,
            length,
            process,
            float(hotspot),
            seed,
            warmup,
            cycles,
            drain,
            varied,
        )
        for spec_name, (spec_json, varied) in specs.items()
        for pattern in patterns
        for length in lengths
        for seed in seeds
        for rate in rates
    )
    return Study(name, points, refine, retries, plots=plots, specs=tuple(specs))


#: what a plot may select its curves by: the study key of each input
SELECTIONS = {"specs": "spec", "patterns": "pattern", "packet_lengths": "packet_length",
              "seeds": "seed"}  # fmt: skip


def _plots(
    data: Mapping, values: Mapping[str, list], formats: Sequence[str] | None
) -> dict[str, dict[str, list]]:
    """``plots`` (file name -> selection), with ``plot: FILE`` short for every curve."""
    plots = data.get("plots") or {}
    _require(isinstance(plots, Mapping), "plots", "a mapping of file names", plots)
    plots = dict(plots)
    if data.get("plot") is not None:
        if data["plot"] in plots:  # one file cannot hold both plots
            raise SpecError(
                f"plots.{data['plot']}", "names the file of plot: already every curve's"
            )
        plots = {data["plot"]: {}, **plots}
    chosen: dict[str, dict[str, list]] = {}
    for file, selection in plots.items():
        where = "plot" if file == data.get("plot") and not selection else f"plots.{file}"
        ok = isinstance(file, str) and Path(file).name == file and bool(Path(file).suffix)
        _require(ok, where, "a file name with a suffix (the format), no folder", file)
        if formats is not None and Path(file).suffix.lower().lstrip(".") not in formats:
            _require(False, where, f"a file name ending in one of .{', .'.join(formats)}", file)
        selection = selection or {}
        _require(isinstance(selection, Mapping), where, "a mapping of inputs", selection)
        _check_keys(selection, where, SELECTIONS)
        kept: dict[str, list] = {}
        for key, wanted in selection.items():
            name = SELECTIONS[key]
            kept[name] = []
            for i, value in enumerate(_list(wanted, f"{where}.{key}")):
                value = tuple(value) if isinstance(value, list) else value
                _require(value in values[name], f"{where}.{key}[{i}]", "one of the study's", value)
                kept[name].append(list(value) if isinstance(value, tuple) else value)
        chosen[file] = kept
    return chosen


def select(records: Sequence[Record], selection: Mapping[str, list]) -> list[Record]:
    """The records whose inputs are among a plot's selected values."""
    return [
        r for r in records if all(r["inputs"][name] in kept for name, kept in selection.items())
    ]


def spec_points(
    path: str | Path,
    name: str,
    config,
    rates: Iterable[float],
    *,
    seed: int,
    warmup: int,
    cycles: int,
    drain_limit: int | None = None,
    engine: str = ENGINES[0],
) -> list[Point]:
    """One point per rate of the spec file at ``path`` (already validated as ``name``) under
    ``config`` (a :class:`~zfabric.sim.traffic.TrafficConfig`; its rate is ignored), run on
    ``engine``."""
    data = _plain(yaml.safe_load(Path(path).read_text(encoding="utf-8")))
    data["name"] = name
    spec_json = json.dumps(data, sort_keys=True)
    return [
        Point(
            name,
            spec_json,
            config.pattern,
            rate,
            config.packet_length,
            config.process,
            config.hotspot_fraction,
            seed,
            warmup,
            cycles,
            drain_limit,
            engine=engine,
            level_weights=config.level_weights,
        )
        for rate in sorted(set(rates))
    ]


# ---- one point ----------------------------------------------------------------------------------


@functools.lru_cache(maxsize=16)
def _plan(spec_json: str):
    from zfabric import compile_plan

    return compile_plan(load_spec(json.loads(spec_json)))


@functools.lru_cache(maxsize=64)
def _limits(spec_json: str, config, seed: int):
    from .analytic import cached_pattern_limits

    return cached_pattern_limits(_plan(spec_json), config, seed)


def run_point(point: Point) -> dict[str, Any]:
    """Simulate one point: ``{"rate": r, **SimulationResult.to_dict()}``, the form of
    :func:`zfabric.sim.sweep.sweep`'s points. The plan and the pattern's bounds are cached per
    process, as a worker runs many points of the same spec."""
    from .measure import simulate
    from .traffic import Traffic, TrafficConfig, fabric_levels

    plan = _plan(point.spec_json)
    config = TrafficConfig(
        pattern=point.pattern,
        rate=point.rate,
        packet_length=point.packet_length,
        process=point.process,
        hotspot_fraction=point.hotspot_fraction,
        level_weights=point.level_weights,
        zones=(fabric_levels(plan) or ()) if point.pattern in BY_LEVEL else (),
    )
    limits = _limits(point.spec_json, dataclasses.replace(config, rate=1.0), point.seed)
    traffic = Traffic(config, len(plan.endpoints), point.seed)
    result = simulate(
        plan,
        traffic,
        warmup=point.warmup,
        cycles=point.cycles,
        drain_limit=point.drain_limit,
        limits=limits,
        engine=point.engine,
    )
    return {"rate": point.rate, **result.to_dict()}


def _record(point: Point, key: str, result: dict | None, error: str | None) -> Record:
    """What the cache and the table keep of a point (plain JSON: a round trip changes nothing)."""
    record = {
        "key": key,
        "inputs": point.inputs(),
        "status": "ok" if error is None else "failed",
        "error": error,
        "result": result,
    }
    return json.loads(json.dumps(record))


def _error_text(error: BaseException) -> str:
    text = f"{type(error).__name__}: {error}".strip()
    text = " ".join(text.split())
    return text if len(text) <= 300 else text[:297] + "..."


# ---- the cache ----------------------------------------------------------------------------------


#: how every line of a points file starts (a record's first key), whole or cut short by a kill
_TORN = '{"key": "'


class PointCache:
    """Completed points as JSON lines (``{"key", "inputs", "status", "error", "result"}``),
    appended as each completes, so an interrupted study keeps what it finished. A torn last
    line (a kill mid-write) is ignored; a failed point is kept in the file but recomputed."""

    def __init__(self, path: str | Path | None):
        self.path = Path(path) if path is not None else None
        self.records: dict[str, Record] = {}
        if self.path is not None and self.path.exists():
            with self.path.open(encoding="utf-8") as file:
                for line in file:
                    try:
                        record = json.loads(line)
                    except ValueError:
                        continue
                    if isinstance(record, dict) and record.get("status") == "ok":
                        self.records[record["key"]] = record
        self._file: TextIO | None = None

    @staticmethod
    def check(path: str | Path) -> str | None:
        """Why ``path`` is not a points file zfabric may append to (None if it is, or absent)."""
        path = Path(path)
        if not path.exists():
            return None
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            return f"cannot read it: {getattr(error, 'strerror', None) or error}"
        lines = text.split("\n")
        for number, line in enumerate(lines, 1):
            if not (line.startswith(_TORN) or (not line and number == len(lines))):
                return f"line {number} is not a point of a zfabric study"
        return None

    def get(self, key: str) -> Record | None:
        return self.records.get(key)

    def add(self, record: Record) -> None:
        if record["status"] == "ok":
            self.records[record["key"]] = record
        if self.path is None:
            return
        if self._file is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            torn = self.path.exists() and self.path.stat().st_size > 0
            if torn:
                with self.path.open("rb") as file:
                    file.seek(-1, 2)
                    torn = file.read(1) != b"\n"
            self._file = self.path.open("a", encoding="utf-8")
            if torn:  # a line cut by a kill mid-write: start on a line of our own
                self._file.write("\n")
        self._file.write(json.dumps(record) + "\n")
        self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def __enter__(self) -> PointCache:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()


# ---- executors ----------------------------------------------------------------------------------

Runner = Callable[[Point], dict[str, Any]]
Outcome = tuple[Point, "dict[str, Any] | None", "str | None"]


class Executor(Protocol):
    def run(self, points: Sequence[Point], runner: Runner) -> Iterator[Outcome]:
        """(point, result, error) for each point, in completion order."""
        ...


class SerialExecutor:
    """Every point in this process, one after another, ``retries`` more tries on an error."""

    def __init__(self, retries: int = 2):
        self.retries = retries

    def run(self, points: Sequence[Point], runner: Runner) -> Iterator[Outcome]:
        for point in points:
            for attempt in range(self.retries + 1):
                try:
                    result = runner(point)
                except Exception as error:  # a failed point is reported, never raised
                    if attempt == self.retries:
                        yield point, None, _error_text(error)
                else:
                    yield point, result, None
                    break


class DaskExecutor:
    """Points as Dask futures (``Client.map`` with ``retries``), collected as they complete."""

    def __init__(self, client, retries: int = 2):
        self.client = client
        self.retries = retries

    def run(self, points: Sequence[Point], runner: Runner) -> Iterator[Outcome]:
        from distributed import as_completed

        if not points:
            return
        futures = self.client.map(runner, list(points), retries=self.retries, pure=False)
        which = {future.key: point for future, point in zip(futures, points, strict=True)}
        for future in as_completed(futures):
            point = which[future.key]
            if future.status == "finished":
                yield point, future.result(), None
            else:
                yield point, None, _error_text(future.exception())
            future.release()


def start_local_cluster(workers: int, retries: int):
    """A ``LocalCluster`` of ``workers`` single-threaded processes (the model is pure Python:
    threads would share one interpreter lock) and its client. While many points remain, a
    worker holds only the point it runs (``worker-saturation`` 1: points take seconds,
    queueing more on a worker gains nothing), so a worker that dies takes that point alone with
    it; a point caught in more than ``retries`` worker deaths is reported failed."""
    import dask
    from distributed import Client, LocalCluster

    settings = {
        "distributed.scheduler.allowed-failures": retries,
        "distributed.scheduler.worker-saturation": 1.0,
    }
    with dask.config.set(settings):
        cluster = LocalCluster(
            n_workers=workers,
            threads_per_worker=1,
            processes=True,
            dashboard_address=":0",
            silence_logs=50,
        )
    return cluster, Client(cluster)


# ---- the study ----------------------------------------------------------------------------------


def refine_rates(records: Sequence[Record], tolerance: float) -> float | None:
    """The next rate to bisect in one curve's records (None: refined, or it deadlocked):
    midway between the highest stable rate below the first saturated one and that one, as
    :func:`zfabric.sim.sweep.sweep` does, until they are ``tolerance`` apart."""
    done = [r for r in records if r["status"] == "ok"]
    if len(done) < len(records) or any(r["result"]["deadlock"] for r in done):
        return None
    points = [{"rate": r["inputs"]["rate"], "saturated": r["result"]["saturated"]} for r in done]
    first = min((p["rate"] for p in points if p["saturated"]), default=None)
    if first is None:
        return None
    stable = knee(points) or 0.0
    if first - stable <= tolerance * (1 + 1e-9):
        return None
    middle = round((stable + first) / 2, 6)
    return None if middle in (p["rate"] for p in points) else middle


def run_study(
    study: Study,
    executor: Executor,
    cache: PointCache,
    *,
    runner: Runner | None = None,
    version: str | None = None,
    progress: Callable[[int, int], None] | None = None,
    computed: Callable[[Record], None] | None = None,
) -> list[Record]:
    """Every point of ``study``: cached ones from ``cache``, the rest run on ``executor`` and
    added to the cache as they complete (``runner``, default :func:`run_point`); then, with
    ``refine``, rounds of one bisection point per unfinished curve. ``progress(done, total)``
    after each point; ``computed(record)`` for each point run (not cached). Records come back
    in study order, refinements by rate."""
    runner = runner or run_point
    version = version or model_version()
    records: dict[Point, Record] = {}
    round_points: list[Point] = list(study.points)
    total = 0
    while round_points:
        total += len(round_points)
        missing = []
        for point in round_points:
            cached = cache.get(point.key(version))
            if cached is not None:
                records[point] = cached
            else:
                missing.append(point)
        if progress:
            progress(len(records), total)
        for point, result, error in executor.run(missing, runner):
            record = _record(point, point.key(version), result, error)
            cache.add(record)
            records[point] = record
            if computed:
                computed(record)
            if progress:
                progress(len(records), total)
        round_points = _next_round(study, records) if study.refine else []
    order = {point: index for index, point in enumerate(study.points)}
    curves = {point.curve(): order[point] for point in reversed(study.points)}
    return [
        records[point]
        for point in sorted(records, key=lambda p: (curves.get(p.curve(), math.inf), p.rate))
    ]


def _next_round(study: Study, records: Mapping[Point, Record]) -> list[Point]:
    by_curve: dict[tuple, list[Point]] = {}
    for point in records:
        by_curve.setdefault(point.curve(), []).append(point)
    following = []
    for points in by_curve.values():
        rate = refine_rates([records[p] for p in points], study.refine)
        if rate is not None:
            following.append(dataclasses.replace(points[0], rate=rate))
    return following


# ---- the table ----------------------------------------------------------------------------------


def _flat(prefix: str, value: Any, into: dict[str, Any]) -> None:
    if isinstance(value, dict) and prefix != "deadlock":
        for key, inner in value.items():
            _flat(f"{prefix}_{key}" if prefix else key, inner, into)
    elif isinstance(value, (dict, list)):
        into[prefix] = json.dumps(value) if prefix != "packet_length" else _shown_length(value)
    else:
        into[prefix] = value


def _shown_length(value: Any) -> Any:
    return f"{value[0]}-{value[1]}" if isinstance(value, list) else value


def table_rows(study_name: str, records: Sequence[Record]) -> list[dict[str, Any]]:
    """One flat row per point: study, inputs, status, error, key, then the measured figures
    (``latency_mean``, ``limits_bound``, ``simulated_cycles``...; ``deadlock`` as JSON, empty
    when none)."""
    rows = []
    for record in records:
        row: dict[str, Any] = {"study": study_name}
        for key, value in record["inputs"].items():
            row[key] = _shown_length(value) if key == "packet_length" else value
        row.update(status=record["status"], error=record["error"], key=record["key"])
        result = dict(record["result"] or {})
        result.pop("rate", None)
        if "cycles" in result:  # all the cycles simulated, not the window (an input)
            result["simulated_cycles"] = result.pop("cycles")
        _flat("", result, row)
        rows.append(row)
    return rows


def _columns(rows: Sequence[dict[str, Any]]) -> list[str]:
    columns: dict[str, None] = {}
    for row in rows:
        columns.update(dict.fromkeys(row))
    return list(columns)


def write_csv(rows: Sequence[dict[str, Any]], stream: TextIO) -> None:
    """The table as CSV (a missing figure, a failed point's, is empty)."""
    import csv

    columns = _columns(rows)
    writer = csv.DictWriter(stream, columns, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({c: "" if row.get(c) is None else row[c] for c in columns})


def write_jsonl(rows: Sequence[dict[str, Any]], stream: TextIO) -> None:
    """The table as JSON lines, every row with every column (null where missing)."""
    columns = _columns(rows)
    for row in rows:
        stream.write(json.dumps({c: row.get(c) for c in columns}) + "\n")


def curves(records: Sequence[Record]) -> dict[str, list[dict[str, Any]]]:
    """Latency-throughput curves of the completed points, labelled by spec and by any traffic
    input that differs between the study's curves."""
    done = [r for r in records if r["status"] == "ok"]
    differing = [
        name
        for name in TRAFFIC_KEYS
        if name != "rate" and len({json.dumps(r["inputs"][name]) for r in done}) > 1
    ]
    result: dict[str, list[dict[str, Any]]] = {}
    for record in done:
        inputs = record["inputs"]
        label = " ".join([inputs["spec"], *(f"{n}={_shown_length(inputs[n])}" for n in differing)])
        result.setdefault(label, []).append(record["result"])
    return result


def failure_summary(records: Sequence[Record]) -> list[str]:
    """One line per failed point: its spec, traffic and error."""
    lines = []
    for record in records:
        if record["status"] != "ok":
            inputs = record["inputs"]
            lines.append(
                f"{inputs['spec']} {inputs['pattern']} rate {inputs['rate']} seed"
                f" {inputs['seed']}: {record['error']}"
            )
    return lines
