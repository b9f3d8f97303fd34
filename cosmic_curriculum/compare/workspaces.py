"""Each arm × seed's sub-workspace, ``compare/<arm>-s<seed>/``: made once, complete or not
at all (built beside, then renamed), and checked on every later compare.

A sub-workspace is a workspace like any other (`run` trains and resumes it): the derived
stages.toml, a copy of what the parent's file refers to (its scripts, its bots that are
not trained experiments, an env module of its own), and a git repository of its own
(``compare/`` is ignored by the parent's, so an arm's commits never land there).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from cosmic_curriculum.errors import CompareError
from cosmic_curriculum.system import fsio
from cosmic_curriculum.workspace import layout as L

# What a parent's run made (or a compare): never copied into an arm.
NOT_COPIED = {
    L.STATE_FILE,
    L.HISTORY_FILE,
    L.LOCK_FILE,
    L.PENDING_COMMIT_FILE,
    L.CONFIG_FILE,
    L.REPORT_FILE,
    L.REPORT_HTML,
    "logs",
    "checkpoints",
    "bots",
    ".git",
}


# The arms are repositories of their own; the study's results are the parent's.
IGNORE = (
    "# cosmic-curriculum compare: the arms are their own repositories\n"
    "*\n!.gitignore\n!compare.json\n!compare.png\n!REPORT.md\n"
)


def compare_root(ws: Path, dirname: str) -> Path:
    """``compare/``, made with a .gitignore that keeps its arms out of the parent's git
    (and lets the study's results in)."""
    root = ws / dirname
    root.mkdir(exist_ok=True)
    ignore = root / ".gitignore"
    if not ignore.exists():
        fsio.atomic_write_text(ignore, IGNORE)
    return root


def prepare(ws: Path, root: Path, name: str, config_text: str) -> Path:
    """The sub-workspace ``root/name`` with ``config_text`` as its stages.toml: made now if
    it does not exist, else refused when its file is not ``config_text`` (the parent's
    stages.toml changed since the arm started)."""
    sub = root / name
    if sub.exists():
        try:
            have = (sub / L.CONFIG_FILE).read_text()
        except (OSError, UnicodeDecodeError):
            have = None
        if have != config_text:
            raise CompareError(
                f"{sub / L.CONFIG_FILE}: not what stages.toml derives for this arm now (the "
                f"workspace's stages.toml changed since the arm started); restore stages.toml, "
                f"or remove {sub} to train the arm again"
            )
        return sub
    building = root / f".building-{name}"
    shutil.rmtree(building, ignore_errors=True)  # a kill mid-build leaves half of one
    building.mkdir()
    _copy_inputs(ws, building, skip=root.name)
    fsio.atomic_write_text(building / L.CONFIG_FILE, config_text)
    _git_init(building)
    building.rename(sub)
    fsio.fsync_dir(root)
    return sub


def _copy_inputs(ws: Path, dest: Path, skip: str) -> None:
    for entry in sorted(ws.iterdir()):
        if entry.name in NOT_COPIED or entry.name == skip or entry.is_symlink():
            continue
        if entry.is_dir():
            shutil.copytree(entry, dest / entry.name, symlinks=True)
        elif entry.is_file():
            shutil.copy2(entry, dest / entry.name)
    bots = ws / "bots"
    if bots.is_dir():
        # Reference bots come along; the parent's trained experiments do not.
        (dest / "bots").mkdir()
        for bot in sorted(bots.iterdir()):
            if bot.is_file() and not bot.is_symlink() and not bot.name.startswith("curric-"):
                shutil.copy2(bot, dest / "bots" / bot.name)


def _git_init(sub: Path) -> None:
    from cosmic_curriculum.vcs import repo as vcs
    from cosmic_curriculum.vcs.gitcmd import GitRunError, run_git

    if vcs.git_executable() is None:
        return  # `run` says so once per arm; it trains without commits
    try:
        run_git(["init", "-q"], sub)
    except GitRunError:
        return
