"""Spec loader: every user error names the key path and the bad value."""

from __future__ import annotations

import pytest

from zfabric import SpecError, load_spec
from zfabric.spec import MAX_SWITCHES


def spec(**topology):
    return {"name": "t", "topology": {"kind": "torus", **topology}}


@pytest.mark.parametrize(
    "data, message",
    [
        (spec(k=[4, 1]), r"^topology\.k\[1\]: must be an integer >= 2, got 1$"),
        (spec(k=[4, "4"]), r"^topology\.k\[1\]: must be an integer >= 2, got '4'$"),
        (spec(k=4), r"^topology\.k: must be a list of integers, got 4$"),
        (spec(k=[]), r"^topology\.k: must have at least 1 entries, got \[\]$"),
        (spec(k=[4, True]), r"^topology\.k\[1\]: must be an integer >= 2, got True$"),
        (spec(k=[4], wrap="yes"), r"^topology\.wrap: must be true or false, got 'yes'$"),
        (spec(kk=[4]), r"^topology\.k: missing required key \(found unknown key 'kk'"),
        (spec(k=[4], wrapp=True), r"^topology\.wrapp: unknown key .*did you mean 'wrap'\?$"),
        ({"name": "t", "topology": {"kind": "toruss"}}, r"did you mean 'torus'\?$"),
        ({"name": "t"}, r"^topology: missing required key$"),
        ({"name": "t", "topology": [1]}, r"^topology: must be a mapping, got a list \[1\]$"),
        ({**spec(k=[4]), "routing": "xy"}, r"^routing: must be one of dor, got 'xy'$"),
        ({**spec(k=[4]), "routing": "sliced"}, r"^routing: must be one of dor, got 'sliced'$"),
        ({**spec(k=[4]), "buffer_depth": 1}, r"^buffer_depth: must be an integer in 2\.\.1024"),
        ({**spec(k=[4]), "flit_widht": 32}, r"^flit_widht: unknown key .*'flit_width'\?$"),
        (
            {**spec(k=[4]), "routing": {"name": "dor", "dateline": False}},
            r"^routing\.dateline: unknown key .*did you mean 'datelines'\?$",
        ),
        (spec(k=[64, 64, 2]), rf"^topology: gives 8192 switches, over the limit of {MAX_SWITCHES}"),
    ],
)
def test_errors_name_path_and_value(data, message):
    with pytest.raises(SpecError, match=message):
        load_spec(data)


def test_yaml_syntax_error_gives_the_line(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("name: x\ntopology:\n  kind: torus\n  k: [4, 4\n")
    with pytest.raises(SpecError, match=r"YAML syntax error at line 5"):
        load_spec(path)


@pytest.mark.parametrize("text", ["", "# only a comment\n", "\n\n"])
def test_empty_file_is_refused(tmp_path, text):
    path = tmp_path / "empty.yaml"
    path.write_text(text)
    with pytest.raises(SpecError, match=r"the spec is empty$"):
        load_spec(path)


def test_name_defaults_to_the_file_stem(tmp_path):
    path = tmp_path / "ring-8.yaml"
    path.write_text("topology: {kind: torus, k: [8]}\n")
    loaded = load_spec(path)
    assert loaded.name == "ring-8"
    assert loaded.params.k == (8,)
    assert loaded.routing == "dor"


def test_spec_is_frozen():
    loaded = load_spec(spec(k=[4]))
    with pytest.raises(AttributeError):
        loaded.name = "other"
