"""Commit a finished experiment's bot, log and curve, then push (what run_training.sh calls).

``python -m cosmic_curriculum.train.publish EXPERIMENT [--workspace DIR]`` commits only
``bots/EXPERIMENT.json``, ``logs/EXPERIMENT.log`` and ``logs/EXPERIMENT.curve.png`` (those
that exist) and pushes the branch, through the curriculum's own commit
(:func:`vcs.commit_paths`): a log over 1 MiB is committed as its tail (the whole log stays
on disk), the repository's hooks run, every git command has a timeout. A failed push is a
warning naming git's reason (exit 0: training results are committed locally and the next
push carries them); a failed commit exits 1 with one line. Checkpoints are not committed:
they are large and contain pickles.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from cosmic_curriculum.defaults import PUSH_TIMEOUT_SECONDS, seconds_problem
from cosmic_curriculum.errors import ConfigError, CurriculumError
from cosmic_curriculum.workspace.layout import published_paths


def publish(
    workspace: Path, experiment: str, push_timeout: float = PUSH_TIMEOUT_SECONDS
) -> tuple[bool, bool]:
    """Commit the experiment's paths and push. Returns (committed, pushed_ok)."""
    from cosmic_curriculum.vcs import repo as vcs

    committed = vcs.commit_paths(
        workspace,
        published_paths(experiment),
        f"Train {experiment}: bot, log and learning curve",
    )
    ok, message = vcs.push(workspace, timeout=push_timeout)
    if not ok:
        sys.stderr.write(f"warning: push failed ({message}); the commit stays local\n")
    return committed, ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m cosmic_curriculum.train.publish")
    parser.add_argument("experiment")
    parser.add_argument("--workspace", type=Path, default=Path("."))
    parser.add_argument("--push-timeout", type=float, default=PUSH_TIMEOUT_SECONDS)
    args = parser.parse_args(argv)
    try:
        if (problem := seconds_problem(args.push_timeout, "push")) is not None:
            raise ConfigError(f"--push-timeout {problem}")
        committed, _ = publish(args.workspace, args.experiment, args.push_timeout)
    except CurriculumError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return exc.exit_code
    print(
        f"committed {args.experiment}'s bot and log"
        if committed
        else f"nothing new to commit for {args.experiment}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
