"""The spec's ``traffic:`` section: values and ranges."""

from __future__ import annotations

import json

import pytest

from zfabric import SpecError, load_spec
from zfabric.traffic_spec import TrafficSpec


def spec(traffic=None, **top):
    data = {"name": "t", "topology": {"kind": "torus", "k": [4]}, **top}
    if traffic is not None:
        data["traffic"] = traffic
    return data


def test_absent_section_gives_nothing_given():
    loaded = load_spec(spec())
    assert loaded.traffic == TrafficSpec()
    assert all(value is None for value in vars(loaded.traffic).values())
    assert loaded.packet_length == 4


def test_every_key_is_read():
    traffic = {
        "pattern": "hotspot",
        "rate": 0.25,
        "packet_length": [2, 8],
        "process": "poisson",
        "seed": 7,
        "warmup": 0,
        "cycles": 100,
        "hotspot_fraction": 0,
    }
    assert load_spec(spec(traffic)).traffic == TrafficSpec(
        pattern="hotspot",
        rate=0.25,
        packet_length=(2, 8),
        process="poisson",
        seed=7,
        warmup=0,
        cycles=100,
        hotspot_fraction=0.0,
    )


def test_rates_and_an_integer_rate():
    assert load_spec(spec({"rates": [0.1, 1]})).traffic.rates == (0.1, 1.0)
    assert load_spec(spec({"rate": 1})).traffic.rate == 1.0


def test_packet_length_from_either_place():
    top = load_spec(spec(packet_length=6))
    assert (top.packet_length, top.traffic.packet_length) == (6, 6)
    inner = load_spec(spec({"packet_length": 6}))
    assert (inner.packet_length, inner.traffic.packet_length) == (6, 6)
    ranged = load_spec(spec({"packet_length": [1, 9]}))
    assert (ranged.packet_length, ranged.traffic.packet_length) == (4, (1, 9))


@pytest.mark.parametrize(
    "traffic, top, message",
    [
        ({"rate": 0}, {}, r"^traffic\.rate: must be a number in \(0, 1\], got 0$"),
        ({"rate": 1.5}, {}, r"^traffic\.rate: must be a number in \(0, 1\], got 1\.5$"),
        ({"rate": float("nan")}, {}, r"^traffic\.rate: must be a number in \(0, 1\], got nan$"),
        ({"rate": True}, {}, r"^traffic\.rate: must be a number in \(0, 1\], got True$"),
        (
            {"rates": []},
            {},
            r"^traffic\.rates: must be a non-empty list of rates, got a list \[\]$",
        ),
        ({"rates": [0.1, 0]}, {}, r"^traffic\.rates\[1\]: must be a number in \(0, 1\], got 0$"),
        ({"rate": 0.1, "rates": [0.2]}, {}, r"^traffic\.rates: give traffic\.rate or rates, not"),
        ({"packet_length": 0}, {}, r"^traffic\.packet_length: must be an integer in 1\.\.4096"),
        ({"packet_length": 4097}, {}, r"^traffic\.packet_length: must be an integer in 1\.\.4096"),
        ({"packet_length": [3]}, {}, r"^traffic\.packet_length: must be N or \[MIN, MAX\], got"),
        ({"packet_length": [9, 2]}, {}, r"^traffic\.packet_length: must be \[MIN, MAX\] with MIN"),
        (
            {"packet_length": 4},
            {"packet_length": 4},
            r"^traffic\.packet_length: also given as the top-level packet_length; keep one$",
        ),
        ({"process": "gauss"}, {}, r"^traffic\.process: must be one of bernoulli, poisson, got"),
        ({"pattern": "unifrom"}, {}, r"^traffic\.pattern: .*got 'unifrom'; did you mean 'uniform'"),
        ({"cycles": 0}, {}, r"^traffic\.cycles: must be an integer in 1\.\.100000000, got 0$"),
        ({"cycles": 10**8 + 1}, {}, r"^traffic\.cycles: must be an integer in 1\.\.100000000"),
        ({"warmup": -1}, {}, r"^traffic\.warmup: must be an integer in 0\.\.100000000, got -1$"),
        ({"seed": -1}, {}, r"^traffic\.seed: must be an integer in 0\.\."),
        ({"hotspot_fraction": 2}, {}, r"^traffic\.hotspot_fraction: must be a number in \[0, 1\]"),
        ({"level_weights": []}, {}, r"^traffic\.level_weights: must be a non-empty list of"),
        ({"level_weights": [1, -1]}, {}, r"^traffic\.level_weights\[1\]: must be a number in"),
        ({"level_weights": [0, 0]}, {}, r"^traffic\.level_weights: must have a positive sum"),
        ({"rat": 0.1}, {}, r"^traffic\.rat: unknown key .*did you mean 'rate'\?$"),
        ([0.1], {}, r"^traffic: must be a mapping, got a list \[0\.1\]$"),
    ],
)
def test_bad_traffic(traffic, top, message):
    with pytest.raises(SpecError, match=message):
        load_spec(spec(traffic, **top))


def test_weighted_traffic_from_the_spec(tmp_path, capsys):
    # the spec's level weights reach the run; one too few is refused naming the spec's key
    from zfabric.cli import main

    topology = {"kind": "znode", "z": [2, 2, 3], "R": [1, 2, 4]}
    traffic = {"pattern": "weighted", "level_weights": [1, 0, 0]}
    loaded = load_spec({"name": "w", "topology": topology, "traffic": traffic})
    assert loaded.traffic.level_weights == (1.0, 0.0, 0.0)
    path = tmp_path / "w.yaml"
    path.write_text(str({"name": "w", "topology": topology, "traffic": traffic}))
    assert main(["simulate", str(path), "--cycles", "300", "--warmup", "0", "--json"]) == 0
    inputs = json.loads(capsys.readouterr().out)["inputs"]
    assert (inputs["pattern"], inputs["level_weights"]) == ("weighted", [1.0, 0.0, 0.0])
    traffic["level_weights"] = [1, 1]
    path.write_text(str({"name": "w", "topology": topology, "traffic": traffic}))
    assert main(["simulate", str(path)]) == 2
    assert capsys.readouterr().err.strip() == (
        "zfabric: error: traffic.level_weights: level weights must have 3 entries, one per"
        " level, got 2 (w)"
    )
