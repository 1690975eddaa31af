"""The thesis's analytic latency of the four Znode addressing schemes, and its flit-time twin.

After A. Peratikou's Znode thesis (Portsmouth, 2014), §4.3.2, eq. 4.2-4.8 and App. A. Units
are bit-times on the thesis's serial links (1 bit = 1 ns at 1 Gbit/s), an empty network,
traffic spread evenly over the common levels (App. A: W_i = 1/n). Symbols: n levels, Δ the
propagation delay between two switches, D the payload, ρ the routing bit (1 for sliced),
b_j = log2 z_j the label of level j, a = log2 m the Znode id, P the processors.

- eq. 4.2, one common level i: T_i = 2iΔ + iρ + a + d + Σ_{j≤i} b_j + D (:func:`level_latency`).
- eq. 4.3, flat: T_F = 2nΔ + log2 P + D.
- eq. 4.4, source-destination: T_SD = Δ(n+1) + (n+1) log2 P + (1/n) Σ_{j<n} (n-j+1) b_j + D.
- eq. 4.5, destination: T_D = Δ(n+1) + ½(n+1) log2 P + (1/n) Σ_{j<n} (n-j+1) b_j + D.
- eq. 4.6/4.7, sliced: T_S = Δ(n+1) + ½(n+1) ρ + D + (1/n) Σ_{j≤n} (n-j+1) b_j.
- eq. 4.8, m > 1 (half the traffic leaves its Znode, one side hop): flat and sliced
  T = T_n + Δ/2 + log2 m; source-destination and destination T = T_n + Δ/2 + log2 P/(2n) +
  (n+1) log2 m.

Corrections from the digest: App. A's T_1 = Δ + ..., T_2 = 3Δ + ... disagree with its own
T_n = 2nΔ + ...; 2iΔ is what the averages imply (the mean of 2iΔ over i = 1..n is Δ(n+1)). The
printed "(n - j + i)" in eq. 4.4-4.7 is (n - j + 1): label b_j is read on every level i ≥ j,
n - j + 1 of the n levels. :func:`level_latency` averaged over i gives eq. 4.7 exactly (a test
checks it). Interpretations made here: b_j is the label's field width ceil(log2 z_j) and
log2 P is Σ_j b_j, the eq. 6.3 bit-field address (both exact when every z_j is a power of
two); log2 m is the Znode id's field width ceil(log2 m); in eq. 4.8, P is one Znode's count
(P = ∏ z), since the Znode id is the separate log2 m term, and T_n is the scheme's m = 1
average (eq. 4.3-4.7, as the digest's ½(Σ T_i^I + Σ T_i^E)/n derivation reads it), not eq. 4.2
at level n.

Mapping onto our flit timing (docs/microarchitecture.md, Consequences). A packet of L flits
whose route crosses H switch-to-switch links is delivered (S+1)(H+1) + L cycles after it is
created with ``stages: S`` (``RouterSettings.zero_load_latency``). Term by term:

==========================  =============================  =====================================
thesis (bit-times)          here (cycles)                  why
==========================  =============================  =====================================
2iΔ: 2i links, processor    (S+1)(2i-1) + 1: 2i-1          a switch and its output link take S+1
links included               switches, H = 2i-2, and one   cycles; the source's link is the
                             injection cycle               injection cycle
d (side hop, m > 1)         S+1: one more switch, H + 1    the side link and the switch it feeds
iρ + a + Σ b_j, or log2 P   Σ (⌈len_k / N⌉ - 1) over the  with ``router.head_bits: N`` a head
per switch (routing head)   switches k and the ejection    of len_k bits travels as ⌈len_k/N⌉
                            link; 0 without ``head_bits``  head flits and each switch waits for
                            or while every head fits one   all of them; sliced len_k shrinks
                            flit                           hop by hop, the others keep it
D (payload bits)            L - 1 (L = ceil(D / flit      the body streams one flit per cycle
                            width) flits)                  behind the head
flat turns at level n       H = 2n - 2 (2n - 1 across)     every route climbs to the top
==========================  =============================  =====================================

So while every head fits one flit the schemes differ only by their hop counts: flat pays for
always climbing, while sliced, source-destination and destination routes all take 2c - 2 links
(:func:`flit_latency`). With heads longer than a flit (docs/microarchitecture.md, *Heads longer
than a flit*) the header terms come back, paid at every switch as a serial switch that decodes
the whole header pays them (:func:`head_lengths`): flat and destination ⌈log2 P / N⌉ - 1 cycles
per switch, source-destination ⌈2 log2 P / N⌉ - 1, sliced less and less as its head shrinks
(the thesis's model, bit-pipelined, pays each header bit once per route instead).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from zfabric.router_settings import RouterSettings, head_cycles
from zfabric.routing import head_flits
from zfabric.topologies.znode import field_width

__all__ = ["SCHEMES", "level_latency", "thesis_latency", "flit_latency", "head_lengths"]

#: the addressing schemes of digest §2.8, by this project's routing names (destination
#: addressing is ``updown``)
SCHEMES = ("flat", "source_destination", "destination", "sliced")


def _check(scheme: str, z: Sequence[int], znodes: int) -> None:
    if scheme not in SCHEMES:
        raise ValueError(f"scheme must be one of {', '.join(SCHEMES)}, got {scheme!r}")
    if not z or any(not isinstance(zj, int) or zj < 1 for zj in z):
        raise ValueError(f"z must be a non-empty list of integers >= 1, got {z!r}")
    if not isinstance(znodes, int) or znodes < 1:
        raise ValueError(f"znodes must be an integer >= 1, got {znodes!r}")


def level_latency(
    i: int,
    z: Sequence[int],
    *,
    delta: float = 1,
    rho: float = 1,
    a: float = 0,
    d: float = 0,
    payload: float = 0,
) -> float:
    """eq. 4.2: bit-times of a packet turning at common level ``i`` in an empty network,
    T_i = 2iΔ + iρ + a + d + Σ_{j≤i} b_j + D (2iΔ as corrected in the digest)."""
    if not 1 <= i <= len(z):
        raise ValueError(f"level must be in 1..{len(z)}, got {i!r}")
    labels = sum(field_width(zj) for zj in z[:i])
    return 2 * i * delta + i * rho + a + d + labels + payload


def thesis_latency(
    scheme: str,
    z: Sequence[int],
    *,
    znodes: int = 1,
    delta: float = 1,
    payload: float = 0,
    rho: float = 1,
) -> float:
    """eq. 4.3-4.8: the average bit-times of ``scheme`` on a Znode (``znodes`` = 1) or a super
    node of ``znodes`` Znodes with zones ``z`` (see the module doc for the corrections)."""
    _check(scheme, z, znodes)
    n = len(z)
    b = [field_width(zj) for zj in z]
    log_p = sum(b)
    below_top = sum((n - j + 1) * b[j - 1] for j in range(1, n)) / n  # Σ_{j<n} (n-j+1) b_j / n
    if scheme == "flat":
        t = 2 * n * delta + log_p + payload
    elif scheme == "sliced":
        every = sum((n - j + 1) * b[j - 1] for j in range(1, n + 1)) / n
        t = delta * (n + 1) + (n + 1) * rho / 2 + payload + every
    elif scheme == "destination":
        t = delta * (n + 1) + (n + 1) * log_p / 2 + below_top + payload
    else:
        t = delta * (n + 1) + (n + 1) * log_p + below_top + payload
    if znodes == 1:
        return t
    log_m = field_width(znodes)
    if scheme in ("flat", "sliced"):
        return t + delta / 2 + log_m
    return t + delta / 2 + log_p / (2 * n) + (n + 1) * log_m


def flit_latency(
    scheme: str,
    z: Sequence[int],
    packet_length: float,
    *,
    znodes: int = 1,
    router: RouterSettings | None = None,
) -> float:
    """The same average in cycles of our switches (the module doc's mapping): traffic spread
    evenly over the common levels, half of it to another Znode when ``znodes`` > 1 (as eq.
    4.8 assumes; side links at every level, so the side hop is at the peer level),
    packets of ``packet_length`` flits, ``router``'s pipeline and head flits
    (:func:`head_lengths`)."""
    _check(scheme, z, znodes)
    router = router or RouterSettings()
    n = len(z)
    turns = [n] * n if scheme == "flat" else list(range(1, n + 1))

    def latency(c: int, across: bool) -> float:
        heads = [
            head_flits(bits, router.head_bits)
            for bits in head_lengths(scheme, z, znodes, c, across)
        ]
        return router.zero_load_latency(2 * c - 2 + across, packet_length, head_cycles(heads))

    mean_inside = math.fsum(latency(c, False) for c in turns) / n
    if znodes == 1:
        return mean_inside
    return (mean_inside + math.fsum(latency(c, True) for c in turns) / n) / 2


def head_lengths(
    scheme: str, z: Sequence[int], znodes: int, turn: int, across: bool = False
) -> list[int]:
    """Bits of the routing head of a route turning at level ``turn`` (to another Znode when
    ``across``, side links at every level) as it enters each switch, then on the ejection
    link: the head each scheme writes (digest §2.3, §2.8; ``zfabric/routing``), derived here
    from the fields, not from the routing code. Sliced: c - i + 1 level bits, the Znode id
    and labels 1..c into the level-i switch on the way up; labels 1..c after a side hop;
    labels 1..i into the level-i switch on the way down; nothing at delivery. The others keep
    their length: the destination's address (flat), source and destination addresses
    (source-destination), the destination endpoint id (destination)."""
    _check(scheme, z, znodes)
    b = [field_width(zj) for zj in z]
    a = field_width(znodes)
    switches = 2 * turn - 1 + across
    if scheme == "sliced":
        up = [turn - i + 1 + a + sum(b[:turn]) for i in range(1, turn + 1)]
        down = [sum(b[:i]) for i in range(turn - 1, 0, -1)]
        return up + ([sum(b[:turn])] if across else []) + down + [0]
    address = sum(b) + a
    width = {
        "flat": address,
        "source_destination": 2 * address,
        "destination": (math.prod(z) * znodes - 1).bit_length(),
    }[scheme]
    return [max(1, width)] * (switches + 1)
