"""Chapter 6 of Alzeidi's thesis: the router cost model behind its topology, buffer and routing
comparisons (digest ``shared/reference/wormhole-models.md`` §2.4, §4.3; equation numbers in
parentheses).

Chien's router delays normalised to a 4.9 ns cycle: routing ``t_r`` (6.1) by the alternatives
``R`` a header chooses among, switching ``t_s`` (6.2) by the crossbar's ports ``P``; the
channel cycle ``t_c`` of a 3-D torus or hypercube against a 2-D torus of one cycle a flit,
under constant bisection width (6.4), (6.5) or constant pin-out (Table 6.2); VCs that keep the
buffer per router equal (6.8)-(6.11). The thesis never writes how the three delays enter its
latency equations (digest §2.4, erratum §6.20). :func:`network_timing` takes the digest's
reading: a flit ``t_c`` a channel, a header ``t_r + t_s + t_c`` a hop, holding times in units of
``t_c``; with ``t_c = 1`` and ``t_r + t_s = 0`` it is the thesis's unit-cycle router.

Corrections: the printed pin-out cycles (6.6) ``3 N^{1/3}`` and (6.7) ``n N^{1/2}`` do not give
Table 6.2's 3/3.8/4.8 and 6/16/40; ``1.5 N^{1/6}`` and ``n N^{1/2} / 8`` do, and are used. The
alternatives of (6.12) count the one escape VC a header may take, which is what (6.13)-(6.15)
and Table 6.2's ``t_r`` need. The adaptive crossbar's ports, never given, are ``n_in V + 1``
(every input VC and the local port): it gives the 33 % and 10 % of L2004 (digest §2.4).
"""

from __future__ import annotations

import math

from .wormhole_finite import Timing

__all__ = [
    "CONSTRAINTS",
    "TOPOLOGIES",
    "adaptive_delays",
    "channel_cycle",
    "dor_delays",
    "equal_buffer_vcs",
    "network_timing",
    "routing_delay",
    "switching_delay",
]

#: the three topologies of chapter 6 (unidirectional tori and the hypercube, §6.4)
TOPOLOGIES = ("2D torus", "3D torus", "hypercube")
#: constant bisection width ("bisection") or constant pin-out ("pin-out"), §6.4.1
CONSTRAINTS = ("bisection", "pin-out")


def routing_delay(alternatives: int) -> float:
    """``t_r = (4.7 + 1.2 log2 R) / 4.9`` cycles (6.1): address decoding, the routing decision
    among ``R`` alternative channels and the header update."""
    return (4.7 + 1.2 * math.log2(alternatives)) / 4.9


def switching_delay(ports: int) -> float:
    """``t_s = (3.4 + 0.6 log2 P) / 4.9`` cycles (6.2): internal flow control, crossing a
    ``P``-port crossbar and setting up the output channel."""
    return (3.4 + 0.6 * math.log2(ports)) / 4.9


def adaptive_delays(topology: str, dimensions: int, vcs: int) -> tuple[float, float]:
    """``(t_r, t_s)`` of Duato's adaptive router: ``R = D_rem |VC_1| + 1 + 1`` (6.12) with
    ``D_rem`` 2 (6.13), 3 (6.14), or ``n - 1`` for the hypercube, whose ``|VC_1| = V - 1``
    (6.15); a full crossbar of ``n V + 1`` ports (``n`` input channels of a unidirectional
    cube)."""
    if topology == "hypercube":
        alternatives = (dimensions - 1) * (vcs - 1) + 2  # (6.15)
    else:
        alternatives = dimensions * (vcs - 2) + 2  # (6.13), (6.14)
    return routing_delay(alternatives), switching_delay(dimensions * vcs + 1)


def dor_delays(vcs: int) -> tuple[float, float]:
    """``(t_r, t_s)`` of the cascaded DOR router (Fig 6.10): one crossbar of ``P = V + 1``
    ports a dimension and ``R = V + 1`` alternatives ("6.15", "6.16", L1968-1970)."""
    return routing_delay(vcs + 1), switching_delay(vcs + 1)


def channel_cycle(topology: str, nodes: int, constraint: str) -> float:
    """``t_c``, cycles a flit takes over a channel when the 2-D torus's channel is one flit
    wide: constant bisection width, 3-D ``N^{1/3}`` (6.4), hypercube ``N/8`` (6.5); constant
    pin-out, 3-D ``1.5 N^{1/6}``, hypercube ``n N^{1/2} / 8`` (Table 6.2; see the module doc)."""
    if topology not in TOPOLOGIES or constraint not in CONSTRAINTS:
        raise ValueError(f"topology {topology!r} / constraint {constraint!r} unknown")
    if topology == "2D torus":
        return 1.0
    if constraint == "bisection":
        return nodes ** (1 / 3) if topology == "3D torus" else nodes / 8
    if topology == "3D torus":
        return 1.5 * nodes ** (1 / 6)
    return math.log2(nodes) * math.sqrt(nodes) / 8


def equal_buffer_vcs(topology: str, nodes: int) -> int:
    """VCs a channel that keep ``(input channels) F V`` equal across the three (6.8):
    hypercube 2 (6.9), 2-D torus ``n`` (6.10), 3-D torus ``2n/3`` rounded (6.11), ``n`` the
    hypercube's dimensions."""
    n = round(math.log2(nodes))
    return {"hypercube": 2, "2D torus": n, "3D torus": round(2 * n / 3)}[topology]


def network_timing(
    channel: float, routing: float, switching: float, *, header_holds: bool = False
) -> Timing:
    """The unit steps of the chapter 4 and 5 models under chapter 6's delays (see the module
    doc): a flit ``t_c``, a header ``t_r + t_s + t_c`` a hop, an effective channel ``t_c``;
    with ``header_holds`` the header's whole ``t_r + t_s + t_c`` a hop, as the thesis's routing
    cycle holds its channels (L1543), so the delays move saturation too."""
    hop = routing + switching + channel
    return Timing(flit=channel, hop=hop, hold=hop if header_holds else channel)
