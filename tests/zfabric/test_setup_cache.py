"""The set-up cache: a plan's routing verdict and a pattern's limits are walked once, read back
equal, keyed by everything that changes them, and removed by ``zfabric cache clean``."""

from __future__ import annotations

import dataclasses
import json

import pytest
from zfabric.sim import analytic
from zfabric.sim.analytic import cached_pattern_limits, pattern_limits
from zfabric.sim.traffic import TrafficConfig

from zfabric import analyse_routing, compile_plan, load_spec
from zfabric import deadlock as deadlock_module
from zfabric.cli import main
from zfabric.deadlock import routing_summary
from zfabric.setup_cache import entry, setup_cache, store


@pytest.fixture
def cache(tmp_path, monkeypatch):
    folder = tmp_path / "setup"
    monkeypatch.setenv("ZFABRIC_SETUP_DIR", str(folder))
    return folder


def _plan(depth: int = 4, routing: str = "dor"):
    spec = {"name": "t", "topology": {"kind": "torus", "k": [4, 4]}, "routing": routing}
    return compile_plan(load_spec({**spec, "buffer_depth": depth}))


def _forbid(monkeypatch, module, name):
    def walked(*args, **kwargs):
        raise AssertionError(f"{name} walked again")

    monkeypatch.setattr(module, name, walked)


def test_routing_summary_is_the_walks_and_read_back_without_walking(cache, monkeypatch):
    plan = _plan()
    walk = analyse_routing(plan)
    first = routing_summary(plan)
    assert [p.name for p in cache.iterdir()] == [next(cache.iterdir()).name]
    _forbid(monkeypatch, deadlock_module, "analyse_routing")
    again = routing_summary(plan)
    for summary in (first, again):
        assert summary.cycle == walk.cycle
        assert summary.adaptive == walk.adaptive
        assert summary.min_hops == walk.min_hops and summary.max_hops == walk.max_hops
        assert summary.average_hops == walk.average_hops
        assert summary.diameter == walk.diameter


def test_a_cyclic_plans_cycle_is_cached_too(cache):
    spec = {"name": "ring", "topology": {"kind": "torus", "k": [6]}}
    spec["routing"] = {"name": "dor", "datelines": False, "tie": "plus"}
    plan = compile_plan(load_spec(spec))
    walk = analyse_routing(plan)
    assert walk.cycle  # a ring without datelines: the proof finds the wrap cycle
    assert routing_summary(plan).cycle == walk.cycle == routing_summary(plan).cycle


def test_every_plan_field_keys_its_own_entry(cache):
    routing_summary(_plan(4))
    routing_summary(_plan(6))  # another buffer depth: another plan, another entry
    assert len(list(cache.iterdir())) == 2


def test_a_plan_derived_from_a_keyed_one_keys_its_own_entry(cache):
    plan = _plan()
    routing_summary(plan)  # computes and keeps the plan's digest
    deeper = dataclasses.replace(plan, buffer_depth=6)
    assert entry("routing", deeper) == entry("routing", _plan(6)) != entry("routing", plan)


def test_pattern_limits_cached_per_pattern_not_per_rate(cache, monkeypatch):
    plan = _plan()
    uniform = TrafficConfig(rate=0.1)
    walked = pattern_limits(plan, uniform)
    assert cached_pattern_limits(plan, uniform) == walked
    assert len(list(cache.iterdir())) == 1
    transpose = TrafficConfig(pattern="transpose")
    assert cached_pattern_limits(plan, transpose) == pattern_limits(plan, transpose)
    assert len(list(cache.iterdir())) == 2
    _forbid(monkeypatch, analytic, "pattern_limits")
    faster = TrafficConfig(rate=0.7, process="poisson")  # neither changes the flows
    assert cached_pattern_limits(plan, faster) == walked


def test_an_unreadable_entry_is_walked_again(cache):
    plan = _plan()
    expected = routing_summary(plan)
    (entry,) = cache.iterdir()
    entry.write_text("{torn")
    assert routing_summary(plan) == expected
    assert json.loads(entry.read_text())["pairs"] == expected.pairs


def test_cache_info_and_clean_know_the_setup_entries(cache, capsys):
    plan = _plan()
    routing_summary(plan)
    store(entry("tables", plan, suffix="npz"), lambda file: file.write(b"tables"))
    (cache / "notes.txt").write_text("mine")
    assert main(["cache", "info", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)["setup"]
    assert info["path"] == str(setup_cache()) == str(cache)
    assert info["files"] == 3
    assert main(["cache", "clean"]) == 0
    out = capsys.readouterr().out
    assert f"removed setup cache {cache}: 2 files" in out
    assert "left 1 item zfabric did not make" in out
    assert [p.name for p in cache.iterdir()] == ["notes.txt"]
