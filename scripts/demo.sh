#!/usr/bin/env bash
# The main job: install, run the quick curriculum on the embedded Cosmic Clash arena in a
# fresh workspace, then score the final bot against rookie and against veteran over 200
# seat-swapped episodes each.
# Usage: scripts/demo.sh [WORKSPACE]   (default: workspaces/quick-<timestamp>)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install.sh
cc=.venv/bin/cosmic-curriculum
ws="${1:-workspaces/quick-$(date +%Y%m%d-%H%M%S)}"
"$cc" init "$ws" --preset quick
start=$(date +%s)
# --no-push: a demo workspace has no remote. Exit 1 here means a stage blocked for
# review: the message says why and which two commands continue.
"$cc" run --workspace "$ws" --no-push
echo "curriculum finished in $(( $(date +%s) - start )) s"
final=$(.venv/bin/python - "$ws/curriculum_state.json" <<'PY'
import json, sys
state = json.load(open(sys.argv[1]))
print([e for e in state["log"] if e["decision"] == "pass"][-1]["experiment"])
PY
)
for ref in rookie veteran; do
    echo "final bot: $ws/bots/$final.json — 200 paired episodes against $ref:"
    "$cc" evaluate "$ws/bots/$final.json" "$ws/bots/$ref.json" --episodes 200 --seed 2026 \
        --history "$ws/eval_history.json"
done
