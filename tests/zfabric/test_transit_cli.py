"""Transit on the command line: ``check`` reports the RN1 chips (counted in the plan and by the
seed's formula), the unit trees and the proof, in text and JSON; the commands that build RTL
refuse heads of several flits (the RN1 route unit drops whole bytes, with no head-flit
counts)."""

from __future__ import annotations

import json

import pytest
from test_adaptive import RTL_COMMANDS, rtl_command

from zfabric.cli import main

FULL_64 = "name: t\ntopology: {kind: transit, form: full}\nrouting: transit\n"


def test_check_reports_chips_and_unit_trees(tmp_path, capsys):
    spec = tmp_path / "t.yaml"
    spec.write_text(FULL_64)
    assert main(["check", str(spec)]) == 0
    text = capsys.readouterr().out
    # one UT64x2 (Table 3.4): 52 chips, 84 switches (16 + 16 alternate-mode chips are halves)
    assert "  endpoints 64, switches 84, links 256 (+256 endpoint links)" in text
    assert "  RN1 chips: 52 (formula 52): 1 UT64x2" in text
    assert "  deadlock-free: yes (channel dependency graph is acyclic)" in text
    assert main(["check", "--json", str(spec)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["transit"] == {
        "form": "full",
        "chips": 52,
        "chips_by_formula": 52,
        "unit_trees": {"UT64x2": 1},
    }
    assert (report["endpoints"], report["switches"], report["deadlock_free"]) == (64, 84, True)


def test_check_reports_leaves_of_a_bidelta_and_its_stages(tmp_path, capsys):
    spec = tmp_path / "b.yaml"
    spec.write_text("topology: {kind: transit, form: bidelta, stacks: [1, 2]}\n")
    assert main(["check", "--json", str(spec)]) == 0
    report = json.loads(capsys.readouterr().out)
    # Table 4.8: 64 processors, 3 stages of 16 chips; the last stage's halves count twice
    assert report["transit"] == {
        "form": "bidelta",
        "chips": 48,
        "chips_by_formula": 48,
        "unit_trees": {},
        "stages": 3,
    }
    assert report["switches"] == 64


@pytest.mark.parametrize("command", RTL_COMMANDS)
def test_rtl_commands_refuse_transit_heads_of_several_flits(tmp_path, capsys, command):
    text = FULL_64 + "router: {head_bits: 8}\n"
    assert rtl_command(tmp_path, command, text) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        f"zfabric: error: router.head_bits: 8 with the routing 'transit': zfabric {command}"
        " builds its heads whole in the first flit only (leave head_bits out; check and"
        " simulate can)"
    ]
    assert not (tmp_path / "out").exists()
