"""FPGA boards a fabric can be built for, each with a default spec that fits it.

A :class:`Target` names an amaranth-boards platform class, the resources the board top uses
(the UART's transmit pin and up to three LEDs: heartbeat, error, generators active) and the
spec built when none is given. amaranth-boards is imported only when a platform is made, so
listing targets needs no FPGA packages.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "Target",
    "TARGETS",
    "get_target",
]

#: the repository's examples/ folder, where default specs live
EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


@dataclass(frozen=True)
class Target:
    """One board.

    Attributes
    ----------
    name : str
        The command-line name (``icebreaker``).
    board : str
        What it is, for people.
    platform : str
        ``module:Class`` of the amaranth-boards platform.
    family : str
        ``ice40`` or ``ecp5``: which reports the build reads.
    device : str
        The FPGA, for people (the platform class is what counts; the clock is the platform's
        default clock).
    spec : str
        Default spec: a file name in ``examples/``.
    uart : tuple
        ``platform.request`` arguments of the resource whose ``tx`` carries the report.
    leds : dict
        Role (``heartbeat``, ``error``, ``active``) -> ``(resource, number[, subsignal])``.
    extra_resources : str or None
        ``module:function`` returning resources to add to the platform (pins the
        amaranth-boards file does not name).
    """

    name: str
    board: str
    platform: str
    family: str
    device: str
    spec: str
    uart: tuple = ("uart", 0)
    leds: dict = field(default_factory=dict)
    extra_resources: str | None = None

    @property
    def spec_path(self) -> Path:
        return EXAMPLES / self.spec

    def platform_class(self) -> type:
        module, _, name = self.platform.partition(":")
        try:
            return getattr(importlib.import_module(module), name)
        except ImportError as error:
            raise ImportError(
                f"target {self.name} needs amaranth-boards ({error}); install the fpga extra: "
                f"pip install 'zfabric[fpga]'"
            ) from None

    def make_platform(self):
        """A fresh platform instance: ``prepare()`` may run only once per instance."""
        platform = self.platform_class()()
        if self.extra_resources:
            module, _, name = self.extra_resources.partition(":")
            platform.add_resources(getattr(importlib.import_module(module), name)())
        return platform


def orangecrab_resources() -> list:
    from amaranth.build import Attrs, Pins, Resource, Subsignal

    # The OrangeCrab has no UART on its USB-C port; the Feather-layout pins 0 (RX) and 1 (TX)
    # of the "io" header take a 3.3 V USB-serial adapter.
    return [
        Resource(
            "uart",
            0,
            Subsignal("tx", Pins("1", dir="o", conn=("io", 0))),
            Subsignal("rx", Pins("0", dir="i", conn=("io", 0))),
            Attrs(IO_TYPE="LVCMOS33"),
        )
    ]


TARGETS: dict[str, Target] = {
    target.name: target
    for target in (
        Target(
            name="icebreaker",
            board="1BitSquared iCEBreaker",
            platform="amaranth_boards.icebreaker:ICEBreakerPlatform",
            family="ice40",
            device="iCE40 UP5K",
            spec="ring-2.yaml",
            leds={"heartbeat": ("led_g", 0), "error": ("led_r", 0)},
        ),
        Target(
            name="ulx3s-85f",
            board="Radiona ULX3S with an 85k ECP5",
            platform="amaranth_boards.ulx3s:ULX3S_85F_Platform",
            family="ecp5",
            device="ECP5 LFE5U-85F",
            spec="torus-2x2.yaml",
            leds={"heartbeat": ("led", 0), "error": ("led", 1), "active": ("led", 2)},
        ),
        Target(
            name="orangecrab-85f",
            board="OrangeCrab r0.2 with an 85k ECP5",
            platform="amaranth_boards.orangecrab_r0_2:OrangeCrabR0_2_85FPlatform",
            family="ecp5",
            device="ECP5 LFE5U-85F",
            spec="ndt-2x2.yaml",
            leds={
                "heartbeat": ("rgb_led", 0, "g"),
                "error": ("rgb_led", 0, "r"),
                "active": ("rgb_led", 0, "b"),
            },
            extra_resources="zfabric.boards.targets:orangecrab_resources",
        ),
    )
}


def get_target(name: str) -> Target:
    """The target called ``name``; ``KeyError`` lists the known ones."""
    try:
        return TARGETS[name]
    except KeyError:
        raise KeyError(f"unknown target {name!r}; known targets: {', '.join(TARGETS)}") from None
