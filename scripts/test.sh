#!/usr/bin/env bash
# Install the project with its dev tools, then lint, type-check and run every test
# (slow end-to-end tests included). Usage: scripts/test.sh [extra pytest args]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install.sh dev
export PATH="$PWD/.venv/bin:$PATH"
ruff check .
ruff format --check .
mypy
pytest "$@"
