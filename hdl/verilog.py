"""Verilog emission through Amaranth's back end (builtin yosys)."""

from __future__ import annotations

from amaranth.back import verilog
from amaranth.hdl import Const, Value, ValueCastable
from amaranth.hdl._ir import PortDirection
from amaranth.lib import wiring

__all__ = [
    "component_ports",
    "convert",
]


def component_ports(component: wiring.Component) -> dict:
    """The ports ``verilog.convert`` would take from a signature, minus constant members.

    Amaranth 0.5 turns every signature member into a port, and refuses the constant ``ready``
    of an ``always_ready`` stream ("Only signals and IO ports may be added as ports"); a
    constant needs no port anyway.
    """
    ports = {}
    for path, member, value in component.signature.flatten(component):
        if isinstance(value, ValueCastable):
            value = value.as_value()
        if not isinstance(value, Value) or isinstance(value, Const):
            continue
        flow = PortDirection.Input if member.flow == wiring.In else PortDirection.Output
        ports["__".join(map(str, path))] = (value, flow)
    return ports


def convert(component: wiring.Component, name: str, **kwargs) -> str:
    """Verilog text of ``component`` as a module called ``name``."""
    return verilog.convert(component, name=name, ports=component_ports(component), **kwargs)
