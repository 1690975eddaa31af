"""A fabric plan in the terms of the thesis's chapter 4 and 5 models (docs/analytic.md).

:func:`fabric_model` reads a torus or mesh plan under ``dor`` or ``duato`` and says which model
applies and with what: the cube, ``V`` VCs per link, the VCs a header may take, the buffer
depth ``F``, the message length ``M`` and the cycles of the switch contract
(docs/microarchitecture.md) as a :class:`~zfabric.sim.wormhole_finite.Timing`. Any other family
or routing is refused with a :class:`~zfabric.errors.SpecError` naming the key.

Two timings: ``zfabric`` maps the contract (a header ``stages + 1`` cycles per hop plus its
extra head flits; a worm streaming one flit per cycle behind it, so an uncontended channel is
held ``M`` cycles and no effective channel adds to that; the lone packet's other cycles as
``extra``; one source queue per endpoint, one flit per cycle; the VC classes a hop may take);
``thesis`` is the thesis's unit-cycle router on the same cube, ``V``, ``F`` and ``M``, its
equations as printed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from zfabric.errors import SpecError
from zfabric.plan import FabricPlan
from zfabric.routing.base import fixed_head_flits

from .wormhole_dor import dor_latency, dor_saturation_rate
from .wormhole_duato import duato_latency, duato_saturation_rate
from .wormhole_finite import THESIS_TIMING, Cube, Timing

__all__ = ["MODELS", "TIMINGS", "FabricModel", "fabric_model"]

#: routing -> the chapter whose model covers it
MODELS = {"dor": "chapter 4 (dimension-order routing, finite buffers)",
          "duato": "chapter 5 (Duato's adaptive routing, finite buffers)"}  # fmt: skip
TIMINGS = ("zfabric", "thesis")


@dataclass(frozen=True)
class FabricModel:
    """One plan's model: what :func:`fabric_model` found, and the calls that use it. Rates
    are zfabric's, payload flits per cycle per endpoint; the models take messages
    (``λ_g = rate / L``)."""

    name: str
    model: str  # "dor" (chapter 4) or "duato" (chapter 5)
    timing_name: str  # "zfabric" or "thesis"
    cube: Cube
    vcs: int  # V, VCs per link
    usable: int  # dor: VCs a header may take at a hop; duato: the adaptive VCs
    escape_usable: int  # duato: the escape VCs a header may take (0 for dor)
    payload_length: int  # L, payload flits per packet
    message_length: int  # M, flits on a link (L plus the head flits beyond the first)
    buffer_depth: int  # F
    timing: Timing
    options: dict[str, Any] = field(default_factory=dict)  # the model function's own choices

    def latency(self, rate: float):
        """The model's prediction at ``rate`` flits/cycle/endpoint (None: saturated)."""
        lam = rate / self.payload_length
        if self.model == "dor":
            return dor_latency(self.cube, self.vcs, self.message_length, self.buffer_depth, lam,
                               usable=self.usable, timing=self.timing, **self.options)  # fmt: skip
        return duato_latency(self.cube, self.vcs, self.message_length, self.buffer_depth, lam,
                             adaptive=self.usable, escape_usable=self.escape_usable,
                             timing=self.timing, **self.options)  # fmt: skip

    def saturation(self, relative_precision: float = 1e-3) -> float:
        """The highest rate (flits/cycle/endpoint) at which the model converges."""
        if self.model == "dor":
            lam = dor_saturation_rate(
                self.cube, self.vcs, self.message_length, self.buffer_depth,
                relative_precision=relative_precision, usable=self.usable, timing=self.timing,
                **self.options,
            )  # fmt: skip
        else:
            lam = duato_saturation_rate(
                self.cube, self.vcs, self.message_length, self.buffer_depth,
                relative_precision=relative_precision, adaptive=self.usable,
                escape_usable=self.escape_usable, timing=self.timing, **self.options,
            )  # fmt: skip
        return lam * self.payload_length

    def zero_load(self) -> float:
        """The model's latency as the rate goes to 0 (cycles)."""
        return self.timing.zero_load(self.message_length, self.cube.mean_hops())

    def describe(self) -> str:
        """One line: the model and what it was given."""
        kind = "mesh" if self.cube.kind == "mesh" else "torus"
        cube = f"{kind} {'x'.join(map(str, self.cube.radices))}"
        if self.model == "dor":
            vcs = f"V={self.vcs} ({self.usable} usable a hop)"
        else:
            escape = self.vcs - self.usable
            vcs = (
                f"V={self.vcs} ({self.usable} adaptive, {escape} escape of which"
                f" {self.escape_usable} usable a hop)"
            )
        t = self.timing
        timing = (
            "thesis timing (1 cycle a flit, 1 a hop, M + A a channel)"
            if self.timing_name == "thesis"
            else f"zfabric timing ({t.hop:g} cycles a hop, {t.extra:g} more a packet,"
            f" {t.flit:g} a flit, +{t.holding_per_channel:g} a channel per effective channel)"
        )
        return (
            f"{MODELS[self.model]} on {cube}, {vcs}, F={self.buffer_depth},"
            f" M={self.message_length} flits, uniform traffic, {timing}"
        )

    def to_dict(self) -> dict[str, Any]:
        t = self.timing
        return {
            "model": self.model,
            "chapter": 4 if self.model == "dor" else 5,
            "timing": self.timing_name,
            "kind": self.cube.kind,
            "k": list(self.cube.radices),
            "vcs": self.vcs,
            "usable_vcs" if self.model == "dor" else "adaptive_vcs": self.usable,
            **({"usable_escape_vcs": self.escape_usable} if self.model == "duato" else {}),
            "buffer_depth": self.buffer_depth,
            "packet_length": self.payload_length,
            "message_length": self.message_length,
            "cycles": {
                "flit": t.flit,
                "hop": t.hop,
                "hold": t.holding_per_channel,
                "extra": t.extra,
            },
            "mean_hops": self.cube.mean_hops(),
        }


