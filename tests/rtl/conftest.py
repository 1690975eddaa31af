"""RTL co-simulation fixtures: the build cache, simulator availability, plans by name."""

from __future__ import annotations

import os

import pytest
import yaml
from zfabric.sim.tb.runner import default_cache, simulator_available

from zfabric import compile_plan, load_spec


@pytest.fixture(scope="session")
def cosim_dir():
    """Where emitted Verilog and simulator builds are cached between runs (keyed by plan and
    generator sources, so a stale build is never reused): ``$ZFABRIC_COSIM_DIR`` or
    ``~/.cache/zfabric/cosim``."""
    return default_cache()


@pytest.fixture
def need_sim():
    """``need_sim("verilator")`` skips when the simulator is missing, or fails under
    ``NOC_REQUIRE_TOOLS=1`` (CI)."""

    def need(sim: str) -> str:
        if not simulator_available(sim):
            if os.environ.get("NOC_REQUIRE_TOOLS") == "1":
                pytest.fail(f"{sim} is not available (NOC_REQUIRE_TOOLS=1)")
            pytest.skip(f"{sim} is not available")
        return sim

    return need


@pytest.fixture
def plan_of(example):
    """``plan_of("torus-4x4")``: the compiled plan of an example; ``plan_of("torus-4x4",
    {"selection": "round-robin"})`` with that ``router:`` section; ``plan_of("znode-64",
    routing="flat")`` with that ``routing:`` instead of the example's."""

    def plan(name: str, router: dict | None = None, *, routing: str | dict | None = None):
        if router is None and routing is None:
            return compile_plan(load_spec(example(name)))
        data = yaml.safe_load(example(name).read_text())
        if router is not None:
            data["router"] = router
        if routing is not None:
            data["routing"] = routing
        return compile_plan(load_spec(data))

    return plan
