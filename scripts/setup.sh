#!/usr/bin/env bash
# Idempotent set-up on a fresh Debian machine with Python 3.11: a virtualenv in .venv built from
# pyproject.toml with the dev, rtl, fpga, formal, study and docs extras (reinstalled only when
# pyproject.toml changes), and Icarus Verilog where missing.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v iverilog >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ]; then
        echo "setup: installing Icarus Verilog (apt-get)" >&2
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq iverilog >/dev/null
    else
        echo "setup: iverilog missing; run: sudo apt-get install iverilog" >&2
    fi
fi

python=$(command -v python3.11 || command -v python3)
stamp=.venv/.pyproject.sha256
want=$(sha256sum pyproject.toml | cut -d' ' -f1)
if [ ! -x .venv/bin/python ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    echo "setup: building .venv from pyproject.toml" >&2
    "$python" -m venv .venv
    .venv/bin/python -m pip install -q --upgrade pip
    .venv/bin/python -m pip install -q -e '.[dev,rtl,fpga,formal,study,docs]'
    echo "$want" > "$stamp"
fi
