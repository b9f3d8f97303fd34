#!/usr/bin/env bash
# The reference training command of cosmic-curriculum.
#
#   scripts/run_training.sh EXPERIMENT --timesteps N --n-parallel N --speedup N [flags...]
#
# Run from the workspace. Trains with `python -m cosmic_curriculum train` (interpreter:
# $COSMIC_CURRICULUM_PYTHON, default python3), which leaves checkpoints/EXPERIMENT/final.zip,
# bots/EXPERIMENT.json and its ONNX twin bots/EXPERIMENT.onnx. The trainer's exit code passes through (2 = bad flags,
# 130/143/138 = stopped by SIGINT/SIGTERM/SIGUSR1 after saving a checkpoint and a partial bot).
#
# With COSMIC_CURRICULUM_NO_GIT=1 (the orchestrator sets it and commits the same paths
# itself, and appends our output to the log) this is only the trainer. Otherwise:
#   1. git pull --ff-only when the branch has an upstream (a failure is a warning),
#   2. train, appending all output to logs/EXPERIMENT.log,
#   3. on success commit bots/EXPERIMENT.json and the log (and the learning-curve PNG)
#      -- only those paths -- and push (a failed push is a warning). The ONNX twin is
#      left for you to commit (or regenerate with `cosmic-curriculum export-onnx`); the
#      curriculum commits it with the rest.
set -u

PY="${COSMIC_CURRICULUM_PYTHON:-python3}"
# The workspace is the working directory: keep it off the front of Python's sys.path, so
# that a file of it named like a standard or installed module (random.py) replaces nothing.
export PYTHONSAFEPATH=1

if [ "${COSMIC_CURRICULUM_NO_GIT:-0}" = "1" ] || [ $# -eq 0 ] || [[ "$1" == -* ]]; then
    # No git work (or no experiment name: the trainer prints the usage error, exit 2).
    exec "$PY" -m cosmic_curriculum train "$@"
fi

experiment="$1"
if ! [[ "$experiment" =~ ^[A-Za-z0-9][A-Za-z0-9_.-]*$ ]]; then
    echo "error: run_training.sh: experiment name '$experiment' must be letters, digits, '_', '-' or '.'" >&2
    exit 2
fi

in_repo=0
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    in_repo=1
    if git rev-parse --abbrev-ref --symbolic-full-name '@{u}' >/dev/null 2>&1; then
        if ! GIT_TERMINAL_PROMPT=0 timeout 60 git pull --ff-only --quiet; then
            echo "warning: run_training.sh: git pull --ff-only failed; training on the local state" >&2
        fi
    fi
fi

mkdir -p logs
log="logs/${experiment}.log"

# The trainer runs in the background so this shell can forward SIGTERM/SIGHUP and SIGUSR1
# (a batch scheduler's warning before a time limit) to it (it then saves a checkpoint and a
# partial bot, and exits 128 + the signal). A terminal's Ctrl-C reaches the whole
# foreground group, the trainer included; `tee -i` ignores it so the last lines still land.
"$PY" -m cosmic_curriculum train "$@" > >(tee -ia "$log") 2>&1 &
child=$!
forward() { kill -s "$1" "$child" 2>/dev/null; }
trap 'forward TERM' TERM
trap 'forward USR1' USR1
trap 'forward TERM' HUP
trap 'forward INT' INT
rc=0
while :; do
    wait "$child"
    rc=$?
    # wait returns early (status > 128) when a trapped signal arrives; the child lives on.
    kill -0 "$child" 2>/dev/null || break
done
wait  # the tee of the process substitution
trap - TERM USR1 HUP INT

if [ "$rc" -ne 0 ]; then
    exit "$rc"
fi
if [ "$in_repo" = "1" ]; then
    if ! "$PY" -m cosmic_curriculum.train.publish "$experiment"; then
        echo "warning: run_training.sh: could not commit ${experiment}'s bot and log" >&2
    fi
fi
exit 0
