"""`cosmic-curriculum init`: a fresh workspace from a preset.

A workspace is a directory holding `stages.toml`, `curriculum_state.json`,
`eval_history.json`, `bots/`, `checkpoints/`, `logs/` and the training script; usually
its own git repository, so progress is committed as it happens.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from cosmic_curriculum import DATA_DIR
from cosmic_curriculum.defaults import BARE_PRESET, PRESET
from cosmic_curriculum.errors import ConfigError, CurriculumError
from cosmic_curriculum.system.fsio import atomic_write_json, atomic_write_text
from cosmic_curriculum.workspace.config_file import ARENA_PRESETS, preset_path
from cosmic_curriculum.workspace.layout import (
    DETACHED_LOG,
    HISTORY_FILE,
    LOCK_FILE,
    PENDING_COMMIT_FILE,
    REPORT_HTML,
    STATE_FILE,
)
from cosmic_curriculum.workspace.state import CurriculumState
from cosmic_curriculum.workspace.state_file import save_state

GITIGNORE = f"""# cosmic-curriculum workspace
checkpoints/
{LOCK_FILE}
{PENDING_COMMIT_FILE}
{REPORT_HTML}
# the detached run's console (plain text, appended by every `run --detach`)
logs/{DETACHED_LOG}
# temp files of interrupted atomic writes
.*.tmp-*
__pycache__/
# the trackers' outbox and local stores (docs/TRACKING.md)
logs/tracking/
logs/tensorboard/
mlruns/
wandb/
"""
# Environment variables carried into the tmux session (the tmux server may be older than
# this shell and would otherwise start the run with its own, stale environment).
SESSION_ENV_PREFIXES = ("COSMIC_CURRICULUM_", "FAKE_TRAINER_", "FAKE_EVAL_")
SESSION_ENV_NAMES = ("PATH", "PYTHONPATH", "VIRTUAL_ENV", "HOME")
TMUX_SOCKET_ENV = "COSMIC_CURRICULUM_TMUX_SOCKET"


def is_workspace(path: Path) -> bool:
    return (path / "stages.toml").is_file() and (path / STATE_FILE).is_file()


@dataclass
class InitResult:
    workspace: Path
    created: list[str]
    notes: list[str]
    already: bool


# The scripted bots every workspace gets, as bots/<name>.json.
SCRIPTED_BOTS = ("rookie", "veteran")


def _write_scripted(ws: Path, name: str) -> None:
    """Write ``bots/<name>.json`` from the package's own definition of the bot."""
    from cosmic_curriculum import bots  # numpy: only when a bot file is written

    documents = {"rookie": bots.rookie_document, "veteran": bots.veteran_document}
    bots.save_bot(ws / "bots" / f"{name}.json", documents[name]())


def init_workspace(path: Path, preset: str = PRESET) -> InitResult:
    """Create a fresh workspace at ``path`` (or fill in what an existing one lacks).

    Never overwrites a file; refuses a non-empty directory that is not a workspace. Only
    the arena's presets get its bots and training script: the bare preset's trainer,
    evaluator and reference are the user's (docs/ENVIRONMENTS.md), and an env preset
    (doorkey, connect4) trains with the built-in `train-env` against `{builtin = "random"}`.
    """
    ws = Path(path).resolve()
    source = preset_path(preset)
    already = ws.is_dir() and is_workspace(ws)
    if ws.exists() and not ws.is_dir():
        raise ConfigError(f"{ws}: exists and is not a directory; choose another WORKSPACE")
    # An empty git repository (only `.git`, e.g. a fresh clone) counts as empty.
    if ws.is_dir() and any(p.name != ".git" for p in ws.iterdir()) and not already:
        raise ConfigError(
            f"{ws}: directory is not empty and is not a cosmic-curriculum workspace "
            "(no stages.toml + curriculum_state.json); choose an empty or new directory"
        )
    ws.mkdir(parents=True, exist_ok=True)
    created: list[str] = []
    notes: list[str] = []
    for sub in ("bots", "logs", "scripts", "checkpoints"):
        (ws / sub).mkdir(exist_ok=True)
    if not (ws / "stages.toml").exists():
        atomic_write_text(ws / "stages.toml", source.read_text(encoding="utf-8"))
        created.append("stages.toml")
    arena = preset in ARENA_PRESETS
    for name in SCRIPTED_BOTS if arena else ():
        bot = f"bots/{name}.json"
        if not (ws / bot).exists():
            _write_scripted(ws, name)
            created.append(bot)
    trainer = ws / "scripts" / "run_training.sh"
    shipped_trainer = DATA_DIR / "run_training.sh"
    if preset == BARE_PRESET:
        notes.append(
            "fill in training_command, evaluation_command and reference_bot in "
            "stages.toml (docs/ENVIRONMENTS.md; examples/gymnasium/ is a complete pair)"
        )
    notes += _missing_extras(preset)
    if arena and not trainer.exists():
        if shipped_trainer.is_file():
            shutil.copyfile(shipped_trainer, trainer)
            trainer.chmod(0o755)
            created.append("scripts/run_training.sh")
        else:
            notes.append(
                "the training script is not part of this installation yet: point "
                "training_command in stages.toml at your trainer"
            )
    if not (ws / STATE_FILE).exists():
        save_state(ws / STATE_FILE, CurriculumState())
        created.append(STATE_FILE)
    if not (ws / HISTORY_FILE).exists():
        atomic_write_json(ws / HISTORY_FILE, [])
        created.append(HISTORY_FILE)
    if not (ws / ".gitignore").exists():
        atomic_write_text(ws / ".gitignore", GITIGNORE)
        created.append(".gitignore")
    notes += _init_git(ws, created)
    return InitResult(workspace=ws, created=created, notes=notes, already=already)


# The optional extra an env preset needs: (preset, module, extra).
PRESET_EXTRAS = (("doorkey", "minigrid", "minigrid"), ("connect4", "pettingzoo", "pettingzoo"))


def _missing_extras(preset: str) -> list[str]:
    """A note for each module the preset's envs need that is not installed."""
    import importlib.util

    return [
        f"the {preset} preset needs {module}: pip install 'cosmic-curriculum[{extra}]'"
        for name, module, extra in PRESET_EXTRAS
        if name == preset and importlib.util.find_spec(module) is None
    ]


def _init_git(ws: Path, created: list[str]) -> list[str]:
    from cosmic_curriculum.vcs import repo as vcs
    from cosmic_curriculum.vcs.gitcmd import GitRunError, run_git

    if vcs.git_executable() is None:
        return ["git is not installed: the workspace works, but progress is not committed"]
    notes: list[str] = []
    # A workspace inside a repository that ignores it (a project's workspaces/) gets
    # its own repository: its commits must never land in the enclosing one.
    if not vcs.is_repo(ws) or vcs.ignored_by_enclosing_repo(ws) is not None:
        try:
            run_git(["init"], ws)
        except GitRunError as exc:
            # No repository of its own: nothing to commit into (never the enclosing one).
            return [f"initial commit skipped: {exc}"]
        created.append(".git")
    paths = [ws / p for p in created if p != ".git"]
    try:
        vcs.commit_paths(ws, paths, "chore(training): initialise cosmic-curriculum workspace")
    except CurriculumError as exc:
        notes.append(f"initial commit skipped: {exc}")
    return notes
