"""Latency-throughput plots of sweeps (matplotlib, Agg backend, written atomically).

One line per fabric: mean packet latency against accepted throughput, with the 95% confidence
interval of each mean as an error bar. Saturated points are hollow (the legend says so). Each
fabric's channel-load bound for the pattern is a dashed vertical line. Latency explodes past
the knee, which would squash every stable point against the x axis, so the y axis stops at
``clip`` times the largest zero-load latency (default 6x, twice the verdict's 3x criterion):
points above are drawn as triangles on the top edge. The legend sits outside the axes.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["plot_curves", "y_limit", "CLIP"]

#: the curves' line styles, one per pass through the colour cycle
LINE_STYLES = ("-", "--", ":", "-.")

#: the y axis ends at this multiple of the largest zero-load latency
CLIP = 6.0


def _describe(packet_length: Any, buffer_depth: int | Mapping[str, int] | None) -> str:
    parts = []
    if packet_length is not None:
        if isinstance(packet_length, (tuple, list)):
            parts.append(f"packets of {packet_length[0]}-{packet_length[1]} flits")
        else:
            parts.append(f"{packet_length}-flit packets")
    if isinstance(buffer_depth, Mapping):
        depths = set(buffer_depth.values())
        if len(depths) == 1:
            buffer_depth = depths.pop()
        else:
            shown = ", ".join(f"{name} {depth}" for name, depth in buffer_depth.items())
            parts.append(f"buffer depth (flits): {shown}")
    if isinstance(buffer_depth, int):
        parts.append(f"buffers of {buffer_depth} flits")
    return ", ".join(parts)


def y_limit(curves: Mapping[str, Sequence[dict[str, Any]]], clip: float = CLIP) -> float:
    """Top of the y axis: ``clip`` x the largest zero-load latency, or just above the highest
    mean latency if that is lower (points without ``limits``: just above the highest mean)."""
    means = [p["latency"]["mean"] for ps in curves.values() for p in ps if p["latency"]["mean"]]
    highest = max(means, default=1.0) * 1.08
    zero_loads = [
        p["limits"]["zero_load_latency"] for ps in curves.values() for p in ps if p.get("limits")
    ]
    return min(clip * max(zero_loads), highest) if zero_loads else highest


def plot_curves(
    curves: Mapping[str, Sequence[dict[str, Any]]],
    path: str | Path,
    *,
    title: str,
    bounds: Mapping[str, float] | None = None,
    packet_length: Any = None,
    buffer_depth: int | Mapping[str, int] | None = None,
    clip: float = CLIP,
) -> None:
    """Write the latency-throughput plot of ``curves`` (fabric name -> sweep points) to ``path``.

    Points are :func:`zfabric.sim.sweep.sweep`'s (accepted, latency, saturated, limits).
    ``bounds`` (name -> flits/cycle/endpoint) overrides the bound the points carry in
    ``limits``; ``packet_length`` (an int or (min, max)) and ``buffer_depth`` (one int, or one
    per fabric) go into the title. The file appears complete or not at all.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    path = Path(path)
    figure, axes = plt.subplots(figsize=(8.4, 4.6))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    top = y_limit(curves, clip)
    clipped_any = False
    for index, (name, points) in enumerate(curves.items()):
        shown = sorted(
            (p for p in points if p["latency"]["mean"] is not None), key=lambda p: p["rate"]
        )
        # past the colour cycle, the next cycle of colours takes the next line style
        color = colors[index % len(colors)]
        style = LINE_STYLES[index // len(colors) % len(LINE_STYLES)]
        inside = [p for p in shown if p["latency"]["mean"] <= top]
        above = [p for p in shown if p["latency"]["mean"] > top]
        clipped_any |= bool(above)
        axes.plot(
            [p["accepted"] for p in inside],
            [p["latency"]["mean"] for p in inside],
            color=color,
            linestyle=style,
            label=name,
        )
        for saturated in (False, True):
            group = [p for p in inside if p["saturated"] == saturated]
            axes.errorbar(
                [p["accepted"] for p in group],
                [p["latency"]["mean"] for p in group],
                yerr=[p["latency"]["ci95"] or 0.0 for p in group],
                fmt="o",
                color=color,
                markerfacecolor="white" if saturated else color,
                capsize=3,
                markersize=5,
            )
        if above:
            axes.plot(
                [p["accepted"] for p in above],
                [0.97 * top] * len(above),
                "^",
                color=color,
                markerfacecolor="white",
            )
        bound, what = (bounds or {}).get(name), "bound"
        if bound is None and shown and shown[0].get("limits"):
            bound = shown[0]["limits"]["bound"]
            if shown[0]["limits"].get("spread"):  # an adaptive routing's split: no bound
                what = "equal split"
        if bound is not None:
            axes.axvline(
                bound, linestyle="--", color=color, alpha=0.6, label=f"{name} {what} {bound:.3f}"
            )
    handles, _labels = axes.get_legend_handles_labels()
    handles += [
        Line2D([], [], marker="o", color="grey", linestyle="", label="stable (95% CI bars)"),
        Line2D(
            [],
            [],
            marker="o",
            color="grey",
            markerfacecolor="white",
            linestyle="",
            label="saturated",
        ),
    ]
    if clipped_any:
        handles.append(
            Line2D(
                [],
                [],
                marker="^",
                color="grey",
                markerfacecolor="white",
                linestyle="",
                label=f"off scale (> {top:.0f} cycles)",
            )
        )
    axes.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize=8)
    axes.set_ylim(0, top)
    axes.set_xlim(left=0)
    axes.set_xlabel("accepted throughput (flits/cycle/endpoint)")
    axes.set_ylabel("mean packet latency (cycles)")
    details = _describe(packet_length, buffer_depth)
    axes.set_title(f"{title}\n{details}" if details else title, fontsize=10)
    axes.grid(True, alpha=0.3)
    if clipped_any:  # only limits (zero-load latencies) clip
        axes.annotate(
            f"y axis clipped at {clip:g} x zero-load latency",
            (0.01, 0.97),
            xycoords="axes fraction",
            fontsize=7,
            va="top",
            color="grey",
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        with open(tmp, "xb") as file:  # the user's umask, like any file they create
            figure.savefig(file, format=path.suffix[1:] or "png", dpi=120, bbox_inches="tight")
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    finally:
        plt.close(figure)
