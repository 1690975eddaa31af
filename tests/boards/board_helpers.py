"""Helpers shared by the board tests (plain functions; fixtures are in conftest.py)."""

from __future__ import annotations

import importlib.util

from zfabric import compile_plan, load_spec


def torus_plan(k, *, flit_width=16, buffer_depth=4, packet_length=4, name=None, router=None):
    spec = {
        "name": name or "torus-" + "x".join(map(str, k)),
        "topology": {"kind": "torus", "k": list(k)},
        "routing": "dor",
        "flit_width": flit_width,
        "buffer_depth": buffer_depth,
        "packet_length": packet_length,
    }
    if router:
        spec["router"] = router
    return compile_plan(load_spec(spec))


def have_fabric() -> bool:
    return importlib.util.find_spec("zfabric.hdl.fabric") is not None
