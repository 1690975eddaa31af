"""Latency-throughput plots: readable axis, atomic file."""

from __future__ import annotations

import json
import os

import pytest
from zfabric.sim.plot import CLIP, plot_curves, y_limit


def point(rate, mean, saturated=False, zero=10.0):
    return {
        "rate": rate,
        "offered": rate,
        "accepted": rate,
        "latency": {"mean": mean, "p50": mean, "p99": mean, "max": mean, "ci95": 0.5},
        "saturated": saturated,
        "limits": {"zero_load_latency": zero, "bound": 0.5, "limited_by": "channel x"},
    }


CURVES = {"a": [point(0.1, 11), point(0.3, 20), point(0.45, 1000, True)], "b": [point(0.2, 14)]}


def test_the_y_axis_stops_at_a_multiple_of_zero_load():
    assert y_limit(CURVES) == CLIP * 10  # the 1000-cycle point would squash the others
    assert y_limit({"b": [point(0.1, 11), point(0.2, 20)]}) == pytest.approx(20 * 1.08)


def test_writes_a_png_with_the_users_umask(tmp_path):
    path = tmp_path / "out" / "curve.png"
    old = os.umask(0o027)
    try:
        plot_curves(CURVES, path, title="uniform", packet_length=4, buffer_depth=4)
    finally:
        os.umask(old)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert path.stat().st_mode & 0o777 == 0o640
    assert os.listdir(path.parent) == ["curve.png"]  # no temporary file left


def test_a_failed_plot_leaves_the_old_file_alone(tmp_path):
    path = tmp_path / "curve.nosuchformat"
    path.write_text("the user's own file")
    with pytest.raises(ValueError):
        plot_curves(CURVES, path, title="uniform")
    assert path.read_text() == "the user's own file"
    assert os.listdir(tmp_path) == [path.name]


def test_points_from_json_plot(tmp_path):
    # what a sweep writes (sweep.json) plots as it is
    curves = json.loads(json.dumps(CURVES))
    plot_curves(curves, tmp_path / "c.png", title="t", buffer_depth={"a": 4, "b": 2})
    assert (tmp_path / "c.png").stat().st_size > 1000
