#!/usr/bin/env bash
# Install the project with its dev tools, then lint, type-check and run every test
# (slow end-to-end tests included, the Slurm ones against a cluster they start).
# Usage: scripts/test.sh [extra pytest args]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install.sh dev
scripts/install_slurm.sh  # the Slurm tests' daemons (as root; skips when present)
export PATH="$PWD/.venv/bin:$PATH"
ruff check .
ruff format --check .
mypy
pytest "$@"
