"""Spec loader: every user error names the key path and the bad value."""

from __future__ import annotations

import pytest

from zfabric import SpecError, compile_plan, load_spec
from zfabric.fields import MAX_ERRORS, MAX_LIST_LENGTH, VALUE_CHARS, describe
from zfabric.spec import MAX_ENDPOINTS, MAX_SPEC_BYTES, MAX_SWITCHES


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
        ({**spec(k=[4]), "routing": "xy"}, r"^routing: must be one of dor, duato, got 'xy'$"),
        (
            {**spec(k=[4]), "routing": "sliced"},
            r"^routing: must be one of dor, duato, got 'sliced'$",
        ),
        ({**spec(k=[4]), "buffer_depth": 1}, r"^buffer_depth: must be an integer in 2\.\.1024"),
        ({**spec(k=[4]), "flit_widht": 32}, r"^flit_widht: unknown key .*'flit_width'\?$"),
        (
            {**spec(k=[4]), "routing": {"name": "dor", "dateline": False}},
            r"^routing\.dateline: unknown key .*did you mean 'datelines'\?$",
        ),
        (
            spec(k=[64, 64, 16]),
            rf"^topology: gives 65536 switches, over the limit of {MAX_SWITCHES}",
        ),
        (
            spec(k=[64, 64, 4]),
            rf"^topology: gives 16384 endpoints, over the limit of {MAX_ENDPOINTS}",
        ),
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


@pytest.mark.parametrize(
    ("stem", "name"), [("my spec", "my-spec"), (".hidden ring", "hidden-ring"), ("...", "fabric")]
)
def test_a_file_stem_that_is_no_name_is_made_one(tmp_path, stem, name):
    path = tmp_path / f"{stem}.yaml"
    path.write_text("topology: {kind: torus, k: [8]}\n")
    assert load_spec(path).name == name


def test_spec_is_frozen():
    loaded = load_spec(spec(k=[4]))
    with pytest.raises(AttributeError):
        loaded.name = "other"


# ---- all errors at once ------------------------------------------------------------------------


def test_independent_errors_are_reported_together():
    data = {
        "name": "t",
        "topology": {"kind": "torus", "k": [1, 4, "x"]},
        "routing": "xy",
        "flit_width": 2,
        "bufer_depth": 4,
    }
    with pytest.raises(SpecError) as caught:
        load_spec(data)
    assert caught.value.lines == [
        "topology.k[0]: must be an integer >= 2, got 1",
        "topology.k[2]: must be an integer >= 2, got 'x'",
        "routing: must be one of dor, duato, got 'xy'",
        "flit_width: must be an integer in 8..1024, got 2",
        "bufer_depth: unknown key (known: buffer_depth, description, faults, flit_width, "
        "link_latency, name, packet_length, router, routing, topology, traffic); did you mean "
        "'buffer_depth'?",
    ]
    # one line per error; every line after the first carries the CLI's prefix
    assert str(caught.value).split("\nzfabric: error: ") == caught.value.lines
    assert caught.value.path == "topology.k[0]"


def test_keys_that_depend_on_a_bad_kind_are_skipped():
    data = {"topology": {"kind": "tor", "k": [4]}, "routing": "dor", "flit_width": 1}
    with pytest.raises(SpecError) as caught:
        load_spec(data)
    assert [line.split(":")[0] for line in caught.value.lines] == ["topology.kind", "flit_width"]


def test_a_single_error_is_one_line():
    with pytest.raises(SpecError) as caught:
        load_spec(spec(k=[4, 1]))
    assert str(caught.value) == "topology.k[1]: must be an integer >= 2, got 1"
    assert caught.value.errors == (caught.value,)


def test_the_error_count_is_capped():
    data = {"topology": {"kind": "torus", "k": [4]}, **{f"extra{i}": i for i in range(50)}}
    with pytest.raises(SpecError) as caught:
        load_spec(data)
    lines = str(caught.value).split("\n")
    assert len(caught.value.errors) == MAX_ERRORS
    assert len(lines) == MAX_ERRORS + 1
    assert (
        lines[-1]
        == f"zfabric: error: (stopped after {MAX_ERRORS} errors; fix these and check again)"
    )


# ---- bounded inputs ----------------------------------------------------------------------------


def test_quoted_values_are_cut_short():
    text = describe("x" * 1000)
    assert len(text) == VALUE_CHARS and text.startswith("'xxx") and "..." in text
    huge = 10**5000  # repr() of this raises ValueError
    assert describe(huge) == "<an integer of about 5001 digits>"
    bomb = ["lol"] * 9
    for _ in range(8):
        bomb = [bomb] * 9
    assert len(describe(bomb)) <= len("a list ") + VALUE_CHARS


