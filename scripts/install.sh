#!/usr/bin/env bash
# Create .venv and install the project into it.
# torch goes first, pinned to the CPU build, so that stable-baselines3's plain
# `torch` requirement is already satisfied and never pulls a multi-GB CUDA build.
set -euo pipefail
cd "$(dirname "$0")/.."
extras="${1:-}"
python3 -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -c constraints.txt "torch==2.13.0"
if [[ -n $extras ]]; then
    .venv/bin/python -m pip install -q -c constraints.txt -e ".[$extras]"
else
    .venv/bin/python -m pip install -q -c constraints.txt -e .
fi