def fabric_model(
    plan: FabricPlan,
    kind: str,
    *,
    model: str | None = None,
    timing: str = "zfabric",
    packet_length: int | None = None,
) -> FabricModel:
    """The model of ``plan`` (``kind`` its spec's topology kind, for messages), ``model``
    defaulting to its routing's; ``packet_length`` defaults to the plan's. Refuses (SpecError)
    a family or routing the thesis does not model and choices the models cannot represent."""
    if timing not in TIMINGS:
        raise ValueError(f"timing must be one of {TIMINGS}, got {timing!r}")
    if plan.topology != "torus":
        raise SpecError(
            "topology.kind",
            f"the analytic models cover k-ary n-cubes (kind torus or mesh), not {kind}",
        )
    routing = plan.routing.name
    if routing not in MODELS:
        raise SpecError("routing", f"the analytic models cover dor and duato, not {routing}")
    if model is not None and model != routing:
        raise SpecError(
            "--model", f"{model}: {plan.name} routes by {routing}; its model is {routing}"
        )
    if plan.router.switching != "wormhole":
        raise SpecError(
            "router.switching",
            f"{plan.router.switching}: the analytic models are of wormhole switching",
        )
    if plan.router.bypasses:
        raise SpecError(
            "router.bypass",
            "straight: the analytic models take every hop through the switch's buffers",
        )
    params = plan.topology_params
    wrap = bool(params["wrap"])
    options = plan.routing.params
    if wrap and not options.get("datelines", True):
        raise SpecError(
            "routing.datelines",
            "false leaves the rings without escape VCs; the models need the dateline classes",
        )
    length = plan.packet_length if packet_length is None else packet_length
    cube = Cube(tuple(params["k"]), "torus" if wrap else "mesh")
    classes = 2 if wrap else 1
    per_class = params["vcs"]
    adaptive = options.get("adaptive_vcs", 0) if routing == "duato" else 0
    vcs = classes * per_class + adaptive
    depth = plan.buffer_depth
    if timing == "thesis":
        return FabricModel(
            plan.name, routing, timing, cube, vcs,
            usable=(vcs - 1 if cube.rings else vcs) if routing == "dor" else adaptive,
            escape_usable=1 if routing == "duato" else 0,
            payload_length=length, message_length=length, buffer_depth=depth,
            timing=THESIS_TIMING,
        )  # fmt: skip
    heads = fixed_head_flits(plan)  # dor and duato heads keep their length
    message = length + heads - 1  # the extra head flits ride the links like payload
    router = plan.router
    # cycles of a lone packet (docs/microarchitecture.md, Consequences): per hop and outside
    zero = router.zero_load_latency(0, length, 2 * (heads - 1), depth)
    hop = router.zero_load_latency(1, length, 3 * (heads - 1), depth) - zero
    flit = 1.0 + router.streaming_cycles(length, depth) / message  # B < P streams slower
    contract = Timing(flit=flit, hop=hop, hold=0.0, extra=zero - message * flit)
    options = {"injection_servers": 1}
    if routing == "dor":
        options["weighting"] = "destinations"
    else:
        options.update(pd_escape_factor=1, mean_hops="exact")
    return FabricModel(
        plan.name, routing, timing, cube, vcs,
        usable=per_class if routing == "dor" else adaptive,
        escape_usable=per_class if routing == "duato" else 0,
        payload_length=length, message_length=message, buffer_depth=depth,
        timing=contract, options=options,
    )  # fmt: skip