def test_long_lists_are_refused_before_their_entries_are_read():
    with pytest.raises(SpecError) as caught:
        load_spec(spec(k=["bad"] * 15000))
    assert str(caught.value).startswith(
        f"topology.k: must have at most {MAX_LIST_LENGTH} entries, got 15000: ['bad', 'bad'"
    )


def test_integers_without_a_range_are_bounded():
    with pytest.raises(SpecError, match=r"^topology\.k\[0\]: must be at most 1000000 \(no fabric"):
        load_spec(spec(k=[10**7]))


# ---- YAML files --------------------------------------------------------------------------------


def write(tmp_path, content: str | bytes):
    path = tmp_path / "s.yaml"
    path.write_bytes(content.encode() if isinstance(content, str) else content)
    return path


def test_duplicate_keys_name_the_path_and_both_lines(tmp_path):
    text = "name: a\ntopology:\n  kind: torus\n  k: [4]\n  k: [8]\nname: b\n"
    with pytest.raises(SpecError) as caught:
        load_spec(write(tmp_path, text))
    assert caught.value.lines == [
        "topology.k: duplicate key (lines 4 and 5); keep one",
        "name: duplicate key (lines 1 and 6); keep one",
    ]


def test_merge_keys_are_not_duplicates(tmp_path):
    text = "topology:\n  <<: {kind: torus, k: [3]}\n  k: [4]\n"
    assert load_spec(write(tmp_path, text)).params.k == (4,)


def test_non_utf8_is_refused(tmp_path):
    with pytest.raises(SpecError, match=r"s\.yaml: not UTF-8 text \(byte 0xe9 at offset 9\)"):
        load_spec(write(tmp_path, b"name: caf\xe9\n"))


def test_a_bad_scalar_gives_its_line(tmp_path):
    with pytest.raises(SpecError, match=r"bad YAML value at line 2, column 7: bad value '2024-13"):
        load_spec(write(tmp_path, "name: x\nwhen: 2024-13-01\n"))


def test_the_top_level_must_be_a_mapping(tmp_path):
    with pytest.raises(SpecError, match=r"s\.yaml: the spec must be a mapping of keys, got a list"):
        load_spec(write(tmp_path, "- a\n- b\n"))


def test_oversized_files_are_refused_unread(tmp_path):
    with pytest.raises(SpecError, match=r"larger than 64 KiB"):
        load_spec(write(tmp_path, "description: " + "x" * MAX_SPEC_BYTES + "\n"))


# ---- mesh --------------------------------------------------------------------------------------


def test_mesh_is_a_torus_without_wrap():
    mesh = load_spec({"name": "m", "topology": {"kind": "mesh", "k": [3, 4]}})
    torus = load_spec({"name": "m", "topology": {"kind": "torus", "k": [3, 4], "wrap": False}})
    assert (mesh.kind, mesh.topology) == ("mesh", "torus")
    assert compile_plan(mesh).to_json() == compile_plan(torus).to_json()
    with pytest.raises(SpecError, match=r"^topology\.wrap: unknown key \(known: k, kind, vcs\)$"):
        load_spec({"name": "m", "topology": {"kind": "mesh", "k": [3], "wrap": True}})


def test_exactly_the_cap_is_not_cut():
    data = {"topology": {"kind": "torus", "k": [4]}, **{f"extra{i}": i for i in range(MAX_ERRORS)}}
    with pytest.raises(SpecError) as caught:
        load_spec(data)
    assert len(caught.value.errors) == MAX_ERRORS
    assert "stopped" not in str(caught.value)


@pytest.mark.parametrize(
    "data, message",
    [
        (
            {"name": "t", "Topology": {"kind": "torus", "k": [4]}},
            "topology: missing required key (found unknown key 'Topology': did you mean"
            " 'topology'?)",
        ),
        (
            spec(K=[4]),
            "topology.k: missing required key (found unknown key 'K': did you mean 'k'?)",
        ),
        (
            spec(kk=[4]),
            "topology.k: missing required key (found unknown key 'kk': did you mean 'k'?)",
        ),
    ],
)
def test_a_misspelt_required_key_is_reported_once(data, message):
    """The missing key's error names the present key that looks like it (a key's case, or a
    close spelling); that key is not reported a second time as unknown."""
    with pytest.raises(SpecError) as raised:
        load_spec(data)
    assert [str(error) for error in raised.value.errors] == [message]


def test_a_misspelt_key_is_one_line_on_the_command_line(tmp_path, capsys):
    from zfabric.cli import main

    path = tmp_path / "wrong-case.yaml"
    path.write_text("name: x\nTopology: {kind: torus, k: [4, 4]}\n")
    assert main(["check", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.count("Topology") == 1
