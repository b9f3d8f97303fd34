"""A workspace whose state or history file is gone, though something says it existed, is
refused, never started afresh.

"Missing" means "was there": the history counts as lost only when the state names one of
its records, the state only when a curriculum log, bot or evaluation exists, either when
git has or had it. The seed's layout (and any workspace not made
by `init`) has no `eval_history.json` until its first evaluation, so a trainer's log
alone proves nothing about the history: a run killed during the first training must
resume, and `status` must show that training. The remedy names a copy that exists (git
HEAD, the commit before the one that deleted it), else a backup.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from cosmic_curriculum.errors import ConfigError, StateError
from cosmic_curriculum.system.fsio import read_json
from cosmic_curriculum.vcs.gitcmd import GitRunError, run_git
from cosmic_curriculum.workspace.layout import Layout


def check_nothing_lost(workspace: Path) -> None:
    """Refuse a workspace whose state or history file is missing although it existed.

    A missing state would be a fresh start (retraining everything, overwriting bots) and a
    missing history would lose records on the next append.
    """
    paths = Layout(Path(workspace))
    for lost, evidence in (
        (paths.state, _state_evidence),
        (paths.history, _history_evidence),
    ):
        if lost.exists() or lost.is_symlink():
            continue
        found = evidence(paths) or _git_evidence(paths.root, lost.name)
        if found:
            raise StateError(
                f"{lost}: missing, but {found}; {restore_hint(paths.root, lost.name)} "
                "instead of starting over"
            )


def check_config_not_lost(workspace: Path, config_path: Path) -> None:
    """Refuse a workspace's own missing stages.toml when it existed (the state recorded
    its hash, or git has or had it): `init` would be the wrong fix for a curriculum that
    ran. Another ``--config`` file, or one never there, is left to the config loader."""
    paths = Layout(Path(workspace))
    if Path(config_path).resolve() != paths.config.resolve():
        return
    if paths.config.exists() or paths.config.is_symlink():
        return
    recorded = _json_dict(paths.state).get("config_hash")
    found = (
        f"{paths.state.name} recorded its hash"
        if isinstance(recorded, str) and recorded
        else _git_evidence(paths.root, paths.config.name)
    )
    if found:
        raise ConfigError(
            f"{paths.config}: missing, but {found}; "
            f"{restore_hint(paths.root, paths.config.name)} (or pass --config PATH)"
        )


def restore_hint(root: Path, name: str) -> str:
    """How to get ``name`` (relative to ``root``) back: from git HEAD, else from the commit
    before the one that deleted it, else from a backup (no command that cannot work)."""
    where = shlex.quote(str(root))
    if _git_ok(root, ["cat-file", "-e", f"HEAD:./{name}"]):
        return f"restore it with `git -C {where} checkout HEAD -- {shlex.quote(name)}`"
    deleted_in = _last_commit_touching(root, name)
    if deleted_in:
        return (
            f"restore it with `git -C {where} checkout {deleted_in}~1 -- {shlex.quote(name)}` "
            f"(commit {deleted_in} deleted it)"
        )
    return "restore it from a backup (git has no copy of it)"


RECORD_SEARCH_COMMITS = 20  # how far back git's copies are searched for a lost record


def record_restore_hint(root: Path, name: str, record_id: str) -> str:
    """How to get back the record ``record_id`` of the JSON list ``name``: the newest of
    git's last copies of the file that holds it (a catch-up commit may already have
    committed the file without it), else a backup."""
    try:
        listed = run_git(
            ["rev-list", "-n", str(RECORD_SEARCH_COMMITS), "HEAD", "--", f"./{name}"],
            root,
            check=False,
        )
        commits = listed.stdout.split() if listed.ok else []
        for sha in commits:
            shown = run_git(["show", f"{sha}:./{name}"], root, check=False)
            if shown.ok and f'"{record_id}"' in shown.stdout:
                return (
                    f"restore it with `git -C {shlex.quote(str(root))} show "
                    f"{sha[:12]}:./{shlex.quote(name)} > {shlex.quote(str(root / name))}`"
                )
    except GitRunError:
        pass
    return f"restore {name} from a backup (git has no copy with that record)"


def _state_evidence(paths: Layout) -> str:
    """What says the state existed: the curriculum saves it before it launches a trainer
    (whose log and bot then appear) and before it appends an evaluation of its own."""
    for record in _json_list(paths.history):
        if isinstance(record, dict) and record.get("curriculum_experiment"):
            return f"{paths.history.name} holds evaluations of the curriculum"
    logs = sorted(paths.logs.glob("curric-*.log")) if paths.logs.is_dir() else []
    if logs:
        return f"{paths.rel(logs[0])} exists"
    bots = sorted(paths.bots.glob("curric-*.json")) if paths.bots.is_dir() else []
    if bots:
        return f"{paths.rel(bots[0])} exists"
    return ""


def _history_evidence(paths: Layout) -> str:
    """What says the history existed: the state names an evaluation record, or counted
    records before an evaluation command ran. A trainer's log does not: the history is
    written by the first evaluation, not by the first training."""
    state = _json_dict(paths.state)
    flight = state.get("in_flight")
    for item in _records_of([*_list(state.get("log")), flight]):
        if isinstance(item.get("eval_id"), str) and item["eval_id"]:
            return f"{paths.state.name} names its evaluation {item['eval_id']}"
        before = item.get("history_before")
        if type(before) is int and before > 0:
            return f"{paths.state.name} counted {before} record(s) in it"
    return ""


def _records_of(holders: list[Any]) -> list[dict[str, Any]]:
    """Log entries and the attempt in flight, each followed by its candidates."""
    found: list[dict[str, Any]] = []
    for holder in holders:
        if isinstance(holder, dict):
            found.append(holder)
            found += [c for c in _list(holder.get("candidates")) if isinstance(c, dict)]
    return found


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _git_evidence(root: Path, name: str) -> str:
    if _git_ok(root, ["cat-file", "-e", f"HEAD:./{name}"]):
        return f"git HEAD has {name}"
    deleted_in = _last_commit_touching(root, name)
    return f"git commit {deleted_in} deleted {name}" if deleted_in else ""


def _last_commit_touching(root: Path, name: str) -> str:
    """The last commit of HEAD's history that changed ``name`` (when HEAD lacks it: the one
    that deleted it), or "" (never committed, no repository, no git)."""
    try:
        result = run_git(["rev-list", "-n", "1", "HEAD", "--", f"./{name}"], root, check=False)
    except GitRunError:
        return ""
    sha = result.stdout.strip() if result.ok else ""
    return sha[:12] if sha else ""


def _git_ok(root: Path, args: list[str]) -> bool:
    try:
        return run_git(args, root, check=False).ok
    except GitRunError:  # git missing, or no answer within the git timeout
        return False


def _json_of(path: Path) -> Any:
    if not path.is_file():
        return None
    try:
        return read_json(path, path.name)
    except StateError:
        return None  # a damaged file is refused by its own loader, with its own message


def _json_list(path: Path) -> list[Any]:
    return _list(_json_of(path))


def _json_dict(path: Path) -> dict[str, Any]:
    data = _json_of(path)
    return data if isinstance(data, dict) else {}
