#!/usr/bin/env bash
# Start the curriculum in a detached tmux session named after the workspace, logging to
# logs/curriculum.log; if that session already runs, print how to attach instead.
#
#   scripts/curriculum.sh [run options...]      e.g. --workspace DIR --no-push
#
# The workspace defaults to this repository; any `cosmic-curriculum run` option can follow
# (a later --workspace wins). Same as `cosmic-curriculum run --detach`.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
python="${COSMIC_CURRICULUM_PYTHON:-}"
if [[ -z "$python" ]]; then
    if [[ -x "$root/.venv/bin/python" ]]; then
        python="$root/.venv/bin/python"
    else
        python="$(command -v python3)"
    fi
fi
exec "$python" -m cosmic_curriculum run --detach --workspace "$root" "$@"
