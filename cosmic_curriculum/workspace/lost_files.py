"""A workspace whose state or history file is gone while its progress is not is refused,
never started afresh."""

from __future__ import annotations

from pathlib import Path

from cosmic_curriculum.errors import StateError
from cosmic_curriculum.system.fsio import read_json
from cosmic_curriculum.vcs.gitcmd import GitRunError, run_git
from cosmic_curriculum.workspace.layout import Layout


def check_nothing_lost(workspace: Path) -> None:
    """Refuse a workspace whose state or history file is gone while its progress is not.

    A missing state would be a fresh start (retraining everything, overwriting bots) and a
    missing history would lose records on the next append: both only when nothing shows
    earlier progress (the other file, trainer logs, trained bots, git HEAD).
    """
    paths = Layout(Path(workspace))
    for lost, other in ((paths.state, paths.history), (paths.history, paths.state)):
        if lost.exists() or lost.is_symlink():
            continue
        evidence = _progress_evidence(paths, other, lost.name)
        if evidence:
            raise StateError(
                f"{lost}: missing, but this workspace has progress ({evidence}); restore it "
                f"with `git -C {paths.root} checkout HEAD -- {lost.name}` (or from a "
                "backup) instead of starting over"
            )


def _progress_evidence(paths: Layout, other: Path, lost_name: str) -> str:
    if other.is_file():
        try:
            data = read_json(other, other.name)
        except StateError:
            data = None
        if data and (
            (isinstance(data, list) and len(data) > 0)
            or (isinstance(data, dict) and (data.get("log") or data.get("stage_index")))
        ):
            return f"{other.name} has entries"
    logs = sorted(paths.logs.glob("curric-*.log")) if paths.logs.is_dir() else []
    if logs:
        return f"{paths.rel(logs[0])} exists"
    bots = sorted(paths.bots.glob("curric-*.json")) if paths.bots.is_dir() else []
    if bots:
        return f"{paths.rel(bots[0])} exists"
    if _committed_in_head(paths.root, lost_name):
        return f"git HEAD has {lost_name}"
    return ""


def _committed_in_head(root: Path, name: str) -> bool:
    """Does git HEAD hold ``name`` in this directory? (no repository, no git: no)"""
    try:
        return run_git(["cat-file", "-e", f"HEAD:./{name}"], root, check=False).ok
    except GitRunError:  # git missing, or no answer within the git timeout
        return False
